"""MPE simple speaker-listener: a static speaker names the goal, a blind listener moves to it.

The cooperative communication task of R. Lowe et al., "Multi-Agent Actor-Critic for Mixed
Cooperative-Competitive Environments", NeurIPS 2017 (PettingZoo's `simple_speaker_listener_v4`),
with the semantics of JaxMARL 0.2.0's `MPE_simple_speaker_listener_v4`; physics in
`marljax.envs.particle.world`. The two agents have different roles, observations and actions
(`agent_types`: `SPEAKER` 0, `LISTENER` 1), padded to one shape on the agent axis:

- Agent 0, the speaker (type `SPEAKER`), never moves. It observes the colour of the goal
  landmark (`[3]`: 0.65 in the goal's entry, 0.15 elsewhere) and says a message of `COMM_DIM`
  (3) numbers, which the listener hears after the step.
- Agent 1, the listener (type `LISTENER`, radius 0.075, `accel` 5, no speed limit), observes
  its own velocity, the three landmarks' positions relative to it and the speaker's last
  message (`[2 + 6 + 3] = [11]`), and moves. Nothing collides; the landmarks never move.
- Observations are `[A, 11]` float32: the speaker's 3 real entries come first, its last 8 are
  zeros (`obs_sizes` = `[3, 11]`).
- Discrete actions, `Discrete(5)` per agent: the listener moves as in MPE (`0 no-op, 1 left,
  2 right, 3 down, 4 up`); the speaker's action `c` in `0 .. 2` sends the one-hot message
  `e_c`, and its actions 3 and 4 are masked out (`action_mask` row `[1, 1, 1, 0, 0]`; executed
  anyway they are clipped to 2).
- Continuous actions, `Box(0, 1, (5,))` per agent: the listener's direction is `(right - left,
  up - down)` (entries 2 - 1, 4 - 3; entry 0 is ignored, as in MPE); the speaker's message is
  its entries `0 .. 2` as given (entries 3 and 4 are ignored); `action_entries_used` says which
  entries each agent's action uses.
- Reward (both agents, computed after the move): `-|p_listener - p_goal|^2`.
- Never terminates; truncated after `max_steps` (25) steps. The global state is both agents'
  (padded) observations, concatenated (JaxMARL's `MPEWorldStateWrapper`).

Difference from JaxMARL 0.2.0: its episodes last `max_steps + 1` steps (PettingZoo and here:
`max_steps`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core.types import Array, PRNGKey, TimeStep
from marljax.envs.particle.world import (
    NUM_ACTIONS,
    ParticleEnv,
    ParticleParams,
    ParticleState,
    decode_continuous,
    decode_discrete,
    integrate,
)

#: `agent_types` of the two roles (the speaker is agent 0, the listener agent 1).
SPEAKER, LISTENER = 0, 1
#: length of the speaker's message (MPE's `dim_c` for this task) and number of landmarks.
COMM_DIM = 3
#: observation width: the listener's `velocity (2) + landmarks (2 * 3) + message (3)`.
OBS_DIM = 2 + 2 * COMM_DIM + COMM_DIM
#: colour entries of the goal landmark and of the others in the speaker's observation.
GOAL_COLOUR, OTHER_COLOUR = 0.65, 0.15


@struct.dataclass
class SpeakerListenerState(ParticleState):
    """State of `SimpleSpeakerListener`: the particle world plus the goal and the message."""

    goal: Array  # [] int32 index of the goal landmark, in 0 .. 2
    comm: Array  # [COMM_DIM] float32 the speaker's last message (zeros at reset)


@struct.dataclass
class SpeakerListenerParams(ParticleParams):
    """Traced parameters of `SimpleSpeakerListener` (physics fields: `ParticleParams`).

    Attributes:
      agent_size: radius of both agents (MPE: 0.075; only drawn, nothing collides).
      landmark_size: radius of the landmarks (MPE: 0.04; only drawn).
      accel: the listener's force per unit of action (MPE: 5).
      max_speed: the listener's speed limit (`inf`: none, as in MPE).
    """

    agent_size: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.075))
    landmark_size: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.04))
    accel: jax.Array = struct.field(default_factory=lambda: jnp.float32(5.0))
    max_speed: jax.Array = struct.field(default_factory=lambda: jnp.float32(jnp.inf))


class SimpleSpeakerListener(ParticleEnv):
    """MPE simple speaker-listener (2 agents, 3 landmarks); see the module docstring.

    Args:
      continuous: continuous `Box(0, 1, (5,))` actions instead of `Discrete(5)` (static).
    """

    _LIMITS = {
        **ParticleEnv._LIMITS,
        "agent_size": (0.0, None, True),
        "landmark_size": (0.0, None, True),
        "accel": (0.0, None, True),
        "max_speed": (0.0, None, True),
    }

    def __init__(self, continuous: bool = False):
        self.num_agents = 2
        self.num_landmarks = COMM_DIM
        self.continuous = bool(continuous)
        self.obs_dim = OBS_DIM

    @property
    def name(self) -> str:
        return "SimpleSpeakerListener"

    def __repr__(self) -> str:
        return f"SimpleSpeakerListener({'continuous' if self.continuous else 'discrete'})"

    def default_params(self) -> SpeakerListenerParams:
        return SpeakerListenerParams()

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        """Physics and sizes that may vary (see `Environment.param_ranges`)."""
        return {
            **super().param_ranges(),
            "agent_size": (0.0, 0.5),
            "landmark_size": (0.0, 0.5),
            "accel": (0.0, 10.0),
            "max_speed": (0.0, 5.0),
        }

    @property
    def agent_types(self) -> Array:
        """`[2]` int32: `[SPEAKER, LISTENER]`."""
        return jnp.asarray([SPEAKER, LISTENER], jnp.int32)

    @property
    def obs_sizes(self) -> np.ndarray:
        """`[2]` int: real observation lengths `[3, 11]` (the speaker's is zero-padded)."""
        return np.asarray([COMM_DIM, OBS_DIM])

    @property
    def action_entries_used(self) -> np.ndarray:
        """`[2, 5]` bool: the entries of each agent's continuous action that the env reads (the
        speaker's message `0 .. 2`; the listener's movement `1 .. 4`, entry 0 being MPE's no-op).
        `SACConfig.used_entries_only` counts only these in the entropy."""
        return np.asarray(
            [[True] * COMM_DIM + [False] * (NUM_ACTIONS - COMM_DIM), [False] + [True] * 4]
        )

    def action_mask(self) -> Array:
        """`[2, 5]` bool (`[2, 0]` if continuous): the speaker may only say messages `0 .. 2`."""
        if self.continuous:
            return jnp.ones((2, 0), jnp.bool_)
        return jnp.asarray([[True] * COMM_DIM + [False] * (NUM_ACTIONS - COMM_DIM), [True] * 5])

    def reset(
        self, key: PRNGKey, params: SpeakerListenerParams
    ) -> tuple[SpeakerListenerState, TimeStep]:
        """Agents and landmarks uniformly in their spawn squares, a uniform goal, no message.

        With the default spawn ranges and the same key, this gives JaxMARL 0.2.0's initial
        positions and goal (same key split and draws).
        """
        key_agents, key_landmarks, key_goal = jax.random.split(key, 3)
        a = jnp.asarray(params.agent_spawn, jnp.float32)
        lm = jnp.asarray(params.landmark_spawn, jnp.float32)
        state = SpeakerListenerState(
            agent_pos=jax.random.uniform(key_agents, (2, 2), jnp.float32, -a, a),
            agent_vel=jnp.zeros((2, 2), jnp.float32),
            landmark_pos=jax.random.uniform(key_landmarks, (COMM_DIM, 2), jnp.float32, -lm, lm),
            t=jnp.int32(0),
            goal=jax.random.randint(key_goal, (), 0, COMM_DIM).astype(jnp.int32),
            comm=jnp.zeros((COMM_DIM,), jnp.float32),
        )
        obs = self.observations(state, params)
        return state, self._timestep(state, params, obs, jnp.zeros((2,), jnp.float32))

    def step(
        self, key: PRNGKey, state: SpeakerListenerState, actions: Array, params: ParticleParams
    ) -> tuple[SpeakerListenerState, TimeStep]:
        """One step: the listener moves, the speaker's message replaces the last one.

        Args:
          key: unused (MPE's action and message noise are zero).
          state: the current state.
          actions: `[2]` int, or `[2, 5]` float if continuous (see the module docstring).
          params: `SpeakerListenerParams`.
        """
        del key
        if self.continuous:
            acts = jnp.asarray(actions, jnp.float32)
            ux, uy = decode_continuous(acts[1:])
            comm = acts[0, :COMM_DIM]
        else:
            acts = jnp.asarray(actions).astype(jnp.int32)
            ux, uy = decode_discrete(acts[1:])
            comm = jax.nn.one_hot(jnp.clip(acts[0], 0, COMM_DIM - 1), COMM_DIM)
        p, v = state.agent_pos[1:], state.agent_vel[1:]
        force = (ux * params.accel, uy * params.accel)  # no collisions in this task
        x, y, vx, vy = integrate(
            (p[:, 0], p[:, 1]),
            (v[:, 0], v[:, 1]),
            force,
            params.agent_mass,
            params.dt,
            params.damping,
            params.max_speed,
        )
        state = state.replace(
            agent_pos=state.agent_pos.at[1].set(jnp.concatenate([x, y])),
            agent_vel=state.agent_vel.at[1].set(jnp.concatenate([vx, vy])),
            comm=comm.astype(jnp.float32),
            t=state.t + 1,
        )
        obs, reward = self.observations(state, params), self.rewards(state, params)
        return state, self._timestep(state, params, obs, reward)

    def observations(self, state: SpeakerListenerState, params: ParticleParams) -> Array:
        """`[2, 11]` float32 observations of `state` (speaker padded with 8 zeros)."""
        del params
        colour = jnp.where(jnp.arange(COMM_DIM) == state.goal, GOAL_COLOUR, OTHER_COLOUR)
        speaker = jnp.concatenate([colour, jnp.zeros((OBS_DIM - COMM_DIM,))])
        listener = jnp.concatenate(
            [state.agent_vel[1], (state.landmark_pos - state.agent_pos[1]).reshape(-1), state.comm]
        )
        return jnp.stack([speaker, listener]).astype(jnp.float32)

    def rewards(self, state: SpeakerListenerState, params: ParticleParams) -> Array:
        """`[2]` float32 shared reward `-|p_listener - p_goal|^2` of arriving in `state`."""
        del params
        d = state.agent_pos[1] - state.landmark_pos[state.goal]
        return jnp.full((2,), -jnp.sum(d * d), jnp.float32)

    def _timestep(self, state, params, obs, reward) -> TimeStep:
        return super()._timestep(state, params, obs, reward).replace(action_mask=self.action_mask())


def make_simple_speaker_listener(continuous: bool = False) -> SimpleSpeakerListener:
    """Build a `SimpleSpeakerListener` env (the registry's entry point; see the class)."""
    return SimpleSpeakerListener(continuous)


__all__ = [
    "COMM_DIM",
    "LISTENER",
    "SPEAKER",
    "SimpleSpeakerListener",
    "SpeakerListenerParams",
    "SpeakerListenerState",
    "make_simple_speaker_listener",
]
