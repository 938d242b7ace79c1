"""The agent contract: a bundle of pure functions, in the spirit of optax's GradientTransformation.

A factory (e.g. `marljax.agents.ppo.make_ppo(config, env, env_params)`) closes over static
structure (network sizes, parameter mode, loop lengths) and returns an `Agent`:

    init(key, hparams)                                      -> agent_state
    initial_carry(num_envs)                                 -> carry        (() if not recurrent)
    act(agent_state, carry, obs, key, hparams, greedy=False) -> (actions, carry, policy_info)
    update(agent_state, trajectory, hparams, key)           -> (agent_state, metrics)
    default_hparams()                                       -> hparams      (a traced pytree)
    get_params(agent_state)                                 -> AgentParams  (policy, critic)

Everything that changes during training lives in `agent_state` (a pytree); every numeric
hyperparameter that may be swept lives in `hparams` (a traced `flax.struct` pytree), so a grid of
hyperparameters is one `vmap`. `act` receives `hparams` because exploration schedules are traced
hyperparameters, and a `carry` because recurrent policies need one; both are `()`-cheap for agents
that do not use them. `act(..., greedy=True)` is the deterministic policy every agent has: the
mode of its action distribution (argmax of the logits, the Gaussian mean, tanh of the mean) or the
argmax of its Q-values; evaluation uses it. `greedy` is static (a Python bool).

The callables are typed by the Protocols below, so an editor and a type checker show what each
takes; an `Agent` is a NamedTuple of them, so it is cheap to build, to pass into `jit`, and to
wrap (replace one function, keep the rest).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import jax
from flax import struct

Array = jax.Array


@struct.dataclass
class Observation:
    """What the agents see at one step, for a batch of `E` environments.

    Attributes:
      obs: `[E, A, *obs_shape]` per-agent observations.
      action_mask: `[E, A, N]` bool legal actions (`N = 0` for continuous actions).
      global_state: `[E, *state_shape]` centralised state.
      reset: `[E]` bool, true where this observation starts a new episode; recurrent cores reset
        their carry there before reading it.
    """

    obs: Array
    action_mask: Array
    global_state: Array
    reset: Array


@struct.dataclass
class Trajectory:
    """`T` collected steps for `E` envs (every leaf has leading axes `[T, E]`).

    Attributes:
      observation: the `Observation` the agents acted on at each step.
      actions: `[T, E, A, *act_shape]`.
      reward: `[T, E, A]`.
      terminated: `[T, E]` bool, the step ended the episode in a terminal state.
      truncated: `[T, E]` bool, the step hit the time limit.
      next_obs: `[T, E, A, *obs_shape]` observation after the step (the *final* observation at
        episode ends), for bootstrapping.
      next_global_state: `[T, E, *state_shape]`, likewise.
      next_action_mask: `[T, E, A, N]`, likewise (for masked bootstrap targets).
      policy_info: agent-specific pytree returned by `act` (e.g. log-probabilities and values).
      last_observation: the observation after the final step (leaves `[E, ...]`, no time axis).
      initial_carry: the recurrent carry before the first step (leaves `[E, ...]`).
    """

    observation: Observation
    actions: Array
    reward: Array
    terminated: Array
    truncated: Array
    next_obs: Array
    next_global_state: Array
    next_action_mask: Array
    policy_info: Any
    last_observation: Observation
    initial_carry: Any


@struct.dataclass
class AgentParams:
    """The learned parameters of any agent, in one structure.

    Attributes:
      policy: what acting needs (actor network, Q-network; with a leading `[A]` axis in the
        independent parameter mode).
      critic: what only learning needs (value critic, Q-critics, mixer); None when the agent has
        none.
    """

    policy: Any
    critic: Any = None


class InitFn(Protocol):
    def __call__(self, key: Array, hparams: Any) -> Any:
        """A fresh agent state (parameters, optimiser state, buffers, counters)."""


class InitialCarryFn(Protocol):
    def __call__(self, num_envs: int) -> Any:
        """The recurrent carry for `num_envs` environments (leaves `[E, A, ...]`; () if none)."""


class ActFn(Protocol):
    def __call__(
        self,
        agent_state: Any,
        carry: Any,
        observation: Observation,
        key: Array,
        hparams: Any,
        greedy: bool = False,
    ) -> tuple[Array, Any, Any]:
        """`(actions [E, A, ...], carry, policy_info)` for one step of `E` environments.

        `greedy=True` (static) acts deterministically: the mode of the policy or argmax Q.
        """


class UpdateFn(Protocol):
    def __call__(
        self,
        agent_state: Any,
        trajectory: Trajectory,
        hparams: Any,
        key: Array,
        axis_name: str | None = None,
    ) -> tuple[Any, dict]:
        """Learn from `T` steps of `E` environments: `(agent_state, metrics)` (scalar metrics).

        `axis_name`: None, or the name of a mapped axis whose members each hold a share of the
        batch (the devices of a data-parallel run); gradients and batch statistics are then
        averaged over it, so every member takes the whole batch's step. The runner passes it
        only in a data-parallel layout; an update without the argument runs on one device.
        """


class GetParamsFn(Protocol):
    def __call__(self, agent_state: Any) -> AgentParams:
        """The agent's learned parameters (see `AgentParams`)."""


class CheckBatchFn(Protocol):
    def __call__(self, num_envs: int, rollout_len: int) -> None:
        """Raise a clear error, before any compile, when the batch does not fit the agent."""


class Agent(NamedTuple):
    """An agent as pure functions (see the module docstring)."""

    init: InitFn
    initial_carry: InitialCarryFn
    act: ActFn
    update: UpdateFn
    default_hparams: Callable[[], Any]
    #: the agent's learned parameters as an `AgentParams` (tests, checkpoints, evaluation).
    get_params: GetParamsFn
    #: `check_batch(num_envs, rollout_len)` raises a clear error, before any compile, if the
    #: runner's batch does not fit the agent (e.g. minibatch divisibility).
    check_batch: CheckBatchFn = lambda num_envs, rollout_len: None
    #: the static config the agent was built from (None for hand-built agents), and
    #: `rebuild(config)`: the same agent built from another config of its class. Data-parallel
    #: training uses both to give each device its share of the sizes declared
    #: `param(..., split=True)` (`marljax.core.config.split_config`).
    config: Any = None
    rebuild: Callable[[Any], Agent] | None = None
