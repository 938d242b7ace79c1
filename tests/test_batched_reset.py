"""BatchedAutoReset: same results as a vmapped AutoReset, resets paid only when episodes end."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.core.wrappers import AutoReset, BatchedAutoReset, EpisodeStats
from marljax.testing import CountingEnv
from marljax.training import TrainConfig, hparam_grid, make_train, sweep


def test_batched_autoreset_equals_vmapped_autoreset():
    env = CountingEnv(num_agents=2)
    params = env.default_params().replace(goal=3, max_steps=5)
    E, T = 3, 9
    keys = jax.random.split(jax.random.PRNGKey(0), E)
    actions = jax.random.randint(jax.random.PRNGKey(1), (T, E, 2), 0, 2)
    step_keys = jax.random.split(jax.random.PRNGKey(2), T * E).reshape(T, E, -1)

    per_env = EpisodeStats(AutoReset(env))
    batched = BatchedAutoReset(EpisodeStats(env))

    @jax.jit
    def roll_per_env():
        s, _ = jax.vmap(per_env.reset, in_axes=(0, None))(keys, params)
        step = jax.vmap(per_env.step, in_axes=(0, 0, 0, None))
        return jax.lax.scan(lambda s, x: step(x[0], s, x[1], params), s, (step_keys, actions))[1]

    @jax.jit
    def roll_batched():
        s, _ = batched.reset(keys, params)
        return jax.lax.scan(
            lambda s, x: batched.step(x[0], s, x[1], params), s, (step_keys, actions)
        )[1]

    a, b = roll_per_env(), roll_batched()
    assert bool(a.done.any()), "premise: some episodes end"
    for name in ("obs", "reward", "terminated", "truncated", "action_mask", "global_state"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    for k in a.extras:
        np.testing.assert_array_equal(a.extras[k], b.extras[k], err_msg=k)


class _CountedResets(CountingEnv):
    """CountingEnv whose reset reports to the host each time it really executes."""

    calls = 0

    def reset(self, key, params):
        jax.debug.callback(_CountedResets._count)
        return super().reset(key, params)

    def step(self, key, state, actions, params):
        # Always adds 0, but depends on the key, so under vmap the episode ends are batched data
        # (otherwise JAX proves them equal across seeds and keeps any cond a real branch).
        zero = (jax.random.uniform(key) > 2.0).astype(jnp.int32)
        return super().step(key, state.replace(count=state.count + zero), actions, params)

    @staticmethod
    def _count():
        _CountedResets.calls += 1


def test_resets_run_only_when_an_episode_ends_even_inside_a_sweep():
    env = _CountedResets(num_agents=2)
    params = env.default_params().replace(goal=5, max_steps=8)  # every episode lasts 5 steps
    agent = make_ppo(PPOConfig(hidden_sizes=(8,), num_minibatches=2, num_epochs=1), env, params)
    config = TrainConfig(num_envs=2, rollout_len=4, total_env_steps=2 * 4 * 4)  # 16 steps per env
    trainer = make_train(config, env, agent, params)
    grid, _ = hparam_grid(PPOHParams(), lr=[1e-3, 3e-3])
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    _CountedResets.calls = 0
    jax.block_until_ready(sweep(trainer, keys, grid))
    episode_ends = 16 // 5  # steps 5, 10, 15
    # The (batched) reset executes once at init and once per episode end for the whole
    # 2 hparams x 2 seeds x 2 envs batch: the branch is real inside the sweep's named vmaps.
    assert _CountedResets.calls == 1 + episode_ends, _CountedResets.calls
    # A plain, unnamed vmap over seeds (a user's own `vmap(trainer.train)`) keeps the branch real
    # too: the predicate is reduced over every vmap axis by `any_across_vmap`'s batching rule.
    _CountedResets.calls = 0
    jax.block_until_ready(jax.jit(jax.vmap(trainer.train, in_axes=(0, None)))(keys, PPOHParams()))
    assert _CountedResets.calls == 1 + episode_ends, _CountedResets.calls


def test_any_across_vmap_reduces_over_every_vmap_axis():
    from marljax.core.wrappers import any_across_vmap

    x = jnp.array([[[-1.0, -2.0], [-3.0, -4.0]], [[-5.0, -6.0], [-7.0, 8.0]]])  # one positive

    def f(v):  # a branch on "any element anywhere in the batch is positive"
        return jax.lax.cond(any_across_vmap(v > 0), lambda: v + 100.0, lambda: v)

    out = jax.jit(jax.vmap(jax.vmap(jax.vmap(f))))(x)
    np.testing.assert_array_equal(out, x + 100.0)  # every element saw the one positive
    np.testing.assert_array_equal(jax.vmap(f)(x[0, 0]), x[0, 0])  # none positive: no branch
    assert bool(any_across_vmap(jnp.bool_(True))) and not bool(any_across_vmap(jnp.bool_(False)))
    jaxpr = jax.make_jaxpr(jax.vmap(jax.vmap(f)))(x[0])
    assert "cond[" in str(jaxpr) and "select_n" not in str(jaxpr)  # still a real branch


def test_runner_reports_namespaced_episode_metrics():
    """Extras named `group/name` (e.g. from SocialMetrics) become per-update training metrics."""
    import marljax
    from marljax.evaluation.social import SocialMetrics

    env, params = marljax.make("social/public_goods-v0")
    env = SocialMetrics(env)
    agent = make_ppo(PPOConfig(hidden_sizes=(8,), num_minibatches=2, num_epochs=1), env, params)
    config = TrainConfig(
        num_envs=2,
        rollout_len=int(params.num_rounds),
        total_env_steps=2 * int(params.num_rounds) * 2,
    )
    _, metrics = jax.jit(make_train(config, env, agent, params).train)(
        jax.random.PRNGKey(0), PPOHParams()
    )
    social = [k for k in metrics if k.startswith("social/")]
    assert "social/efficiency" in social and "social/equality" in social, sorted(metrics)
    # Every update ends exactly two episodes, so every value is a finite episode average.
    assert np.isfinite(np.asarray(metrics["social/equality"])).all()
    assert (
        (np.asarray(metrics["social/equality"]) >= 0)
        & (np.asarray(metrics["social/equality"]) <= 1)
    ).all()
