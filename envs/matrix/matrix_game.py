"""N-player normal-form games, one-shot or repeated, as a pure-function environment.

One `MatrixGame` covers the whole family: the payoff tensor is a traced parameter, so a batch of
different games (or a sweep over payoff values) is one `vmap` over `MatrixGameParams`. A game with
`num_rounds = 1` is a one-shot normal-form game; with `num_rounds > 1` it is the repeated game, in
which every agent observes the previous joint action.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
from flax import struct

from marljax.core import spaces
from marljax.core.types import Array, Environment, EnvParams, PRNGKey, TimeStep
from marljax.envs.matrix.payoffs import prisoners_dilemma


@struct.dataclass
class MatrixGameParams(EnvParams):
    """Traced parameters of a `MatrixGame`.

    Attributes:
      max_steps: time limit; the episode is *truncated* (not terminated) after this many steps.
        Large by default so that `num_rounds` decides the episode length.
      payoffs: `[A, N, ..., N]` float32, `payoffs[i, a_0, ..., a_{A-1}]` is agent `i`'s payoff.
      num_rounds: the game *terminates* after this many rounds (1 = one-shot game).
    """

    max_steps: int = 1000
    payoffs: Array = struct.field(default_factory=prisoners_dilemma)
    num_rounds: int = 1


@struct.dataclass
class MatrixGameState:
    """State of a `MatrixGame` episode."""

    last_actions: Array  # [A] int32 previous joint action, -1 before the first round
    last_rewards: Array  # [A] float32 previous rewards, 0 before the first round
    t: Array  # [] int32 rounds played so far


class MatrixGame(Environment[MatrixGameState, MatrixGameParams]):
    """An N-player normal-form game, one-shot or repeated.

    Each step every agent picks one of `N` actions simultaneously and receives
    `payoffs[:, a_0, ..., a_{A-1}]`. The episode terminates after `params.num_rounds` rounds and
    is truncated after `params.max_steps` steps (if it has not terminated at the same step).

    Observation of agent `i` (`[A * N + 1]` float32): the one-hot previous actions of agents
    `i, i+1, ..., i-1` (egocentric order, wrapping around; all zeros before the first round),
    flattened, followed by a flag that is 1 in the first round. The global state (`[A * N + 2]`)
    is the previous joint action one-hot in agent order, the first-round flag and the fraction of
    rounds played. Every action is always legal. Out-of-range actions are clipped into range (the
    fast path; use `ValidateActions` to raise instead).

    Args:
      payoffs: `[A, N, ..., N]` default payoff tensor; fixes the static `num_agents` and
        `num_actions` and is the `payoffs` field of `default_params()`.
      num_rounds: default `num_rounds` of `default_params()`.
      max_steps: default `max_steps` of `default_params()`.
      name: a display name (e.g. the catalogue game's name).
    """

    def __init__(
        self,
        payoffs: npt.ArrayLike,
        num_rounds: int = 1,
        max_steps: int = 1000,
        name: str | None = None,
    ):
        table = np.asarray(payoffs, np.float32)
        num_agents = table.ndim - 1
        if num_agents < 1 or table.shape[0] != num_agents or len(set(table.shape[1:])) != 1:
            raise ValueError(
                "payoffs must have shape [A, N, ..., N] with one action axis per agent, "
                f"got {table.shape}"
            )
        self.num_agents = num_agents
        self.num_actions = int(table.shape[1])
        self._payoffs = table
        self._num_rounds = int(num_rounds)
        self._max_steps = int(max_steps)
        self._name = name
        a = np.arange(num_agents)
        # [A, A]: row i lists agents i, i+1, ..., i-1 (egocentric order).
        self._ego_index = (a[:, None] + a[None, :]) % num_agents
        # [A]: strides of the flattened joint-action index.
        self._strides = self.num_actions ** np.arange(num_agents - 1, -1, -1)

    @property
    def name(self) -> str:
        return f"MatrixGame<{self._name}>" if self._name else "MatrixGame"

    def __repr__(self) -> str:
        return f"{self.name}(num_agents={self.num_agents}, num_actions={self.num_actions})"

    def default_params(self) -> MatrixGameParams:
        return MatrixGameParams(
            max_steps=self._max_steps,
            payoffs=jnp.asarray(self._payoffs),
            num_rounds=self._num_rounds,
        )

    def validate_params(self, params: MatrixGameParams) -> None:
        """At least one round, and a payoff table of `payoff_shape`."""
        rounds = np.asarray(params.num_rounds)
        if (rounds < 1).any():
            raise ValueError(f"num_rounds must be >= 1 (1: a one-shot game), got {rounds.tolist()}")
        shape = np.shape(params.payoffs)
        if tuple(shape) != self.payoff_shape:
            raise ValueError(
                f"payoffs must have shape {self.payoff_shape} (agents x actions per agent), got "
                f"{tuple(shape)}"
            )

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        """Any payoff table and a few rounds give a valid game (see `Environment.param_ranges`)."""
        return {"payoffs": (-10.0, 10.0), "num_rounds": (1, 6)}

    @property
    def payoff_shape(self) -> tuple[int, ...]:
        """`(A, N, ..., N)`, the shape `params.payoffs` must have."""
        return (self.num_agents,) + (self.num_actions,) * self.num_agents

    def reset(self, key: PRNGKey, params: MatrixGameParams) -> tuple[MatrixGameState, TimeStep]:
        chex.assert_shape(params.payoffs, self.payoff_shape)
        state = MatrixGameState(
            last_actions=jnp.full((self.num_agents,), -1, jnp.int32),
            last_rewards=jnp.zeros((self.num_agents,), jnp.float32),
            t=jnp.int32(0),
        )
        zeros = jnp.zeros((self.num_agents,), jnp.float32)
        return state, self._timestep(state, params, zeros, jnp.array(False), jnp.array(False))

    def step(
        self, key: PRNGKey, state: MatrixGameState, actions: Array, params: MatrixGameParams
    ) -> tuple[MatrixGameState, TimeStep]:
        chex.assert_shape(params.payoffs, self.payoff_shape)
        chex.assert_shape(actions, (self.num_agents,))
        actions = jnp.clip(actions.astype(jnp.int32), 0, self.num_actions - 1)
        reward = payoff_of(params.payoffs, actions, self._strides)
        t = state.t + 1
        terminated = t >= params.num_rounds
        truncated = jnp.logical_and(t >= params.max_steps, ~terminated)
        state = MatrixGameState(last_actions=actions, last_rewards=reward, t=t)
        return state, self._timestep(state, params, reward, terminated, truncated)

    def _timestep(self, state, params, reward, terminated, truncated) -> TimeStep:
        onehot = jax.nn.one_hot(state.last_actions, self.num_actions, dtype=jnp.float32)  # [A, N]
        first = (state.t == 0).astype(jnp.float32)
        ego = onehot[self._ego_index].reshape(self.num_agents, -1)  # [A, A * N]
        obs = jnp.concatenate([ego, jnp.broadcast_to(first, (self.num_agents, 1))], axis=-1)
        frac = jnp.minimum(state.t / jnp.maximum(params.num_rounds, 1), 1.0).astype(jnp.float32)
        global_state = jnp.concatenate([onehot.reshape(-1), first[None], frac[None]])
        return TimeStep(
            obs=obs,
            reward=reward,
            terminated=jnp.asarray(terminated, jnp.bool_),
            truncated=jnp.asarray(truncated, jnp.bool_),
            action_mask=jnp.ones((self.num_agents, self.num_actions), jnp.bool_),
            global_state=global_state,
        )

    def observation_space(self, params: MatrixGameParams) -> spaces.Box:
        return spaces.Box(0.0, 1.0, (self.num_agents * self.num_actions + 1,), jnp.float32)

    def action_space(self, params: MatrixGameParams) -> spaces.Discrete:
        return spaces.Discrete(self.num_actions)

    def global_state_space(self, params: MatrixGameParams) -> spaces.Box:
        return spaces.Box(0.0, 1.0, (self.num_agents * self.num_actions + 2,), jnp.float32)


def payoff_of(payoffs: Array, actions: Array, strides: npt.ArrayLike | None = None) -> Array:
    """Every agent's payoff for one joint action.

    Args:
      payoffs: `[A, N, ..., N]` payoff tensor.
      actions: `[A]` int joint action (assumed in range).
      strides: optional precomputed `[A]` strides `N**(A-1), ..., N, 1` of the joint index.

    Returns:
      `[A]` float32 payoffs `payoffs[:, a_0, ..., a_{A-1}]`.
    """
    num_agents, num_actions = payoffs.shape[0], payoffs.shape[1]
    if strides is None:
        strides = num_actions ** np.arange(num_agents - 1, -1, -1)
    flat = jnp.sum(actions.astype(jnp.int32) * jnp.asarray(strides, jnp.int32))
    return payoffs.reshape(num_agents, -1)[:, flat].astype(jnp.float32)
