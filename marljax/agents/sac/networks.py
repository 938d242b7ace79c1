"""The networks of HASAC / MASAC: per-agent actors, twin centralised critics (`SACNetworks`) and
how the learner applies them (`SACModel`: inputs, policies, critic features, action scaling)."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from marljax.agents import common, heads
from marljax.agents.sac.config import LOG_STD_MAX, LOG_STD_MIN, SACConfig, SACHParams, SACState
from marljax.core import spaces
from marljax.core.types import Environment, EnvParams
from marljax.nn import distributions
from marljax.nn.networks import MLP, mlp_first_layer, mlp_from_first_layer

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class SACNetworks:
    """The flax modules of a SAC learner (for tests and analysis code that re-apply them).

    Attributes:
      actor: `actor.apply(params_i, x [..., D_in]) -> [..., N]` logits (discrete) or
        `[..., 2 * D]` mean and log-std (continuous).
      critic: `critic.apply(params_j, z [..., S + A * F]) -> [..., 1]` on the flattened global
        state and the joint action features (one-hot, `F = N`, or in `[-1, 1]`, `F = D`).
      discrete: the action type.
      act_dim: `N` (discrete) or `D` (continuous).
      actor_in_dim: `D_in`.
    """

    actor: MLP
    critic: MLP
    discrete: bool
    act_dim: int
    actor_in_dim: int


def make_sac_networks(
    config: SACConfig, env: Environment, env_params: EnvParams | None = None
) -> SACNetworks:
    """The actor and critic modules `make_sac` builds for `env` (see `SACNetworks`)."""
    env_params = env.default_params() if env_params is None else env_params
    act_space = env.action_space(env_params)
    discrete = isinstance(act_space, spaces.Discrete)
    if not discrete and not isinstance(act_space, spaces.Box):
        raise ValueError(f"SAC supports Discrete and Box action spaces; {env.name} has {act_space}")
    if config.action_type == "discrete" and not discrete:
        raise ValueError(
            f"SACConfig.action_type='discrete' but {env.name} has continuous actions "
            f"({act_space}); use action_type='auto' or 'continuous'"
        )
    if config.action_type == "continuous" and discrete:
        raise ValueError(
            f"SACConfig.action_type='continuous' but {env.name} has discrete actions "
            f"({act_space}); use action_type='auto' or 'discrete'"
        )
    if not discrete and len(act_space.shape) != 1:
        raise ValueError(f"SAC needs 1-D continuous actions, got shape {act_space.shape}")
    act_dim = act_space.n if discrete else act_space.shape[0]
    obs_dim = env.observation_space(env_params).flat_dim
    in_dim = obs_dim + (env.num_agents if config.parameter_mode == "shared_id" else 0)
    out_dim = act_dim if discrete else 2 * act_dim
    actor = MLP(tuple(config.hidden_sizes), config.activation, out_dim, 0.01)
    critic = MLP(tuple(config.hidden_sizes), config.activation, 1, 1.0)
    return SACNetworks(actor, critic, discrete, act_dim, in_dim)


@dataclasses.dataclass(frozen=True, eq=False)  # holds arrays: hashed by identity
class SACModel:
    """A learner's networks applied over agents and batches (static; closed over by `make_sac`).

    Attributes:
      config: the `SACConfig`.
      nets: the `SACNetworks`.
      num_agents: `A`.
      obs_space: the per-agent observation space.
      state_space: the global-state space.
      low, high: `[D]` bounds of the continuous action box (None for discrete actions).
      used: `[A, D]` float32 0/1, the action entries each agent's log-probabilities, target
        entropy and critic features count (`SACConfig.used_entries_only` on an env that declares
        `action_entries_used`); None: every entry.
    """

    config: SACConfig
    nets: SACNetworks
    num_agents: int
    obs_space: Any
    state_space: Any
    low: Any = None
    high: Any = None
    used: Any = None

    @property
    def discrete(self) -> bool:
        return self.nets.discrete

    @property
    def independent(self) -> bool:
        return self.config.parameter_mode == "independent"

    def inputs(self, obs: Array) -> Array:
        """`[..., A, *obs_shape]` -> `[..., A, D_in]` actor inputs."""
        add_id = self.config.parameter_mode == "shared_id"
        return common.agent_inputs(obs, len(self.obs_space.shape), self.num_agents, add_id)

    def state_inputs(self, gs: Array) -> Array:
        """`[..., *state_shape]` -> `[..., S]` float32 critic inputs."""
        return common.agent_inputs(gs, len(self.state_space.shape), self.num_agents, False)

    def actor_all(self, params: Any, x: Array) -> Array:
        """`x [B, A, D_in]` -> `[B, A, O]` every agent's actor output."""
        if self.independent:
            return jax.vmap(self.nets.actor.apply, in_axes=(0, 1), out_axes=1)(params, x)
        return self.nets.actor.apply(params, x)

    def slice_agent(self, tree: Any, i: Array) -> Any:
        """Agent `i`'s slice of stacked per-agent parameters (the whole tree when shared)."""
        return jax.tree.map(lambda x: x[i], tree) if self.independent else tree

    def write_agent(self, tree: Any, i: Array, new: Any) -> Any:
        """`tree` with agent `i`'s slice replaced by `new` (`new` itself when shared)."""
        if self.independent:
            return jax.tree.map(lambda x, y: x.at[i].set(y), tree, new)
        return new

    def entries(self, agent: Array | None = None) -> Array | None:
        """The used action entries: `[A, D]`, agent `agent`'s `[D]`, or None (all entries)."""
        if self.used is None or agent is None:
            return self.used
        return self.used[agent]

    def policy(self, out: Array, mask: Array | None):
        """The action distribution of actor outputs: masked categorical (`mask`: legal actions)
        or tanh-Gaussian (`mask`: the used entries, `entries()`, or None)."""
        if self.discrete:
            return distributions.masked_categorical(out, mask)
        mean, log_std = jnp.split(out, 2, axis=-1)
        log_std = jnp.clip(log_std, LOG_STD_MIN, LOG_STD_MAX)
        return distributions.TanhGaussian(mean, log_std, entries=mask)

    def mode(self, out: Array, mask: Array) -> Array:
        """The policy's most likely action, in env units: masked argmax, or tanh(mean) rescaled."""
        if self.discrete:
            return jnp.argmax(jnp.where(mask, out, -jnp.inf), axis=-1).astype(jnp.int32)
        return self.to_env(self.policy(out, None).mode())

    def features(self, a: Array, agent: Array | None = None) -> Array:
        """Actions `[..., A]` int or `[..., A, D]` in [-1, 1] -> `[..., A, F]` critic features
        (unused entries zeroed); with `agent`, one agent's `[...]` / `[..., D]` -> `[..., F]`."""
        if self.discrete:
            return jax.nn.one_hot(a, self.nets.act_dim)
        used = self.entries(agent)
        return a if used is None else a * used

    def critic_apply(self, params: Any, gs: Array, feats: Array) -> Array:
        """Twin values `[2, ...]` of `gs [..., S]` and joint features `[..., A, F]`."""
        flat = feats.reshape(*feats.shape[:-2], self.num_agents * self.nets.act_dim)
        z = jnp.concatenate([gs, flat], axis=-1)
        return jax.vmap(self.nets.critic.apply, in_axes=(0, None))(params, z)[..., 0]

    def critic_state_part(self, params: Any, gs: Array) -> Array:
        """`[2, ..., H]` the twin critics' first layer on the global state alone (`gs @ W_s + b`):
        the part of `critic_apply` that does not depend on the actions (`critic_apply_split`)."""
        rows = slice(0, gs.shape[-1])
        return jax.vmap(lambda p: mlp_first_layer(p, gs, rows))(params)

    def critic_apply_split(self, params: Any, state_part: Array, feats: Array) -> Array:
        """`critic_apply` from `critic_state_part`'s `[2, ..., H]` and joint features
        `[..., A, F]`: the actor step computes the state's part once and reuses it for every
        agent's loss (one first-layer product of `S + A F` inputs becomes one of `A F`)."""
        flat = feats.reshape(*feats.shape[:-2], self.num_agents * self.nets.act_dim)
        rows = slice(-flat.shape[-1], None)

        def one(p, pre):
            z = pre + mlp_first_layer(p, flat, rows)
            return mlp_from_first_layer(self.nets.critic, p, z)

        return jax.vmap(one)(params, state_part)[..., 0]

    def to_unit(self, a: Array) -> Array:
        """Env-unit actions -> `[-1, 1]`."""
        return heads.from_box(a, self.low, self.high)

    def to_env(self, a: Array) -> Array:
        """`[-1, 1]` actions -> env units (the action box)."""
        return heads.to_box(a, self.low, self.high)

    def sample_all(self, params: Any, x: Array, mask: Array, key: Array) -> tuple[Array, Array]:
        """Actions `[B, A(, D)]` (unit scale) and their log-probabilities `[B, A]`."""
        out = self.actor_all(params, x)
        if self.discrete:  # the masked categorical, written out (cheaper to compile than distrax's)
            logp_all = jax.nn.log_softmax(jnp.where(mask, out, distributions.MASKED_LOGIT))
            a = jax.random.categorical(key, logp_all)
            return a, jnp.take_along_axis(logp_all, a[..., None], axis=-1)[..., 0]
        return self.policy(out, self.used).sample_and_log_prob(seed=key)

    def alpha(self, state: SACState, hp: SACHParams) -> Array:
        """`[A]` the agents' temperatures: learned, or the fixed `hp.init_alpha`."""
        if self.config.auto_alpha:
            return jnp.exp(state.log_alpha)
        return jnp.broadcast_to(jnp.asarray(hp.init_alpha, jnp.float32), (self.num_agents,))

    def example_item(self) -> dict[str, Any]:
        """One stored transition (the replay buffer's item structure)."""
        z, A, F = jnp.zeros, self.num_agents, self.nets.act_dim
        N = F if self.discrete else 0
        obs_shape, obs_dtype = self.obs_space.shape, self.obs_space.dtype
        return {
            "obs": z((A, *obs_shape), obs_dtype),
            "mask": z((A, N), bool),
            "state": z(self.state_space.shape),
            "actions": z((A,), jnp.int32) if self.discrete else z((A, F)),
            "reward": z(()),
            "discount": z(()),
            "next_obs": z((A, *obs_shape), obs_dtype),
            "next_state": z(self.state_space.shape),
            "next_mask": z((A, N), bool),
        }


def make_sac_model(
    config: SACConfig, env: Environment, env_params: EnvParams | None = None
) -> SACModel:
    """The `SACModel` of a learner for `env` (see `make_sac_networks` for the errors)."""
    env_params = env.default_params() if env_params is None else env_params
    nets = make_sac_networks(config, env, env_params)
    low = high = used = None
    if not nets.discrete:
        act_space = env.action_space(env_params)
        low = jnp.broadcast_to(jnp.asarray(act_space.low, jnp.float32), act_space.shape)
        high = jnp.broadcast_to(jnp.asarray(act_space.high, jnp.float32), act_space.shape)
        declared = getattr(env, "action_entries_used", None)
        if config.used_entries_only and declared is not None:
            used = jnp.asarray(declared, jnp.float32)
            if used.shape != (env.num_agents, nets.act_dim) or not bool(jnp.all(used.sum(-1) > 0)):
                raise ValueError(
                    f"{env.name}.action_entries_used must be [A, D] = [{env.num_agents}, "
                    f"{nets.act_dim}] with at least one entry per agent, got {used.tolist()}"
                )
    return SACModel(
        config,
        nets,
        env.num_agents,
        env.observation_space(env_params),
        env.global_state_space(env_params),
        low,
        high,
        used,
    )


__all__ = ["SACModel", "SACNetworks", "make_sac_model", "make_sac_networks"]
