"""The MADDPG agent: its update steps, and `init` / `act` / `update` as pure functions of a
`MADDPGParts` record (the model, the replay buffer and the two steps), which `make_maddpg` wires
into an `Agent` (and `marljax.agents.facmac.agent.make_facmac`, with FACMAC's model and steps).

One gradient step: every agent's critic regresses on `loss.td_target` with the target actors'
next actions (`critic_step`); then every agent's actor ascends its own critic with its own slot
of the stored joint action replaced by its actor's action (`actor_step`); then the target
actors and critics move by Polyak averaging.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from marljax.agents import common, offpolicy
from marljax.agents.base import Agent, AgentParams, Observation, Trajectory
from marljax.agents.maddpg import loss as mloss
from marljax.agents.maddpg.config import MADDPGConfig, MADDPGHParams, MADDPGState
from marljax.agents.maddpg.networks import MADDPGModel, make_maddpg_model
from marljax.core.types import Environment, EnvParams
from marljax.nn.replay import Replay, make_replay

Array = jax.Array


def optimizer(lr: Array, hp: MADDPGHParams) -> optax.GradientTransformation:
    """The actors' and critics' optimiser: global-norm clipping, Adam (`eps = adam_eps`), `lr`."""
    return common.make_optimizer(lr, hp.max_grad_norm, kind="adam", eps=hp.adam_eps)


def noise_std(hp: MADDPGHParams, env_steps: Array) -> Array:
    """`[]` the exploration noise std after `env_steps` steps (linear from start to finish)."""
    frac = jnp.clip(env_steps / jnp.maximum(hp.noise_anneal_steps, 1.0), 0.0, 1.0)
    return hp.noise_start + frac * (hp.noise_finish - hp.noise_start)


def to_items(model: MADDPGModel, traj: Trajectory, hp: MADDPGHParams) -> dict[str, Any]:
    """`[T, E, ...]` rollout -> `T * E` one-step transitions (actions in the unit box)."""
    T, E = traj.reward.shape[:2]
    steps = {
        "obs": traj.observation.obs,
        "state": traj.observation.global_state,
        "actions": model.to_unit(traj.actions),
        "reward": traj.reward * hp.reward_scale,
        "terminated": traj.terminated.astype(jnp.float32),
        "next_obs": traj.next_obs,
        "next_state": traj.next_global_state,
    }
    return jax.tree.map(lambda x: x.reshape(T * E, *x.shape[2:]), steps)


def apply_grads(per_agent: bool, tx, grads, opt_state, params):
    """One optimiser step; per agent (own clipping) when the parameters have an agent axis."""
    if per_agent:
        updates, opt_state = jax.vmap(tx.update)(grads, opt_state, params)
    else:
        updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


def _reduce(model: MADDPGModel, per_agent: Array) -> Array:
    """Sum of the agents' losses (independent: each agent's own gradient) or their mean."""
    return per_agent.sum() if model.independent else per_agent.mean()


def critic_step(model: MADDPGModel, state: MADDPGState, batch, hp: MADDPGHParams, axis_name):
    """One step of every agent's critic on `loss.critic_loss` to `loss.td_target`."""
    view = model.critic_view(batch["obs"], batch["state"])
    view_next = model.critic_view(batch["next_obs"], batch["next_state"])
    u_next = model.actor_all(state.target_actor_params, model.inputs(batch["next_obs"]))
    q_next = model.critic_all(state.target_critic_params, view_next, jnp.tanh(u_next))
    discount = hp.gamma * (1.0 - batch["terminated"])
    target = mloss.td_target(batch["reward"], discount, q_next)

    def loss_fn(params):
        q = model.critic_all(params, view, batch["actions"])  # [B, A]
        per_agent = mloss.critic_loss(q, target)
        return _reduce(model, per_agent), (per_agent, q)

    (_, (per_agent, q)), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.critic_params)
    grads = common.data_mean(grads, axis_name)
    params, opt_state = apply_grads(
        model.independent,
        optimizer(hp.critic_lr, hp),
        grads,
        state.critic_opt_state,
        state.critic_params,
    )
    metrics = {
        "critic_loss": per_agent.mean(),
        "q_mean": q.mean(),
        "target_mean": target.mean(),
        "critic_grad_norm": optax.global_norm(grads),
    }
    return state.replace(critic_params=params, critic_opt_state=opt_state), metrics


def actor_step(model: MADDPGModel, state: MADDPGState, batch, hp: MADDPGHParams, axis_name):
    """One step of every agent's actor on `loss.actor_loss`: agent `i`'s critic (just updated)
    at the stored joint action with slot `i` set to `tanh(u_i)` of its actor."""
    A = model.num_agents
    view = model.critic_view(batch["obs"], batch["state"])
    x = model.inputs(batch["obs"])
    stored = batch["actions"]  # [B, A, D]
    own = jnp.eye(A, dtype=bool)[:, None, :, None]  # [A(critic), 1, A(slot), 1]

    def loss_fn(params):
        u = model.actor_all(params, x)  # [B, A, D]
        joints = jnp.where(own, jnp.tanh(u)[None], stored[None])  # [A, B, A, D]
        q = model.critic_per_agent(state.critic_params, view, joints)  # [B, A]
        per_agent = mloss.actor_loss(q, u, hp.actor_reg)
        return _reduce(model, per_agent), per_agent

    (_, per_agent), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.actor_params)
    grads = common.data_mean(grads, axis_name)
    params, opt_state = apply_grads(
        model.independent,
        optimizer(hp.actor_lr, hp),
        grads,
        state.actor_opt_state,
        state.actor_params,
    )
    metrics = {"actor_loss": per_agent.mean(), "actor_grad_norm": optax.global_norm(grads)}
    return state.replace(actor_params=params, actor_opt_state=opt_state), metrics


#: the metrics of one gradient step (zeros before learning starts)
METRICS = ("critic_loss", "q_mean", "target_mean", "critic_grad_norm", "actor_loss",
           "actor_grad_norm")  # fmt: skip


class MADDPGParts(NamedTuple):
    """The static structure a deterministic-actor agent's functions close over: MADDPG's (built by
    `make_maddpg`), or FACMAC's (its model and its two steps, `marljax.agents.facmac.agent`)."""

    model: MADDPGModel
    replay: Replay
    #: `(model, state, batch, hparams, axis_name) -> (state, metrics)`, the critics' step and
    #: then the actors' (`axis_name`: the data-parallel axis gradients are averaged over, or None)
    critic_step: Callable = critic_step
    actor_step: Callable = actor_step


def gradient_step(parts: MADDPGParts, hp: MADDPGHParams, axis_name, state: MADDPGState, batch):
    """Critic step, actor step, Polyak update of the target actors and critics."""
    state, metrics = parts.critic_step(parts.model, state, batch, hp, axis_name)
    state, actor_metrics = parts.actor_step(parts.model, state, batch, hp, axis_name)
    metrics.update(actor_metrics)
    move = lambda online, target: offpolicy.target_update(  # noqa: E731
        online, target, state.grad_steps, tau=hp.tau
    )
    state = state.replace(
        target_actor_params=move(state.actor_params, state.target_actor_params),
        target_critic_params=move(state.critic_params, state.target_critic_params),
        grad_steps=state.grad_steps + 1,
    )
    return state, metrics


def init(parts: MADDPGParts, key: Array, hparams: MADDPGHParams) -> MADDPGState:
    """A fresh `MADDPGState`: actors, critics (`model.init_critics`), their targets (copies),
    optimisers, buffer."""
    model = parts.model
    nets, A = model.nets, model.num_agents
    key_actor, key_critic = jax.random.split(key)
    init_actor = lambda k: nets.actor.init(k, jnp.zeros((1, nets.actor_in_dim)))  # noqa: E731
    actor_params = common.init_per_agent(init_actor, key_actor, A, model.independent)
    critic_params = model.init_critics(key_critic)

    def init_opt(lr, params, per_agent):
        tx = optimizer(lr, hparams)
        return jax.vmap(tx.init)(params) if per_agent else tx.init(params)

    return MADDPGState(
        actor_params=actor_params,
        critic_params=critic_params,
        target_actor_params=actor_params,
        target_critic_params=critic_params,
        actor_opt_state=init_opt(hparams.actor_lr, actor_params, model.independent),
        critic_opt_state=init_opt(hparams.critic_lr, critic_params, model.critics_per_agent),
        replay=parts.replay.init(model.example_item()),
        env_steps=jnp.int32(0),
        grad_steps=jnp.int32(0),
        num_updates=jnp.int32(0),
    )


def act(
    parts: MADDPGParts,
    state: MADDPGState,
    carry,
    observation: Observation,
    key,
    hparams: MADDPGHParams,
    greedy=False,
):
    """`tanh(u)` of the actors plus clipped Gaussian noise (`noise_std`; uniformly random actions
    during warm-up), rescaled to the action box, or the noiseless `tanh(u)` with `greedy=True`;
    `info = {"mode": [E, A, D]}`, the noiseless actions in env units."""
    model = parts.model
    u = model.actor_all(state.actor_params, model.inputs(observation.obs))  # [E, A, D]
    mode = model.to_env(jnp.tanh(u))
    if greedy:
        return mode, carry, {"mode": mode}
    key_noise, key_random = jax.random.split(key)
    std = noise_std(hparams, state.env_steps)
    a = jnp.clip(jnp.tanh(u) + std * jax.random.normal(key_noise, u.shape), -1.0, 1.0)
    rand = jax.random.uniform(key_random, u.shape, minval=-1.0, maxval=1.0)
    a = jnp.where(state.env_steps < model.config.warmup_steps, rand, a)
    return model.to_env(a), carry, {"mode": mode}


def update(
    parts: MADDPGParts,
    state: MADDPGState,
    traj: Trajectory,
    hparams: MADDPGHParams,
    key: Array,
    axis_name: str | None = None,
):
    """Store the rollout, then `utd_ratio * T` critic and actor steps.

    `axis_name`: data-parallel devices, each with a replay buffer of its own environments and
    its share of every batch; gradients are averaged over the axis and the environment-step
    counter (warm-up, noise schedule) counts every device's steps.
    """
    model, replay, config = parts.model, parts.replay, parts.model.config
    T, E = traj.reward.shape[:2]
    replay_state = offpolicy.store(replay, state.replay, to_items(model, traj, hparams))
    env_steps = state.env_steps + T * E * common.data_shards(axis_name)
    learner, metrics = offpolicy.learn_from_replay(
        replay,
        replay_state,
        state.replace(replay=None, env_steps=env_steps),  # the buffer is closed over
        key,
        env_steps=env_steps,
        learning_starts=config.warmup_steps,
        num_steps=max(1, int(round(config.utd_ratio * T))),
        gradient_step=lambda s, b, k: gradient_step(parts, hparams, axis_name, s, b),
        zero_metrics=lambda: {k: jnp.float32(0.0) for k in METRICS},
    )
    metrics["noise_std"] = noise_std(hparams, env_steps)
    return learner.replace(replay=replay_state, num_updates=state.num_updates + 1), metrics


def get_params(state: MADDPGState) -> AgentParams:
    """`AgentParams(policy=actors, critic=critics)`."""
    return AgentParams(policy=state.actor_params, critic=state.critic_params)


def make_maddpg(
    config: MADDPGConfig,
    env: Environment,
    env_params: EnvParams | None = None,
) -> Agent:
    """Build a MADDPG agent for `env` (continuous 1-D box actions; any rewards, one per agent).

    Args:
      config: static structure.
      env: the environment (its spaces and number of agents are read).
      env_params: params used to read the spaces (default: `env.default_params()`).

    Returns:
      An `Agent`. `act` plays `tanh(u)` of the actors plus clipped Gaussian noise (uniformly at
      random during warm-up), rescaled to the action box, or the noiseless `tanh(u)` with
      `greedy=True`; its `policy_info` is `{"mode": [E, A, D]}`, the noiseless actions in env
      units. `get_params` gives `AgentParams(policy=actors, critic=critics)`.

    Raises:
      ValueError: an action space that is not a bounded 1-D `Box`.
    """
    env_params = env.default_params() if env_params is None else env_params
    model = make_maddpg_model(config, env, env_params)
    parts = MADDPGParts(model, make_replay(config.buffer_size, config.batch_size))
    return Agent(
        init=functools.partial(init, parts),
        initial_carry=lambda num_envs: (),  # feed-forward actors
        act=functools.partial(act, parts),
        update=functools.partial(update, parts),
        default_hparams=MADDPGHParams,
        get_params=get_params,
        config=config,
        rebuild=lambda c: make_maddpg(c, env, env_params),
    )


def maddpg(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """MADDPG with `MADDPGConfig(**config)`."""
    return make_maddpg(MADDPGConfig(**config), env, env_params)


__all__ = [
    "METRICS",
    "MADDPGParts",
    "act",
    "actor_step",
    "apply_grads",
    "critic_step",
    "get_params",
    "gradient_step",
    "init",
    "make_maddpg",
    "maddpg",
    "noise_std",
    "optimizer",
    "to_items",
    "update",
]
