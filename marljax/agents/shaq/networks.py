"""SHAQ's networks: the agents' Q-networks (`marljax.agents.qlearning`) plus the alpha network,
which estimates the weights `alpha_i(s, a_i)` of the agents' non-greedy utilities."""

from __future__ import annotations

import dataclasses
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from marljax.agents.qlearning.networks import QNetworks, make_q_networks
from marljax.agents.shaq.config import SHAQConfig
from marljax.agents.shaq.loss import coalition_mean, sample_coalitions
from marljax.core.types import Environment, EnvParams
from marljax.nn.networks import orthogonal

Array = jax.Array


class AlphaNetwork(nn.Module):
    """`alpha_hat_i >= 0` of an agent's utility and its coalition's mean utility in a state.

    A two-layer mixing network whose weights come from hypernetworks of the state (the QMIX
    form, JaxMARL's `AlphaEstimate`):

        x     = [q_C, q_i]                                   (coalition mean, own utility)
        h     = elu(x @ |W1(s)| + b1(s)),                    W1 [2, E], b1 [E]
        alpha_hat = | h @ |W2(s)| + b2(s) |,                 W2 [E],   b2 [1]

    `W1`, `W2` and `b2` are two-layer ReLU hypernetworks (hidden `hypernet_hidden`, `E` for
    `b2`), `b1` is linear; every layer starts orthogonal with scale `init_scale`.

    Attributes:
      embed_dim: `E`.
      hypernet_hidden: hidden width of the `W1` and `W2` hypernetworks.
      init_scale: orthogonal scale of every layer (tiny: `alpha_hat` starts near 0).
    """

    embed_dim: int = 32
    hypernet_hidden: int = 64
    init_scale: float = 1e-5

    def _dense(self, width: int, name: str) -> nn.Dense:
        return nn.Dense(
            width,
            kernel_init=orthogonal(self.init_scale),
            bias_init=nn.initializers.zeros,
            name=name,
        )

    def _hyper(self, s: Array, hidden: int, out: int, name: str) -> Array:
        h = jax.nn.relu(self._dense(hidden, f"{name}_hidden")(s))
        return self._dense(out, name)(h)

    @nn.compact
    def __call__(self, q_i: Array, q_c: Array, state: Array) -> Array:
        """`q_i [..., M, A]`, `q_c [..., M, A]`, `state [..., S]` -> `alpha_hat [..., M, A]`."""
        E = self.embed_dim
        s = state.astype(jnp.float32)
        w1 = jnp.abs(self._hyper(s, self.hypernet_hidden, 2 * E, "hyper_w1"))
        w1 = w1.reshape(*s.shape[:-1], 2, E)
        b1 = self._dense(E, "hyper_b1")(s)
        w2 = jnp.abs(self._hyper(s, self.hypernet_hidden, E, "hyper_w2"))
        b2 = self._hyper(s, E, 1, "hyper_b2")[..., 0]
        x = jnp.stack([q_c, q_i], axis=-1)  # [..., M, A, 2]
        h = jax.nn.elu(jnp.einsum("...mak,...ke->...mae", x, w1) + b1[..., None, None, :])
        y = jnp.einsum("...mae,...e->...ma", h, w2) + b2[..., None, None]
        return jnp.abs(y)


@dataclasses.dataclass(frozen=True, eq=False)  # holds arrays: hashed by identity
class SHAQNetworks(QNetworks):
    """`QNetworks` whose "mixer" parameters are SHAQ's alpha network.

    Attributes (besides `QNetworks`'):
      alpha: the `AlphaNetwork`.
    """

    alpha: nn.Module

    def alpha_weights(self, mixer_params: Any, q_taken: Array, gs: Array, key: Array) -> Array:
        """`alpha_i(s, a_i) [..., A]` of the utilities `q_taken [..., A]` in states `gs`.

        The Monte Carlo estimate over `config.sample_size` sampled coalition orders:

            alpha_i = 1 + mean_m alpha_hat(q_i, mean_{j in C_i^m} q_j, s)

        (JaxMARL's `SHAQMixer`: `alpha >= 1`). Gradients flow into the utilities too.
        """
        M = self.config.sample_size
        coalitions = sample_coalitions(key, q_taken.shape[:-1], self.num_agents, M)
        q_c = coalition_mean(q_taken, coalitions)  # [..., M, A]
        q_i = jnp.broadcast_to(q_taken[..., None, :], q_c.shape)
        alpha_hat = self.alpha.apply(mixer_params, q_i, q_c, self.flat_state(gs))
        return 1.0 + alpha_hat.mean(axis=-2)

    def init(self, key: Array) -> dict[str, Any]:
        """Fresh parameters `{"agent": ..., "mixer": alpha network params}`."""
        key_agents, key_alpha = jax.random.split(key)
        params = super().init(key_agents)
        M, A, S = self.config.sample_size, self.num_agents, self.state_space.flat_dim
        params["mixer"] = self.alpha.init(
            key_alpha, jnp.zeros((1, M, A)), jnp.zeros((1, M, A)), jnp.zeros((1, S))
        )
        return params


def make_shaq_networks(
    config: SHAQConfig, env: Environment, env_params: EnvParams | None = None
) -> SHAQNetworks:
    """The `SHAQNetworks` of a SHAQ learner for `env` (discrete actions, a global state).

    Raises:
      ValueError: continuous actions, an env whose global state is empty.
    """
    base = make_q_networks(config, env, env_params)
    if base.state_space.flat_dim == 0:
        raise ValueError(
            f"SHAQ's alpha network conditions on the global state, but {env.name} has an "
            "empty global state; use vdn, or give the env a global state"
        )
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    alpha = AlphaNetwork(config.mixer_embed_dim, config.hypernet_hidden, config.mixer_init_scale)
    return SHAQNetworks(**fields, alpha=alpha)


__all__ = ["AlphaNetwork", "SHAQNetworks", "make_shaq_networks"]
