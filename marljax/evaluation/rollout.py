"""Evaluate a trained agent: roll out its policy in fresh environments and average per episode.

    metrics = evaluate_policy(env, env_params, agent, agent_state, hparams, key)
    metrics["episode_return"]            # [] mean per-agent return of the finished episodes
    metrics["episode_return_per_agent"]  # [A]

Everything is one `lax.scan`, so it jits once and vmaps over seeds' agent states. Greedy
evaluation of value-based agents: pass hparams with epsilon 0
(`hparams.replace(eps_start=0.0, eps_finish=0.0)`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from marljax.agents.base import Observation
from marljax.core.types import Environment, EnvParams, PRNGKey
from marljax.core.wrappers import AutoReset, EpisodeStats

Array = jax.Array


def evaluate_policy(
    env: Environment,
    env_params: EnvParams,
    agent: Any,
    agent_state: Any,
    hparams: Any,
    key: PRNGKey,
    num_envs: int = 16,
    num_steps: int = 100,
    wrap: Callable[[Environment], Environment] | None = None,
) -> dict[str, Array]:
    """Roll out `agent`'s policy for `num_steps` steps in `num_envs` environments.

    The environments are `EpisodeStats(AutoReset(wrap(env)))`. Per-episode metrics that a wrapper
    reports in `extras` under `"group/name"` keys with one scalar per env (e.g. the social
    metrics of `marljax.evaluation.social.SocialMetrics`) are averaged too.

    Args:
      env: the core environment.
      env_params: its params.
      agent: a `marljax.agents.Agent` built for `env`.
      agent_state: the agent's state (e.g. after training; no seed axis).
      hparams: the agent's hyperparameters (acting uses them, e.g. epsilon).
      key: PRNG key.
      num_envs: parallel environments `E` (static).
      num_steps: steps per environment `T` (static).
      wrap: optional wrapper applied to `env` before auto-reset (e.g. `SocialMetrics`).

    Returns:
      A dict of `[]` means over the episodes that finished (NaN if none did):
      `"episode_return"`, `"episode_return_per_agent"` (`[A]`), `"episode_length"`, each
      `"group/name"` extra, and `"num_episodes"`.
    """
    inner = env if wrap is None else wrap(env)
    wrapped = EpisodeStats(AutoReset(inner))
    key_reset, key_run = jax.random.split(key)
    env_state, ts = jax.vmap(wrapped.reset, in_axes=(0, None))(
        jax.random.split(key_reset, num_envs), env_params
    )
    names = [k for k, v in ts.extras.items() if "/" in k and v.shape == (num_envs,)]

    def body(carry, _):
        env_state, ts, start, agent_carry, sums, key = carry
        key, key_act, key_env = jax.random.split(key, 3)
        obs = Observation(ts.obs, ts.action_mask, ts.global_state, start)
        actions, agent_carry, _ = agent.act(agent_state, agent_carry, obs, key_act, hparams)
        env_state, ts = jax.vmap(wrapped.step, in_axes=(0, 0, 0, None))(
            jax.random.split(key_env, num_envs), env_state, actions, env_params
        )
        done = ts.done.astype(jnp.float32)  # [E]
        sums = dict(sums)
        sums["episode_return_per_agent"] = sums["episode_return_per_agent"] + jnp.einsum(
            "e,ea->a", done, ts.extras["episode_return"]
        )
        sums["episode_length"] = sums["episode_length"] + jnp.sum(
            done * ts.extras["episode_length"]
        )
        for n in names:
            sums[n] = sums[n] + jnp.sum(done * ts.extras[n])
        sums["num_episodes"] = sums["num_episodes"] + done.sum()
        return (env_state, ts, ts.done, agent_carry, sums, key), None

    zero = jnp.float32(0.0)
    sums = {n: zero for n in [*names, "episode_length", "num_episodes"]}
    sums["episode_return_per_agent"] = jnp.zeros((env.num_agents,), jnp.float32)
    start = jnp.ones((num_envs,), bool)
    carry = (env_state, ts, start, agent.initial_carry(num_envs), sums, key_run)
    (_, _, _, _, sums, _), _ = jax.lax.scan(body, carry, None, length=num_steps)
    n = sums["num_episodes"]
    out = {
        k: jnp.where(n > 0, v / jnp.maximum(n, 1.0), jnp.nan)
        for k, v in sums.items()
        if k != "num_episodes"
    }
    out["episode_return"] = out["episode_return_per_agent"].mean()
    out["num_episodes"] = n
    return out


__all__ = ["evaluate_policy"]
