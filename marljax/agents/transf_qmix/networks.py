"""TransfQMIX's networks: a transformer agent over entity tokens with a recurrent hidden token,
and a transformer mixer whose output tokens are the mixing weights (`loss.monotonic_mix`).

Entity tokens come from the environment: an env that supports TransfQMIX has two pure methods,

    env.entity_obs(obs)             # [..., A, D] -> [..., A, K, F]  one token per entity seen
    env.entity_state(global_state)  # [..., *S]   -> [..., K', F']   one token per world entity

(`marljax.envs.particle.SimpleSpread` and `marljax.envs.grid.LevelBasedForaging` have them). `entity_shapes` reads their shapes and refuses
an env without them, before anything is compiled.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from marljax.agents.qlearning.networks import QNetworks, make_q_networks, next_q
from marljax.agents.transf_qmix.config import TransfQMIXConfig
from marljax.agents.transf_qmix.loss import monotonic_mix
from marljax.core.types import Environment, EnvParams
from marljax.nn.networks import orthogonal

Array = jax.Array


def entity_shapes(env: Environment, env_params: EnvParams) -> tuple[tuple[int, int], ...]:
    """`((K, F), (K', F'))`: the shapes of `env`'s observation and state entity tokens.

    Raises:
      ValueError: `env` has no `entity_obs` / `entity_state` methods (naming the env), or they
        give tokens of the wrong rank.
    """
    missing = [m for m in ("entity_obs", "entity_state") if not callable(getattr(env, m, None))]
    if missing:
        raise ValueError(
            f"TransfQMIX needs entity tokens, but {env.name} has no {' / '.join(missing)} "
            "method; envs with entity tokens: particle/simple_spread-v0 and grid/lbf-* with vector "
            "observations (see docs/agents.md, TransfQMIX, to add them to an env)"
        )
    obs_space = env.observation_space(env_params)
    state_space = env.global_state_space(env_params)
    A = env.num_agents
    obs = jax.ShapeDtypeStruct((A, *obs_space.shape), jnp.float32)
    state = jax.ShapeDtypeStruct(tuple(state_space.shape), jnp.float32)
    tok_obs = jax.eval_shape(env.entity_obs, obs)
    tok_state = jax.eval_shape(env.entity_state, state)
    if tok_obs.ndim != 3 or tok_obs.shape[0] != A or tok_state.ndim != 2:
        raise ValueError(
            f"{env.name}.entity_obs must give [A, K, F] and entity_state [K', F'] tokens, got "
            f"{tok_obs.shape} and {tok_state.shape}"
        )
    return tuple(tok_obs.shape[1:]), tuple(tok_state.shape)


class Embedder(nn.Module):
    """Entity features `[..., F]` -> embeddings `[..., H]`: Dense, optional ReLU and LayerNorm."""

    dim: int
    init_scale: float
    relu: bool
    norm: bool

    @nn.compact
    def __call__(self, x: Array) -> Array:
        x = nn.Dense(self.dim, kernel_init=orthogonal(self.init_scale))(x)
        if self.relu:
            x = nn.relu(x)
        return nn.LayerNorm()(x) if self.norm else x


class EncoderBlock(nn.Module):
    """Post-norm transformer encoder block: self-attention and a 2-layer MLP, each residual."""

    dim: int
    heads: int
    ff: int

    @nn.compact
    def __call__(self, x: Array) -> Array:
        xavier = nn.initializers.xavier_uniform()
        attended = nn.MultiHeadDotProductAttention(
            num_heads=self.heads, qkv_features=self.dim, kernel_init=xavier, use_bias=False
        )(x, x)
        x = nn.LayerNorm()(attended + x)
        h = nn.relu(nn.Dense(self.ff, kernel_init=xavier)(x))
        return nn.LayerNorm()(nn.Dense(self.dim, kernel_init=xavier)(h) + x)


class Encoder(nn.Module):
    """`layers` encoder blocks over tokens `[..., K, H]` (no positional encoding)."""

    dim: int
    heads: int
    ff: int
    layers: int

    @nn.compact
    def __call__(self, x: Array) -> Array:
        for _ in range(self.layers):
            x = EncoderBlock(self.dim, self.heads, self.ff)(x)
        return x


def _recurrent_token_scan(module, carry, tokens, resets, encoder, recurrent=True):
    """Scan `encoder` over time with a hidden token prepended to each step's tokens.

    `carry [B, H]`, `tokens [T, B, K, H]`, `resets [T, B]` -> `(carry, outputs [T, B, 1 + K, H])`.
    The hidden token is reset to zeros where a new episode starts (marljax's reset convention,
    as `marljax.nn.networks.RecurrentCore`), or at every step when not `recurrent`, and becomes the
    output at its own position.
    """

    def step(enc, h, inputs):
        x, reset = inputs
        h = jnp.where(reset[..., None], jnp.zeros_like(h), h) if recurrent else jnp.zeros_like(h)
        out = enc(jnp.concatenate([h[..., None, :], x], axis=-2))
        return out[..., 0, :], out

    scan = nn.scan(
        step, variable_broadcast="params", split_rngs={"params": False}, in_axes=0, out_axes=0
    )
    return scan(encoder, carry, (tokens, resets))


class TransformerAgent(nn.Module):
    """`(carry [B, H], xs [T, B, K * F], resets [T, B]) -> (carry, (q [T, B, N], h [T, B, H]))`.

    Each step embeds the `K` entity tokens (flattened in `xs`), prepends the hidden token and
    runs the encoder; the hidden token's output is the new carry and feeds the Q head. With
    `recurrent=False` the hidden token starts from zeros at every step.
    """

    num_entities: int
    dim: int
    heads: int
    ff: int
    layers: int
    num_actions: int
    init_scale: float = 1.0
    embed_relu: bool = False
    embed_norm: bool = True
    recurrent: bool = True

    @nn.compact
    def __call__(self, carry: Array, xs: Array, resets: Array):
        tokens = xs.reshape(*xs.shape[:-1], self.num_entities, -1)
        emb = Embedder(self.dim, self.init_scale, self.embed_relu, self.embed_norm)(tokens)
        encoder = Encoder(self.dim, self.heads, self.ff, self.layers)
        carry, out = _recurrent_token_scan(self, carry, emb, resets, encoder, self.recurrent)
        h = out[..., 0, :]
        q = nn.Dense(self.num_actions, kernel_init=orthogonal(self.init_scale), name="q_head")(h)
        return carry, (q, h)


class TransformerMixer(nn.Module):
    """`(q_a [T, B, A], h_a [T, B, A, H], state [T, B, K', F'], resets [T, B]) -> Q_tot [T, B]`.

    The tokens of each step are the mixer's hidden token (carried across steps like the
    agents'), the embedded state entities and the agents' hidden tokens; the encoder's outputs
    at the agents' and the mixer's positions give `W_1`, `b_1`, `w_2` and (through a Dense on
    its ReLU) `b_2` of `loss.monotonic_mix`.
    """

    dim: int
    heads: int
    ff: int
    layers: int
    init_scale: float = 0.01
    embed_relu: bool = False
    embed_norm: bool = True

    @nn.compact
    def __call__(self, q_a: Array, h_a: Array, state: Array, resets: Array) -> Array:
        A, B = q_a.shape[-1], q_a.shape[1]
        emb = Embedder(self.dim, self.init_scale, self.embed_relu, self.embed_norm)(state)
        encoder = Encoder(self.dim, self.heads, self.ff, self.layers)
        carry = jnp.zeros((B, self.dim), emb.dtype)
        _, out = _recurrent_token_scan(
            self, carry, jnp.concatenate([emb, h_a], axis=-2), resets, encoder
        )
        main = out[..., 0, :]  # [T, B, H]
        b2 = nn.Dense(1, kernel_init=orthogonal(self.init_scale), name="b2")(nn.relu(main))
        return monotonic_mix(q_a, out[..., -A:, :], main, b2[..., 0])


@dataclasses.dataclass(frozen=True, eq=False)  # holds arrays: hashed by identity
class TransfQMIXNetworks(QNetworks):
    """`QNetworks` with a `TransformerAgent` as `net` and a `TransformerMixer` as `mixer`.

    Attributes (besides `QNetworks`'):
      entity_obs: the env's `[..., A, D] -> [..., A, K, F]` observation tokens.
      entity_state: the env's `[..., *S] -> [..., K', F']` state tokens.
      obs_tokens: `(K, F)`.
      state_tokens: `(K', F')`.
    """

    entity_obs: Any
    entity_state: Any
    obs_tokens: tuple[int, int]
    state_tokens: tuple[int, int]

    def inputs(self, obs: Array) -> Array:
        """`[..., A, D]` observations -> `[..., A, K * F]` flattened entity tokens."""
        tokens = self.entity_obs(obs.astype(jnp.float32))
        return tokens.reshape(*tokens.shape[:-2], -1)

    def next_step(self, params: Any, hidden: Array, xs_next: Array) -> Array:
        """`concat(q, h) [T, B, A, N + H]` of the observation after each step (from `hidden`)."""
        T, B = xs_next.shape[:2]
        A = self.num_agents
        _, (q, h) = self.apply_agents(
            params,
            hidden.reshape(T * B, A, -1),
            xs_next.reshape(1, T * B, A, -1),
            jnp.zeros((1, T * B), bool),
        )
        return jnp.concatenate([q, h], -1).reshape(T, B, A, -1)

    def next_values(self, params, q, hidden, xs_next, truncated) -> tuple[Array, Array]:
        """`(q [L, B, A, N], h [L, B, A, H])` after each step of an unroll (see `next_q`)."""
        both = next_q(
            self.next_step, params, jnp.concatenate([q, hidden], -1), hidden, xs_next, truncated
        )
        return both[..., : self.num_actions], both[..., self.num_actions :]

    def mix_sequence(self, mixer_params, q_a, h_a, gs, resets) -> Array:
        """`Q_tot [L, B]` of `q_a [L, B, A]` with hidden tokens `h_a [L, B, A, H]`, states
        `gs [L, B, *S]`, the mixer's hidden token reset where `resets [L, B]`."""
        state = self.entity_state(gs.astype(jnp.float32))
        return self.mixer.apply(mixer_params, q_a, h_a, state, resets)

    def init(self, key: Array) -> dict[str, Any]:
        """Fresh parameters `{"agent": ..., "mixer": ...}`."""
        key_agents, key_mixer = jax.random.split(key)
        params = super().init(key_agents)  # agents (the base's mixer is unused: "mixer" != qmix)
        A, H = self.num_agents, self.carry_size
        params["mixer"] = self.mixer.init(
            key_mixer,
            jnp.zeros((1, 1, A)),
            jnp.zeros((1, 1, A, H)),
            jnp.zeros((1, 1, *self.state_tokens)),
            jnp.zeros((1, 1), bool),
        )
        return params


def make_transf_qmix_networks(
    config: TransfQMIXConfig, env: Environment, env_params: EnvParams | None = None
) -> TransfQMIXNetworks:
    """The `TransfQMIXNetworks` of `env` (discrete actions, entity tokens).

    Raises:
      ValueError: continuous actions, an env without entity tokens.
    """
    env_params = env.default_params() if env_params is None else env_params
    base = make_q_networks(config, env, env_params)
    obs_tokens, state_tokens = entity_shapes(env, env_params)
    H = config.embed_dim
    net = TransformerAgent(
        obs_tokens[0],
        H,
        config.agent_heads,
        config.agent_ff,
        config.agent_layers,
        base.num_actions,
        config.agent_init_scale,
        config.embed_relu,
        config.embed_norm,
        config.recurrent,
    )
    mixer = TransformerMixer(
        H,
        config.mixer_heads,
        config.mixer_ff,
        config.mixer_layers,
        config.mixer_init_scale,
        config.embed_relu,
        config.embed_norm,
    )
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    fields.update(net=net, mixer=mixer, carry_size=H, in_dim=obs_tokens[0] * obs_tokens[1])
    return TransfQMIXNetworks(
        **fields,
        entity_obs=env.entity_obs,
        entity_state=env.entity_state,
        obs_tokens=obs_tokens,
        state_tokens=state_tokens,
    )


__all__ = [
    "Embedder",
    "EncoderBlock",
    "TransfQMIXNetworks",
    "TransformerAgent",
    "TransformerMixer",
    "entity_shapes",
    "make_transf_qmix_networks",
]
