"""Bayesian-network (DAG-correlated) joint policies over agents: graphs, sampling, log-probs.

A Bayesian-network (BN) joint policy factorises the joint action over a directed acyclic graph
(DAG) on the agents:

    pi(a | o) = prod_i pi_i(a_i | o_i, a_{pa(i)})

Agents act in a topological order of the DAG; each agent's policy sees its own observation and the
actions of its parents. The log-probability of a joint action is the sum of the conditionals.

Conventions (agents are a leading axis `A`, actions `N`):

- a graph is a parent mask `parents [..., A, A]` bool with `parents[i, j]` true when agent `j` is
  a parent of agent `i`, plus a topological `order [..., A]` int32 (`order[k]` acts k-th);
- fixed graphs (`empty_graph`, `chain_graph`, `full_graph`, `graph_from_edges`,
  `graph_from_parents`) are validated on the host (cycles, indices out of range) with clear
  errors before anything is compiled;
- a context-aware learned graph (`GraphNet` + `sample_dag`) draws an order from a Plackett-Luce
  distribution (Gumbel-argsort of learned scores; `soft_sort` is its differentiable relaxation)
  and independent Bernoulli edges (Gumbel-sigmoid, `gumbel_sigmoid`) restricted to pairs that
  agree with that order, so every sampled graph is acyclic by construction. `dag_log_prob` is its
  exact log-probability, split per agent, so a score-function (PPO) gradient can train it;
- annealing (`AnnealSchedule`) raises an edge threshold over training: an edge is kept only when
  it is sampled AND its probability exceeds the threshold. At threshold 1 no edge survives (fixed
  edges have probability 1), so the final policy is fully decentralised;
- joint sampling (`sample_joint_actions`) is a `lax.scan` over the positions of the topological
  order with static shapes; parents' actions enter as masked one-hot vectors
  (`parent_action_inputs`); `joint_log_prob` evaluates all conditionals in parallel.

Reference: D. Chen, K. Zhang, Y. Wang, X. Feng, Y. Wang, Z. Liu, "Context-Aware Bayesian Network
Actor-Critic Methods for Cooperative Multi-Agent Reinforcement Learning", ICML 2023 (the BN joint
policy, the context-aware DAG and the edge-threshold annealing). Gumbel-argsort = Plackett-Luce:
W. Kool et al., ICML 2019; soft-sort: S. Prillo and J. Eisenschlos, ICML 2020; Gumbel-sigmoid /
concrete: C. Maddison et al. and E. Jang et al., ICLR 2017.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from marljax.nn import distributions
from marljax.nn.networks import MLP

Array = jax.Array

FIXED_GRAPHS = ("empty", "chain", "line", "full")


# ------------------------------------------------------------------------------------ graphs


class DAG(NamedTuple):
    """A DAG over `A` agents.

    Attributes:
      parents: `[..., A, A]` bool, `parents[i, j]` true when agent `j` is a parent of agent `i`.
      order: `[..., A]` int32 topological order (`order[k]` is the agent that acts k-th).
    """

    parents: Array
    order: Array


def _check_num_agents(num_agents: int) -> int:
    if isinstance(num_agents, bool) or int(num_agents) != num_agents or num_agents < 1:
        raise ValueError(f"num_agents must be a positive integer, got {num_agents!r}")
    return int(num_agents)


def topological_order(parents: Any) -> np.ndarray:
    """A topological order of a parent mask (Kahn's algorithm, smallest index first), on host.

    Args:
      parents: `[A, A]` bool-like parent mask (`parents[i, j]`: `j` is a parent of `i`).

    Returns:
      `[A]` int32 order in which every agent comes after its parents.

    Raises:
      ValueError: if the mask is not square or contains a cycle (the agents on cycles are named).
    """
    p = np.asarray(parents)
    if p.ndim != 2 or p.shape[0] != p.shape[1]:
        raise ValueError(f"a parent mask must have shape [A, A], got {p.shape}")
    p = p.astype(bool)
    A = p.shape[0]
    indegree = p.sum(axis=1)
    order, placed = [], np.zeros(A, bool)
    while len(order) < A:
        ready = np.flatnonzero((indegree == 0) & ~placed)
        if len(ready) == 0:
            on_cycle = np.flatnonzero(~placed).tolist()
            raise ValueError(
                f"the graph has a cycle: agents {on_cycle} cannot be ordered (each of them has a "
                "parent among them). A Bayesian-network policy needs a DAG; remove an edge "
                "(a self-loop parents[i, i] is a cycle too)."
            )
        i = int(ready[0])
        order.append(i)
        placed[i] = True
        indegree = indegree - p[:, i]
    return np.asarray(order, np.int32)


def graph_from_parents(parents: Any) -> DAG:
    """Validate a user-given `[A, A]` parent mask and pair it with a topological order.

    Raises:
      ValueError: on a non-square or non-boolean mask, or a cycle (including self-loops).
    """
    p = np.asarray(parents)
    if p.ndim != 2 or p.shape[0] != p.shape[1]:
        raise ValueError(f"a parent mask must have shape [A, A], got {p.shape}")
    if not np.all((p == 0) | (p == 1)):
        raise ValueError("a parent mask must hold only 0/1 (or booleans)")
    order = topological_order(p)
    return DAG(jnp.asarray(p.astype(bool)), jnp.asarray(order))


def graph_from_edges(num_agents: int, edges: Sequence[tuple[int, int]]) -> DAG:
    """A DAG from a list of `(parent, child)` edges.

    Raises:
      ValueError: for an index outside `[0, num_agents)`, a malformed edge or a cycle.
    """
    A = _check_num_agents(num_agents)
    p = np.zeros((A, A), bool)
    for edge in edges:
        if len(edge) != 2:
            raise ValueError(f"an edge is a (parent, child) pair, got {edge!r}")
        parent, child = edge
        for name, idx in (("parent", parent), ("child", child)):
            if isinstance(idx, bool) or int(idx) != idx or not 0 <= int(idx) < A:
                raise ValueError(
                    f"edge {tuple(edge)!r}: {name} index {idx!r} is out of range for "
                    f"{A} agents (valid: 0..{A - 1})"
                )
        p[int(child), int(parent)] = True
    return graph_from_parents(p)


def empty_graph(num_agents: int) -> DAG:
    """No edges: independent agents (plain MAPPO)."""
    A = _check_num_agents(num_agents)
    return DAG(jnp.zeros((A, A), bool), jnp.arange(A, dtype=jnp.int32))


def chain_graph(num_agents: int) -> DAG:
    """The chain (line) `0 -> 1 -> ... -> A-1`: each agent sees its predecessor's action."""
    A = _check_num_agents(num_agents)
    return DAG(jnp.eye(A, k=-1, dtype=bool), jnp.arange(A, dtype=jnp.int32))


def full_graph(num_agents: int) -> DAG:
    """The full order: agent `i` sees the actions of all agents `j < i` (autoregressive)."""
    A = _check_num_agents(num_agents)
    return DAG(jnp.tril(jnp.ones((A, A), bool), k=-1), jnp.arange(A, dtype=jnp.int32))


def fixed_graph(name: str, num_agents: int) -> DAG:
    """A named fixed graph: "empty", "chain" (alias "line") or "full"."""
    builders = {"empty": empty_graph, "chain": chain_graph, "line": chain_graph, "full": full_graph}
    if name not in builders:
        raise ValueError(f"unknown fixed graph {name!r}; choose one of {FIXED_GRAPHS}")
    return builders[name](num_agents)


def is_acyclic(parents: Array) -> Array:
    """`[...]` bool: the parent masks `[..., A, A]` contain no directed cycle (traceable).

    A directed graph on `A` nodes is acyclic iff its adjacency matrix is nilpotent: `P^A = 0`.
    """
    A = parents.shape[-1]
    p = parents.astype(jnp.float32)
    reach = p
    for _ in range(A - 1):
        reach = jnp.minimum(reach @ p, 1.0)
    return jnp.all(reach == 0, axis=(-2, -1))


def respects_order(parents: Array, order: Array) -> Array:
    """`[...]` bool: every parent comes before its child in `order` (traceable)."""
    rank = order_ranks(order)
    before = rank[..., None, :] < rank[..., :, None]  # [.., i, j]: j before i
    return jnp.all(jnp.logical_or(~parents, before), axis=(-2, -1))


def num_edges(parents: Array) -> Array:
    """`[...]` number of edges of parent masks `[..., A, A]`."""
    return jnp.sum(parents, axis=(-2, -1))


def edge_density(parents: Array) -> Array:
    """`[...]` edges over the maximum `A (A - 1) / 2` of a DAG (0: independent, 1: full order)."""
    A = parents.shape[-1]
    return num_edges(parents) / max(A * (A - 1) / 2, 1)


# ------------------------------------------------------------------------------------ annealing


@dataclasses.dataclass(frozen=True)
class AnnealSchedule:
    """Linear schedule of the edge threshold: `start` -> `end` over `num_updates` updates.

    An edge survives only if its probability exceeds the threshold; at 1.0 every edge is pruned
    (Chen et al. 2023 anneal towards a decentralised policy this way). `num_updates = 0` keeps the
    threshold at `start`.
    """

    start: float = 0.0
    end: float = 0.0
    num_updates: int = 0

    def __post_init__(self):
        check_anneal(self.start, self.end, self.num_updates)

    def __call__(self, step: Array) -> Array:
        """The threshold after `step` updates (traced)."""
        return threshold_at(step, self.start, self.end, self.num_updates)


def check_anneal(start: float, end: float, num_updates: int) -> None:
    """Raise a clear `ValueError` for an annealing schedule outside `[0, 1]`."""
    for name, value in (("start", start), ("end", end)):
        if not np.isfinite(value) or value < 0.0:
            raise ValueError(f"the edge-threshold schedule's {name} must be >= 0, got {value!r}")
    if end > 1.0:
        raise ValueError(
            f"the edge-threshold schedule ends at {end!r} > 1: thresholds are edge probabilities; "
            "end at 1.0 to prune every edge (a fully independent final policy)"
        )
    if start > 1.0:
        raise ValueError(f"the edge-threshold schedule starts at {start!r} > 1; use a value <= 1")
    if isinstance(num_updates, bool) or int(num_updates) != num_updates or num_updates < 0:
        raise ValueError(f"the annealing length must be an integer >= 0, got {num_updates!r}")


def threshold_at(step: Array, start: float, end: float, num_updates: int) -> Array:
    """Linear interpolation `start -> end` over `num_updates` steps, then constant (traced)."""
    if num_updates == 0:
        return jnp.asarray(start, jnp.float32)
    frac = jnp.clip(jnp.asarray(step, jnp.float32) / num_updates, 0.0, 1.0)
    return jnp.asarray(start + (end - start) * frac, jnp.float32)


def prune(parents: Array, edge_prob: Array, threshold: Array) -> Array:
    """Keep the edges whose probability exceeds `threshold` (fixed graphs: probability 1)."""
    return jnp.logical_and(parents, edge_prob > threshold)


# ------------------------------------------------------------------------------------ learned DAG


def order_ranks(order: Array) -> Array:
    """`[..., A]` position of each agent in `order` (the inverse permutation)."""
    return jnp.argsort(order, axis=-1).astype(jnp.int32)


def order_mask(order: Array) -> Array:
    """`[..., A, A]` bool: `j` may be a parent of `i` (j comes before i in `order`)."""
    rank = order_ranks(order)
    return rank[..., None, :] < rank[..., :, None]


def sample_order(key: Array, scores: Array) -> Array:
    """A Plackett-Luce order: agents sorted by `scores + Gumbel noise`, highest first.

    Args:
      key: PRNG key.
      scores: `[..., A]` log-weights.

    Returns:
      `[..., A]` int32 order (Kool et al. 2019: Gumbel-top-k samples Plackett-Luce exactly).
    """
    g = jax.random.gumbel(key, scores.shape, scores.dtype)
    return jnp.argsort(-(scores + g), axis=-1).astype(jnp.int32)


def plackett_luce_log_prob(scores: Array, order: Array) -> Array:
    """Per-agent terms of the Plackett-Luce log-probability of `order`.

    `log P(order) = sum_k [s_{order_k} - logsumexp_{m >= k} s_{order_m}]`; the k-th term is
    returned at the index of agent `order_k`, so the sum over agents is the log-probability.

    Args:
      scores: `[..., A]` log-weights.
      order: `[..., A]` int32.

    Returns:
      `[..., A]` per-agent terms.
    """
    s = jnp.take_along_axis(scores, order, axis=-1)  # [.., k]
    # logsumexp over the suffix m >= k, via a reversed cumulative logsumexp.
    suffix = jnp.flip(jax.lax.cumlogsumexp(jnp.flip(s, -1), axis=s.ndim - 1), -1)
    terms = s - suffix
    return jnp.take_along_axis(terms, order_ranks(order), axis=-1)


def soft_sort(scores: Array, temperature: float = 1.0) -> Array:
    """SoftSort relaxation of the descending-sort permutation matrix (Prillo & Eisenschlos 2020).

    `P[k, j] = softmax_j(-|sort(s)_k - s_j| / temperature)`; as `temperature -> 0` it tends to the
    hard permutation matrix with `P[k, order_k] = 1`.

    Args:
      scores: `[..., A]`.
      temperature: positive relaxation temperature.

    Returns:
      `[..., A, A]` row-stochastic matrix (row `k`: which agent is at position `k`).
    """
    if temperature <= 0:
        raise ValueError(f"soft_sort temperature must be > 0, got {temperature!r}")
    sorted_s = -jnp.sort(-scores, axis=-1)
    return jax.nn.softmax(
        -jnp.abs(sorted_s[..., :, None] - scores[..., None, :]) / temperature, axis=-1
    )


def gumbel_sigmoid(key: Array, logits: Array, temperature: float = 1.0, hard: bool = True) -> Array:
    """Gumbel-sigmoid (binary concrete) sample of Bernoulli(sigmoid(logits)).

    `y = sigmoid((logits + logistic noise) / temperature)`. With `hard`, the forward value is
    `y > 0.5`, i.e. an exact Bernoulli sample, and gradients flow through `y` (straight-through).

    Returns:
      `[...]` float samples in [0, 1] (exactly 0/1 when `hard`).
    """
    if temperature <= 0:
        raise ValueError(f"gumbel_sigmoid temperature must be > 0, got {temperature!r}")
    noise = jax.random.logistic(key, logits.shape, logits.dtype)
    soft = jax.nn.sigmoid((logits + noise) / temperature)
    if not hard:
        return soft
    hard_y = (logits + noise > 0).astype(soft.dtype)
    return soft + jax.lax.stop_gradient(hard_y - soft)


def sample_dag(key: Array, scores: Array, edge_logits: Array, threshold: Array = 0.0) -> DAG:
    """Sample a DAG: a Plackett-Luce order, then Bernoulli edges that agree with it.

    Every sample is acyclic by construction: an edge `j -> i` can only be drawn if `j` comes
    before `i` in the sampled order. Edges whose probability `sigmoid(edge_logits)` does not
    exceed `threshold` are pruned (annealing).

    Args:
      key: PRNG key.
      scores: `[..., A]` order log-weights (higher acts earlier on average).
      edge_logits: `[..., A, A]` logits of `j -> i` at `[i, j]`.
      threshold: `[]` edge threshold in [0, 1].

    Returns:
      A `DAG` with `parents [..., A, A]` and `order [..., A]`.
    """
    key_order, key_edges = jax.random.split(key)
    order = sample_order(key_order, scores)
    edges = gumbel_sigmoid(key_edges, edge_logits) > 0.5
    parents = edges & order_mask(order)
    return DAG(prune(parents, jax.nn.sigmoid(edge_logits), threshold), order)


def mode_dag(scores: Array, edge_logits: Array, threshold: Array = 0.0) -> DAG:
    """The most probable DAG of `sample_dag`'s distribution given its order: greedy acting.

    The order sorts `scores` (highest first: the Plackett-Luce mode); an edge allowed by that
    order is kept when its probability exceeds 1/2 and `threshold`.

    Returns:
      A `DAG` with `parents [..., A, A]` and `order [..., A]`.
    """
    order = jnp.argsort(-scores, axis=-1).astype(jnp.int32)
    parents = (edge_logits > 0) & order_mask(order)
    return DAG(prune(parents, jax.nn.sigmoid(edge_logits), threshold), order)


def dag_log_prob(scores: Array, edge_logits: Array, dag: DAG, threshold: Array = 0.0) -> Array:
    """Per-agent log-probability terms of a DAG drawn by `sample_dag` (sums to the log-prob).

    Agent `i`'s term: its Plackett-Luce position term plus the Bernoulli log-probabilities of its
    incoming edges among the allowed pairs (`j` before `i` and probability above `threshold`);
    pruned pairs are deterministic and contribute 0.

    Returns:
      `[..., A]` terms.
    """
    allowed = order_mask(dag.order) & (jax.nn.sigmoid(edge_logits) > threshold)
    edge_lp = jnp.where(
        dag.parents, jax.nn.log_sigmoid(edge_logits), jax.nn.log_sigmoid(-edge_logits)
    )
    edge_lp = jnp.sum(jnp.where(allowed, edge_lp, 0.0), axis=-1)
    return plackett_luce_log_prob(scores, dag.order) + edge_lp


class GraphNet(nn.Module):
    """Context-aware DAG distribution: a context (e.g. the global state) -> order scores, edges.

    Attributes:
      num_agents: `A`.
      hidden_sizes: MLP torso widths.
      activation: torso activation.
      edge_bias: initial edge logit (0: every allowed edge starts at probability 1/2).
      order_bias: gap between consecutive agents' initial order scores, `score_i` starts at
        `-order_bias * i` (0: every order equally likely; large: the index order 0, 1, ...,
        A-1 first). With a large `edge_bias` too, the initial graph is (nearly) `full_graph`.

    Call: `scores [..., A], edge_logits [..., A, A] = net(context [..., C])`.
    """

    num_agents: int
    hidden_sizes: tuple[int, ...] = (32,)
    activation: str = "tanh"
    edge_bias: float = 0.0
    order_bias: float = 0.0

    @nn.compact
    def __call__(self, context: Array) -> tuple[Array, Array]:
        A = self.num_agents
        h = MLP(self.hidden_sizes, self.activation, A + A * A, 0.01)(context)
        scores = h[..., :A] - self.order_bias * jnp.arange(A, dtype=h.dtype)
        edge_logits = h[..., A:].reshape(*h.shape[:-1], A, A) + self.edge_bias
        # no self-loops: the order mask excludes them anyway; keep the logits tidy
        return scores, jnp.where(jnp.eye(A, dtype=bool), -30.0, edge_logits)


# ------------------------------------------------------------------------------------ joint policy


def parent_action_inputs(actions_onehot: Array, parents: Array) -> Array:
    """Masked one-hot parent actions, one input vector per agent.

    Args:
      actions_onehot: `[..., A, N]` one-hot actions (rows of unsampled agents may be anything
        if they are not parents).
      parents: `[..., A, A]` bool parent masks.

    Returns:
      `[..., A, A * N]`: row `i` holds agent `j`'s one-hot action in block `j` if `j` is a parent
      of `i`, zeros otherwise.
    """
    x = parents[..., :, :, None].astype(actions_onehot.dtype) * actions_onehot[..., None, :, :]
    return x.reshape(*x.shape[:-2], -1)


ConditionalFn = Callable[[Array, Array], Array]


def conditional_logits(base_logits: Array, extra: Array, parents: Array) -> Array:
    """`base + has_parents * extra`: exactly `base_logits` for agents without parents."""
    has_parents = jnp.any(parents, axis=-1, keepdims=True).astype(base_logits.dtype)
    return base_logits + has_parents * extra


def sample_joint_actions(
    key: Array,
    base_logits: Array,
    parent_logits_fn: ConditionalFn,
    dag: DAG,
    mask: Array | None = None,
    greedy: bool = False,
) -> Array:
    """Sample a joint action from a BN policy: a `lax.scan` over the topological order.

    At position `k` the agent `i = order[k]` draws `a_i` from the masked categorical with logits
    `base_logits[i] + [i has parents] * parent_logits_fn(inputs)[i]`, where `inputs` are the
    masked one-hot actions of the agents sampled so far. Parents always precede children in the
    order, so agent `i` sees all its parents' actions. The Gumbel noise for all agents is drawn
    once, as `jax.random.categorical` draws it, so with the empty graph the sample is identical
    to sampling the independent policy with the same key.

    Args:
      key: PRNG key.
      base_logits: `[B, A, N]` logits without parent information.
      parent_logits_fn: `(parent_inputs [B, A * N], agent [B]) -> [B, N]`: the extra logits
        of agent `agent[b]` of each batch row given its masked one-hot parent actions.
      dag: `parents [B, A, A]`, `order [B, A]`.
      mask: optional `[B, A, N]` bool legal actions.
      greedy: (static) each agent takes the argmax of its conditional given its parents'
        greedy actions instead of sampling (`key` is unused).

    Returns:
      `[B, A]` int32 joint actions.
    """
    B, A, N = base_logits.shape
    if greedy:
        gumbel = jnp.zeros((B, A, N), base_logits.dtype)
    else:
        gumbel = jax.random.gumbel(key, (1, B, A, N), base_logits.dtype)[0]
    rows = jnp.arange(B)

    def step(actions, k):
        i = dag.order[:, k]  # [B]
        onehot = jax.nn.one_hot(actions, N, dtype=base_logits.dtype)
        parents_i = dag.parents[rows, i]  # [B, A]
        inputs = parent_action_inputs(onehot, parents_i[:, None, :])[:, 0]  # [B, A * N]
        extra = parent_logits_fn(inputs, i)  # [B, N]
        logits = conditional_logits(base_logits[rows, i], extra, parents_i)
        m = None if mask is None else mask[rows, i]
        logp = distributions.masked_categorical(logits, m).logits
        a_i = jnp.argmax(gumbel[rows, i] + logp, axis=-1).astype(jnp.int32)
        return actions.at[rows, i].set(a_i), None

    actions, _ = jax.lax.scan(step, jnp.zeros((B, A), jnp.int32), jnp.arange(A))
    return actions


def joint_log_prob(
    base_logits: Array,
    parent_logits_fn: Callable[[Array], Array],
    actions: Array,
    parents: Array,
    mask: Array | None = None,
) -> tuple[Array, Any]:
    """Per-agent conditional log-probabilities of a joint action (their sum is the joint one).

    All conditionals are evaluated in parallel (the actions are known: teacher forcing).

    Args:
      base_logits: `[..., A, N]`.
      parent_logits_fn: `parent_inputs [..., A, A * N] -> [..., A, N]` extra logits.
      actions: `[..., A]` int joint actions.
      parents: `[..., A, A]` bool.
      mask: optional `[..., A, N]` legal actions.

    Returns:
      `(log_probs [..., A], dist)` with `dist` the per-agent conditional distributions.
    """
    N = base_logits.shape[-1]
    onehot = jax.nn.one_hot(actions, N, dtype=base_logits.dtype)
    extra = parent_logits_fn(parent_action_inputs(onehot, parents))
    dist = distributions.masked_categorical(conditional_logits(base_logits, extra, parents), mask)
    return dist.log_prob(actions), dist


__all__ = [
    "DAG",
    "FIXED_GRAPHS",
    "AnnealSchedule",
    "GraphNet",
    "chain_graph",
    "check_anneal",
    "conditional_logits",
    "dag_log_prob",
    "edge_density",
    "empty_graph",
    "fixed_graph",
    "full_graph",
    "graph_from_edges",
    "graph_from_parents",
    "gumbel_sigmoid",
    "is_acyclic",
    "joint_log_prob",
    "mode_dag",
    "num_edges",
    "order_mask",
    "order_ranks",
    "parent_action_inputs",
    "plackett_luce_log_prob",
    "prune",
    "respects_order",
    "sample_dag",
    "sample_joint_actions",
    "sample_order",
    "soft_sort",
    "threshold_at",
    "topological_order",
]
