"""The COMA factory: wires the actor, the counterfactual critic and `loss` into an `Agent`.

One update on an on-policy rollout of `T` steps of `E` environments:

1. critic targets: TD(lambda) (or n-step) returns of the team reward, bootstrapping on the
   target critic's value of the next joint action (the action taken at the next step inside the
   rollout and the episode, else one sampled from the current actors at the next observation,
   e.g. the final observation at a time limit);
2. `critic_steps` gradient steps of `loss.coma_critic_loss` on the rollout (the target critic
   is copied every `target_update_interval` of them);
3. one actor step of `loss.coma_actor_loss` with the counterfactual advantages of the updated
   critic (`loss.counterfactual_advantage`).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from marljax.agents import common, offpolicy
from marljax.agents.base import Agent, AgentParams, Observation, Trajectory
from marljax.agents.coma.config import COMAConfig, COMAHParams, COMAState
from marljax.agents.coma.loss import coma_actor_loss, coma_critic_loss, counterfactual_advantage
from marljax.agents.coma.networks import COMANetworks, critic_inputs, default_networks
from marljax.core import spaces
from marljax.core.types import Environment, EnvParams
from marljax.nn import distributions
from marljax.nn.networks import SequenceNet
from marljax.nn.qvalues import td_targets, team_reward

Array = jax.Array


class COMAParts(NamedTuple):
    """The static structure a COMA agent's functions close over (built by `make_coma`)."""

    config: COMAConfig
    num_agents: int
    num_actions: int
    actor: SequenceNet
    critic: Any  # flax module [..., C] -> [..., N]
    obs_rank: int
    state_rank: int
    actor_in: int
    critic_in: int


def _take(x: Array, actions: Array) -> Array:
    return jnp.take_along_axis(x, actions[..., None], axis=-1)[..., 0]


def policy(parts: COMAParts, params: Any, obs: Array, mask: Array):
    """Each agent's masked categorical policy: `obs [..., A, *obs_shape]`, `mask [..., A, N]`."""
    A, config = parts.num_agents, parts.config
    x = common.agent_inputs(obs, parts.obs_rank, A, config.parameter_mode == "shared_id")
    batch = x.shape[:-2]
    xs = x.reshape(1, -1, A, x.shape[-1])
    B = xs.shape[1]
    _, logits = common.apply_over_agents(
        parts.actor.apply,
        params,
        jnp.zeros((B, A, 1)),
        xs,
        jnp.zeros((1, B), bool),
        config.parameter_mode == "independent",
    )
    return distributions.masked_categorical(logits.reshape(*batch, A, -1), mask)


def critic_q(parts: COMAParts, params: Any, state: Array, obs: Array, actions: Array) -> Array:
    """`Q(s, (u_-a, u')) [..., A, N]` for every agent `a` and action `u'`."""
    A = parts.num_agents
    s = common.agent_inputs(state, parts.state_rank, 1, False)  # [..., S]
    o = common.agent_inputs(obs, parts.obs_rank, A, False)  # [..., A, O]
    return parts.critic.apply(params, critic_inputs(s, o, actions, parts.num_actions))


def optimizers(config: COMAConfig, hp: COMAHParams):
    """`(actor, critic)` optimisers: clipping, `config.optimizer`, their learning rates."""
    kw = dict(kind=config.optimizer, eps=hp.opt_eps, rms_decay=hp.rmsprop_decay)
    return (
        common.make_optimizer(hp.lr, hp.max_grad_norm, **kw),
        common.make_optimizer(hp.critic_lr, hp.max_grad_norm, **kw),
    )


def init(parts: COMAParts, key: Array, hparams: COMAHParams) -> COMAState:
    """A fresh `COMAState` (the target critic starts as a copy of the critic)."""
    key_actor, key_critic = jax.random.split(key)

    def init_actor(k: Array) -> Any:
        zeros_in = jnp.zeros((1, 1, parts.actor_in))
        return parts.actor.init(k, jnp.zeros((1, 1)), zeros_in, jnp.zeros((1, 1), bool))

    independent = parts.config.parameter_mode == "independent"
    actor = common.init_per_agent(init_actor, key_actor, parts.num_agents, independent)
    critic = parts.critic.init(key_critic, jnp.zeros((1, parts.critic_in)))
    tx_actor, tx_critic = optimizers(parts.config, hparams)
    return COMAState(
        actor_params=actor,
        critic_params=critic,
        target_critic_params=critic,
        actor_opt_state=tx_actor.init(actor),
        critic_opt_state=tx_critic.init(critic),
        grad_steps=jnp.int32(0),
        num_updates=jnp.int32(0),
    )


def act(parts, state: COMAState, carry, observation: Observation, key, hparams, greedy=False):
    """Sample each agent's action (its argmax with `greedy=True`); `info = {"log_prob": [E, A]}`."""
    del hparams
    dist = policy(parts, state.actor_params, observation.obs, observation.action_mask)
    if greedy:
        actions = jnp.argmax(dist.logits, axis=-1)
    else:
        actions = dist.sample(seed=key)
    actions = actions.astype(jnp.int32)
    return actions, carry, {"log_prob": dist.log_prob(actions)}


def critic_targets(
    parts: COMAParts, state: COMAState, traj: Trajectory, hp: COMAHParams, key: Array
) -> Array:
    """`[T, E, A]` return targets of the critic (see the module docstring, step 1)."""
    T = traj.reward.shape[0]
    sampled = policy(parts, state.actor_params, traj.next_obs, traj.next_action_mask).sample(
        seed=key
    )  # [T, E, A]
    done = jnp.logical_or(traj.terminated, traj.truncated)  # [T, E]
    inside = jnp.logical_and((jnp.arange(T) < T - 1)[:, None], ~done)
    shifted = jnp.concatenate([traj.actions[1:], sampled[-1:]], axis=0)
    next_actions = jnp.where(inside[..., None], shifted, sampled).astype(jnp.int32)
    q_next = critic_q(
        parts, state.target_critic_params, traj.next_global_state, traj.next_obs, next_actions
    )
    v_next = jax.lax.stop_gradient(_take(q_next, next_actions))  # [T, E, A]
    per_agent = lambda x: jnp.broadcast_to(x[..., None], v_next.shape)  # noqa: E731
    r = team_reward(traj.reward * hp.reward_scale, "mean")
    discount = hp.gamma * (1.0 - traj.terminated.astype(jnp.float32))
    return td_targets(
        per_agent(r),
        per_agent(discount),
        v_next,
        per_agent(done),
        target=parts.config.target,
        td_lambda=hp.td_lambda,
        n_steps=parts.config.n_steps,
    )


def update(
    parts: COMAParts,
    state: COMAState,
    traj: Trajectory,
    hparams: COMAHParams,
    key: Array,
    axis_name: str | None = None,
):
    """Critic steps on TD(lambda) targets, then one counterfactual policy-gradient actor step.

    `axis_name`: a mapped axis whose members hold equal shares of the rollout (data-parallel
    devices); the critic's and the actor's gradients are averaged over it.
    """
    hp, config = hparams, parts.config
    obs, actions = traj.observation, traj.actions
    targets = critic_targets(parts, state, traj, hp, key)
    tx_actor, tx_critic = optimizers(config, hp)

    def critic_loss(params):
        q = critic_q(parts, params, obs.global_state, obs.obs, actions)
        return coma_critic_loss(_take(q, actions), targets)

    def critic_step(carry, _):
        params, target, opt_state, steps = carry
        loss, grads = jax.value_and_grad(critic_loss)(params)
        grads = common.data_mean(grads, axis_name)
        updates, opt_state = tx_critic.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        steps = steps + 1
        target = offpolicy.target_update(
            params, target, steps, period=config.target_update_interval
        )
        return (params, target, opt_state, steps), loss

    carry = (state.critic_params, state.target_critic_params, state.critic_opt_state)
    (critic, target, critic_opt, steps), critic_losses = jax.lax.scan(
        critic_step, (*carry, state.grad_steps), None, length=config.critic_steps
    )
    q = jax.lax.stop_gradient(critic_q(parts, critic, obs.global_state, obs.obs, actions))

    def actor_loss(params):
        dist = policy(parts, params, obs.obs, obs.action_mask)
        advantages = counterfactual_advantage(q, dist.probs, actions)
        log_prob = dist.log_prob(actions)
        return coma_actor_loss(log_prob, advantages, dist.entropy(), ent_coef=hp.ent_coef)

    (_, metrics), grads = jax.value_and_grad(actor_loss, has_aux=True)(state.actor_params)
    grads = common.data_mean(grads, axis_name)
    updates, actor_opt = tx_actor.update(grads, state.actor_opt_state, state.actor_params)
    metrics.update(
        critic_loss=jnp.mean(critic_losses),
        q_taken=jnp.mean(_take(q, actions)),
        target_mean=jnp.mean(targets),
        grad_norm=optax.global_norm(grads),
    )
    new_state = COMAState(
        actor_params=optax.apply_updates(state.actor_params, updates),
        critic_params=critic,
        target_critic_params=target,
        actor_opt_state=actor_opt,
        critic_opt_state=critic_opt,
        grad_steps=steps,
        num_updates=state.num_updates + 1,
    )
    return new_state, metrics


def make_coma(
    config: COMAConfig,
    env: Environment,
    env_params: EnvParams | None = None,
    networks: COMANetworks | None = None,
) -> Agent:
    """Build a COMA agent for `env` (discrete actions, cooperative: trained on the team reward).

    Args:
      config: static structure.
      env: the environment (only its spaces and number of agents are read).
      env_params: params used to read the spaces (default: `env.default_params()`).
      networks: the actor (`[..., D] -> [..., N]` logits on the agent's flat observation, plus
        its one-hot id in the `shared_id` mode) and the critic (`[..., C] -> [..., N]` on
        `networks.critic_inputs`); default `default_networks` (feed-forward MLPs).

    Returns:
      An `Agent` with feed-forward actors (`initial_carry` is `()`); `get_params` gives
      `AgentParams(policy=actor params, critic=critic params)`.

    Raises:
      ValueError: a non-discrete action space.
    """
    env_params = env.default_params() if env_params is None else env_params
    act_space = env.action_space(env_params)
    if not isinstance(act_space, spaces.Discrete):
        raise ValueError(f"COMA needs discrete actions; {env.name} has {act_space}")
    A, N = env.num_agents, act_space.n
    obs_space = env.observation_space(env_params)
    state_space = env.global_state_space(env_params)
    networks = networks or default_networks(config, N)
    add_id = A if config.parameter_mode == "shared_id" else 0
    parts = COMAParts(
        config, A, N, SequenceNet(networks.actor, None, False, 1), networks.critic,
        len(obs_space.shape), len(state_space.shape), obs_space.flat_dim + add_id,
        state_space.flat_dim + obs_space.flat_dim + A * N + A,
    )  # fmt: skip
    return Agent(
        init=functools.partial(init, parts),
        initial_carry=lambda num_envs: (),
        act=functools.partial(act, parts),
        update=functools.partial(update, parts),
        default_hparams=COMAHParams,
        get_params=lambda s: AgentParams(policy=s.actor_params, critic=s.critic_params),
    )


def coma(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """COMA with `COMAConfig(**config)`."""
    return make_coma(COMAConfig(**config), env, env_params)


__all__ = ["COMAParts", "coma", "critic_q", "make_coma", "policy", "update"]
