"""The HAPPO / HATRPO agent: `init` / `act` / `update` as pure functions of a `HAPPOParts`
record, which `make_happo` wires into an `Agent`.

Acting, the rollout batch, GAE, minibatching and the critic are MAPPO's (`marljax.agents.ppo`,
with one shared centralised critic). One update: the agents' actors in a random order, one
after another as a `lax.scan` over the order (so the program does not grow with the number of
agents), each with its `actor_step` (`happo_actor_step` or `hatrpo_actor_step`) on the advantage
weighted by the earlier agents' ratio product; then the critic's epochs (`critic_step`).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from marljax.agents import common, heads
from marljax.agents.base import Agent, Trajectory
from marljax.agents.happo import loss as hloss
from marljax.agents.happo.config import HAPPOConfig, HAPPOHParams, HAPPOState
from marljax.agents.ppo import agent as ppo_agent
from marljax.agents.ppo.agent import PPOParts
from marljax.agents.ppo.config import PPOCarry
from marljax.agents.ppo.networks import check_output, default_networks, sequence_nets
from marljax.agents.sac.agent import agent_order
from marljax.core import spaces
from marljax.core.types import Environment, EnvParams
from marljax.nn import losses

Array = jax.Array

#: the rollout-batch entries an actor step reads (the critic's are left out of its shuffles)
ACTOR_KEYS = ("x_actor", "mask", "resets", "actions", "old_log_prob", "advantages")


class HAPPOParts(NamedTuple):
    """The static structure a HAPPO / HATRPO agent's functions close over (built by `make_happo`).

    `ppo` holds the actor and critic networks, the policy head and the input layout (a MAPPO
    `PPOParts` with one shared critic); `actor_step` is the per-agent step, `happo_actor_step`
    or `hatrpo_actor_step`.
    """

    ppo: PPOParts
    actor_step: Any


# -------------------------------------------------------------------------------- per agent


def slice_agent(parts: PPOParts, tree: Any, i: Array) -> Any:
    """Agent `i`'s slice of stacked per-agent parameters (the whole tree when shared)."""
    return jax.tree.map(lambda x: x[i], tree) if parts.independent else tree


def write_agent(parts: PPOParts, tree: Any, i: Array, new: Any) -> Any:
    """`tree` with agent `i`'s slice replaced by `new` (`new` itself when shared)."""
    if parts.independent:
        return jax.tree.map(lambda x, y: x.at[i].set(y), tree, new)
    return new


def agent_dist(parts: PPOParts, p_i: Any, i: Array, batch: dict, carry_i: Array):
    """Agent `i`'s action distributions on `batch` (leaves `[T, B, A, ...]`), `carry_i [B, H]`."""
    x = batch["x_actor"][:, :, i]
    _, out = parts.actor.apply(parts.policy.net_params(p_i), carry_i, x, batch["resets"])
    mask = jax.tree.map(lambda m: m[:, :, i], batch["mask"])
    return parts.head(out, p_i, mask)


def agent_log_prob(parts: PPOParts, p_i: Any, i: Array, batch: dict, carry_i: Array) -> Array:
    """`[T, B]` log pi_i of agent `i`'s recorded actions under `p_i`."""
    return agent_dist(parts, p_i, i, batch, carry_i).log_prob(batch["actions"][:, :, i])


def happo_actor_step(parts, p_i, o_i, i, batch, carry0, hp: HAPPOHParams, epoch_keys):
    """HAPPO: `num_epochs` x `num_minibatches` Adam steps of agent `i` on `loss.happo_loss`.

    `batch` holds `ACTOR_KEYS` and `factor [T, E]`; `carry0` the rollout's initial carries.
    Returns `(p_i, o_i, metrics)`.
    """

    def loss_fn(p, mb, mb_carry):
        dist = agent_dist(parts, p, i, mb, mb_carry.actor[:, i])
        return hloss.happo_loss(
            dist.log_prob(mb["actions"][:, :, i]),
            mb["old_log_prob"][:, :, i],
            mb["advantages"][:, :, i],
            mb["factor"],
            dist.entropy(),
            clip_eps=hp.clip_eps,
            ent_coef=hp.ent_coef,
            normalize_advantages=parts.config.normalize_advantages,
            axis_name=parts.axis_name,
        )

    tx = ppo_agent.optimizer(hp)
    (p_i, o_i), metrics = ppo_agent.sgd_epochs(
        parts, loss_fn, tx, (p_i, o_i), batch, carry0, epoch_keys
    )
    return p_i, o_i, metrics


def hatrpo_actor_step(parts, p_i, o_i, i, batch, carry0, hp: HAPPOHParams, epoch_keys):
    """HATRPO: one KL-constrained natural-gradient step of agent `i` on the whole batch.

    Conjugate gradient on the (damped) Fisher-vector product of the mean `KL(pi_old || pi)`
    gives the direction, `loss.max_step` its length from `hp.kl_threshold`, and
    `loss.line_search` the first accepted fraction (none: `p_i` unchanged). Returns
    `(p_i, o_i, metrics)` (`o_i` untouched).
    """
    del epoch_keys
    axis = parts.axis_name
    carry_i = carry0.actor[:, i]
    advantages = batch["advantages"][:, :, i]
    if parts.config.normalize_advantages:
        advantages = losses.normalize(advantages, axis_name=axis)
    old_log_prob = batch["old_log_prob"][:, :, i]
    theta0, unravel = ravel_pytree(p_i)
    old = agent_dist(parts, p_i, i, batch, carry_i)  # p_i is a constant of theta

    def surrogate(theta):
        dist = agent_dist(parts, unravel(theta), i, batch, carry_i)
        lp = dist.log_prob(batch["actions"][:, :, i])
        return hloss.hatrpo_surrogate(lp, old_log_prob, advantages, batch["factor"])

    def mean_kl(theta):
        dist = agent_dist(parts, unravel(theta), i, batch, carry_i)
        return jnp.mean(hloss.policy_kl(old, dist))

    def fvp(v):
        f_v = jax.jvp(jax.grad(mean_kl), (theta0,), (v,))[1]
        return common.data_mean(f_v, axis) + hp.cg_damping * v

    surrogate0, grad = jax.value_and_grad(surrogate)(theta0)
    surrogate0, grad = common.data_mean((surrogate0, grad), axis)
    direction = hloss.conjugate_gradient(fvp, grad, parts.config.cg_iters)
    full_step = hloss.max_step(direction, fvp(direction), hp.kl_threshold)
    fraction, metrics = hloss.line_search(
        lambda theta: common.data_mean((surrogate(theta), mean_kl(theta)), axis),
        theta0,
        full_step,
        surrogate0,
        jnp.dot(grad, full_step),
        kl_threshold=hp.kl_threshold,
        accept_ratio=hp.accept_ratio,
        backtrack_coeff=hp.backtrack_coeff,
        num_steps=parts.config.line_search_steps,
    )
    metrics["step_fraction"] = fraction
    return unravel(theta0 + fraction * full_step), o_i, metrics


def sequential_actor_update(parts: HAPPOParts, state: HAPPOState, batch, carry0, hp, keys):
    """Every agent's `actor_step` in the order of `agent_order`, one `lax.scan` over it.

    Agent `i_m` sees `factor [T, E]`, the product of the earlier agents' new / old ratios of
    their recorded actions (after their updates, constant). Returns `(actor params, actor
    optimiser state, metrics averaged over the agents)`.
    """
    ppo = parts.ppo
    key_order, epoch_keys = keys
    if ppo.axis_name is not None:  # every shard must update the agents in the same order
        key_order = jax.lax.all_gather(key_order, ppo.axis_name)[0]
    order = agent_order(key_order, ppo.num_agents, ppo.config.fixed_order)

    def body(carry, i):
        params, opt_state, factor = carry
        p_i, o_i = slice_agent(ppo, params, i), slice_agent(ppo, opt_state, i)
        agent_batch = {**batch, "factor": factor}
        p_i, o_i, metrics = parts.actor_step(ppo, p_i, o_i, i, agent_batch, carry0, hp, epoch_keys)
        new_log_prob = agent_log_prob(ppo, p_i, i, batch, carry0.actor[:, i])
        ratio = jnp.exp(new_log_prob - batch["old_log_prob"][:, :, i])
        factor = factor * jax.lax.stop_gradient(ratio)
        params = write_agent(ppo, params, i, p_i)
        opt_state = write_agent(ppo, opt_state, i, o_i)
        return (params, opt_state, factor), metrics

    T, E = batch["resets"].shape
    carry = (state.actor_params, state.actor_opt_state, jnp.ones((T, E), jnp.float32))
    (params, opt_state, factor), metrics = jax.lax.scan(body, carry, order)
    metrics = jax.tree.map(jnp.mean, metrics)
    metrics["factor_mean"] = jnp.mean(factor)  # the whole joint ratio of the update
    return params, opt_state, metrics


def critic_loss(parts: PPOParts, hp: HAPPOHParams, params: Any, mb: dict, mb_carry: PPOCarry):
    """`vf_coef` times the (optionally clipped) value loss of the shared critic on a minibatch."""
    _, v = ppo_agent.apply_critic(parts, params, mb_carry.critic, mb["x_critic"], mb["resets"])
    clip = hp.value_clip_eps if parts.config.clip_value_loss else None
    v_loss = losses.value_loss(v[..., 0], mb["old_values"], mb["targets"], clip)
    return hp.vf_coef * v_loss, {"value_loss": v_loss}


# -------------------------------------------------------------------------------- init / update


def init(parts: HAPPOParts, key: Array, hparams: HAPPOHParams) -> HAPPOState:
    """A fresh `HAPPOState`: per-agent actors (with the head's parameters), one critic."""
    ppo = parts.ppo
    c0 = jnp.zeros((1, ppo.carry_size))
    r0 = jnp.zeros((1, 1), bool)
    key_actor, key_critic = jax.random.split(key)

    def init_actor(k: Array) -> Any:
        actor = ppo.actor.init(k, c0, jnp.zeros((1, 1, ppo.actor_in)), r0)
        return heads.pack_actor_params(actor, ppo.head.init_params())

    actor = common.init_per_agent(init_actor, key_actor, ppo.num_agents, ppo.independent)
    critic = ppo.critic.init(key_critic, c0, jnp.zeros((1, 1, ppo.critic_in)), r0)
    tx = ppo_agent.optimizer(hparams)
    if ppo.config.actor_update == "trpo":  # no optimiser: a natural-gradient step
        actor_opt = ()
    elif ppo.independent:
        actor_opt = jax.vmap(tx.init)(actor)
    else:
        actor_opt = tx.init(actor)
    return HAPPOState(
        actor_params=actor,
        critic_params=critic,
        actor_opt_state=actor_opt,
        critic_opt_state=tx.init(critic),
        value_norm=losses.running_mean_std_init(),
        num_updates=jnp.int32(0),
    )


def update(
    parts: HAPPOParts,
    state: HAPPOState,
    traj: Trajectory,
    hparams: HAPPOHParams,
    key: Array,
    axis_name: str | None = None,
):
    """The agents' sequential actor update, then `num_epochs` minibatched critic passes.

    The minibatch shuffles are MAPPO's (`jax.random.split(key, num_epochs)`, the same for
    every agent and the critic), so with one agent this is MAPPO's update (with separate
    gradient-norm clips for actor and critic). `axis_name`: data-parallel devices; gradients,
    Fisher-vector products, line-search values and batch statistics are averaged over it and
    every device updates the agents in the same order.
    """
    ppo = parts.ppo._replace(axis_name=axis_name)
    parts = parts._replace(ppo=ppo)
    hp = hparams
    advantages, returns, targets, old_values, value_norm = ppo_agent.advantages_and_targets(
        ppo, state, traj, hp
    )
    batch = ppo_agent.rollout_batch(ppo, traj, advantages, targets, old_values)
    epoch_keys = jax.random.split(key, ppo.config.num_epochs)
    key_order = jax.random.fold_in(key, ppo.num_agents)
    actor_batch = {k: batch[k] for k in ACTOR_KEYS}
    actor_params, actor_opt, metrics = sequential_actor_update(
        parts, state, actor_batch, traj.initial_carry, hp, (key_order, epoch_keys)
    )
    (critic_params, critic_opt), critic_metrics = ppo_agent.sgd_epochs(
        ppo,
        functools.partial(critic_loss, ppo, hp),
        ppo_agent.optimizer(hp),
        (state.critic_params, state.critic_opt_state),
        {k: batch[k] for k in ("x_critic", "resets", "old_values", "targets")},
        traj.initial_carry,
        epoch_keys,
    )
    metrics["value_loss"] = critic_metrics["value_loss"]
    metrics["critic_grad_norm"] = critic_metrics["grad_norm"]
    metrics["value_mean"] = jnp.mean(returns)
    new_state = HAPPOState(
        actor_params=actor_params,
        critic_params=critic_params,
        actor_opt_state=actor_opt,
        critic_opt_state=critic_opt,
        value_norm=value_norm,
        num_updates=state.num_updates + 1,
    )
    return new_state, metrics


# -------------------------------------------------------------------------------- factory


def make_happo(config: HAPPOConfig, env: Environment, env_params: EnvParams | None = None) -> Agent:
    """Build a HAPPO (`actor_update="ppo"`) or HATRPO (`"trpo"`) agent for `env`.

    Args:
      config: static structure.
      env: the environment (its spaces and number of agents are read).
      env_params: params used to read the spaces (default: `env.default_params()`).

    Returns:
      An `Agent` acting as MAPPO's (`policy_info = {"log_prob": [E, A], "value": [E, A],
      "critic_carry": [E, A, H]}`); `get_params` gives `AgentParams(policy=actors,
      critic=V(s))`.

    Raises:
      ValueError: an action space other than Discrete or Box (named with the algorithm).
    """
    env_params = env.default_params() if env_params is None else env_params
    A = env.num_agents
    act_space = env.action_space(env_params)
    if not isinstance(act_space, spaces.Discrete | spaces.Box):
        raise ValueError(
            f"{config.algorithm} supports Discrete and Box action spaces, got {act_space}"
        )
    obs_space = env.observation_space(env_params)
    state_space = env.global_state_space(env_params)
    head = heads.head_for_space(act_space, config.tanh_squash)
    actor_in = obs_space.flat_dim + (A if config.parameter_mode == "shared_id" else 0)
    networks = default_networks(config, obs_space, state_space, head.num_outputs)
    actor, critic = sequence_nets(networks, config)
    check_output(actor, actor_in, head.num_outputs, "actor", f"the policy head for {act_space}")
    ppo = PPOParts(
        config, A, actor, critic, head, heads.IndependentPolicy(head), len(obs_space.shape),
        len(state_space.shape), actor_in, state_space.flat_dim, shared_critic=True,
    )  # fmt: skip
    step = hatrpo_actor_step if config.actor_update == "trpo" else happo_actor_step
    parts = HAPPOParts(ppo, step)
    return Agent(
        init=functools.partial(init, parts),
        initial_carry=functools.partial(ppo_agent.initial_carry, ppo),
        act=functools.partial(ppo_agent.act, ppo),
        update=functools.partial(update, parts),
        default_hparams=HAPPOHParams,
        get_params=ppo_agent.get_params,
        check_batch=functools.partial(ppo_agent.check_batch, config),
        config=config,
        rebuild=lambda c: make_happo(c, env, env_params),
    )


def happo(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """HAPPO: sequential clipped updates of heterogeneous actors, centralised V(s)."""
    return make_happo(HAPPOConfig(actor_update="ppo", **config), env, env_params)


def hatrpo(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """HATRPO: sequential KL-constrained natural-gradient updates, centralised V(s)."""
    return make_happo(HAPPOConfig(actor_update="trpo", **config), env, env_params)


__all__ = [
    "ACTOR_KEYS",
    "HAPPOParts",
    "agent_dist",
    "agent_log_prob",
    "critic_loss",
    "happo",
    "happo_actor_step",
    "hatrpo",
    "hatrpo_actor_step",
    "init",
    "make_happo",
    "sequential_actor_update",
    "slice_agent",
    "update",
    "write_agent",
]
