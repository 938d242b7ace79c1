"""Shapley credit of agents: how much each agent contributes to the team's return.

For `A` agents and a characteristic function `v(S)` (the value a coalition `S` of agents
achieves), agent `i`'s Shapley value is

    phi_i = sum_{S subset N \\ {i}} |S|! (A - |S| - 1)! / A! * (v(S u {i}) - v(S))
          = E_{pi ~ uniform permutations} [ v(Pre_i(pi) u {i}) - v(Pre_i(pi)) ],

with `Pre_i(pi)` the agents before `i` in `pi`. It is the only attribution that is efficient
(`sum_i phi_i = v(N) - v({})`), symmetric (interchangeable agents get equal credit), gives zero
to null players and is additive over games.

- `exact_shapley` evaluates `v` on all `2^A` coalitions in one `vmap` (`A` up to about 16);
- `monte_carlo_shapley` samples permutations (optionally antithetic pairs) and evaluates the
  `A + 1` prefix coalitions of each, in one `vmap`; it returns standard errors too;
- `rollout_value_fn` builds `v` for an environment and a trained agent: agents outside the
  coalition are replaced by a baseline policy (`coalition_agent`) (`"random"`: uniform over legal actions, or
  `"noop"`: action 0), and `v(S)` is the mean team return (sum over agents) of `num_episodes`
  episodes.

A characteristic function here is `value(mask, key) -> []` with `mask` a `[A]` bool coalition;
it must be jittable. Both estimators pass the same key to every coalition they compare (common
random numbers), which removes most rollout noise from the marginal contributions.

Reference: A. Heuillet, F. Couthouis and N. Diaz-Rodriguez, "Collective eXplainable AI:
Explaining cooperative strategies and agent contribution in multiagent reinforcement learning
with Shapley values", IEEE Computational Intelligence Magazine, 2022; L. S. Shapley, "A value
for n-person games", 1953; J. Castro, D. Gomez and J. Tejada, "Polynomial calculation of the
Shapley value based on sampling", Computers & Operations Research, 2009.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from marljax.agents.base import Agent
from marljax.core.types import Environment, EnvParams
from marljax.training import rollout

Array = jax.Array
ValueFn = Callable[[Array, Array], Array]

BASELINES = ("random", "noop")


class ShapleyEstimate(NamedTuple):
    """Monte Carlo Shapley values `[A]` and their standard errors `[A]`."""

    values: Array
    stderr: Array


def coalition_masks(num_agents: int) -> Array:
    """All `2^A` coalitions as bool masks: row `m` holds the bits of the integer `m`.

    Args:
      num_agents: `A`.

    Returns:
      `[2^A, A]` bool, `masks[m, i] = (m >> i) & 1`.
    """
    return jnp.asarray(_mask_bits(num_agents))


def _mask_bits(num_agents: int) -> np.ndarray:
    m = np.arange(2**num_agents)[:, None]
    return ((m >> np.arange(num_agents)[None, :]) & 1).astype(bool)


def exact_shapley(value: ValueFn, num_agents: int, key: Array) -> Array:
    """Exact Shapley values from all `2^A` coalitions (one `vmap` over the masks).

    Args:
      value: jittable characteristic function `value(mask [A] bool, key) -> []`.
      num_agents: `A` (static); cost is `2^A` evaluations of `value`.
      key: PRNG key, passed unchanged to every coalition (common random numbers).

    Returns:
      `[A]` float32 Shapley values; they sum to `v(all) - v(empty)`.
    """
    if not 1 <= int(num_agents) <= 20:
        raise ValueError(f"exact_shapley supports 1 <= A <= 20 agents, got {num_agents}")
    return _exact(value, int(num_agents), key)


@functools.partial(jax.jit, static_argnums=(0, 1))
def _exact(value: ValueFn, A: int, key: Array) -> Array:
    bits = _mask_bits(A)  # [2^A, A], host constant (also under jit)
    values = jax.vmap(value, in_axes=(0, None))(jnp.asarray(bits), key).astype(jnp.float32)
    ids = np.arange(2**A)
    size = bits.sum(axis=1)  # [2^A]
    # weight of a coalition S of size s not containing i: s! (A - s - 1)! / A!
    weight = np.array(
        [
            math.factorial(s) * math.factorial(A - s - 1) / math.factorial(A) if s < A else 0.0
            for s in range(A + 1)
        ]
    )
    with_i = ids[:, None] | (1 << np.arange(A))[None, :]  # [2^A, A] index of S u {i}
    w = np.where(bits, 0.0, weight[size][:, None]).astype(np.float32)  # 0 where i in S
    gain = values[with_i] - values[:, None]
    return jnp.sum(jnp.asarray(w) * gain, axis=0)


def monte_carlo_shapley(
    value: ValueFn,
    num_agents: int,
    key: Array,
    num_permutations: int = 256,
    antithetic: bool = True,
) -> ShapleyEstimate:
    """Shapley values estimated from random permutations of the agents.

    For each sampled permutation the agents join one by one; agent `pi_k`'s marginal
    contribution is `v({pi_0..pi_k}) - v({pi_0..pi_{k-1}})`, and the estimate is its mean over
    permutations. With `antithetic`, each permutation is paired with its reverse (a standard
    variance reduction); the pair's mean counts as one sample for the standard error. Every
    permutation's `A + 1` coalitions use the same key (common random numbers). Efficiency
    holds exactly for every sample.

    Args:
      value: jittable `value(mask [A] bool, key) -> []`.
      num_agents: `A` (static).
      key: PRNG key.
      num_permutations: permutations `M` (static; `>= 2`; with `antithetic`, `M / 2` pairs, so
        `M` even and `>= 4`).
      antithetic: pair each permutation with its reverse.

    Returns:
      `ShapleyEstimate(values [A], stderr [A])`; costs `M (A + 1)` evaluations of `value`.
    """
    A = int(num_agents)
    M = int(num_permutations)
    if A < 1:
        raise ValueError(f"num_agents must be >= 1, got {num_agents}")
    if (antithetic and (M < 4 or M % 2)) or M < 2:
        need = "even and >= 4 (two antithetic pairs)" if antithetic else ">= 2"
        raise ValueError(
            f"num_permutations must be {need} for a standard error, got {num_permutations}"
        )
    return _monte_carlo(value, A, key, M, bool(antithetic))


@functools.partial(jax.jit, static_argnums=(0, 1, 3, 4))
def _monte_carlo(value: ValueFn, A: int, key: Array, M: int, antithetic: bool) -> ShapleyEstimate:
    num_draws = M // 2 if antithetic else M
    key_perm, key_value = jax.random.split(key)
    perms = jax.vmap(lambda k: jax.random.permutation(k, A))(
        jax.random.split(key_perm, num_draws)
    )  # [D, A]
    value_keys = jax.random.split(key_value, num_draws)
    # prefix[k] = agents at positions < k; rank[i] = position of agent i
    positions = jnp.arange(A + 1)[:, None]  # [A + 1, 1]

    def contributions(perm, k):
        rank = jnp.argsort(perm)  # [A]
        prefixes = rank[None, :] < positions  # [A + 1, A] bool
        v = jax.vmap(value, in_axes=(0, None))(prefixes, k).astype(jnp.float32)  # [A + 1]
        return v[rank + 1] - v[rank]  # [A] marginal contribution of each agent

    samples = jax.vmap(contributions)(perms, value_keys)  # [D, A]
    if antithetic:
        samples = 0.5 * (samples + jax.vmap(contributions)(perms[:, ::-1], value_keys))
    mean = samples.mean(axis=0)
    stderr = samples.std(axis=0, ddof=1) / jnp.sqrt(samples.shape[0])
    return ShapleyEstimate(mean, stderr)


def shapley_values(
    value: ValueFn,
    num_agents: int,
    key: Array,
    method: str = "auto",
    num_permutations: int = 256,
    max_exact_agents: int = 10,
) -> Array:
    """Shapley values, exact for small teams and Monte Carlo otherwise.

    Args:
      value: jittable `value(mask [A] bool, key) -> []`.
      num_agents: `A`.
      key: PRNG key.
      method: `"exact"`, `"monte_carlo"` or `"auto"` (exact if `A <= max_exact_agents`).
      num_permutations: permutations for the Monte Carlo estimate.
      max_exact_agents: the `"auto"` cut-off.

    Returns:
      `[A]` Shapley values.
    """
    if method == "auto":
        method = "exact" if num_agents <= max_exact_agents else "monte_carlo"
    if method == "exact":
        return exact_shapley(value, num_agents, key)
    if method == "monte_carlo":
        return monte_carlo_shapley(value, num_agents, key, num_permutations).values
    raise ValueError(f"method must be 'auto', 'exact' or 'monte_carlo', got {method!r}")


def rollout_value_fn(
    env: Environment,
    env_params: EnvParams,
    agent: Any,
    agent_state: Any,
    hparams: Any,
    num_episodes: int = 8,
    num_steps: int | None = None,
    baseline: str = "random",
    greedy: bool = False,
) -> ValueFn:
    """A characteristic function: mean team return when only a coalition runs the agent.

    `value(mask, key)` resets `num_episodes` environments, rolls them out for `num_steps` steps
    (`marljax.training.rollout.rollout`) with the agent's policy, replaces the actions of agents with
    `mask[i] = False` by the baseline policy, and returns the mean over episodes of the team
    return `sum_t sum_i r[t, i]` up to each episode's first end (later steps are ignored, no
    reset).

    Baselines (discrete actions): `"random"`, uniform over the legal actions of the absent
    agent (from `action_mask`); `"noop"`, action 0 (the no-op in our grid and particle envs;
    check the env's action table before using it elsewhere).

    Args:
      env: a core environment with discrete actions.
      env_params: its params.
      agent: a `marljax.agents.Agent` built for `env`.
      agent_state: the agent's state (e.g. after training).
      hparams: the agent's hyperparameters.
      num_episodes: parallel episodes `E` averaged per evaluation (static).
      num_steps: steps per episode `T` (static; default `env_params.max_steps`).
      baseline: `"random"` or `"noop"`.
      greedy: the coalition acts with the agent's deterministic policy (default: its
        stochastic policy).

    Returns:
      A jitted `value(mask [A] bool, key) -> []` float32.
    """
    if baseline not in BASELINES:
        raise ValueError(f"baseline must be one of {BASELINES}, got {baseline!r}")
    if num_steps is None:
        num_steps = int(np.asarray(env_params.max_steps))
    E, T = int(num_episodes), int(num_steps)
    vec_env = rollout.batched_env(env, auto_reset=False)

    def value(mask: Array, key: Array) -> Array:
        coalition = coalition_agent(agent, mask, baseline)
        key_reset, key_run = jax.random.split(key)
        state = rollout.reset(vec_env, env_params, key_reset, key_run, E, agent.initial_carry(E))
        _, (reward, done) = rollout.rollout(
            vec_env,
            env_params,
            coalition,
            agent_state,
            hparams,
            state,
            T,
            greedy=greedy,
            record=lambda transition: (transition.reward, transition.episode.done),
        )
        team = reward.astype(jnp.float32).sum(axis=-1)  # [T, E]
        total, _ = rollout.first_episode_returns(team, done)
        return total.mean()

    return jax.jit(value)


def coalition_agent(agent: Agent, mask: Array, baseline: str = "random") -> Agent:
    """`agent` with the actions of the agents outside a coalition replaced by a baseline policy.

    Args:
      agent: a `marljax.agents.Agent` with discrete actions.
      mask: `[A]` bool, true for the coalition's members (may be traced).
      baseline: `"random"` (uniform over the legal actions) or `"noop"` (action 0).

    Returns:
      The same agent with a new `act` (its other functions unchanged).
    """
    if baseline not in BASELINES:
        raise ValueError(f"baseline must be one of {BASELINES}, got {baseline!r}")

    def act(agent_state, carry, observation, key, hparams, greedy=False):
        key_agent, key_base = jax.random.split(key)
        act_kwargs = {"greedy": True} if greedy else {}
        actions, carry, info = agent.act(
            agent_state, carry, observation, key_agent, hparams, **act_kwargs
        )
        if baseline == "noop":
            base = jnp.zeros_like(actions)
        else:
            logits = jnp.where(observation.action_mask, 0.0, -jnp.inf)  # [E, A, N]
            base = jax.random.categorical(key_base, logits).astype(actions.dtype)
        return jnp.where(mask[None, :], actions, base), carry, info

    return agent._replace(act=act)
