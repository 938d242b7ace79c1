"""The off-policy families' importable pieces: Q-learning and SAC losses on hand-computed arrays
(jitted and not), the shared update skeleton, greedy acting, `get_params`, and HASAC / MASAC
data-parallel shards (a named `vmap` axis in-process, as in `tests/test_data_parallel.py`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_data_parallel import D, over_shards, rollout, split_traj

import marljax
from marljax.agents import offpolicy
from marljax.agents.base import AgentParams, Observation
from marljax.agents.qlearning import (
    QConfig,
    double_q_values,
    make_q_learner,
    masked_argmax,
    mixed_td_loss,
    td_targets,
)
from marljax.agents.sac import (
    SACConfig,
    discrete_actor_loss,
    gaussian_actor_loss,
    make_sac,
    make_sac_networks,
    soft_td_target,
    temperature_loss,
    twin_critic_loss,
)
from marljax.nn.mixers import vdn_mix
from marljax.nn.replay import make_replay
from marljax.training.execute import ENVS_AXIS, for_devices

JIT = [False, True]


def maybe_jit(fn, jit: bool, **static):
    if not jit:
        return lambda *a: fn(*a, **static)
    return jax.jit(lambda *a: fn(*a, **static))


# ----------------------------------------------------------------------------- Q-learning losses


@pytest.mark.parametrize("jit", JIT)
def test_vdn_td_loss_of_a_two_agent_one_step_batch(jit):
    """Q_tot = q1 + q2; target = mean reward + gamma * (1 - terminated) * (v1 + v2)."""
    q = jnp.array([[[1.0, 2.0], [0.5, -1.0]]])  # [T=1, B=2, A=2]
    v = jnp.array([[[3.0, 1.0], [2.0, 2.0]]])
    r = jnp.array([[[1.0, 3.0], [0.0, 4.0]]])
    terminated = jnp.array([[False, True]])
    truncated = jnp.array([[False, False]])
    fn = maybe_jit(mixed_td_loss, jit, mix_tm1=vdn_mix, mix_t=vdn_mix, target="one_step")
    loss, aux = fn(q, v, r, terminated, truncated, 0.5)
    # batch 0: Q_tot 3, target 2 + 0.5 * 4 = 4 -> td -1; batch 1 (terminal): Q_tot -0.5, target 2
    want = ((3.0 - 4.0) ** 2 + (-0.5 - 2.0) ** 2) / 2
    np.testing.assert_allclose(loss, want, rtol=1e-6)
    np.testing.assert_allclose(aux["target_mean"], 3.0, rtol=1e-6)
    np.testing.assert_allclose(aux["q_taken"], jnp.mean(q), rtol=1e-6)


@pytest.mark.parametrize("jit", JIT)
def test_iql_td_loss_bootstraps_through_truncation_not_termination(jit):
    q = jnp.zeros((1, 3, 2))
    v = jnp.full((1, 3, 2), 10.0)
    r = jnp.ones((1, 3, 2))
    terminated = jnp.array([[False, True, False]])
    truncated = jnp.array([[False, False, True]])
    fn = maybe_jit(mixed_td_loss, jit, target="one_step", reward_scale=2.0)
    loss, aux = fn(q, v, r, terminated, truncated, 0.9)
    targets = np.array([2.0 + 9.0, 2.0, 2.0 + 9.0])  # per env, equal for both agents
    np.testing.assert_allclose(loss, np.mean(targets**2), rtol=1e-6)
    np.testing.assert_allclose(aux["target_mean"], targets.mean(), rtol=1e-6)


def test_td_loss_gradient_flows_into_the_prediction_only():
    q = jnp.array([[[1.0, 2.0]]])
    v = jnp.array([[[3.0, 1.0]]])
    r = jnp.array([[[0.0, 0.0]]])
    flags = jnp.array([[False]])

    def loss(q, v):
        return mixed_td_loss(q, v, r, flags, flags, 1.0, mix_tm1=vdn_mix, mix_t=vdn_mix)[0]

    gq, gv = jax.grad(loss, argnums=(0, 1))(q, v)
    np.testing.assert_allclose(gq, np.full((1, 1, 2), 2 * (3.0 - 4.0)))  # d(td^2)/dq_a
    np.testing.assert_array_equal(gv, np.zeros_like(v))


@pytest.mark.parametrize("jit", JIT)
def test_double_q_picks_the_online_argmax_among_legal_actions(jit):
    q_target = jnp.array([[1.0, 5.0, 2.0], [4.0, 0.0, 3.0]])
    q_online = jnp.array([[0.0, 9.0, 1.0], [9.0, 0.0, 1.0]])
    mask = jnp.array([[True, False, True], [True, True, True]])
    fn = maybe_jit(double_q_values, jit)
    # row 0: online best legal is action 2 (action 1 masked) -> target 2; row 1: action 0 -> 4
    np.testing.assert_allclose(fn(q_target, q_online, mask), [2.0, 4.0])
    plain = maybe_jit(lambda t, m: double_q_values(t, None, m), jit)
    np.testing.assert_allclose(plain(q_target, mask), [2.0, 4.0])  # max legal target value
    np.testing.assert_array_equal(masked_argmax(q_online, mask), [2, 0])


def test_lambda_target_with_lambda_one_is_the_discounted_return():
    r = jnp.array([[1.0], [2.0], [3.0]])
    disc = jnp.full((3, 1), 0.5)
    v = jnp.array([[100.0], [100.0], [8.0]])
    done = jnp.zeros((3, 1), bool)
    got = td_targets(r, disc, v, done, target="lambda", td_lambda=1.0)
    np.testing.assert_allclose(got[0, 0], 1 + 0.5 * 2 + 0.25 * 3 + 0.125 * 8, rtol=1e-6)
    one = td_targets(r, disc, v, done, target="one_step")
    np.testing.assert_allclose(one[:, 0], [51.0, 52.0, 7.0])


# ----------------------------------------------------------------------------- SAC losses


@pytest.mark.parametrize("jit", JIT)
def test_soft_target_termination_vs_truncation(jit):
    """A terminated transition's target is its reward; a truncated one bootstraps the soft value."""
    r = jnp.array([1.0, 1.0])
    discount = jnp.array([0.0, 0.9])  # terminated; truncated (gamma^1, from n_step_transitions)
    q_next = jnp.array([5.0, 5.0])
    logp_next = jnp.array([[-1.0, -2.0], [-1.0, -2.0]])
    alpha = jnp.array([0.5, 0.25])
    got = maybe_jit(soft_td_target, jit)(r, discount, q_next, logp_next, alpha)
    soft_v = 5.0 - (0.5 * -1.0 + 0.25 * -2.0)  # 6
    np.testing.assert_allclose(got, [1.0, 1.0 + 0.9 * soft_v], rtol=1e-6)


@pytest.mark.parametrize("jit", JIT)
def test_twin_critic_loss_sums_the_critics(jit):
    q = jnp.array([[1.0, 3.0], [0.0, 14.0]])
    target = jnp.array([0.0, 2.0])
    mse = maybe_jit(twin_critic_loss, jit, kind="mse", huber_delta=10.0)(q, target)
    np.testing.assert_allclose(mse, (0.5 + 0.5) / 2 + (0.0 + 72.0) / 2, rtol=1e-6)
    huber = maybe_jit(twin_critic_loss, jit, kind="huber", huber_delta=10.0)(q, target)
    # |td| = 12 > delta = 10: 10 * (12 - 5) = 70
    np.testing.assert_allclose(huber, (0.5 + 0.5) / 2 + (0.0 + 70.0) / 2, rtol=1e-6)


@pytest.mark.parametrize("jit", JIT)
def test_discrete_actor_loss_is_the_exact_expectation(jit):
    logits = jnp.array([[0.0, jnp.log(3.0), -1e9]])  # pi = (1/4, 3/4, 0): action 2 illegal
    mask = jnp.array([[True, True, False]])
    q = jnp.array([[4.0, 8.0, 100.0]])
    loss, mean_logp = maybe_jit(discrete_actor_loss, jit)(logits, mask, q, 0.5)
    pi = np.array([0.25, 0.75])
    plogp = pi * np.log(pi)
    np.testing.assert_allclose(mean_logp, plogp.sum(), rtol=1e-5)
    np.testing.assert_allclose(loss, 0.5 * plogp.sum() - (0.25 * 4 + 0.75 * 8), rtol=1e-5)
    g = jax.grad(lambda lg: discrete_actor_loss(lg, mask, q, 0.5)[0])(logits)
    assert g[0, 1] < 0 < g[0, 0]  # more probability on the better legal action
    assert g[0, 2] == 0.0


@pytest.mark.parametrize("jit", JIT)
def test_gaussian_actor_loss(jit):
    loss, mean_logp = maybe_jit(gaussian_actor_loss, jit)(
        jnp.array([-1.0, -3.0]), jnp.array([2.0, 4.0]), 0.1
    )
    np.testing.assert_allclose(loss, np.mean([-0.1 - 2.0, -0.3 - 4.0]), rtol=1e-6)
    np.testing.assert_allclose(mean_logp, -2.0)


@pytest.mark.parametrize("jit", JIT)
def test_temperature_loss_gradient_sign(jit):
    """Entropy below the target (log pi high) raises alpha under gradient descent; above lowers it."""
    log_alpha = jnp.log(jnp.array([0.1, 0.1]))
    log_pi = jnp.array([-0.2, -3.0])  # entropies 0.2 and 3.0
    grad = maybe_jit(jax.grad(temperature_loss), jit)(log_alpha, log_pi, 1.0)
    np.testing.assert_allclose(grad, [-(-0.2 + 1.0), -(-3.0 + 1.0)], rtol=1e-6)
    assert grad[0] < 0 < grad[1]  # descent: alpha_0 up (too little entropy), alpha_1 down
    g_pi = jax.grad(temperature_loss, argnums=1)(log_alpha, log_pi, 1.0)
    np.testing.assert_array_equal(g_pi, np.zeros(2))  # no gradient into the policy


# ----------------------------------------------------------------------------- the update skeleton


def test_target_update_polyak_and_hard():
    online, target = {"w": jnp.array([1.0, 2.0])}, {"w": jnp.array([0.0, 0.0])}
    soft = offpolicy.target_update(online, target, jnp.int32(1), tau=0.25)
    np.testing.assert_allclose(soft["w"], [0.25, 0.5])
    kept = offpolicy.target_update(online, target, jnp.int32(3), period=2)
    np.testing.assert_array_equal(kept["w"], [0.0, 0.0])
    copied = jax.jit(lambda g: offpolicy.target_update(online, target, g, period=2))(4)
    np.testing.assert_array_equal(copied["w"], [1.0, 2.0])
    with pytest.raises(ValueError, match="exactly one"):
        offpolicy.target_update(online, target, 1, tau=0.1, period=2)


def test_learn_from_replay_gate_and_steps():
    replay = make_replay(capacity=4, batch_size=2)
    state = offpolicy.store(replay, replay.init(jnp.zeros(())), jnp.array([1.0, 2.0, 3.0]))

    def step(c, batch, key):
        del key
        return c + batch.sum(), {"seen": batch.sum()}

    def run(env_steps):
        return offpolicy.learn_from_replay(
            replay, state, jnp.float32(0.0), jax.random.PRNGKey(0), env_steps=env_steps,
            learning_starts=10, num_steps=3, gradient_step=step,
            zero_metrics=lambda: {"seen": jnp.float32(0.0)},
        )  # fmt: skip

    c, m = jax.jit(run)(jnp.int32(9))  # before learning_starts
    assert float(c) == 0.0 and float(m["seen"]) == 0.0 and float(m["learning"]) == 0.0
    c, m = jax.jit(run)(jnp.int32(10))
    assert float(c) > 0.0 and np.isclose(float(m["seen"]), float(c) / 3)
    assert float(m["learning"]) == 1.0 and int(m["buffer_size"]) == 3
    small = offpolicy.store(replay, replay.init(jnp.zeros(())), jnp.array([1.0]))
    assert not bool(offpolicy.ready(replay, small, jnp.int32(10), 10))  # less than one batch


# ----------------------------------------------------------------------------- greedy acting


@pytest.fixture(scope="module")
def spread():
    return marljax.make("particle/simple_spread-v0", max_steps=10)


def one_step_observation(env, params, num_envs: int = 3) -> Observation:
    keys = jax.random.split(jax.random.PRNGKey(5), num_envs)
    _, ts = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    mask = ts.action_mask.at[:, :, 0].set(False)  # forbid action 0 to see masks respected
    return Observation(ts.obs, mask, ts.global_state, jnp.ones((num_envs,), bool))


@pytest.mark.parametrize("mixer", ["qmix", "vdn"])
def test_q_learner_greedy_act_is_the_masked_argmax(spread, mixer):
    env, params = spread
    agent = make_q_learner(QConfig(mixer=mixer, hidden_sizes=(8,), gru_size=4, sequence_len=5,
                                   buffer_size=8, batch_size=4), env, params)  # fmt: skip
    hp = agent.default_hparams()  # epsilon 1: sampling would be uniform
    state = agent.init(jax.random.PRNGKey(0), hp)
    obs = one_step_observation(env, params)
    carry = agent.initial_carry(3)
    a1, _, info = agent.act(state, carry, obs, jax.random.PRNGKey(1), hp, greedy=True)
    a2, _, _ = agent.act(state, carry, obs, jax.random.PRNGKey(2), hp, greedy=True)
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(a1, masked_argmax(info["q"], obs.action_mask))
    assert not np.any(np.asarray(a1) == 0)
    got = agent.get_params(state)
    assert isinstance(got, AgentParams)
    assert got.policy is state.params["agent"]
    if mixer == "qmix":
        assert got.critic is state.params["mixer"]
    else:
        assert got.critic is None


def test_sac_greedy_act_is_the_policy_mode(spread):
    env, params = spread
    agent = make_sac(SACConfig(hidden_sizes=(8,), buffer_size=8, batch_size=4), env, params)
    hp = agent.default_hparams()
    state = agent.init(jax.random.PRNGKey(0), hp)
    obs = one_step_observation(env, params)
    a, _, info = agent.act(state, (), obs, jax.random.PRNGKey(1), hp, greedy=True)
    np.testing.assert_array_equal(a, info["mode"])
    assert not np.any(np.asarray(a) == 0)
    got = agent.get_params(state)
    assert got.policy is state.actor_params and got.critic is state.critic_params

    cont, cparams = marljax.make("particle/simple_spread_continuous-v0", max_steps=10)
    config = SACConfig(hidden_sizes=(8,), buffer_size=8, batch_size=4)
    agent = make_sac(config, cont, cparams)
    state = agent.init(jax.random.PRNGKey(0), hp)
    _, ts = jax.vmap(cont.reset, in_axes=(0, None))(jax.random.split(jax.random.PRNGKey(5), 3),
                                                    cparams)  # fmt: skip
    obs = Observation(ts.obs, ts.action_mask, ts.global_state, jnp.ones((3,), bool))
    a, _, _ = agent.act(state, (), obs, jax.random.PRNGKey(1), hp, greedy=True)
    actor = make_sac_networks(config, cont, cparams).actor  # independent: one slice per agent
    out = jax.vmap(actor.apply, in_axes=(0, 1), out_axes=1)(state.actor_params, ts.obs)
    mean = out[..., : out.shape[-1] // 2]
    box = cont.action_space(cparams)
    want = box.low + (jnp.tanh(mean) + 1.0) * 0.5 * (box.high - box.low)
    np.testing.assert_allclose(a, want, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- data-parallel SAC


@pytest.mark.parametrize("sequential", [True, False])
def test_sac_shards_count_every_env_step_and_stay_identical(spread, sequential):
    """2 shards with different replay data and different keys (HASAC's random agent order must
    still agree), gradients, ValueNorm statistics and entropies averaged over the axis."""
    env, params = spread
    config = SACConfig(sequential=sequential, hidden_sizes=(8,), n_step=2, warmup_steps=0,
                       auto_alpha=True, buffer_size=16, batch_size=4, utd_ratio=0.4)  # fmt: skip
    agent = make_sac(config, env, params)
    sharded = for_devices(agent, D)
    hp = agent.default_hparams()
    state = agent.init(jax.random.PRNGKey(0), hp)
    local = sharded.init(jax.random.PRNGKey(0), hp)
    assert local.replay.data["obs"].shape[0] == 8  # half the buffer per shard
    traj = rollout(env, params, agent, state, hp, jax.random.PRNGKey(1), 8, 5)

    def two_updates(t, key):
        k1, k2 = jax.random.split(key)
        s, _ = sharded.update(local, t, hp, k1, axis_name=ENVS_AXIS)
        return sharded.update(s, t, hp, k2, axis_name=ENVS_AXIS)

    keys = jax.random.split(jax.random.PRNGKey(3), D)  # a different key on each shard
    got, metrics = jax.jit(lambda t, k: over_shards(two_updates, t, k))(split_traj(traj), keys)
    np.testing.assert_array_equal(got.env_steps, [2 * 5 * 8, 2 * 5 * 8])  # every shard's steps
    assert int(got.grad_steps[0]) == 2 * 2
    learned = (got.actor_params, got.critic_params, got.target_critic_params, got.log_alpha,
               got.value_norm)  # fmt: skip
    for leaf in jax.tree.leaves(learned):
        np.testing.assert_array_equal(leaf[0], leaf[1])
    np.testing.assert_array_equal(metrics["actor_order"][0], metrics["actor_order"][1])
    moved = [float(jnp.abs(a[0] - b).max())
             for a, b in zip(jax.tree.leaves(got.actor_params), jax.tree.leaves(local.actor_params))]  # fmt: skip
    assert max(moved) > 0
    assert not np.array_equal(got.replay.data["obs"][0], got.replay.data["obs"][1])


def test_sac_batch_must_divide_over_shards(spread):
    env, params = spread
    agent = make_sac(SACConfig(hidden_sizes=(8,), buffer_size=30, batch_size=5), env, params)
    with pytest.raises(ValueError, match=r"SACConfig.batch_size = 5 is not divisible.*4 or 6"):
        for_devices(agent, 2)
