"""Mean-field features of a swarm: its empirical distribution as a histogram or a kernel embedding.

In mean-field control (MFC) the state of a large swarm is summarised by the empirical
distribution `mu = (1/A) sum_i delta_{x_i}` of the agents' states, and a centralised critic can
take `mu` (a fixed-size vector, whatever the number of agents) as input. Two fixed-size
representations over `K` bins / centres, both `O(A K)` or better, are given here:

- **histogram**: the fraction of agents in each of `K` bins of a fixed grid (a `b x b` grid of
  the torus for positions, `K = b^2`; `K` equal arcs of the circle for angles). Sums to 1.
- **kernel mean embedding**: `mu(c_k) = (1/A) sum_i k(x_i, c_k)` at `K` fixed centres `c_k` (the
  bin centres), with a Gaussian kernel through the torus wrap for positions and a von Mises
  kernel for angles; a smooth alternative to the histogram whose entries vary continuously with
  the agents' states. With `normalize=True` each agent's kernel weights are first normalised to
  sum to 1 over the centres (a soft histogram), so the embedding sums to 1 as well.

The kernel width is given in units of the bin width (`bandwidth`): position kernels use a
standard deviation `bandwidth * L / b`; angle kernels the von Mises concentration
`kappa = 1 / (bandwidth * 2 pi / K)^2` (which matches a Gaussian of that standard deviation for
small angles).

Reference: K. Cui, S. Hauck, C. Fabian and H. Koeppl, "Learning Decentralized Partially
Observable Mean Field Control for Artificial Collective Behavior", ICLR 2024 (Dec-POMFC), whose
critics and policies take such histogram / kernel representations of the mean field.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from marljax.envs.swarm.neighbours import cell_ids, wrap

Array = jax.Array

TWO_PI = 2.0 * math.pi
KINDS = ("histogram", "kernel")


def _weights(n: int, weights: Array | None) -> Array:
    """`[A]` float32 weights normalised to sum to 1 (uniform if None; all-zero stays zero)."""
    if weights is None:
        return jnp.full((n,), 1.0 / n, jnp.float32)
    w = jnp.asarray(weights, jnp.float32)
    return w / jnp.maximum(jnp.sum(w), 1e-12)


def torus_histogram(pos: Array, size: Array, bins: int, weights: Array | None = None) -> Array:
    """Fraction of agents in each cell of a `b x b` grid of the torus `[0, L)^2`.

    Args:
      pos: `[A, 2]` positions.
      size: `[]` torus side `L`.
      bins: `b`, cells per side (static); `K = b^2`.
      weights: optional `[A]` nonnegative agent weights (e.g. a mask); normalised to sum to 1.

    Returns:
      `[b * b]` float32, row-major over `(x cell, y cell)`, summing to 1.
    """
    b = int(bins)
    cx, cy = cell_ids(pos, size, b)
    w = _weights(pos.shape[0], weights)
    return jnp.zeros((b * b,), jnp.float32).at[cx * b + cy].add(w)


def circular_histogram(angle: Array, bins: int, weights: Array | None = None) -> Array:
    """Fraction of angles in each of `K` equal arcs `[2 pi k / K, 2 pi (k+1) / K)`.

    Args:
      angle: `[A]` angles in radians (any real values; taken modulo `2 pi`).
      bins: `K` (static).
      weights: optional `[A]` nonnegative weights; normalised to sum to 1.

    Returns:
      `[K]` float32 summing to 1.
    """
    K = int(bins)
    k = angle_bins(angle, K)
    w = _weights(angle.shape[0], weights)
    return jnp.zeros((K,), jnp.float32).at[k].add(w)


def angle_bins(angle: Array, bins: int) -> Array:
    """`[...]` int32 arc index `0 .. K-1` of angles (modulo `2 pi`) on `K` equal arcs."""
    K = int(bins)
    k = jnp.floor(jnp.mod(angle, TWO_PI) * (K / TWO_PI)).astype(jnp.int32)
    return jnp.mod(k, K)  # an angle that rounds to exactly 2 pi goes to arc 0


def torus_centres(size: Array, bins: int) -> Array:
    """`[b]` float32 coordinates of the bin centres along one side: `(k + 1/2) L / b`."""
    b = int(bins)
    return (jnp.arange(b, dtype=jnp.float32) + 0.5) * (size / b)


def circle_centres(bins: int) -> Array:
    """`[K]` float32 arc centres `2 pi (k + 1/2) / K`."""
    K = int(bins)
    return (jnp.arange(K, dtype=jnp.float32) + 0.5) * (TWO_PI / K)


def torus_kernel_embedding(
    pos: Array,
    size: Array,
    bins: int,
    bandwidth: Array = 1.0,
    weights: Array | None = None,
    normalize: bool = False,
) -> Array:
    """Gaussian kernel mean embedding of positions at the `b x b` bin centres of the torus.

    `mu_k = sum_i w_i exp(-|wrap(x_i - c_k)|^2 / (2 h^2))`, `h = bandwidth * L / b`, with the
    weights `w_i` summing to 1. The kernel is separable, so this costs `O(A b)` exponentials and
    one `[b, A] x [A, b]` product.

    Args:
      pos: `[A, 2]` positions.
      size: `[]` torus side `L`.
      bins: `b`, centres per side (static); `K = b^2`.
      bandwidth: `[]` kernel standard deviation in bin widths (`> 0`).
      weights: optional `[A]` nonnegative weights; normalised to sum to 1.
      normalize: normalise each agent's kernel weights to sum to 1 over the centres first (a
        soft histogram: the result sums to 1).

    Returns:
      `[b * b]` float32, row-major over `(x centre, y centre)`, entries in `[0, 1]`.
    """
    b = int(bins)
    c = torus_centres(size, b)  # [b]
    h = jnp.asarray(bandwidth, jnp.float32) * (size / b)
    inv = 1.0 / (2.0 * h * h)
    kx = jnp.exp(-jnp.square(wrap(pos[:, 0:1] - c[None, :], size)) * inv)  # [A, b]
    ky = jnp.exp(-jnp.square(wrap(pos[:, 1:2] - c[None, :], size)) * inv)  # [A, b]
    w = _weights(pos.shape[0], weights)
    if normalize:
        # The 2D kernel is the outer product, so its total is the product of the row sums.
        w = w / jnp.maximum(kx.sum(-1) * ky.sum(-1), 1e-30)
    return jnp.einsum("a,ax,ay->xy", w, kx, ky).reshape(b * b)


def circular_kernel_embedding(
    angle: Array,
    bins: int,
    bandwidth: Array = 1.0,
    weights: Array | None = None,
    normalize: bool = False,
) -> Array:
    """Von Mises kernel mean embedding of angles at `K` arc centres.

    `mu_k = sum_i w_i exp(kappa (cos(theta_i - c_k) - 1))`, `kappa = 1 / (bandwidth 2 pi / K)^2`.

    Args:
      angle: `[A]` angles in radians.
      bins: `K` (static).
      bandwidth: `[]` kernel width in arc widths (`> 0`).
      weights: optional `[A]` nonnegative weights; normalised to sum to 1.
      normalize: normalise each agent's kernel weights to sum to 1 first (the result sums to 1).

    Returns:
      `[K]` float32, entries in `[0, 1]`.
    """
    K = int(bins)
    c = circle_centres(K)
    sigma = jnp.asarray(bandwidth, jnp.float32) * (TWO_PI / K)
    kappa = 1.0 / (sigma * sigma)
    k = jnp.exp(kappa * (jnp.cos(angle[:, None] - c[None, :]) - 1.0))  # [A, K]
    w = _weights(angle.shape[0], weights)
    if normalize:
        w = w / jnp.maximum(k.sum(-1), 1e-30)
    return w @ k


class MeanField:
    """Static choice of mean-field representation, used for the swarm envs' `global_state`.

    Args:
      kind: `"histogram"` or `"kernel"` (static).
      position_bins: `b`, bins per side of the torus grid (static, `>= 1`); `b^2` features.
      angle_bins: `K`, arcs of the circle for angles (static, `>= 1`).

    Raises:
      ValueError: unknown `kind` or bins `< 1`.
    """

    def __init__(self, kind: str = "histogram", position_bins: int = 8, angle_bins: int = 16):
        if kind not in KINDS:
            raise ValueError(f"mean_field must be one of {KINDS}, got {kind!r}")
        if int(position_bins) < 1 or int(angle_bins) < 1:
            raise ValueError(
                f"mean-field bins must be >= 1, got position_bins={position_bins}, "
                f"angle_bins={angle_bins}"
            )
        self.kind = kind
        self.position_bins = int(position_bins)
        self.angle_bins = int(angle_bins)

    @property
    def position_dim(self) -> int:
        """Number of position features, `b^2`."""
        return self.position_bins**2

    def positions(self, pos: Array, size: Array, bandwidth: Array) -> Array:
        """`[b^2]` representation of the positions `[A, 2]` on the torus of side `size`."""
        if self.kind == "histogram":
            return torus_histogram(pos, size, self.position_bins)
        return torus_kernel_embedding(pos, size, self.position_bins, bandwidth)

    def angles(self, angle: Array, bandwidth: Array) -> Array:
        """`[K]` representation of the angles `[A]`."""
        if self.kind == "histogram":
            return circular_histogram(angle, self.angle_bins)
        return circular_kernel_embedding(angle, self.angle_bins, bandwidth)

    def __repr__(self) -> str:
        return f"MeanField({self.kind!r}, position_bins={self.position_bins}, angle_bins={self.angle_bins})"


__all__ = [
    "KINDS",
    "MeanField",
    "angle_bins",
    "circle_centres",
    "circular_histogram",
    "circular_kernel_embedding",
    "torus_centres",
    "torus_histogram",
    "torus_kernel_embedding",
]
