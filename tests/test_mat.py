"""MAT (Wen et al. 2022): the decoder's autoregressive mask, acting by `lax.scan` over agents
against a per-agent loop of teacher-forced passes, end-to-end training, the data-parallel
update, and refusals.

Tiny networks (8-wide tokens, one block); the compiled functions are shared by module fixtures.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_data_parallel import over_shards, rollout, split_traj

import marljax
from marljax.agents import algo_spec
from marljax.agents.mat import (
    MATConfig,
    action_tokens,
    decode_autoregressive,
    log_prob_and_entropy,
    make_mat,
    make_parts,
)
from marljax.agents.mat.agent import decode, encode
from marljax.core import spaces
from marljax.core.wrappers import Wrapper
from marljax.training.execute import ENVS_AXIS
from marljax.training.train import TrainConfig, make_train

TINY = MATConfig(embed_dim=8, num_heads=2, num_blocks=1, num_epochs=2, num_minibatches=2)
B = 6  # batch of joint observations


def _model(env_id: str, **env_kwargs):
    """Parts, parameters and jitted functions of a tiny MAT on `env_id`, and random inputs."""
    env, params = marljax.make(env_id, **env_kwargs)
    parts = make_parts(TINY, env, params)
    agent = make_mat(TINY, env, params)
    state = agent.init(jax.random.PRNGKey(0), agent.default_hparams())
    k_obs, k_act, k_mask = jax.random.split(jax.random.PRNGKey(1), 3)
    A, obs_dim = env.num_agents, env.observation_space(params).flat_dim
    obs = jax.random.normal(k_obs, (B, A, obs_dim))
    n = parts.head.num_outputs if parts.head.discrete else 0
    mask = jax.random.uniform(k_mask, (B, A, n)) < 0.6
    mask = mask.at[..., 0].set(True) if n else mask  # at least one legal action each
    rep = jax.jit(lambda p, o: encode(parts, p, o)[0])(state.params, obs)
    return {
        "parts": parts,
        "params": state.params,
        "obs": obs,
        "mask": mask,
        "rep": rep,
        "k_act": k_act,
        # teacher-forced decoder outputs [B, A, O] of actions [B, A, ...]
        "outputs": jax.jit(lambda p, r, a: decode(parts, p, r, action_tokens(parts.head, a))),
        "scored": jax.jit(lambda p, r, a, m: log_prob_and_entropy(parts, p, r, a, m)),
        "act": jax.jit(
            lambda p, r, m, k, greedy: decode_autoregressive(parts, p, r, m, k, greedy),
            static_argnums=4,
        ),
    }


@pytest.fixture(scope="module")
def discrete():
    return _model("particle/simple_spread-v0")


@pytest.fixture(scope="module")
def continuous():
    return _model("particle/simple_spread-v0", continuous=True)


def test_agent_i_does_not_see_the_actions_of_agents_i_and_after(discrete):
    m = discrete
    A = m["parts"].num_agents
    actions = jax.random.randint(m["k_act"], (B, A), 0, 5)
    base = np.asarray(m["outputs"](m["params"], m["rep"], actions))
    for i in range(A):
        changed = actions.at[:, i:].set((actions[:, i:] + 1 + i) % 5)  # every j >= i differs
        out = np.asarray(m["outputs"](m["params"], m["rep"], changed))
        np.testing.assert_array_equal(out[:, : i + 1], base[:, : i + 1])
        if i + 1 < A:  # ... while agent i's action does reach the agents after it
            assert np.abs(out[:, i + 1 :] - base[:, i + 1 :]).max() > 0.0, i


def test_greedy_scan_equals_a_loop_of_teacher_forced_passes(discrete):
    m = discrete
    parts, params, rep, mask = m["parts"], m["params"], m["rep"], m["mask"]
    actions, log_prob = m["act"](params, rep, mask, jax.random.PRNGKey(2), True)
    chosen = jnp.zeros((B, parts.num_agents), jnp.int32)  # later agents' entries are not read
    for i in range(parts.num_agents):
        out = m["outputs"](params, rep, chosen)
        logits = jnp.where(mask[:, i], out[:, i], -jnp.inf)
        chosen = chosen.at[:, i].set(jnp.argmax(logits, -1))
    np.testing.assert_array_equal(actions, chosen)
    want, _ = m["scored"](params, rep, chosen, mask)
    np.testing.assert_allclose(log_prob, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("space", ["discrete", "continuous"])
def test_sampled_actions_are_legal_and_scored_alike_by_training(space, request):
    """The log-probabilities recorded when acting (the scan) are the ones the loss recomputes
    in one teacher-forced pass, so the first PPO ratio is 1; masked actions are never drawn."""
    m = request.getfixturevalue(space)
    params, rep, mask = m["params"], m["rep"], m["mask"]
    actions, log_prob = m["act"](params, rep, mask, jax.random.PRNGKey(3), False)
    again, _ = m["act"](params, rep, mask, jax.random.PRNGKey(4), False)
    assert not np.array_equal(actions, again)  # the key matters
    want, entropy = m["scored"](params, rep, actions, mask)
    np.testing.assert_allclose(log_prob, want, rtol=1e-5, atol=1e-5)
    assert np.isfinite(np.asarray(entropy)).all()
    if space == "discrete":
        assert np.take_along_axis(np.asarray(mask), np.asarray(actions)[..., None], -1).all()
    else:
        assert actions.shape == (B, m["parts"].num_agents, 5)


def test_mat_trains_on_simple_spread():
    env, params = marljax.make("particle/simple_spread-v0")
    agent = algo_spec("mat").factory(TINY, env, params)
    trainer = make_train(
        TrainConfig(num_envs=2, rollout_len=25, total_env_steps=2 * 25 * 2), env, agent, params
    )
    hp = agent.default_hparams()
    key = jax.random.PRNGKey(0)
    state, metrics = jax.jit(trainer.train)(key, hp)
    for name in ("policy_loss", "value_loss", "entropy", "grad_norm", "episode_return"):
        assert np.isfinite(np.asarray(metrics[name])).all(), name
    before = jax.tree.leaves(agent.get_params(trainer.init(key, hp).agent_state))
    after = jax.tree.leaves(agent.get_params(state.agent_state))
    assert max(float(jnp.abs(a - b).max()) for a, b in zip(after, before)) > 0.0


def test_two_shards_take_the_whole_batch_step():
    """Data-parallel without a device argument: 2 shards of 4 envs with `axis_name` step as one
    learner on all 8 (one minibatch, so both shuffle the same way)."""
    env, params = marljax.make("particle/simple_spread-v0")
    agent = make_mat(
        MATConfig(embed_dim=8, num_heads=2, num_epochs=1, num_minibatches=1), env, params
    )
    hp = agent.default_hparams()
    state = agent.init(jax.random.PRNGKey(0), hp)
    traj = rollout(env, params, agent, state, hp, jax.random.PRNGKey(1), 8, 3)
    key = jax.random.PRNGKey(2)
    whole, _ = jax.jit(agent.update)(state, traj, hp, key)
    step = lambda t: agent.update(state, t, hp, key, axis_name=ENVS_AXIS)  # noqa: E731
    got, _ = jax.jit(lambda t: over_shards(step, t))(split_traj(traj))
    after = jax.tree.leaves(agent.get_params(whole))
    moved = jax.tree.leaves(agent.get_params(state))
    assert max(float(jnp.abs(a - b).max()) for a, b in zip(after, moved)) > 1e-5
    for a, g in zip(after, jax.tree.leaves(agent.get_params(got))):
        np.testing.assert_array_equal(g[0], g[1])
        np.testing.assert_allclose(g[0], a, rtol=2e-4, atol=2e-6)


class _MultiDiscreteActions(Wrapper):
    def action_space(self, params):
        return spaces.MultiDiscrete([3, 3])


def test_bad_input_is_refused_naming_mat_and_the_env():
    env, params = marljax.make("particle/simple_spread-v0")
    with pytest.raises(ValueError, match=r"MAT supports .*MultiDiscrete"):
        make_mat(TINY, _MultiDiscreteActions(env), params)
    listener, lparams = marljax.make("particle/simple_speaker_listener-v0")
    with pytest.raises(ValueError, match=r"MAT needs .*SimpleSpeakerListener.*\[3, 11\]"):
        make_mat(TINY, listener, lparams)
    with pytest.raises(ValueError, match="embed_dim.*num_heads"):
        MATConfig(embed_dim=10, num_heads=3)
    with pytest.raises(ValueError, match="num_minibatches"):
        make_mat(TINY, env, params).check_batch(3, 5)
