"""The PPO agent and the runner: seeds, determinism, one compile per sweep, learning, resume."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.testing import CountingEnv
from marljax.training import TrainConfig, hparam_grid, make_train, sweep
from marljax.training.checkpoint import Checkpointer

SMALL = dict(hidden_sizes=(16,), num_minibatches=2, num_epochs=2)
TINY_RUN = TrainConfig(num_envs=4, rollout_len=4, total_env_steps=4 * 4 * 4)


def tree_equal(a, b) -> bool:
    return all(jax.tree.leaves(jax.tree.map(lambda x, y: bool(jnp.array_equal(x, y)), a, b)))


@pytest.fixture(scope="module")
def climbing():
    env, params = marljax.make("matrix/climbing-v0")
    agent = make_ppo(PPOConfig(critic_input="global", **SMALL), env, params)
    return make_train(TINY_RUN, env, agent, params)


@pytest.fixture(scope="module")
def seeds_train(climbing):
    """One compile of a seed-vmapped fused run, shared by several tests."""
    return jax.jit(jax.vmap(climbing.train, in_axes=(0, None)))


def test_two_seeds_differ_and_same_seed_repeats(climbing, seeds_train):
    keys = jax.vmap(jax.random.PRNGKey)(jnp.array([0, 1, 0]))
    hp = PPOHParams()
    # Initial parameters and first actions.
    init = jax.jit(jax.vmap(climbing.init, in_axes=(0, None)))(keys, hp)
    leaves = jax.tree.leaves(init.agent_state.actor_params)
    assert any(not np.array_equal(x[0], x[1]) for x in leaves), (
        "two seeds gave the same initial parameters"
    )
    assert all(np.array_equal(x[0], x[2]) for x in leaves)
    obs = jax.vmap(
        lambda s: climbing.agent.act(
            s.agent_state,
            s.carry,
            marljax.agents.Observation(
                s.timestep.obs, s.timestep.action_mask, s.timestep.global_state, s.episode_start
            ),
            s.key,
            hp,
        )[0]
    )(init)
    assert not np.array_equal(obs[0], obs[1]), "two seeds gave the same first actions"
    assert np.array_equal(obs[0], obs[2])
    # Whole runs: seed 0 twice is bit-identical, seed 1 differs.
    state, metrics = seeds_train(keys, hp)
    for k, v in metrics.items():
        np.testing.assert_array_equal(v[0], v[2], err_msg=f"metric {k} differs for the same seed")
    assert not np.array_equal(metrics["policy_loss"][0], metrics["policy_loss"][1])
    assert tree_equal(
        jax.tree.map(lambda x: x[0], state.agent_state),
        jax.tree.map(lambda x: x[2], state.agent_state),
    )


def test_same_seed_same_metrics_across_calls(seeds_train):
    keys = jax.vmap(jax.random.PRNGKey)(jnp.array([3, 4]))
    _, m1 = seeds_train(keys, PPOHParams())
    _, m2 = seeds_train(keys, PPOHParams())
    assert tree_equal(m1, m2)


def test_grid_times_seeds_compiles_once():
    env, params = marljax.make("matrix/penalty_k0-v0")
    agent = make_ppo(PPOConfig(critic_input="global", **SMALL), env, params)
    traces = {"n": 0}
    trainer = make_train(TINY_RUN, env, agent, params)

    def counted(key, hp, env_params=None):
        traces["n"] += 1
        return trainer.train(key, hp, env_params)

    grid, settings = hparam_grid(PPOHParams(), lr=[1e-3, 3e-3], ent_coef=[0.0, 0.01])
    assert len(settings) == 4 and settings[1] == {"lr": 1e-3, "ent_coef": 0.01}
    keys = jax.vmap(jax.random.PRNGKey)(jnp.arange(3))
    fn = jax.jit(jax.vmap(jax.vmap(counted, in_axes=(0, None)), in_axes=(None, 0)))
    _, metrics = fn(keys, grid)
    _, metrics2 = fn(keys + 1, grid)  # new keys, same shapes: no retrace
    assert traces["n"] == 1
    assert metrics["episode_return"].shape == (4, 3, TINY_RUN.num_updates)
    # hparams really reach the program: different learning rates give different parameters.
    assert not np.array_equal(metrics["policy_loss"][0], metrics["policy_loss"][2])
    # The library's `sweep` (one flat vmap over the 12 runs) gives the hand-written nested
    # vmap's numbers: the same play, losses equal up to float32 reduction order.
    _, swept = sweep(trainer, keys, grid)
    np.testing.assert_array_equal(swept["episode_return"], metrics["episode_return"])
    np.testing.assert_allclose(swept["policy_loss"], metrics["policy_loss"], rtol=1e-4, atol=1e-7)


def test_seed_vmapped_program_has_no_lapack_call(climbing):
    """Batched QR under vmap deadlocks jax 0.10 on 2 cores (docs/design.md); we never emit one."""
    keys = jax.vmap(jax.random.PRNGKey)(jnp.arange(4))
    hlo = jax.jit(jax.vmap(climbing.train, in_axes=(0, None))).lower(keys, PPOHParams()).as_text()
    assert "lapack" not in hlo.lower() and "qr" not in hlo.lower().replace("sqrt", "")


def test_seed_vmapped_init_many_times(climbing):
    """Regression for the batched-QR deadlock: a 4-seed init program run many times returns."""
    init = jax.jit(jax.vmap(climbing.init, in_axes=(0, None)))
    for i in range(150):
        keys = jax.random.split(jax.random.PRNGKey(i), 4)
        jax.block_until_ready(init(keys, PPOHParams()))


def test_checkpoint_resume_equals_uninterrupted(tmp_path, climbing):
    hp = PPOHParams()
    run = jax.jit(climbing.run, static_argnums=3)
    s0 = jax.jit(climbing.init)(jax.random.PRNGKey(7), hp)
    straight, _ = run(s0, hp, None, 2)
    straight, m_straight = run(straight, hp, None, 2)
    first, _ = run(s0, hp, None, 2)
    with Checkpointer(tmp_path / "ckpt") as ckpt:
        ckpt.save(2, first)
    del first
    with Checkpointer(tmp_path / "ckpt") as ckpt:
        assert ckpt.latest_step() == 2
        restored = ckpt.restore(s0)
    resumed, m_resumed = run(restored, hp, None, 2)
    assert tree_equal(straight, resumed), "resumed run differs from the uninterrupted run"
    assert tree_equal(m_straight, m_resumed)
    # The fused whole run (one call) equals the chunked run (same step function, same carry):
    # bit for bit with XLA's default flags. The suite's compile-speed flags (LLVM -O0 with the
    # older loop emitters, tests/conftest.py) fuse the two programs differently and, on an
    # AVX-512 CPU, rounded one of 144 Adam moments 1 ulp apart (the parameters were equal).
    fused, _ = jax.jit(climbing.train)(jax.random.PRNGKey(7), hp)
    chunked, _ = run(s0, hp, None, TINY_RUN.num_updates)
    if "--xla_backend_optimization_level=0" in os.environ.get("XLA_FLAGS", ""):
        for x, y in zip(jax.tree.leaves(fused), jax.tree.leaves(chunked), strict=True):
            x, y = np.asarray(x), np.asarray(y)
            if np.issubdtype(x.dtype, np.floating):
                np.testing.assert_array_max_ulp(x, y, maxulp=2)
            else:
                assert np.array_equal(x, y)
        assert tree_equal(fused.agent_state.actor_params, chunked.agent_state.actor_params)
    else:
        assert tree_equal(fused, chunked)


def test_progress_callback_reports_every_update_and_changes_nothing(climbing, seeds_train):
    from support import assert_same_results

    from marljax.training.train import progress_callback

    env, params = marljax.make("matrix/climbing-v0")
    agent = make_ppo(PPOConfig(critic_input="global", **SMALL), env, params)
    config = TrainConfig(**{**TINY_RUN.__dict__, "progress": True})
    trainer = make_train(config, env, agent, params)
    seen = []
    keys = jax.vmap(jax.random.PRNGKey)(jnp.array([0, 1]))
    with progress_callback(lambda i, r: seen.append(i)):
        _, m_progress = jax.block_until_ready(
            jax.jit(jax.vmap(trainer.train, in_axes=(0, None)))(keys, PPOHParams())
        )
    assert sorted(set(seen)) == list(range(1, config.num_updates + 1))
    _, m_plain = seeds_train(keys, PPOHParams())
    assert_same_results(m_progress, m_plain, "the progress callback changed the results")


def test_progress_bar_says_compiling_and_times_run_only():
    """The bar says "compiling" until the first chunk ends, and its rate (so its ETA) counts the
    chunks' own seconds, not the compile before them."""
    import time

    from marljax.training import execute as ex

    bar = ex.progress_bar("mappo", total=10)
    try:
        assert "compiling" in bar.bar.desc
        time.sleep(0.5)  # the "compile"
        metrics = {"episode_return": np.ones((1, 2))}
        bar(ex.Chunk(2, 10, 0, metrics, metrics, 0.05, 1.0, lambda: None))
        tq = bar.bar
        assert tq.desc == "mappo" and tq.n == 2
        assert time.time() - tq.start_t < 0.3  # the clock started at the chunk's start
    finally:
        bar.close()


def test_checkpoint_from_other_config_is_refused(tmp_path, climbing):
    hp = PPOHParams()
    s0 = jax.jit(climbing.init)(jax.random.PRNGKey(0), hp)
    with Checkpointer(tmp_path / "c") as ckpt:
        ckpt.save(1, s0)
    env, params = marljax.make("matrix/climbing-v0")
    other = make_train(TINY_RUN, env, make_ppo(PPOConfig(hidden_sizes=(8, 8)), env, params), params)
    s_other = jax.jit(other.init)(jax.random.PRNGKey(0), hp)
    with Checkpointer(tmp_path / "c") as ckpt:
        with pytest.raises(ValueError, match="different config"):
            ckpt.restore(s_other)
        assert ckpt.all_steps() == [1], "a refused restore must not delete checkpoints"


@pytest.mark.parametrize(
    "mode,critic,recurrent",
    [
        ("shared", "local", False),
        ("shared_id", "global", True),
        ("independent", "global", False),
        ("independent", "local", True),
    ],
)
def test_parameter_modes_and_recurrence_run(mode, critic, recurrent):
    env = CountingEnv(num_agents=3)
    params = env.default_params()
    agent = make_ppo(
        PPOConfig(
            critic_input=critic, parameter_mode=mode, recurrent=recurrent, gru_size=8, **SMALL
        ),
        env,
        params,
    )
    trainer = make_train(TINY_RUN, env, agent, params)
    state, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0), PPOHParams())
    actor = state.agent_state.actor_params
    leaves = jax.tree.leaves(actor)
    if mode == "independent":
        assert all(x.shape[0] == 3 for x in leaves), (
            "independent parameters need a leading agent axis"
        )
        assert any(not np.array_equal(x[0], x[1]) for x in leaves), (
            "agents' parameters are identical"
        )
    assert np.isfinite(metrics["policy_loss"]).all() and np.isfinite(metrics["value_loss"]).all()


def test_masked_actions_never_sampled():
    """CountingEnv masks action 2 for agent 0; PPO must never pick it."""
    env = CountingEnv(num_agents=2)
    params = env.default_params()
    agent = make_ppo(PPOConfig(**SMALL), env, params)
    trainer = make_train(TINY_RUN, env, agent, params)
    state = trainer.init(jax.random.PRNGKey(0), PPOHParams())
    ts = state.timestep
    mask = ts.action_mask
    assert not bool(mask[:, 0, 2].any()), "test premise: action 2 is masked for agent 0"
    obs = marljax.agents.Observation(ts.obs, mask, ts.global_state, state.episode_start)
    acts = jax.jit(
        jax.vmap(lambda k: agent.act(state.agent_state, state.carry, obs, k, PPOHParams())[0])
    )(jax.random.split(jax.random.PRNGKey(1), 256))
    assert not bool((acts[:, :, 0] == 2).any())
    assert bool((acts[:, :, 1] == 2).any()), "the unmasked agent should sometimes pick action 2"


def test_continuous_actions_learn_a_target():
    """A one-step continuous task: reward -(a - 0.5)^2 per agent; the policy mean moves to 0.5."""
    from support import TargetEnv

    env = TargetEnv()
    params = env.default_params()
    for squash in (False, True):
        agent = make_ppo(PPOConfig(critic_input="local", tanh_squash=squash, **SMALL), env, params)
        trainer = make_train(
            TrainConfig(num_envs=32, rollout_len=1, total_env_steps=32 * 60), env, agent, params
        )
        _, metrics = jax.jit(trainer.train)(
            jax.random.PRNGKey(0), PPOHParams(lr=1e-2, ent_coef=0.0)
        )
        r = np.asarray(metrics["episode_return"])
        assert r[-5:].mean() > r[:5].mean() + 0.05, (
            f"no improvement (squash={squash}): {r[:5]} -> {r[-5:]}"
        )


# ------------------------------------------------------------------------------ learning


def test_mappo_finds_the_optimal_joint_action_in_a_coordination_game():
    """Penalty game k=0 (Claus & Boutilier 1998): optimum 10 at (0, 2) or (2, 0)."""
    env, params = marljax.make("matrix/penalty_k0-v0")
    agent = make_ppo(
        PPOConfig(critic_input="global", hidden_sizes=(32,), num_minibatches=2), env, params
    )
    trainer = make_train(
        TrainConfig(num_envs=16, rollout_len=4, total_env_steps=16 * 4 * 60), env, agent, params
    )
    keys = jax.vmap(jax.random.PRNGKey)(jnp.arange(2))
    state, metrics = jax.jit(jax.vmap(trainer.train, in_axes=(0, None)))(keys, PPOHParams(lr=3e-3))
    final = np.asarray(metrics["episode_return"])[:, -5:].mean(axis=1)
    assert (final > 9.5).all(), f"MAPPO did not reach the optimum 10: {final}"
    # The sampled joint action is optimal almost always, for every seed.
    for seed in range(2):
        st = jax.tree.map(lambda x, s=seed: x[s], state)
        acts = _sample_actions(trainer, st, 200)  # [200, E, A]
        pay = np.asarray(params.payoffs)[0]
        rewards = pay[acts[..., 0], acts[..., 1]]
        assert (rewards == 10).mean() > 0.95, (
            f"seed {seed}: optimal joint action in {(rewards == 10).mean():.2f}"
        )


def _sample_actions(trainer, st, n):
    ts = st.timestep
    obs = marljax.agents.Observation(ts.obs, ts.action_mask, ts.global_state, st.episode_start)
    sample = jax.jit(
        jax.vmap(lambda k: trainer.agent.act(st.agent_state, st.carry, obs, k, PPOHParams())[0])
    )
    return np.asarray(sample(jax.random.split(jax.random.PRNGKey(123), n)))


def test_ippo_best_responds_to_tit_for_tat():
    """Repeated PD (10 rounds) vs tit-for-tat: cooperating every round (30) beats defecting (14)."""
    env, params = marljax.make("matrix/ipd_tft-v0", num_rounds=10)
    agent = make_ppo(
        PPOConfig(critic_input="local", hidden_sizes=(32,), num_minibatches=2), env, params
    )
    trainer = make_train(
        TrainConfig(num_envs=16, rollout_len=10, total_env_steps=16 * 10 * 60), env, agent, params
    )
    keys = jax.vmap(jax.random.PRNGKey)(jnp.arange(2))
    _, metrics = jax.jit(jax.vmap(trainer.train, in_axes=(0, None)))(keys, PPOHParams(lr=3e-3))
    r = np.asarray(metrics["episode_return"])
    assert (r[:, :3].mean(axis=1) < 27).all(), (
        "premise: the initial policy is not already cooperative"
    )
    assert (r[:, -5:].mean(axis=1) > 29.0).all(), (
        f"IPPO did not learn to cooperate with TFT: {r[:, -5:]}"
    )
