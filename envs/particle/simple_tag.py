"""MPE simple tag (predator-prey): slower adversaries chase faster good agents among obstacles.

The task of R. Lowe et al., "Multi-Agent Actor-Critic for Mixed Cooperative-Competitive
Environments", NeurIPS 2017 (PettingZoo's `simple_tag_v3`), with the semantics of JaxMARL
0.2.0's `MPE_simple_tag_v3`; physics in `marljax.envs.particle.world`.

- Agents `0 .. M-1` are the adversaries (type 0; radius 0.075, `accel` 3, speed limit 1.0),
  agents `M .. A-1` the good agents (type 1; radius 0.05, `accel` 4, speed limit 1.3). The `L`
  obstacles (radius 0.2) never move. Every pair of entities collides (soft contact forces).
- Actions: discrete `0 no-op, 1 left, 2 right, 3 down, 4 up`, or continuous `[5]` in `[0, 1]`
  (`[no-op, left, right, down, up]`, direction `(right - left, up - down)`).
- Observation (`[4 + 2 L + 2 (A - 1) + 2 G]` float32, `G` good agents; 16 for MPE's 3
  adversaries, 1 good agent and 2 obstacles): own velocity, own position, every obstacle's
  position relative to it, every other agent's position relative to it (in agent order), then
  the velocities of the good agents other than itself. A good agent sees one velocity fewer, so
  its observation (`obs_dim - 2` real entries) is padded with 2 trailing zeros; `obs_sizes` gives
  each agent's real length and `agent_types` its type.
- Rewards, computed after the move: a tag is a good agent and an adversary overlapping (centre
  distance `<` sum of radii). Every adversary gets `tag_reward` (10) per tag by any adversary
  (shared); a good agent gets `-tag_reward` per tag of itself, minus `boundary_penalty` times
  MPE's arena penalty summed over both coordinates (`bound_penalty`: 0 inside `|x| < 0.9`,
  growing to 10 outside).
- Never terminates; truncated after `max_steps` (25) steps. The global state is every agent's
  (padded) observation, concatenated (JaxMARL's `MPEWorldStateWrapper`).

Differences from JaxMARL 0.2.0: its episodes last `max_steps + 1` steps (PettingZoo and here:
`max_steps`); with more than one good agent, JaxMARL's adversaries see only the last agent's
velocity and its good agents no velocities, while here (as in PettingZoo) every agent sees the
velocities of all other good agents (identical for MPE's single good agent).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core.types import Array
from marljax.envs.particle.world import (
    PairTable,
    ParticleEnv,
    ParticleParams,
    bound_penalty,
    contact_forces,
    integrate,
    interleave,
    obstacle_forces,
)

#: `agent_types` of the two teams.
ADVERSARY, GOOD = 0, 1


@struct.dataclass
class SimpleTagParams(ParticleParams):
    """Traced parameters of `SimpleTag` (the physics fields are those of `ParticleParams`).

    Attributes:
      adversary_size: radius of the adversaries (MPE: 0.075).
      good_size: radius of the good agents (MPE: 0.05).
      obstacle_size: radius of the obstacles (MPE: 0.2).
      adversary_accel: force per unit of action of the adversaries (MPE: 3).
      good_accel: force per unit of action of the good agents (MPE: 4).
      adversary_max_speed: speed limit of the adversaries (MPE: 1.0).
      good_max_speed: speed limit of the good agents (MPE: 1.3).
      tag_reward: reward of the adversaries per tag, and penalty of the tagged agent (MPE: 10).
      boundary_penalty: weight of the good agents' arena penalty (MPE: 1; 0 disables it).
    """

    adversary_size: Array = struct.field(default_factory=lambda: jnp.float32(0.075))
    good_size: Array = struct.field(default_factory=lambda: jnp.float32(0.05))
    obstacle_size: Array = struct.field(default_factory=lambda: jnp.float32(0.2))
    adversary_accel: Array = struct.field(default_factory=lambda: jnp.float32(3.0))
    good_accel: Array = struct.field(default_factory=lambda: jnp.float32(4.0))
    adversary_max_speed: Array = struct.field(default_factory=lambda: jnp.float32(1.0))
    good_max_speed: Array = struct.field(default_factory=lambda: jnp.float32(1.3))
    tag_reward: Array = struct.field(default_factory=lambda: jnp.float32(10.0))
    boundary_penalty: Array = struct.field(default_factory=lambda: jnp.float32(1.0))


class SimpleTag(ParticleEnv):
    """MPE simple tag (predator-prey); see the module docstring for the rules.

    Args:
      num_good_agents: number of good agents `G` (static, >= 1; MPE: 1).
      num_adversaries: number of adversaries `M` (static, >= 1; MPE: 3).
      num_obstacles: number of obstacles `L` (static, >= 0; MPE: 2).
      continuous: continuous `Box(0, 1, (5,))` actions instead of `Discrete(5)` (static).

    Raises:
      ValueError: fewer than one agent of either team, or a negative number of obstacles.
    """

    _LIMITS = {
        **ParticleEnv._LIMITS,
        "adversary_size": (0.0, None, True),
        "good_size": (0.0, None, True),
        "obstacle_size": (0.0, None, True),
        "adversary_accel": (0.0, None, True),
        "good_accel": (0.0, None, True),
        "adversary_max_speed": (0.0, None, True),
        "good_max_speed": (0.0, None, True),
        "tag_reward": (None, None, True),
        "boundary_penalty": (None, None, True),
    }

    def __init__(
        self,
        num_good_agents: int = 1,
        num_adversaries: int = 3,
        num_obstacles: int = 2,
        continuous: bool = False,
    ):
        if int(num_good_agents) < 1 or int(num_adversaries) < 1:
            raise ValueError(
                "SimpleTag needs num_good_agents >= 1 and num_adversaries >= 1, got "
                f"{num_good_agents} and {num_adversaries}"
            )
        if int(num_obstacles) < 0:
            raise ValueError(f"SimpleTag needs num_obstacles >= 0, got {num_obstacles}")
        self.num_good_agents = int(num_good_agents)
        self.num_adversaries = int(num_adversaries)
        self.num_agents = self.num_good_agents + self.num_adversaries
        self.num_landmarks = int(num_obstacles)
        self.continuous = bool(continuous)
        self.obs_dim = (
            4 + 2 * self.num_landmarks + 2 * (self.num_agents - 1) + 2 * self.num_good_agents
        )
        A, M, G = self.num_agents, self.num_adversaries, self.num_good_agents
        #: the two sides (adversaries, good agents): a league trains one learner for each.
        self.teams = (tuple(range(M)), tuple(range(M, A)))
        self._is_adv = np.arange(A) < M  # [A]
        self._agents = PairTable(A)  # agent-agent pairs; obstacles are handled apart
        self._tag_pairs = (self._agents.first < M) & (self._agents.second >= M)  # [P]
        first_adv, second_adv = self._agents.first < M, self._agents.second < M
        self._pair_adversaries = first_adv.astype(np.float32) + second_adv  # [P]
        # For each agent, the good agents whose velocity it sees (index G: a zero pad).
        self._vel_index = np.array(
            [[g for g in range(G) if g != i - M] + [G] * (i >= M) for i in range(A)], np.int32
        )

    @property
    def name(self) -> str:
        return "SimpleTag"

    def __repr__(self) -> str:
        kind = "continuous" if self.continuous else "discrete"
        return (
            f"SimpleTag(num_good_agents={self.num_good_agents}, "
            f"num_adversaries={self.num_adversaries}, num_obstacles={self.num_landmarks}, {kind})"
        )

    @property
    def num_obstacles(self) -> int:
        """Number of obstacles `L` (MPE's landmarks)."""
        return self.num_landmarks

    @property
    def agent_types(self) -> Array:
        """`[A]` int32: `ADVERSARY` (0) for agents `0 .. M-1`, `GOOD` (1) for the rest."""
        return jnp.asarray(np.where(self._is_adv, ADVERSARY, GOOD), jnp.int32)

    @property
    def obs_sizes(self) -> np.ndarray:
        """`[A]` int: real (unpadded) observation length of each agent; the rest are zeros."""
        return np.where(self._is_adv, self.obs_dim, self.obs_dim - 2)

    def default_params(self) -> SimpleTagParams:
        return SimpleTagParams()

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        """Physics, sizes, speeds and rewards that may vary (see `Environment.param_ranges`)."""
        return {
            **super().param_ranges(),
            "adversary_size": (0.0, 0.5),
            "good_size": (0.0, 0.5),
            "obstacle_size": (0.0, 0.5),
            "adversary_accel": (0.0, 10.0),
            "good_accel": (0.0, 10.0),
            "adversary_max_speed": (0.0, 5.0),
            "good_max_speed": (0.0, 5.0),
            "tag_reward": (0.0, 20.0),
            "boundary_penalty": (0.0, 2.0),
        }

    def _per_agent(self, adversary: Array, good: Array) -> Array:
        """`[A]` float32 from a per-team pair of scalars."""
        return jnp.where(self._is_adv, adversary, good).astype(jnp.float32)

    def _physics(self, x, y, vx, vy, lx, ly, u, params: SimpleTagParams):
        radius = self._per_agent(params.adversary_size, params.good_size)  # [A]
        dx, dy = self._agents.offsets(x, y)
        n_adv = self._pair_adversaries  # [P] adversaries among the two ends of each pair
        reach = n_adv * params.adversary_size + (2.0 - n_adv) * params.good_size
        fx, fy = contact_forces(
            self._agents, dx, dy, reach, params.contact_force, params.contact_margin
        )
        if self.num_landmarks:
            ox, oy = x[:, None] - lx[None, :], y[:, None] - ly[None, :]  # [A, L]
            gx, gy = obstacle_forces(
                ox,
                oy,
                radius[:, None] + params.obstacle_size,
                params.contact_force,
                params.contact_margin,
            )
            fx, fy = fx + gx, fy + gy
        accel = self._per_agent(params.adversary_accel, params.good_accel)
        max_speed = self._per_agent(params.adversary_max_speed, params.good_max_speed)
        return integrate(
            (x, y),
            (vx, vy),
            (fx + u[0] * accel, fy + u[1] * accel),
            params.agent_mass,
            params.dt,
            params.damping,
            max_speed,
        )

    def _outputs(self, x, y, vx, vy, lx, ly, params: SimpleTagParams):
        M = self.num_adversaries
        dx, dy = self._agents.offsets(x, y)  # [P] x_i - x_j of the agent pairs i < j
        reach = params.adversary_size + params.good_size
        tagged = self._tag_pairs & (dx * dx + dy * dy < reach * reach)  # [P]
        tags = jnp.sum(self._agents.symmetric(tagged)[M:], axis=-1).astype(jnp.float32)  # [G]
        x_good, y_good = x[M:], y[M:]
        arena = bound_penalty(jnp.abs(x_good)) + bound_penalty(jnp.abs(y_good))
        good_rew = -params.tag_reward * tags - params.boundary_penalty * arena
        adv_rew = jnp.broadcast_to(params.tag_reward * jnp.sum(tagged), (M,))
        reward = jnp.concatenate([adv_rew, good_rew]).astype(jnp.float32)

        zero = jnp.zeros((1,), jnp.float32)
        good_vx = jnp.concatenate([vx[M:], zero])[self._vel_index]  # [A, G], padded with 0
        good_vy = jnp.concatenate([vy[M:], zero])[self._vel_index]
        obs = jnp.concatenate(
            [
                jnp.stack([vx, vy, x, y], axis=-1),
                interleave(lx[None, :] - x[:, None], ly[None, :] - y[:, None]),
                interleave(self._agents.antisymmetric(-dx), self._agents.antisymmetric(-dy)),
                interleave(good_vx, good_vy),
            ],
            axis=-1,
        )
        return obs, reward


def make_simple_tag(
    num_good_agents: int = 1,
    num_adversaries: int = 3,
    num_obstacles: int = 2,
    continuous: bool = False,
) -> SimpleTag:
    """Build a `SimpleTag` env (the registry's entry point; see the class for args)."""
    return SimpleTag(num_good_agents, num_adversaries, num_obstacles, continuous)


__all__ = ["ADVERSARY", "GOOD", "SimpleTag", "SimpleTagParams", "make_simple_tag"]
