"""Obstacle maps for grid pathfinding, generated inside `jit` so every episode can be a fresh map.

Two generators, both pure functions of a PRNG key with a traced `density`:

- `random_obstacles`: every cell is an obstacle independently with probability `density`
  (POGEMA's random maps).
- `maze_obstacles`: a perfect maze (binary-tree algorithm: rooms on even (row, col) cells, each
  room opens a passage up or left at random), after which every wall cell is kept with
  probability `density` (1 = the perfect maze, smaller values open shortcuts).

`place_agents` then puts `A` starts and `A` goals on `2 A` distinct free cells of the largest
4-connected component, found by the planner (`planner.largest_component`), so every goal is
reachable from every start. `generate` wraps it all with a bounded number of retries.

Grids are `[H, W]` bool obstacle maps (True = obstacle); positions are `[A, 2]` int32
`(row, col)`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from marljax.envs.grid import planner

Array = jax.Array

MAP_TYPES = ("random", "maze")


@struct.dataclass
class Layout:
    """A generated map with agents' starts and goals."""

    obstacles: Array  # [H, W] bool True where a cell is an obstacle
    labels: Array  # [H, W] int32 connected-component label of each cell (H * W on obstacles)
    starts: Array  # [A, 2] int32 start cells (distinct)
    goals: Array  # [A, 2] int32 goal cells (distinct, distinct from all starts)
    fallback: Array  # [] bool no generated map had room; the obstacle-free map was used


def random_obstacles(key: Array, height: int, width: int, density: float | Array) -> Array:
    """Independent obstacles with probability `density` per cell.

    Args:
      key: PRNG key.
      height: number of rows `H` (static).
      width: number of columns `W` (static).
      density: probability of an obstacle per cell, in [0, 1] (traced).

    Returns:
      `[H, W]` bool obstacle map.
    """
    return jax.random.uniform(key, (height, width)) < density


def maze_obstacles(key: Array, height: int, width: int, density: float | Array = 1.0) -> Array:
    """A maze-like map: a binary-tree perfect maze whose walls are kept with probability `density`.

    Rooms are the cells with even row and even column. Every room except `(0, 0)` opens the wall
    cell above it or to its left (at random; rooms in row 0 always open left, rooms in column 0
    always open up), which links all rooms into one tree. Every remaining wall cell is then kept
    with probability `density`, so the free cells always stay connected.

    Args:
      key: PRNG key.
      height: number of rows `H` (static).
      width: number of columns `W` (static).
      density: probability of keeping each wall cell, in [0, 1] (traced).

    Returns:
      `[H, W]` bool obstacle map.
    """
    key_dir, key_keep = jax.random.split(key)
    rows = jnp.arange(height)[:, None]
    cols = jnp.arange(width)[None, :]
    room = (rows % 2 == 0) & (cols % 2 == 0)
    go_up = jax.random.bernoulli(key_dir, 0.5, (height, width))
    go_up = jnp.where(rows == 0, False, jnp.where(cols == 0, True, go_up))
    opens_up = room & go_up & (rows > 0)
    opens_left = room & ~go_up & (cols > 0)
    # A wall cell is open when the room below it opened up or the room right of it opened left.
    below = jnp.pad(opens_up[1:], ((0, 1), (0, 0)))
    right = jnp.pad(opens_left[:, 1:], ((0, 0), (0, 1)))
    free = room | below | right
    keep = jax.random.uniform(key_keep, (height, width)) < density
    return ~free & keep


def obstacles_for(key: Array, height: int, width: int, density: Array, map_type: str) -> Array:
    """Dispatch on the (static) map type: `"random"` or `"maze"`."""
    if map_type == "random":
        return random_obstacles(key, height, width, density)
    if map_type == "maze":
        return maze_obstacles(key, height, width, density)
    raise ValueError(f"unknown map_type {map_type!r}; choose one of {MAP_TYPES}")


def sample_cells(key: Array, mask: Array, num: int) -> Array:
    """`num` distinct cells drawn uniformly from the True cells of `mask` (Gumbel top-k).

    Args:
      key: PRNG key.
      mask: `[H, W]` bool allowed cells; must hold at least `num` True cells (otherwise some
        returned cells are not allowed).
      num: number of cells `K` (static).

    Returns:
      `[K, 2]` int32 `(row, col)` cells, in random order.
    """
    width = mask.shape[1]
    scores = jnp.where(mask.reshape(-1), jax.random.gumbel(key, (mask.size,)), -jnp.inf)
    _, idx = jax.lax.top_k(scores, num)
    return jnp.stack([idx // width, idx % width], axis=-1).astype(jnp.int32)


def place_agents(
    key: Array, obstacles: Array, num_agents: int
) -> tuple[Array, Array, Array, Array]:
    """Starts and goals on `2 A` distinct cells of the largest connected free component.

    Args:
      key: PRNG key.
      obstacles: `[H, W]` bool obstacle map.
      num_agents: `A` (static).

    Returns:
      `(starts [A, 2], goals [A, 2], labels [H, W] int32, ok [])`: `labels` are the component
      labels (`planner.connected_components`); `ok` is False when the largest component has
      fewer than `2 A` cells (then the cells are not all valid).
    """
    labels = planner.connected_components(~obstacles)
    component, size = planner.largest_component(~obstacles, labels)
    cells = sample_cells(key, component, 2 * num_agents)
    return cells[:num_agents], cells[num_agents:], labels, size >= 2 * num_agents


def generate(
    key: Array,
    height: int,
    width: int,
    num_agents: int,
    density: Array,
    map_type: str = "random",
    max_tries: int = 8,
) -> Layout:
    """Generate a map and place agents and goals, retrying when the map has too little room.

    Up to `max_tries` maps are drawn (one `lax.while_loop`); the first whose largest component
    holds `2 A` cells is used. If none does (e.g. a very high `density` on a small grid), the
    obstacle-free map is used and `Layout.fallback` is True.

    Args:
      key: PRNG key.
      height: `H` (static).
      width: `W` (static).
      num_agents: `A` (static).
      density: obstacle density (traced; see `random_obstacles` / `maze_obstacles`).
      map_type: `"random"` or `"maze"` (static).
      max_tries: maps drawn before falling back to the empty map (static).

    Returns:
      A `Layout`; every goal is reachable from every start.
    """

    def attempt(k):
        key_map, key_place = jax.random.split(k)
        obstacles = obstacles_for(key_map, height, width, density, map_type)
        starts, goals, labels, ok = place_agents(key_place, obstacles, num_agents)
        return Layout(obstacles, labels, starts, goals, ~ok)

    def cond(carry):
        i, layout = carry
        return (i < max_tries) & layout.fallback

    def body(carry):
        i, _ = carry
        return i + 1, attempt(jax.random.fold_in(key, i))

    _, layout = jax.lax.while_loop(cond, body, (jnp.int32(1), attempt(jax.random.fold_in(key, 0))))
    empty = jnp.zeros((height, width), bool)
    cells = sample_cells(jax.random.fold_in(key, max_tries), ~empty, 2 * num_agents)
    fb = layout.fallback
    return Layout(
        obstacles=jnp.where(fb, empty, layout.obstacles),
        labels=jnp.where(fb, 0, layout.labels),
        starts=jnp.where(fb, cells[:num_agents], layout.starts),
        goals=jnp.where(fb, cells[num_agents:], layout.goals),
        fallback=fb,
    )


def parse_map(text: str) -> Array:
    """An obstacle map from text rows: `#` or `@` is an obstacle, `.` is free (POGEMA's format).

    Args:
      text: rows separated by newlines (blank lines and surrounding spaces are ignored).

    Returns:
      `[H, W]` bool obstacle map.

    Raises:
      ValueError: empty map, rows of different lengths or unknown characters.
    """
    rows = [r.strip() for r in text.strip().splitlines() if r.strip()]
    if not rows:
        raise ValueError("map text is empty")
    if len({len(r) for r in rows}) != 1:
        raise ValueError(f"map rows have different lengths: {[len(r) for r in rows]}")
    bad = sorted({ch for r in rows for ch in r} - set("#@."))
    if bad:
        raise ValueError(
            f"map has unknown characters {bad}; use '#' or '@' for obstacles, '.' free"
        )
    return jnp.asarray([[ch in "#@" for ch in r] for r in rows], bool)
