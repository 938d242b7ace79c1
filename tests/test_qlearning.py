"""IQL / VDN / QMIX: mixer monotonicity, the replay buffer, masks, stored recurrent state, the
published two-step and non-monotonic game results, and bad-input errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.agents import common
from marljax.agents.base import Observation
from marljax.agents.qlearning import (
    PRESETS,
    QConfig,
    QHParams,
    QNetwork,
    make_q_learner,
    masked_argmax,
    next_q,
    preset,
    q_table,
)
from marljax.core import spaces
from marljax.core.wrappers import Wrapper
from marljax.nn.mixers import POSITIVE_MAPS, QMixer, vdn_mix
from marljax.nn.replay import make_replay
from marljax.training.train import TrainConfig, make_train

# ----------------------------------------------------------------------------- mixers


@pytest.mark.parametrize("positive", sorted(POSITIVE_MAPS))
@pytest.mark.parametrize("layers", [1, 2])
def test_qmix_is_monotonic(positive, layers):
    """dQ_tot / dQ_a >= 0 for random parameters, states and utilities."""
    A, S = 4, 6
    mixer = QMixer(embed_dim=8, hypernet_hidden=16, hypernet_layers=layers, positive=positive)
    key = jax.random.PRNGKey(0)
    params = mixer.init(key, jnp.zeros((1, A)), jnp.zeros((1, S)))
    q = 5.0 * jax.random.normal(jax.random.PRNGKey(1), (256, A))
    s = 3.0 * jax.random.normal(jax.random.PRNGKey(2), (256, S))
    grads = jax.vmap(jax.grad(lambda qa, st: mixer.apply(params, qa, st)))(q, s)
    assert grads.shape == (256, A)
    assert float(grads.min()) >= 0.0
    assert float(grads.max()) > 0.0  # not trivially flat
    # The greedy joint action of Q_tot is the tuple of per-agent greedy actions.
    assert mixer.apply(params, q, s).shape == (256,)


def test_vdn_is_the_sum():
    q = jnp.array([[1.0, 2.0, -0.5], [0.0, 0.0, 3.0]])
    np.testing.assert_allclose(np.asarray(vdn_mix(q)), [2.5, 3.0])


# ----------------------------------------------------------------------------- replay


def test_replay_wraps_and_samples_only_filled_items():
    replay = make_replay(capacity=5, batch_size=4)
    state = replay.init({"x": jnp.zeros((2,), jnp.int32)})
    assert not bool(replay.can_sample(state))
    state = replay.add(state, {"x": jnp.arange(3)[:, None] * jnp.ones((3, 2), jnp.int32) + 1})
    assert int(state.size) == 3 and int(state.insert_pos) == 3
    assert not bool(replay.can_sample(state))
    sample = replay.sample(state, jax.random.PRNGKey(0))["x"]
    assert set(np.asarray(sample)[:, 0]) <= {1, 2, 3}  # never an empty (zero) slot
    state = replay.add(state, {"x": jnp.arange(4, 8)[:, None] * jnp.ones((4, 2), jnp.int32)})
    # 7 items into 5 slots: the oldest two (1, 2) were overwritten by 6, 7.
    assert int(state.size) == 5 and int(state.insert_pos) == 2 and int(state.num_added) == 7
    np.testing.assert_array_equal(np.asarray(state.data["x"])[:, 0], [6, 7, 3, 4, 5])
    draws = jax.vmap(replay.sample, in_axes=(None, 0))(
        state, jax.random.split(jax.random.PRNGKey(1), 200)
    )
    assert set(np.asarray(draws["x"])[..., 0].ravel()) == {3, 4, 5, 6, 7}  # uniform over all


def test_replay_keeps_newest_when_adding_more_than_capacity():
    replay = make_replay(capacity=3, batch_size=1)
    state = replay.init(jnp.zeros((), jnp.int32))
    state = replay.add(state, jnp.arange(1, 8))
    assert sorted(np.asarray(state.data).tolist()) == [5, 6, 7]
    assert int(state.num_added) == 7


def test_replay_smaller_than_a_batch_is_refused():
    with pytest.raises(ValueError, match="smaller than one batch"):
        make_replay(capacity=8, batch_size=16)
    with pytest.raises(ValueError, match="smaller than one batch"):
        QConfig(buffer_size=8, batch_size=16)


# ----------------------------------------------------------------------------- acting


@pytest.fixture(scope="module")
def two_step():
    return marljax.make("matrix/two_step-v0")


def _toy_unroll(key, L=5, B=3, D=4):
    """A toy recurrent 'network' h' = tanh(w * h + x) unrolled like the learner's agents."""
    kx, kn, kw = jax.random.split(key, 3)
    x = jax.random.normal(kx, (L, B, D))
    w = jax.random.normal(kw, (D,))
    final_obs = jax.random.normal(kn, (L, B, D))  # the true next observation where episodes end

    def step(w, h, x):
        return jnp.tanh(w * h + x)

    def next_step_q(w, hidden, xs_next):  # one step from each state on the next observation
        return step(w, hidden, xs_next)

    hidden = jax.lax.scan(lambda h, xt: (step(w, h, xt),) * 2, jnp.zeros((B, D)), x)[1]
    q = hidden  # the unroll's output at t is its value of observation t
    return w, q, hidden, x, final_obs, next_step_q


def test_next_q_reads_the_unroll_and_evaluates_only_where_needed():
    w, q, hidden, x, final_obs, next_step_q = _toy_unroll(jax.random.PRNGKey(0))
    L = x.shape[0]
    # One episode per sequence, cut by the time limit at the last step: the next observation is
    # the following input inside the sequence and the final observation at the end.
    xs_next = jnp.concatenate([x[1:], final_obs[-1:]], axis=0)
    truncated = jnp.zeros(x.shape[:2], bool).at[-1].set(True)
    expected = next_step_q(w, hidden, xs_next)
    np.testing.assert_allclose(
        next_q(next_step_q, w, q, hidden, xs_next, truncated), expected, atol=1e-6
    )
    # A time limit inside the sequence (env 1, step 1): the final observation there is not the
    # next input, so the general branch evaluates it; the unroll alone would be wrong.
    xs_cut = xs_next.at[1, 1].set(final_obs[1, 1])
    cut = truncated.at[1, 1].set(True)
    expected_cut = next_step_q(w, hidden, xs_cut)
    got_cut = next_q(next_step_q, w, q, hidden, xs_cut, cut)
    np.testing.assert_allclose(got_cut, expected_cut, atol=1e-6)
    assert not np.allclose(q[2, 1], expected_cut[1, 1])  # premise: the unroll differs there
    # Under vmap over runs, one run with a mid-sequence cut sends the batch to the general branch
    # and both runs still get exact values.
    both = jax.vmap(next_q, in_axes=(None, None, None, None, 0, 0))(
        next_step_q, w, q, hidden, jnp.stack([xs_next, xs_cut]), jnp.stack([truncated, cut])
    )
    np.testing.assert_allclose(both[0], expected, atol=1e-6)
    np.testing.assert_allclose(both[1], expected_cut, atol=1e-6)
    assert L == 5


def test_masks_respected_when_acting(two_step):
    env, params = two_step
    agent = make_q_learner(QConfig(recurrent=False, hidden_sizes=(8,), batch_size=4), env, params)
    state = agent.init(jax.random.PRNGKey(0), agent.default_hparams())
    E = 64
    _, ts = env.reset(jax.random.PRNGKey(0), params)
    obs = jnp.broadcast_to(ts.obs, (E, *ts.obs.shape))
    mask = jnp.broadcast_to(jnp.array([[False, True], [True, False]]), (E, 2, 2))
    observation = Observation(
        obs, mask, jnp.broadcast_to(ts.global_state, (E, 3)), jnp.ones(E, bool)
    )
    act = jax.jit(agent.act)
    for eps in (0.0, 1.0):
        hp = QHParams(eps_start=eps, eps_finish=eps)
        actions, _, info = act(
            state, agent.initial_carry(E), observation, jax.random.PRNGKey(3), hp
        )
        np.testing.assert_array_equal(np.asarray(actions), np.broadcast_to([1, 0], (E, 2)))
        assert info["q"].shape == (E, 2, 2)
    q = jnp.array([[5.0, 1.0, 2.0]])
    assert int(masked_argmax(q, jnp.array([[False, True, True]]))[0]) == 2


@jax.default_matmul_precision("highest")  # a GPU's default TF32 dots differ by batch shape
def test_stored_carry_reproduces_the_acting_q_values(two_step):
    """Replaying a sequence from its stored start carry gives the Q values seen while acting,
    across an episode reset inside the sequence (the recurrent reset convention)."""
    env, params = two_step
    cfg = QConfig(
        recurrent=True, hidden_sizes=(8,), gru_size=8, batch_size=4, parameter_mode="shared_id"
    )
    agent = make_q_learner(cfg, env, params)
    state = agent.init(jax.random.PRNGKey(0), agent.default_hparams())
    T, E, A = 6, 3, 2
    obs = jax.random.normal(jax.random.PRNGKey(1), (T, E, A, 3))
    resets = jnp.zeros((T, E), bool).at[0].set(True).at[3, 1].set(True)
    mask = jnp.ones((E, A, 2), bool)
    carry = agent.initial_carry(E)
    qs, carries = [], []
    for t in range(T):
        o = Observation(obs[t], mask, jnp.zeros((E, 3)), resets[t])
        _, carry_next, info = agent.act(state, carry, o, jax.random.PRNGKey(t), QHParams())
        qs.append(info["q"])
        carries.append(info["carry"])
        carry = carry_next
    qs, carries = jnp.stack(qs), jnp.stack(carries)
    # Unroll the second half (t = 3..5) from the carry stored at t = 3.
    net = QNetwork(cfg.hidden_sizes, cfg.activation, 2, True, cfg.gru_size)
    x = common.agent_inputs(obs[3:], 1, A, True)
    _, (q_replay, _) = common.apply_over_agents(
        net.apply, state.params["agent"], carries[3], x, resets[3:], False
    )
    np.testing.assert_allclose(np.asarray(q_replay), np.asarray(qs[3:]), rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- known results

TINY = dict(
    recurrent=False,
    hidden_sizes=(32,),
    batch_size=32,
    buffer_size=500,
    target="one_step",
    target_update_interval=50,
)
UNIFORM = QHParams(lr=5e-3, gamma=1.0, eps_start=1.0, eps_finish=1.0)  # uniform exploration


def _train(env, params, cfg, updates, rollout_len):
    agent = make_q_learner(cfg, env, params)
    trainer = make_train(
        TrainConfig(num_envs=8, rollout_len=rollout_len, total_env_steps=8 * rollout_len * updates),
        env,
        agent,
        params,
    )
    state, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0), UNIFORM)
    return state.agent_state, metrics


def _first_obs(env, params):
    _, ts = env.reset(jax.random.PRNGKey(0), params)
    return Observation(ts.obs, ts.action_mask, ts.global_state, jnp.array(True))


@pytest.fixture(scope="module")
def two_step_tables(two_step):
    """Q_tot tables at state 1 and state 2B after training VDN and QMIX (Rashid et al. 2018)."""
    env, params = two_step
    out = {}
    for mixer in ("vdn", "qmix"):
        cfg = QConfig(mixer=mixer, sequence_len=2, **TINY)
        state, metrics = _train(env, params, cfg, updates=600, rollout_len=2)
        assert np.isfinite(np.asarray(metrics["loss"])[-1])
        obs1 = _first_obs(env, params)
        s0, _ = env.reset(jax.random.PRNGKey(0), params)
        _, ts2b = env.step(jax.random.PRNGKey(1), s0, jnp.array([1, 0]), params)
        obs2b = Observation(ts2b.obs, ts2b.action_mask, ts2b.global_state, jnp.array(False))
        out[mixer] = (
            q_table(cfg, env, state, obs1, params),
            q_table(cfg, env, state, obs2b, params),
        )
    return out


def test_two_step_game_qmix_learns_8_vdn_settles_for_7(two_step_tables):
    q1, q2b = two_step_tables["qmix"]
    # QMIX: agent 0 goes to state 2B (action 1), worth 8; then (1, 1) there.
    assert np.unravel_index(np.argmax(q1["q_tot"]), (2, 2))[0] == 1
    assert abs(q1["q_tot"].max() - 8.0) < 0.5
    assert np.unravel_index(np.argmax(q2b["q_tot"]), (2, 2)) == (1, 1)
    assert abs(q2b["q_tot"][1, 1] - 8.0) < 0.5
    v1, _ = two_step_tables["vdn"]
    # VDN: cannot represent state 2B's payoffs, so state 1's greedy move is the safe 2A (7).
    assert np.unravel_index(np.argmax(v1["q_tot"]), (2, 2))[0] == 0
    assert v1["q_tot"].max() < 8.0 - 0.5


@pytest.mark.parametrize("mixer", ["vdn", "qmix"])
def test_nonmonotonic_game_is_not_solved_by_monotonic_mixing(mixer):
    """On [[8,-12,-12],[-12,0,0],[-12,0,0]] with uniform data, VDN and QMIX settle on the safe
    zero block instead of the optimum 8 (Son et al. 2019; Rashid et al. 2020)."""
    env, params = marljax.make("matrix/nonmonotonic-v0")
    cfg = QConfig(mixer=mixer, sequence_len=1, **TINY)
    state, _ = _train(env, params, cfg, updates=300, rollout_len=1)
    table = q_table(cfg, env, state, _first_obs(env, params), params)
    greedy = np.unravel_index(np.argmax(table["q_tot"]), (3, 3))
    assert greedy != (0, 0)
    assert greedy[0] in (1, 2) and greedy[1] in (1, 2)
    assert table["q_tot"][0, 0] < table["q_tot"][greedy]


# ----------------------------------------------------------------------------- configuration


def test_presets_build(two_step):
    env, params = two_step
    for name in PRESETS:
        cfg_over, hp = preset(name)
        cfg = QConfig(
            **{**cfg_over, "sequence_len": 2, "buffer_size": max(cfg_over["batch_size"], 64)}
        )
        agent = make_q_learner(cfg, env, params)
        assert isinstance(hp, QHParams)
        assert agent.default_hparams() == QHParams()
    with pytest.raises(KeyError, match="pymarl2"):
        preset("pymarl3")


def test_algorithm_registry_has_the_value_learners():
    for name in ("iql", "vdn", "qmix"):
        assert marljax.agents.algo_spec(name).config_defaults["mixer"] in ("none", "vdn", "qmix")


class _NoStateEnv(Wrapper):
    def global_state_space(self, params):
        return spaces.Box(0.0, 1.0, (0,))


def test_bad_input_errors_before_compile(two_step):
    env, params = two_step
    short_env, short_params = marljax.make("matrix/two_step-v0", max_steps=4)
    with pytest.raises(ValueError, match="longer than the episode cap"):
        make_q_learner(QConfig(sequence_len=8, batch_size=4), short_env, short_params)
    with pytest.raises(ValueError, match="empty global state"):
        make_q_learner(QConfig(mixer="qmix", batch_size=4), _NoStateEnv(env), params)
    make_q_learner(QConfig(mixer="vdn", batch_size=4), _NoStateEnv(env), params)  # fine
    agent = make_q_learner(QConfig(sequence_len=4, batch_size=4), env, params)
    with pytest.raises(ValueError, match="multiple of the replay sequence_len"):
        make_train(TrainConfig(num_envs=2, rollout_len=6, total_env_steps=100), env, agent)
    with pytest.raises(ValueError, match="mixer must be one of"):
        QConfig(mixer="qtran")
    cont_env, cont_params = marljax.make("social/public_goods_continuous-v0")
    with pytest.raises(ValueError, match="discrete actions"):
        make_q_learner(QConfig(batch_size=4), cont_env, cont_params)
