"""Cross-play tables between populations of trained policies.

Train a population (seeds, algorithms, hyperparameter settings), then pair every member with
every other: entry `[i, j]` of a cross-play matrix is what member `i` obtains when it plays with
member `j` (e.g. `i` controls agent 0, `j` the others). The diagonal is self-play; the gap
between self-play and cross-play measures how much the policies rely on arbitrary conventions
that other, equally good, policies do not share (zero-shot coordination).

- `crossplay_matrix` takes any jittable `play(params_i, params_j, key) -> returns` (e.g. an
  evaluation rollout) and the stacked parameters of the population; all `P x Q` pairs (and
  `num_samples` seeds each) run in one nested `vmap`.
- `normal_form_crossplay` is exact for matrix games: the members are mixed-strategy profiles and
  the payoffs come from `normal_form.expected_payoffs`, with no sampling.
- `crossplay_summary` reduces a matrix to its self-play and cross-play means.

Reference: H. Hu, A. Lerer, A. Peysakhovich and J. Foerster, "'Other-Play' for zero-shot
coordination", ICML 2020; M. Lanctot et al., "A unified game-theoretic approach to multiagent
reinforcement learning", NeurIPS 2017 (joint-policy correlation matrices).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marljax.evaluation.normal_form import _check, expected_payoffs

Array = jax.Array


def stack_params(params: Sequence[Any]) -> Any:
    """Stack a list of `P` parameter pytrees (same structure) into one with a leading `[P]` axis."""
    if not len(params):
        raise ValueError("the population is empty")
    structs = {jax.tree_util.tree_structure(p) for p in params}
    if len(structs) > 1:
        raise ValueError("all members of a population must have the same pytree structure")
    return jax.tree.map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *params)


def _population(params: Any, name: str) -> tuple[Any, int]:
    # Only a Python list means "one pytree per member": a tuple may be a stacked pytree.
    stacked = stack_params(params) if isinstance(params, list) else params
    sizes = {jnp.shape(x)[0] if jnp.ndim(x) else None for x in jax.tree.leaves(stacked)}
    if len(sizes) != 1 or None in sizes:
        raise ValueError(
            f"{name}: every leaf needs the same leading population axis [P, ...]; "
            f"got leading sizes {sorted(map(str, sizes))}"
        )
    return stacked, int(sizes.pop())


def crossplay_matrix(
    play: Callable[[Any, Any, Array], Array],
    population_a: Any,
    key: Array,
    population_b: Any | None = None,
    num_samples: int = 1,
) -> Array:
    """Evaluate every pair of a population (or of two populations) with one nested `vmap`.

    Args:
      play: jittable `play(params_i, params_j, key) -> returns` of any fixed shape `S` (e.g.
        `[]` team return, or `[A]` per-agent returns); `params_i` fills the first role.
      population_a: `P` parameter pytrees, as a Python list or as one pytree stacked with a
        leading `[P]` axis on every leaf.
      key: PRNG key; every pair and sample gets its own key.
      population_b: the `Q` partners (default: `population_a`, giving a square matrix whose
        diagonal is self-play).
      num_samples: independent evaluations per pair, averaged (static).

    Returns:
      `[P, Q, *S]`: `out[i, j] = mean_s play(a_i, b_j, key_ijs)`.
    """
    a, num_a = _population(population_a, "population_a")
    b, num_b = (a, num_a) if population_b is None else _population(population_b, "population_b")
    if int(num_samples) < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples}")
    keys = jax.random.split(key, num_a * num_b * num_samples).reshape(num_a, num_b, num_samples, -1)

    def pair(pa, pb, ks):
        return jnp.mean(jax.vmap(lambda k: play(pa, pb, k))(ks), axis=0)

    row = jax.vmap(pair, in_axes=(None, 0, 0))  # over partners j
    table = jax.vmap(row, in_axes=(0, None, 0))  # over members i
    return jax.jit(table)(a, b, keys)


def normal_form_crossplay(
    payoffs: Array,
    profiles_a: Array,
    profiles_b: Array | None = None,
    roles: Sequence[bool] | Array | None = None,
) -> Array:
    """Exact cross-play payoffs of mixed-strategy profiles in a normal-form game.

    Member `i` of population A supplies the strategies of the agents with `roles[k] = True`,
    member `j` of population B those of the others; each agent's expected payoff is computed
    exactly (`expected_payoffs`).

    Args:
      payoffs: `[A, N, ..., N]` payoff tensor (`marljax.envs.matrix` layout).
      profiles_a: `[P, A, N]` mixed-strategy profiles (e.g. one per trained seed).
      profiles_b: `[Q, A, N]` partner profiles (default: `profiles_a`).
      roles: `[A]` bool, the agents played by population A (default: agent 0 only).

    Returns:
      `[P, Q, A]` expected payoffs of each agent.
    """
    profiles_a = jnp.asarray(profiles_a, jnp.float32)
    profiles_b = profiles_a if profiles_b is None else jnp.asarray(profiles_b, jnp.float32)
    for name, prof in (("profiles_a", profiles_a), ("profiles_b", profiles_b)):
        if prof.ndim != 3:
            raise ValueError(f"{name} must be [P, A, N], got shape {tuple(prof.shape)}")
        _check(payoffs, prof[0])
    num_agents = profiles_a.shape[1]
    if roles is None:
        roles = np.arange(num_agents) == 0
    roles = jnp.asarray(roles, bool)
    if roles.shape != (num_agents,):
        raise ValueError(f"roles must be [A] = [{num_agents}] bool, got shape {roles.shape}")

    def pair(sa, sb):
        return expected_payoffs(payoffs, jnp.where(roles[:, None], sa, sb))

    return jax.vmap(jax.vmap(pair, in_axes=(None, 0)), in_axes=(0, None))(profiles_a, profiles_b)


def crossplay_summary(matrix: Array) -> dict[str, Array]:
    """Self-play and cross-play means of a square cross-play matrix.

    Args:
      matrix: `[P, P, ...]` (trailing axes, e.g. agents, are summed to a team value first).

    Returns:
      `{"self_play": [], "cross_play": [], "gap": []}`: mean of the diagonal, mean of the
      off-diagonal entries (NaN if `P = 1`), and `self_play - cross_play`.
    """
    m = jnp.asarray(matrix, jnp.float32)
    if m.ndim < 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"matrix must be square [P, P, ...], got shape {tuple(m.shape)}")
    team = m.reshape(m.shape[0], m.shape[1], -1).sum(axis=-1)
    n = team.shape[0]
    diag = jnp.diagonal(team)
    self_play = diag.mean()
    cross = jnp.where(n > 1, (team.sum() - diag.sum()) / max(n * (n - 1), 1), jnp.nan)
    return {"self_play": self_play, "cross_play": cross, "gap": self_play - cross}
