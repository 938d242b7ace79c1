"""Vicsek flocking as a cooperative multi-agent control task: agents steer to align their headings.

Self-propelled particles of T. Vicsek, A. Czirok, E. Ben-Jacob, I. Cohen and O. Shochet, "Novel
Type of Phase Transition in a System of Self-Driven Particles", Phys. Rev. Lett. 75, 1995, as a
control task in the spirit of the Vicsek task of K. Cui, S. Hauck, C. Fabian and H. Koeppl,
"Learning Decentralized Partially Observable Mean Field Control for Artificial Collective
Behavior", ICLR 2024 (Dec-POMFC). In Vicsek's model every particle takes its neighbours' mean
heading; here each agent chooses its own turn from a local observation, and is rewarded for the
alignment of the swarm.

- `A` agents on the torus `[0, L)^2` with positions `x_i` and headings `theta_i`, uniform at reset.
- Action: a turn `u_i`. Discrete (default): `Discrete(n)` turns `linspace(-max_turn, max_turn, n)`
  (`n = num_turns`, static, default 5: hard left, left, straight, right, hard right for
  `max_turn = pi/4`; with odd `n` the middle action goes straight). Continuous
  (`continuous=True`): `Box(-1, 1, (1,))`, turn `clip(a, -1, 1) * max_turn`.
- Dynamics (one step, unit time): `theta_i <- theta_i + u_i + eta xi_i`, `xi_i ~ U(-1/2, 1/2)`
  (Vicsek's uniform angular noise of width `eta = noise`), then
  `x_i <- x_i + speed (cos theta_i, sin theta_i)` modulo `L`.
- Observation of agent `i` (`[H + B + 1]`, `H = heading_bins`, `B = bearing_bins`): the
  fractions of its neighbours (within `radius`, through the wrap) whose relative heading
  `theta_j - theta_i` falls in each of `H` arcs (arc 0 centred on "aligned"), the fractions
  whose relative bearing `atan2(y_j - y_i, x_j - x_i) - theta_i` falls in each of `B` arcs
  (arc 0 centred on "straight ahead"; `bearing_bins = 0` leaves them out), and
  `log(1 + n_i)`, `n_i` its number of neighbours. Histograms are zeros without neighbours.
- Reward of agent `i`: `(1 - local_ratio) P + local_ratio p_i`, with the polarisation order
  parameter `P = |(1/A) sum_j exp(i theta_j)|` (global, default) and the local polarisation
  `p_i` of `i` and its neighbours.
- Metrics: `swarm/polarisation` (episode mean of `P`) and `swarm/polarisation_final`.
- Global state: the mean field of positions (`b x b` grid) and headings (`K` arcs), as a
  histogram or kernel embedding (`mean_field`).
- Never terminates; truncated after `max_steps`.
"""

from __future__ import annotations

import math

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
    local_order,
    max_radius,
    neighbour_histogram,
    polarisation,
    relative_angle,
    torus_move,
    uniform_positions,
)
from marljax.envs.swarm.neighbours import Neighbours, periodic


@struct.dataclass
class VicsekParams(SwarmParams):
    """Traced parameters of `Vicsek` (and those of `SwarmParams`: size, radius, ...).

    Attributes:
      speed: distance travelled per step (`>= 0`; Vicsek et al.: 0.03 with `r = 1`).
      noise: width `eta` of the uniform angular noise, radians (`>= 0`, finite).
      max_turn: largest turn per step, radians (`>= 0`).
      local_ratio: weight of the local polarisation in the reward, in `[0, 1]`.
    """

    speed: Array = struct.field(default_factory=lambda: jnp.float32(0.1))
    noise: Array = struct.field(default_factory=lambda: jnp.float32(0.2))
    max_turn: Array = struct.field(default_factory=lambda: jnp.float32(math.pi / 4))
    local_ratio: Array = struct.field(default_factory=lambda: jnp.float32(0.0))


@struct.dataclass
class VicsekState(SwarmState):
    """State of `Vicsek` (plus `pos`, `t`, `metric_sum`, `overflow` of `SwarmState`)."""

    heading: Array  # [A] float32 headings in [0, 2 pi)


class Vicsek(SwarmEnv):
    """Vicsek flocking control task; see the module docstring for the rules.

    Args:
      num_agents: `A` (static, `>= 1`; default 16).
      num_turns: number of discrete turn actions (static, `>= 2`).
      continuous: continuous turn actions `Box(-1, 1, (1,))` instead (static).
      heading_bins: arcs of the relative-heading histogram in the observation (static, `>= 1`).
      bearing_bins: arcs of the relative-bearing histogram (static, `>= 0`; 0: none).
      cells_per_side: spatial-hash grid `G` (static; default `floor(L / r)` of the default
        params); the radius may not exceed `L / G`.
      cell_capacity: agents per hash cell (static); beyond it agents are dropped from neighbour
        lists and counted in `swarm/neighbour_overflow`.
      brute_force_threshold: use exact `O(A^2)` neighbours up to this many agents (static).
      mean_field: `"histogram"` or `"kernel"` global state (static).
      position_bins: `b`, mean-field grid cells per side (static).
      angle_bins: `K`, mean-field heading arcs (static).
      check_overflow: raise when a neighbour query overflows (static, debugging).

    Raises:
      ValueError: bad static arguments (zero agents, `num_turns < 2`, ...).
    """

    params_type = VicsekParams
    metric_names = ("polarisation",)
    default_density = 2.0
    has_angles = True

    def __init__(
        self,
        num_agents: int = 16,
        num_turns: int = 5,
        continuous: bool = False,
        heading_bins: int = 8,
        bearing_bins: int = 8,
        cells_per_side: int | None = None,
        cell_capacity: int = 16,
        brute_force_threshold: int = 256,
        mean_field: str = "histogram",
        position_bins: int = 8,
        angle_bins: int = 16,
        check_overflow: bool = False,
    ):
        if int(num_turns) < 2:
            raise ValueError(f"Vicsek needs num_turns >= 2, got {num_turns}")
        if int(heading_bins) < 1 or int(bearing_bins) < 0:
            raise ValueError(
                f"Vicsek needs heading_bins >= 1 and bearing_bins >= 0, got {heading_bins}, "
                f"{bearing_bins}"
            )
        self.num_turns = int(num_turns)
        self.heading_bins = int(heading_bins)
        self.bearing_bins = int(bearing_bins)
        self._setup(
            num_agents,
            continuous,
            self.heading_bins + self.bearing_bins + 1,
            cells_per_side,
            cell_capacity,
            brute_force_threshold,
            mean_field,
            position_bins,
            angle_bins,
            check_overflow,
        )

    def action_space(self, params) -> spaces.Space:
        return self._scalar_action_space(self.num_turns)

    def turns(self, actions: Array, params: VicsekParams) -> Array:
        """`[A]` float32 turn angles of joint `actions` (`[A]` int or `[A, 1]` float)."""
        return self._action_fraction(actions, self.num_turns) * params.max_turn

    def _init(self, key: PRNGKey, params: VicsekParams) -> VicsekState:
        key_pos, key_head = jax.random.split(key)
        pos = uniform_positions(key_pos, self.num_agents, params.size)
        heading = jax.random.uniform(key_head, (self.num_agents,), jnp.float32) * TWO_PI
        return VicsekState(**self._base_state(pos), heading=heading)

    def _move(self, key, state: VicsekState, actions, params: VicsekParams) -> VicsekState:
        xi = jax.random.uniform(key, (self.num_agents,), jnp.float32, -0.5, 0.5)
        heading = periodic(state.heading + self.turns(actions, params) + params.noise * xi, TWO_PI)
        pos = torus_move(
            state.pos,
            params.speed * jnp.cos(heading),
            params.speed * jnp.sin(heading),
            params.size,
        )
        return state.replace(pos=pos, heading=heading)

    def _outputs(self, state: VicsekState, nb: Neighbours, params: VicsekParams):
        theta = state.heading
        c, s = jnp.cos(theta), jnp.sin(theta)
        u, v = relative_angle(nb, c, s)  # [A, M] cos, sin of theta_j - theta_i
        parts = [neighbour_histogram(u, v, nb.mask, self.heading_bins)]
        if self.bearing_bins:
            # The offset to each neighbour in the agent's frame (x along its heading).
            ci, si = c[:, None], s[:, None]
            fwd, left = nb.dx * ci + nb.dy * si, nb.dy * ci - nb.dx * si
            parts.append(neighbour_histogram(fwd, left, nb.mask, self.bearing_bins))
        parts.append(jnp.log1p(nb.count.astype(jnp.float32))[:, None])
        obs = jnp.concatenate(parts, axis=-1)
        P = polarisation(theta)
        reward = (1.0 - params.local_ratio) * P + params.local_ratio * local_order(theta, nb)
        return state, obs, reward, {"polarisation": P}

    def _angles(self, state: VicsekState) -> Array:
        return state.heading

    _LIMITS = {
        **SwarmEnv._LIMITS,
        "speed": (0.0, None, True),
        "noise": (0.0, None, True),
        "max_turn": (0.0, None, True),
        "local_ratio": (0.0, 1.0, True),
    }

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        """Ranges that keep every setting valid (see `Environment.param_ranges`)."""
        L = self.default_size()
        return {
            "speed": (0.0, 0.5),
            "noise": (0.0, TWO_PI),
            "max_turn": (0.0, math.pi),
            "local_ratio": (0.0, 1.0),
            "size": (L, 2.0 * L),
            "radius": (0.05, max_radius(self, L)),
            "mf_bandwidth": (0.25, 4.0),
        }


__all__ = ["Vicsek", "VicsekParams", "VicsekState"]
