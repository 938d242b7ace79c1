"""Policy heads: how a network's output becomes an action distribution, behind one small protocol.

A `PolicyHead` turns the last layer of an actor network (`[..., num_outputs]`) into an
`ActionDistribution` over ONE agent's action per batch element (batch shape `[...]`, typically
`[E, A]` or `[T, B, A]`). Every distribution has the same five methods, all in the environment's
action units (a tanh-Gaussian's samples are already rescaled to the action box):

    sample(key) -> actions [..., *act_shape]
    log_prob(actions) -> [...]
    entropy() -> [...]
    mode() -> actions             the deterministic (greedy) action
    sample_and_log_prob(key) -> (actions, log_prob)

Heads:

- `CategoricalHead(num_actions)`: masked categorical over `N` actions (illegal actions get zero
  probability); mode = argmax of the masked logits.
- `GaussianHead(action_dim)`: diagonal Gaussian with a learned state-independent `log_std`;
  mode = the mean.
- `TanhGaussianHead(action_dim, low, high)`: tanh-squashed diagonal Gaussian, rescaled affinely
  from `(-1, 1)` to the box `[low, high]`; mode = `tanh(mean)` rescaled.

A head may own parameters (`init_params()`, e.g. the Gaussian's `log_std`), handed back to
`__call__`. `head_for_space` picks the default head of an action space, and `check_head` refuses a
head that does not fit one, naming both shapes. A joint policy over all agents (e.g. the
Bayesian-network policy of `marljax.agents.bn`) implements `JointPolicy`; `IndependentPolicy`
is the joint policy of independent per-agent heads.

The distributions are built on `marljax.nn.distributions` (so distrax stays behind one module).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from marljax.core import spaces
from marljax.nn import distributions

Array = jax.Array


class ActionDistribution(Protocol):
    """A distribution over one agent's action per batch element (batch shape `[...]`)."""

    def sample(self, key: Array) -> Array:
        """`[..., *act_shape]` actions (environment units)."""

    def log_prob(self, actions: Array) -> Array:
        """`[...]` log-probabilities of `actions` (environment units)."""

    def entropy(self) -> Array:
        """`[...]` entropies (a tanh-Gaussian's is its pre-squash Gaussian's)."""

    def mode(self) -> Array:
        """`[..., *act_shape]` the deterministic (greedy) action."""

    def sample_and_log_prob(self, key: Array) -> tuple[Array, Array]:
        """`(actions, log_prob)` in one pass."""


class PolicyHead(Protocol):
    """Maps an actor network's output `[..., num_outputs]` to an `ActionDistribution`.

    Attributes:
      num_outputs: the width of the network output the head reads.
      action_shape: the shape of one action (`()` for discrete actions).
      discrete: whether the actions are integers (then `num_outputs` is the number of actions).
    """

    num_outputs: int
    action_shape: tuple[int, ...]
    discrete: bool

    def init_params(self) -> dict | None:
        """The head's own parameters (e.g. `{"log_std": [D]}`), or None if it has none."""

    def __call__(self, outputs: Array, params: Any, mask: Array | None) -> ActionDistribution:
        """The distribution of `outputs [..., num_outputs]` (`mask [..., N]` legal actions)."""


class _Sampled:
    """Shared `sample_and_log_prob`: sample, then score the sample."""

    def sample_and_log_prob(self, key: Array) -> tuple[Array, Array]:
        actions = self.sample(key)
        return actions, self.log_prob(actions)


class Categorical(_Sampled):
    """Masked categorical distribution (`distributions.masked_categorical`), int32 actions."""

    def __init__(self, logits: Array, mask: Array | None = None):
        self.dist = distributions.masked_categorical(logits, mask)

    def sample(self, key: Array) -> Array:
        return self.dist.sample(seed=key).astype(jnp.int32)

    def log_prob(self, actions: Array) -> Array:
        return self.dist.log_prob(actions)

    def entropy(self) -> Array:
        return self.dist.entropy()

    def mode(self) -> Array:
        return jnp.argmax(self.dist.logits, axis=-1).astype(jnp.int32)


class DiagGaussian(_Sampled):
    """Diagonal Gaussian (`distributions.diag_gaussian`) over `[..., D]` actions."""

    def __init__(self, mean: Array, log_std: Array):
        self.mean = mean
        self.dist = distributions.diag_gaussian(mean, jnp.broadcast_to(log_std, mean.shape))

    def sample(self, key: Array) -> Array:
        return self.dist.sample(seed=key)

    def log_prob(self, actions: Array) -> Array:
        return self.dist.log_prob(actions)

    def entropy(self) -> Array:
        return self.dist.entropy()

    def mode(self) -> Array:
        return self.mean


def to_box(a: Array, low: Array, high: Array) -> Array:
    """Actions in the unit box `[-1, 1]` -> the action box `[low, high]` (affine)."""
    return low + (a + 1.0) * 0.5 * (high - low)


def from_box(a: Array, low: Array, high: Array) -> Array:
    """Actions in the box `[low, high]` -> the unit box `[-1, 1]` (the inverse of `to_box`)."""
    return 2.0 * (a - low) / (high - low) - 1.0


class RescaledTanhGaussian:
    """`distributions.TanhGaussian` mapped affinely from `(-1, 1)` to the box `[low, high]`.

    The log-probability is that of the squashed action in `(-1, 1)` (the affine map's constant
    Jacobian cancels in every ratio and gradient PPO and SAC take).
    """

    def __init__(self, mean: Array, log_std: Array, low: Array, high: Array):
        self.dist = distributions.TanhGaussian(mean, jnp.broadcast_to(log_std, mean.shape))
        self.low, self.high = low, high

    def _to_box(self, a: Array) -> Array:
        return to_box(a, self.low, self.high)

    def _from_box(self, a: Array) -> Array:
        return from_box(a, self.low, self.high)

    def sample(self, key: Array) -> Array:
        return self._to_box(self.dist.sample(key))

    def sample_and_log_prob(self, key: Array) -> tuple[Array, Array]:
        a, log_prob = self.dist.sample_and_log_prob(key)
        return self._to_box(a), log_prob

    def log_prob(self, actions: Array) -> Array:
        return self.dist.log_prob(self._from_box(actions))

    def entropy(self) -> Array:
        return self.dist.entropy()

    def mode(self) -> Array:
        return self._to_box(self.dist.mode())


@dataclasses.dataclass(frozen=True)
class CategoricalHead:
    """Masked categorical over `num_actions` actions; the network outputs the logits."""

    num_actions: int
    discrete: bool = dataclasses.field(default=True, init=False)

    @property
    def num_outputs(self) -> int:
        return self.num_actions

    @property
    def action_shape(self) -> tuple[int, ...]:
        return ()

    def init_params(self) -> None:
        return None

    def __call__(self, outputs: Array, params: Any, mask: Array | None) -> Categorical:
        return Categorical(outputs, mask)


@dataclasses.dataclass(frozen=True)
class GaussianHead:
    """Diagonal Gaussian over `[action_dim]` actions: the network outputs the mean, a learned
    state-independent `log_std` (initialised at 0) sets the scale."""

    action_dim: int
    discrete: bool = dataclasses.field(default=False, init=False)

    @property
    def num_outputs(self) -> int:
        return self.action_dim

    @property
    def action_shape(self) -> tuple[int, ...]:
        return (self.action_dim,)

    def init_params(self) -> dict:
        return {"log_std": jnp.zeros((self.action_dim,), jnp.float32)}

    def __call__(self, outputs: Array, params: Any, mask: Array | None) -> DiagGaussian:
        return DiagGaussian(outputs, params["log_std"])


@dataclasses.dataclass(frozen=True, eq=False)
class TanhGaussianHead(GaussianHead):
    """`GaussianHead` squashed by tanh and rescaled to the action box `[low, high]` (`[D]` each)."""

    low: Any = -1.0
    high: Any = 1.0

    def __call__(self, outputs: Array, params: Any, mask: Array | None) -> RescaledTanhGaussian:
        low = jnp.broadcast_to(jnp.asarray(self.low, jnp.float32), (self.action_dim,))
        high = jnp.broadcast_to(jnp.asarray(self.high, jnp.float32), (self.action_dim,))
        return RescaledTanhGaussian(outputs, params["log_std"], low, high)


def head_for_space(space: spaces.Space, tanh_squash: bool = False) -> PolicyHead:
    """The default head of an action space: categorical (Discrete), (tanh-)Gaussian (Box).

    Raises:
      NotImplementedError: for other spaces.
    """
    if isinstance(space, spaces.Discrete):
        return CategoricalHead(space.n)
    if isinstance(space, spaces.Box):
        if tanh_squash:
            return TanhGaussianHead(space.flat_dim, np.asarray(space.low), np.asarray(space.high))
        return GaussianHead(space.flat_dim)
    raise NotImplementedError(f"no policy head for the action space {space}")


def check_head(head: PolicyHead, space: spaces.Space) -> None:
    """Raise a `ValueError` naming both shapes when `head` does not fit the action space."""
    if isinstance(space, spaces.Discrete):
        want, ok = f"{space.n} discrete actions", head.discrete and head.num_outputs == space.n
    elif isinstance(space, spaces.Box):
        want = f"continuous actions of shape {space.shape}"
        ok = not head.discrete and tuple(head.action_shape) == (space.flat_dim,)
    else:
        raise NotImplementedError(f"no policy head for the action space {space}")
    if not ok:
        kind = "discrete" if head.discrete else "continuous"
        raise ValueError(
            f"policy head {type(head).__name__} gives {kind} actions of shape "
            f"{tuple(head.action_shape)} from {head.num_outputs} outputs, but the action space "
            f"{space} needs {want}"
        )


# ------------------------------------------------------------------------------- joint policies


class JointPolicy(Protocol):
    """A policy over all `A` agents' actions on top of one actor network's per-agent outputs.

    `IndependentPolicy` (each agent samples from its own head) is the usual one; the
    Bayesian-network policy of `marljax.agents.bn` is another. Agents that train a policy by
    its log-probabilities (PPO, A2C) only talk to this protocol.
    """

    def init(self, key: Array, actor_params: Any) -> Any:
        """Extend the actor's parameters with the policy's own (e.g. parent networks)."""

    def net_params(self, actor_params: Any) -> Any:
        """The actor network's parameters inside the policy's parameters."""

    def act(
        self,
        actor_params: Any,
        inputs: Array,
        outputs: Array,
        observation: Any,
        key: Array,
        step: Array,
        greedy: bool,
    ) -> tuple[Array, Array, dict]:
        """`(actions [E, A, ...], log_prob [E, A], info)` from network `outputs [E, A, O]`.

        `inputs [E, A, D]` are the actor network's inputs, `step` the number of updates so far.
        `info` holds the per-step data `extras` needs later (leaves `[E, ...]`).
        """

    def extras(self, info: dict, observation: Any) -> dict:
        """Per-step data for `log_prob_and_entropy` from a rollout's `info` (leaves `[T, E, ...]`)."""

    def log_prob_and_entropy(
        self,
        actor_params: Any,
        inputs: Array,
        outputs: Array,
        actions: Array,
        mask: Array,
        extras: dict,
        resets: Array,
        step: Array,
    ) -> tuple[Array, Array]:
        """`(log_prob [T, B, A], entropy [T, B, A])` of recorded `actions` (teacher forcing)."""

    def metrics(self, info: dict, step: Array) -> dict:
        """Scalar diagnostics of a rollout's `info` (e.g. graph density)."""


@dataclasses.dataclass(frozen=True)
class IndependentPolicy:
    """Every agent samples from its own `head` (`pi(a | o) = prod_i pi_i(a_i | o_i)`).

    Actor parameters: the network's own, or `{"net": ..., **head.init_params()}` when the head
    has parameters.
    """

    head: PolicyHead

    def init(self, key: Array, actor_params: Any) -> Any:
        return actor_params

    def net_params(self, actor_params: Any) -> Any:
        return actor_params if self.head.init_params() is None else actor_params["net"]

    def dist(self, actor_params: Any, outputs: Array, mask: Array | None) -> ActionDistribution:
        """The per-agent distributions of `outputs [..., A, O]`."""
        return self.head(outputs, actor_params, mask)

    def act(self, actor_params, inputs, outputs, observation, key, step, greedy):
        dist = self.dist(actor_params, outputs, observation.action_mask)
        if greedy:
            actions = dist.mode()
            return actions, dist.log_prob(actions), {}
        actions, log_prob = dist.sample_and_log_prob(key)
        return actions, log_prob, {}

    def extras(self, info: dict, observation: Any) -> dict:
        return {}

    def log_prob_and_entropy(
        self, actor_params, inputs, outputs, actions, mask, extras, resets, step
    ):
        dist = self.dist(actor_params, outputs, mask)
        return dist.log_prob(actions), dist.entropy()

    def metrics(self, info: dict, step: Array) -> dict:
        return {}


def pack_actor_params(net_params: Any, head_params: dict | None) -> Any:
    """An actor's parameters: the network's alone, or `{"net": ..., **head_params}`."""
    return net_params if head_params is None else {"net": net_params, **head_params}


__all__ = [
    "ActionDistribution",
    "Categorical",
    "CategoricalHead",
    "DiagGaussian",
    "GaussianHead",
    "IndependentPolicy",
    "JointPolicy",
    "PolicyHead",
    "RescaledTanhGaussian",
    "TanhGaussianHead",
    "check_head",
    "from_box",
    "head_for_space",
    "pack_actor_params",
    "to_box",
]
