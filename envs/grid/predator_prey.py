"""Predator-prey on a bounded grid: `k` adjacent predators must catch a prey together.

The relative-overgeneralisation predator-prey task of W. Böhmer, V. Kurin and S. Whiteson,
"Deep Coordination Graphs", ICML 2020 (their `stag_hunt` environment with `capture_action=True`,
`capture_freezes=True`, `remove_frozen=True`), used to test value factorisation: a catch pays
only if enough predators attempt it at once, while a lone attempt is punished, so independent
learners that average over their partners' exploration learn to avoid catching.

Rules of one step (`[A]` predators controlled by the agents, `[M]` scripted prey):

1. Actions `0 STAY, 1 UP (row - 1), 2 DOWN (row + 1), 3 LEFT (col - 1), 4 RIGHT (col + 1),
   5 CATCH` (the order of Level-Based Foraging; DCG orders them right, down, left, up, stay,
   catch). Out-of-range actions are clipped into `0 .. 5`; an action that is illegal in the
   current state (see `action_mask`) is executed as STAY. A move is legal when its target cell is
   inside the grid and holds no active predator and no live prey at the start of the step; CATCH
   is legal next to a live prey; a removed predator may only STAY.
2. Predators move simultaneously. When several predators move to the same cell, one of them,
   chosen uniformly at random, gets it and the others stay (DCG moves predators one at a time in
   a random order, which gives the same winner distribution; unlike DCG, a predator cannot enter
   a cell that another predator leaves in the same step).
3. Catching (after the predators' moves): a live prey is caught when at least
   `params.capture_agents` (`k`) active predators 4-adjacent to it play CATCH. The team reward
   (the same for every agent) is `capture_reward` per caught prey, plus `punishment` (a negative
   number, DCG's `p`) per live prey that some but fewer than `k` adjacent predators tried to
   catch, plus `step_reward`. Caught prey are removed; with `remove_captors` the predators that
   caught it are removed as well (they disappear from the grid and from every observation and may
   only STAY). A predator adjacent to two prey counts for both.
4. Every remaining prey then moves to one of its free 4-neighbours (inside the grid, free of
   active predators and of live prey), uniformly at random, or rests with probability
   `prey_rest_prob` or when no neighbour is free; prey moving to the same cell are resolved as
   predators are.
5. The episode terminates when all prey are caught or all predators removed, and is truncated
   after `params.max_steps` steps.

Observation of a predator: `[2 r + 1, 2 r + 1, 3]` float32 window centred on it (`r =
obs_radius`, static) with channels active predators (itself included), live prey and outside-the-
grid; a removed predator observes zeros (as in DCG). The global state is the whole grid's
predator and prey channels, flattened, and `t / max_steps`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core import spaces
from marljax.core.types import Array, Environment, EnvParams, PRNGKey, TimeStep

STAY, UP, DOWN, LEFT, RIGHT, CATCH = range(6)
NUM_ACTIONS = 6
#: `[6, 2]` (row, col) displacement of each action.
MOVES = np.array([[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1], [0, 0]], np.int32)


@struct.dataclass
class PredatorPreyParams(EnvParams):
    """Traced parameters of `PredatorPrey`.

    Attributes:
      max_steps: time limit; the episode is truncated after this many steps (200 in DCG).
      capture_agents: `k`, adjacent predators that must play CATCH together (2 in DCG; must be
        in `1 .. min(4, A)`: a cell has 4 neighbours, so more makes capture impossible).
      capture_reward: team reward per caught prey (10 in DCG).
      punishment: team reward added per failed catch attempt, `p <= 0` in DCG's relative
        overgeneralisation experiments (0 disables it).
      step_reward: team reward added at every step (default 0).
      remove_captors: remove the predators that caught a prey (DCG: True).
      prey_rest_prob: probability that a prey stays instead of moving (default 0: a prey always
        moves when it can).
    """

    max_steps: int = 200
    capture_agents: Array = struct.field(default_factory=lambda: jnp.int32(2))
    capture_reward: Array = struct.field(default_factory=lambda: jnp.float32(10.0))
    punishment: Array = struct.field(default_factory=lambda: jnp.float32(0.0))
    step_reward: Array = struct.field(default_factory=lambda: jnp.float32(0.0))
    remove_captors: Array = struct.field(default_factory=lambda: jnp.bool_(True))
    prey_rest_prob: Array = struct.field(default_factory=lambda: jnp.float32(0.0))


@struct.dataclass
class PredatorPreyState:
    """State of a `PredatorPrey` episode."""

    pred_pos: Array  # [A, 2] int32 (row, col)
    pred_active: Array  # [A] bool, not removed
    prey_pos: Array  # [M, 2] int32 (row, col)
    prey_alive: Array  # [M] bool, not caught
    t: Array  # [] int32 steps taken in this episode


class PredatorPrey(Environment[PredatorPreyState, PredatorPreyParams]):
    """Predator-prey with joint catches (see the module docstring for the rules).

    Args:
      grid_size: `S` for an `S x S` grid, or `(H, W)` (static; DCG: 10).
      num_agents: number of predators `A` (static; DCG: 8).
      num_prey: number of prey `M` (static; DCG: 8).
      obs_radius: half-width `r` of the observation window (static; DCG: 2, a 5 x 5 window).

    Raises:
      ValueError: impossible settings (more predators plus prey than cells, a window radius
        outside `0 .. max(H, W)`).
    """

    def __init__(
        self,
        grid_size: int | tuple[int, int] = 10,
        num_agents: int = 8,
        num_prey: int = 8,
        obs_radius: int = 2,
    ):
        h, w = (grid_size, grid_size) if np.ndim(grid_size) == 0 else tuple(grid_size)
        self.height, self.width = int(h), int(w)
        self.num_agents = int(num_agents)
        self.num_prey = int(num_prey)
        self.obs_radius = int(obs_radius)
        cells = self.height * self.width
        if self.height < 2 or self.width < 2:
            raise ValueError(
                f"predator-prey grid must be at least 2x2, got {self.height}x{self.width}"
            )
        if self.num_agents < 1 or self.num_prey < 1:
            raise ValueError(
                f"predator-prey needs num_agents >= 1 and num_prey >= 1, got {num_agents}, {num_prey}"
            )
        if self.num_agents + self.num_prey > cells:
            raise ValueError(
                f"predator-prey: {self.num_agents} predators + {self.num_prey} prey do not fit on "
                f"a {self.height}x{self.width} grid ({cells} cells)"
            )
        if not 0 <= self.obs_radius <= max(self.height, self.width):
            raise ValueError(
                f"predator-prey obs_radius must be in 0 .. {max(self.height, self.width)} (the grid "
                f"size), got {obs_radius}"
            )

    @property
    def name(self) -> str:
        return "PredatorPrey"

    def __repr__(self) -> str:
        return (
            f"PredatorPrey({self.height}x{self.width}, num_agents={self.num_agents}, "
            f"num_prey={self.num_prey}, obs_radius={self.obs_radius})"
        )

    def default_params(self) -> PredatorPreyParams:
        return PredatorPreyParams()

    def validate_params(self, params: PredatorPreyParams) -> None:
        """Reject impossible params at `make` time (concrete values only).

        Raises:
          ValueError: naming the field: `capture_agents` outside `1 .. min(4, A)` (no prey could
            ever be caught), `prey_rest_prob` outside `[0, 1]`, or `max_steps < 1`.
        """
        k = np.asarray(params.capture_agents)
        most = min(4, self.num_agents)
        if (k < 1).any() or (k > most).any():
            raise ValueError(
                f"predator-prey capture_agents must be in 1 .. {most} (a prey has 4 neighbours "
                f"and there are {self.num_agents} predators), got {k.tolist()}: no prey could "
                "ever be caught"
            )
        rest = np.asarray(params.prey_rest_prob)
        if (rest < 0).any() or (rest > 1).any():
            raise ValueError(f"predator-prey prey_rest_prob must be in [0, 1], got {rest.tolist()}")
        if (np.asarray(params.max_steps) < 1).any():
            raise ValueError(f"predator-prey max_steps must be >= 1, got {params.max_steps}")

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        """Rewards, capture rules and prey behaviour that may vary (see `Environment.param_ranges`)."""
        return {
            "capture_agents": (1, min(4, self.num_agents)),
            "capture_reward": (0.0, 20.0),
            "punishment": (-5.0, 0.0),
            "step_reward": (-1.0, 0.0),
            "remove_captors": (0, 1),
            "prey_rest_prob": (0.0, 1.0),
        }

    def reset(self, key: PRNGKey, params: PredatorPreyParams) -> tuple[PredatorPreyState, TimeStep]:
        """Place predators and prey on distinct uniformly random cells."""
        A, M, W = self.num_agents, self.num_prey, self.width
        flat = jax.random.choice(key, self.height * W, (A + M,), replace=False)
        pos = jnp.stack([flat // W, flat % W], axis=-1).astype(jnp.int32)
        state = PredatorPreyState(
            pred_pos=pos[:A],
            pred_active=jnp.ones((A,), bool),
            prey_pos=pos[A:],
            prey_alive=jnp.ones((M,), bool),
            t=jnp.int32(0),
        )
        zeros = jnp.zeros((A,), jnp.float32)
        return state, self._timestep(state, params, zeros, jnp.bool_(False), jnp.bool_(False))

    # ------------------------------------------------------------------------------ step

    def step(
        self, key: PRNGKey, state: PredatorPreyState, actions: Array, params: PredatorPreyParams
    ) -> tuple[PredatorPreyState, TimeStep]:
        """One joint step with `actions [A]` (see the module docstring for the rules)."""
        A, M = self.num_agents, self.num_prey
        key_pred, key_prey, key_rest, key_prey_order = jax.random.split(key, 4)
        actions = jnp.clip(jnp.asarray(actions).astype(jnp.int32), 0, NUM_ACTIONS - 1)
        legal = self.action_mask(state)[jnp.arange(A), actions]
        actions = jnp.where(legal, actions, STAY)

        # Predators move; same-target conflicts go to a random winner.
        moving = (actions >= UP) & (actions <= RIGHT)
        target = state.pred_pos + jnp.asarray(MOVES)[actions]
        wins = _random_winners(key_pred, target, moving)
        pred_pos = jnp.where((moving & wins)[:, None], target, state.pred_pos)

        # Catches.
        catching = state.pred_active & (actions == CATCH)
        adj = _adjacent(pred_pos, state.prey_pos) & state.prey_alive[None]  # [A, M]
        tries = adj & catching[:, None]
        n = jnp.sum(tries, axis=0)  # [M]
        captured = state.prey_alive & (n >= params.capture_agents)
        missed = state.prey_alive & (n > 0) & ~captured
        team = (
            params.capture_reward * jnp.sum(captured)
            + params.punishment * jnp.sum(missed)
            + params.step_reward
        )
        captors = jnp.any(tries & captured[None], axis=1)
        pred_active = state.pred_active & ~(captors & params.remove_captors)
        prey_alive = state.prey_alive & ~captured

        # Prey move to a random free neighbour (or rest).
        H, W = self.height, self.width
        nb = state.prey_pos[:, None, :] + jnp.asarray(MOVES[UP : RIGHT + 1])[None]  # [M, 4, 2]
        inside = (nb[..., 0] >= 0) & (nb[..., 0] < H) & (nb[..., 1] >= 0) & (nb[..., 1] < W)
        occ_pred = _occupied(nb, pred_pos, pred_active)
        occ_prey = _occupied(nb, state.prey_pos, prey_alive)
        free = inside & ~occ_pred & ~occ_prey  # [M, 4]
        choice = jax.random.categorical(key_prey, jnp.where(free, 0.0, -jnp.inf), axis=-1)
        rest = jax.random.uniform(key_rest, (M,)) < params.prey_rest_prob
        prey_moving = prey_alive & jnp.any(free, axis=-1) & ~rest
        prey_target = jnp.take_along_axis(nb, choice[:, None, None], axis=1)[:, 0]
        prey_wins = _random_winners(key_prey_order, prey_target, prey_moving)
        prey_pos = jnp.where((prey_moving & prey_wins)[:, None], prey_target, state.prey_pos)

        t = state.t + 1
        terminated = ~jnp.any(prey_alive) | ~jnp.any(pred_active)
        truncated = (t >= params.max_steps) & ~terminated
        state = PredatorPreyState(pred_pos, pred_active, prey_pos, prey_alive, t)
        reward = jnp.broadcast_to(team, (A,)).astype(jnp.float32)
        return state, self._timestep(state, params, reward, terminated, truncated)

    def action_mask(self, state: PredatorPreyState) -> Array:
        """`[A, 6]` bool legal actions (see the module docstring).

        Args:
          state: the current state.

        Returns:
          `[A, 6]` bool: STAY always; a move into an in-grid cell free of active predators and
          live prey; CATCH next to a live prey; removed predators only STAY.
        """
        target = state.pred_pos[:, None, :] + jnp.asarray(MOVES)[None]  # [A, 6, 2]
        inside = (
            (target[..., 0] >= 0)
            & (target[..., 0] < self.height)
            & (target[..., 1] >= 0)
            & (target[..., 1] < self.width)
        )
        blocked = _occupied(target, state.pred_pos, state.pred_active) | _occupied(
            target, state.prey_pos, state.prey_alive
        )
        catch = jnp.any(_adjacent(state.pred_pos, state.prey_pos) & state.prey_alive[None], axis=1)
        mask = (inside & ~blocked).at[:, STAY].set(True).at[:, CATCH].set(catch)
        stay_only = jnp.zeros((NUM_ACTIONS,), bool).at[STAY].set(True)
        return jnp.where(state.pred_active[:, None], mask, stay_only[None])

    # ------------------------------------------------------------------------------ observations

    def grid_layers(self, state: PredatorPreyState) -> Array:
        """`[H + 2 r, W + 2 r, 3]` float32 predator, prey and outside-the-grid layers, padded.

        Args:
          state: the current state.

        Returns:
          The padded grid (`r = obs_radius`), channels active predators, live prey, outside.
        """
        r = self.obs_radius
        shape = (self.height + 2 * r, self.width + 2 * r)
        p, q = state.pred_pos + r, state.prey_pos + r
        pred = jnp.zeros(shape, bool).at[p[:, 0], p[:, 1]].max(state.pred_active)
        prey = jnp.zeros(shape, bool).at[q[:, 0], q[:, 1]].max(state.prey_alive)
        outside = jnp.ones(shape, bool).at[r : r + self.height, r : r + self.width].set(False)
        return jnp.stack([pred, prey, outside], axis=-1).astype(jnp.float32)

    def observations(self, state: PredatorPreyState) -> Array:
        """`[A, 2 r + 1, 2 r + 1, 3]` float32 egocentric windows (zeros for removed predators).

        Args:
          state: the current state.

        Returns:
          Each predator's window of `grid_layers`, centred on it.
        """
        layers = self.grid_layers(state)
        size = 2 * self.obs_radius + 1

        def window(p):
            return jax.lax.dynamic_slice(layers, (p[0], p[1], 0), (size, size, 3))

        obs = jax.vmap(window)(state.pred_pos)
        return jnp.where(state.pred_active[:, None, None, None], obs, 0.0)

    def _timestep(self, state, params, reward, terminated, truncated) -> TimeStep:
        r = self.obs_radius
        core = self.grid_layers(state)[r : r + self.height, r : r + self.width, :2]
        frac = jnp.minimum(state.t / jnp.maximum(params.max_steps, 1), 1.0).astype(jnp.float32)
        return TimeStep(
            obs=self.observations(state),
            reward=reward,
            terminated=jnp.asarray(terminated, jnp.bool_),
            truncated=jnp.asarray(truncated, jnp.bool_),
            action_mask=self.action_mask(state),
            global_state=jnp.concatenate([core.reshape(-1), frac[None]]),
            extras={},
        )

    def observation_space(self, params: PredatorPreyParams) -> spaces.Box:
        size = 2 * self.obs_radius + 1
        return spaces.Box(0.0, 1.0, (size, size, 3), jnp.float32)

    def action_space(self, params: PredatorPreyParams) -> spaces.Discrete:
        return spaces.Discrete(NUM_ACTIONS)

    def global_state_space(self, params: PredatorPreyParams) -> spaces.Box:
        return spaces.Box(0.0, 1.0, (2 * self.height * self.width + 1,), jnp.float32)


def _adjacent(a: Array, b: Array) -> Array:
    """`[P, Q]` bool: positions `a [P, 2]` and `b [Q, 2]` are 4-neighbours."""
    return jnp.abs(a[:, None, :] - b[None, :, :]).sum(-1) == 1


def _occupied(cells: Array, pos: Array, present: Array) -> Array:
    """`cells [..., 2]` -> `[...]` bool: some present entity of `pos [K, 2]` is on the cell."""
    hit = jnp.all(cells[..., None, :] == pos, axis=-1) & present
    return jnp.any(hit, axis=-1)


def _random_winners(key: PRNGKey, target: Array, moving: Array) -> Array:
    """`[K]` bool: among movers with the same `target [K, 2]`, one uniformly random winner."""
    priority = jax.random.permutation(key, target.shape[0])
    same = jnp.all(target[:, None] == target[None], axis=-1) & moving[:, None] & moving[None]
    beaten = same & (priority[None, :] > priority[:, None])
    return ~jnp.any(beaten, axis=1)


def make_predator_prey(
    grid_size: int | tuple[int, int] = 10,
    num_agents: int = 8,
    num_prey: int = 8,
    obs_radius: int = 2,
) -> PredatorPrey:
    """Build a `PredatorPrey` env (the registry's entry point; see the class for args)."""
    return PredatorPrey(grid_size, num_agents, num_prey, obs_radius)


__all__ = [
    "MOVES",
    "PredatorPrey",
    "PredatorPreyParams",
    "PredatorPreyState",
    "make_predator_prey",
]
