"""Multi-agent pathfinding on a grid, lifelong or one-shot, with POGEMA's conventions.

`A` agents move on an `H x W` 4-connected grid with obstacles. Every episode can draw a fresh map
inside `jit` (`map_type="random"`: independent obstacles with probability `params.density`;
`map_type="maze"`: a maze whose walls are kept with probability `params.density`, see
`marljax.envs.grid.maps`). Starts and goals are `2 A` distinct free cells of the largest
connected component, so the planner proves every goal reachable.

- **Lifelong** (`lifelong=True`, POGEMA's `PogemaLifeLong`): an agent that stands on its goal
  after a step gets reward 1 and a new goal, drawn uniformly from the free cells of its connected
  component other than its current cell. Episodes never terminate; they are truncated at
  `params.max_steps`. Metric: throughput = goals reached per step (`extras["throughput"]`).
- **One-shot** (`lifelong=False`, POGEMA's `Pogema` with `on_target="finish"`): an agent that
  reaches its goal gets reward 1 once and disappears (it no longer blocks anyone and its later
  actions are ignored). The episode terminates when every agent has arrived. Metrics: individual
  and cooperative success rate (ISR, CSR) and sum of costs (`extras`).

Actions (POGEMA's order): 0 stay, 1 up (row - 1), 2 down (row + 1), 3 left (col - 1), 4 right
(col + 1); all legal in every state (a blocked move leaves the agent in place, as in POGEMA).
Out-of-range actions are clipped into 0..4.

Collision rules (static `collision=...`, POGEMA 1.4's `collision_system`; vertex and swap
conflicts are resolved so that two active agents never share a cell and never swap). In every rule
a move into an obstacle or out of the grid leaves the agent in place, and inactive agents (one-shot:
arrived) neither move nor block.

- `"soft"` (the default here; a simultaneous rule). A move is cancelled (the agent stays) when
  1. its target cell is an obstacle or outside the grid;
  2. two agents would swap cells (both stay);
  3. its target cell is the cell of an agent that stays (after all cancellations); or
  4. several agents move into the same cell: the one with the smallest index moves, the others
     stay.
  Rules 3 and 4 are applied until nothing changes (a cancelled move can block a chain of agents
  behind it). Agents that move into a cell vacated in the same step, and rotations of three or
  more agents around a cycle, are allowed.
- `"priority"` (POGEMA 1.4's *default*; a sequential rule). Agents move one at a time in index
  order (agent 0 first); each moves if its target cell is free at its turn, i.e. holds no
  obstacle, no agent that has not had its turn yet and no lower-index agent that ended its turn
  there. So an agent may follow a lower-index agent into the cell it just vacated, but not a
  higher-index one; swaps and cycles are always blocked. Computed without a loop over agents: the
  decision of agent `i` depends only on the decisions of agents `j < i`, so iterating all
  decisions jointly reaches that unique fixed point in at most `A` rounds.
- `"block_both"` (simultaneous, strict). A cell is *blocked* if an active agent stands on it at
  the start of the step or if two or more active agents target it (a staying agent targets its own
  cell). An agent moves only if its target is free of obstacles and not blocked: nobody follows
  another agent into its vacated cell, and every agent of a vertex conflict stays.

Observation of agent `i` (`[C, S, S]` float32, `S = 2 * obs_radius + 1`, egocentric window
centred on the agent, POGEMA's default observation): channel 0 obstacles (as in POGEMA, the
ring of cells just outside the grid reads as obstacles and cells further out read 0), channel 1 active agents (the agent itself included, at the centre), channel 2
the agent's goal, projected onto the window border when it lies outside (each offset clipped to
`[-r, r]`). With `distance_obs=True` a channel 3 holds the BFS distance to the agent's goal divided
by `H * W` (1 on obstacles, unreachable and outside cells), computed by the planner.

Global state (`[3 * H * W]` float32): obstacle map, active agents' cells and active agents' goals,
flattened.

Parity with POGEMA 1.4 (`python bench/bench_pathfinding.py --parity` drives both with the same
maps, starts, goals and actions under each of the three collision rules and compares every step):
positions, rewards and the obstacle and goal channels are identical, one-shot and lifelong. POGEMA
pins numpy 1.26, so it is not a test dependency (not in the `test` extra); the parity check runs it
in its own venv as a subprocess. Where the two differ, and why:

- Collision rules: all three of POGEMA 1.4's rules give identical positions. Our default is
  `"soft"`, POGEMA's is `"priority"`: pass `collision="priority"` to match POGEMA's default env.
- Agent channel (`"soft"` only): POGEMA's soft rule updates its occupancy grid agent by agent
  (`move_without_checks`), so an agent that moved into a cell vacated in the same step by a
  higher-index agent is missing from every observation until it moves again; here every active
  agent is always shown. (`"priority"` and `"block_both"` update the grid consistently.)
- Map generation: same random-map rule (independent obstacles with probability `density`), but a
  different RNG, and all `2 A` starts and goals are distinct cells of the *largest* component
  (POGEMA: each agent's start and goal share some component). POGEMA's mazes come from its
  separate toolbox; the maze generator here is a binary-tree maze with wall keep-probability.
- New lifelong goals: same distribution (uniform over the agent's component without its own
  cell), different RNG streams.
- Episode ends: POGEMA returns per-agent `terminated` lists; here `terminated` is episode-level
  (one-shot: every agent arrived) and per-agent arrival is `~state.active`. Metrics are in
  `extras` at every step rather than in POGEMA's wrappers at episode end; sum of costs counts an
  arrived agent's arrival step and an unfinished agent's current episode length.

Reference: Skrynnik et al., "Learn to Follow: Decentralized Lifelong Multi-agent Pathfinding via
Planning and Learning", AAAI 2024; POGEMA (Skrynnik et al., ICLR 2025), pip package `pogema`.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core import spaces
from marljax.core.registry import register
from marljax.core.types import Array, Environment, EnvParams, PRNGKey, TimeStep
from marljax.envs.grid import maps, planner

NUM_ACTIONS = planner.NUM_MOVES
#: POGEMA 1.4's `collision_system` values (see the module doc).
COLLISION_RULES = ("soft", "priority", "block_both")


@struct.dataclass
class PathfindingParams(EnvParams):
    """Traced parameters of `Pathfinding`.

    Attributes:
      max_steps: time limit; the episode is *truncated* after this many steps.
      density: obstacle probability per cell (`map_type="random"`, in [0, 1)) or probability of
        keeping each maze wall (`map_type="maze"`, in [0, 1]).
      geometry: static `(height, width, num_agents, map_type)` of the env, used only to validate
        concrete values of `density` when params are built or replaced (not a pytree leaf).
    """

    max_steps: int = 128
    density: float = 0.3
    geometry: tuple | None = struct.field(pytree_node=False, default=None)

    def __post_init__(self):
        if self.geometry is not None:
            validate_density(self.density, *self.geometry)
            steps = _concrete(self.max_steps)
            if steps is not None and np.any(steps < 1):
                raise ValueError(f"max_steps must be >= 1, got {self.max_steps}")


@struct.dataclass
class PathfindingState:
    """State of a `Pathfinding` episode."""

    obstacles: Array  # [H, W] bool True where a cell is an obstacle
    labels: Array  # [H, W] int32 connected-component label of each cell (new goals stay inside)
    order: Array  # [H*W] int32 flat cells sorted by (label, index): components are contiguous
    rank: Array  # [H*W] int32 position of each flat cell in `order`
    positions: Array  # [A, 2] int32 (row, col) of each agent
    goals: Array  # [A, 2] int32 (row, col) of each agent's current goal
    active: Array  # [A] bool agent still on the grid (one-shot: not yet arrived)
    arrival: Array  # [A] int32 step at which the agent arrived (one-shot), -1 before
    goals_reached: Array  # [] int32 goals reached so far in this episode
    t: Array  # [] int32 steps taken in this episode


def _concrete(x) -> np.ndarray | None:
    """`x` as a numpy array if it is a concrete number or array, else None (tracers etc.)."""
    if isinstance(x, jax.core.Tracer):
        return None
    if isinstance(x, (int, float, np.ndarray, np.generic, jax.Array)):
        try:
            return np.asarray(x, np.float64)
        except Exception:  # noqa: BLE001  (anything non-numeric is simply not checked)
            return None
    return None


def validate_density(density, height: int, width: int, num_agents: int, map_type: str) -> None:
    """Raise a clear `ValueError` if `density` leaves too little room for the agents.

    Args:
      density: the (concrete) `params.density`; tracers and placeholders are not checked.
      height: grid rows `H`.
      width: grid columns `W`.
      num_agents: `A`; starts and goals need `2 A` distinct free cells.
      map_type: `"random"` or `"maze"`.

    Raises:
      ValueError: density outside its range or leaving fewer than `2 A` free cells (random maps:
        in expectation, `(1 - density) H W`).
    """
    d = _concrete(density)
    if d is None:
        return
    cells = height * width
    need = 2 * num_agents
    if map_type == "maze":
        if np.any(d < 0) or np.any(d > 1):
            raise ValueError(
                f"maze density (probability of keeping a wall) must be in [0, 1], got {density}"
            )
        return
    if np.any(d < 0) or np.any(d >= 1):
        raise ValueError(
            f"obstacle density must be in [0, 1), got {density}: density 1 leaves no free cells"
        )
    free = np.floor((1.0 - d) * cells)
    if np.any(free < need):
        raise ValueError(
            f"obstacle density {density} leaves about {int(np.min(free))} free cells of {cells} "
            f"on a {height}x{width} grid, fewer than the {need} needed for {num_agents} agents' "
            "distinct starts and goals; lower the density, enlarge the grid or use fewer agents"
        )


class Pathfinding(Environment[PathfindingState, PathfindingParams]):
    """Lifelong or one-shot multi-agent pathfinding (POGEMA conventions; see the module doc).

    Args:
      height: grid rows `H` (static).
      width: grid columns `W` (static).
      num_agents: `A` (static).
      obs_radius: radius `r` of the egocentric window, `S = 2 r + 1` (static; POGEMA's default 5).
      lifelong: new goal on arrival (True) or one-shot, agents disappear at their goal (False).
      map_type: `"random"` or `"maze"` (static).
      distance_obs: add the planner's distance-to-goal channel to the observation.
      collision: `"soft"`, `"priority"` (POGEMA's default) or `"block_both"` (static; see the
        module doc).

    `max_steps` and `density` are params (override them with `make(..., density=0.2)`); their
    concrete values are validated when params are built, so `make` fails before compiling.

    Raises:
      ValueError: impossible settings (grid too small for the agents, radius larger than the
        grid, unknown map type, density leaving no room), before anything is compiled.
    """

    def __init__(
        self,
        height: int = 16,
        width: int = 16,
        num_agents: int = 8,
        obs_radius: int = 5,
        lifelong: bool = True,
        map_type: str = "random",
        distance_obs: bool = False,
        collision: str = "soft",
    ):
        height, width, num_agents, obs_radius = map(int, (height, width, num_agents, obs_radius))
        if height < 1 or width < 1:
            raise ValueError(f"grid must be at least 1x1, got {height}x{width}")
        if num_agents < 1:
            raise ValueError(f"num_agents must be >= 1, got {num_agents}")
        if 2 * num_agents > height * width:
            raise ValueError(
                f"{num_agents} agents need {2 * num_agents} distinct free cells for starts and "
                f"goals, but a {height}x{width} grid has only {height * width} cells"
            )
        if obs_radius < 1:
            raise ValueError(f"obs_radius must be >= 1, got {obs_radius}")
        if obs_radius >= max(height, width):
            raise ValueError(
                f"obs_radius {obs_radius} is larger than the {height}x{width} grid: a radius of "
                f"{max(height, width) - 1} already shows the whole grid from every cell"
            )
        if collision not in COLLISION_RULES:
            raise ValueError(
                f"unknown collision rule {collision!r}; choose one of {COLLISION_RULES} "
                "(POGEMA's collision_system values)"
            )
        if map_type not in maps.MAP_TYPES:
            raise ValueError(f"unknown map_type {map_type!r}; choose one of {maps.MAP_TYPES}")
        if map_type == "maze":
            rooms = ((height + 1) // 2) * ((width + 1) // 2)
            if 2 * rooms - 1 < 2 * num_agents:
                raise ValueError(
                    f"a {height}x{width} maze guarantees only {2 * rooms - 1} free cells, fewer "
                    f"than the {2 * num_agents} needed for {num_agents} agents"
                )
        self.height, self.width = height, width
        self.num_agents = num_agents
        self.obs_radius = obs_radius
        self.lifelong = bool(lifelong)
        self.map_type = map_type
        self.distance_obs = bool(distance_obs)
        self.collision = collision
        self.geometry = (height, width, num_agents, map_type)

    @property
    def name(self) -> str:
        kind = "LifelongPathfinding" if self.lifelong else "Pathfinding"
        return f"{kind}<{self.height}x{self.width},{self.map_type},{self.collision}>"

    @property
    def window(self) -> int:
        """Side `S = 2 r + 1` of the observation window."""
        return 2 * self.obs_radius + 1

    @property
    def num_channels(self) -> int:
        """`C`: obstacles, agents, goal (+ distance to goal)."""
        return 4 if self.distance_obs else 3

    def default_params(self) -> PathfindingParams:
        density = 0.7 if self.map_type == "maze" else 0.3
        return PathfindingParams(max_steps=128, density=density, geometry=self.geometry)

    # ------------------------------------------------------------------------------ reset

    def reset(self, key: PRNGKey, params: PathfindingParams) -> tuple[PathfindingState, TimeStep]:
        layout = maps.generate(
            key, self.height, self.width, self.num_agents, params.density, self.map_type
        )
        return self._start(layout.obstacles, layout.labels, layout.starts, layout.goals, params)

    def init_state(
        self, obstacles: Array, starts: Array, goals: Array, params: PathfindingParams
    ) -> tuple[PathfindingState, TimeStep]:
        """Start an episode on a given map with given starts and goals (hand-built or parity runs).

        Args:
          obstacles: `[H, W]` bool obstacle map.
          starts: `[A, 2]` int32 distinct free start cells.
          goals: `[A, 2]` int32 goal cells.
          params: env params (only `max_steps` matters here).

        Returns:
          `(state, timestep)` as from `reset`. Lifelong goals are redrawn inside each agent's
          connected component (computed here by the planner).
        """
        obstacles = jnp.asarray(obstacles, bool)
        labels = planner.connected_components(~obstacles)
        return self._start(
            obstacles, labels, jnp.asarray(starts, jnp.int32), jnp.asarray(goals, jnp.int32), params
        )

    def _start(self, obstacles, labels, starts, goals, params):
        a = self.num_agents
        labels = labels.astype(jnp.int32)
        order = jnp.argsort(labels.reshape(-1), stable=True).astype(jnp.int32)
        rank = jnp.zeros_like(order).at[order].set(jnp.arange(order.size, dtype=jnp.int32))
        state = PathfindingState(
            obstacles=obstacles,
            labels=labels,
            order=order,
            rank=rank,
            positions=starts,
            goals=goals,
            active=jnp.ones((a,), bool),
            arrival=jnp.full((a,), -1, jnp.int32),
            goals_reached=jnp.int32(0),
            t=jnp.int32(0),
        )
        zeros = jnp.zeros((a,), jnp.float32)
        no = jnp.array(False)
        return state, self._timestep(state, params, zeros, jnp.int32(0), no, no)

    # ------------------------------------------------------------------------------ step

    def step(
        self, key: PRNGKey, state: PathfindingState, actions: Array, params: PathfindingParams
    ) -> tuple[PathfindingState, TimeStep]:
        actions = jnp.clip(jnp.asarray(actions).astype(jnp.int32), 0, NUM_ACTIONS - 1)
        positions = resolve_moves(
            state.obstacles, state.positions, actions, state.active, self.collision
        )
        t = state.t + 1
        on_goal = state.active & jnp.all(positions == state.goals, axis=-1)
        reward = on_goal.astype(jnp.float32)
        reached = jnp.sum(on_goal, dtype=jnp.int32)
        if self.lifelong:
            new_goals = self._new_goals(key, state, positions)
            goals = jnp.where(on_goal[:, None], new_goals, state.goals)
            active = state.active
            arrival = state.arrival
            terminated = jnp.array(False)
        else:
            goals = state.goals
            active = state.active & ~on_goal
            arrival = jnp.where(on_goal, t, state.arrival)
            terminated = ~jnp.any(active)
        truncated = (t >= params.max_steps) & ~terminated
        state = state.replace(
            positions=positions,
            goals=goals,
            active=active,
            arrival=arrival,
            goals_reached=state.goals_reached + reached,
            t=t,
        )
        return state, self._timestep(state, params, reward, reached, terminated, truncated)

    def _new_goals(self, key: PRNGKey, state: PathfindingState, positions: Array) -> Array:
        """`[A, 2]` a uniform cell of each agent's component other than its own cell.

        Components are contiguous runs of `state.order`, so a uniform index into the run minus
        the agent's own cell is an exact uniform draw at `O(A log HW)` cost per step.
        """
        w = self.width
        flat_labels = state.labels.reshape(-1)
        sorted_labels = flat_labels[state.order]
        own = positions[:, 0] * w + positions[:, 1]  # [A]
        label = flat_labels[own]
        start = jnp.searchsorted(sorted_labels, label, side="left")
        size = jnp.searchsorted(sorted_labels, label, side="right") - start
        u = jax.random.uniform(key, own.shape)
        k = jnp.minimum(jnp.floor(u * (size - 1)).astype(jnp.int32), jnp.maximum(size - 2, 0))
        k = jnp.where(start + k >= state.rank[own], k + 1, k)  # skip the agent's own cell
        cell = state.order[jnp.clip(start + k, 0, state.order.size - 1)]
        # A component of one cell has no other cell: the goal stays where the agent is.
        cell = jnp.where(size > 1, cell, own)
        return jnp.stack([cell // w, cell % w], axis=-1).astype(jnp.int32)

    # ------------------------------------------------------------------------------ outputs

    def _timestep(self, state, params, reward, reached, terminated, truncated) -> TimeStep:
        obs = self.observe(state)
        return TimeStep(
            obs=obs,
            reward=reward,
            terminated=jnp.asarray(terminated, bool),
            truncated=jnp.asarray(truncated, bool),
            action_mask=jnp.ones((self.num_agents, NUM_ACTIONS), bool),
            global_state=self.global_state(state),
            extras=self._metrics(state, reached),
        )

    def _metrics(self, state: PathfindingState, reached: Array) -> dict[str, Array]:
        t = state.t.astype(jnp.float32)
        extras = {
            "goals_reached": reached,
            "total_goals_reached": state.goals_reached,
            "throughput": state.goals_reached / jnp.maximum(t, 1.0),
        }
        if not self.lifelong:
            arrived = ~state.active
            costs = jnp.where(arrived, state.arrival, state.t)
            extras["isr"] = jnp.mean(arrived.astype(jnp.float32))
            extras["csr"] = jnp.all(arrived).astype(jnp.float32)
            extras["sum_of_costs"] = jnp.sum(costs, dtype=jnp.int32)
            extras["makespan"] = jnp.max(costs)
        return extras

    def observe(self, state: PathfindingState) -> Array:
        """Every agent's egocentric observation (see the module doc).

        Args:
          state: the env state.

        Returns:
          `[A, C, S, S]` float32 windows.
        """
        r, s = self.obs_radius, self.window
        h, w = self.height, self.width
        cells = h * w
        pos = state.positions
        flat = jnp.where(state.active, pos[:, 0] * w + pos[:, 1], cells)
        agents = jnp.zeros((cells,), jnp.float32).at[flat].set(1.0, mode="drop").reshape(h, w)
        grid = jnp.stack([state.obstacles.astype(jnp.float32), agents])  # [2, H, W]
        pad = ((0, 0), (r, r), (r, r))
        # POGEMA's artificial border: one ring of obstacles around the map, free beyond it.
        ring = jnp.pad(state.obstacles.astype(jnp.float32), 1, constant_values=1.0)
        padded = jnp.pad(grid, pad).at[0].set(jnp.pad(ring, r - 1))

        def window(p):
            return jax.lax.dynamic_slice(padded, (0, p[0], p[1]), (2, s, s))

        win = jax.vmap(window)(pos)  # [A, 2, S, S]
        rel = jnp.clip(state.goals - pos, -r, r) + r  # [A, 2]
        idx = jnp.arange(s)
        target = (idx[None, :, None] == rel[:, 0, None, None]) & (
            idx[None, None, :] == rel[:, 1, None, None]
        )
        chans = [win, target[:, None].astype(jnp.float32)]
        if self.distance_obs:
            dist = planner.distance_maps(~state.obstacles, state.goals)  # [A, H, W]
            norm = dist.astype(jnp.float32) / float(cells)
            padded_d = jnp.pad(norm, pad, constant_values=1.0)

            def dwindow(d, p):
                return jax.lax.dynamic_slice(d, (p[0], p[1]), (s, s))

            chans.append(jax.vmap(dwindow)(padded_d, pos)[:, None])
        return jnp.concatenate(chans, axis=1)

    def global_state(self, state: PathfindingState) -> Array:
        """`[3 * H * W]` float32: obstacles, active agents' cells, active agents' goals."""
        cells = self.height * self.width

        def occupancy(p):
            flat = jnp.where(state.active, p[:, 0] * self.width + p[:, 1], cells)
            return jnp.zeros((cells,), jnp.float32).at[flat].set(1.0, mode="drop")

        return jnp.concatenate(
            [
                state.obstacles.reshape(-1).astype(jnp.float32),
                occupancy(state.positions),
                occupancy(state.goals),
            ]
        )

    def observation_space(self, params: PathfindingParams) -> spaces.Box:
        return spaces.Box(
            0.0, 1.0, (self.num_channels, self.window, self.window), jnp.float32, layout="chw"
        )

    def action_space(self, params: PathfindingParams) -> spaces.Discrete:
        return spaces.Discrete(NUM_ACTIONS)

    def global_state_space(self, params: PathfindingParams) -> spaces.Box:
        return spaces.Box(0.0, 1.0, (3 * self.height * self.width,), jnp.float32)


def resolve_moves(
    obstacles: Array, positions: Array, actions: Array, active: Array, rule: str = "soft"
) -> Array:
    """Apply joint moves with one of POGEMA 1.4's collision rules (see the module doc).

    Vectorised for every rule (no Python or `lax` loop over agents): `"soft"` and `"priority"`
    iterate a joint update in a `lax.while_loop` until nothing changes (usually a few rounds, at
    most `A`), each round a couple of scatters over the grid; `"block_both"` is two scatters.

    Args:
      obstacles: `[H, W]` bool obstacle map.
      positions: `[A, 2]` int32 current cells (distinct among active agents).
      actions: `[A]` int32 actions in 0..4 (stay, up, down, left, right).
      active: `[A]` bool; inactive agents neither move nor block.
      rule: `"soft"`, `"priority"` or `"block_both"` (static).

    Returns:
      `[A, 2]` int32 new cells: no two active agents share a cell and no two swapped.

    Raises:
      ValueError: unknown `rule`.
    """
    if rule not in COLLISION_RULES:
        raise ValueError(f"unknown collision rule {rule!r}; choose one of {COLLISION_RULES}")
    h, w = obstacles.shape
    cells = h * w
    num_agents = positions.shape[0]
    idx = jnp.arange(num_agents, dtype=jnp.int32)
    target = positions + jnp.asarray(planner.MOVES)[actions]
    inside = (target[:, 0] >= 0) & (target[:, 0] < h) & (target[:, 1] >= 0) & (target[:, 1] < w)
    tflat = jnp.where(inside, target[:, 0] * w + target[:, 1], cells)
    pflat = positions[:, 0] * w + positions[:, 1]
    blocked = ~inside | obstacles.reshape(-1)[jnp.clip(tflat, 0, cells - 1)]
    # The index of the active agent standing on each cell at the start of the step (-1: none).
    occupant = jnp.full((cells + 1,), -1, jnp.int32).at[jnp.where(active, pflat, cells)].set(idx)
    moving = active & (actions != 0) & ~blocked
    if rule == "soft":
        moving = _soft(moving, tflat, pflat, active, occupant, idx, cells)
    elif rule == "priority":
        moving = _priority(moving, tflat, pflat, active, occupant, idx, cells)
    else:
        # Blocked cells: start cells of active agents, and cells targeted by two or more
        # active agents (a staying or blocked agent targets its own cell, already blocked).
        claim = jnp.where(active, jnp.where(actions != 0, tflat, pflat), cells)
        count = jnp.zeros((cells + 1,), jnp.int32).at[claim].add(1)
        moving = moving & (occupant[tflat] < 0) & (count[tflat] == 1)
    return jnp.where(moving[:, None], target, positions).astype(jnp.int32)


def _soft(moving, tflat, pflat, active, occupant, idx, cells):
    """`[A]` bool: which of the candidate `moving` agents move under the "soft" rule."""
    num_agents = idx.shape[0]
    # Swaps: the agent at my target moves into my cell.
    other = occupant[tflat]
    other_c = jnp.clip(other, 0, num_agents - 1)
    swap = (other >= 0) & moving[other_c] & (tflat[other_c] == pflat)
    moving = moving & ~swap

    def losers(mov):
        stay_cell = (
            jnp.zeros((cells + 1,), bool).at[jnp.where(active & ~mov, pflat, cells)].set(True)
        )
        first = (
            jnp.full((cells + 1,), num_agents, jnp.int32).at[jnp.where(mov, tflat, cells)].min(idx)
        )
        return mov & (stay_cell[tflat] | (first[tflat] != idx))

    def cond(carry):
        _, lose = carry
        return jnp.any(lose)

    def body(carry):
        mov, lose = carry
        mov = mov & ~lose
        return mov, losers(mov)

    moving, _ = jax.lax.while_loop(cond, body, (moving, losers(moving)))
    return moving


def _priority(moving, tflat, pflat, active, occupant, idx, cells):
    """`[A]` bool: which of the candidate `moving` agents move under the "priority" rule.

    Agent `i` moves iff its target holds no agent `j > i` (still on its start cell at `i`'s turn)
    and is not the final cell of any agent `j < i`. The second condition depends only on the
    decisions of lower indices, so the joint map `F` has one fixed point, reached from any start
    in at most `A` rounds; a round that changes nothing has found it.
    """
    num_agents = idx.shape[0]
    cand = moving & ~(occupant[tflat] > idx)

    def decide(mov):
        final = jnp.where(active, jnp.where(mov, tflat, pflat), cells)
        first = jnp.full((cells + 1,), num_agents, jnp.int32).at[final].min(idx)
        return cand & ~(first[tflat] < idx)

    def cond(carry):
        mov, new = carry
        return jnp.any(mov != new)

    def body(carry):
        _, new = carry
        return new, decide(new)

    moving, _ = jax.lax.while_loop(cond, body, (cand, decide(cand)))
    return moving


def planner_agent(
    random_move_prob: float = 0.2,
) -> Callable[[PRNGKey, PathfindingState], Array]:
    """The planner-based heuristic agent as a policy `policy(key, state) -> actions [A]`.

    Every agent follows a BFS shortest path to its goal with the conflict-avoidance rule of
    `planner.planner_policy` (it has full map knowledge: a centralised expert, not a local one).

    Args:
      random_move_prob: probability that a yielding agent takes a random free move.

    Returns:
      A pure function of a PRNG key and a `PathfindingState`.
    """

    def policy(key: PRNGKey, state: PathfindingState) -> Array:
        return planner.planner_policy(
            ~state.obstacles, state.positions, state.goals, key, state.active, random_move_prob
        )

    return policy


def random_agent(key: PRNGKey, state: PathfindingState) -> Array:
    """Uniformly random actions `[A]` (a reference point for throughput)."""
    return jax.random.randint(key, state.active.shape, 0, NUM_ACTIONS)


def evaluate_policy(
    env: Pathfinding,
    params: PathfindingParams,
    policy: Callable[[PRNGKey, PathfindingState], Array],
    key: PRNGKey,
    num_envs: int,
    num_steps: int,
) -> dict[str, Array]:
    """Run a state-based policy for one episode in `num_envs` fresh envs and report the metrics.

    One `lax.scan` over `num_steps` steps of the envs vmapped (no auto-reset: use
    `num_steps <= params.max_steps`). Jit it with `num_envs` and `num_steps` static, or call it
    as is (it jits its rollout).

    Args:
      env: a `Pathfinding` env.
      params: its params.
      policy: `policy(key, state) -> actions [A]`, e.g. `planner_agent()` or `random_agent`.
      key: PRNG key.
      num_envs: parallel episodes `E` (static).
      num_steps: steps per episode `T` (static).

    Returns:
      The env's final `extras` per env, `[E]` each (`throughput`, `total_goals_reached`, and
      for one-shot envs `isr`, `csr`, `sum_of_costs`, `makespan`).
    """

    @jax.jit
    def rollout(key):
        key_reset, key_run = jax.random.split(key)
        state, ts = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(key_reset, num_envs), params
        )

        def body(carry, k):
            state, _ = carry
            key_act, key_env = jax.random.split(k)
            actions = jax.vmap(policy)(jax.random.split(key_act, num_envs), state)
            state, ts = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(key_env, num_envs), state, actions, params
            )
            return (state, ts.extras), None

        (_, extras), _ = jax.lax.scan(
            body, (state, ts.extras), jax.random.split(key_run, num_steps)
        )
        return extras

    return rollout(key)


def _register_all() -> None:
    register(
        "grid/lmapf-v0",
        Pathfinding,
        kwargs={"height": 16, "width": 16, "num_agents": 8, "lifelong": True, "map_type": "random"},
        description="Lifelong MAPF (POGEMA rules), 16x16 random map, density 0.3, 8 agents",
    )
    register(
        "grid/lmapf_maze-v0",
        Pathfinding,
        kwargs={
            "height": 17,
            "width": 17,
            "num_agents": 8,
            "lifelong": True,
            "map_type": "maze",
        },
        description="Lifelong MAPF (POGEMA rules), 17x17 maze, 70% of walls kept, 8 agents",
    )
    register(
        "grid/mapf-v0",
        Pathfinding,
        kwargs={
            "height": 8,
            "width": 8,
            "num_agents": 4,
            "lifelong": False,
            "map_type": "random",
        },
        params={"max_steps": 64},
        description="One-shot MAPF (POGEMA rules, agents disappear at goal), 8x8, 4 agents",
    )


_register_all()
