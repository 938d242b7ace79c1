"""Turn some agents of a repeated matrix game into fixed scripted co-players.

`ScriptedCoPlayers(env, {1: tit_for_tat()})` is an `Environment` in which only the remaining
agents (the learners) act: every step it asks each scripted agent's `Strategy` for its action,
given the previous joint action and rewards of the inner game, inserts the learners' actions and
steps the inner game. Observations, rewards and action masks are sliced to the learners, in
increasing agent order; the global state is the inner game's.
"""

from __future__ import annotations

from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core.types import Array, Environment, EnvParams, PRNGKey, TimeStep
from marljax.core.wrappers import Wrapper
from marljax.envs.matrix.strategies import Strategy


@struct.dataclass
class CoPlayerState:
    """State of `ScriptedCoPlayers`."""

    inner: Any  # the inner game's state
    strategy_states: tuple  # one strategy state per scripted agent, in increasing agent order


def _game_state(state: Any) -> Any:
    """The innermost state carrying `last_actions` / `last_rewards` (follows `.inner`)."""
    while not hasattr(state, "last_actions"):
        if not hasattr(state, "inner"):
            raise TypeError(
                "ScriptedCoPlayers needs an env whose state (or a nested `.inner` state) has "
                f"`last_actions` and `last_rewards`, like MatrixGame's; got {type(state).__name__}"
            )
        state = state.inner
    return state


class ScriptedCoPlayers(Wrapper):
    """A repeated matrix game in which some agents follow fixed scripted strategies.

    The wrapped environment's agents are the learners, `num_agents = A - len(strategies)`, in
    increasing order of their index in the inner game. Actions passed to `step` are `[L]` for the
    `L` learners; `obs`, `reward` and `action_mask` come back sliced to them, `global_state` is
    the inner game's and `extras["coplayer_actions"]` (`[A - L]` int32, -1 at reset) records what
    the scripted agents played. Strategy states are re-initialised on `reset`, so the co-players
    restart with each episode under `AutoReset`.

    Args:
      env: the inner game (a `MatrixGame`, or any env whose state exposes `last_actions` `[A]`
        and `last_rewards` `[A]`, possibly under `.inner`).
      strategies: `{agent index: Strategy}` for the scripted agents.
    """

    def __init__(self, env: Environment, strategies: dict[int, Strategy]):
        super().__init__(env)
        total = env.num_agents
        if not strategies:
            raise ValueError("ScriptedCoPlayers needs at least one scripted agent")
        bad = [i for i in strategies if not 0 <= int(i) < total]
        if bad:
            raise ValueError(f"scripted agent indices {bad} out of range for {total} agents")
        if len(strategies) >= total:
            raise ValueError(
                "ScriptedCoPlayers needs at least one learner (not every agent scripted)"
            )
        self._scripted = tuple(sorted(int(i) for i in strategies))
        self._strategies = tuple(strategies[i] for i in self._scripted)
        self._learners = tuple(i for i in range(total) if i not in self._scripted)
        self.num_agents = len(self._learners)
        self.total_agents = total

    @property
    def learner_ids(self) -> tuple[int, ...]:
        """Indices in the inner game of the learners (the wrapped env's agents)."""
        return self._learners

    @property
    def scripted_ids(self) -> tuple[int, ...]:
        """Indices in the inner game of the scripted agents."""
        return self._scripted

    @property
    def name(self) -> str:
        return f"ScriptedCoPlayers<{self._env.name}>"

    @property
    def agent_types(self) -> Array:
        return self._env.agent_types[np.asarray(self._learners)]

    def _slice(self, ts: TimeStep, coplayer_actions: Array) -> TimeStep:
        idx = np.asarray(self._learners)
        return ts.replace(
            obs=ts.obs[idx],
            reward=ts.reward[idx],
            action_mask=ts.action_mask[idx],
            extras={**ts.extras, "coplayer_actions": coplayer_actions},
        )

    def reset(self, key: PRNGKey, params: EnvParams) -> tuple[CoPlayerState, TimeStep]:
        key_env, key_strat = jax.random.split(key)
        inner, ts = self._env.reset(key_env, params)
        keys = jax.random.split(key_strat, len(self._strategies))
        strat_states = tuple(s.init(k) for s, k in zip(self._strategies, keys, strict=True))
        none = jnp.full((len(self._scripted),), -1, jnp.int32)
        return CoPlayerState(inner, strat_states), self._slice(ts, none)

    def step(
        self, key: PRNGKey, state: CoPlayerState, actions: Array, params: EnvParams
    ) -> tuple[CoPlayerState, TimeStep]:
        key_env, key_strat = jax.random.split(key)
        game = _game_state(state.inner)
        keys = jax.random.split(key_strat, len(self._strategies))
        scripted, strat_states = [], []
        # Unrolled at trace time over the (static, few) scripted agents.
        for i, strat, s_state, k in zip(
            self._scripted, self._strategies, state.strategy_states, keys, strict=True
        ):
            a, s_state = strat.act(s_state, game.last_actions, game.last_rewards, i, k)
            scripted.append(jnp.asarray(a, jnp.int32))
            strat_states.append(s_state)
        scripted = jnp.stack(scripted)
        chex.assert_shape(actions, (self.num_agents,))
        joint = jnp.zeros((self.total_agents,), jnp.int32)
        joint = joint.at[np.asarray(self._learners)].set(jnp.asarray(actions).astype(jnp.int32))
        joint = joint.at[np.asarray(self._scripted)].set(scripted)
        inner, ts = self._env.step(key_env, state.inner, joint, params)
        return CoPlayerState(inner, tuple(strat_states)), self._slice(ts, scripted)
