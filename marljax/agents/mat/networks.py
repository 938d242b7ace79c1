"""MAT's networks: an encoder over the agents' observations and a decoder over their actions.

    encode(obs [..., A, D])                   -> (rep [..., A, H], values [..., A])
    decode(rep [..., A, H], tokens [..., A, K]) -> outputs [..., A, O]

The encoder embeds each agent's observation and runs `num_blocks` self-attention blocks over the
agents (no mask): every representation `rep_i` sees every observation, and a value head gives
`V(o)_i` per agent. The decoder reads the *shifted* actions: token 0 is a start token and token
`i` encodes agent `i - 1`'s action (`action_tokens`); its blocks apply causal self-attention
over the tokens, then causal attention with the encoder's representations as queries and the
decoder's tokens as keys and values (as the authors' `DecodeBlock`), so output `i` depends on
all observations and on the actions of agents `0 .. i-1` only. A policy head
(`marljax.agents.heads`) turns output `i` into agent `i`'s action distribution.

Blocks are post-norm (`LayerNorm(x + f(x))`) with a GELU MLP, orthogonal initialisation with
gain 0.01 on the attention and output layers and sqrt(2) on the embeddings, as in the authors'
`ma_transformer.py`. Every row-wise layer runs on the tokens flattened to rows
(`marljax.nn.networks.on_rows`) and the attention is `marljax.nn.networks.dot_product_attention`,
the layouts XLA:CPU runs fastest (docs/benchmarks.md).

Reference: M. Wen et al., "Multi-Agent Reinforcement Learning is a Sequence Modeling Problem",
NeurIPS 2022 (https://arxiv.org/abs/2205.14953).
"""

from __future__ import annotations

import math

import flax.linen as nn
import jax
import jax.numpy as jnp

from marljax.agents import heads
from marljax.nn.networks import dot_product_attention, on_rows, orthogonal, rows_dot_general

Array = jax.Array

_RELU_GAIN = math.sqrt(2.0)
_SMALL_GAIN = 0.01


def causal_mask(num_agents: int) -> Array:
    """`[1, A, A]` bool: query `i` may attend to key `j` iff `j <= i` (broadcast over heads)."""
    return jnp.tril(jnp.ones((num_agents, num_agents), bool))[None]


def _attention(dim: int, heads_: int, cached: bool = False) -> nn.MultiHeadDotProductAttention:
    return nn.MultiHeadDotProductAttention(
        num_heads=heads_,
        qkv_features=dim,
        out_features=dim,
        kernel_init=orthogonal(_SMALL_GAIN),
        deterministic=True,
        decode=cached,
        attention_fn=dot_product_attention,
        qkv_dot_general=rows_dot_general,
        out_dot_general=rows_dot_general,
    )


class _FeedForward(nn.Module):
    """`Dense(H) -> GELU -> Dense(H)`, the blocks' MLP."""

    dim: int

    @nn.compact
    def __call__(self, x: Array) -> Array:
        x = nn.gelu(nn.Dense(self.dim, kernel_init=orthogonal(_RELU_GAIN))(x))
        return nn.Dense(self.dim, kernel_init=orthogonal(_SMALL_GAIN))(x)


class _Embed(nn.Module):
    """`[..., D] -> [..., H]`: optional LayerNorm of the input, `Dense`, GELU."""

    dim: int
    norm_input: bool = True
    use_bias: bool = True

    @nn.compact
    def __call__(self, x: Array) -> Array:
        if self.norm_input:
            x = nn.LayerNorm()(x)
        dense = nn.Dense(self.dim, use_bias=self.use_bias, kernel_init=orthogonal(_RELU_GAIN))
        return nn.gelu(dense(x))


class _Head(nn.Module):
    """`[..., H] -> [..., O]`: `Dense(H) -> GELU -> LayerNorm -> Dense(O)`."""

    dim: int
    out: int

    @nn.compact
    def __call__(self, x: Array) -> Array:
        x = nn.LayerNorm()(nn.gelu(nn.Dense(self.dim, kernel_init=orthogonal(_RELU_GAIN))(x)))
        return nn.Dense(self.out, kernel_init=orthogonal(_SMALL_GAIN))(x)


class EncodeBlock(nn.Module):
    """`x [..., A, H]`: unmasked self-attention over the agents, then the MLP (post-norm)."""

    dim: int
    num_heads: int

    @nn.compact
    def __call__(self, x: Array) -> Array:
        x = on_rows(nn.LayerNorm(), x + _attention(self.dim, self.num_heads)(x, x))
        return on_rows(nn.LayerNorm(), x + on_rows(_FeedForward(self.dim), x))


class DecodeBlock(nn.Module):
    """`x [..., A, H]`, `rep [..., A, H]`: causal self-attention, causal attention from the
    encoder's representations (queries) to the tokens (keys, values), then the MLP.

    `cached`: one position at a time (`x`, `rep` are `[..., 1, H]`, agent `i`'s): both
    attentions read the keys and values of positions `0 .. i` from the `"cache"` collection
    (Flax's autoregressive cache, which the call extends by position `i`), so the output is row
    `i` of the full pass at the cost of one position.
    """

    dim: int
    num_heads: int
    cached: bool = False

    @nn.compact
    def __call__(self, x: Array, rep: Array) -> Array:
        mask = None if self.cached else causal_mask(x.shape[-2])
        dim, heads_, cached = self.dim, self.num_heads, self.cached
        x = on_rows(nn.LayerNorm(), x + _attention(dim, heads_, cached)(x, x, mask=mask))
        x = on_rows(nn.LayerNorm(), rep + _attention(dim, heads_, cached)(rep, x, mask=mask))
        return on_rows(nn.LayerNorm(), x + on_rows(_FeedForward(dim), x))


class MultiAgentTransformer(nn.Module):
    """MAT's encoder and decoder (`encode`, `decode`; `__call__` runs both, for `init`).

    Attributes:
      dim: token width `H`.
      num_heads: attention heads.
      num_blocks: blocks of the encoder and of the decoder each.
      num_outputs: `O`, the policy head's input width.
      discrete: discrete actions (one-hot tokens with a start entry, no bias in their
        embedding, as the authors') or continuous ones (the action vector; zeros start).
      cached: `decode` takes one agent's position per call and keeps the decoder's keys and
        values in the `"cache"` collection (the same parameters; see `DecodeBlock`).
    """

    dim: int
    num_heads: int
    num_blocks: int
    num_outputs: int
    discrete: bool
    cached: bool = False

    def setup(self):
        self.obs_embed = _Embed(self.dim)
        self.obs_norm = nn.LayerNorm()
        self.encoder = [EncodeBlock(self.dim, self.num_heads) for _ in range(self.num_blocks)]
        self.value_head = _Head(self.dim, 1)
        self.action_embed = _Embed(self.dim, norm_input=False, use_bias=not self.discrete)
        self.action_norm = nn.LayerNorm()
        self.decoder = [
            DecodeBlock(self.dim, self.num_heads, self.cached) for _ in range(self.num_blocks)
        ]
        self.policy_head = _Head(self.dim, self.num_outputs)

    def encode(self, obs: Array) -> tuple[Array, Array]:
        """`obs [..., A, D]` -> `(rep [..., A, H], values [..., A])`."""
        x = on_rows(lambda o: self.obs_norm(self.obs_embed(o)), obs)
        for block in self.encoder:
            x = block(x)
        return x, on_rows(self.value_head, x)[..., 0]

    def decode(self, rep: Array, tokens: Array) -> Array:
        """`rep [..., A, H]`, shifted action `tokens [..., A, K]` -> outputs `[..., A, O]`."""
        x = on_rows(lambda t: self.action_norm(self.action_embed(t)), tokens)
        for block in self.decoder:
            x = block(x, rep)
        return on_rows(self.policy_head, x)

    def __call__(self, obs: Array, tokens: Array) -> tuple[Array, Array]:
        rep, values = self.encode(obs)
        return self.decode(rep, tokens), values


def token_dim(head: heads.PolicyHead) -> int:
    """`K`, the width of an action token: `N + 1` (discrete, with the start entry) or `D`."""
    return head.num_outputs + 1 if head.discrete else head.action_shape[0]


def start_token(head: heads.PolicyHead) -> Array:
    """`[K]` the token before agent 0's action: `e_0` (discrete) or zeros (continuous)."""
    return jnp.zeros((token_dim(head),), jnp.float32).at[0].set(1.0 if head.discrete else 0.0)


def action_token(head: heads.PolicyHead, actions: Array) -> Array:
    """Actions `[...]` (int) or `[..., D]` -> tokens `[..., K]`: `[0, one_hot(a)]` or `a`."""
    if head.discrete:
        return jnp.pad(
            jax.nn.one_hot(actions, head.num_outputs), [(0, 0)] * actions.ndim + [(1, 0)]
        )
    return actions.astype(jnp.float32)


def action_tokens(head: heads.PolicyHead, actions: Array) -> Array:
    """The decoder's teacher-forced input: `[..., A, *act_shape]` -> `[..., A, K]`.

    Token 0 is `start_token`, token `i > 0` is `action_token(actions[..., i - 1])`; the last
    agent's action is not read.
    """
    tokens = action_token(head, actions)
    start = jnp.broadcast_to(start_token(head), (*tokens.shape[:-2], 1, tokens.shape[-1]))
    return jnp.concatenate([start, tokens[..., :-1, :]], axis=-2)


__all__ = [
    "DecodeBlock",
    "EncodeBlock",
    "MultiAgentTransformer",
    "action_token",
    "action_tokens",
    "causal_mask",
    "start_token",
    "token_dim",
]
