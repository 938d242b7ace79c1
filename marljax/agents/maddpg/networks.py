"""The networks of MADDPG: deterministic per-agent actors and per-agent centralised critics
(`MADDPGNetworks`), and how the learner applies them (`MADDPGModel`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marljax.agents import common, heads
from marljax.agents.maddpg.config import MADDPGConfig
from marljax.core import spaces
from marljax.core.types import Environment, EnvParams
from marljax.nn.networks import MLP

Array = jax.Array

#: orthogonal scale of the actor's output layer: initial actions near the middle of the box
ACTOR_OUT_SCALE = 0.01


@dataclasses.dataclass(frozen=True)
class MADDPGNetworks:
    """The flax modules of a MADDPG learner (for tests and analysis code that re-apply them).

    Attributes:
      actor: `actor.apply(params_i, x [..., D_in]) -> [..., D]` pre-tanh actions `u`; the
        action is `tanh(u)` in the unit box, mapped affinely onto the env's box.
      critic: `critic.apply(params_i, z [..., X + A * D (+ A)]) -> [..., 1]` on the critic's
        view `x` (global state or all observations), the joint action in `[-1, 1]` and, with
        shared parameters, the agent's one-hot id.
      act_dim: `D`.
      actor_in_dim: `D_in`.
      critic_in_dim: the critic's input width.
    """

    actor: MLP
    critic: MLP
    act_dim: int
    actor_in_dim: int
    critic_in_dim: int


def _box(env: Environment, env_params: EnvParams) -> spaces.Box:
    act_space = env.action_space(env_params)
    if not isinstance(act_space, spaces.Box) or len(act_space.shape) != 1:
        raise ValueError(
            f"MADDPG and FACMAC need 1-D continuous (Box) actions; {env.name} has {act_space}. For "
            "discrete actions use qmix / vdn / iql, coma, or hasac / masac."
        )
    if not (np.isfinite(np.asarray(act_space.low)).all() and np.isfinite(act_space.high).all()):
        raise ValueError(
            f"MADDPG and FACMAC squash actions into a bounded box; {env.name}'s action box {act_space} "
            "has infinite bounds"
        )
    return act_space


def make_maddpg_networks(
    config: MADDPGConfig, env: Environment, env_params: EnvParams | None = None
) -> MADDPGNetworks:
    """The actor and critic modules `make_maddpg` builds for `env` (see `MADDPGNetworks`).

    Raises:
      ValueError: an action space that is not a 1-D `Box`.
    """
    env_params = env.default_params() if env_params is None else env_params
    act_dim = _box(env, env_params).shape[0]
    A = env.num_agents
    obs_dim = env.observation_space(env_params).flat_dim
    in_dim = obs_dim + (A if config.parameter_mode == "shared_id" else 0)
    if config.critic_input == "state":
        view = env.global_state_space(env_params).flat_dim
    else:
        view = A * obs_dim
    critic_in = view + A * act_dim + (0 if config.parameter_mode == "independent" else A)
    actor = MLP(tuple(config.hidden_sizes), config.activation, act_dim, ACTOR_OUT_SCALE)
    critic = MLP(tuple(config.hidden_sizes), config.activation, 1, 1.0)
    return MADDPGNetworks(actor, critic, act_dim, in_dim, critic_in)


@dataclasses.dataclass(frozen=True, eq=False)  # holds arrays: hashed by identity
class MADDPGModel:
    """A learner's networks applied over agents and batches (static; closed over by the factory).

    Attributes:
      config: the `MADDPGConfig`.
      nets: the `MADDPGNetworks`.
      num_agents: `A`.
      obs_space, state_space: the per-agent observation and global-state spaces.
      low, high: `[D]` bounds of the action box.
    """

    config: MADDPGConfig
    nets: MADDPGNetworks
    num_agents: int
    obs_space: Any
    state_space: Any
    low: Any
    high: Any

    @property
    def independent(self) -> bool:
        return self.config.parameter_mode == "independent"

    @property
    def critics_per_agent(self) -> bool:
        """The critic parameters have a leading agent axis (one optimiser state per agent)."""
        return self.independent

    def init_critics(self, key: Array) -> Any:
        """Fresh critic parameters: one critic per agent (stacked) or one shared critic."""
        nets = self.nets
        init = lambda k: nets.critic.init(k, jnp.zeros((1, nets.critic_in_dim)))  # noqa: E731
        return common.init_per_agent(init, key, self.num_agents, self.independent)

    def inputs(self, obs: Array) -> Array:
        """`[..., A, *obs_shape]` -> `[..., A, D_in]` actor inputs."""
        add_id = self.config.parameter_mode == "shared_id"
        return common.agent_inputs(obs, len(self.obs_space.shape), self.num_agents, add_id)

    def critic_view(self, obs: Array, gs: Array) -> Array:
        """The critics' view besides the actions: `[..., X]` flat global state or observations."""
        if self.config.critic_input == "state":
            return common.agent_inputs(gs, len(self.state_space.shape), self.num_agents, False)
        x = common.agent_inputs(obs, len(self.obs_space.shape), self.num_agents, False)
        return x.reshape(*x.shape[:-2], -1)

    def actor_all(self, params: Any, x: Array) -> Array:
        """`x [B, A, D_in]` -> `[B, A, D]` every agent's pre-tanh action `u`."""
        if self.independent:
            return jax.vmap(self.nets.actor.apply, in_axes=(0, 1), out_axes=1)(params, x)
        return self.nets.actor.apply(params, x)

    def critic_per_agent(self, params: Any, view: Array, joints: Array) -> Array:
        """Agent `i`'s critic at its own joint action `joints[i]`: `[B, A]` values.

        Args:
          params: the critics (`[A, ...]` stacked in the independent mode).
          view: `[B, X]` the critics' view (`critic_view`).
          joints: `[A, B, A, D]` one joint action (unit box) per critic.
        """
        A, B = joints.shape[:2]
        flat = joints.reshape(A, B, -1)
        z = jnp.concatenate([jnp.broadcast_to(view, (A, *view.shape)), flat], axis=-1)
        if self.independent:
            return jax.vmap(self.nets.critic.apply)(params, z)[..., 0].T
        ids = jnp.broadcast_to(jnp.eye(A, dtype=z.dtype)[:, None, :], (A, B, A))
        return self.nets.critic.apply(params, jnp.concatenate([z, ids], axis=-1))[..., 0].T

    def critic_all(self, params: Any, view: Array, joint: Array) -> Array:
        """Every agent's critic at the same joint action `joint [B, A, D]`: `[B, A]` values."""
        A = self.num_agents
        return self.critic_per_agent(params, view, jnp.broadcast_to(joint, (A, *joint.shape)))

    def to_env(self, a: Array) -> Array:
        """`[-1, 1]` actions -> env units (the action box)."""
        return heads.to_box(a, self.low, self.high)

    def to_unit(self, a: Array) -> Array:
        """Env-unit actions -> `[-1, 1]`."""
        return heads.from_box(a, self.low, self.high)

    def example_item(self) -> dict[str, Any]:
        """One stored transition (the replay buffer's item structure)."""
        z, A, D = jnp.zeros, self.num_agents, self.nets.act_dim
        obs_shape, obs_dtype = self.obs_space.shape, self.obs_space.dtype
        return {
            "obs": z((A, *obs_shape), obs_dtype),
            "state": z(self.state_space.shape),
            "actions": z((A, D)),
            "reward": z((A,)),
            "terminated": z(()),
            "next_obs": z((A, *obs_shape), obs_dtype),
            "next_state": z(self.state_space.shape),
        }


def make_maddpg_model(
    config: MADDPGConfig, env: Environment, env_params: EnvParams | None = None
) -> MADDPGModel:
    """The `MADDPGModel` of a learner for `env` (see `make_maddpg_networks` for the errors)."""
    env_params = env.default_params() if env_params is None else env_params
    nets = make_maddpg_networks(config, env, env_params)
    box = _box(env, env_params)
    low = jnp.broadcast_to(jnp.asarray(box.low, jnp.float32), box.shape)
    high = jnp.broadcast_to(jnp.asarray(box.high, jnp.float32), box.shape)
    return MADDPGModel(
        config,
        nets,
        env.num_agents,
        env.observation_space(env_params),
        env.global_state_space(env_params),
        low,
        high,
    )


__all__ = [
    "ACTOR_OUT_SCALE",
    "MADDPGModel",
    "MADDPGNetworks",
    "make_maddpg_model",
    "make_maddpg_networks",
]
