"""The particle world shared by the MPE tasks: state, physics, action decoding and a base env.

The Multi-Agent Particle Environment (MPE) of R. Lowe, Y. Wu, A. Tamar, J. Harb, P. Abbeel and
I. Mordatch, "Multi-Agent Actor-Critic for Mixed Cooperative-Competitive Environments", NeurIPS
2017, as maintained in PettingZoo (`pettingzoo.mpe`, now the `mpe2` package) and re-implemented
in JAX by JaxMARL 0.2.0 (`jaxmarl.environments.mpe`). This module follows JaxMARL 0.2.0's
physics, vectorised over agents with the agents as a leading axis.

One physics step of length `dt` (all agents at once; landmarks never move):

1. Action force `u_i = accel_i * direction_i` (see `decode_discrete` / `decode_continuous`).
2. Contact force between every pair of colliding entities `i != j` at distance `d_ij` with
   radii `r_i, r_j`: `f_ij = contact_force * (p_i - p_j) / d_ij * k * softplus((r_i + r_j -
   d_ij) / k)`, `k = contact_margin` (a smoothed penetration depth). Agent `i` feels
   `u_i + sum_j f_ij`.
3. Integration (JaxMARL's order): `p <- p + v dt`, then `v <- v (1 - damping) + F / m dt`, then
   `v` is rescaled to `max_speed` when it is faster. PettingZoo's MPE updates the position with
   the NEW velocity instead (semi-implicit Euler); JaxMARL's explicit order is kept here for
   parity with it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core import spaces
from marljax.core.types import Array, Environment, EnvParams, PRNGKey, TimeStep

#: discrete actions, in MPE's order.
NOOP, LEFT, RIGHT, DOWN, UP = range(5)
NUM_ACTIONS = 5
#: width of a continuous action `[no-op, left, right, down, up]` (the no-op entry is ignored).
CONTINUOUS_DIM = 5
#: width of MPE's (always silent) communication vector, kept in simple spread's observation.
DIM_C = 2


@struct.dataclass
class ParticleParams(EnvParams):
    """Traced physics parameters shared by the particle worlds (MPE's world constants).

    Attributes:
      max_steps: time limit; episodes are truncated after this many steps (MPE: 25 cycles).
      dt: integration time step (MPE: 0.1).
      damping: fraction of the velocity lost per step, in `[0, 1]` (MPE: 0.25).
      contact_force: stiffness of the contact force (MPE: 100).
      contact_margin: softness `k` of the contact force, `> 0` (MPE: 1e-3).
      agent_mass: mass of every agent, `> 0` (MPE: 1).
      agent_spawn: agents start uniformly in `[-agent_spawn, agent_spawn]^2` (MPE: 1).
      landmark_spawn: landmarks start uniformly in `[-landmark_spawn, landmark_spawn]^2`
        (JaxMARL: 1; PettingZoo's simple tag places its obstacles within 0.9).
    """

    max_steps: int = 25
    dt: Array = struct.field(default_factory=lambda: jnp.float32(0.1))
    damping: Array = struct.field(default_factory=lambda: jnp.float32(0.25))
    contact_force: Array = struct.field(default_factory=lambda: jnp.float32(100.0))
    contact_margin: Array = struct.field(default_factory=lambda: jnp.float32(1e-3))
    agent_mass: Array = struct.field(default_factory=lambda: jnp.float32(1.0))
    agent_spawn: Array = struct.field(default_factory=lambda: jnp.float32(1.0))
    landmark_spawn: Array = struct.field(default_factory=lambda: jnp.float32(1.0))


@struct.dataclass
class ParticleState:
    """State of a particle world (landmarks are immovable, so only agents have a velocity)."""

    agent_pos: Array  # [A, 2] float32 positions (x, y)
    agent_vel: Array  # [A, 2] float32 velocities
    landmark_pos: Array  # [L, 2] float32 positions of the landmarks (obstacles in simple tag)
    t: Array  # [] int32 steps taken in this episode


# ---------------------------------------------------------------------------------- physics
#
# Inside a step, coordinates are split (`x [A]`, `y [A]`) and agent-agent quantities are flat
# `[P]` vectors over the unordered pairs (see `PairTable`), so that array ops are elementwise over
# `[A]` or `[P]`. Measured on a 2-core x86 CPU (XLA CPU, 4096 envs under `vmap`): a broadcast
# `[A, A, 2]` version of the contact forces with `jnp.logaddexp` was about 15 times slower for
# 3 agents (XLA vectorises elementwise code over the env axis, but not fusions that broadcast
# inside small per-env blocks, nor `log1p`, see `softplus`). Agent-obstacle pairs (simple tag)
# are still a broadcast `[A, L]` block, the slowest part of simple tag's step.


def decode_discrete(actions: Array) -> tuple[Array, Array]:
    """Unit directions of discrete MPE actions.

    Args:
      actions: `[A]` integers `0 no-op, 1 left (-x), 2 right (+x), 3 down (-y), 4 up (+y)`;
        out-of-range values are clipped into `0 .. 4`.

    Returns:
      `(ux [A], uy [A])` float32, one of `(0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)` per agent.
    """
    a = jnp.clip(jnp.asarray(actions).astype(jnp.int32), 0, NUM_ACTIONS - 1)
    ux = (a == RIGHT).astype(jnp.float32) - (a == LEFT).astype(jnp.float32)
    uy = (a == UP).astype(jnp.float32) - (a == DOWN).astype(jnp.float32)
    return ux, uy


def decode_continuous(actions: Array) -> tuple[Array, Array]:
    """Directions of continuous MPE actions `[no-op, left, right, down, up]` (in `[0, 1]`).

    As in MPE, the direction is `(right - left, up - down)` and values outside `[0, 1]` are
    applied as given (not clipped); the no-op entry is ignored.

    Args:
      actions: `[A, 5]` float.

    Returns:
      `(ux [A], uy [A])` float32.
    """
    a = jnp.asarray(actions, jnp.float32)
    return a[:, RIGHT] - a[:, LEFT], a[:, UP] - a[:, DOWN]


class PairTable:
    """Static pair structure of a world of `A` agents followed by `K` other entities (`N = A + K`).

    Pairwise quantities are computed once per unordered pair `(i, j)`, `i < j`, `i` an agent
    (pairs of two non-agents never matter), as flat `[P]` vectors, and gathered back per agent
    with the static `[A, N - 1]` table `partners`.

    Attributes:
      first: `[P]` int, the agent `i` of each pair.
      second: `[P]` int, the entity `j > i` of each pair.
      partners: `[A, N - 1]` int: for agent `i` and its partners `j != i` in increasing order,
        the index into `concat([q, -q])` of a pair quantity `q [P]` that gives `q(i, j)` when
        `q` is antisymmetric (`q[pair]` if `i < j`, else `-q[pair]`).
    """

    #: the most pairs a world may have (about 2,000 agents): the tables are built on the host
    MAX_PAIRS = 2_000_000

    def __init__(self, num_agents: int, num_others: int = 0):
        A, N = int(num_agents), int(num_agents) + int(num_others)
        pairs = A * (A - 1) // 2 + A * (N - A)
        if pairs > self.MAX_PAIRS:
            others = f" and {N - A} other entities" if N > A else ""
            raise ValueError(
                f"num_agents={A}{others} makes {pairs:,} interacting pairs, "
                f"more than the {self.MAX_PAIRS:,} a particle world builds (about 2,000 agents); "
                "use fewer agents (a swarm/* env scales further)"
            )
        first, second = np.triu_indices(N, 1)
        keep = first < A
        self.first, self.second = first[keep], second[keep]
        P = len(self.first)
        index = {(int(i), int(j)): p for p, (i, j) in enumerate(zip(self.first, self.second))}
        rows = [
            [index[(i, j)] if i < j else P + index[(j, i)] for j in range(N) if j != i]
            for i in range(A)
        ]
        self.partners = np.asarray(rows, np.int32).reshape(A, N - 1)

    def antisymmetric(self, q: Array) -> Array:
        """`[P] -> [A, N - 1]`: `q(i, j)` of every agent and partner, `q(j, i) = -q(i, j)`."""
        return jnp.concatenate([q, -q])[self.partners]

    def symmetric(self, q: Array) -> Array:
        """`[P] -> [A, N - 1]`: `q(i, j)` of every agent and partner, `q(j, i) = q(i, j)`."""
        return jnp.concatenate([q, q])[self.partners]

    def offsets(self, x: Array, y: Array) -> tuple[Array, Array]:
        """`(x_i - x_j, y_i - y_j)`, each `[P]`, of every pair from entity coordinates `[N]`."""
        return x[self.first] - x[self.second], y[self.first] - y[self.second]


def softplus(x: Array) -> Array:
    """`log(1 + exp(x))`, fast on XLA CPU: no `log1p` and no denormals.

    `jnp.logaddexp` uses `log1p`, which XLA does not vectorise on CPU (it made the contact
    forces 3 to 4 times slower). Here `log(1 + exp(x))` is used for `x >= -10` (absolute error
    below 1e-7) and `exp(x)` below (relative error below 3e-5); `exp` never sees inputs below
    -80, where a float32 denormal would be slow too (the result is flushed to 0 there).
    """
    e = jnp.exp(jnp.clip(x, -80.0, 20.0))
    small = jnp.where(x < -80.0, 0.0, e)
    return jnp.where(x > 20.0, x, jnp.where(x < -10.0, small, jnp.log(1.0 + e)))


def contact_forces(
    table: PairTable, dx: Array, dy: Array, reach: Array, stiffness, margin
) -> tuple[Array, Array]:
    """Sum of MPE's soft contact forces on each agent from every other colliding entity.

    `f_ij = stiffness * (p_i - p_j) / d_ij * margin * softplus((r_i + r_j - d_ij) / margin)`.
    The distance is floored away from zero, so two entities at the very same point push with
    zero force instead of NaN (MPE divides by zero there).

    Args:
      table: the static `PairTable` of the colliding entities (agents first).
      dx: `[P]` `x_i - x_j` of every pair (`table.offsets`).
      dy: `[P]` `y_i - y_j`.
      reach: `[P]` or `[]` `r_i + r_j`, the sum of the pair's radii.
      stiffness: `[]` MPE's `contact_force`.
      margin: `[]` MPE's `contact_margin` (`> 0`).

    Returns:
      `(fx [A], fy [A])` float32 total contact force on each agent.
    """
    dist = jnp.sqrt(dx * dx + dy * dy)
    penetration = softplus((reach - dist) / margin) * margin
    scale = stiffness * penetration / jnp.maximum(dist, 1e-20)
    fx = jnp.sum(table.antisymmetric(dx * scale), axis=-1)
    fy = jnp.sum(table.antisymmetric(dy * scale), axis=-1)
    return fx, fy


def obstacle_forces(dx: Array, dy: Array, reach: Array, stiffness, margin) -> tuple[Array, Array]:
    """MPE's soft contact forces on each agent from `K` immovable entities (see `contact_forces`).

    Args:
      dx: `[A, K]` `x_i - x_k` of every agent and obstacle.
      dy: `[A, K]` `y_i - y_k`.
      reach: `[A, K]` (or broadcastable) sum of the radii.
      stiffness: `[]` MPE's `contact_force`.
      margin: `[]` MPE's `contact_margin` (`> 0`).

    Returns:
      `(fx [A], fy [A])` float32 total force of the obstacles on each agent.
    """
    dist = jnp.sqrt(dx * dx + dy * dy)
    scale = stiffness * softplus((reach - dist) / margin) * margin / jnp.maximum(dist, 1e-20)
    return jnp.sum(dx * scale, axis=-1), jnp.sum(dy * scale, axis=-1)


def integrate(
    pos: tuple[Array, Array],
    vel: tuple[Array, Array],
    force: tuple[Array, Array],
    mass,
    dt,
    damping,
    max_speed,
) -> tuple[Array, Array, Array, Array]:
    """One step of MPE's integrator in JaxMARL's order (see the module docstring).

    Args:
      pos: `(x [A], y [A])` positions.
      vel: `(vx [A], vy [A])` velocities.
      force: `(fx [A], fy [A])` total forces.
      mass: `[]` or `[A]` masses.
      dt: `[]` time step.
      damping: `[]` fraction of the velocity lost per step.
      max_speed: `[]` or `[A]` speed limits (`inf`: none).

    Returns:
      `(x, y, vx, vy)`, each `[A]`, after the step.
    """
    x = pos[0] + vel[0] * dt
    y = pos[1] + vel[1] * dt
    gain = dt / mass
    vx = vel[0] * (1.0 - damping) + force[0] * gain
    vy = vel[1] * (1.0 - damping) + force[1] * gain
    speed = jnp.sqrt(vx * vx + vy * vy)
    factor = jnp.where(speed > max_speed, max_speed / jnp.maximum(speed, 1e-20), 1.0)
    return x, y, vx * factor, vy * factor


def interleave(x: Array, y: Array) -> Array:
    """`[A, K]` and `[A, K]` -> `[A, 2 K]`: `x_0, y_0, x_1, y_1, ...` per row."""
    return jnp.stack([x, y], axis=-1).reshape(x.shape[0], -1)


# ---------------------------------------------------------------------------------- base env


class ParticleEnv(Environment[ParticleState, EnvParams]):
    """Shared machinery of the MPE tasks: reset, step, spaces and validation.

    Subclasses set `num_agents`, `num_landmarks`, `continuous` and `obs_dim` and implement
    `_physics` (forces and integration) and `_outputs` (observations and rewards), both on split
    coordinates (`x [A]`, `y [A]`, ...).
    """

    num_landmarks: int
    continuous: bool
    obs_dim: int

    def reset(self, key: PRNGKey, params: ParticleParams) -> tuple[ParticleState, TimeStep]:
        """Agents and landmarks uniformly in their spawn squares, agents at rest.

        With the default spawn ranges and the same key, this gives JaxMARL 0.2.0's initial
        positions (same key split and draws).
        """
        key_agents, key_landmarks = jax.random.split(key)
        a = jnp.asarray(params.agent_spawn, jnp.float32)
        lm = jnp.asarray(params.landmark_spawn, jnp.float32)
        state = ParticleState(
            agent_pos=jax.random.uniform(key_agents, (self.num_agents, 2), jnp.float32, -a, a),
            agent_vel=jnp.zeros((self.num_agents, 2), jnp.float32),
            landmark_pos=jax.random.uniform(
                key_landmarks, (self.num_landmarks, 2), jnp.float32, -lm, lm
            ),
            t=jnp.int32(0),
        )
        obs, _ = self._outputs(*_split(state), params)
        return state, self._timestep(state, params, obs, jnp.zeros((self.num_agents,), jnp.float32))

    def step(
        self, key: PRNGKey, state: ParticleState, actions: Array, params: ParticleParams
    ) -> tuple[ParticleState, TimeStep]:
        """One physics step with joint `actions` (`[A]` int, or `[A, 5]` float if continuous).

        Deterministic (the key is unused: MPE's action noise is zero).
        """
        del key
        u = decode_continuous(actions) if self.continuous else decode_discrete(actions)
        x, y, vx, vy, lx, ly = _split(state)
        x, y, vx, vy = self._physics(x, y, vx, vy, lx, ly, u, params)
        state = ParticleState(
            agent_pos=jnp.stack([x, y], axis=-1),
            agent_vel=jnp.stack([vx, vy], axis=-1),
            landmark_pos=state.landmark_pos,
            t=state.t + 1,
        )
        obs, reward = self._outputs(x, y, vx, vy, lx, ly, params)
        return state, self._timestep(state, params, obs, reward)

    @property
    def obs_sizes(self) -> np.ndarray:
        """`[A]` int: real (unpadded) observation length of each agent (all `obs_dim` here)."""
        return np.full((self.num_agents,), self.obs_dim)

    def observations(self, state: ParticleState, params: ParticleParams) -> Array:
        """`[A, obs_dim]` float32 observations of `state` (those of its timestep)."""
        return self._outputs(*_split(state), params)[0]

    def rewards(self, state: ParticleState, params: ParticleParams) -> Array:
        """`[A]` float32 rewards of arriving in `state` (those of the step that produced it)."""
        return self._outputs(*_split(state), params)[1]

    def _timestep(
        self, state: ParticleState, params: ParticleParams, obs: Array, reward: Array
    ) -> TimeStep:
        A = self.num_agents
        return TimeStep(
            obs=obs,
            reward=reward,
            terminated=jnp.bool_(False),
            truncated=state.t >= params.max_steps,
            action_mask=jnp.ones((A, 0 if self.continuous else NUM_ACTIONS), jnp.bool_),
            global_state=obs.reshape(-1),
            extras={},
        )

    def _physics(self, x, y, vx, vy, lx, ly, u, params) -> tuple[Array, Array, Array, Array]:
        """`(x, y, vx, vy)` of the agents (each `[A]`) after one step with directions `u`."""
        raise NotImplementedError

    def _outputs(self, x, y, vx, vy, lx, ly, params) -> tuple[Array, Array]:
        """`(obs [A, obs_dim], reward [A])` of the world with these agent and landmark coords."""
        raise NotImplementedError

    def observation_space(self, params: ParticleParams) -> spaces.Box:
        return spaces.Box(-jnp.inf, jnp.inf, (self.obs_dim,), jnp.float32)

    def action_space(self, params: ParticleParams) -> spaces.Space:
        if self.continuous:
            return spaces.Box(0.0, 1.0, (CONTINUOUS_DIM,), jnp.float32)
        return spaces.Discrete(NUM_ACTIONS)

    def global_state_space(self, params: ParticleParams) -> spaces.Box:
        return spaces.Box(-jnp.inf, jnp.inf, (self.num_agents * self.obs_dim,), jnp.float32)

    # Inclusive (lo, hi) per field: values accepted by `validate_params` (None: unbounded).
    _LIMITS: dict[str, tuple[float | None, float | None, bool]] = {
        "dt": (0.0, None, False),
        "damping": (0.0, 1.0, True),
        "contact_force": (0.0, None, True),
        "contact_margin": (0.0, None, False),
        "agent_mass": (0.0, None, False),
        "agent_spawn": (0.0, None, True),
        "landmark_spawn": (0.0, None, True),
    }

    def validate_params(self, params: ParticleParams) -> None:
        """Raise `ValueError` naming the field for impossible physics (host-side, concrete).

        `max_steps >= 1`; `dt`, `contact_margin`, masses `> 0`; `damping` in `[0, 1]`; forces,
        sizes, accelerations, speed limits and spawn ranges `>= 0`; no NaN anywhere.
        """
        if np.any(np.asarray(params.max_steps) < 1):
            raise ValueError(f"{self.name}: max_steps must be >= 1, got {params.max_steps}")
        for name, (lo, hi, closed) in self._LIMITS.items():
            v = np.asarray(getattr(params, name), np.float64)
            bad = np.isnan(v)
            if lo is not None:
                bad |= (v < lo) if closed else (v <= lo)
            if hi is not None:
                bad |= v > hi
            if np.any(bad):
                rel = ">=" if closed else ">"
                rng = f"{rel} {lo}" + (f" and <= {hi}" if hi is not None else "")
                raise ValueError(f"{self.name}: {name} must be {rng}, got {v.tolist()}")

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        """Physics constants that may vary freely (see `Environment.param_ranges`)."""
        return {
            "dt": (0.01, 0.2),
            "damping": (0.0, 1.0),
            "contact_force": (0.0, 500.0),
            "contact_margin": (1e-4, 0.1),
            "agent_mass": (0.1, 10.0),
            "agent_spawn": (0.0, 2.0),
            "landmark_spawn": (0.0, 2.0),
        }


def _split(state: ParticleState) -> tuple[Array, ...]:
    """`(x, y, vx, vy)` of the agents (`[A]` each) and `(lx, ly)` of the landmarks (`[L]`)."""
    p, v, lm = state.agent_pos, state.agent_vel, state.landmark_pos
    return p[:, 0], p[:, 1], v[:, 0], v[:, 1], lm[:, 0], lm[:, 1]


def bound_penalty(x: Array) -> Array:
    """MPE simple tag's penalty for leaving the arena, per coordinate.

    Args:
      x: `[...]` absolute coordinates.

    Returns:
      `[...]` float32: 0 below 0.9, `10 (x - 0.9)` below 1, then `min(exp(2 x - 2), 10)`.
    """
    return jnp.where(
        x < 0.9,
        0.0,
        jnp.where(x < 1.0, (x - 0.9) * 10.0, jnp.minimum(jnp.exp(2.0 * x - 2.0), 10.0)),
    )


__all__ = [
    "CONTINUOUS_DIM",
    "DIM_C",
    "DOWN",
    "LEFT",
    "NOOP",
    "NUM_ACTIONS",
    "RIGHT",
    "UP",
    "ParticleEnv",
    "ParticleParams",
    "ParticleState",
    "bound_penalty",
    "contact_forces",
    "decode_continuous",
    "decode_discrete",
    "integrate",
    "interleave",
    "obstacle_forces",
    "softplus",
    "PairTable",
]
