"""PPO's networks: what a user may pass to `make_ppo`, the defaults, and the build-time checks.

A PPO agent has two per-agent networks, an actor (outputs read by the policy head: logits or
Gaussian means) and a critic (one value). Each is given as feed-forward flax modules mapping a
per-agent input vector `[..., D]` (the flattened observation or global state, plus a one-hot
agent id in the `shared_id` mode) to outputs `[..., O]`:

- `actor`, `critic`: the torsos with their output layers (`O` = the head's `num_outputs`, 1);
- `actor_encoder`, `critic_encoder` (optional): modules applied before the recurrent core
  (`PPOConfig.recurrent`), e.g. a CNN over a grid observation.

`marljax.nn.networks.SequenceNet` chains them (encoder, `RecurrentCore`, torso), so every agent keeps
the ONE recurrent core and its reset convention. The defaults (`default_networks`) follow the
input space: an MLP for vectors, `marljax.nn.networks.GridEncoder` + MLP for grids
(`spaces.Box(..., layout=...)`), switchable with `PPOConfig.torso`.
"""

from __future__ import annotations

from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from marljax.agents.ppo.config import PPOConfig
from marljax.core import spaces
from marljax.nn.networks import MLP, GridEncoder, SequenceNet

#: orthogonal scale of the actor's output layer (small: a near-uniform initial policy,
#: Andrychowicz et al. 2021) and of the critic's
ACTOR_OUT_SCALE = 0.01
CRITIC_OUT_SCALE = 1.0


class PPONetworks(NamedTuple):
    """The actor and critic of a PPO agent (feed-forward flax modules `[..., D] -> [..., O]`).

    Attributes:
      actor: actor torso and output layer; `O` must be the policy head's `num_outputs` (the
        number of actions, or the action dimension for Gaussian heads).
      critic: critic torso and output layer, `O = 1`.
      actor_encoder: optional module applied to the actor's input before the recurrent core.
      critic_encoder: likewise for the critic.
    """

    actor: nn.Module
    critic: nn.Module
    actor_encoder: nn.Module | None = None
    critic_encoder: nn.Module | None = None


def grid_encoder(config: PPOConfig, space: spaces.Space, what: str) -> nn.Module | None:
    """The CNN encoder of `config.torso` for an input space (None: flatten into the MLP).

    Raises:
      ValueError: `torso="cnn"` for a space that declares no grid layout.
    """
    grid = getattr(space, "grid_shape", None)
    if config.torso == "mlp" or (config.torso == "auto" and grid is None):
        return None
    if grid is None:
        raise ValueError(
            f"PPOConfig.torso='cnn' needs a grid {what} space (spaces.Box with a layout), "
            f"got {space}; use torso='auto' or 'mlp'"
        )
    return GridEncoder(grid, space.layout, tuple(config.cnn_channels), 3, "relu")


def default_networks(
    config: PPOConfig, obs_space: spaces.Space, critic_space: spaces.Space, num_outputs: int
) -> PPONetworks:
    """The default networks: `config.hidden_sizes` MLPs, with a CNN encoder on grid inputs.

    Args:
      config: the agent's static structure (`hidden_sizes`, `activation`, `torso`).
      obs_space: one agent's observation space (the actor's input).
      critic_space: the critic's input space (the observation space for a local critic, the
        global state space for a centralised one).
      num_outputs: the actor's output width (the policy head's `num_outputs`).
    """
    hidden, act = config.hidden_sizes, config.activation
    return PPONetworks(
        actor=MLP(hidden, act, num_outputs, ACTOR_OUT_SCALE),
        critic=MLP(hidden, act, 1, CRITIC_OUT_SCALE),
        actor_encoder=grid_encoder(config, obs_space, "observation"),
        critic_encoder=grid_encoder(config, critic_space, "critic input"),
    )


def sequence_nets(networks: PPONetworks, config: PPOConfig) -> tuple[SequenceNet, SequenceNet]:
    """`(actor, critic)` as `SequenceNet`s `(carry [B, H], xs [T, B, D], resets [T, B])`."""
    H = config.gru_size if config.recurrent else 1
    actor = SequenceNet(networks.actor, networks.actor_encoder, config.recurrent, H)
    critic = SequenceNet(networks.critic, networks.critic_encoder, config.recurrent, H)
    return actor, critic


def check_output(net: SequenceNet, input_dim: int, want: int, what: str, needs: str) -> None:
    """Raise a `ValueError` naming both shapes when `net`'s output width is not `want`.

    Shapes only (`jax.eval_shape`): nothing is compiled or computed.
    """
    c0 = jnp.zeros((1, net.gru_size))
    x0 = jnp.zeros((1, 1, input_dim))
    r0 = jnp.zeros((1, 1), bool)
    try:
        params = jax.eval_shape(net.init, jax.random.PRNGKey(0), c0, x0, r0)
        _, out = jax.eval_shape(net.apply, params, c0, x0, r0)
    except Exception as err:  # a user module that cannot take the input at all
        raise ValueError(
            f"the {what} network cannot be applied to its input of shape [..., {input_dim}]: "
            f"{type(err).__name__}: {err}"
        ) from err
    if out.shape[-1:] != (want,):
        raise ValueError(
            f"the {what} network outputs shape {tuple(out.shape[2:])} per agent, but {needs} "
            f"needs ({want},)"
        )


__all__ = [
    "ACTOR_OUT_SCALE",
    "CRITIC_OUT_SCALE",
    "PPONetworks",
    "check_output",
    "default_networks",
    "grid_encoder",
    "sequence_nets",
]
