"""The environment contract: `TimeStep`, `EnvParams` and the `Environment` base class.

Every marljax environment is a pair of pure functions over explicit state,

    reset(key, params)                 -> (state, timestep)
    step(key, state, actions, params)  -> (state, timestep)

in the style of gymnax. Everything a user may want to vary or sweep lives in `params`, a
`flax.struct` pytree that can be traced and vmapped; only shape-determining values (number of
agents, grid shape, history length) are attributes of the environment object.

Agents are a leading array axis: observations `[A, *obs_shape]`, actions `[A, *act_shape]`,
rewards `[A]`, action masks `[A, N]`. Termination and truncation are separate episode-level
flags; bootstrapping uses `timestep.discount`, derived from `terminated` only.
"""

from __future__ import annotations

import abc
from typing import Generic, TypeVar

import jax
import jax.numpy as jnp
from flax import struct

from marljax.core import spaces

Array = jax.Array
PRNGKey = jax.Array


@struct.dataclass
class EnvParams:
    """Base class for environment parameters (a traced pytree).

    Subclasses add fields with defaults; every field must be an array-like leaf so that a family
    of tasks is one `vmap` over a stacked params pytree. `max_steps` is the time limit after which
    an episode is *truncated* (not terminated).
    """

    max_steps: int = 100


@struct.dataclass
class TimeStep:
    """What an environment returns after `reset` and `step`.

    Attributes:
      obs: `[A, *obs_shape]` per-agent observations.
      reward: `[A]` float32 rewards for the transition that produced this timestep (zeros at reset).
      terminated: `[]` bool, the episode reached a terminal state (no bootstrapping).
      truncated: `[]` bool, the episode was cut by a time limit (bootstrap from `obs`).
      action_mask: `[A, N]` bool, legal discrete actions for the *next* step (`N = 0` for
        continuous action spaces).
      global_state: `[*state_shape]` centralised state for critics and mixers.
      extras: a dict of arrays with a fixed structure per environment (wrappers add to it, e.g.
        episode statistics). Its keys never change from step to step, so it is jit-friendly.
        Keys of the form `"group/name"` holding one scalar are per-episode metrics valid at
        episode ends (e.g. `"social/efficiency"`); the runner averages them over the episodes
        that finish in each update and reports them with the training metrics.
    """

    obs: Array
    reward: Array
    terminated: Array
    truncated: Array
    action_mask: Array
    global_state: Array
    extras: dict = struct.field(default_factory=dict)

    @property
    def done(self) -> Array:
        """`[]` bool, the episode ended for either reason."""
        return jnp.logical_or(self.terminated, self.truncated)

    @property
    def discount(self) -> Array:
        """`[]` float32, 0 at termination and 1 otherwise (truncation still bootstraps)."""
        return 1.0 - self.terminated.astype(jnp.float32)


StateT = TypeVar("StateT")
ParamsT = TypeVar("ParamsT", bound=EnvParams)


class Environment(abc.ABC, Generic[StateT, ParamsT]):
    """A multi-agent environment as pure functions.

    Subclasses hold only static, shape-determining configuration as attributes and implement
    `default_params`, `reset`, `step`, `observation_space`, `action_space` and
    `global_state_space`. Core environments do not auto-reset; use `marljax.core.wrappers.AutoReset`.

    Params values are checked in one place, `validate_params`, which `marljax.make` calls once
    after applying overrides. `param_ranges` is documentation, not a check: for the numeric
    params fields that may be varied freely, an inclusive range `(lo, hi)` inside which every
    value (each element, for array fields) gives a valid environment. The property tests
    (`tests/test_properties.py`) draw params inside these ranges for every registered env and
    require `validate_params` to accept them; a field that is not listed keeps its default
    (except `max_steps`, which is always varied over small values). Ranges may depend on the
    env's static attributes (e.g. a radius bounded by the arena of `num_agents`) and may be
    narrower than what `validate_params` accepts.
    """

    #: number of agents `A` (static).
    num_agents: int

    @property
    def name(self) -> str:
        return type(self).__name__

    @abc.abstractmethod
    def default_params(self) -> ParamsT:
        """The default (traced) parameters of this environment."""

    @abc.abstractmethod
    def reset(self, key: PRNGKey, params: ParamsT) -> tuple[StateT, TimeStep]:
        """Start an episode. Returns the initial state and a timestep with zero reward."""

    @abc.abstractmethod
    def step(
        self, key: PRNGKey, state: StateT, actions: Array, params: ParamsT
    ) -> tuple[StateT, TimeStep]:
        """Advance one step with joint `actions` of shape `[A, *act_shape]`.

        Out-of-range discrete actions are clipped into range and masked actions are executed as
        given (the fast path does not check); wrap the env in `ValidateActions` (or `make(...,
        debug=True)`) to raise an error naming the agent instead.
        """

    @abc.abstractmethod
    def observation_space(self, params: ParamsT) -> spaces.Space:
        """The space of ONE agent's observation; `timestep.obs` has shape `[A, *space.shape]`."""

    @abc.abstractmethod
    def action_space(self, params: ParamsT) -> spaces.Space:
        """The space of ONE agent's action; `actions` has shape `[A, *space.shape]`."""

    def global_state_space(self, params: ParamsT) -> spaces.Space:
        """The space of `timestep.global_state`. Defaults to all agents' observations, flattened."""
        obs = self.observation_space(params)
        return spaces.Box(-jnp.inf, jnp.inf, (self.num_agents * obs.flat_dim,), jnp.float32)

    def validate_params(self, params: ParamsT) -> None:
        """Raise `ValueError` naming the field if `params` is impossible for this env.

        The one check of params values: called once by `marljax.make` after overrides are
        applied, before anything is compiled, so impossible settings (e.g. an obstacle density
        that leaves no free cell) fail clearly. Runs on the host with concrete values; the
        default accepts everything. Wrappers that add params fields call the inner env's
        `validate_params`, then check their own fields.
        """
        del params

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        """Inclusive ranges `{field: (lo, hi)}` of the params fields that may be varied freely.

        Documentation for samplers and property tests, not a check (see `validate_params`).
        Every value inside a range (each element of an array field, independently of the other
        fields) must give a valid environment: `validate_params` accepts it and rollouts stay
        finite and within the declared spaces. Integer and boolean fields are drawn as integers
        (`(0, 1)` for a boolean). The default, `{}`, varies nothing but `max_steps`.
        """
        return {}

    @property
    def agent_types(self) -> Array:
        """`[A]` int32 type of each agent (heterogeneous agents are padded to one shape)."""
        return jnp.zeros((self.num_agents,), jnp.int32)

    @property
    def unwrapped(self) -> Environment:
        return self

    def __repr__(self) -> str:
        return f"{self.name}(num_agents={self.num_agents})"


def default_global_state(obs: Array) -> Array:
    """The default centralised state: every agent's observation, flattened and concatenated."""
    return obs.reshape(-1).astype(jnp.float32)
