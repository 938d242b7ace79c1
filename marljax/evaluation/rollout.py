"""Evaluate a trained agent: roll out its policy in fresh environments and average per episode.

    metrics = evaluate_policy(env, env_params, agent, agent_state, hparams, key)
    metrics["episode_return"]            # [] mean per-agent return of the finished episodes
    metrics["episode_return_per_agent"]  # [A]

Everything is one `lax.scan` of `marljax.training.rollout.step` (the same acting step as training), so it
jits once and vmaps over seeds' agent states. By default the agent acts greedily
(`agent.act(..., greedy=True)`: the mode of its policy, or argmax Q); pass `greedy=False` to
evaluate the stochastic (exploring) policy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

from marljax.core.types import Environment, EnvParams, PRNGKey
from marljax.training import rollout

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
    greedy: bool = True,
) -> dict[str, Array]:
    """Roll out `agent`'s policy for `num_steps` steps in `num_envs` environments.

    The environments are `marljax.training.rollout.batched_env(env, wrap=wrap)` (episode statistics and
    auto-reset). Per-episode metrics that a wrapper reports in `extras` under `"group/name"`
    keys with one scalar per env (e.g. the social metrics of
    `marljax.evaluation.social.SocialMetrics`) are averaged too.

    Args:
      env: the core environment.
      env_params: its params.
      agent: a `marljax.agents.Agent` built for `env`.
      agent_state: the agent's state (e.g. after training; no seed axis).
      hparams: the agent's hyperparameters (acting may read them, e.g. epsilon).
      key: PRNG key.
      num_envs: parallel environments `E` (static).
      num_steps: steps per environment `T` (static).
      wrap: optional wrapper applied to `env` before auto-reset (e.g. `SocialMetrics`).
      greedy: static; act with the agent's deterministic policy (default) instead of sampling.

    Returns:
      A dict of `[]` means over the episodes that finished (NaN if none did):
      `"episode_return"`, `"episode_return_per_agent"` (`[A]`), `"episode_length"`, each
      `"group/name"` extra, and `"num_episodes"` (see `marljax.training.rollout.episode_statistics`).
    """
    vec_env = rollout.batched_env(env, wrap=wrap)
    key_reset, key_run = jax.random.split(key)
    state = rollout.reset(
        vec_env, env_params, key_reset, key_run, num_envs, agent.initial_carry(num_envs)
    )
    _, episodes = rollout.rollout(
        vec_env,
        env_params,
        agent,
        agent_state,
        hparams,
        state,
        num_steps,
        greedy=greedy,
        record=lambda transition: transition.episode,
    )
    return rollout.episode_statistics(episodes)


__all__ = ["evaluate_policy"]
