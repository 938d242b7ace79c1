"""Kuramoto oscillators as a cooperative control task: agents nudge their frequencies to synchronise.

Coupled phase oscillators of Y. Kuramoto, "Self-entrainment of a population of coupled
non-linear oscillators", International Symposium on Mathematical Problems in Theoretical Physics,
1975, and "Chemical Oscillations, Waves, and Turbulence", Springer, 1984, with local (spatial)
coupling and controlled frequencies, in the spirit of the Kuramoto task of K. Cui, S. Hauck,
C. Fabian and H. Koeppl, "Learning Decentralized Partially Observable Mean Field Control for
Artificial Collective Behavior", ICLR 2024 (Dec-POMFC).

- `A` oscillators with phases `theta_i` (uniform at reset), natural frequencies
  `omega_i ~ Normal(omega_mean, omega_std)` (drawn at reset, fixed for the episode) and fixed
  positions `x_i`, uniform on the torus `[0, L)^2` at reset; `N_i` are the oscillators within
  `radius` of `x_i` (through the wrap).
- Action: a frequency offset `u_i`. Discrete (default): `Discrete(n)` offsets
  `linspace(-max_offset, max_offset, n)` (`n = num_offsets`, static, default 5; with odd `n`
  the middle action is no offset). Continuous (`continuous=True`): `Box(-1, 1, (1,))`, offset
  `clip(a, -1, 1) * max_offset`.
- Dynamics (Euler-Maruyama step of length `dt`):
  `theta_i <- theta_i + dt (omega_i + u_i + coupling * f_i) + noise sqrt(dt) xi_i`,
  `xi_i ~ N(0, 1)`, with the local Kuramoto field `f_i = (1 / n_i) sum_{j in N_i}
  sin(theta_j - theta_i)` (0 without neighbours) of the phases before the step.
- Observation of agent `i` (`[K + 4]`, `K = phase_bins`): the fractions of its neighbours whose
  relative phase `theta_j - theta_i` falls in each of `K` arcs (arc 0 centred on "in phase"),
  the mean `cos` and `sin` of the relative phases of its neighbours (0 without neighbours), its
  own frequency deviation `omega_i - omega_mean`, and `log(1 + n_i)`.
- Reward of agent `i`: `(1 - local_ratio) R + local_ratio r_i`, with Kuramoto's order parameter
  `R = |(1/A) sum_j exp(i theta_j)|` (global, default) and the local order `r_i` of `i` and its
  neighbours.
- Metrics: `swarm/synchronisation` (episode mean of `R`) and `swarm/synchronisation_final`.
- Global state: the mean field of positions (`b x b` grid) and phases (`K` arcs).
- Never terminates; truncated after `max_steps`.
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
    local_order,
    max_radius,
    neighbour_histogram,
    polarisation,
    relative_angle,
    uniform_positions,
)
from marljax.envs.swarm.neighbours import Neighbours, periodic


@struct.dataclass
class KuramotoParams(SwarmParams):
    """Traced parameters of `Kuramoto` (and those of `SwarmParams`: size, radius, ...).

    Attributes:
      dt: integration time step (`> 0`).
      omega_mean: mean of the natural frequencies (rad per unit time).
      omega_std: standard deviation of the natural frequencies (`>= 0`).
      coupling: Kuramoto coupling strength `K` (`>= 0`; 0: agents must synchronise by acting).
      noise: phase diffusion, standard deviation per unit sqrt-time (`>= 0`, finite).
      max_offset: largest frequency offset an action applies (`>= 0`).
      local_ratio: weight of the local order parameter in the reward, in `[0, 1]`.
    """

    dt: Array = struct.field(default_factory=lambda: jnp.float32(0.1))
    omega_mean: Array = struct.field(default_factory=lambda: jnp.float32(1.0))
    omega_std: Array = struct.field(default_factory=lambda: jnp.float32(0.5))
    coupling: Array = struct.field(default_factory=lambda: jnp.float32(0.5))
    noise: Array = struct.field(default_factory=lambda: jnp.float32(0.1))
    max_offset: Array = struct.field(default_factory=lambda: jnp.float32(1.0))
    local_ratio: Array = struct.field(default_factory=lambda: jnp.float32(0.0))


@struct.dataclass
class KuramotoState(SwarmState):
    """State of `Kuramoto` (plus `pos`, `t`, `metric_sum`, `overflow` of `SwarmState`)."""

    phase: Array  # [A] float32 phases in [0, 2 pi)
    omega: Array  # [A] float32 natural frequencies
    field: Array  # [A] float32 local field f_i = mean_{j in N_i} sin(theta_j - theta_i)


class Kuramoto(SwarmEnv):
    """Kuramoto synchronisation control task; see the module docstring for the rules.

    Args:
      num_agents: `A` (static, `>= 1`; default 16).
      num_offsets: number of discrete frequency-offset actions (static, `>= 2`).
      continuous: continuous offsets `Box(-1, 1, (1,))` instead (static).
      phase_bins: arcs of the relative-phase histogram in the observation (static, `>= 1`).
      cells_per_side, cell_capacity, brute_force_threshold, mean_field, position_bins,
      angle_bins, check_overflow: as for `Vicsek` (neighbour search and global state).

    Raises:
      ValueError: bad static arguments.
    """

    params_type = KuramotoParams
    metric_names = ("synchronisation",)
    default_density = 2.0
    has_angles = True

    def __init__(
        self,
        num_agents: int = 16,
        num_offsets: int = 5,
        continuous: bool = False,
        phase_bins: int = 8,
        cells_per_side: int | None = None,
        cell_capacity: int = 16,
        brute_force_threshold: int = 256,
        mean_field: str = "histogram",
        position_bins: int = 8,
        angle_bins: int = 16,
        check_overflow: bool = False,
    ):
        if int(num_offsets) < 2:
            raise ValueError(f"Kuramoto needs num_offsets >= 2, got {num_offsets}")
        if int(phase_bins) < 1:
            raise ValueError(f"Kuramoto needs phase_bins >= 1, got {phase_bins}")
        self.num_offsets = int(num_offsets)
        self.phase_bins = int(phase_bins)
        self._setup(
            num_agents,
            continuous,
            self.phase_bins + 4,
            cells_per_side,
            cell_capacity,
            brute_force_threshold,
            mean_field,
            position_bins,
            angle_bins,
            check_overflow,
        )

    def action_space(self, params) -> spaces.Space:
        return self._scalar_action_space(self.num_offsets)

    def offsets(self, actions: Array, params: KuramotoParams) -> Array:
        """`[A]` float32 frequency offsets of joint `actions` (`[A]` int or `[A, 1]` float)."""
        return self._action_fraction(actions, self.num_offsets) * params.max_offset

    def _init(self, key: PRNGKey, params: KuramotoParams) -> KuramotoState:
        key_pos, key_phase, key_omega = jax.random.split(key, 3)
        A = self.num_agents
        pos = uniform_positions(key_pos, A, params.size)
        phase = jax.random.uniform(key_phase, (A,), jnp.float32) * TWO_PI
        omega = params.omega_mean + params.omega_std * jax.random.normal(key_omega, (A,))
        return KuramotoState(
            **self._base_state(pos),
            phase=phase,
            omega=omega.astype(jnp.float32),
            field=jnp.zeros((A,), jnp.float32),  # set by _outputs before the first step
        )

    def _move(self, key, state: KuramotoState, actions, params: KuramotoParams) -> KuramotoState:
        xi = jax.random.normal(key, (self.num_agents,), jnp.float32)
        velocity = state.omega + self.offsets(actions, params) + params.coupling * state.field
        phase = state.phase + params.dt * velocity + params.noise * jnp.sqrt(params.dt) * xi
        return state.replace(phase=periodic(phase, TWO_PI))

    def _outputs(self, state: KuramotoState, nb: Neighbours, params: KuramotoParams):
        theta = state.phase
        u, v = relative_angle(nb, jnp.cos(theta), jnp.sin(theta))  # [A, M] of theta_j - theta_i
        m = nb.mask.astype(jnp.float32)
        n = jnp.maximum(jnp.sum(m, axis=-1), 1.0)
        mean_cos = jnp.sum(m * u, axis=-1) / n
        mean_sin = jnp.sum(m * v, axis=-1) / n
        obs = jnp.concatenate(
            [
                neighbour_histogram(u, v, nb.mask, self.phase_bins),
                jnp.stack(
                    [
                        mean_cos,
                        mean_sin,
                        state.omega - params.omega_mean,
                        jnp.log1p(nb.count.astype(jnp.float32)),
                    ],
                    axis=-1,
                ),
            ],
            axis=-1,
        )
        R = polarisation(theta)
        reward = (1.0 - params.local_ratio) * R + params.local_ratio * local_order(theta, nb)
        return state.replace(field=mean_sin), obs, reward, {"synchronisation": R}

    def _angles(self, state: KuramotoState) -> Array:
        return state.phase

    _LIMITS = {
        **SwarmEnv._LIMITS,
        "dt": (0.0, None, False),
        "omega_mean": (None, None, True),
        "omega_std": (0.0, None, True),
        "coupling": (0.0, None, True),
        "noise": (0.0, None, True),
        "max_offset": (0.0, None, True),
        "local_ratio": (0.0, 1.0, True),
    }

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        """Ranges that keep every setting valid (see `Environment.param_ranges`)."""
        L = self.default_size()
        return {
            "dt": (0.01, 0.5),
            "omega_mean": (-2.0, 2.0),
            "omega_std": (0.0, 2.0),
            "coupling": (0.0, 5.0),
            "noise": (0.0, 1.0),
            "max_offset": (0.0, 2.0),
            "local_ratio": (0.0, 1.0),
            "size": (L, 2.0 * L),
            "radius": (0.05, max_radius(self, L)),
            "mf_bandwidth": (0.25, 4.0),
        }


__all__ = ["Kuramoto", "KuramotoParams", "KuramotoState"]
