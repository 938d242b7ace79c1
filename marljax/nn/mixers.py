"""Value-decomposition mixers: Q_tot from per-agent utilities (VDN, QMIX).

    q_tot = vdn_mix(q_a)                                # sum over agents
    mixer = QMixer(embed_dim=32)                        # monotonic hypernetwork mixer
    q_tot = mixer.apply(params, q_a, global_state)

Both take per-agent values `q_a [..., A]` and return `[...]`. Papers can import them directly.
"""

from __future__ import annotations

from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

from marljax.nn.networks import orthogonal

Array = jax.Array

#: maps from hypernetwork outputs to non-negative mixing weights (QMIX uses the absolute value).
POSITIVE_MAPS: dict[str, Callable[[Array], Array]] = {
    "abs": jnp.abs,
    "relu": jax.nn.relu,
    "softplus": jax.nn.softplus,
    "exp": jnp.exp,
}


def vdn_mix(q_a: Array) -> Array:
    """VDN: `Q_tot = sum_a Q_a` over the last (agent) axis.

    Reference: P. Sunehag et al., "Value-Decomposition Networks For Cooperative Multi-Agent
    Learning", AAMAS 2018 (https://arxiv.org/abs/1706.05296).
    """
    return jnp.sum(q_a, axis=-1)


class QMixer(nn.Module):
    """QMIX's monotonic mixing network.

    Hypernetworks on the global state `s` produce the weights of a two-layer mixing network:

        h     = elu(q_a @ |W1(s)| + b1(s)),         W1 [A, E], b1 [E]
        Q_tot = h @ |W2(s)| + V(s),                 W2 [E],   V(s) a ReLU MLP (state value)

    The biases `b1(s)` and `V(s)` start at zero (their last layers are zero-initialised). The
    weights pass through a non-negative map (absolute value by default), so
    `dQ_tot / dQ_a >= 0` for every agent: the argmax of Q_tot is the tuple of per-agent argmaxes.

    Reference: T. Rashid et al., "QMIX: Monotonic Value Function Factorisation for Deep
    Multi-Agent Reinforcement Learning", ICML 2018 (https://arxiv.org/abs/1803.11485).

    Attributes:
      embed_dim: width `E` of the mixing layer (32 in the paper).
      hypernet_hidden: hidden width of two-layer hypernetworks (64 in PyMARL).
      hypernet_layers: 1 (linear hypernetworks) or 2 (one hidden ReLU layer).
      positive: name of the non-negative map in `POSITIVE_MAPS` (abs, relu, softplus, exp).
      init_scale: orthogonal scale of the hypernetworks' layers (small, so that Q_tot starts
        at the scale of the agents' values even for unnormalised states).
    """

    embed_dim: int = 32
    hypernet_hidden: int = 64
    hypernet_layers: int = 2
    positive: str = "abs"
    init_scale: float = 0.1

    def _dense(self, width: int, name: str, zero: bool = False) -> nn.Dense:
        kernel_init = nn.initializers.zeros if zero else orthogonal(self.init_scale)
        return nn.Dense(width, kernel_init=kernel_init, bias_init=nn.initializers.zeros, name=name)

    def _hyper(self, s: Array, out: int, name: str) -> Array:
        if self.hypernet_layers == 1:
            return self._dense(out, name)(s)
        h = jax.nn.relu(self._dense(self.hypernet_hidden, f"{name}_hidden")(s))
        return self._dense(out, name)(h)

    @nn.compact
    def __call__(self, q_a: Array, state: Array) -> Array:
        """`q_a [..., A]`, `state [..., S]` -> `Q_tot [...]`."""
        if self.positive not in POSITIVE_MAPS:
            raise ValueError(
                f"positive must be one of {sorted(POSITIVE_MAPS)}, got {self.positive!r}"
            )
        if self.hypernet_layers not in (1, 2):
            raise ValueError(f"hypernet_layers must be 1 or 2, got {self.hypernet_layers}")
        pos = POSITIVE_MAPS[self.positive]
        A, E = q_a.shape[-1], self.embed_dim
        s = state.astype(jnp.float32)
        w1 = pos(self._hyper(s, A * E, "hyper_w1")).reshape(*s.shape[:-1], A, E)
        # The state-dependent biases start at zero, so that Q_tot starts at the scale of the
        # agents' values whatever the scale of the state: a large initial offset would otherwise
        # decay only by a factor gamma per target-network update.
        b1 = self._dense(E, "hyper_b1", zero=True)(s)
        w2 = pos(self._hyper(s, E, "hyper_w2"))
        v_hidden = jax.nn.relu(self._dense(E, "value_hidden")(s))
        v = self._dense(1, "value_out", zero=True)(v_hidden)[..., 0]
        hidden = jax.nn.elu(jnp.einsum("...a,...ae->...e", q_a, w1) + b1)
        return jnp.einsum("...e,...e->...", hidden, w2) + v


__all__ = ["POSITIVE_MAPS", "QMixer", "vdn_mix"]
