"""Pieces every agent shares: per-agent network inputs and applying a network over the agent axis.

The three parameter modes every agent supports live here once:

- `shared`: one parameter pytree, agents folded into the batch;
- `shared_id`: the same, with a one-hot agent id appended to each agent's input;
- `independent`: one parameter pytree with a leading agent axis `[A, ...]`, applied with `vmap`.

A fourth, `grouped` (parameters with a leading group axis `[G, ...]`, each agent using its
group's set: `group_params`), is offered by the value-based learner only (`QConfig`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

Array = jax.Array

PARAMETER_MODES = ("shared", "shared_id", "independent")


def check_choice(name: str, value: Any, choices: tuple) -> None:
    """Raise a clear `ValueError` naming `name` when `value` is not one of `choices`."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def check_parameter_mode(mode: str) -> None:
    """Raise a clear `ValueError` for an unknown parameter mode."""
    check_choice("parameter_mode", mode, PARAMETER_MODES)


def agent_inputs(x: Array, feature_rank: int, num_agents: int, add_id: bool) -> Array:
    """Flatten per-agent features and optionally append a one-hot agent id.

    Args:
      x: `[..., A, *feature_shape]` per-agent features (e.g. observations).
      feature_rank: `len(feature_shape)` (static).
      num_agents: `A`.
      add_id: append the one-hot id of each agent (the `shared_id` parameter mode).

    Returns:
      `[..., A, D]` float32 inputs, `D = prod(feature_shape) (+ A)`.
    """
    x = x.reshape(*x.shape[: x.ndim - feature_rank], -1).astype(jnp.float32)
    if add_id:
        eye = jnp.eye(num_agents, dtype=jnp.float32)
        x = jnp.concatenate([x, jnp.broadcast_to(eye, (*x.shape[:-1], num_agents))], axis=-1)
    return x


def broadcast_to_agents(state: Array, state_rank: int, num_agents: int) -> Array:
    """`[..., *state_shape]` -> `[..., A, S]`: a centralised input given to every agent."""
    s = state.reshape(*state.shape[: state.ndim - state_rank], -1).astype(jnp.float32)
    return jnp.broadcast_to(s[..., None, :], (*s.shape[:-1], num_agents, s.shape[-1]))


def apply_over_agents(
    apply_fn: Callable[..., tuple[Array, Any]],
    params: Any,
    carry: Array,
    xs: Array,
    resets: Array,
    independent: bool,
) -> tuple[Array, Any]:
    """Apply a per-agent sequence network to every agent.

    Args:
      apply_fn: `apply_fn(params, carry [B, H], xs [T, B, D], resets [T, B]) -> (carry [B, H],
        outs)` where every leaf of `outs` has leading axes `[T, B]` (e.g. a flax `Module.apply`).
      params: the network parameters; with a leading agent axis `[A, ...]` when `independent`.
      carry: `[B, A, H]` recurrent state.
      xs: `[T, B, A, D]` inputs.
      resets: `[T, B]` bool episode starts (shared by the agents of one environment).
      independent: parameters have a leading agent axis (applied with `vmap`); otherwise agents
        are folded into the batch.

    Returns:
      `(carry [B, A, H], outs)` with every leaf of `outs` shaped `[T, B, A, ...]`.
    """
    A = xs.shape[2]
    resets_a = jnp.broadcast_to(resets[..., None], xs.shape[:-1])
    if independent:
        return jax.vmap(apply_fn, in_axes=(0, 1, 2, 2), out_axes=(1, 2))(
            params, carry, xs, resets_a
        )
    T, B = xs.shape[:2]
    c, outs = apply_fn(
        params, carry.reshape(B * A, -1), xs.reshape(T, B * A, -1), resets_a.reshape(T, B * A)
    )
    outs = jax.tree.map(lambda o: o.reshape(T, B, A, *o.shape[2:]), outs)
    return c.reshape(B, A, -1), outs


def apply_once_per_env(
    apply_fn: Callable[..., tuple[Array, Any]],
    params: Any,
    carry: Array,
    xs: Array,
    resets: Array,
) -> tuple[Array, Any]:
    """`apply_over_agents` with shared parameters, for inputs that are equal across agents.

    A centralised critic with shared parameters and no agent id sees the same global state (and
    the same carry: zeros at the env's shared resets) for every agent of an env, so its outputs
    are equal across agents. This applies the network to agent 0 only and broadcasts the result
    to all `A` agents: the same numbers, losses and gradients for 1/A of the work. Only valid
    when `xs[..., a, :]` and `carry[..., a, :]` do not depend on `a`.

    Args: as `apply_over_agents` (shared parameters).

    Returns:
      `(carry [B, A, H], outs)` with every leaf of `outs` shaped `[T, B, A, ...]`.
    """
    A = xs.shape[2]
    c, outs = apply_over_agents(apply_fn, params, carry[:, :1], xs[:, :, :1], resets, False)
    outs = jax.tree.map(lambda o: jnp.broadcast_to(o, (*o.shape[:2], A, *o.shape[3:])), outs)
    return jnp.broadcast_to(c, carry.shape), outs


def init_per_agent(init_one: Callable[[Array], Any], key: Array, num_agents: int, independent):
    """`init_one(key)` once (shared modes) or once per agent, stacked on a leading axis."""
    if independent:
        return jax.vmap(init_one)(jax.random.split(key, num_agents))
    return init_one(key)


def agent_groups(num_agents: int, num_groups: int) -> Array:
    """`[A]` int32 group of each agent: `G` contiguous, balanced blocks of agent indices.

    Agent `a` belongs to group `floor(a * G / A)` (on a lattice numbered row by row, these are
    bands of rows). Raises a `ValueError` unless `1 <= num_groups <= num_agents`.
    """
    if not 1 <= num_groups <= num_agents:
        raise ValueError(
            f"num_groups must be between 1 and the number of agents ({num_agents}), "
            f"got {num_groups}"
        )
    return (jnp.arange(num_agents) * num_groups) // num_agents


def group_params(params: Any, groups: Array) -> Any:
    """`[G, ...]` group parameters -> `[A, ...]` per-agent parameters (`params[groups]`).

    The result is applied like `independent` parameters (`apply_over_agents(...,
    independent=True)`). The gather's gradient sums the per-agent gradients into their group's
    row, so the agents of one group train one set of parameters together.

    Args:
      params: pytree with leaves `[G, ...]`.
      groups: `[A]` int group of each agent (`agent_groups`).
    """
    return jax.tree.map(lambda p: p[groups], params)


__all__ = [
    "PARAMETER_MODES",
    "agent_groups",
    "group_params",
    "agent_inputs",
    "apply_once_per_env",
    "apply_over_agents",
    "broadcast_to_agents",
    "check_choice",
    "check_parameter_mode",
    "init_per_agent",
    "data_mean",
    "data_shards",
    "ExtraLoss",
    "add_extra_loss",
    "make_optimizer",
    "shuffled_minibatches",
]


#: `extra_loss(params, batch, hparams) -> scalar`: a term added to a learner's loss (an auxiliary
#: loss of a paper's method) and reported as the metric `extra_loss`. `params` and `batch` are the
#: learner's own: PPO's `(actor, critic)` parameters and minibatch dict (`ppo.agent.rollout_batch`
#: keys), a value learner's parameters (`{"agent", "mixer"}`) and replay batch.
ExtraLoss = Callable[[Any, Any, Any], Array]


def add_extra_loss(total: Array, metrics: dict, extra_loss: ExtraLoss | None, params, batch, hp):
    """`(total + extra_loss(params, batch, hp), metrics + {"extra_loss"})`; unchanged when
    `extra_loss` is None (the learner's program is then exactly the plain one)."""
    if extra_loss is None:
        return total, metrics
    extra = jnp.asarray(extra_loss(params, batch, hp), jnp.float32)
    if extra.shape != ():
        raise ValueError(f"extra_loss must return a scalar, got shape {extra.shape}")
    return total + extra, {**metrics, "extra_loss": extra}


def shuffled_minibatches(key: Array, tree: Any, num_minibatches: int) -> Any:
    """Shuffle the leading axis of every leaf and split it into `num_minibatches` minibatches.

    Args:
      key: the permutation's key (one permutation for every leaf, so samples stay aligned).
      tree: leaves `[n, ...]` with one `n`, divisible by `num_minibatches`.
      num_minibatches: `M` (static).

    Returns:
      `tree` with leaves `[M, n / M, ...]` (scan over the leading axis for one epoch).
    """
    n = jax.tree.leaves(tree)[0].shape[0]
    perm = jax.random.permutation(key, n)
    return jax.tree.map(
        lambda x: x[perm].reshape(num_minibatches, n // num_minibatches, *x.shape[1:]), tree
    )


def data_mean(tree: Any, axis_name: str | None) -> Any:
    """`tree` averaged over the data-parallel device axis (`pmean`); unchanged if `axis_name` is None.

    Data-parallel learners (the `"envs"` layout of `marljax.training.execute`) each hold an equal share
    of the batch, so the mean of their gradients is the gradient of the whole batch's mean loss.
    """
    if axis_name is None:
        return tree
    flat, unravel = ravel_pytree(tree)  # one all-reduce for the whole tree, not one per leaf
    return unravel(jax.lax.pmean(flat, axis_name))


def data_shards(axis_name: str | None) -> Array | int:
    """The number of data-parallel shards on `axis_name` (1 if None)."""
    return 1 if axis_name is None else jax.lax.psum(1, axis_name)


def make_optimizer(
    lr: Array | float,
    max_grad_norm: Array | float,
    *,
    kind: str = "adam",
    eps: Array | float = 1e-8,
    rms_decay: Array | float = 0.99,
) -> optax.GradientTransformation:
    """The optimiser every agent uses: global-norm clipping, then Adam / RAdam / RMSProp, then lr.

    Built inside traced code from traced hyperparameters (so `lr`, `max_grad_norm`, `eps` and
    `rms_decay` may be vmapped over in a sweep); the optimiser state's structure depends only on
    `kind`.

    Args:
      lr: learning rate (a schedule's current value when decayed).
      max_grad_norm: gradients are clipped to this global norm first.
      kind: "adam", "radam" or "rmsprop" (static).
      eps: the optimiser's epsilon.
      rms_decay: RMSProp's decay (ignored otherwise).
    """
    check_choice("optimizer", kind, ("adam", "radam", "rmsprop"))
    if kind == "adam":
        scale = optax.scale_by_adam(eps=eps)
    elif kind == "radam":
        scale = optax.scale_by_radam(eps=eps)
    else:
        scale = optax.scale_by_rms(decay=rms_decay, eps=eps)
    return optax.chain(
        optax.clip_by_global_norm(max_grad_norm), scale, optax.scale_by_learning_rate(lr)
    )
