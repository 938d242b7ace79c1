"""What the import adapters share: the wrapped env's state, its time limit and its dtypes.

`JaxMARLEnv` and `JumanjiEnv` both carry a foreign env's own state inside theirs (`inner`), count
the steps of the episode themselves (`step`), and truncate it after `min(params.max_steps, L)`
steps, where `L` is the foreign env's native episode length (the number of steps after which it
ends an episode on its own; None when it has none). `params.max_steps` may shorten episodes but
not lengthen them past `L`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from marljax.core.types import Array, EnvParams

__all__ = ["AdapterParams", "AdapterState", "canonical_state", "truncation", "validate_max_steps"]


@struct.dataclass
class AdapterParams(EnvParams):
    """Traced parameters of an adapted env: only its time limit (the wrapped env keeps its
    constants on `self`, so they are static). Each adapter's subclass sets the default.

    Attributes:
      max_steps: time limit; the episode is truncated after `min(max_steps, L)` steps, where `L`
        is the wrapped env's native episode length (the default the env gives its params).
    """


@struct.dataclass
class AdapterState:
    """State of an adapted env: the wrapped env's state and the episode's step counter."""

    inner: Any  # the wrapped env's own state pytree
    step: Array  # [] int32 steps taken in this episode


def canonical_state(inner: Any, signature: Any) -> Any:
    """The wrapped env's state with the reset state's dtypes and no weak types (one jit trace).

    Args:
      inner: the wrapped env's state pytree, as its `reset` or `step` returned it.
      signature: the same pytree's `jax.eval_shape` at reset (`jax.ShapeDtypeStruct` leaves).

    Returns:
      `inner` with every leaf cast to the signature's dtype (PRNG keys untouched).
    """

    def leaf(x, sig):
        if jnp.issubdtype(sig.dtype, jax.dtypes.prng_key):
            return x
        return jnp.asarray(x, sig.dtype)

    return jax.tree.map(leaf, inner, signature)


def truncation(
    t: Array, terminated: Array, max_steps: Array | int, native_episode_len: int | None
) -> Array:
    """`[]` bool: the episode ends at step `t` by its time limit, `t >= min(max_steps, L)`.

    Args:
      t: `[]` int32 steps taken in the episode, this one included.
      terminated: `[]` bool, the episode ends here by the env's own rules (then not truncated).
      max_steps: `params.max_steps` (traced).
      native_episode_len: `L` (static), or None when the wrapped env has no time limit.
    """
    limit = jnp.asarray(max_steps, jnp.int32)
    if native_episode_len is not None:
        limit = jnp.minimum(limit, native_episode_len)
    return ~terminated & (t >= limit)


def validate_max_steps(
    max_steps: Array | int, native_episode_len: int | None, env_name: str, remedy: str
) -> None:
    """Raise `ValueError` unless `1 <= max_steps <= L` (host side, concrete params).

    Args:
      max_steps: `params.max_steps`.
      native_episode_len: `L`, or None when the wrapped env has no time limit (no upper bound).
      env_name: the wrapped env, for the message (e.g. `"Jumanji's Cleaner"`).
      remedy: how to get a longer native limit, the end of the message.
    """
    max_steps = int(max_steps)
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    if native_episode_len is not None and max_steps > native_episode_len:
        raise ValueError(
            f"max_steps={max_steps} exceeds the {native_episode_len} steps after which "
            f"{env_name} ends episodes itself; {remedy}"
        )
