"""Neural-network building blocks shared by every agent: initializers, MLP and CNN torsos, the
recurrent core, and `SequenceNet`, which chains them into a per-agent sequence network.

Why a home-made orthogonal initializer: flax's `orthogonal` calls a QR factorisation, and jax
0.10's *batched* QR (what `vmap` over seeds turns it into) can deadlock XLA's CPU thread pool on
2-core machines (see "Deadlock-safe seeds on CPU" in docs/design.md). `orthogonal` below orthonormalises with
Gram-Schmidt written in plain matmuls, so a seed-vmapped program contains no LAPACK call at all
(`tests/test_networks.py` checks the lowered program). It draws from the same (Haar) distribution
as QR with the sign correction.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

Array = jax.Array

_ACTIVATIONS: dict[str, Callable[[Array], Array]] = {
    "tanh": jnp.tanh,
    "relu": nn.relu,
    "elu": nn.elu,
    "gelu": nn.gelu,
    "silu": nn.silu,
}


def activation(name: str) -> Callable[[Array], Array]:
    """The activation function called `name` (tanh, relu, elu, gelu, silu)."""
    if name not in _ACTIVATIONS:
        raise ValueError(f"Unknown activation {name!r}; choose one of {sorted(_ACTIVATIONS)}")
    return _ACTIVATIONS[name]


def orthogonal(scale: float = 1.0) -> Callable:
    """Orthogonal initializer (Saxe et al. 2014) without LAPACK, safe under `vmap` on CPU.

    For a kernel of shape `[..., n_in, n_out]` it draws a standard normal matrix of shape
    `[max(rows, cols), min(rows, cols)]` with `rows = prod(shape[:-1])`, orthonormalises its
    columns with classical Gram-Schmidt applied twice (CGS2, numerically as good as Householder
    QR at these sizes), transposes if needed and multiplies by `scale`.

    Args:
      scale: multiplier of the orthonormal matrix (e.g. `sqrt(2)` for ReLU torsos, 0.01 for
        policy heads, as in Andrychowicz et al. 2021, "What matters in on-policy RL").

    Returns:
      An initializer `init(key, shape, dtype) -> Array`.
    """

    def init(key: Array, shape: Sequence[int], dtype=jnp.float32) -> Array:
        shape = tuple(shape)
        if len(shape) < 2:
            raise ValueError(f"orthogonal needs a shape of rank >= 2, got {shape}")
        rows = 1
        for s in shape[:-1]:
            rows *= s
        cols = shape[-1]
        m, k = max(rows, cols), min(rows, cols)
        a = jax.random.normal(key, (m, k), jnp.float32)
        q = _gram_schmidt(a)
        if rows < cols:
            q = q.T
        return (scale * q).reshape(shape).astype(dtype)

    return init


def _gram_schmidt(a: Array) -> Array:
    """Orthonormal columns spanning those of `a` `[m, k]` (m >= k), positive diagonal of R."""
    _, k = a.shape
    return jax.lax.fori_loop(0, k, _gram_schmidt_column, (a, jnp.zeros_like(a)))[1]


def _gram_schmidt_column(j: Array, carry: tuple[Array, Array]) -> tuple[Array, Array]:
    """Column `j` of `_gram_schmidt`. A module-level loop body (`a` rides in the carry), so jax
    traces it once per shape instead of once per initialised layer."""
    a, q = carry
    v = a[:, j]
    for _ in range(2):  # re-orthogonalise once: CGS2
        v = v - q @ (q.T @ v)
    return a, q.at[:, j].set(v / jnp.linalg.norm(v))


def on_rows(layer: Callable[[Array], Array], x: Array) -> Array:
    """`layer(x)` for a row-wise layer (dense layers, norms, activations) on `x [..., D]`,
    computed on the leading axes flattened into rows, `[N, D]`.

    Why: XLA:CPU differentiates a dense layer on inputs with several leading axes (`[T, B, D]`,
    even `[1, B, D]`) into a kernel gradient contracting all of them, which it lays out with
    transposes and copies; on 2-D rows each direction is one plain matmul (PQN-VDN's minibatch
    loop ran 2.2x faster, docs/benchmarks.md). The result is the same up to float rounding.
    """
    lead = x.shape[:-1]
    y = layer(x.reshape(-1, x.shape[-1]))
    return y.reshape(*lead, y.shape[-1])


def dot_product_attention(
    query: Array,
    key: Array,
    value: Array,
    bias: Array | None = None,
    mask: Array | None = None,
    dropout_rate: float = 0.0,
    deterministic: bool = True,
) -> Array:
    """Scaled dot-product attention, `nn.dot_product_attention`'s semantics (no dropout),
    computed as two plain 3-D batched matmuls; pass it as an `nn.MultiHeadDotProductAttention`'s
    `attention_fn`.

        query [..., Q, h, d], key [..., K, h, d], value [..., K, h, dv] -> [..., Q, h, dv]
        out = softmax(q k^T / sqrt(d) + bias, masked where `mask` is False) v   (per head)

    `bias` and `mask` broadcast to `[..., h, Q, K]`. Why: Flax's einsums keep the heads as a
    second batch axis (`...qhd,...khd->...hqk`), which XLA:CPU lays out with transposes around
    many tiny matmuls; folding the heads into one batch axis first made the forward and backward
    of MAT's attention (400 samples x 3 agents, one head of 64) 4.4x faster on CPU, with no
    difference at 8 heads of 4 (`bench/bench_attention.py`, docs/benchmarks.md). The result is
    the same up to float rounding.
    """
    if dropout_rate > 0.0 and not deterministic:
        raise ValueError("marljax.nn.networks.dot_product_attention has no dropout")
    *batch, q_len, heads_, depth = query.shape
    k_len, v_depth = key.shape[-3], value.shape[-1]

    def fold(x: Array) -> Array:  # [..., L, h, d] -> [(... h), L, d]
        return jnp.swapaxes(x, -2, -3).reshape(-1, x.shape[-3], x.shape[-1])

    scores = jnp.einsum(
        "bqd,bkd->bqk", fold(query) / jnp.sqrt(depth).astype(query.dtype), fold(key)
    )
    scores = scores.reshape(*batch, heads_, q_len, k_len)
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        scores = jnp.where(mask, scores, jnp.finfo(scores.dtype).min)
    weights = jax.nn.softmax(scores, axis=-1).reshape(-1, q_len, k_len)
    out = jnp.einsum("bqk,bkd->bqd", weights, fold(value)).reshape(*batch, heads_, q_len, v_depth)
    return jnp.swapaxes(out, -2, -3)


def rows_dot_general(
    lhs: Array, rhs: Array, dimension_numbers: Any, precision: Any = None, **kwargs: Any
) -> Array:
    """`jax.lax.dot_general` computed as one 2-D matmul on rows when it is a dense layer:
    `lhs [..., *c]` contracted with `rhs [*c, *f]` -> `[..., *f]` (no batch axes). Pass it as a
    Flax layer's `dot_general` (e.g. `nn.MultiHeadDotProductAttention(qkv_dot_general=...,
    out_dot_general=...)`) to get `on_rows`'s layout inside layers that take `[B, T, D]`
    inputs; any other contraction is `jax.lax.dot_general` itself.
    """
    (lhs_c, rhs_c), (lhs_b, rhs_b) = dimension_numbers
    n = len(lhs_c)
    dense = tuple(lhs_c) == tuple(range(lhs.ndim - n, lhs.ndim)) and tuple(rhs_c) == tuple(range(n))
    if lhs_b or rhs_b or not dense:
        return jax.lax.dot_general(lhs, rhs, dimension_numbers, precision, **kwargs)
    lead, free = lhs.shape[: lhs.ndim - n], rhs.shape[n:]
    width = math.prod(rhs.shape[:n])
    out = jax.lax.dot_general(
        lhs.reshape(-1, width),
        rhs.reshape(width, -1),
        (((1,), (0,)), ((), ())),
        precision,
        **kwargs,
    )
    return out.reshape(*lead, *free)


class MLP(nn.Module):
    """A multilayer perceptron torso with orthogonal initialisation.

    Attributes:
      hidden_sizes: widths of the hidden layers.
      activation: name of the activation (see `activation`).
      out_dim: size of a final linear layer (None: no output layer).
      out_scale: orthogonal scale of the output layer.
      layer_norm: normalise each hidden layer's pre-activations (`nn.LayerNorm`), as PQN does
        (Gallici et al. 2024).
    """

    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    out_dim: int | None = None
    out_scale: float = 1.0
    layer_norm: bool = False

    @nn.compact
    def __call__(self, x: Array) -> Array:
        return on_rows(self._rows, x)

    def _rows(self, x: Array) -> Array:
        act = activation(self.activation)
        gain = jnp.sqrt(2.0)
        for width in self.hidden_sizes:
            x = nn.Dense(width, kernel_init=orthogonal(gain), bias_init=nn.initializers.zeros)(x)
            x = act(nn.LayerNorm()(x) if self.layer_norm else x)
        if self.out_dim is not None:
            x = nn.Dense(
                self.out_dim,
                kernel_init=orthogonal(self.out_scale),
                bias_init=nn.initializers.zeros,
            )(x)
        return x


def mlp_first_layer(params: Any, x: Array, rows: slice = slice(None)) -> Array:
    """An `MLP`'s first layer, `x @ W0[rows] + b0` (the bias only if `rows` starts at 0).

    With `mlp_from_first_layer` this splits the MLP of a concatenated input `[x_a, x_b]` into
    `x_a @ W0[:n] + b0` and `x_b @ W0[n:]`, so a part that many calls share is computed once
    (e.g. the global state in a critic of many candidate joint actions).
    """
    dense = params["params"]["Dense_0"]
    out = x @ dense["kernel"][rows]
    return out + dense["bias"] if rows.start in (None, 0) else out


def mlp_from_first_layer(module: MLP, params: Any, pre: Array) -> Array:
    """`module.apply(params, x)` given its first layer's output `pre = x @ W0 + b0`
    (`mlp_first_layer`): the activation, the further layers and the output layer."""
    if not module.hidden_sizes:
        raise ValueError("an MLP without hidden layers has no first layer to split")
    p = params["params"]
    act = activation(module.activation)
    x = pre
    for k in range(len(module.hidden_sizes)):
        if k:
            x = x @ p[f"Dense_{k}"]["kernel"] + p[f"Dense_{k}"]["bias"]
        if module.layer_norm:
            x = nn.LayerNorm().apply({"params": p[f"LayerNorm_{k}"]}, x)
        x = act(x)
    if module.out_dim is not None:
        last = p[f"Dense_{len(module.hidden_sizes)}"]
        x = x @ last["kernel"] + last["bias"]
    return x


class RecurrentCore(nn.Module):
    """The ONE recurrent primitive of marljax: a GRU over time with explicit episode resets.

    Reset convention: `resets[t]` is true where the input at step `t` is the first observation of
    a new episode. The carry is replaced by zeros *before* it is read at such a step, so nothing
    leaks across episode boundaries. With `T = 1` this is the per-step core used while acting.

    Call: `carry, ys = core(carry, xs, resets)` with `carry [B..., H]`, `xs [T, B..., D]`,
    `resets [T, B...]` bool, `ys [T, B..., H]`.
    """

    hidden_size: int = 64

    @nn.compact
    def __call__(self, carry: Array, xs: Array, resets: Array) -> tuple[Array, Array]:
        cell = nn.GRUCell(
            features=self.hidden_size,
            kernel_init=orthogonal(1.0),
            recurrent_kernel_init=orthogonal(1.0),
        )

        def step(cell, h, inputs):
            x, reset = inputs
            h = jnp.where(reset[..., None], jnp.zeros_like(h), h)
            h, y = cell(h, x)
            return h, y

        scan = nn.scan(
            step, variable_broadcast="params", split_rngs={"params": False}, in_axes=0, out_axes=0
        )
        return scan(cell, carry, (xs, resets))

    def initialize_carry(self, batch_shape: Sequence[int]) -> Array:
        """Zeros of shape `[*batch_shape, H]`."""
        return jnp.zeros((*batch_shape, self.hidden_size), jnp.float32)


class Conv(nn.Module):
    """A stride-1, "SAME"-padded 2-D convolution computed as one matmul over shifted windows.

    It has the parameters of `flax.linen.Conv` (`kernel [k, k, C, F]`, `bias [F]`) and the same
    output up to float rounding, but is computed as `concat(shifted inputs) @ kernel`: XLA's CPU
    convolution turns into a grouped convolution when `vmap` maps over the kernel (one kernel
    per seed), which is several times slower than this batched matmul on small grids (7x7
    Harvest windows: about 6x per PPO update on 2 CPU cores, `docs/agents.md`).

    Attributes:
      features: output channels `F`.
      kernel_size: the square kernel's side `k` (odd).
      kernel_init, bias_init: initializers of the kernel and the bias.

    Call: `y [..., H, W, F] = conv(x [..., H, W, C])`.
    """

    features: int
    kernel_size: int = 3
    kernel_init: Callable = nn.initializers.lecun_normal()
    bias_init: Callable = nn.initializers.zeros

    @nn.compact
    def __call__(self, x: Array) -> Array:
        k = self.kernel_size
        if k % 2 != 1:
            raise ValueError(f"Conv needs an odd kernel_size for SAME padding, got {k}")
        H, W, C = x.shape[-3:]
        kernel = self.param("kernel", self.kernel_init, (k, k, C, self.features))
        bias = self.param("bias", self.bias_init, (self.features,))
        r = k // 2
        padded = jnp.pad(x, [(0, 0)] * (x.ndim - 3) + [(r, r), (r, r), (0, 0)])
        windows = [padded[..., i : i + H, j : j + W, :] for i in range(k) for j in range(k)]
        return jnp.concatenate(windows, axis=-1) @ kernel.reshape(k * k * C, -1) + bias


class GridEncoder(nn.Module):
    """A small CNN for grid / image inputs given as flat vectors: conv layers, then flatten.

    The input's first `H * W * C` entries are the grid (in `layout`, as declared by the
    observation space, `marljax.core.spaces.Box.layout`); the rest (e.g. a one-hot agent id)
    is appended to the flattened convolution features unchanged. Padding is "SAME", so small
    egocentric windows (5x5, 7x7) keep their size. The convolutions are `Conv` (a matmul over
    shifted windows, fast under `vmap` over seeds on CPU).

    Attributes:
      grid_shape: `(H, W, C)` of the grid.
      layout: "hwc" (`[H, W, C]`) or "chw" (`[C, H, W]`) order of the flat grid entries.
      channels: output channels of each convolution.
      kernel_size: square kernel size of every convolution (odd).
      activation: name of the activation (see `activation`).

    Call: `features [..., F] = encoder(x [..., D])`.
    """

    grid_shape: tuple[int, int, int]
    layout: str = "hwc"
    channels: Sequence[int] = (16, 16)
    kernel_size: int = 3
    activation: str = "relu"

    @nn.compact
    def __call__(self, x: Array) -> Array:
        H, W, C = self.grid_shape
        size = H * W * C
        batch = x.shape[:-1]
        grid, rest = x[..., :size], x[..., size:]
        if self.layout == "chw":
            grid = jnp.moveaxis(grid.reshape(-1, C, H, W), 1, -1)
        else:
            grid = grid.reshape(-1, H, W, C)
        act = activation(self.activation)
        for i, width in enumerate(self.channels):
            conv = Conv(
                width,
                self.kernel_size,
                kernel_init=orthogonal(jnp.sqrt(2.0)),
                bias_init=nn.initializers.zeros,
                name=f"Conv_{i}",  # the parameter names of flax's Conv: old checkpoints load
            )
            grid = act(conv(grid))
        features = grid.reshape(*batch, -1)
        return jnp.concatenate([features, rest], axis=-1)


class SequenceNet(nn.Module):
    """A per-agent sequence network: optional encoder, optional GRU core, then a torso.

    `encoder` (e.g. a `GridEncoder`) runs on every step's input, the `RecurrentCore` (when
    `recurrent`) carries memory across steps, and `torso` (e.g. an `MLP` with an output layer)
    maps the result to the outputs. The encoder and torso are ordinary feed-forward flax
    modules `[..., D] -> [..., O]`; they are renamed by class inside this module (`MLP_0`, ...),
    so a default network's parameter tree does not depend on how it was passed in.

    Attributes:
      torso: feed-forward module giving the outputs.
      encoder: optional feed-forward module applied before the recurrent core.
      recurrent: use the GRU core.
      gru_size: width of the GRU.

    Call: `carry, out = net(carry [B, H], xs [T, B, D], resets [T, B])` with
    `out [T, B, O]` (`carry` is passed through unchanged when not recurrent).
    """

    torso: nn.Module
    encoder: nn.Module | None = None
    recurrent: bool = False
    gru_size: int = 64

    @nn.compact
    def __call__(self, carry: Array, xs: Array, resets: Array) -> tuple[Array, Array]:
        if self.encoder is not None:
            xs = self.encoder.copy(parent=self, name=None)(xs)
        if self.recurrent:
            carry, xs = RecurrentCore(self.gru_size)(carry, xs, resets)
        return carry, self.torso.copy(parent=self, name=None)(xs)


class QNetwork(nn.Module):
    """MLP torso, optional GRU, linear Q head: `(carry, xs, resets) -> (carry, (q, hidden))`.

    `xs [T, B, D]`, `resets [T, B]`, `carry [B, H]`; `q [T, B, N]` and `hidden [T, B, H]` (the
    GRU state after each step; the torso output when feed-forward, unused). `layer_norm`
    normalises the torso's hidden layers (PQN).
    """

    hidden_sizes: tuple[int, ...]
    activation: str
    num_actions: int
    recurrent: bool
    gru_size: int
    layer_norm: bool = False

    @nn.compact
    def __call__(self, carry: Array, xs: Array, resets: Array):
        h = MLP(self.hidden_sizes, self.activation, layer_norm=self.layer_norm)(xs)
        if self.recurrent:
            carry, h = RecurrentCore(self.gru_size)(carry, h, resets)
        q = on_rows(nn.Dense(self.num_actions, kernel_init=orthogonal(1.0), name="q_head"), h)
        return carry, (q, h)
