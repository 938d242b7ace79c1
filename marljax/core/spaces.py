"""Spaces of one agent's observation or action: `Discrete`, `MultiDiscrete` and `Box`.

Spaces are static descriptions (shape, dtype, bounds) that can `sample` and check membership
(`contains`) inside `jit`. Environments describe ONE agent's space; arrays carry a leading agent
axis `[A, *space.shape]`.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array


class Space:
    """Base class of spaces."""

    shape: tuple[int, ...]
    dtype: Any

    @property
    def flat_dim(self) -> int:
        """Size of one flattened element."""
        return int(math.prod(self.shape))

    def sample(self, key: jax.Array, mask: Array | None = None) -> Array:
        raise NotImplementedError

    def contains(self, x: Array) -> Array:
        """`[]` bool: `x` has this space's shape and lies within its bounds (traceable)."""
        raise NotImplementedError


class Discrete(Space):
    """Integers `0 .. n-1`.

    Args:
      n: number of values (the number of actions `N`).
    """

    def __init__(self, n: int, dtype: Any = jnp.int32):
        if int(n) < 1:
            raise ValueError(f"Discrete space needs n >= 1, got {n}")
        self.n = int(n)
        self.shape = ()
        self.dtype = dtype

    @property
    def num_actions(self) -> int:
        return self.n

    def sample(self, key: jax.Array, mask: Array | None = None) -> Array:
        """Uniform over the legal values; `mask` is `[n]` bool (all legal if None)."""
        if mask is None:
            return jax.random.randint(key, (), 0, self.n, dtype=self.dtype)
        logits = jnp.where(mask, 0.0, -jnp.inf)
        return jax.random.categorical(key, logits).astype(self.dtype)

    def contains(self, x: Array) -> Array:
        x = jnp.asarray(x)
        if x.shape != ():
            return jnp.array(False)
        return jnp.logical_and(x >= 0, x < self.n) & _is_integral(x)

    def __repr__(self) -> str:
        return f"Discrete({self.n})"


class MultiDiscrete(Space):
    """A vector of discrete values, entry `i` in `0 .. nvec[i]-1`."""

    def __init__(self, nvec, dtype: Any = jnp.int32):
        self.nvec = np.asarray(nvec, dtype=np.int32)
        if self.nvec.ndim != 1 or (self.nvec < 1).any():
            raise ValueError(f"MultiDiscrete needs a 1-D vector of sizes >= 1, got {nvec}")
        self.shape = (len(self.nvec),)
        self.dtype = dtype

    def sample(self, key: jax.Array, mask: Array | None = None) -> Array:
        """Uniform over the legal values of each entry.

        `mask` is `[sum(nvec)]` bool, the entries' masks concatenated (all legal if None).
        """
        if mask is None:
            u = jax.random.uniform(key, self.shape)
            return jnp.floor(u * jnp.asarray(self.nvec)).astype(self.dtype)
        keys = jax.random.split(key, len(self.nvec))
        bounds = np.concatenate([[0], np.cumsum(self.nvec)])
        logits = jnp.where(mask, 0.0, -jnp.inf)
        out = [
            jax.random.categorical(keys[i], logits[bounds[i] : bounds[i + 1]])
            for i in range(len(self.nvec))
        ]
        return jnp.stack(out).astype(self.dtype)

    def contains(self, x: Array) -> Array:
        x = jnp.asarray(x)
        if x.shape != self.shape:
            return jnp.array(False)
        return jnp.all((x >= 0) & (x < jnp.asarray(self.nvec)) & _is_integral(x))

    def __repr__(self) -> str:
        return f"MultiDiscrete({self.nvec.tolist()})"


#: array layouts a `Box` may declare: `[H, W, C]` or `[C, H, W]` grids / images
LAYOUTS = ("hwc", "chw")


class Box(Space):
    """A real-valued array with (possibly infinite) elementwise bounds.

    Args:
      low, high: elementwise bounds (scalars or arrays broadcastable to `shape`).
      shape: the array's shape.
      dtype: its dtype.
      layout: what the axes mean, for networks that follow the observation space: None (a
        vector, or an array with no spatial meaning: flattened into an MLP), `"hwc"` (a
        `[H, W, C]` grid or image, channels last) or `"chw"` (`[C, H, W]`, channels first).
    """

    def __init__(
        self,
        low,
        high,
        shape: tuple[int, ...],
        dtype: Any = jnp.float32,
        layout: str | None = None,
    ):
        self.low = low
        self.high = high
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype
        if layout is not None:
            if layout not in LAYOUTS:
                raise ValueError(f"Box layout must be None or one of {LAYOUTS}, got {layout!r}")
            if len(self.shape) != 3:
                raise ValueError(
                    f"Box layout {layout!r} needs a 3-D shape ([H, W, C] or [C, H, W]), "
                    f"got {self.shape}"
                )
        self.layout = layout

    @property
    def grid_shape(self) -> tuple[int, int, int] | None:
        """`(H, W, C)` of a grid / image space (`layout` set), else None."""
        if self.layout is None:
            return None
        if self.layout == "hwc":
            return self.shape
        c, h, w = self.shape
        return (h, w, c)

    def sample(self, key: jax.Array, mask: Array | None = None) -> Array:
        """Uniform within finite bounds; standard normal clipped to the bounds otherwise."""
        low = jnp.broadcast_to(jnp.asarray(self.low, jnp.float32), self.shape)
        high = jnp.broadcast_to(jnp.asarray(self.high, jnp.float32), self.shape)
        finite = jnp.isfinite(low) & jnp.isfinite(high)
        k_u, k_n = jax.random.split(key)
        uni = jax.random.uniform(
            k_u, self.shape, minval=jnp.where(finite, low, 0.0), maxval=jnp.where(finite, high, 1.0)
        )
        nrm = jnp.clip(jax.random.normal(k_n, self.shape), low, high)
        return jnp.where(finite, uni, nrm).astype(self.dtype)

    def contains(self, x: Array) -> Array:
        x = jnp.asarray(x)
        if x.shape != self.shape:
            return jnp.array(False)
        return jnp.all((x >= self.low) & (x <= self.high) & ~jnp.isnan(x))

    def __repr__(self) -> str:
        layout = "" if self.layout is None else f", layout={self.layout!r}"
        return f"Box(shape={self.shape}, dtype={jnp.dtype(self.dtype).name}{layout})"


def _is_integral(x: Array) -> Array:
    """Elementwise: `x` holds a whole number (always true for integer dtypes; false for NaN)."""
    if jnp.issubdtype(x.dtype, jnp.inexact):
        return x == jnp.floor(x)
    return jnp.ones(x.shape, bool)


def num_actions(space: Space) -> int:
    """Width of the action mask for a space: `n` for Discrete, 0 for Box, `sum(nvec)` otherwise."""
    if isinstance(space, Discrete):
        return space.n
    if isinstance(space, MultiDiscrete):
        return int(space.nvec.sum())
    return 0
