"""COMA's networks: per-agent actors on local observations and one centralised critic whose
input for agent `a` holds the state, `a`'s observation, the other agents' one-hot actions and
`a`'s id, and whose output is the value of each of `a`'s actions (Foerster et al. 2018, fig. 1).
"""

from __future__ import annotations

from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from marljax.agents.coma.config import COMAConfig
from marljax.nn.networks import MLP

Array = jax.Array

#: orthogonal scale of the actor's output layer (a near-uniform initial policy)
ACTOR_OUT_SCALE = 0.01


class COMANetworks(NamedTuple):
    """The actor (`[..., D] -> [..., N]` logits) and critic (`[..., C] -> [..., N]` values)."""

    actor: nn.Module
    critic: nn.Module


def default_networks(config: COMAConfig, num_actions: int) -> COMANetworks:
    """MLPs of `config.hidden_sizes` (actor) and `config.critic_hidden` (critic, ReLU)."""
    return COMANetworks(
        actor=MLP(config.hidden_sizes, config.activation, num_actions, ACTOR_OUT_SCALE),
        critic=MLP(config.critic_hidden, "relu", num_actions, 1.0),
    )


def critic_inputs(state: Array, obs: Array, actions: Array, num_actions: int) -> Array:
    """COMA's critic input for every agent: state, observation, the others' actions, its id.

        x_a = [s, o_a, onehot(u_1), ..., onehot(u_A) with onehot(u_a) zeroed, onehot(a)].

    Agent `a`'s own action is left out so that one forward pass gives `Q(s, (u_-a, u'))` for all
    of its actions `u'`.

    Args:
      state: `[..., S]` flat global state.
      obs: `[..., A, O]` flat per-agent observations.
      actions: `[..., A]` int joint actions.
      num_actions: `N`.

    Returns:
      `[..., A, S + O + A * N + A]` float32.
    """
    A = actions.shape[-1]
    batch = actions.shape[:-1]
    onehot = jax.nn.one_hot(actions, num_actions, dtype=jnp.float32)  # [..., A, N]
    others = onehot[..., None, :, :] * (1.0 - jnp.eye(A))[:, :, None]  # [..., A(self), A, N]
    s = jnp.broadcast_to(state[..., None, :].astype(jnp.float32), (*batch, A, state.shape[-1]))
    ids = jnp.broadcast_to(jnp.eye(A, dtype=jnp.float32), (*batch, A, A))
    return jnp.concatenate(
        [s, obs.astype(jnp.float32), others.reshape(*batch, A, A * num_actions), ids], axis=-1
    )


__all__ = ["ACTOR_OUT_SCALE", "COMANetworks", "critic_inputs", "default_networks"]
