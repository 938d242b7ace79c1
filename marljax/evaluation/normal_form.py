"""Exact game-theoretic quantities of normal-form games: payoffs, best responses, NashConv.

Every function takes a payoff tensor `payoffs` of shape `[A, N, ..., N]` (one action axis per
agent; `payoffs[i, a_0, ..., a_{A-1}]` is agent `i`'s payoff, the layout of
`marljax.envs.matrix.payoffs`) and a profile of mixed strategies `strategies` of shape `[A, N]`
(row `i` is agent `i`'s distribution over its `N` actions). All functions are pure, jittable and
work for any number of agents; the contractions over the joint-action axes are single `einsum`s,
so the cost is a few passes over the `A * N**A` payoff entries. Batch over games or strategy
profiles with `jax.vmap`.

Reference: M. Lanctot et al., "OpenSpiel: A framework for reinforcement learning in games",
arXiv:1908.09453, 2019 (`open_spiel/python/algorithms/exploitability.py`).
"""

from __future__ import annotations

import string

import jax
import jax.numpy as jnp

Array = jax.Array

# einsum letters: "a" is the payoff-receiver axis, agent j's action axis is _AXES[j].
_AXES = string.ascii_letters.replace("a", "")


def _check(payoffs: Array, strategies: Array) -> tuple[int, int]:
    p_shape, s_shape = jnp.shape(payoffs), jnp.shape(strategies)
    num_agents = p_shape[0] if p_shape else 0
    if len(p_shape) != num_agents + 1 or num_agents < 1:
        raise ValueError(
            f"payoffs must have shape [A, N, ..., N] with A action axes, got {p_shape}"
        )
    if num_agents > len(_AXES):
        raise ValueError(f"at most {len(_AXES)} agents are supported, got {num_agents}")
    num_actions = p_shape[1]
    if p_shape != (num_agents,) + (num_actions,) * num_agents:
        raise ValueError(f"payoffs must have equal action axes [A, N, ..., N], got {p_shape}")
    if s_shape != (num_agents, num_actions):
        raise ValueError(
            f"strategies must have shape [A, N] = {(num_agents, num_actions)}, got {s_shape}"
        )
    return num_agents, num_actions


def pure_strategies(actions: Array, num_actions: int) -> Array:
    """The mixed-strategy profile that plays a pure joint action.

    Args:
      actions: `[A]` int joint action.
      num_actions: number of actions `N`.

    Returns:
      `[A, N]` float32 one-hot strategies.
    """
    return jax.nn.one_hot(actions, num_actions, dtype=jnp.float32)


def expected_payoffs(payoffs: Array, strategies: Array) -> Array:
    """Each agent's expected payoff when all agents play their mixed strategies independently.

    `v_i = sum_{a} payoffs[i, a_0, ..., a_{A-1}] * prod_j strategies[j, a_j]`.

    Args:
      payoffs: `[A, N, ..., N]` payoff tensor.
      strategies: `[A, N]` mixed strategies (rows sum to 1).

    Returns:
      `[A]` expected payoffs.
    """
    num_agents, _ = _check(payoffs, strategies)
    axes = _AXES[:num_agents]
    spec = f"a{axes}," + ",".join(axes) + "->a"
    return jnp.einsum(spec, payoffs, *[strategies[j] for j in range(num_agents)])


def deviation_payoffs(payoffs: Array, strategies: Array) -> Array:
    """Each agent's payoff for each of its pure actions against the others' mixed strategies.

    `d[i, n] = sum_{a_{-i}} payoffs[i, ..., a_i = n, ...] * prod_{j != i} strategies[j, a_j]`, so
    `expected_payoffs = sum_n d[i, n] * strategies[i, n]`.

    Args:
      payoffs: `[A, N, ..., N]` payoff tensor.
      strategies: `[A, N]` mixed strategies.

    Returns:
      `[A, N]` deviation payoffs.
    """
    num_agents, _ = _check(payoffs, strategies)
    axes = _AXES[:num_agents]
    rows = []
    # One einsum per receiving agent (A is static and small); no loop over joint actions.
    for i in range(num_agents):
        others = [j for j in range(num_agents) if j != i]
        spec = axes + "".join("," + axes[j] for j in others) + "->" + axes[i]
        rows.append(jnp.einsum(spec, payoffs[i], *[strategies[j] for j in others]))
    return jnp.stack(rows)


def best_response(payoffs: Array, strategies: Array) -> tuple[Array, Array]:
    """Each agent's best pure response to the others' mixed strategies.

    Args:
      payoffs: `[A, N, ..., N]` payoff tensor.
      strategies: `[A, N]` mixed strategies (agent `i`'s own row is ignored).

    Returns:
      `(values, actions)`: `[A]` best-response payoffs `max_n d[i, n]` and `[A]` int32 best
      responses (the lowest index among ties).
    """
    dev = deviation_payoffs(payoffs, strategies)
    return dev.max(axis=-1), jnp.argmax(dev, axis=-1).astype(jnp.int32)


def nash_conv(payoffs: Array, strategies: Array) -> Array:
    """NashConv: the summed gain of every agent's best response over its current payoff.

    `NashConv(pi) = sum_i (max_n d[i, n] - v_i(pi))`; zero exactly at a Nash equilibrium.

    Reference: M. Lanctot et al., "A unified game-theoretic approach to multiagent reinforcement
    learning", NeurIPS 2017; OpenSpiel's `exploitability.nash_conv`.

    Args:
      payoffs: `[A, N, ..., N]` payoff tensor.
      strategies: `[A, N]` mixed strategies.

    Returns:
      `[]` NashConv (>= 0 up to rounding).
    """
    dev = deviation_payoffs(payoffs, strategies)
    value = jnp.sum(dev * strategies, axis=-1)
    return jnp.sum(dev.max(axis=-1) - value)


def exploitability(payoffs: Array, strategies: Array) -> Array:
    """Exploitability: `NashConv / A`, the mean best-response gain per agent.

    This is OpenSpiel's convention (`open_spiel/python/algorithms/exploitability.py`), where for
    constant-sum games `exploitability = (sum_i BR_i - utility_sum) / A`, which equals
    `NashConv / A`; here the same formula is used for general-sum games.

    Args:
      payoffs: `[A, N, ..., N]` payoff tensor.
      strategies: `[A, N]` mixed strategies.

    Returns:
      `[]` exploitability.
    """
    return nash_conv(payoffs, strategies) / payoffs.shape[0]
