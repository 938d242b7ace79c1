"""The two-step game of QMIX (Rashid et al. 2018, Fig. 3).

A two-agent, two-action, two-step cooperative game where the best first move only pays off if the
agents then coordinate on the joint action (1, 1): the canonical example of a value function that
VDN's additive factorisation cannot represent but QMIX's monotonic mixing can.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
from flax import struct

from marljax.core import spaces
from marljax.core.types import Array, Environment, EnvParams, PRNGKey, TimeStep

#: index of each state in `TwoStepState.stage` and in the one-hot observation.
STATE_1, STATE_2A, STATE_2B = 0, 1, 2


def _default_payoffs_2b() -> Array:
    return jnp.array([[0.0, 1.0], [1.0, 8.0]], jnp.float32)


@struct.dataclass
class TwoStepParams(EnvParams):
    """Traced parameters of the two-step game.

    Attributes:
      max_steps: time limit (truncation); the game terminates after 2 steps anyway.
      value_2a: `[]` payoff of every joint action in state 2A (7 in the paper).
      payoffs_2b: `[N, N]` common payoff in state 2B, indexed `[agent 0's action, agent 1's]`
        (`[[0, 1], [1, 8]]` in the paper).
    """

    max_steps: int = 100
    value_2a: float = 7.0
    payoffs_2b: Array = struct.field(default_factory=_default_payoffs_2b)


@struct.dataclass
class TwoStepState:
    """State of a two-step game episode."""

    stage: Array  # [] int32 current state: 0 = state 1, 1 = state 2A, 2 = state 2B
    t: Array  # [] int32 steps taken


class TwoStepGame(Environment[TwoStepState, TwoStepParams]):
    """The QMIX two-step game: 2 agents, 2 actions, common reward.

    Step 1 (state 1): agent 0's action selects the next state, 2A (action 0) or 2B (action 1);
    agent 1's action is irrelevant; reward 0. Step 2: in state 2A every joint action pays
    `params.value_2a` (7); in state 2B the joint action `(a_0, a_1)` pays
    `params.payoffs_2b[a_0, a_1]` (`[[0, 1], [1, 8]]`). The episode terminates after step 2, so
    the optimal return is 8 (action 1, then (1, 1)) and the safe return is 7 (action 0).

    Both agents observe the one-hot current state `[3]` (state 1, 2A, 2B); the global state is the
    same one-hot. After the final step the observation shows the state the second step was played
    in. Every action is legal; out-of-range actions are clipped into range.

    Reference: T. Rashid et al., "QMIX: Monotonic value function factorisation for deep
    multi-agent reinforcement learning", ICML 2018, Fig. 3.
    """

    num_agents = 2
    num_actions = 2

    def default_params(self) -> TwoStepParams:
        return TwoStepParams()

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        """Any payoffs give a valid game (see `Environment.param_ranges`)."""
        return {"value_2a": (-10.0, 10.0), "payoffs_2b": (-10.0, 10.0)}

    def reset(self, key: PRNGKey, params: TwoStepParams) -> tuple[TwoStepState, TimeStep]:
        state = TwoStepState(stage=jnp.int32(STATE_1), t=jnp.int32(0))
        zeros = jnp.zeros((self.num_agents,), jnp.float32)
        return state, self._timestep(state, zeros, jnp.array(False), jnp.array(False))

    def step(
        self, key: PRNGKey, state: TwoStepState, actions: Array, params: TwoStepParams
    ) -> tuple[TwoStepState, TimeStep]:
        chex.assert_shape(actions, (self.num_agents,))
        chex.assert_shape(params.payoffs_2b, (self.num_actions, self.num_actions))
        a = jnp.clip(actions.astype(jnp.int32), 0, self.num_actions - 1)
        first = state.stage == STATE_1
        second_reward = jnp.where(
            state.stage == STATE_2A,
            jnp.asarray(params.value_2a, jnp.float32),
            params.payoffs_2b[a[0], a[1]].astype(jnp.float32),
        )
        reward = jnp.where(first, 0.0, second_reward)
        stage = jnp.where(first, STATE_2A + a[0], state.stage).astype(jnp.int32)
        t = state.t + 1
        terminated = t >= 2
        truncated = jnp.logical_and(t >= params.max_steps, ~terminated)
        state = TwoStepState(stage=stage, t=t)
        rewards = jnp.full((self.num_agents,), reward, jnp.float32)
        return state, self._timestep(state, rewards, terminated, truncated)

    def _timestep(self, state: TwoStepState, reward, terminated, truncated) -> TimeStep:
        onehot = jax.nn.one_hot(state.stage, 3, dtype=jnp.float32)
        return TimeStep(
            obs=jnp.broadcast_to(onehot, (self.num_agents, 3)),
            reward=reward,
            terminated=jnp.asarray(terminated, jnp.bool_),
            truncated=jnp.asarray(truncated, jnp.bool_),
            action_mask=jnp.ones((self.num_agents, self.num_actions), jnp.bool_),
            global_state=onehot,
        )

    def observation_space(self, params: TwoStepParams) -> spaces.Box:
        return spaces.Box(0.0, 1.0, (3,), jnp.float32)

    def action_space(self, params: TwoStepParams) -> spaces.Discrete:
        return spaces.Discrete(self.num_actions)

    def global_state_space(self, params: TwoStepParams) -> spaces.Box:
        return spaces.Box(0.0, 1.0, (3,), jnp.float32)
