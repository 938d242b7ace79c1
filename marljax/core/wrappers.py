"""Pure, composable environment wrappers.

Every wrapper is itself an `Environment`: it keeps the inner env's `params`, wraps the inner
state in its own `flax.struct` state, and may add keys to `timestep.extras`.

The standard per-environment stack is `EpisodeStats(AutoReset(env))` (see `wrap_for_training`);
the runner uses the batch-level `BatchedAutoReset(EpisodeStats(env))`, which resets only on
steps where some episode ended.
history must be inside the auto-reset so that it restarts with each episode:
`EpisodeStats(AutoReset(ObsHistory(env, k)))`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax.custom_batching import custom_vmap

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

    def validate_params(self, params) -> None:
        self._env.validate_params(params)

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
    `action_mask` of the *new* episode; the final ones are in `extras["final_obs"]`,
    `extras["final_global_state"]` and `extras["final_action_mask"]`, for bootstrapping at
    truncation.

    The reset is a `lax.cond` (paid only at episode ends when unbatched; under `vmap` both
    branches run, which costs one reset per step).
    """

    def reset(self, key: PRNGKey, params: EnvParams) -> tuple[Any, TimeStep]:
        state, ts = self._env.reset(key, params)
        return state, self._add_final(ts, ts)

    @staticmethod
    def _add_final(ts: TimeStep, final: TimeStep) -> TimeStep:
        """`ts` with the observation fields of `final` (the step's own result) in its extras."""
        extras = {
            **ts.extras,
            "final_obs": final.obs,
            "final_global_state": final.global_state,
            "final_action_mask": final.action_mask,
        }
        return ts.replace(extras=extras)

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
        return state_re, self._add_final(ts, ts_st)


@struct.dataclass
class EpisodeStatsState:
    inner: Any
    episode_return: Array  # [A] running return of the current episode
    episode_length: Array  # [] steps so far in the current episode


class EpisodeStats(Wrapper):
    """Tracks undiscounted per-agent returns and episode lengths.

    Adds `extras["episode_return"]` (`[A]`) and `extras["episode_length"]` (`[]`): at a step where
    `timestep.done` is true they are the finished episode's totals, and zeros at every other step
    (so the values never depend on how, or whether, the env is reset afterwards). Put it outside
    `AutoReset` (or inside `BatchedAutoReset`).
    """

    def reset(self, key, params):
        inner, ts = self._env.reset(key, params)
        state = EpisodeStatsState(inner, jnp.zeros((self.num_agents,), jnp.float32), jnp.int32(0))
        return state, self._add(ts, jnp.zeros((self.num_agents,), jnp.float32), jnp.int32(0))

    @staticmethod
    def _add(ts: TimeStep, episode_return: Array, episode_length: Array) -> TimeStep:
        return ts.replace(
            extras={**ts.extras, "episode_return": episode_return, "episode_length": episode_length}
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
        )
        return new, self._add(ts, jnp.where(done, ret, 0.0), jnp.where(done, length, 0))


@custom_vmap
def any_across_vmap(pred: Array) -> Array:
    """`pred` (a scalar bool), reduced with "any" over every enclosing `vmap` axis.

    Outside `vmap` it is the identity. Under `vmap` (any depth, named or not) its batching rule
    reduces over the mapped axis and returns an UNBATCHED value, so a `lax.cond` on it stays a real
    branch instead of becoming a select that runs both branches (e.g. a reset on every step).
    """
    return pred


@any_across_vmap.def_vmap
def _any_across_vmap_rule(axis_size, in_batched, pred):
    del axis_size
    if in_batched[0]:
        pred = jnp.any(pred, axis=0)
    return any_across_vmap(pred), False  # the call again: reduces over outer vmap axes too


class BatchedAutoReset:
    """Auto-reset for a batch of `E` environments that pays for resets only when an episode ends.

    `AutoReset` decides per environment with a `lax.cond`, which `vmap` turns into a select: the
    reset (e.g. generating a new map) then runs on EVERY step. This batch-level version steps all
    `E` environments, then runs ONE `lax.cond` on "did any environment end?" and only then resets
    and selects the ended ones. The predicate is reduced over every enclosing `vmap` axis
    (`any_across_vmap`: seeds and hparams of a sweep, or a user's own `vmap(trainer.train)`), so it
    stays a real branch in a whole sweep. With synchronised fixed-length episodes (the common case)
    no step but the last of an episode pays for a reset. Results are identical to
    `vmap(AutoReset)`.

    Same conventions as `AutoReset`: after an ended episode, `obs`, `global_state` and
    `action_mask` are the new episode's; the final ones are in `extras["final_obs"]`,
    `extras["final_global_state"]` and `extras["final_action_mask"]`.

    Args:
      env: a per-environment `Environment` (wrappers such as `EpisodeStats` go inside).
      axis_names: names of enclosing mapped axes to also `psum` the predicate over (not needed
        for `vmap`; kept for collectives over named axes such as `shard_map`'s).
    """

    def __init__(self, env: Environment, axis_names: tuple[str, ...] = ()):
        self.env = env
        self.num_agents = env.num_agents
        self.axis_names = tuple(axis_names)

    def reset(self, keys: Array, params: EnvParams) -> tuple[Any, TimeStep]:
        """Reset `E = len(keys)` environments; leaves `[E, ...]`."""
        states, ts = jax.vmap(self.env.reset, in_axes=(0, None))(keys, params)
        return states, AutoReset._add_final(ts, ts)

    def step(self, keys: Array, states: Any, actions: Array, params: EnvParams):
        """Step `E` environments with `actions [E, A, ...]`, resetting those whose episode ended."""
        split = jax.vmap(jax.random.split)(keys)
        key_step, key_reset = split[:, 0], split[:, 1]
        states_st, ts_st = jax.vmap(self.env.step, in_axes=(0, 0, 0, None))(
            key_step, states, actions, params
        )
        done = ts_st.done  # [E]
        any_done = any_across_vmap(jnp.any(done))
        if self.axis_names:
            any_done = jax.lax.psum(any_done.astype(jnp.int32), self.axis_names) > 0

        def _select(new, old):
            mask = done.reshape(done.shape + (1,) * (new.ndim - 1))
            return jnp.where(mask, new, old)

        def _reset(_):
            states_re, ts_re = jax.vmap(self.env.reset, in_axes=(0, None))(key_reset, params)
            fields = (ts_re.obs, ts_re.global_state, ts_re.action_mask)
            return jax.tree.map(_select, (states_re, fields), (states_st, _fields(ts_st)))

        def _keep(_):
            return states_st, _fields(ts_st)

        states_new, (obs, gs, mask) = jax.lax.cond(any_done, _reset, _keep, None)
        ts = ts_st.replace(obs=obs, global_state=gs, action_mask=mask)
        return states_new, AutoReset._add_final(ts, ts_st)


def _fields(ts: TimeStep) -> tuple[Array, Array, Array]:
    return ts.obs, ts.global_state, ts.action_mask


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
        # The env steps on the callback's output (the actions, unchanged), so the step's results
        # depend on the check: an invalid action fails THIS call, also on an accelerator, where
        # an effect-only callback's error surfaces only at a later call.
        if not any(isinstance(x, jax.core.Tracer) for x in (actions, in_space, allowed)):
            _raise_invalid(actions, in_space, allowed)
        else:
            actions = jax.pure_callback(
                _checked_actions,
                jax.ShapeDtypeStruct(actions.shape, actions.dtype),
                actions,
                in_space,
                allowed,
                vmap_method="broadcast_all",
            )
        inner, ts = self._env.step(key, inner, actions, params)
        return (inner, ts.action_mask), ts


def _checked_actions(actions, in_space, allowed) -> np.ndarray:
    """`actions` unchanged, after `_raise_invalid` (host side of `ValidateActions`)."""
    _raise_invalid(actions, in_space, allowed)
    return np.asarray(actions)


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
    """The standard per-environment stack: `EpisodeStats(AutoReset(env))`.

    The runner uses the batch-level equivalent, `BatchedAutoReset(EpisodeStats(env))`, which
    gives the same results without paying for a reset on every step.
    """
    return EpisodeStats(AutoReset(env))
