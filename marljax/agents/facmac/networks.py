"""FACMAC's networks: MADDPG's deterministic actors, per-agent utility critics `Q_i(o_i, a_i)` and
a mixer (`FACMACModel`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from marljax.agents import common
from marljax.agents.facmac.config import FACMACConfig
from marljax.agents.maddpg.networks import MADDPGModel, make_maddpg_model
from marljax.core.types import Environment, EnvParams
from marljax.nn import mixers

Array = jax.Array


@dataclasses.dataclass(frozen=True, eq=False)  # holds arrays: hashed by identity
class FACMACModel(MADDPGModel):
    """A `MADDPGModel` whose critic is `Q_tot = mixer(Q_1(o_1, a_1), ..., Q_A(o_A, a_A); s)`.

    The critic parameters are `{"utility": ..., "mixer": ...}` (the utilities stacked `[A, ...]`
    in the independent mode), trained as one network with one optimiser; `nets.critic` is the
    utility network on `[actor input, a_i]`.

    Attributes:
      mixer: the `marljax.nn.mixers.QMixer`, or None for VDN's sum.
    """

    mixer: Any = None

    @property
    def critics_per_agent(self) -> bool:
        return False  # one joint critic (utilities + mixer), one optimiser state

    def init_critics(self, key: Array) -> Any:
        """Fresh `{"utility", "mixer"}` parameters (the mixer's `{}` for VDN)."""
        nets, A = self.nets, self.num_agents
        key_q, key_mix = jax.random.split(key)
        init = lambda k: nets.critic.init(k, jnp.zeros((1, nets.critic_in_dim)))  # noqa: E731
        utility = common.init_per_agent(init, key_q, A, self.independent)
        mix = {}
        if self.mixer is not None:
            view_dim = self.critic_view(
                jnp.zeros((1, A, *self.obs_space.shape)), jnp.zeros((1, *self.state_space.shape))
            ).shape[-1]
            mix = self.mixer.init(key_mix, jnp.zeros((1, A)), jnp.zeros((1, view_dim)))
        return {"utility": utility, "mixer": mix}

    def utilities(self, params: Any, x: Array, a: Array) -> Array:
        """`Q_i(o_i, a_i)`: actor inputs `x [B, A, D_in]`, actions `a [B, A, D]` -> `[B, A]`."""
        z = jnp.concatenate([x, a], axis=-1)
        if self.independent:
            out = jax.vmap(self.nets.critic.apply, in_axes=(0, 1), out_axes=1)(params, z)
        else:
            out = self.nets.critic.apply(params, z)
        return out[..., 0]

    def mix(self, params: Any, q: Array, view: Array) -> Array:
        """`Q_tot [...]` of utilities `q [..., A]` and the mixer's view `[..., X]`."""
        if self.mixer is None:
            return mixers.vdn_mix(q)
        return self.mixer.apply(params, q, view)

    def q_tot(self, critic_params: Any, view: Array, x: Array, a: Array) -> Array:
        """`[B]` the mixed value of joint actions `a [B, A, D]` (unit box)."""
        return self.mix(
            critic_params["mixer"], self.utilities(critic_params["utility"], x, a), view
        )


def make_facmac_model(
    config: FACMACConfig, env: Environment, env_params: EnvParams | None = None
) -> FACMACModel:
    """The `FACMACModel` of a learner for `env` (continuous 1-D box actions).

    Raises:
      ValueError: an action space that is not a bounded 1-D `Box`.
    """
    base = make_maddpg_model(config, env, env_params)
    nets = dataclasses.replace(base.nets, critic_in_dim=base.nets.actor_in_dim + base.nets.act_dim)
    mixer = None
    if config.mixer == "qmix":
        mixer = mixers.QMixer(
            embed_dim=config.mixer_embed_dim,
            hypernet_hidden=config.hypernet_hidden,
            hypernet_layers=config.hypernet_layers,
        )
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    return FACMACModel(**{**fields, "nets": nets}, mixer=mixer)


__all__ = ["FACMACModel", "make_facmac_model"]
