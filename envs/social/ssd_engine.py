"""The shared gridworld engine of the sequential social dilemmas (Cleanup, Harvest).

Everything both games do lives here once, as pure vectorised functions over a leading agent
axis `A`: parsing ASCII maps, egocentric movement with conflict resolution, rotation, beams
(the tagging/zap beam and Cleanup's cleaning beam), (re)spawning agents and the egocentric,
rotated observation window. The games themselves (`dilemma_grid.py`) only add their resource
dynamics.

Conventions:
  - Positions are `(row, col)` int32; rows grow downwards.
  - Orientations are int32 `0..3` = north, east, south, west (`DIRECTIONS`); turning right is
    `+1 (mod 4)`.
  - Grids are `[H, W]` bool; cells outside the map behave like walls.

Speed (CPU, under `vmap`): observation windows are one contiguous slice of a bit-packed grid per
agent, rotated by the orientation (`pack_planes`, `egocentric_windows`, `unpack_bits`), not a
gather of scattered cells; per-cell random numbers (regrowth, waste, spawn order) come from a
keyed counter-based hash (`cell_uniform`) instead of one threefry draw per cell. Both were
measured, not assumed (see `bench/bench_ssd.py`); the windows are bit-for-bit those of the
general `egocentric_views`.

Semantics follow the SSD reference implementation (E. Vinitsky et al.,
`sequential_social_dilemma_games`, `map_env.py`), read for semantics only: moves are relative
to the agent's orientation; several agents moving into one cell are resolved at random; an agent
moving into a cell whose occupant does not leave stays put; two agents swapping cells both stay;
a cycle of agents all moving along it does move. Beams are three cells wide (the lane in front
of the agent and the two lanes beside it), travel `length` cells, stop at walls and are absorbed
by the first agent they reach.

References: J. Z. Leibo et al., "Multi-agent Reinforcement Learning in Sequential Social
Dilemmas", AAMAS 2017; E. Hughes et al., "Inequity aversion improves cooperation in
intertemporal social dilemmas", NeurIPS 2018; J. Perolat et al., "A multi-agent reinforcement
learning model of common-pool resource appropriation", NeurIPS 2017.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

#: `[4, 2]` unit steps `(drow, dcol)` of the orientations north, east, south, west.
DIRECTIONS = np.array([[-1, 0], [0, 1], [1, 0], [0, -1]], np.int32)

# Actions shared by both games (Cleanup adds CLEAN = 8).
FORWARD, BACKWARD, STRAFE_LEFT, STRAFE_RIGHT, TURN_LEFT, TURN_RIGHT, STAY, ZAP, CLEAN = range(9)
ACTION_NAMES = (
    "forward",
    "backward",
    "strafe_left",
    "strafe_right",
    "turn_left",
    "turn_right",
    "stay",
    "zap",
    "clean",
)
# Direction of each move action relative to the orientation, in quarter turns to the right.
_MOVE_TURNS = np.array([0, 2, 3, 1], np.int32)


# --------------------------------------------------------------------------------------------
# Maps.
# --------------------------------------------------------------------------------------------


def parse_ascii_map(rows: Sequence[str], allowed: str, name: str = "map") -> dict[str, np.ndarray]:
    """Parse an ASCII layout into one `[H, W]` bool array per character.

    Args:
      rows: the layout, one string per row, all of the same length.
      allowed: the characters this game understands (e.g. `"@P A"`).
      name: what to call the map in error messages.

    Returns:
      `{char: [H, W] bool}` for every character of `allowed`.

    Raises:
      ValueError: an empty layout, ragged rows, an unknown character (with its row and column)
        or no spawn point `P`.
    """
    if isinstance(rows, str) or not isinstance(rows, Sequence) or len(rows) == 0:
        raise ValueError(f"{name}: an ASCII map must be a non-empty list of strings (one per row)")
    if not all(isinstance(r, str) for r in rows):
        raise ValueError(f"{name}: every row of an ASCII map must be a string")
    widths = sorted({len(r) for r in rows})
    if len(widths) != 1:
        lengths = [len(r) for r in rows]
        raise ValueError(
            f"{name}: ragged rows, every row must have the same length; row lengths are {lengths}"
        )
    if widths[0] == 0:
        raise ValueError(f"{name}: rows are empty")
    for i, row in enumerate(rows):
        for j, c in enumerate(row):
            if c not in allowed:
                raise ValueError(
                    f"{name}: unknown character {c!r} at row {i}, column {j}; allowed "
                    f"characters are {sorted(allowed)!r}"
                )
    grid = np.array([list(r) for r in rows])
    masks = {c: grid == c for c in allowed}
    if "P" in masks and not masks["P"].any():
        raise ValueError(f"{name}: the map has no spawn point 'P'")
    return masks


def view_offsets(radius: int) -> np.ndarray:
    """Static `[4, V, V, 2]` offsets of an egocentric window, `V = 2 * radius + 1`.

    Row `i` of the window is `radius - i` cells ahead of the agent and column `j` is
    `j - radius` cells to its right, so the agent sits at the centre, looking up.

    Args:
      radius: cells visible in each direction.

    Returns:
      int32 `(drow, dcol)` from the agent's cell, per orientation.
    """
    v = np.arange(2 * radius + 1)
    ahead = (radius - v)[:, None, None]  # [V, 1, 1]
    right = (v - radius)[None, :, None]  # [1, V, 1]
    out = []
    for o in range(4):
        fwd = DIRECTIONS[o][None, None, :]
        rgt = DIRECTIONS[(o + 1) % 4][None, None, :]
        out.append(ahead * fwd + right * rgt)
    return np.stack(out).astype(np.int32)


# --------------------------------------------------------------------------------------------
# Grid helpers.
# --------------------------------------------------------------------------------------------


def in_bounds(pos: Array, shape: tuple[int, int]) -> Array:
    """Whether positions lie inside a grid.

    Args:
      pos: `[..., 2]` int `(row, col)` positions.
      shape: `(H, W)`.

    Returns:
      `[...]` bool.
    """
    return (
        (pos[..., 0] >= 0)
        & (pos[..., 0] < shape[0])
        & (pos[..., 1] >= 0)
        & (pos[..., 1] < shape[1])
    )


def read_grid(grid: Array, pos: Array, outside) -> Array:
    """Read a grid at many positions, with a fixed value off the map.

    Args:
      grid: `[H, W]` array.
      pos: `[..., 2]` int `(row, col)` positions (may lie off the map).
      outside: the value returned for positions off the map.

    Returns:
      `[...]` values of `grid` at `pos`.
    """
    shape = grid.shape[:2]
    inside = in_bounds(pos, shape)
    r = jnp.clip(pos[..., 0], 0, shape[0] - 1)
    c = jnp.clip(pos[..., 1], 0, shape[1] - 1)
    return jnp.where(inside, grid[r, c], outside)


def occupancy(pos: Array, active: Array, shape: tuple[int, int]) -> Array:
    """Which active agent stands on each cell.

    Args:
      pos: `[A, 2]` int32 positions.
      active: `[A]` bool, agents on the map (tagged-out agents are not).
      shape: `(H, W)`.

    Returns:
      `[H, W]` int32 index of the active agent on each cell, -1 where empty.
    """
    num_agents = pos.shape[0]
    r = jnp.where(active, pos[:, 0], shape[0])  # off the grid: dropped
    return (
        jnp.full(shape, -1, jnp.int32)
        .at[r, pos[:, 1]]
        .set(jnp.arange(num_agents, dtype=jnp.int32), mode="drop")
    )


# --------------------------------------------------------------------------------------------
# Movement and rotation.
# --------------------------------------------------------------------------------------------


def move_agents(
    key: Array, pos: Array, orient: Array, active: Array, actions: Array, walls: Array
) -> Array:
    """Egocentric moves of all agents at once, with conflict resolution.

    Move actions (`FORWARD`, `BACKWARD`, `STRAFE_LEFT`, `STRAFE_RIGHT`) step one cell relative
    to the agent's orientation; other actions and inactive agents stay. A move into a wall (or
    off the map) fails. Several agents moving into the same cell: one of them, uniformly at
    random, gets it and the others stay. An agent moving into a cell whose occupant does not
    leave stays (resolved to a fixed point, so chains move together); two agents swapping cells
    both stay; a cycle of agents (four or more on a grid) moving along it moves.

    Args:
      key: PRNG key (tie-breaks).
      pos: `[A, 2]` int32 positions.
      orient: `[A]` int32 orientations.
      active: `[A]` bool, agents on the map.
      actions: `[A]` int32 actions (already clipped into range).
      walls: `[H, W]` bool.

    Returns:
      `[A, 2]` int32 new positions (no two active agents share a cell if none did before).
    """
    num_agents = pos.shape[0]
    is_move = active & (actions < TURN_LEFT)
    turns = jnp.asarray(_MOVE_TURNS)[jnp.clip(actions, 0, 3)]
    step = jnp.asarray(DIRECTIONS)[(orient + turns) % 4]
    target = pos + step
    ok = is_move & ~read_grid(walls, target, True)
    target = jnp.where(ok[:, None], target, pos)

    eye = jnp.eye(num_agents, dtype=bool)
    same_target = jnp.all(target[:, None] == target[None, :], axis=-1) & ~eye  # [A, A]
    # Random tie-break: among agents moving into one cell, the highest priority wins.
    priority = jax.random.permutation(key, num_agents)
    beaten = same_target & ok[None, :] & (priority[None, :] > priority[:, None])
    ok = ok & ~jnp.any(beaten, axis=1)
    # target_on_pos[i, j]: agent i moves into agent j's current cell.
    target_on_pos = jnp.all(target[:, None] == pos[None, :], axis=-1) & ~eye & active[None, :]
    swap = jnp.any(target_on_pos & target_on_pos.T & ok[None, :], axis=1)
    ok = ok & ~swap

    def blocked_pass(_, moving):
        blocked = jnp.any(target_on_pos & ~moving[None, :], axis=1)
        return ok & ~blocked

    moving = jax.lax.fori_loop(0, num_agents, blocked_pass, ok)
    return jnp.where(moving[:, None], target, pos)


def rotate(orient: Array, actions: Array, active: Array) -> Array:
    """Turn the agents that chose `TURN_LEFT` / `TURN_RIGHT` by a quarter turn.

    Args:
      orient: `[A]` int32 orientations (0..3 = north, east, south, west).
      actions: `[A]` int32 actions.
      active: `[A]` bool, agents on the map (others keep their orientation).

    Returns:
      `[A]` int32 new orientations.
    """
    turn = jnp.where(actions == TURN_RIGHT, 1, 0) - jnp.where(actions == TURN_LEFT, 1, 0)
    return (orient + jnp.where(active, turn, 0)) % 4


# --------------------------------------------------------------------------------------------
# Beams.
# --------------------------------------------------------------------------------------------


def beam(
    pos: Array,
    orient: Array,
    firing: Array,
    length: Array,
    walls: Array,
    occupant: Array,
    blockers: Array,
    max_length: int,
) -> tuple[Array, Array]:
    """Fire three-lane beams from every firing agent at once.

    Each firing agent fires three parallel lanes in its facing direction: one from its own cell
    and one from each side cell (so a beam is three cells wide and starts beside the agent). A
    lane covers up to `length` cells; it stops before a wall and stops *at* (covering) the first
    cell that holds an agent or a blocker. This is the SSD reference's `update_map_fire`.

    Args:
      pos: `[A, 2]` int32 positions.
      orient: `[A]` int32 orientations.
      firing: `[A]` bool, agents firing this beam.
      length: `[]` int, cells per lane (traced; at most `max_length` are considered).
      walls: `[H, W]` bool.
      occupant: `[H, W]` int32 index of the active agent on each cell, -1 where empty.
      blockers: `[H, W]` bool, cells that absorb the beam (e.g. waste for the cleaning beam).
      max_length: static bound on `length` (e.g. `max(H, W)`).

    Returns:
      `(hit, covered)`: `[A]` bool agents hit by any beam, `[H, W]` bool cells covered.
    """
    shape = walls.shape
    fwd = jnp.asarray(DIRECTIONS)[orient]  # [A, 2]
    rgt = jnp.asarray(DIRECTIONS)[(orient + 1) % 4]
    starts = jnp.stack([pos, pos + rgt - fwd, pos - rgt - fwd], axis=1)  # [A, 3, 2]
    k = jnp.arange(1, max_length + 1, dtype=jnp.int32)  # [K]
    cells = starts[:, :, None, :] + k[None, None, :, None] * fwd[:, None, None, :]  # [A, 3, K, 2]
    passable = ~read_grid(walls, cells, True) & (k <= length)[None, None, :]
    who = read_grid(occupant, cells, -1)  # [A, 3, K]
    stops = (who >= 0) | read_grid(blockers, cells, False)
    reach = jnp.cumprod(passable, axis=-1).astype(bool)
    stopped_before = (jnp.cumsum(stops, axis=-1) - stops) > 0
    covered_cells = reach & ~stopped_before & firing[:, None, None]  # [A, 3, K]
    num_agents = pos.shape[0]
    hit = (
        jnp.zeros((num_agents + 1,), bool)
        .at[jnp.where(covered_cells & (who >= 0), who, num_agents)]
        .set(True)[:num_agents]
    )
    r = jnp.where(covered_cells, cells[..., 0], shape[0])  # off the grid: dropped
    covered = jnp.zeros(shape, bool).at[r, cells[..., 1]].set(True, mode="drop")
    return hit, covered


# --------------------------------------------------------------------------------------------
# Per-cell random numbers.
# --------------------------------------------------------------------------------------------

_GOLDEN = np.uint32(0x9E3779B9)


def _mix32(x: Array) -> Array:
    """The `lowbias32` integer hash (C. Wellons, "Prospecting for hash functions", 2018)."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def cell_uniform(key: Array, shape: tuple[int, ...]) -> Array:
    """One uniform number in `[0, 1)` per cell, much cheaper than `jax.random.uniform` on CPU.

    Two 32-bit words are drawn from `key` with JAX's PRNG; each cell's number is a
    counter-based hash of its flat index keyed by those words (two rounds of the `lowbias32`
    integer hash over a Weyl sequence, in the spirit of counter-based generators such as
    Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011), keeping 24 bits
    (the resolution of `jax.random.uniform`'s float32). Deterministic in `key`; statistically
    adequate for the games' Bernoulli draws and random orders, not for cryptography. About ten
    times cheaper than threefry for a whole grid per env and step under `vmap` on CPU.

    Args:
      key: PRNG key.
      shape: static shape of the result.

    Returns:
      `shape` float32 in `[0, 1)`.
    """
    seed = jax.random.bits(key, (2,), jnp.uint32)
    index = jnp.arange(int(np.prod(shape)), dtype=jnp.uint32).reshape(shape)
    x = _mix32(index * _GOLDEN + seed[0])
    x = _mix32(x ^ seed[1])
    return (x >> 8).astype(jnp.float32) * np.float32(2.0**-24)


def first_argmax(x: Array) -> Array:
    """`jnp.argmax` of a 1-D array (first index of the maximum), faster under `vmap` on CPU."""
    index = jnp.arange(x.shape[0], dtype=jnp.int32)
    return jnp.min(jnp.where(x == jnp.max(x), index, x.shape[0]))


# --------------------------------------------------------------------------------------------
# Spawning.
# --------------------------------------------------------------------------------------------


def place_agents(key: Array, needs: Array, spawn: Array, occupied: Array) -> tuple[Array, Array]:
    """Put the agents that need a place on distinct random free spawn cells.

    Args:
      key: PRNG key.
      needs: `[A]` bool, agents to place.
      spawn: `[H, W]` bool spawn cells.
      occupied: `[H, W]` bool cells that are taken (active agents).

    Returns:
      `(pos, placed)`: `[A, 2]` int32 cells (meaningful where `placed`), `[A]` bool agents that
      got a cell (all of `needs` unless there are fewer free spawn cells than agents to place).
    """
    num_agents = needs.shape[0]
    height, width = spawn.shape
    free = (spawn & ~occupied).reshape(-1)
    score = jnp.where(free, cell_uniform(key, free.shape), -1.0)
    best, idx = jax.lax.top_k(score, num_agents)  # free cells in random order first
    rank = jnp.cumsum(needs) - 1
    slot = jnp.clip(rank, 0, num_agents - 1)
    placed = needs & (best[slot] >= 0.0)
    cell = idx[slot]
    return jnp.stack([cell // width, cell % width], axis=-1).astype(jnp.int32), placed


# --------------------------------------------------------------------------------------------
# Observations.
# --------------------------------------------------------------------------------------------


def egocentric_views(
    features: Array, pos: Array, orient: Array, offsets: Array, outside: Array
) -> Array:
    """Every agent's egocentric window of a feature grid, rotated so it faces up.

    Args:
      features: `[H, W, C]` feature grid.
      pos: `[A, 2]` int32 positions.
      orient: `[A]` int32 orientations.
      offsets: `[4, V, V, 2]` static offsets from `view_offsets`.
      outside: `[C]` features of cells off the map.

    Returns:
      `[A, V, V, C]` windows; row 0 is the farthest row ahead of the agent.
    """
    radius = offsets.shape[1] // 2
    height, width, channels = features.shape
    # Pad by the radius with the off-map features: every window cell is then one flat index.
    padded = jnp.concatenate(
        [
            jnp.broadcast_to(outside, (height, radius, channels)),
            features,
            jnp.broadcast_to(outside, (height, radius, channels)),
        ],
        axis=1,
    )
    band = jnp.broadcast_to(outside, (radius, width + 2 * radius, channels))
    padded = jnp.concatenate([band, padded, band], axis=0).reshape(-1, channels)
    cells = pos[:, None, None, :] + jnp.asarray(offsets)[orient] + radius  # [A, V, V, 2]
    return padded[cells[..., 0] * (width + 2 * radius) + cells[..., 1]]


def pack_planes(planes: Sequence[Array]) -> Array:
    """Pack up to 8 bool planes into one uint8 grid, plane `c` in bit `c`.

    Args:
      planes: `C <= 8` arrays `[H, W]` of bool.

    Returns:
      `[H, W]` uint8 codes.
    """
    if not 1 <= len(planes) <= 8:
        raise ValueError(f"pack_planes packs 1 to 8 planes into uint8, got {len(planes)}")
    code = planes[0].astype(jnp.uint8)
    for c, plane in enumerate(planes[1:], start=1):
        code = code | (plane.astype(jnp.uint8) << c)
    return code


def unpack_bits(codes: Array, num_bits: int) -> Array:
    """Inverse of `pack_planes` on any array: `[...]` uint8 -> `[..., num_bits]` uint8 in {0, 1}."""
    return (codes[..., None] >> jnp.arange(num_bits, dtype=jnp.uint8)) & jnp.uint8(1)


def egocentric_windows(
    codes: Array, pos: Array, orient: Array, radius: int, outside: int | Array
) -> Array:
    """Every agent's egocentric window of a one-channel grid, rotated so it faces up.

    Same windows as `egocentric_views` (row 0 is the farthest row ahead, column `j` is
    `j - radius` cells to the agent's right), computed as one contiguous `V x V` slice of the
    padded grid per agent and a quarter-turn rotation chosen by the orientation. On CPU under
    `vmap` this is several times faster than gathering `V * V` scattered cells, so multi-channel
    binary features are best packed into one uint8 grid first (`pack_planes`) and unpacked
    after (`unpack_bits`).

    Args:
      codes: `[H, W]` grid (e.g. uint8 codes from `pack_planes`).
      pos: `[A, 2]` int32 positions.
      orient: `[A]` int32 orientations (0..3 = north, east, south, west).
      radius: cells visible in each direction (static); `V = 2 * radius + 1`.
      outside: the value of cells off the map.

    Returns:
      `[A, V, V]` windows, same dtype as `codes`.
    """
    size = 2 * radius + 1
    padded = jnp.pad(codes, radius, constant_values=jnp.asarray(outside, codes.dtype))
    # The window centred on (r, c) starts at (r, c) in the padded grid.
    windows = jax.vmap(lambda p: jax.lax.dynamic_slice(padded, (p[0], p[1]), (size, size)))(pos)
    # Facing east (1), the cells ahead are to the right on the map: a quarter turn
    # counter-clockwise brings them to the top; south and west take two and three turns.
    o = orient[:, None, None]
    turned = [jnp.rot90(windows, k, axes=(1, 2)) for k in range(1, 4)]
    return jnp.where(o == 0, windows, jnp.where(o == 1, turned[0], jnp.where(o == 2, *turned[1:])))
