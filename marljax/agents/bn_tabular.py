"""Tabular Bayesian-network policy gradient with exact gradients on n-agent common-payoff games.

Each agent `i` has a softmax table `theta[i, c, :]` over its `N` actions, indexed by the joint
action `c` of its parents in a DAG (non-parents are masked out of the index). The joint policy
is `pi(a) = prod_i softmax(theta[i, c_i(a)])[a_i]`; with all `N^A` joint actions enumerated, the
expected payoff `J(theta) = sum_a pi(a) R(a)` and its gradient are exact, and gradient ascent is
vmapped over seeds. We report the Nash-equilibrium gap (the most any agent gains by changing its
own conditional policy, the others fixed) and the price of anarchy (best joint payoff over the
payoff reached), for the empty, line and full graphs, as in the tabular experiment of D. Chen et
al., "Context-Aware Bayesian Network Actor-Critic Methods for Cooperative Multi-Agent
Reinforcement Learning", ICML 2023 (their game and numbers are not reproduced exactly; our game
is `coordination_game` below).
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from marljax.agents import bn

Array = jax.Array


def joint_actions(num_agents: int, num_actions: int) -> Array:
    """`[N^A, A]` int32: every joint action, agent 0 slowest (row-major `[N] * A` table order)."""
    return jnp.asarray(
        list(itertools.product(range(num_actions), repeat=num_agents)), jnp.int32
    ).reshape(-1, num_agents)


def coordination_game(num_agents: int, num_actions: int = 3, safe_reward: float = 0.6) -> Array:
    """Common payoff `[N^A]` with `N - 1` equal optima and a safe, uncoordinated action.

    `R(a) = 1` if every agent plays the same action `k < N - 1` (several equal optima, so agents
    must agree on one); otherwise `R(a) = safe_reward * (fraction of agents playing N - 1)`.
    "Everybody safe" is a Nash equilibrium worth `safe_reward`; its price of anarchy is
    `1 / safe_reward`. Independent learners are drawn to it because its payoff needs no
    coordination.

    Raises:
      ValueError: for fewer than 2 agents or actions, or `safe_reward` outside (0, 1).
    """
    if num_agents < 2 or num_actions < 2:
        raise ValueError(
            f"coordination_game needs >= 2 agents and >= 2 actions, got {num_agents}, {num_actions}"
        )
    if not 0.0 < safe_reward < 1.0:
        raise ValueError(f"safe_reward must be in (0, 1), got {safe_reward!r}")
    a = joint_actions(num_agents, num_actions)
    coordinated = jnp.all(a == a[:, :1], axis=1) & (a[:, 0] < num_actions - 1)
    safe = jnp.mean(a == num_actions - 1, axis=1)
    return jnp.where(coordinated, 1.0, safe_reward * safe).astype(jnp.float32)


def parent_index(parents: Array, joint: Array, num_actions: int) -> Array:
    """`[N^A, A]` table row of each agent for each joint action (mixed radix of parents' actions).

    Args:
      parents: `[A, A]` bool parent mask.
      joint: `[M, A]` joint actions.
      num_actions: `N`.
    """
    A = parents.shape[-1]
    radix = num_actions ** jnp.arange(A, dtype=jnp.int32)  # [A]
    return jnp.einsum("ij,mj->mi", parents.astype(jnp.int32) * radix[None, :], joint)


def conditional_log_probs(theta: Array, parents: Array, joint: Array) -> Array:
    """`[M, A]` log pi_i(a_i | a_pa(i)) for every joint action `joint [M, A]`.

    Args:
      theta: `[A, N^A, N]` logits tables (row = parents' joint action index).
      parents: `[A, A]` bool.
      joint: `[M, A]` joint actions.
    """
    N = theta.shape[-1]
    rows = parent_index(parents, joint, N)  # [M, A]
    logits = theta[jnp.arange(theta.shape[0])[None, :], rows]  # [M, A, N]
    logp = jax.nn.log_softmax(logits, axis=-1)
    return jnp.take_along_axis(logp, joint[..., None], axis=-1)[..., 0]


def expected_payoff(theta: Array, parents: Array, payoff: Array, joint: Array) -> Array:
    """`[]` J = sum_a pi(a) R(a), exact."""
    return jnp.sum(jnp.exp(conditional_log_probs(theta, parents, joint).sum(-1)) * payoff)


def nash_gap(theta: Array, parents: Array, payoff: Array, joint: Array) -> Array:
    """`[]` max_i [max over agent i's conditional policies of J] - J (0 at a Nash equilibrium).

    Agent `i`'s payoff is linear in its table: `J = sum_c sum_x sigma_i(x | c) Q_i[c, x]` with
    `Q_i[c, x] = sum_{a: c_i(a) = c, a_i = x} prod_{j != i} pi_j(a_j | a_pa(j)) R(a)`, so its best
    response picks, for every parents' joint action `c`, the best `x`.
    """
    A, C, N = theta.shape
    logp = conditional_log_probs(theta, parents, joint)  # [M, A]
    value = jnp.sum(jnp.exp(logp.sum(-1)) * payoff)
    rows = parent_index(parents, joint, N)

    def best_response(i):
        others = jnp.exp(logp.sum(-1) - logp[:, i]) * payoff
        q = jnp.zeros((C, N)).at[rows[:, i], joint[:, i]].add(others)
        return jnp.sum(jnp.max(q, axis=-1) * jnp.any(q != 0, axis=-1))

    return jnp.max(jax.vmap(best_response)(jnp.arange(A))) - value


class TabularResult(NamedTuple):
    """Per-seed results of `train_tabular` (all `[S]`)."""

    payoff: Array
    nash_gap: Array
    price_of_anarchy: Array


def train_tabular(
    key: Array,
    graph: bn.DAG,
    payoff: Array,
    num_actions: int,
    num_seeds: int = 64,
    num_steps: int = 500,
    lr: float = 1.0,
    init_scale: float = 1.0,
) -> TabularResult:
    """Exact softmax policy-gradient ascent for `num_seeds` random initialisations (one vmap).

    Args:
      key: PRNG key (seed `s` draws `theta ~ init_scale * N(0, 1)` from `split(key)[s]`).
      graph: a `bn.DAG` (e.g. `bn.chain_graph(A)`).
      payoff: `[N^A]` common payoff in the order of `joint_actions`, non-negative (for the price
        of anarchy).
      num_actions: `N`.
      num_seeds, num_steps, lr, init_scale: as named.

    Returns:
      A `TabularResult` of the final policies.
    """
    A = graph.parents.shape[-1]
    if payoff.shape != (num_actions**A,):
        raise ValueError(f"payoff must be [N^A] = [{num_actions**A}], got {payoff.shape}")
    if num_seeds < 1 or num_steps < 0:
        raise ValueError(f"need num_seeds >= 1 and num_steps >= 0, got {num_seeds}, {num_steps}")
    joint = joint_actions(A, num_actions)
    parents = graph.parents
    grad = jax.grad(expected_payoff)

    def run(k):
        theta = init_scale * jax.random.normal(k, (A, num_actions**A, num_actions))
        theta = jax.lax.fori_loop(
            0, num_steps, lambda _, th: th + lr * grad(th, parents, payoff, joint), theta
        )
        value = expected_payoff(theta, parents, payoff, joint)
        gap = nash_gap(theta, parents, payoff, joint)
        return TabularResult(value, gap, jnp.max(payoff) / value)

    return jax.jit(jax.vmap(run))(jax.random.split(key, num_seeds))


def greedy_joint_action(theta: Array, graph: bn.DAG) -> Array:
    """`[A]` int32 greedy joint action: each agent's argmax given its parents' greedy actions.

    Agents act in the DAG's topological order (`graph.order`), so every agent's table row is
    indexed by its parents' already chosen actions (the BN policy's deterministic mode).

    Args:
      theta: `[A, N^A, N]` logits tables.
      graph: the `bn.DAG` the tables were trained on.
    """
    A, _, N = theta.shape
    actions = jnp.zeros((A,), jnp.int32)
    for k in range(A):  # A is small and static: the tabular games enumerate N^A joint actions
        i = graph.order[k]
        row = parent_index(graph.parents, actions[None], N)[0, i]
        actions = actions.at[i].set(jnp.argmax(theta[i, row]).astype(jnp.int32))
    return actions


def exact_policy_table(theta: Array, parents: Array, joint: Array) -> np.ndarray:
    """`[N^A]` probabilities of every joint action under the tabular BN policy."""
    return np.asarray(jnp.exp(conditional_log_probs(theta, parents, joint).sum(-1)))


__all__ = [
    "TabularResult",
    "conditional_log_probs",
    "coordination_game",
    "exact_policy_table",
    "expected_payoff",
    "greedy_joint_action",
    "joint_actions",
    "nash_gap",
    "parent_index",
    "train_tabular",
]
