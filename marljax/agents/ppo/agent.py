"""The PPO factory: wires a config, networks, a policy head and the loss into an `Agent`.

`make_ppo` only chooses pieces; the pieces are pure functions of a `PPOParts` bundle of static
structure (`init`, `act`, `update` below), and the loss is `marljax.agents.ppo.loss.ppo_loss`.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from marljax.agents import common, heads
from marljax.agents.base import Agent, AgentParams, Observation, Trajectory
from marljax.agents.bn.policy import make_bn_policy
from marljax.agents.ppo.config import A2C_OVERRIDES, PPOCarry, PPOConfig, PPOHParams, PPOState
from marljax.agents.ppo.loss import ppo_loss
from marljax.agents.ppo.networks import (
    PPONetworks,
    check_output,
    default_networks,
    sequence_nets,
)
from marljax.core import spaces
from marljax.core.types import Environment, EnvParams
from marljax.nn import losses

Array = jax.Array


class PPOParts(NamedTuple):
    """The static structure a PPO agent's functions close over (built by `make_ppo`)."""

    config: PPOConfig
    num_agents: int
    actor: Any  # SequenceNet
    critic: Any  # SequenceNet
    head: heads.PolicyHead
    policy: heads.JointPolicy
    obs_rank: int
    state_rank: int
    actor_in: int
    critic_in: int
    #: optional `(advantages [T, E, A], traj, hparams) -> [T, E, A]` applied after GAE (e.g.
    #: Advantage Alignment's aligned advantages, `marljax.population.make_aa_ppo`).
    advantage_transform: Any = None
    #: the mapped axis the reductions average over, set per call by `update(axis_name=)`
    axis_name: str | None = None
    #: one critic for all agents without an agent id, whatever the actors' parameter mode
    #: (HAPPO's centralised V(s), `marljax.agents.happo`); PPO's critic follows the actors'
    shared_critic: bool = False
    #: an auxiliary loss term added to the PPO loss (`marljax.agents.common.ExtraLoss`)
    extra_loss: Any = None

    @property
    def add_id(self) -> bool:
        return self.config.parameter_mode == "shared_id"

    @property
    def independent(self) -> bool:
        return self.config.parameter_mode == "independent"

    @property
    def critic_mode(self) -> str:
        """The critic's parameter mode: "shared" with `shared_critic`, else the actors'."""
        return "shared" if self.shared_critic else self.config.parameter_mode

    @property
    def carry_size(self) -> int:
        return self.config.gru_size if self.config.recurrent else 1


# -------------------------------------------------------------------------------- inputs / apply


def actor_inputs(parts: PPOParts, obs: Array) -> Array:
    """`obs [..., A, *obs_shape]` -> `[..., A, actor_in]`."""
    return common.agent_inputs(obs, parts.obs_rank, parts.num_agents, parts.add_id)


def critic_inputs(parts: PPOParts, obs: Array, global_state: Array) -> Array:
    """-> `[..., A, critic_in]` (the global state is broadcast to every agent)."""
    if parts.config.critic_input == "local":
        return actor_inputs(parts, obs)
    x = common.broadcast_to_agents(global_state, parts.state_rank, parts.num_agents)
    return common.agent_inputs(x, 1, parts.num_agents, parts.critic_mode == "shared_id")


def apply_actor(parts: PPOParts, params: Any, carry: Array, xs: Array, resets: Array):
    """`xs [T, B, A, D]`, `carry [B, A, H]`, `resets [T, B]` -> `(carry, out [T, B, A, O])`."""
    net_params = parts.policy.net_params(params)
    return common.apply_over_agents(
        parts.actor.apply, net_params, carry, xs, resets, parts.independent
    )


def apply_critic(parts: PPOParts, params: Any, carry: Array, xs: Array, resets: Array):
    """As `apply_actor` for the critic, with outputs `[T, B, A, 1]`."""
    # A global critic with shared parameters and no agent id gets the same input for every
    # agent of an env: evaluated once per env and broadcast, 1/A of the work, same numbers.
    mode = parts.critic_mode
    if parts.config.critic_input == "global" and mode == "shared":
        return common.apply_once_per_env(parts.critic.apply, params, carry, xs, resets)
    return common.apply_over_agents(
        parts.critic.apply, params, carry, xs, resets, mode == "independent"
    )


def value_scale(parts: PPOParts, state: PPOState, v: Array) -> Array:
    """Raw-scale values of the critic's outputs (undoes value normalisation)."""
    return losses.unstandardize(state.value_norm, v) if parts.config.value_norm else v


# -------------------------------------------------------------------------------- init / act


def optimizer(hp: PPOHParams) -> optax.GradientTransformation:
    """PPO's optimiser: global-norm clipping, Adam (`eps = adam_eps`), learning rate."""
    return common.make_optimizer(hp.lr, hp.max_grad_norm, kind="adam", eps=hp.adam_eps)


def init(parts: PPOParts, key: Array, hparams: PPOHParams) -> PPOState:
    """A fresh `PPOState`: actor (with the head's and joint policy's parameters) and critic."""
    c0 = jnp.zeros((1, parts.carry_size))
    r0 = jnp.zeros((1, 1), bool)

    def init_one(k: Array) -> tuple[Any, Any]:
        k_a, k_c = jax.random.split(k)
        actor = parts.actor.init(k_a, c0, jnp.zeros((1, 1, parts.actor_in)), r0)
        actor = heads.pack_actor_params(actor, parts.head.init_params())
        critic = parts.critic.init(k_c, c0, jnp.zeros((1, 1, parts.critic_in)), r0)
        return actor, critic

    actor, critic = common.init_per_agent(init_one, key, parts.num_agents, parts.independent)
    actor = parts.policy.init(key, actor)
    return PPOState(
        actor_params=actor,
        critic_params=critic,
        opt_state=optimizer(hparams).init((actor, critic)),
        value_norm=losses.running_mean_std_init(),
        num_updates=jnp.int32(0),
    )


def initial_carry(parts: PPOParts, num_envs: int) -> PPOCarry:
    """Zero recurrent state `[E, A, H]` for the actor and the critic."""
    shape = (num_envs, parts.num_agents, parts.carry_size)
    return PPOCarry(actor=jnp.zeros(shape, jnp.float32), critic=jnp.zeros(shape, jnp.float32))


def act(
    parts: PPOParts,
    state: PPOState,
    carry: PPOCarry,
    observation: Observation,
    key: Array,
    hparams: PPOHParams,
    greedy: bool = False,
):
    """One step for `E` envs: `(actions [E, A, ...], carry, info)`.

    `info = {"log_prob": [E, A], "value": [E, A], "critic_carry": [E, A, H], **policy info}`.
    `greedy` (static) takes the joint policy's mode instead of sampling.
    """
    del hparams
    x = actor_inputs(parts, observation.obs)[None]  # [1, E, A, D]
    resets = observation.reset[None]
    a_carry, out = apply_actor(parts, state.actor_params, carry.actor, x, resets)
    actions, log_prob, policy_info = parts.policy.act(
        state.actor_params, x[0], out[0], observation, key, state.num_updates, greedy
    )
    cx = critic_inputs(parts, observation.obs, observation.global_state)[None]
    c_carry, v = apply_critic(parts, state.critic_params, carry.critic, cx, resets)
    info = {
        "log_prob": log_prob,
        "value": value_scale(parts, state, v[0, ..., 0]),
        "critic_carry": c_carry,
        **policy_info,
    }
    return actions, PPOCarry(a_carry, c_carry), info


# -------------------------------------------------------------------------------- update


def advantages_and_targets(
    parts: PPOParts, state: PPOState, traj: Trajectory, hp: PPOHParams
) -> tuple[Array, Array, Array, Array, losses.RunningMeanStd]:
    """GAE on a rollout: `(advantages, returns, targets, old_values, value_norm)`, `[T, E, A]`.

    `targets` and `old_values` are in the critic's scale (standardised with the updated running
    statistics when `config.value_norm`).
    """
    T, E = traj.reward.shape[:2]
    A = parts.num_agents
    info = traj.policy_info
    # V(s_{t+1}) from the post-step critic carry: equals the next step's value inside an
    # episode and is V(final observation) at episode ends (bootstrap at truncation).
    nx = critic_inputs(parts, traj.next_obs, traj.next_global_state)  # [T, E, A, D]
    _, v_next = apply_critic(
        parts,
        state.critic_params,
        info["critic_carry"].reshape(T * E, A, -1),
        nx.reshape(1, T * E, A, -1),
        jnp.zeros((1, T * E), bool),
    )
    v_next = value_scale(parts, state, v_next.reshape(T, E, A))
    terminated = traj.terminated[..., None].astype(jnp.float32)
    done = jnp.logical_or(traj.terminated, traj.truncated)[..., None].astype(jnp.float32)
    discount = hp.gamma * (1.0 - terminated) * jnp.ones_like(traj.reward)
    done = done * jnp.ones_like(traj.reward)
    advantages, returns = losses.gae(
        traj.reward, info["value"], v_next, discount, done, hp.gae_lambda
    )
    advantages = jax.lax.stop_gradient(advantages)
    returns = jax.lax.stop_gradient(returns)
    value_norm = state.value_norm
    if parts.config.value_norm:
        value_norm = losses.running_mean_std_update(value_norm, returns, axis_name=parts.axis_name)
        targets = losses.standardize(value_norm, returns)
        old_values = losses.standardize(value_norm, info["value"])
    else:
        targets, old_values = returns, info["value"]
    return advantages, returns, targets, old_values, value_norm


def minibatches(parts: PPOParts, batch: dict, carry0: PPOCarry, key: Array):
    """Shuffle a `[T, E, ...]` batch into `num_minibatches` minibatches `[M, T', B', ...]`.

    Recurrent agents keep whole sequences and shuffle environments (with their initial
    carries); feed-forward agents shuffle single steps (`T' = 1`, zero carries).
    """
    num_mb = parts.config.num_minibatches
    T, E = batch["resets"].shape
    if parts.config.recurrent:
        perm = jax.random.permutation(key, E)

        def split(x):
            x = jnp.take(x, perm, axis=1)
            return jnp.swapaxes(x.reshape(T, num_mb, E // num_mb, *x.shape[2:]), 0, 1)

        def split_c(c):
            c = jnp.take(c, perm, axis=0)
            return c.reshape(num_mb, E // num_mb, *c.shape[1:])

        return jax.tree.map(split, batch), jax.tree.map(split_c, carry0)
    n = T * E
    perm = jax.random.permutation(key, n)

    def split(x):
        x = x.reshape(n, *x.shape[2:])[perm]
        return x.reshape(num_mb, 1, n // num_mb, *x.shape[1:])

    A = parts.num_agents
    zero = PPOCarry(jnp.zeros((num_mb, n // num_mb, A, 1)), jnp.zeros((num_mb, n // num_mb, A, 1)))
    return jax.tree.map(split, batch), zero


def minibatch_loss(
    parts: PPOParts, params: tuple, mb: dict, mb_carry: PPOCarry, hp: PPOHParams, step
):
    """`ppo_loss` of one minibatch `mb` (leaves `[T', B', ...]`) under `params = (actor, critic)`."""
    actor_p, critic_p = params
    _, out = apply_actor(parts, actor_p, mb_carry.actor, mb["x_actor"], mb["resets"])
    log_prob, entropy = parts.policy.log_prob_and_entropy(
        actor_p, mb["x_actor"], out, mb["actions"], mb["mask"], mb["extras"], mb["resets"], step
    )
    _, v = apply_critic(parts, critic_p, mb_carry.critic, mb["x_critic"], mb["resets"])
    total, metrics = ppo_loss(
        log_prob,
        mb["old_log_prob"],
        mb["advantages"],
        v[..., 0],
        mb["old_values"],
        mb["targets"],
        entropy,
        clip_eps=hp.clip_eps,
        value_clip_eps=hp.value_clip_eps if parts.config.clip_value_loss else None,
        vf_coef=hp.vf_coef,
        ent_coef=hp.ent_coef,
        normalize_advantages=parts.config.normalize_advantages,
        axis_name=parts.axis_name,
    )
    return common.add_extra_loss(total, metrics, parts.extra_loss, params, mb, hp)


def rollout_batch(
    parts: PPOParts, traj: Trajectory, advantages: Array, targets: Array, old_values: Array
) -> dict:
    """The learner's inputs of a rollout, leaves `[T, E, ...]` (what `minibatches` splits)."""
    obs = traj.observation
    return {
        "x_actor": actor_inputs(parts, obs.obs),
        "x_critic": critic_inputs(parts, obs.obs, obs.global_state),
        "mask": obs.action_mask,
        "resets": obs.reset,
        "actions": traj.actions,
        "old_log_prob": traj.policy_info["log_prob"],
        "old_values": old_values,
        "targets": targets,
        "advantages": advantages,
        "extras": parts.policy.extras(traj.policy_info, obs),
    }


def sgd_epochs(
    parts: PPOParts,
    loss_fn: Any,
    tx: optax.GradientTransformation,
    params_and_opt: tuple[Any, Any],
    batch: dict,
    carry0: PPOCarry,
    epoch_keys: Array,
) -> tuple[tuple[Any, Any], dict]:
    """`len(epoch_keys)` passes of minibatched gradient steps of `loss_fn` over `batch`.

    `loss_fn(params, mb, mb_carry) -> (loss, metrics)` on one minibatch of `minibatches`; the
    gradients are averaged over `parts.axis_name`. Returns `((params, opt_state), metrics)`
    with every metric (and `grad_norm`) averaged over the steps.
    """

    def mb_step(carry, inputs):
        params, opt_state = carry
        mb, mb_carry = inputs
        (_, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, mb, mb_carry)
        grads = common.data_mean(grads, parts.axis_name)
        updates, opt_state = tx.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        metrics["grad_norm"] = optax.global_norm(grads)
        return (params, opt_state), metrics

    def epoch(carry, key):
        return jax.lax.scan(mb_step, carry, minibatches(parts, batch, carry0, key))

    out, metrics = jax.lax.scan(epoch, params_and_opt, epoch_keys)
    return out, jax.tree.map(jnp.mean, metrics)


def update(
    parts: PPOParts,
    state: PPOState,
    traj: Trajectory,
    hparams: PPOHParams,
    key: Array,
    axis_name: str | None = None,
):
    """`num_epochs` passes of minibatched `ppo_loss` steps over one rollout.

    `axis_name`: a mapped axis whose members hold shares of the rollout (data-parallel devices);
    gradients, advantage normalisation and value-normalisation statistics are averaged over it,
    so every member takes the whole batch's step.
    """
    parts = parts._replace(axis_name=axis_name)
    hp = hparams
    advantages, returns, targets, old_values, value_norm = advantages_and_targets(
        parts, state, traj, hp
    )
    if parts.advantage_transform is not None:
        advantages = jax.lax.stop_gradient(parts.advantage_transform(advantages, traj, hp))
    batch = rollout_batch(parts, traj, advantages, targets, old_values)
    loss_fn = functools.partial(minibatch_loss, parts, hp=hp, step=state.num_updates)
    params = (state.actor_params, state.critic_params)
    (params, opt_state), metrics = sgd_epochs(
        parts,
        loss_fn,
        optimizer(hp),
        (params, state.opt_state),
        batch,
        traj.initial_carry,
        jax.random.split(key, parts.config.num_epochs),
    )
    metrics["value_mean"] = jnp.mean(returns)
    metrics.update(parts.policy.metrics(traj.policy_info, state.num_updates))
    new_state = PPOState(
        actor_params=params[0],
        critic_params=params[1],
        opt_state=opt_state,
        value_norm=value_norm,
        num_updates=state.num_updates + 1,
    )
    return new_state, metrics


def check_batch(config: PPOConfig, num_envs: int, rollout_len: int) -> None:
    """Raise a clear error when the batch does not split into `num_minibatches`."""
    n = num_envs if config.recurrent else num_envs * rollout_len
    if n % config.num_minibatches:
        what = "num_envs" if config.recurrent else "num_envs * rollout_len"
        raise ValueError(
            f"{what} = {n} is not divisible by num_minibatches = {config.num_minibatches}"
        )


def get_params(state: PPOState) -> AgentParams:
    """`AgentParams(policy=actor parameters, critic=critic parameters)`."""
    return AgentParams(policy=state.actor_params, critic=state.critic_params)


# -------------------------------------------------------------------------------- factory


def make_ppo(
    config: PPOConfig,
    env: Environment,
    env_params: EnvParams | None = None,
    networks: PPONetworks | None = None,
    *,
    policy_head: heads.PolicyHead | None = None,
    advantage_transform: Any = None,
    extra_loss: common.ExtraLoss | None = None,
) -> Agent:
    """Build a PPO-family agent for `env` (IPPO if `critic_input="local"`, MAPPO if "global").

    Args:
      config: static structure.
      env: the environment (only its spaces and number of agents are read).
      env_params: params used to read the spaces (default: `env.default_params()`).
      networks: the actor and critic (`PPONetworks` of feed-forward flax modules); default
        `default_networks` (MLPs, with a CNN encoder on grid observations).
      policy_head: how the actor's outputs become actions (`marljax.agents.heads`); default
        `heads.head_for_space(action space, config.tanh_squash)`. `config.graph` composes it
        into a Bayesian-network joint policy (BN-MAPPO, discrete actions).
      advantage_transform: optional `(advantages [T, E, A], traj, hparams) -> [T, E, A]`
        applied to the GAE advantages of every rollout before the PPO loss (e.g. the aligned
        advantages of `marljax.population.make_aa_ppo`); default none.
      extra_loss: `extra_loss((actor, critic) params, minibatch, hparams) -> scalar` added to
        every minibatch's loss and reported as the metric `extra_loss` (an auxiliary loss;
        `marljax.agents.common.ExtraLoss`); default none.

    Returns:
      An `Agent` (see `marljax.agents.base`). Its `act` returns `policy_info = {"log_prob": [E, A],
      "value": [E, A], "critic_carry": [E, A, H]}`.

    Raises:
      ValueError: a head or network output that does not fit the action space (both shapes
        are named), or a BN graph on continuous actions.
    """
    env_params = env.default_params() if env_params is None else env_params
    A = env.num_agents
    act_space = env.action_space(env_params)
    obs_space = env.observation_space(env_params)
    state_space = env.global_state_space(env_params)
    if not isinstance(act_space, spaces.Discrete | spaces.Box):
        raise NotImplementedError(f"PPO supports Discrete and Box action spaces, got {act_space}")
    head = policy_head or heads.head_for_space(act_space, config.tanh_squash)
    heads.check_head(head, act_space)
    add_id = A if config.parameter_mode == "shared_id" else 0
    actor_in = obs_space.flat_dim + add_id
    local = config.critic_input == "local"
    critic_in = (obs_space.flat_dim if local else state_space.flat_dim) + add_id
    critic_space = obs_space if local else state_space
    networks = networks or default_networks(config, obs_space, critic_space, head.num_outputs)
    actor, critic = sequence_nets(networks, config)
    check_output(actor, actor_in, head.num_outputs, "actor", f"the policy head for {act_space}")
    check_output(critic, critic_in, 1, "critic", "a state value")
    if config.uses_graph:
        if not head.discrete:
            raise ValueError("PPOConfig.graph (BN joint policy) needs a Discrete action space")
        policy = make_bn_policy(
            config.graph, A, head.num_outputs, actor_in, state_space.flat_dim,
            hidden_sizes=config.hidden_sizes, activation=config.activation,
            independent=config.parameter_mode == "independent",
            threshold_start=config.graph_threshold_start,
            threshold_end=config.graph_threshold_end,
            anneal_updates=config.graph_anneal_updates,
            edge_init=config.graph_edge_init, order_bias=config.graph_order_bias,
        )  # fmt: skip
    else:
        policy = heads.IndependentPolicy(head)
    parts = PPOParts(
        config, A, actor, critic, head, policy, len(obs_space.shape), len(state_space.shape),
        actor_in, critic_in, advantage_transform, extra_loss=extra_loss,
    )  # fmt: skip
    return Agent(
        init=functools.partial(init, parts),
        initial_carry=functools.partial(initial_carry, parts),
        act=functools.partial(act, parts),
        update=functools.partial(update, parts),
        default_hparams=PPOHParams,
        get_params=get_params,
        check_batch=functools.partial(check_batch, config),
        config=config,
        rebuild=lambda c: make_ppo(
            c,
            env,
            env_params,
            networks,
            policy_head=head,
            advantage_transform=advantage_transform,
            extra_loss=extra_loss,
        ),  # fmt: skip
    )


def ippo(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """IPPO: PPO with a critic on each agent's local observation."""
    return make_ppo(PPOConfig(critic_input="local", **config), env, env_params)


def mappo(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """MAPPO: PPO with a centralised critic on the global state."""
    return make_ppo(PPOConfig(critic_input="global", **config), env, env_params)


def ia2c(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """IA2C: independent advantage actor-critic, PPO with `A2C_OVERRIDES` and a local critic."""
    return make_ppo(
        PPOConfig(**{"critic_input": "local", **A2C_OVERRIDES, **config}), env, env_params
    )


def maa2c(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """MAA2C: advantage actor-critic with a centralised critic, PPO with `A2C_OVERRIDES`."""
    return make_ppo(
        PPOConfig(**{"critic_input": "global", **A2C_OVERRIDES, **config}), env, env_params
    )


__all__ = [
    "PPOParts",
    "act",
    "advantages_and_targets",
    "ia2c",
    "init",
    "ippo",
    "maa2c",
    "make_ppo",
    "mappo",
    "minibatch_loss",
    "minibatches",
    "rollout_batch",
    "sgd_epochs",
    "update",
]
