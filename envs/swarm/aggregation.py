"""Aggregation: agents on a torus gather into one group without colliding.

A swarm-robotics aggregation task in the spirit of the aggregation task of K. Cui, S. Hauck,
C. Fabian and H. Koeppl, "Learning Decentralized Partially Observable Mean Field Control for
Artificial Collective Behavior", ICLR 2024 (Dec-POMFC): agents are rewarded for closeness to the
swarm and penalised for collisions.

- `A` agents at positions `x_i`, uniform on the torus `[0, L)^2` at reset.
- Action: a move. Discrete (default): `Discrete(5)`, `0 stay, 1 -x, 2 +x, 3 -y, 4 +y`, of length
  `speed`. Continuous (`continuous=True`): `Box(-1, 1, (2,))`, displacement
  `clip(a, -1, 1) * speed` per axis.
- Dynamics: `x_i <- x_i + move_i + noise xi_i` modulo `L`, `xi_i ~ N(0, I_2)`.
- The swarm's centre on the torus is its circular mean per axis,
  `c = (L / 2 pi) arg((1/A) sum_j exp(2 pi i x_j / L))` (per coordinate), and its **cohesion**
  the mean over the two axes of `|(1/A) sum_j exp(2 pi i x_j / L)|`: 1 when all agents are at
  one point, about 0 for a uniform swarm (the order parameter of aggregation).
- Reward of agent `i`: `-attraction d_i / L - collision_penalty c_i`, where `d_i` is the torus
  distance from `x_i` to the centre and `c_i` the number of other agents closer than
  `collision_radius` (`<= radius`).
- Observation of agent `i` (`[B + 4]`, `B = bearing_bins`): the fractions of its neighbours
  (within `radius`) in each of `B` bearing sectors (sector 0 centred on `+x`), the mean offset
  to its neighbours divided by `radius` (2 values, 0 without neighbours), `log(1 + n_i)` and its
  number of collisions `c_i`.
- Metrics: `swarm/cohesion` and `swarm/collisions` (mean collisions per agent), episode means
  and `_final` values.
- Global state: the mean field of positions (`b x b` grid).
- Never terminates; truncated after `max_steps`.

Neighbour tables and aggregation: a swarm that aggregates packs many agents into few hash cells.
With the spatial hash (large `A`), give `cell_capacity` room for the packing you allow (about
`(cell side / collision_radius)^2` agents fit in a cell without colliding) and watch
`swarm/neighbour_overflow`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from marljax.core import spaces
from marljax.core.types import Array, PRNGKey
from marljax.envs.swarm.base import (
    TWO_PI,
    SwarmEnv,
    SwarmParams,
    SwarmState,
    max_radius,
    neighbour_histogram,
    torus_move,
    uniform_positions,
)
from marljax.envs.swarm.neighbours import Neighbours, wrap

#: discrete moves, in MPE's order.
STAY, MINUS_X, PLUS_X, MINUS_Y, PLUS_Y = range(5)
NUM_MOVES = 5


@struct.dataclass
class AggregationParams(SwarmParams):
    """Traced parameters of `Aggregation` (and those of `SwarmParams`: size, radius, ...).

    Attributes:
      speed: length of a move per step (`>= 0`).
      noise: standard deviation of the Gaussian position noise per step and axis (`>= 0`).
      collision_radius: agents closer than this collide (`>= 0`, `<= radius`).
      collision_penalty: reward lost per collision (`>= 0`).
      attraction: weight of the distance to the swarm's centre (in units of `L`; `>= 0`).
    """

    speed: Array = struct.field(default_factory=lambda: jnp.float32(0.2))
    noise: Array = struct.field(default_factory=lambda: jnp.float32(0.02))
    collision_radius: Array = struct.field(default_factory=lambda: jnp.float32(0.1))
    collision_penalty: Array = struct.field(default_factory=lambda: jnp.float32(1.0))
    attraction: Array = struct.field(default_factory=lambda: jnp.float32(1.0))


@struct.dataclass
class AggregationState(SwarmState):
    """State of `Aggregation`: the fields of `SwarmState` (`pos`, `t`, `metric_sum`, `overflow`)."""


def circular_centre(pos: Array, size: Array) -> tuple[Array, Array]:
    """The swarm's centre on the torus and its cohesion.

    Args:
      pos: `[A, 2]` positions.
      size: `[]` torus side `L`.

    Returns:
      `(centre [2], cohesion [])`: the per-axis circular mean position in `[0, L)`, and the
      mean over the axes of the resultant length `|mean_j exp(2 pi i x_j / L)|` in `[0, 1]`.
    """
    a = pos * (TWO_PI / size)  # [A, 2]
    c, s = jnp.mean(jnp.cos(a), axis=0), jnp.mean(jnp.sin(a), axis=0)  # [2]
    centre = jnp.mod(jnp.arctan2(s, c), TWO_PI) * (size / TWO_PI)
    return centre, jnp.mean(jnp.hypot(c, s))


class Aggregation(SwarmEnv):
    """Aggregation task; see the module docstring for the rules.

    Args:
      num_agents: `A` (static, `>= 1`; default 16).
      continuous: continuous moves `Box(-1, 1, (2,))` instead of `Discrete(5)` (static).
      bearing_bins: sectors of the neighbour-bearing histogram in the observation (static,
        `>= 1`).
      cells_per_side, cell_capacity, brute_force_threshold, mean_field, position_bins,
      angle_bins, check_overflow: as for `Vicsek` (neighbour search and global state;
      `angle_bins` is unused).

    Raises:
      ValueError: bad static arguments.
    """

    params_type = AggregationParams
    metric_names = ("cohesion", "collisions")
    default_density = 1.0
    has_angles = False

    def __init__(
        self,
        num_agents: int = 16,
        continuous: bool = False,
        bearing_bins: int = 8,
        cells_per_side: int | None = None,
        cell_capacity: int = 32,
        brute_force_threshold: int = 256,
        mean_field: str = "histogram",
        position_bins: int = 8,
        angle_bins: int = 16,
        check_overflow: bool = False,
    ):
        if int(bearing_bins) < 1:
            raise ValueError(f"Aggregation needs bearing_bins >= 1, got {bearing_bins}")
        self.bearing_bins = int(bearing_bins)
        self._setup(
            num_agents,
            continuous,
            self.bearing_bins + 4,
            cells_per_side,
            cell_capacity,
            brute_force_threshold,
            mean_field,
            position_bins,
            angle_bins,
            check_overflow,
        )

    def action_space(self, params) -> spaces.Space:
        if self.continuous:
            return spaces.Box(-1.0, 1.0, (2,), jnp.float32)
        return spaces.Discrete(NUM_MOVES)

    def moves(self, actions: Array, params: AggregationParams) -> tuple[Array, Array]:
        """`(dx [A], dy [A])` float32 displacements of joint actions (`[A]` int or `[A, 2]`)."""
        if self.continuous:
            a = jnp.clip(jnp.asarray(actions, jnp.float32).reshape(self.num_agents, 2), -1, 1)
            return a[:, 0] * params.speed, a[:, 1] * params.speed
        a = jnp.clip(jnp.asarray(actions).astype(jnp.int32), 0, NUM_MOVES - 1)
        ux = (a == PLUS_X).astype(jnp.float32) - (a == MINUS_X).astype(jnp.float32)
        uy = (a == PLUS_Y).astype(jnp.float32) - (a == MINUS_Y).astype(jnp.float32)
        return ux * params.speed, uy * params.speed

    def _init(self, key: PRNGKey, params: AggregationParams) -> AggregationState:
        return AggregationState(
            **self._base_state(uniform_positions(key, self.num_agents, params.size))
        )

    def _move(self, key, state, actions, params: AggregationParams) -> AggregationState:
        dx, dy = self.moves(actions, params)
        xi = jax.random.normal(key, (self.num_agents, 2), jnp.float32) * params.noise
        return state.replace(pos=torus_move(state.pos, dx + xi[:, 0], dy + xi[:, 1], params.size))

    def _outputs(self, state: AggregationState, nb: Neighbours, params: AggregationParams):
        m = nb.mask.astype(jnp.float32)
        count = jnp.sum(m, axis=-1)
        n = jnp.maximum(count, 1.0)
        collide = nb.mask & (nb.dx * nb.dx + nb.dy * nb.dy < jnp.square(params.collision_radius))
        collisions = jnp.sum(collide, axis=-1).astype(jnp.float32)  # [A]
        obs = jnp.concatenate(
            [
                neighbour_histogram(nb.dx, nb.dy, nb.mask, self.bearing_bins),
                jnp.stack(
                    [
                        jnp.sum(m * nb.dx, axis=-1) / n / params.radius,
                        jnp.sum(m * nb.dy, axis=-1) / n / params.radius,
                        jnp.log1p(count),
                        collisions,
                    ],
                    axis=-1,
                ),
            ],
            axis=-1,
        )
        centre, cohesion = circular_centre(state.pos, params.size)
        d = wrap(state.pos - centre[None, :], params.size)  # [A, 2]
        dist = jnp.sqrt(jnp.sum(d * d, axis=-1))
        reward = -params.attraction * dist / params.size - params.collision_penalty * collisions
        orders = {"cohesion": cohesion, "collisions": jnp.mean(collisions)}
        return state, obs, reward, orders

    _LIMITS = {
        **SwarmEnv._LIMITS,
        "speed": (0.0, None, True),
        "noise": (0.0, None, True),
        "collision_radius": (0.0, None, True),
        "collision_penalty": (0.0, None, True),
        "attraction": (0.0, None, True),
    }

    def validate_params(self, params: AggregationParams) -> None:
        """As `SwarmEnv.validate_params`, and `collision_radius <= radius` (collisions are
        found among the neighbours)."""
        super().validate_params(params)
        cr, r = jnp.asarray(params.collision_radius), jnp.asarray(params.radius)
        if bool(jnp.any(cr > r)):
            raise ValueError(
                f"{self.name}: collision_radius {cr.tolist()} must be <= radius {r.tolist()} "
                "(collisions are found among the neighbours within radius)"
            )

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        """Ranges that keep every setting valid (see `Environment.param_ranges`)."""
        L = self.default_size()
        return {
            "speed": (0.0, 0.5),
            "noise": (0.0, 0.2),
            "collision_radius": (0.0, 0.05),
            "collision_penalty": (0.0, 2.0),
            "attraction": (0.0, 2.0),
            "size": (L, 2.0 * L),
            "radius": (0.05, max_radius(self, L)),
            "mf_bandwidth": (0.25, 4.0),
        }


__all__ = [
    "Aggregation",
    "AggregationParams",
    "AggregationState",
    "NUM_MOVES",
    "circular_centre",
]
