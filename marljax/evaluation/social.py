"""Social metrics of multi-agent episodes (Perolat et al. 2017), as pure jittable functions.

For an episode of `T` steps with rewards `r[t, i]` of `A` agents and returns `R_i = sum_t r[t, i]`:

- utilitarian efficiency `U = sum_i R_i / T` (the group's reward per step);
- equality `E = 1 - Gini(R)`, `Gini(R) = sum_{i,j} |R_i - R_j| / (2 A sum_i |R_i|)`;
- sustainability `S = mean_i t_i`, `t_i` the mean (1-based) time step at which agent `i` received a
  positive reward (over agents that received one; 0 if none did);
- peace `P = (A T - sum_{t,i} tagged_out[t, i]) / T`, the mean number of agents not tagged out
  (`A` when the env has no tagging);
- cooperation rate: cooperative choices / all labelled choices (`extras["cooperated"]`, and
  `extras["defected"]` where the env marks choices that are not cooperative; without it, every
  agent-step counts as a choice);
- punishment rate: the fraction of agent-steps in which the agent was punished
  (`extras["punished"]`).

`SocialMetrics` is a wrapper that computes them inside `jit` per episode and returns them in
`timestep.extras` (keys `"social/<name>"`), like `EpisodeStats` does for returns, so training
curves can show them. `evaluate_social` rolls out an agent and averages them over episodes.

Reference: J. Perolat, J. Z. Leibo, V. Zambaldi, C. Beattie, K. Tuyls and T. Graepel, "A
multi-agent reinforcement learning model of common-pool resource appropriation", NeurIPS 2017.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core.types import Array, Environment, EnvParams, PRNGKey, TimeStep
from marljax.core.wrappers import Wrapper

METRICS = (
    "efficiency",
    "equality",
    "sustainability",
    "peace",
    "cooperation_rate",
    "punishment_rate",
)


# ----------------------------------------------------------------------------- pure functions


def _valid(rewards: Array, valid: Array | None) -> Array:
    """`[T]` float32 mask of the steps that belong to the episode."""
    if valid is None:
        return jnp.ones(rewards.shape[:1], jnp.float32)
    return jnp.asarray(valid, jnp.float32)


def gini(values: Array) -> Array:
    """Gini coefficient of a vector, `sum_{i,j} |x_i - x_j| / (2 A sum_i |x_i|)`.

    Args:
      values: `[..., A]` (e.g. per-agent returns); batch axes are kept.

    Returns:
      `[...]` float32 in `[0, 1)` for non-negative values; 0 when all values are 0.
    """
    x = jnp.asarray(values, jnp.float32)
    num = jnp.abs(x[..., :, None] - x[..., None, :]).sum(axis=(-1, -2))
    den = 2.0 * x.shape[-1] * jnp.abs(x).sum(axis=-1)
    return jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), 0.0)


def equality(returns: Array) -> Array:
    """`1 - gini(returns)` for `[..., A]` returns (Perolat et al. 2017)."""
    return 1.0 - gini(returns)


def utilitarian_efficiency(rewards: Array, valid: Array | None = None) -> Array:
    """Sum of all agents' rewards per episode step.

    Args:
      rewards: `[T, A]` rewards of one episode.
      valid: optional `[T]` bool, the steps that belong to the episode (all by default).

    Returns:
      `[]` float32 `sum_{t,i} r[t, i] / T` (0 for an empty episode).
    """
    v = _valid(rewards, valid)
    total = jnp.sum(rewards.astype(jnp.float32) * v[:, None])
    return total / jnp.maximum(v.sum(), 1.0)


def sustainability(rewards: Array, valid: Array | None = None) -> Array:
    """Mean over agents of the mean 1-based time step of their positive rewards.

    Args:
      rewards: `[T, A]` rewards of one episode.
      valid: optional `[T]` bool mask of the episode's steps.

    Returns:
      `[]` float32; agents without a positive reward are left out; 0 if no agent had one.
    """
    v = _valid(rewards, valid)
    pos = (rewards > 0).astype(jnp.float32) * v[:, None]  # [T, A]
    t = jnp.arange(1, rewards.shape[0] + 1, dtype=jnp.float32)[:, None]
    count = pos.sum(axis=0)
    per_agent = (pos * t).sum(axis=0) / jnp.maximum(count, 1.0)
    has = count > 0
    return jnp.sum(jnp.where(has, per_agent, 0.0)) / jnp.maximum(has.sum(), 1)


def peace(tagged_out: Array | None, num_agents: int, valid: Array | None = None) -> Array:
    """Mean number of agents not tagged out per step, `(A T - sum tagged_out) / T`.

    Args:
      tagged_out: `[T, A]` bool (None: no agent is ever tagged out, peace = `A`).
      num_agents: `A`.
      valid: optional `[T]` bool mask of the episode's steps.

    Returns:
      `[]` float32 in `[0, A]`.
    """
    if tagged_out is None:
        return jnp.float32(num_agents)
    v = _valid(tagged_out, valid)
    steps = jnp.maximum(v.sum(), 1.0)
    tagged = jnp.sum(tagged_out.astype(jnp.float32) * v[:, None])
    return (num_agents * v.sum() - tagged) / steps


def cooperation_rate(
    cooperated: Array, defected: Array | None = None, valid: Array | None = None
) -> Array:
    """Fraction of labelled choices that were cooperative.

    Args:
      cooperated: `[T, A]` bool, the agent made a cooperative choice at that step.
      defected: optional `[T, A]` bool, the agent made a non-cooperative choice. If given, only
        steps with a choice count (e.g. coin pickups in the Coin Game); otherwise every
        agent-step counts.
      valid: optional `[T]` bool mask of the episode's steps.

    Returns:
      `[]` float32 in `[0, 1]` (0 if there was no choice).
    """
    v = _valid(cooperated, valid)[:, None]
    c = cooperated.astype(jnp.float32) * v
    if defected is None:
        n = jnp.broadcast_to(v, cooperated.shape).sum()
    else:
        n = c.sum() + (defected.astype(jnp.float32) * v).sum()
    return c.sum() / jnp.maximum(n, 1.0)


def punishment_rate(punished: Array, valid: Array | None = None) -> Array:
    """Fraction of agent-steps in which the agent was punished (`[T, A]` bool -> `[]`)."""
    v = _valid(punished, valid)[:, None]
    n = jnp.broadcast_to(v, punished.shape).sum()
    return (punished.astype(jnp.float32) * v).sum() / jnp.maximum(n, 1.0)


def episode_social_metrics(
    rewards: Array,
    tagged_out: Array | None = None,
    cooperated: Array | None = None,
    defected: Array | None = None,
    punished: Array | None = None,
    valid: Array | None = None,
) -> dict[str, Array]:
    """All social metrics of one episode (keys of `METRICS`, those whose inputs are given).

    Args:
      rewards: `[T, A]`.
      tagged_out, cooperated, defected, punished: optional `[T, A]` bool (see above).
      valid: optional `[T]` bool mask of the episode's steps.

    Returns:
      A dict of `[]` float32 metrics.
    """
    v = _valid(rewards, valid)
    returns = (rewards.astype(jnp.float32) * v[:, None]).sum(axis=0)
    out = {
        "efficiency": utilitarian_efficiency(rewards, valid),
        "equality": equality(returns),
        "sustainability": sustainability(rewards, valid),
        "peace": peace(tagged_out, rewards.shape[1], valid),
    }
    if cooperated is not None:
        out["cooperation_rate"] = cooperation_rate(cooperated, defected, valid)
    if punished is not None:
        out["punishment_rate"] = punishment_rate(punished, valid)
    return out


def bootstrap_ci(
    key: PRNGKey, values: Array, num_resamples: int = 2000, confidence: float = 0.95
) -> tuple[Array, Array, Array]:
    """Mean of `values` with a percentile bootstrap confidence interval (resampling the runs).

    A one-task special case of `marljax.evaluation.stats.interval_estimate` (which it calls).

    Args:
      key: PRNG key.
      values: `[S]` one value per run (e.g. per seed); NaN/inf raise a `ValueError`.
      num_resamples: bootstrap resamples (static).
      confidence: coverage of the interval.

    Returns:
      `(mean, low, high)`, each `[]` float32.

    Reference: B. Efron and R. J. Tibshirani, "An Introduction to the Bootstrap", 1993.
    """
    from marljax.evaluation.stats import aggregate_mean, interval_estimate

    x = values if isinstance(values, jax.core.Tracer) else np.asarray(values)
    if x.ndim != 1:
        raise ValueError(f"values must be [S] (one value per run), got shape {x.shape}")
    est = interval_estimate(
        key, aggregate_mean, x[:, None], num_resamples=num_resamples, confidence=confidence
    )
    return est.point, est.low, est.high


# ----------------------------------------------------------------------------- wrapper


@struct.dataclass
class SocialMetricsState:
    """Running per-episode sums of `SocialMetrics` (all `[]` unless noted)."""

    inner: Any
    returns: Array  # [A] float32 running returns
    steps: Array  # [] int32 steps so far
    reward_time: Array  # [A] float32 sum of the (1-based) steps with a positive reward
    reward_count: Array  # [A] float32 number of steps with a positive reward
    tagged: Array  # [] float32 agent-steps tagged out
    cooperated: Array  # [] float32 cooperative choices
    choices: Array  # [] float32 labelled choices
    punished: Array  # [] float32 agent-steps punished
    last: dict  # name -> [] float32 metrics of the last finished episode


class SocialMetrics(Wrapper):
    """Adds per-episode social metrics to `timestep.extras` as `"social/<name>"` scalars.

    At a step that ends an episode (`timestep.done`) they are the metrics of that episode;
    otherwise those of the most recently finished episode (0 before the first). Reads the inner
    extras `"tagged_out"` (peace; absent: all agents present), `"cooperated"` / `"defected"`
    (cooperation rate, only reported if the env provides `"cooperated"`) and `"punished"`
    (punishment rate, only reported if provided). Everything is computed inside `jit`.

    Put it outside `AutoReset` (like `EpisodeStats`); inside `AutoReset`, or inside the runner's
    `EpisodeStats(AutoReset(...))` stack, the values are correct at episode ends (which is where
    the runner reads episode statistics).

    Args:
      env: the environment.
    """

    def __init__(self, env: Environment):
        super().__init__(env)
        params = env.default_params()
        _, ts = jax.eval_shape(env.reset, jax.random.PRNGKey(0), params)
        keys = set(ts.extras)
        self.has_tagged = "tagged_out" in keys
        self.has_cooperated = "cooperated" in keys
        self.has_defected = "defected" in keys
        self.has_punished = "punished" in keys
        self.metric_names = tuple(
            m
            for m in METRICS
            if (m != "cooperation_rate" or self.has_cooperated)
            and (m != "punishment_rate" or self.has_punished)
        )

    def reset(self, key: PRNGKey, params: EnvParams) -> tuple[SocialMetricsState, TimeStep]:
        inner, ts = self._env.reset(key, params)
        zeros_a = jnp.zeros((self.num_agents,), jnp.float32)
        z = jnp.float32(0.0)
        state = SocialMetricsState(
            inner=inner,
            returns=zeros_a,
            steps=jnp.int32(0),
            reward_time=zeros_a,
            reward_count=zeros_a,
            tagged=z,
            cooperated=z,
            choices=z,
            punished=z,
            last={m: z for m in self.metric_names},
        )
        return state, self._add(ts, state.last)

    @staticmethod
    def _add(ts: TimeStep, metrics: dict) -> TimeStep:
        return ts.replace(extras={**ts.extras, **{f"social/{k}": v for k, v in metrics.items()}})

    def step(self, key, state: SocialMetricsState, actions, params):
        inner, ts = self._env.step(key, state.inner, actions, params)
        A = self.num_agents
        x = ts.extras
        r = ts.reward.astype(jnp.float32)
        steps = state.steps + 1
        pos = (r > 0).astype(jnp.float32)
        returns = state.returns + r
        reward_time = state.reward_time + pos * steps.astype(jnp.float32)
        reward_count = state.reward_count + pos
        tagged = state.tagged + (
            x["tagged_out"].astype(jnp.float32).sum() if self.has_tagged else 0.0
        )
        coop, choices = state.cooperated, state.choices
        if self.has_cooperated:
            c = x["cooperated"].astype(jnp.float32).sum()
            coop = coop + c
            choices = choices + (
                c + x["defected"].astype(jnp.float32).sum() if self.has_defected else A
            )
        punished = state.punished + (
            x["punished"].astype(jnp.float32).sum() if self.has_punished else 0.0
        )

        T = steps.astype(jnp.float32)
        has = reward_count > 0
        per_agent = reward_time / jnp.maximum(reward_count, 1.0)
        current = {
            "efficiency": returns.sum() / T,
            "equality": equality(returns),
            "sustainability": jnp.sum(jnp.where(has, per_agent, 0.0)) / jnp.maximum(has.sum(), 1),
            "peace": (A * T - tagged) / T,
            "cooperation_rate": coop / jnp.maximum(choices, 1.0),
            "punishment_rate": punished / (A * T),
        }
        done = ts.done
        last = {
            m: jnp.where(done, current[m], state.last[m]).astype(jnp.float32)
            for m in self.metric_names
        }

        def keep(new, old_zero):
            return jnp.where(done, old_zero, new)

        z = jnp.float32(0.0)
        new = SocialMetricsState(
            inner=inner,
            returns=keep(returns, jnp.zeros_like(returns)),
            steps=jnp.where(done, 0, steps).astype(jnp.int32),
            reward_time=keep(reward_time, jnp.zeros_like(reward_time)),
            reward_count=keep(reward_count, jnp.zeros_like(reward_count)),
            tagged=keep(tagged, z).astype(jnp.float32),
            cooperated=keep(coop, z).astype(jnp.float32),
            choices=keep(choices, z).astype(jnp.float32),
            punished=keep(punished, z).astype(jnp.float32),
            last=last,
        )
        return new, self._add(ts, last)


# ----------------------------------------------------------------------------- evaluation


def evaluate_social(
    env: Environment,
    env_params: EnvParams,
    agent: Any,
    agent_state: Any,
    hparams: Any,
    key: PRNGKey,
    num_envs: int = 16,
    num_steps: int = 100,
    greedy: bool = False,
) -> dict[str, Array]:
    """Roll out an agent's policy and average the social metrics over episodes.

    Runs `SocialMetrics(env)` under auto-reset for `num_steps` steps in `num_envs` environments
    inside one `lax.scan` (`marljax.evaluation.rollout.evaluate_policy`; jittable, vmappable over
    seeds' agent states).

    Args:
      env: the core environment.
      env_params: its params.
      agent: a `marljax.agents.Agent` built for `env`.
      agent_state: the agent's state (e.g. after training).
      hparams: the agent's hyperparameters.
      key: PRNG key.
      num_envs: parallel environments `E` (static).
      num_steps: steps per environment `T` (static).
      greedy: act greedily (e.g. a DQN's argmax, without its exploration) instead of sampling
        the policy as trained (the default, for policy-gradient learners).

    Returns:
      A dict: `"social/<name>"` `[]` means over the episodes that finished and
      `"num_episodes"` `[]`. Means are NaN if no episode finished.
    """
    from marljax.evaluation.rollout import evaluate_policy

    out = evaluate_policy(
        env,
        env_params,
        agent,
        agent_state,
        hparams,
        key,
        num_envs,
        num_steps,
        wrap=SocialMetrics,
        greedy=greedy,
    )
    return {k: v for k, v in out.items() if k.startswith("social/") or k == "num_episodes"}
