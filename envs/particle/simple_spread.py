"""MPE simple spread (cooperative navigation): `A` agents must cover `L` landmarks, not collide.

The task of R. Lowe et al., "Multi-Agent Actor-Critic for Mixed Cooperative-Competitive
Environments", NeurIPS 2017 (PettingZoo's `simple_spread_v3`), with the semantics of JaxMARL
0.2.0's `MPE_simple_spread_v3`; physics in `marljax.envs.particle.world`.

- Agents (radius `agent_size` 0.15, `accel` 5, no speed limit) collide with each other; the
  landmarks (radius `landmark_size` 0.05) do not collide and never move.
- Actions: discrete `0 no-op, 1 left, 2 right, 3 down, 4 up`, or continuous `[5]` in `[0, 1]`
  (`[no-op, left, right, down, up]`, direction `(right - left, up - down)`).
- Observation of agent `i` (`[4 + 2 L + 4 (A - 1)]` float32, 18 for 3 agents and 3 landmarks):
  own velocity, own position, every landmark's position relative to it, every other agent's
  position relative to it (in agent order), and MPE's communication vectors of the other agents
  (`2 (A - 1)` zeros: agents are silent, kept for MPE's layout).
- Reward of agent `i`, computed after the move: `local_ratio * (-n_i) + (1 - local_ratio) *
  (-sum_l min_j |p_j - p_l|)`, where `n_i` counts the other agents overlapping agent `i`
  (centre distance `< 2 agent_size`) and the second term is shared by all agents.
- Never terminates; truncated after `max_steps` (25) steps. The global state is every agent's
  observation, concatenated (JaxMARL's `MPEWorldStateWrapper`).

Difference from JaxMARL 0.2.0: its episodes last `max_steps + 1` steps (it checks the step
counter before incrementing it); here, as in PettingZoo (`max_cycles=25`), they last `max_steps`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from marljax.envs.particle.world import (
    DIM_C,
    PairTable,
    ParticleEnv,
    ParticleParams,
    contact_forces,
    integrate,
    interleave,
)


@struct.dataclass
class SimpleSpreadParams(ParticleParams):
    """Traced parameters of `SimpleSpread` (the physics fields are those of `ParticleParams`).

    Attributes:
      agent_size: radius of every agent (MPE: 0.15).
      landmark_size: radius of every landmark (MPE: 0.05; only drawn, landmarks do not collide).
      accel: force per unit of action (MPE's `accel`/sensitivity: 5).
      max_speed: speed limit of the agents (`inf`: none, as in MPE).
      local_ratio: weight of the agent's own collision penalty against the shared coverage
        reward, in `[0, 1]` (MPE: 0.5).
    """

    agent_size: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.15))
    landmark_size: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.05))
    accel: jax.Array = struct.field(default_factory=lambda: jnp.float32(5.0))
    max_speed: jax.Array = struct.field(default_factory=lambda: jnp.float32(jnp.inf))
    local_ratio: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.5))


class SimpleSpread(ParticleEnv):
    """MPE simple spread (cooperative navigation); see the module docstring for the rules.

    Args:
      num_agents: number of agents `A` (static, >= 1; MPE: 3).
      num_landmarks: number of landmarks `L` (static, >= 0; MPE: 3).
      continuous: continuous `Box(0, 1, (5,))` actions instead of `Discrete(5)` (static).

    Raises:
      ValueError: `num_agents < 1` or `num_landmarks < 0`.
    """

    _LIMITS = {
        **ParticleEnv._LIMITS,
        "agent_size": (0.0, None, True),
        "landmark_size": (0.0, None, True),
        "accel": (0.0, None, True),
        "max_speed": (0.0, None, True),
        "local_ratio": (0.0, 1.0, True),
    }

    def __init__(self, num_agents: int = 3, num_landmarks: int = 3, continuous: bool = False):
        if int(num_agents) < 1:
            raise ValueError(f"SimpleSpread needs num_agents >= 1, got {num_agents}")
        if int(num_landmarks) < 0:
            raise ValueError(f"SimpleSpread needs num_landmarks >= 0, got {num_landmarks}")
        self.num_agents = int(num_agents)
        self.num_landmarks = int(num_landmarks)
        self.continuous = bool(continuous)
        self.obs_dim = 4 + 2 * self.num_landmarks + (2 + DIM_C) * (self.num_agents - 1)
        self._pairs = PairTable(self.num_agents)  # agent-agent pairs (landmarks do not collide)

    @property
    def name(self) -> str:
        return "SimpleSpread"

    def __repr__(self) -> str:
        kind = "continuous" if self.continuous else "discrete"
        return (
            f"SimpleSpread(num_agents={self.num_agents}, num_landmarks={self.num_landmarks}, "
            f"{kind})"
        )

    def default_params(self) -> SimpleSpreadParams:
        return SimpleSpreadParams()

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        """Physics, sizes and reward weights that may vary (see `Environment.param_ranges`)."""
        return {
            **super().param_ranges(),
            "agent_size": (0.0, 0.5),
            "landmark_size": (0.0, 0.5),
            "accel": (0.0, 10.0),
            "max_speed": (0.0, 5.0),
            "local_ratio": (0.0, 1.0),
        }

    def _physics(self, x, y, vx, vy, lx, ly, u, params: SimpleSpreadParams):
        dx, dy = self._pairs.offsets(x, y)
        fx, fy = contact_forces(
            self._pairs,
            dx,
            dy,
            2.0 * params.agent_size,
            params.contact_force,
            params.contact_margin,
        )
        force = (fx + u[0] * params.accel, fy + u[1] * params.accel)
        return integrate(
            (x, y),
            (vx, vy),
            force,
            params.agent_mass,
            params.dt,
            params.damping,
            params.max_speed,
        )

    def _outputs(self, x, y, vx, vy, lx, ly, params: SimpleSpreadParams):
        A = self.num_agents
        dx, dy = self._pairs.offsets(x, y)  # [P] x_i - x_j of the agent pairs i < j
        overlap = dx * dx + dy * dy < jnp.square(2.0 * params.agent_size)
        collisions = jnp.sum(self._pairs.symmetric(overlap), axis=-1).astype(jnp.float32)  # [A]
        ldx, ldy = lx[None, :] - x[:, None], ly[None, :] - y[:, None]  # [A, L]
        if self.num_landmarks:
            closest = jnp.min(jnp.sqrt(ldx * ldx + ldy * ldy), axis=0)  # [L]
            coverage = -jnp.sum(closest)
        else:
            coverage = jnp.float32(0.0)
        ratio = params.local_ratio
        reward = (-collisions * ratio + coverage * (1.0 - ratio)).astype(jnp.float32)
        others = interleave(self._pairs.antisymmetric(-dx), self._pairs.antisymmetric(-dy))
        obs = jnp.concatenate(
            [
                jnp.stack([vx, vy, x, y], axis=-1),
                interleave(ldx, ldy),
                others,
                jnp.zeros((A, DIM_C * (A - 1)), jnp.float32),
            ],
            axis=-1,
        )
        return obs, reward

    def entity_obs(self, obs: jax.Array) -> jax.Array:
        """Each agent's observation `[..., A, D]` as entity tokens `[..., A, 1 + L + (A - 1), 4]`.

        One token per entity the agent sees, features `[dx, dy, is_self, is_agent]` (JaxMARL's
        `TransformersCTRolloutManager` for spread): itself `(0, 0, 1, 1)`, every landmark
        `(dx, dy, 0, 0)` and every other agent `(dx, dy, 0, 1)`, positions relative to the agent.
        Used by TransfQMIX (`marljax.agents.transf_qmix`).
        """
        A, L = self.num_agents, self.num_landmarks
        lead = obs.shape[:-1]
        rel = obs[..., 4 : 4 + 2 * L + 2 * (A - 1)].reshape(*lead, L + A - 1, 2)
        flags = jnp.concatenate(
            [jnp.zeros((L, 2), obs.dtype), jnp.tile(jnp.array([[0.0, 1.0]], obs.dtype), (A - 1, 1))]
        )
        others = jnp.concatenate([rel, jnp.broadcast_to(flags, rel.shape)], axis=-1)
        me = jnp.broadcast_to(jnp.array([0.0, 0.0, 1.0, 1.0], obs.dtype), (*lead, 1, 4))
        return jnp.concatenate([me, others], axis=-2)

    def entity_state(self, global_state: jax.Array) -> jax.Array:
        """The global state `[..., A * D]` as entity tokens `[..., A + L, 5]`.

        Features `[x, y, vx, vy, is_agent]` (JaxMARL's spread world state): the agents, then
        the landmarks (absolute positions recovered from agent 0's observation, velocity 0).
        Used by TransfQMIX's mixer.
        """
        A, L = self.num_agents, self.num_landmarks
        obs = global_state.reshape(*global_state.shape[:-1], A, self.obs_dim)
        vel, pos = obs[..., 0:2], obs[..., 2:4]
        agents = jnp.concatenate([pos, vel, jnp.ones_like(vel[..., :1])], axis=-1)
        lm = pos[..., :1, :] + obs[..., 0, 4 : 4 + 2 * L].reshape(*obs.shape[:-2], L, 2)
        landmarks = jnp.concatenate([lm, jnp.zeros((*lm.shape[:-1], 3), lm.dtype)], axis=-1)
        return jnp.concatenate([agents, landmarks], axis=-2)


def make_simple_spread(
    num_agents: int = 3, num_landmarks: int = 3, continuous: bool = False
) -> SimpleSpread:
    """Build a `SimpleSpread` env (the registry's entry point; see the class for args)."""
    return SimpleSpread(num_agents, num_landmarks, continuous)


__all__ = ["SimpleSpread", "SimpleSpreadParams", "make_simple_spread"]
