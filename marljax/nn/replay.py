"""An on-device replay buffer of fixed-length sequences, for off-policy agents inside one program.

The buffer is a circular array of `C` items, each a pytree of `[L, ...]` sequences (L consecutive
environment steps of one environment), plus a write position and a fill count. It lives in the
agent state, so it is jitted, vmapped over seeds and hyperparameters and checkpointed like any
other leaf.

    replay = make_replay(capacity=5000, batch_size=32)
    state = replay.init(example_item)               # leaves [C, L, ...] of zeros
    state = replay.add(state, items)                # items: leaves [K, L, ...]
    batch = replay.sample(state, key)               # leaves [B, L, ...], uniform over filled items

Episode boundaries are NOT hidden by padding: an item is a window of the environment stream and
may contain the end of one episode and the start of the next. The items carry the `reset`,
`terminated` and `truncated` flags, so the learner resets recurrent state and cuts its return
targets there (see `marljax.nn.losses.lambda_returns(..., done_t=...)`). With sequences aligned to
fixed-length episodes (sequence length = episode length = rollout length) every item is exactly
one episode, as in PyMARL's episode buffer, and no padding is needed because items never end
early.

Why not flashbax: its trajectory buffer fits the functional design but must know the number of
environment rows when the buffer is created, while our agents are built before the runner's
batch size is known; what we need (uniform sampling of whole items, a wrapping scatter on add) is
a few lines, which keeps the dependency list short.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

Array = jax.Array


@struct.dataclass
class ReplayState:
    """The buffer contents.

    Attributes:
      data: pytree with leaves `[C, ...]`.
      insert_pos: `[]` int32 slot the next item is written to.
      size: `[]` int32 number of filled slots (at most `C`).
      num_added: `[]` int32 items added since creation (for diagnostics).
    """

    data: Any
    insert_pos: Array
    size: Array
    num_added: Array


class Replay(NamedTuple):
    """Pure functions of a replay buffer (see the module docstring)."""

    init: Callable[[Any], ReplayState]
    add: Callable[[ReplayState, Any], ReplayState]
    sample: Callable[[ReplayState, Array], Any]
    can_sample: Callable[[ReplayState], Array]
    capacity: int
    batch_size: int


def make_replay(capacity: int, batch_size: int) -> Replay:
    """A uniform replay buffer of `capacity` items sampled `batch_size` at a time.

    Sampling is uniform over filled slots, with replacement (independent draws; with a buffer much
    larger than the batch this matches sampling without replacement up to rare duplicates).

    Args:
      capacity: number of items (e.g. sequences) the buffer holds, `C >= batch_size`.
      batch_size: items per sample, `B >= 1`.

    Returns:
      A `Replay`.

    Raises:
      ValueError: non-positive sizes, or a buffer smaller than one batch.
    """
    capacity, batch_size = int(capacity), int(batch_size)
    if batch_size < 1:
        raise ValueError(f"replay batch_size must be >= 1, got {batch_size}")
    if capacity < batch_size:
        raise ValueError(
            f"replay buffer of {capacity} items is smaller than one batch of {batch_size}: "
            "raise buffer_size or lower batch_size"
        )

    def init(example_item: Any) -> ReplayState:
        data = jax.tree.map(
            lambda x: jnp.zeros((capacity, *jnp.shape(x)), jnp.asarray(x).dtype), example_item
        )
        zero = jnp.int32(0)
        return ReplayState(data=data, insert_pos=zero, size=zero, num_added=zero)

    def add(state: ReplayState, items: Any) -> ReplayState:
        leaves = jax.tree.leaves(items)
        k = leaves[0].shape[0]
        if k > capacity:  # only the newest `capacity` items can be kept
            items = jax.tree.map(lambda x: x[k - capacity :], items)
            skipped, k = k - capacity, capacity
        else:
            skipped = 0
        slots = (state.insert_pos + skipped + jnp.arange(k, dtype=jnp.int32)) % capacity
        data = jax.tree.map(
            lambda buf, x: buf.at[slots].set(x.astype(buf.dtype)), state.data, items
        )
        return ReplayState(
            data=data,
            insert_pos=(state.insert_pos + skipped + k) % capacity,
            size=jnp.minimum(state.size + k, capacity),
            num_added=state.num_added + skipped + k,
        )

    def sample(state: ReplayState, key: Array) -> Any:
        idx = jax.random.randint(key, (batch_size,), 0, jnp.maximum(state.size, 1))
        return jax.tree.map(lambda buf: buf[idx], state.data)

    def can_sample(state: ReplayState) -> Array:
        return state.size >= batch_size

    return Replay(init, add, sample, can_sample, capacity, batch_size)


__all__ = ["Replay", "ReplayState", "make_replay"]
