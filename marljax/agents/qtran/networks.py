"""QTRAN's networks: the agents' Q-networks (`marljax.agents.qlearning`) plus the joint
action-value network `Q_jt(s, u)` and the state-value network `V_jt(s)`."""

from __future__ import annotations

import dataclasses
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from marljax.agents.qlearning.networks import QNetworks, make_q_networks
from marljax.agents.qtran.config import QTRANConfig
from marljax.core.types import Environment, EnvParams
from marljax.nn.networks import MLP

Array = jax.Array


@dataclasses.dataclass(frozen=True, eq=False)  # holds arrays: hashed by identity
class QTRANNetworks(QNetworks):
    """`QNetworks` whose "mixer" parameters are QTRAN's joint networks.

    Attributes (besides `QNetworks`'):
      joint: `Q_jt`, an MLP `[..., S + A * N] -> [..., 1]` on the flat global state and the
        agents' one-hot actions (EPyMARL's `coma_critic` architecture).
      value: `V_jt`, an MLP `[..., S] -> [..., 1]` on the flat global state.
    """

    joint: nn.Module
    value: nn.Module

    def joint_q(self, mixer_params: Any, gs: Array, actions: Array) -> Array:
        """`Q_jt(s, u) [...]` of global states `gs [..., *S]` and joint actions `[..., A]`."""
        onehot = jax.nn.one_hot(actions, self.num_actions, dtype=jnp.float32)
        x = jnp.concatenate([self.flat_state(gs), onehot.reshape(*actions.shape[:-1], -1)], -1)
        return self.joint.apply(mixer_params["joint"], x)[..., 0]

    def state_value(self, mixer_params: Any, gs: Array) -> Array:
        """`V_jt(s) [...]` of global states `gs [..., *S]`."""
        return self.value.apply(mixer_params["value"], self.flat_state(gs))[..., 0]

    def init(self, key: Array) -> dict[str, Any]:
        """Fresh parameters `{"agent": ..., "mixer": {"joint": ..., "value": ...}}`."""
        key_agents, key_joint, key_value = jax.random.split(key, 3)
        params = super().init(key_agents)
        S, A, N = self.state_space.flat_dim, self.num_agents, self.num_actions
        params["mixer"] = {
            "joint": self.joint.init(key_joint, jnp.zeros((1, S + A * N))),
            "value": self.value.init(key_value, jnp.zeros((1, S))),
        }
        return params


def make_qtran_networks(
    config: QTRANConfig, env: Environment, env_params: EnvParams | None = None
) -> QTRANNetworks:
    """The `QTRANNetworks` of a QTRAN learner for `env` (discrete actions).

    Raises:
      ValueError: continuous actions.
    """
    base = make_q_networks(config, env, env_params)
    hidden = tuple(config.joint_hidden)
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    return QTRANNetworks(**fields, joint=MLP(hidden, "relu", 1), value=MLP(hidden, "relu", 1))


__all__ = ["QTRANNetworks", "make_qtran_networks"]
