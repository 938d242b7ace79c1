"""Acting in a batch of environments: one step, a rollout of `T` steps, and episode statistics.

Training, evaluation, population play and Shapley credit all act the same way, through this
module:

    env = batched_env(core_env)                               # EpisodeStats + BatchedAutoReset
    state = reset(env, env_params, key_reset, key, E, agent.initial_carry(E))
    state, transitions = rollout(env, env_params, agent, agent_state, hparams, state, T)
    trajectory = to_trajectory(transitions, state, initial_carry)   # the learner's input
    metrics = episode_statistics(transitions.episode)               # per finished episode

A `RolloutState` is the carry of the acting loop (environments, latest timestep, recurrent
carry, PRNG key); `step` advances it by one environment step and returns a `Transition`, the
record of that step; `rollout` is a `lax.scan` of `step`, which stacks the `Transition`s along a
leading time axis `T`. Running episode returns and lengths live inside the environments' state
(the `EpisodeStats` wrapper); at the step where an episode ends the `Transition` carries the
finished episode's totals (`EpisodeRecord`), which `episode_statistics` averages.

`step(..., greedy=True)` acts with the agent's deterministic policy (`agent.act(...,
greedy=True)`: the mode of its action distribution, or argmax Q); the default samples.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from marljax.agents.base import Agent, Observation, Trajectory
from marljax.core.types import Environment, EnvParams, TimeStep
from marljax.core.wrappers import AutoReset, BatchedAutoReset, EpisodeStats

Array = jax.Array


@struct.dataclass
class RolloutState:
    """The carry of the acting loop over `E` environments.

    Attributes:
      env_state: the batched environments' state (leaves `[E, ...]`; the running episode
        returns and lengths of `EpisodeStats` included).
      timestep: the latest `TimeStep` (leaves `[E, ...]`; after an episode ended, the first
        observation of the next one).
      episode_start: `[E]` bool, the latest observation starts an episode.
      carry: the agent's recurrent carry (leaves `[E, ...]`; `()` for feed-forward agents).
      key: PRNG key of the acting loop.
    """

    env_state: Any  # leaves [E, ...]
    timestep: TimeStep  # leaves [E, ...]
    episode_start: Array  # [E] bool
    carry: Any  # leaves [E, ...]
    key: Array  # PRNG key

    @property
    def observation(self) -> Observation:
        """The `Observation` the agents act on next (leaves `[E, ...]`)."""
        ts = self.timestep
        return Observation(ts.obs, ts.action_mask, ts.global_state, self.episode_start)


@struct.dataclass
class EpisodeRecord:
    """One step's episode bookkeeping (leaves `[E, ...]`; `[T, E, ...]` once stacked).

    Attributes:
      done: `[E]` bool, the step ended an episode (terminated or truncated).
      episode_return: `[E, A]` the finished episode's undiscounted return where `done`, else 0.
      episode_length: `[E]` int32 the finished episode's length where `done`, else 0.
      metrics: per-episode metrics a wrapper reports in `extras` under `"group/name"` keys with
        one scalar per environment (e.g. `"social/efficiency"`), each `[E]`.
    """

    done: Array  # [E] bool
    episode_return: Array  # [E, A]
    episode_length: Array  # [E] int32
    metrics: dict[str, Array]  # name -> [E]


@struct.dataclass
class Transition:
    """The record of one environment step of `E` environments (stack over `T` with `rollout`).

    Attributes:
      observation: the `Observation` the agents acted on (leaves `[E, ...]`).
      actions: `[E, A, *act_shape]`.
      reward: `[E, A]`.
      terminated: `[E]` bool, the step ended the episode in a terminal state.
      truncated: `[E]` bool, the step hit the time limit.
      next_obs: `[E, A, *obs_shape]` observation after the step (the final observation at
        episode ends, before the auto-reset), for bootstrapping.
      next_global_state: `[E, *state_shape]`, likewise.
      next_action_mask: `[E, A, N]`, likewise.
      policy_info: the agent-specific pytree `act` returned (e.g. log-probabilities, values).
      episode: the step's `EpisodeRecord`.
    """

    observation: Observation  # leaves [E, ...]
    actions: Array  # [E, A, *act_shape]
    reward: Array  # [E, A]
    terminated: Array  # [E] bool
    truncated: Array  # [E] bool
    next_obs: Array  # [E, A, *obs_shape]
    next_global_state: Array  # [E, *state_shape]
    next_action_mask: Array  # [E, A, N]
    policy_info: Any  # leaves [E, ...]
    episode: EpisodeRecord  # leaves [E, ...]


def batched_env(
    env: Environment,
    axis_names: tuple[str, ...] = (),
    wrap: Callable[[Environment], Environment] | None = None,
    auto_reset: bool = True,
) -> BatchedAutoReset:
    """The batched, auto-resetting environments `step` acts in: `BatchedAutoReset(EpisodeStats)`.

    Args:
      env: a core environment.
      axis_names: named mapped axes around the rollout (see `BatchedAutoReset`).
      wrap: optional wrapper applied to `env` first (e.g. `SocialMetrics`).
      auto_reset: False: the environments are never reset (for rollouts of one episode per
        environment; steps after an episode's end continue from its final state and should be
        ignored, e.g. with `first_episode_returns`).

    Returns:
      A `BatchedAutoReset` over `EpisodeStats(wrap(env))` (with the same `reset` / `step`
      interface, `E` environments, when `auto_reset` is False).
    """
    inner = EpisodeStats(env if wrap is None else wrap(env))
    if not auto_reset:
        return _BatchedNoReset(inner)
    return BatchedAutoReset(inner, tuple(axis_names))


class _BatchedNoReset:
    """`E` environments stepped side by side, never reset (`BatchedAutoReset`'s interface)."""

    def __init__(self, env: Environment):
        self.env = env
        self.num_agents = env.num_agents

    def reset(self, keys: Array, params: EnvParams) -> tuple[Any, TimeStep]:
        states, ts = jax.vmap(self.env.reset, in_axes=(0, None))(keys, params)
        return states, AutoReset._add_final(ts, ts)

    def step(self, keys: Array, states: Any, actions: Array, params: EnvParams):
        step = jax.vmap(self.env.step, in_axes=(0, 0, 0, None))
        states, ts = step(keys, states, actions, params)
        return states, AutoReset._add_final(ts, ts)


def reset(
    env: BatchedAutoReset,
    env_params: EnvParams,
    key_reset: Array,
    key: Array,
    num_envs: int,
    carry: Any,
) -> RolloutState:
    """A `RolloutState` of `num_envs` freshly reset environments.

    Args:
      env: from `batched_env`.
      env_params: the env params.
      key_reset: PRNG key of the resets (split into one key per environment).
      key: PRNG key of the acting loop that follows.
      num_envs: `E` (static).
      carry: the agent's initial recurrent carry (`agent.initial_carry(E)`).

    Returns:
      The state; every environment starts an episode.
    """
    env_state, timestep = env.reset(jax.random.split(key_reset, num_envs), env_params)
    return RolloutState(
        env_state=env_state,
        timestep=timestep,
        episode_start=jnp.ones((num_envs,), bool),
        carry=carry,
        key=key,
    )


def step(
    env: BatchedAutoReset,
    env_params: EnvParams,
    agent: Agent,
    agent_state: Any,
    hparams: Any,
    state: RolloutState,
    greedy: bool = False,
) -> tuple[RolloutState, Transition]:
    """One environment step: the agents act on the latest observation, the environments step.

    Args:
      env: from `batched_env` (auto-resets ended episodes; tracks episode statistics).
      env_params: the env params.
      agent: the acting `Agent`.
      agent_state: its state (constant over the rollout).
      hparams: its hyperparameters (acting reads exploration schedules from them).
      state: the acting loop's state, `E` environments.
      greedy: static; act with the deterministic policy (`agent.act(..., greedy=True)`). The
        flag is passed to `act` only when true.

    Returns:
      `(next_state, transition)`.
    """
    key, key_act, key_env = jax.random.split(state.key, 3)
    num_envs = state.episode_start.shape[0]
    observation = state.observation
    act_kwargs = {"greedy": True} if greedy else {}
    actions, carry, policy_info = agent.act(
        agent_state, state.carry, observation, key_act, hparams, **act_kwargs
    )
    env_state, ts = env.step(
        jax.random.split(key_env, num_envs), state.env_state, actions, env_params
    )
    extras = ts.extras
    transition = Transition(
        observation=observation,
        actions=actions,
        reward=ts.reward,
        terminated=ts.terminated,
        truncated=ts.truncated,
        next_obs=extras["final_obs"],
        next_global_state=extras["final_global_state"],
        next_action_mask=extras["final_action_mask"],
        policy_info=policy_info,
        episode=EpisodeRecord(
            done=ts.done,
            episode_return=extras["episode_return"],
            episode_length=extras["episode_length"],
            metrics={k: v for k, v in extras.items() if _is_episode_metric(k, v, num_envs)},
        ),
    )
    state = state.replace(
        env_state=env_state, timestep=ts, episode_start=ts.done, carry=carry, key=key
    )
    return state, transition


def rollout(
    env: BatchedAutoReset,
    env_params: EnvParams,
    agent: Agent,
    agent_state: Any,
    hparams: Any,
    state: RolloutState,
    num_steps: int,
    greedy: bool = False,
    record: Callable[[Transition], Any] | None = None,
) -> tuple[RolloutState, Any]:
    """`num_steps` steps of `step` as one `lax.scan`.

    Args:
      env, env_params, agent, agent_state, hparams, greedy: as for `step`.
      state: the acting loop's state, `E` environments.
      num_steps: `T` (static).
      record: optional `record(transition) -> pytree` choosing what to keep of each step (e.g.
        `lambda t: t.episode` to keep only the episode statistics, so memory stays small);
        default: the whole `Transition`.

    Returns:
      `(state, records)`: the state after the last step and the records stacked along a leading
      time axis (a `Transition` with leaves `[T, E, ...]` by default).
    """

    def body(s: RolloutState, _):
        s, transition = step(env, env_params, agent, agent_state, hparams, s, greedy)
        return s, transition if record is None else record(transition)

    return jax.lax.scan(body, state, None, length=num_steps)


def to_trajectory(transitions: Transition, state: RolloutState, initial_carry: Any) -> Trajectory:
    """The learner's `Trajectory` from `T` stacked transitions.

    Args:
      transitions: from `rollout` (leaves `[T, E, ...]`).
      state: the `RolloutState` after the last step (its observation bootstraps).
      initial_carry: the recurrent carry before the first step (leaves `[E, ...]`).

    Returns:
      A `marljax.agents.base.Trajectory`.
    """
    return Trajectory(
        observation=transitions.observation,
        actions=transitions.actions,
        reward=transitions.reward,
        terminated=transitions.terminated,
        truncated=transitions.truncated,
        next_obs=transitions.next_obs,
        next_global_state=transitions.next_global_state,
        next_action_mask=transitions.next_action_mask,
        policy_info=transitions.policy_info,
        last_observation=state.observation,
        initial_carry=initial_carry,
    )


# ----------------------------------------------------------------------------- statistics


def episode_statistics(episodes: EpisodeRecord, axis_name: str | None = None) -> dict[str, Array]:
    """Averages over the episodes that finished inside a window of `T` steps of `E` envs.

    Episodes that are still running at the end of the window do not count (their totals are
    reported at the step where they end, in a later window).

    Args:
      episodes: `EpisodeRecord` with leaves `[T, E, ...]` (e.g. `transitions.episode`).
      axis_name: optional mapped axis over which the environments are sharded (data-parallel
        shards, or a named `vmap`): the totals and counts are summed over it first, so every
        shard returns the statistics of the whole batch.

    Returns:
      A dict: `"episode_return"` `[]` (mean over agents), `"episode_return_per_agent"` `[A]`,
      `"episode_length"` `[]`, each `"group/name"` metric `[]`, all NaN if no episode finished,
      and `"num_episodes"` `[]` float32.
    """
    done = episodes.done.astype(jnp.float32)  # [T, E]
    totals = {
        "episode_return_per_agent": jnp.einsum("te,tea->a", done, episodes.episode_return),
        "episode_length": (done * episodes.episode_length).sum(),
        **{name: (done * value).sum() for name, value in episodes.metrics.items()},
    }
    means = episode_averages(totals, done.sum(), axis_name)
    return {"episode_return": means["episode_return_per_agent"].mean(), **means}


def episode_averages(
    totals: dict[str, Array], count: Array, axis_name: str | None = None
) -> dict[str, Array]:
    """Per-episode means `total / count` (NaN where `count` is 0), summed over `axis_name` first.

    Args:
      totals: name -> sum over finished episodes, `[*count_shape, ...]`.
      count: `[*count_shape]` number of finished episodes (`[]` for one window; a leading
        axis such as `[U]` updates broadcasts against the totals' leading axes).
      axis_name: optional mapped axis to `psum` the totals and the count over.

    Returns:
      name -> mean per episode, and `"num_episodes"`: the (summed) count.
    """
    if axis_name is not None:
        totals, count = jax.lax.psum((totals, count), axis_name)
    out = {}
    for name, total in totals.items():
        c = count.reshape(count.shape + (1,) * (total.ndim - count.ndim))
        out[name] = total / jnp.maximum(c, 1.0) * jnp.where(c > 0, 1.0, jnp.nan)
    out["num_episodes"] = count
    return out


def first_episode_returns(reward: Array, done: Array) -> tuple[Array, Array]:
    """Each environment's return up to the end of its first episode in the window.

    Args:
      reward: `[T, E, ...]` rewards (e.g. `[T, E, A]`).
      done: `[T, E]` bool episode ends.

    Returns:
      `(returns [E, ...], finished [E] bool)`: the summed rewards of the steps up to and
      including the first end (all `T` steps where none), and whether an episode ended.
    """
    ended_before = jnp.cumsum(done.astype(jnp.int32), axis=0) - done.astype(jnp.int32)  # [T, E]
    alive = (ended_before == 0).astype(jnp.float32)
    alive = alive.reshape(alive.shape + (1,) * (reward.ndim - alive.ndim))
    return jnp.sum(reward.astype(jnp.float32) * alive, axis=0), jnp.any(done, axis=0)


#: The prefix of a task's own per-episode score (e.g. SMAX's `"task/win_rate"`), which progress
#: bars, run summaries, `marljax eval`, marl-eval JSON and plots report beside the return.
TASK_METRIC_PREFIX = "task/"


def task_metric_names(names: Any) -> list[str]:
    """The task scores among metric names: the `"task/<name>"`, then the `"eval/task/<name>"`.

    Args:
      names: metric names (e.g. the keys of a metrics dict).
    """
    scores = [n for n in names if n.removeprefix("eval/").startswith(TASK_METRIC_PREFIX)]
    return sorted(scores, key=lambda n: (n.startswith("eval/"), n))


def score_label(name: str) -> str:
    """A task score's name for people: `"task/win_rate"` -> `"win rate"` (`"eval/..."`: greedy)."""
    label = name.removeprefix("eval/").removeprefix(TASK_METRIC_PREFIX).replace("_", " ")
    return f"greedy {label}" if name.startswith("eval/") else label


def _is_episode_metric(name: str, value: Array, num_envs: int) -> bool:
    """Extras named `group/name` with one scalar per env are per-episode metrics (see TimeStep)."""
    return "/" in name and value.shape == (num_envs,)


__all__ = [
    "TASK_METRIC_PREFIX",
    "EpisodeRecord",
    "RolloutState",
    "Transition",
    "batched_env",
    "episode_averages",
    "episode_statistics",
    "first_episode_returns",
    "reset",
    "rollout",
    "score_label",
    "step",
    "task_metric_names",
    "to_trajectory",
]
