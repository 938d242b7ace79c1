"""Level-Based Foraging (LBF) as a pure-function environment, with the `lbforaging` rules.

Agents with levels move on a grid and pick up food items with levels; a food item is collected
when the levels of the adjacent agents that load it add up to at least its level. Introduced by
S. V. Albrecht and S. Ramamoorthy, "A Game-Theoretic Model and Best-Response Learning Method for
Ad Hoc Coordination in Multiagent Systems", AAMAS 2013; the benchmark rules, rewards and
observations are those of G. Papoudakis, F. Christianos, L. Schaefer and S. V. Albrecht,
"Benchmarking Multi-Agent Deep Reinforcement Learning Algorithms in Cooperative Tasks", NeurIPS
Datasets and Benchmarks 2021, as implemented by the `lbforaging` package (v2.0.0,
`lbforaging/foraging/environment.py`). Published LBF results are therefore comparable.

Rules of one step (all agents act simultaneously; `[A]` agents, `[F]` food items):

1. Actions `0 NONE, 1 NORTH (row - 1), 2 SOUTH (row + 1), 3 WEST (col - 1), 4 EAST (col + 1),
   5 LOAD`. Out-of-range actions are clipped into `0 .. 5`. An action that is illegal in the
   current state (see `action_mask`) is executed as NONE, as in `lbforaging`.
2. Movement: a move is legal when the target cell is inside the grid and holds no food (cells
   with agents are *not* excluded). If two or more agents target the same cell (an agent that
   stays or loads targets its own cell), none of them moves; every other mover moves. As in
   `lbforaging`, two agents may therefore swap cells, and an agent may move into a cell whose
   occupant was blocked, so two agents can share a cell after such a chain (reference quirk, kept
   for parity).
3. Loading (after movement; loading agents do not move): for every food item, the loading agents
   4-adjacent to it participate. If the sum of their levels is at least the food's level, the
   food is collected and removed, and each participant `i` receives
   `level_i * food_level / (sum of participants' levels * total level of the food spawned this
   episode)` (`normalize_reward=True`) or `level_i * food_level` otherwise; so the rewards of an
   episode in which all food is collected sum to one. Otherwise each participant receives
   `-penalty`. (An agent adjacent to two food items loads both; generated layouts never place
   two food items next to one cell, so this only matters for hand-built states, where
   `lbforaging` picks one of them in an order that depends on a Python set.)
4. The episode *terminates* when all food has been collected and is *truncated* after
   `params.max_steps` steps.

Procedural generation (inside `reset`, so every episode is a fresh layout), as `lbforaging`:
agents are placed on distinct uniformly random cells; each agent's (min, max) level bounds are
permuted among agents and its level drawn uniformly from them. Food is then placed one item at a
time on a uniformly random cell that is not on the border, not under an agent, has no food in its
3 x 3 neighbourhood and none two cells away in the same row or column. Food levels are drawn
uniformly from `[min_food_level, max_food_level]`, where a `max_food_level <= 0` means "the sum
of the three lowest agent levels" (the `lbforaging` default `max_food_level=None`); with
`force_coop` the minimum is raised to the maximum, so with at most three agents every food item
needs all agents. If no cell is left for a food item it is not placed (`lbforaging` gives up after
1000 attempts); `make` rejects grids on which the food cannot be packed at all.

Observations follow `lbforaging` exactly. The vector observation of agent `i` (`[3 F + 3 A]`) is
`(y, x, level)` triplets of the food in sight (row-major order), then of agent `i` itself, then
of the other agents in sight (index order), packed to the front and padded with `(-1, -1, 0)`.
Coordinates are relative to the top-left corner of the agent's view window clipped to the grid,
`max(position - sight, 0)`, so with `sight >= grid size` they are absolute. Food is in sight
within Chebyshev distance `sight`; another agent is in sight when both its window coordinates lie
in `0 .. 2 sight` (an `lbforaging` quirk: near the top/left border an agent sees other agents up
to `2 sight` cells away on the far side). The grid observation (`grid_observation=True`) is
`[3, 2 sight + 1, 2 sight + 1]`, centred on the agent: agent levels, food levels and an access
layer (1 where the cell is inside the grid and free of agents and food).

Sight as a param. The static `sight` sets the grid observation's window (a shape) and the default
view radius; `params.obs_sight` (traced, `0` meaning "the static `sight`") is the radius the
observations actually use, so one compiled program can vmap over sights. The vector observation's
shape never depends on the sight, so any `obs_sight` in `1 .. max(H, W)` is allowed there. Grid
observations keep their `[3, 2 sight + 1, 2 sight + 1]` window and need `obs_sight <= sight`;
cells farther than `obs_sight` (Chebyshev) from the agent read 0 in all three layers, as cells
outside the grid do (with `obs_sight == sight` this is exactly `lbforaging`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core import spaces
from marljax.core.types import Array, Environment, EnvParams, PRNGKey, TimeStep

NONE, NORTH, SOUTH, WEST, EAST, LOAD = range(6)
NUM_ACTIONS = 6
#: `[6, 2]` (row, col) displacement of each action.
MOVES = np.array([[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1], [0, 0]], np.int32)
_NEIGHBOURS = MOVES[1:5]  # [4, 2] N, S, W, E


@struct.dataclass
class LBFParams(EnvParams):
    """Traced parameters of `LevelBasedForaging`.

    Level bounds are scalars by default; `params.replace(...)` also accepts `[A]` (agents) or
    `[F]` (food) arrays for per-item bounds, which are permuted among items at every reset as in
    `lbforaging`.

    Attributes:
      max_steps: time limit; the episode is truncated after this many steps (50 in the benchmark).
      min_agent_level: lowest agent level.
      max_agent_level: highest agent level.
      min_food_level: lowest food level.
      max_food_level: highest food level; `<= 0` means the sum of the three lowest agent levels.
      force_coop: raise every food level to its maximum (cooperation is needed).
      normalize_reward: divide rewards so that collecting all food pays 1 in total.
      penalty: reward subtracted from each agent of a failed loading attempt.
      obs_sight: view radius of the observations; `0` (default) means the env's static `sight`.
        Vector observations accept `1 .. max(H, W)`, grid observations `1 .. sight` (their
        window is static; see the module docstring).
    """

    max_steps: int = 50
    min_agent_level: Array = struct.field(default_factory=lambda: jnp.int32(1))
    max_agent_level: Array = struct.field(default_factory=lambda: jnp.int32(2))
    min_food_level: Array = struct.field(default_factory=lambda: jnp.int32(1))
    max_food_level: Array = struct.field(default_factory=lambda: jnp.int32(0))
    force_coop: Array = struct.field(default_factory=lambda: jnp.bool_(False))
    normalize_reward: Array = struct.field(default_factory=lambda: jnp.bool_(True))
    penalty: Array = struct.field(default_factory=lambda: jnp.float32(0.0))
    obs_sight: Array = struct.field(default_factory=lambda: jnp.int32(0))


@struct.dataclass
class LBFState:
    """State of a `LevelBasedForaging` episode."""

    agent_pos: Array  # [A, 2] int32 (row, col)
    agent_level: Array  # [A] int32
    food_pos: Array  # [F, 2] int32 (row, col); meaningless where not food_alive
    food_level: Array  # [F] int32 level at spawn (0 for an item that could not be placed)
    food_alive: Array  # [F] bool placed and not yet collected
    total_food_level: Array  # [] float32 sum of the levels spawned this episode
    t: Array  # [] int32 steps taken in this episode


class LevelBasedForaging(Environment[LBFState, LBFParams]):
    """Level-Based Foraging with `lbforaging` v2 rules (see the module docstring).

    Args:
      grid_size: `S` for an `S x S` grid, or `(H, W)` (static).
      num_agents: number of agents `A` (static).
      num_food: number of food items `F` (static).
      sight: view radius; `None` means the grid size (full observability, the benchmark's
        default). Static: it sets the grid observation's window and the default of the traced
        `params.obs_sight`, which the observations use (see the module docstring).
      grid_observation: observe `[3, 2 sight + 1, 2 sight + 1]` layers instead of the vector.

    Raises:
      ValueError: impossible settings (grid smaller than 3 x 3, more agents plus food than cells,
        more food than fits with the spacing rules, sight outside `1 .. max(H, W)`).
    """

    def __init__(
        self,
        grid_size: int | tuple[int, int] = 8,
        num_agents: int = 2,
        num_food: int = 2,
        sight: int | None = None,
        grid_observation: bool = False,
    ):
        h, w = (grid_size, grid_size) if np.ndim(grid_size) == 0 else tuple(grid_size)
        self.height, self.width = int(h), int(w)
        self.num_agents = int(num_agents)
        self.num_food = int(num_food)
        self.sight = max(self.height, self.width) if sight is None else int(sight)
        self.grid_observation = bool(grid_observation)
        validate_config(self.height, self.width, self.num_agents, self.num_food, self.sight)

    @property
    def name(self) -> str:
        return "LevelBasedForaging"

    def __repr__(self) -> str:
        return (
            f"LevelBasedForaging({self.height}x{self.width}, num_agents={self.num_agents}, "
            f"num_food={self.num_food}, sight={self.sight}, "
            f"grid_observation={self.grid_observation})"
        )

    def default_params(self) -> LBFParams:
        return LBFParams()

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        """Reward options that may vary freely (level bounds depend on each other and are kept)."""
        return {"force_coop": (0, 1), "normalize_reward": (0, 1), "penalty": (0.0, 1.0)}

    def validate_params(self, params: LBFParams) -> None:
        """Reject impossible level bounds and limits at `make` time (concrete params only).

        Raises:
          ValueError: naming the field, e.g. `min_agent_level > max_agent_level`.
        """
        lo_a, hi_a = np.asarray(params.min_agent_level), np.asarray(params.max_agent_level)
        lo_f, hi_f = np.asarray(params.min_food_level), np.asarray(params.max_food_level)
        if int(params.max_steps) < 1:
            raise ValueError(f"LBF max_steps must be >= 1, got {params.max_steps}")
        if (lo_a < 1).any():
            raise ValueError(f"LBF min_agent_level must be >= 1, got {lo_a.tolist()}")
        if (lo_a > hi_a).any():
            raise ValueError(
                f"LBF min_agent_level {lo_a.tolist()} exceeds max_agent_level {hi_a.tolist()}"
            )
        if (lo_f < 1).any():
            raise ValueError(f"LBF min_food_level must be >= 1, got {lo_f.tolist()}")
        if ((hi_f > 0) & (lo_f > hi_f)).any():
            raise ValueError(
                f"LBF min_food_level {lo_f.tolist()} exceeds max_food_level {hi_f.tolist()}"
            )
        if float(np.asarray(params.penalty).min()) < 0:
            raise ValueError(f"LBF penalty must be >= 0 (it is subtracted), got {params.penalty}")
        sight = np.asarray(params.obs_sight)
        limit = self.sight if self.grid_observation else max(self.height, self.width)
        if (sight < 0).any() or (sight > limit).any():
            where = (
                f"the static grid-observation window sight={self.sight}"
                if self.grid_observation
                else f"the grid size {max(self.height, self.width)}"
            )
            raise ValueError(
                f"LBF obs_sight must be in 1 .. {limit} ({where}), or 0 for the env's sight "
                f"{self.sight}; got {sight.tolist()}"
                + (
                    "; build the env with a larger `sight` to widen the window"
                    if self.grid_observation
                    else ""
                )
            )

    # ------------------------------------------------------------------------------ reset

    def reset(self, key: PRNGKey, params: LBFParams) -> tuple[LBFState, TimeStep]:
        """Generate a fresh layout (see the module docstring) and return the first timestep."""
        state = self.generate(key, params)
        zeros = jnp.zeros((self.num_agents,), jnp.float32)
        return state, self._timestep(state, params, zeros, jnp.bool_(False), jnp.bool_(False))

    def generate(self, key: PRNGKey, params: LBFParams) -> LBFState:
        """A random initial state with the `lbforaging` spawning rules.

        Args:
          key: PRNG key.
          params: the env params.

        Returns:
          An `LBFState` with `t = 0`.
        """
        A, F, H, W = self.num_agents, self.num_food, self.height, self.width
        k_pos, k_perm, k_lvl, k_fperm, k_flvl = jax.random.split(key, 5)
        # One uniform draw per cell decides every placement: agents take the A cells with the
        # largest draws (a uniform choice without replacement), then each food item the free
        # cell with the largest draw. Given the cells taken so far, the draws of the still-free
        # cells are iid below every draw taken, so each choice is uniform over the free cells,
        # exactly as with fresh draws, at a fraction of the random bits.
        draws = jax.random.uniform(k_pos, (H * W,))
        flat = _top_k_indices(draws, A)
        agent_pos = jnp.stack([flat // W, flat % W], axis=-1).astype(jnp.int32)

        lo = jnp.broadcast_to(jnp.asarray(params.min_agent_level, jnp.int32), (A,))
        hi = jnp.broadcast_to(jnp.asarray(params.max_agent_level, jnp.int32), (A,))
        if np.ndim(params.min_agent_level) or np.ndim(params.max_agent_level):
            perm = jax.random.permutation(k_perm, A)  # per-agent bounds: permuted (lbforaging)
            lo, hi = lo[perm], hi[perm]
        agent_level = jax.random.randint(k_lvl, (A,), lo, jnp.maximum(hi, lo) + 1)
        agent_level = agent_level.astype(jnp.int32)

        auto_max = jnp.sum(jnp.sort(agent_level)[:3])
        fmax = jnp.broadcast_to(jnp.asarray(params.max_food_level, jnp.int32), (F,))
        fmax = jnp.where(fmax > 0, fmax, auto_max)
        fmin = jnp.broadcast_to(jnp.asarray(params.min_food_level, jnp.int32), (F,))
        fmin = jnp.where(params.force_coop, fmax, fmin)
        if np.ndim(params.min_food_level) or np.ndim(params.max_food_level):
            fperm = jax.random.permutation(k_fperm, F)  # per-item bounds: permuted (lbforaging)
            fmin, fmax = fmin[fperm], fmax[fperm]
        food_level = jax.random.randint(k_flvl, (F,), fmin, jnp.maximum(fmax, fmin) + 1)
        food_level = food_level.astype(jnp.int32)

        rows = jnp.arange(H)[:, None]
        cols = jnp.arange(W)[None, :]
        interior = (rows >= 1) & (rows <= H - 2) & (cols >= 1) & (cols <= W - 2)
        free = interior & ~jnp.zeros((H, W), bool).at[agent_pos[:, 0], agent_pos[:, 1]].set(True)

        def place(free_cells, _):
            ok = jnp.any(free_cells)
            cell = _argmax(jnp.where(free_cells.reshape(-1), draws, -1.0))
            r, c = cell // W, cell % W
            dr, dc = jnp.abs(rows - r), jnp.abs(cols - c)
            # Cells where a later food item may not go: the 3 x 3 neighbourhood and the plus of
            # radius 2 (lbforaging's `neighborhood` checks, which are symmetric).
            blocked = ((dr <= 1) & (dc <= 1)) | ((dr == 0) & (dc <= 2)) | ((dc == 0) & (dr <= 2))
            free_cells = jnp.where(ok, free_cells & ~blocked, free_cells)
            return free_cells, (jnp.stack([r, c]).astype(jnp.int32), ok)

        _, (food_pos, placed) = jax.lax.scan(place, free, None, length=F, unroll=min(F, 16))
        food_pos = jnp.where(placed[:, None], food_pos, 0)
        food_level = jnp.where(placed, food_level, 0)
        return LBFState(
            agent_pos=agent_pos,
            agent_level=agent_level,
            food_pos=food_pos,
            food_level=food_level,
            food_alive=placed,
            total_food_level=jnp.sum(food_level).astype(jnp.float32),
            t=jnp.int32(0),
        )

    # ------------------------------------------------------------------------------ step

    def step(
        self, key: PRNGKey, state: LBFState, actions: Array, params: LBFParams
    ) -> tuple[LBFState, TimeStep]:
        """One joint step with `actions [A]` (see the module docstring for the rules)."""
        del key  # the dynamics are deterministic
        A = self.num_agents
        actions = jnp.clip(jnp.asarray(actions).astype(jnp.int32), 0, NUM_ACTIONS - 1)
        legal = self.action_mask(state)[jnp.arange(A), actions]
        actions = jnp.where(legal, actions, NONE)

        # Movement: agents whose targets coincide all stay.
        target = state.agent_pos + jnp.asarray(MOVES)[actions]  # [A, 2]
        same = jnp.all(target[:, None, :] == target[None, :, :], axis=-1)  # [A, A]
        clash = jnp.sum(same, axis=1) > 1
        agent_pos = jnp.where(clash[:, None], state.agent_pos, target)

        # Loading, after movement.
        loading = actions == LOAD
        part = self._adjacent(agent_pos, state) & loading[:, None]  # [A, F]
        levels = state.agent_level.astype(jnp.float32)
        food_level = state.food_level.astype(jnp.float32)
        part_f = part.astype(jnp.float32)
        # Broadcast sums rather than dots: faster on CPU for these tiny [A, F] matrices.
        level_sum = jnp.sum(levels[:, None] * part_f, axis=0)  # [F]
        attempted = jnp.any(part, axis=0)
        collected = attempted & (level_sum >= food_level)
        failed = attempted & ~collected
        norm = jnp.where(
            params.normalize_reward,
            jnp.maximum(level_sum, 1.0) * jnp.maximum(state.total_food_level, 1.0),
            1.0,
        )
        per_food = jnp.where(collected, food_level / norm, 0.0)  # [F] reward per unit of level
        gain = jnp.sum(part_f * per_food, axis=1)  # [A]
        fails = jnp.sum(part_f * failed.astype(jnp.float32), axis=1)
        reward = levels * gain - params.penalty * fails

        food_alive = state.food_alive & ~collected
        t = state.t + 1
        terminated = ~jnp.any(food_alive)
        truncated = (t >= params.max_steps) & ~terminated
        state = state.replace(agent_pos=agent_pos, food_alive=food_alive, t=t)
        return state, self._timestep(
            state, params, reward.astype(jnp.float32), terminated, truncated
        )

    def _adjacent(self, agent_pos: Array, state: LBFState) -> Array:
        """`[A, F]` bool: agent 4-adjacent to a live food item."""
        d = jnp.abs(agent_pos[:, None, :] - state.food_pos[None, :, :]).sum(-1)
        return (d == 1) & state.food_alive[None, :]

    def action_mask(self, state: LBFState) -> Array:
        """`[A, 6]` bool legal actions (lbforaging's valid actions).

        NONE is always legal; a move is legal when its target is inside the grid and holds no
        live food; LOAD is legal next to live food.

        Args:
          state: the current state.

        Returns:
          `[A, 6]` bool.
        """
        target = state.agent_pos[:, None, :] + jnp.asarray(MOVES)[None]  # [A, 6, 2]
        inside = (
            (target[..., 0] >= 0)
            & (target[..., 0] < self.height)
            & (target[..., 1] >= 0)
            & (target[..., 1] < self.width)
        )
        on_food = jnp.any(
            jnp.all(target[:, :, None, :] == state.food_pos[None, None], axis=-1)
            & state.food_alive[None, None],
            axis=-1,
        )  # [A, 6]
        load = jnp.any(self._adjacent(state.agent_pos, state), axis=1)
        mask = inside & ~on_food
        return mask.at[:, NONE].set(True).at[:, LOAD].set(load)

    # ------------------------------------------------------------------------------ observations

    def _timestep(self, state, params, reward, terminated, truncated) -> TimeStep:
        if self.grid_observation:
            obs = self.grid_obs(state, params)
        else:
            obs = self.vector_obs(state, params)
        return TimeStep(
            obs=obs,
            reward=reward,
            terminated=jnp.asarray(terminated, jnp.bool_),
            truncated=jnp.asarray(truncated, jnp.bool_),
            action_mask=self.action_mask(state),
            global_state=self.global_state(state, params),
            extras={},
        )

    def sight_of(self, params: LBFParams | None) -> Array:
        """`[]` int32 view radius the observations use: `params.obs_sight`, or the static
        `sight` where that is 0 (or `params` is None)."""
        if params is None:
            return jnp.int32(self.sight)
        obs_sight = jnp.asarray(params.obs_sight, jnp.int32)
        return jnp.where(obs_sight > 0, obs_sight, jnp.int32(self.sight))

    def vector_obs(self, state: LBFState, params: LBFParams | None = None) -> Array:
        """`[A, 3 F + 3 A]` float32 lbforaging vector observations (see the module docstring).

        Args:
          state: the current state.
          params: the env params (their `obs_sight`); None uses the static `sight`.

        Returns:
          Per agent: food `(y, x, level)` triplets in sight (row-major), self, other agents in
          sight (index order), each group packed to the front and padded with `(-1, -1, 0)`.
        """
        A, F, H, W = self.num_agents, self.num_food, self.height, self.width
        s = self.sight_of(params)
        pos = state.agent_pos
        origin = jnp.maximum(pos - s, 0)  # [A, 2] top-left corner of the clipped window
        upper = jnp.minimum(pos + s, jnp.array([H - 1, W - 1]))

        fp = state.food_pos[None]  # [1, F, 2]
        food_vis = (
            jnp.all((fp >= origin[:, None]) & (fp <= upper[:, None]), axis=-1)
            & state.food_alive[None]
        )  # [A, F]
        food_key = jnp.where(food_vis, fp[..., 0] * W + fp[..., 1], H * W + jnp.arange(F))
        food_trip = jnp.concatenate(
            [fp - origin[:, None], jnp.broadcast_to(state.food_level, (A, F))[..., None]], axis=-1
        )  # [A, F, 3]
        food_trip = jnp.where(food_vis[..., None], food_trip, jnp.array([-1, -1, 0]))
        food_obs = _pack(food_key, food_trip)

        rel = pos[None] - origin[:, None]  # [A(viewer), A, 2]
        agent_vis = jnp.all((rel >= 0) & (rel <= 2 * s), axis=-1)
        idx = jnp.arange(A)
        agent_key = jnp.where(idx[None] == idx[:, None], -1, idx[None])
        agent_key = jnp.where(agent_vis, agent_key, A + idx[None])
        agent_trip = jnp.concatenate(
            [rel, jnp.broadcast_to(state.agent_level, (A, A))[..., None]], axis=-1
        )
        agent_trip = jnp.where(agent_vis[..., None], agent_trip, jnp.array([-1, -1, 0]))
        agent_obs = _pack(agent_key, agent_trip)
        obs = jnp.concatenate([food_obs.reshape(A, -1), agent_obs.reshape(A, -1)], axis=-1)
        return obs.astype(jnp.float32)

    def grid_layers(self, state: LBFState) -> Array:
        """`[3, H + 2 sight, W + 2 sight]` float32 agent, food and access layers, padded.

        Args:
          state: the current state.

        Returns:
          Layer 0: agent levels (where two agents share a cell, the higher index's level, as
          lbforaging writes agents in index order); layer 1: live food levels; layer 2: 1 on
          cells inside the grid that hold neither an agent nor live food.
        """
        A, s = self.num_agents, self.sight
        shape = (self.height + 2 * s, self.width + 2 * s)
        p = state.agent_pos + s
        who = jnp.full(shape, -1, jnp.int32).at[p[:, 0], p[:, 1]].max(jnp.arange(A))
        agents = jnp.where(who >= 0, state.agent_level[jnp.maximum(who, 0)], 0)
        f = state.food_pos + s
        food_vals = jnp.where(state.food_alive, state.food_level, 0)
        # Dead or unplaced items add 0 at some cell; live items never share a cell.
        food = jnp.zeros(shape, jnp.int32).at[f[:, 0], f[:, 1]].add(food_vals)
        has_food = jnp.zeros(shape, bool).at[f[:, 0], f[:, 1]].max(state.food_alive)
        rows = jnp.arange(shape[0])[:, None]
        cols = jnp.arange(shape[1])[None, :]
        inside = (rows >= s) & (rows < s + self.height) & (cols >= s) & (cols < s + self.width)
        access = inside & (who < 0) & ~has_food
        return jnp.stack([agents, food, access]).astype(jnp.float32)

    def grid_obs(self, state: LBFState, params: LBFParams | None = None) -> Array:
        """`[A, 3, 2 sight + 1, 2 sight + 1]` float32 lbforaging grid observations.

        Args:
          state: the current state.
          params: the env params; cells farther than `obs_sight` from the centre read 0 (None:
            the static `sight`, the whole window).

        Returns:
          Each agent's window of `grid_layers`, centred on the agent.
        """
        layers = self.grid_layers(state)
        size = 2 * self.sight + 1

        def window(p):
            return jax.lax.dynamic_slice(layers, (0, p[0], p[1]), (3, size, size))

        obs = jax.vmap(window)(state.agent_pos)
        if params is None:
            return obs
        offset = jnp.abs(jnp.arange(size) - self.sight)
        seen = jnp.maximum(offset[:, None], offset[None, :]) <= self.sight_of(params)
        return jnp.where(seen, obs, 0.0)

    def _check_vector_obs(self) -> None:
        if self.grid_observation:
            raise ValueError(
                f"{self.name}: entity tokens need the vector observation; this env has "
                "grid_observation=True (make it with grid_observation=False)"
            )

    def entity_obs(self, obs: Array) -> Array:
        """Vector observations `[..., A, 3 (F + A)]` as entity tokens `[..., A, F + A, 5]`.

        One token per `(y, x, level)` triplet (the food slots, the agent itself, the other-agent
        slots), features `[y, x, level, is_agent, is_self]`; an empty slot is `(-1, -1, 0, ...)`.
        Used by TransfQMIX (`marljax.agents.transf_qmix`).

        Raises:
          ValueError: the env has `grid_observation=True`.
        """
        self._check_vector_obs()
        F, A = self.num_food, self.num_agents
        triplets = obs.reshape(*obs.shape[:-1], F + A, 3)
        flags = jnp.zeros((F + A, 2), obs.dtype).at[F:, 0].set(1.0).at[F, 1].set(1.0)
        return jnp.concatenate([triplets, jnp.broadcast_to(flags, triplets.shape[:-1] + (2,))], -1)

    def entity_state(self, global_state: Array) -> Array:
        """The global state `[..., 3 (F + A) + 1]` as entity tokens `[..., F + A, 5]`.

        Features `[y, x, level, is_agent, t / max_steps]` of every food item (`(-1, -1, 0)` once
        collected) and every agent. Used by TransfQMIX's mixer.

        Raises:
          ValueError: the env has `grid_observation=True`.
        """
        self._check_vector_obs()
        F, A = self.num_food, self.num_agents
        triplets = global_state[..., :-1].reshape(*global_state.shape[:-1], F + A, 3)
        is_agent = jnp.zeros((F + A, 1), global_state.dtype).at[F:].set(1.0)
        frac = jnp.broadcast_to(global_state[..., -1:, None], triplets.shape[:-1] + (1,))
        is_agent = jnp.broadcast_to(is_agent, triplets.shape[:-1] + (1,))
        return jnp.concatenate([triplets, is_agent, frac], axis=-1)

    def global_state(self, state: LBFState, params: LBFParams) -> Array:
        """`[3 F + 3 A + 1]` float32 centralised state.

        Args:
          state: the current state.
          params: the env params.

        Returns:
          Absolute `(y, x, level)` of every food item in index order (`(-1, -1, 0)` once
          collected or if never placed), of every agent in index order, then `t / max_steps`.
        """
        food = jnp.concatenate([state.food_pos, state.food_level[:, None]], axis=-1)
        food = jnp.where(state.food_alive[:, None], food, jnp.array([-1, -1, 0]))
        agents = jnp.concatenate([state.agent_pos, state.agent_level[:, None]], axis=-1)
        frac = jnp.minimum(state.t / jnp.maximum(params.max_steps, 1), 1.0)
        return jnp.concatenate(
            [
                food.reshape(-1).astype(jnp.float32),
                agents.reshape(-1).astype(jnp.float32),
                frac[None].astype(jnp.float32),
            ]
        )

    # ------------------------------------------------------------------------------ spaces

    def _level_bound(self, params: LBFParams) -> Array:
        """Upper bound of any level appearing in observations (traceable)."""
        agent_max = jnp.max(jnp.asarray(params.max_agent_level))
        agent_max = jnp.maximum(agent_max, jnp.max(jnp.asarray(params.min_agent_level)))
        auto = jnp.minimum(3, self.num_agents) * agent_max
        food_max = jnp.max(jnp.asarray(params.max_food_level))
        food_max = jnp.maximum(food_max, jnp.max(jnp.asarray(params.min_food_level)))
        food_max = jnp.where(food_max > 0, food_max, auto)
        return jnp.maximum(jnp.maximum(agent_max, food_max), auto).astype(jnp.float32)

    def observation_space(self, params: LBFParams) -> spaces.Box:
        level = self._level_bound(params)
        if self.grid_observation:
            size = 2 * self.sight + 1
            return spaces.Box(0.0, level, (3, size, size), jnp.float32, layout="chw")
        high = jnp.maximum(level, float(max(self.height, self.width) - 1))
        return spaces.Box(-1.0, high, (3 * (self.num_food + self.num_agents),), jnp.float32)

    def action_space(self, params: LBFParams) -> spaces.Discrete:
        return spaces.Discrete(NUM_ACTIONS)

    def global_state_space(self, params: LBFParams) -> spaces.Box:
        high = jnp.maximum(self._level_bound(params), float(max(self.height, self.width) - 1))
        return spaces.Box(-1.0, high, (3 * (self.num_food + self.num_agents) + 1,), jnp.float32)


def _top_k_indices(u: Array, k: int) -> Array:
    """`[k]` indices of the `k` largest entries of `u [n]`, largest first (`lax.top_k`).

    For small `k`, `k` unrolled masked argmaxes give the same indices several times faster on
    CPU than `lax.top_k`.
    """
    if k > 8:
        return jax.lax.top_k(u, k)[1]

    def pick(taken, _):
        i = _argmax(jnp.where(taken, -1.0, u))
        return taken.at[i].set(True), i

    return jax.lax.scan(pick, jnp.zeros(u.shape, bool), None, length=k, unroll=True)[1]


def _argmax(x: Array) -> Array:
    """`jnp.argmax` of a 1-D array (first maximum) as two plain reductions.

    XLA's CPU backend runs the variadic (value, index) reduction of `argmax` several times slower
    than a `max` followed by a `min` over the indices where the maximum is reached.
    """
    idx = jnp.arange(x.shape[0])
    return jnp.min(jnp.where(x == jnp.max(x), idx, x.shape[0]))


def _pack(key: Array, items: Array) -> Array:
    """Sort `items [V, K, 3]` along `K` by the distinct integer `key [V, K]`, without a sort.

    The rank of an item is the number of items with a smaller key; a one-hot of the ranks moves
    each item to its slot. For the small `K` of LBF this is much cheaper than `argsort` on CPU;
    the one-hot costs `K^2` per viewer, so from `K > 16` (e.g. 64 agents) a sort is used.
    """
    if key.shape[1] > 16:
        order = jnp.argsort(key, axis=1)  # keys are distinct: any sort gives the same order
        return jnp.take_along_axis(items, order[:, :, None], axis=1)
    rank = jnp.sum(key[:, None, :] < key[:, :, None], axis=-1)  # [V, K]
    slots = rank[:, :, None] == jnp.arange(key.shape[1])  # [V, K(item), K(slot)]
    # A broadcast sum, not a dot: XLA's CPU dots are slow for such tiny batched matrices.
    return jnp.sum(jnp.where(slots[..., None], items[:, :, None, :], 0), axis=1)


# ------------------------------------------------------------------------------------ validation


def max_food_packing(height: int, width: int) -> int:
    """How many food items fit on an empty grid under the lbforaging spacing rules (greedy).

    Food goes on interior cells only, with no other food in its 3 x 3 neighbourhood or two
    cells away in its row or column. Cells are filled greedily in row-major order, which gives a
    feasible packing (a lower bound of the optimum, and what random placement can hope for).

    Args:
      height: grid rows `H`.
      width: grid columns `W`.

    Returns:
      The number of food items of the greedy packing.
    """
    field = np.zeros((height, width), bool)
    count = 0
    for r in range(1, height - 1):
        for c in range(1, width - 1):
            near = field[max(r - 1, 0) : r + 2, max(c - 1, 0) : c + 2].any()
            near |= field[max(r - 2, 0) : r + 3, c].any() or field[r, max(c - 2, 0) : c + 3].any()
            if not near:
                field[r, c] = True
                count += 1
    return count


def validate_config(height: int, width: int, num_agents: int, num_food: int, sight: int) -> None:
    """Reject impossible static LBF settings with a clear message (called by the constructor).

    Args:
      height: grid rows `H`.
      width: grid columns `W`.
      num_agents: `A`.
      num_food: `F`.
      sight: view radius.

    Raises:
      ValueError: naming the setting and the limit it breaks.
    """
    if height < 3 or width < 3:
        raise ValueError(
            f"LBF grid must be at least 3x3 (food is never placed on the border), got "
            f"{height}x{width}"
        )
    if num_agents < 1 or num_food < 1:
        raise ValueError(
            f"LBF needs num_agents >= 1 and num_food >= 1, got {num_agents}, {num_food}"
        )
    if height * width >= 2**31:
        raise ValueError(
            f"LBF grid {height}x{width} has {height * width:,} cells, more than int32 cell "
            "indices hold (< 2,147,483,648); use a smaller grid_size"
        )
    if num_agents + num_food > height * width:
        raise ValueError(
            f"LBF: {num_agents} agents + {num_food} food = {num_agents + num_food} items do not "
            f"fit on a {height}x{width} grid ({height * width} cells)"
        )
    # A lattice with spacing 3 on the interior always fits; only more food than that needs the
    # greedy packing's Python loop (seconds to minutes on huge grids).
    lattice = -(-(height - 2) // 3) * -(-(width - 2) // 3)
    packing = lattice if num_food <= lattice else max_food_packing(height, width)
    if num_food > packing:
        raise ValueError(
            f"LBF: {num_food} food items do not fit on a {height}x{width} grid: food is placed "
            f"off the border with no other food in its 3x3 neighbourhood or two cells away in "
            f"its row or column, which leaves room for {packing}"
        )
    if not 1 <= sight <= max(height, width):
        raise ValueError(
            f"LBF sight must be in 1 .. {max(height, width)} (the grid size) on a "
            f"{height}x{width} grid, got {sight}"
        )


def make_lbf(
    grid_size: int | tuple[int, int] = 8,
    num_agents: int = 2,
    num_food: int = 2,
    sight: int | None = None,
    grid_observation: bool = False,
) -> LevelBasedForaging:
    """Build a `LevelBasedForaging` env (the registry's entry point; see the class for args)."""
    return LevelBasedForaging(grid_size, num_agents, num_food, sight, grid_observation)


__all__ = [
    "LBFParams",
    "LBFState",
    "LevelBasedForaging",
    "MOVES",
    "make_lbf",
    "max_food_packing",
    "validate_config",
]
