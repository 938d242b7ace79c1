"""Fixed-radius neighbour queries on a 2D torus, brute force for small swarms, spatial hash for large.

Every swarm task needs, for each agent `i`, the agents `j != i` within distance `r` of it on a
torus `[0, L)^2` (distances measured through the wrap). Two static strategies give the same
answer:

- **Brute force**, `O(A^2)`: every pair is checked. Exact, and the fastest below a few hundred
  agents. The candidate table is `[A, A]`.
- **Spatial hash**, `O(A * 9 * cap)` plus an `O(A log A)` sort: the torus is cut into a static
  `G x G` grid of cells of side `L / G >= r`, so that every neighbour of an agent lies in the
  `3 x 3` block of cells around its own. Agents are sorted by cell id and the sorted order is
  segmented into a `[G * G, cap]` table (cell -> up to `cap` agents, `cap` static); each agent
  then reads the `9 * cap` candidates of its block. The candidate table is `[A, 9 cap]`.

**Approximation of the hash**: a cell holding more than `cap` agents keeps only `cap` of them
(the lowest agent indices, as the sort is stable); the others are *dropped from the table*, i.e.
invisible to every other agent for that query (they still query their own neighbours, and
move). This is never silent: every query counts the overflowing cells and the dropped agents
(`Neighbours.overflow_cells`, `Neighbours.dropped`); the swarm envs report them in
`timestep.extras["swarm/neighbour_overflow"]`, and `assert_no_overflow` (host side) or
`raise_on_overflow` (inside `jit`) turn an overflow into an error. When no cell overflows, the
hash returns exactly the neighbour sets of brute force (tested in `tests/test_swarm.py`).
Choose `cap` from the densest cell you expect: about `density * (L / G)^2` on average for a
uniform swarm (`A / G^2`), much more for a clustered one (flocks, aggregates).

`NeighbourSearch` bundles the static choices (strategy, `G`, `cap`) and switches automatically
by a static agent-count threshold.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

Array = jax.Array


@struct.dataclass
class Neighbours:
    """Result of a fixed-radius query for `A` agents with `M` candidate slots each.

    Slot `m` of agent `i` holds a candidate agent `index[i, m]`; it is a true neighbour iff
    `mask[i, m]` (`j != i` and torus distance `<= r`). Slots that are not neighbours hold an
    arbitrary valid index, so gathers never go out of bounds; always combine with `mask`.

    Attributes:
      index: `[A, M]` int32 candidate agents (`M = A` brute force, `9 cap` hashed).
      mask: `[A, M]` bool, the slot is a neighbour within the radius.
      dx: `[A, M]` float32 `x_j - x_i` through the wrap (in `[-L/2, L/2]`).
      dy: `[A, M]` float32 `y_j - y_i` through the wrap.
      overflow_cells: `[]` int32 cells that held more than `cap` agents (0 for brute force).
      dropped: `[]` int32 agents left out of the cell table (0 for brute force).
    """

    index: Array
    mask: Array
    dx: Array
    dy: Array
    overflow_cells: Array
    dropped: Array

    @property
    def count(self) -> Array:
        """`[A]` int32 number of neighbours of each agent."""
        return jnp.sum(self.mask, axis=-1, dtype=jnp.int32)

    def gather(self, values: Array) -> Array:
        """`[A, ...] -> [A, M, ...]`: the value of every candidate slot (mask it yourself)."""
        return values[self.index]


def wrap(d: Array, size: Array) -> Array:
    """Shortest signed displacement on a circle of circumference `size`: `d - size round(d/size)`.

    Args:
      d: `[...]` raw differences.
      size: `[]` torus side `L`.

    Returns:
      `[...]` values in `[-L/2, L/2]`.
    """
    return d - size * jnp.round(d / size)


def periodic(x: Array, period) -> Array:
    """`[...]` `x` wrapped into `[0, period)`: `x - period floor(x / period)`.

    Cheaper than `jnp.mod` on CPU (no `fmod`); a value that rounds up to `period` maps to 0.
    """
    r = x - period * jnp.floor(x / period)
    return jnp.where(r >= period, r - period, r)


def brute_force_neighbours(pos: Array, radius: Array, size: Array) -> Neighbours:
    """Exact neighbours by checking all `A^2` pairs.

    Args:
      pos: `[A, 2]` positions in `[0, L)^2`.
      radius: `[]` interaction radius `r`.
      size: `[]` torus side `L`.

    Returns:
      `Neighbours` with `M = A`; the overflow counts are zero.
    """
    A = pos.shape[0]
    x, y = pos[:, 0], pos[:, 1]
    dx = wrap(x[None, :] - x[:, None], size)
    dy = wrap(y[None, :] - y[:, None], size)
    index = jnp.broadcast_to(jnp.arange(A, dtype=jnp.int32)[None, :], (A, A))
    not_self = ~jnp.eye(A, dtype=bool)
    mask = not_self & (dx * dx + dy * dy <= radius * radius)
    zero = jnp.int32(0)
    return Neighbours(index, mask, dx, dy, zero, zero)


def cell_ids(pos: Array, size: Array, cells_per_side: int) -> tuple[Array, Array]:
    """Cell coordinates of positions on a `G x G` grid of the torus.

    Args:
      pos: `[A, 2]` positions (any real values; wrapped into the torus).
      size: `[]` torus side `L`.
      cells_per_side: `G` (static).

    Returns:
      `(cx [A], cy [A])` int32 in `0 .. G-1`.
    """
    G = int(cells_per_side)
    c = jnp.floor(periodic(pos, size) * (G / size)).astype(jnp.int32)
    c = jnp.clip(c, 0, G - 1)  # float rounding just below L
    return c[:, 0], c[:, 1]


def hashed_neighbours(
    pos: Array, radius: Array, size: Array, cells_per_side: int, cell_capacity: int
) -> Neighbours:
    """Neighbours by spatial hashing into a `G x G` cell grid with `cap` agents per cell.

    Exact when no cell holds more than `cap` agents and `r <= L / G` (see the module docstring
    for what happens otherwise: overflowing agents are dropped from the table and counted).

    Args:
      pos: `[A, 2]` positions in `[0, L)^2`.
      radius: `[]` interaction radius `r`, at most the cell side `L / G`.
      size: `[]` torus side `L`.
      cells_per_side: `G >= 3` (static).
      cell_capacity: `cap >= 1` agents kept per cell (static).

    Returns:
      `Neighbours` with `M = 9 cap` candidate slots per agent.
    """
    G, cap = int(cells_per_side), int(cell_capacity)
    if G < 3:
        raise ValueError(f"hashed_neighbours needs cells_per_side >= 3, got {G}")
    if cap < 1:
        raise ValueError(f"hashed_neighbours needs cell_capacity >= 1, got {cap}")
    A = pos.shape[0]
    C = G * G
    cx, cy = cell_ids(pos, size, G)
    cell = cx * G + cy  # [A]

    # Segment the agents, sorted by cell, into a [C, cap] table.
    order = jnp.argsort(cell, stable=True).astype(jnp.int32)  # [A]
    counts = jnp.zeros((C,), jnp.int32).at[cell].add(1)  # [C]
    starts = jnp.cumsum(counts) - counts  # [C]
    slot = jnp.arange(cap, dtype=jnp.int32)
    filled = slot[None, :] < counts[:, None]  # [C, cap]
    table = order[jnp.minimum(starts[:, None] + slot[None, :], A - 1)]  # [C, cap]
    table = jnp.where(filled, table, -1)
    overflow_cells = jnp.sum(counts > cap, dtype=jnp.int32)
    dropped = jnp.sum(jnp.maximum(counts - cap, 0), dtype=jnp.int32)

    # Candidates: the 3x3 block of cells around each agent's own.
    off = jnp.arange(-1, 2, dtype=jnp.int32)
    bx = _wrap_cell(cx[:, None, None] + off[None, :, None], G)  # [A, 3, 1]
    by = _wrap_cell(cy[:, None, None] + off[None, None, :], G)  # [A, 1, 3]
    block = (bx * G + by).reshape(A, 9)  # [A, 9]
    cand = table[block].reshape(A, 9 * cap)  # [A, 9 cap], -1 in empty slots
    valid = cand >= 0
    index = jnp.where(valid, cand, 0)
    x, y = pos[:, 0], pos[:, 1]
    dx = wrap(x[index] - x[:, None], size)
    dy = wrap(y[index] - y[:, None], size)
    self_ = index == jnp.arange(A, dtype=jnp.int32)[:, None]
    mask = valid & ~self_ & (dx * dx + dy * dy <= radius * radius)
    return Neighbours(index, mask, dx, dy, overflow_cells, dropped)


def _wrap_cell(c: Array, G: int) -> Array:
    """Cell coordinates in `-1 .. G` wrapped into `0 .. G-1`."""
    return jnp.where(c >= G, c - G, jnp.where(c < 0, c + G, c))


class NeighbourSearch:
    """Static choice of neighbour strategy for `A` agents: brute force or spatial hash.

    Args:
      num_agents: `A` (static).
      cells_per_side: `G`, cells per side of the hash grid (static); the radius must not exceed
        the cell side `L / G`. Ignored by brute force.
      cell_capacity: `cap`, agents kept per cell (static, `>= 1`). Ignored by brute force.
      brute_force_threshold: use brute force when `A <= brute_force_threshold` or `G < 3`
        (static).

    Raises:
      ValueError: `cell_capacity < 1`, or a hash grid whose mean occupancy `A / G^2` already
        exceeds `cap` (an overflow would be certain).
    """

    def __init__(
        self,
        num_agents: int,
        cells_per_side: int,
        cell_capacity: int,
        brute_force_threshold: int = 256,
    ):
        self.num_agents = int(num_agents)
        self.cells_per_side = int(cells_per_side)
        self.cell_capacity = int(cell_capacity)
        self.brute_force_threshold = int(brute_force_threshold)
        if self.cell_capacity < 1:
            raise ValueError(f"cell_capacity must be >= 1, got {cell_capacity}")
        self.hashed = self.num_agents > self.brute_force_threshold and self.cells_per_side >= 3
        if self.hashed:
            mean = self.num_agents / self.cells_per_side**2
            if mean > self.cell_capacity:
                raise ValueError(
                    f"cell_capacity={self.cell_capacity} is below the mean number of agents per "
                    f"cell, {self.num_agents} agents / {self.cells_per_side}^2 cells = {mean:.1f}: "
                    "cells would overflow for sure. Raise cell_capacity (>= 3x the mean is safe "
                    "for a uniform swarm) or cells_per_side."
                )

    @property
    def num_slots(self) -> int:
        """`M`, candidate slots per agent: `A` (brute force) or `9 cap` (hash)."""
        return 9 * self.cell_capacity if self.hashed else self.num_agents

    def __call__(self, pos: Array, radius: Array, size: Array) -> Neighbours:
        """Neighbours of every agent within `radius` on the torus of side `size` (see module)."""
        if self.hashed:
            return hashed_neighbours(pos, radius, size, self.cells_per_side, self.cell_capacity)
        return brute_force_neighbours(pos, radius, size)

    def __repr__(self) -> str:
        if self.hashed:
            return (
                f"NeighbourSearch(hash, A={self.num_agents}, G={self.cells_per_side}, "
                f"cap={self.cell_capacity})"
            )
        return f"NeighbourSearch(brute force, A={self.num_agents})"


def assert_no_overflow(nb: Neighbours) -> None:
    """Host-side check: raise `RuntimeError` if any cell overflowed in `nb` (concrete arrays).

    Works on batched results too (any leading axes).
    """
    cells = np.asarray(nb.overflow_cells)
    if np.any(cells > 0):
        raise RuntimeError(
            f"neighbour table overflow: {int(cells.sum())} cell(s) held more than the cell "
            f"capacity, {int(np.asarray(nb.dropped).sum())} agent(s) dropped from neighbour "
            "lists; raise cell_capacity (or cells_per_side)"
        )


def _raise_if_overflow(cells, dropped) -> None:
    cells, dropped = np.asarray(cells), np.asarray(dropped)
    if np.any(cells > 0):
        raise RuntimeError(
            f"neighbour table overflow: {int(cells.sum())} cell(s) over capacity, "
            f"{int(dropped.sum())} agent(s) dropped from neighbour lists; raise cell_capacity"
        )


def raise_on_overflow(nb: Neighbours) -> None:
    """Inside `jit`: make the program fail (a `RuntimeError` raised in a host callback, surfaced
    by JAX as a runtime error) when any cell overflowed. A debugging aid: it costs a host
    round-trip per call."""
    jax.debug.callback(_raise_if_overflow, nb.overflow_cells, nb.dropped)


__all__ = [
    "NeighbourSearch",
    "Neighbours",
    "assert_no_overflow",
    "brute_force_neighbours",
    "cell_ids",
    "hashed_neighbours",
    "periodic",
    "raise_on_overflow",
    "wrap",
]
