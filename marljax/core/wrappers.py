"""Pure, composable environment wrappers.

Every wrapper is itself an `Environment`: it keeps the inner env's `params`, wraps the inner
state in its own `flax.struct` state, and may add keys to `timestep.extras`.

The standard training stack is `EpisodeStats(AutoReset(env))` (see `wrap_for_training`);
history must be inside the auto-reset so that it restarts with each episode:
`EpisodeStats(AutoReset(ObsHistory(env, k)))`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core import spaces
from marljax.core.types import Array, Environment, EnvParams, PRNGKey, TimeStep


class Wrapper(Environment):
    """Base wrapper: delegates everything to the inner env."""

    def __init__(self, env: Environment):
        self._env = env
        self.num_agents = env.num_agents

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes the wrapper does not define itself.
        if name == "_env":
            raise AttributeError(name)
        return getattr(self._env, name)

    @property
    def name(self) -> str:
        return f"{type(self).__name__}<{self._env.name}>"

    @property
    def unwrapped(self) -> Environment:
        return self._env.unwrapped

    @property
    def agent_types(self) -> Array:
        return self._env.agent_types

    def default_params(self) -> EnvParams:
        return self._env.default_params()

    def reset(self, key, params):
        return self._env.reset(key, params)

    def step(self, key, state, actions, params):
        return self._env.step(key, state, actions, params)

    def observation_space(self, params):
        return self._env.observation_space(params)

    def action_space(self, params):
        return self._env.action_space(params)

    def global_state_space(self, params):
        return self._env.global_state_space(params)


class AutoReset(Wrapper):
    """Resets the inner env when an episode ends, keeping the final observation.

    After a step that ends an episode (`terminated` or `truncated`), the returned timestep carries
    the reward, flags and `extras` of the final transition, but `obs`, `global_state` and
    `action_mask` of the *new* episode; the final ones are in `extras["final_obs"]` and
    `extras["final_global_state"]`, for bootstrapping at truncation.

    The reset is a `lax.cond` (paid only at episode ends when unbatched; under `vmap` both
    branches run, which costs one reset per step).
    """

    def reset(self, key: PRNGKey, params: EnvParams) -> tuple[Any, TimeStep]:
        state, ts = self._env.reset(key, params)
        return state, self._add_final(ts, ts.obs, ts.global_state)

    @staticmethod
    def _add_final(ts: TimeStep, final_obs: Array, final_gs: Array) -> TimeStep:
        return ts.replace(
            extras={**ts.extras, "final_obs": final_obs, "final_global_state": final_gs}
        )

    def step(self, key, state, actions, params):
        key_step, key_reset = jax.random.split(key)
        state_st, ts_st = self._env.step(key_step, state, actions, params)

        def _reset(_):
            return self._env.reset(key_reset, params)

        def _keep(_):
            return state_st, ts_st

        state_re, ts_re = jax.lax.cond(ts_st.done, _reset, _keep, None)
        ts = ts_st.replace(
            obs=ts_re.obs, global_state=ts_re.global_state, action_mask=ts_re.action_mask
        )
        return state_re, self._add_final(ts, ts_st.obs, ts_st.global_state)


@struct.dataclass
class EpisodeStatsState:
    inner: Any
    episode_return: Array  # [A] running return of the current episode
    episode_length: Array  # [] steps so far in the current episode
    last_return: Array  # [A] return of the most recently finished episode
    last_length: Array  # [] length of the most recently finished episode


class EpisodeStats(Wrapper):
    """Tracks undiscounted per-agent returns and episode lengths.

    Adds `extras["episode_return"]` (`[A]`) and `extras["episode_length"]` (`[]`): at a step where
    `timestep.done` is true they are the finished episode's totals; otherwise those of the last
    finished episode. Put it outside `AutoReset`.
    """

    def reset(self, key, params):
        inner, ts = self._env.reset(key, params)
        zeros_a = jnp.zeros((self.num_agents,), jnp.float32)
        state = EpisodeStatsState(inner, zeros_a, jnp.int32(0), zeros_a, jnp.int32(0))
        return state, self._add(ts, state)

    @staticmethod
    def _add(ts: TimeStep, state: EpisodeStatsState) -> TimeStep:
        return ts.replace(
            extras={
                **ts.extras,
                "episode_return": state.last_return,
                "episode_length": state.last_length,
            }
        )

    def step(self, key, state: EpisodeStatsState, actions, params):
        inner, ts = self._env.step(key, state.inner, actions, params)
        ret = state.episode_return + ts.reward.astype(jnp.float32)
        length = state.episode_length + 1
        done = ts.done
        new = EpisodeStatsState(
            inner=inner,
            episode_return=jnp.where(done, 0.0, ret),
            episode_length=jnp.where(done, 0, length),
            last_return=jnp.where(done, ret, state.last_return),
            last_length=jnp.where(done, length, state.last_length),
        )
        return new, self._add(ts, new)


@struct.dataclass
class ObsHistoryState:
    inner: Any
    history: Array  # [A, K, D] last K flattened observations, newest last


class ObsHistory(Wrapper):
    """Observation = the last `k` observations, flattened: `[A, k * D]` (newest last).

    Slots before the first observation are zeros. Used for repeated games (a window of past joint
    actions). Put it inside `AutoReset` so the window restarts with each episode. The global state
    is the inner env's.
    """

    def __init__(self, env: Environment, k: int):
        super().__init__(env)
        if int(k) < 1:
            raise ValueError(f"ObsHistory needs k >= 1, got {k}")
        self.k = int(k)

    def _flat(self, obs: Array) -> Array:
        return obs.reshape(self.num_agents, -1).astype(jnp.float32)

    def reset(self, key, params):
        inner, ts = self._env.reset(key, params)
        flat = self._flat(ts.obs)
        hist = jnp.zeros((self.num_agents, self.k, flat.shape[-1]), jnp.float32)
        hist = hist.at[:, -1].set(flat)
        return ObsHistoryState(inner, hist), ts.replace(obs=hist.reshape(self.num_agents, -1))

    def step(self, key, state: ObsHistoryState, actions, params):
        inner, ts = self._env.step(key, state.inner, actions, params)
        hist = jnp.concatenate([state.history[:, 1:], self._flat(ts.obs)[:, None]], axis=1)
        return ObsHistoryState(inner, hist), ts.replace(obs=hist.reshape(self.num_agents, -1))

    def observation_space(self, params):
        inner = self._env.observation_space(params)
        return spaces.Box(-jnp.inf, jnp.inf, (self.k * inner.flat_dim,), jnp.float32)

    def global_state_space(self, params):
        return self._env.global_state_space(params)


class InvalidActionError(ValueError):
    """An action outside the action space, or a masked action, was passed to `step`."""


class ValidateActions(Wrapper):
    """Debug mode: raise `InvalidActionError` naming the agent for illegal actions.

    Checks that each agent's action lies in the action space and, for discrete actions, that it
    is not masked by the previous timestep's `action_mask`. The check runs on the host through
    `jax.debug.callback` (it works under `jit` and `vmap` but slows every step; use it to debug,
    not to train). Under `jit` the error surfaces as a runtime error carrying the same message.
    """

    def reset(self, key, params):
        state, ts = self._env.reset(key, params)
        return (state, ts.action_mask), ts

    def step(self, key, state, actions, params):
        inner, mask = state
        space = self._env.action_space(params)
        in_space = jax.vmap(space.contains)(actions)
        if isinstance(space, spaces.Discrete):
            idx = jnp.clip(actions.astype(jnp.int32), 0, space.n - 1)
            allowed = jnp.take_along_axis(mask, idx[:, None], axis=1)[:, 0]
        else:
            allowed = jnp.ones_like(in_space)
        jax.debug.callback(_raise_invalid, actions, in_space, allowed, ordered=True)
        inner, ts = self._env.step(key, inner, actions, params)
        return (inner, ts.action_mask), ts


def _raise_invalid(actions, in_space, allowed) -> None:
    actions, in_space, allowed = map(np.asarray, (actions, in_space, allowed))
    if in_space.ndim > 1:  # called under vmap: leading batch axes
        actions = actions.reshape((-1,) + actions.shape[in_space.ndim - 1 :])
        in_space, allowed = (
            in_space.reshape(-1, in_space.shape[-1]),
            allowed.reshape(-1, allowed.shape[-1]),
        )
        for b in range(in_space.shape[0]):
            _raise_invalid(actions[b], in_space[b], allowed[b])
        return
    for i in range(in_space.shape[0]):
        if not in_space[i]:
            raise InvalidActionError(
                f"agent {i}: action {actions[i].tolist()} is outside the action space"
            )
        if not allowed[i]:
            raise InvalidActionError(f"agent {i}: action {actions[i].tolist()} is masked (illegal)")


def wrap_for_training(env: Environment) -> Environment:
    """The standard stack used by the runner: `EpisodeStats(AutoReset(env))`."""
    return EpisodeStats(AutoReset(env))
