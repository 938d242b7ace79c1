"""The PQN-VDN factory: epsilon-greedy acting on a layer-normalised Q-network, and on each
rollout Q(lambda) targets of the VDN sum regressed on for `num_epochs` epochs of minibatches.

No replay buffer and no target network (`loss` module docstring). The Q-network is the
value-based learner's `QNetwork` (feed-forward, `layer_norm=True`) and acting its
`epsilon_greedy`.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from marljax.agents import common
from marljax.agents.base import Agent, AgentParams, Observation, Trajectory
from marljax.agents.pqn.config import PQNConfig, PQNHParams, PQNState
from marljax.agents.pqn.loss import pqn_vdn_loss, vdn_lambda_targets
from marljax.core import spaces
from marljax.core.types import Environment, EnvParams
from marljax.nn.networks import QNetwork
from marljax.nn.qvalues import epsilon, epsilon_greedy, team_reward

Array = jax.Array


class PQNParts(NamedTuple):
    """The static structure a PQN-VDN agent's functions close over (built by `make_pqn_vdn`)."""

    config: PQNConfig
    num_agents: int
    net: QNetwork
    obs_rank: int
    in_dim: int


def q_values(parts: PQNParts, params: Any, obs: Array) -> Array:
    """The agents' Q-values `[..., A, N]` of observations `[..., A, *obs_shape]`."""
    A, config = parts.num_agents, parts.config
    x = common.agent_inputs(obs, parts.obs_rank, A, config.parameter_mode == "shared_id")
    batch = x.shape[:-2]
    xs = x.reshape(1, -1, A, x.shape[-1])
    B = xs.shape[1]
    _, (q, _) = common.apply_over_agents(
        parts.net.apply,
        params,
        jnp.zeros((B, A, 1)),
        xs,
        jnp.zeros((1, B), bool),
        config.parameter_mode == "independent",
    )
    return q.reshape(*batch, A, -1)


def optimizer(config: PQNConfig, hp: PQNHParams) -> optax.GradientTransformation:
    """Clipping, `config.optimizer`, learning rate (`common.make_optimizer`)."""
    return common.make_optimizer(
        hp.lr, hp.max_grad_norm, kind=config.optimizer, eps=hp.opt_eps, rms_decay=hp.rmsprop_decay
    )


def init(parts: PQNParts, key: Array, hparams: PQNHParams) -> PQNState:
    """A fresh `PQNState`."""

    def init_one(k: Array) -> Any:
        zeros_in = jnp.zeros((1, 1, parts.in_dim))
        return parts.net.init(k, jnp.zeros((1, 1)), zeros_in, jnp.zeros((1, 1), bool))

    independent = parts.config.parameter_mode == "independent"
    params = common.init_per_agent(init_one, key, parts.num_agents, independent)
    return PQNState(
        params=params,
        opt_state=optimizer(parts.config, hparams).init(params),
        env_steps=jnp.int32(0),
        num_updates=jnp.int32(0),
    )


def act(parts, state: PQNState, carry, observation: Observation, key, hparams, greedy=False):
    """Epsilon-greedy actions (greedy with `greedy=True`); `info = {}`."""
    q = q_values(parts, state.params, observation.obs)
    eps = None if greedy else epsilon(hparams, state.env_steps)
    return epsilon_greedy(key, q, observation.action_mask, eps), carry, {}


def update(
    parts: PQNParts,
    state: PQNState,
    traj: Trajectory,
    hparams: PQNHParams,
    key: Array,
    axis_name: str | None = None,
):
    """Q(lambda) targets of the rollout, then `num_epochs` epochs of minibatch steps.

    `axis_name`: a mapped axis whose members hold equal shares of the rollout (data-parallel
    devices); gradients are averaged over it and the environment-step counter (epsilon) counts
    every member's steps.
    """
    hp, config = hparams, parts.config
    T, E = traj.reward.shape[:2]
    r = team_reward(traj.reward * hp.reward_scale, config.team_reward)
    targets = vdn_lambda_targets(
        r,
        hp.gamma * (1.0 - traj.terminated.astype(jnp.float32)),
        q_values(parts, state.params, traj.next_obs),
        traj.next_action_mask,
        jnp.logical_or(traj.terminated, traj.truncated),
        hp.td_lambda,
    )
    flat = lambda x: x.reshape(T * E, *x.shape[2:])  # noqa: E731
    batch = {
        "obs": flat(traj.observation.obs),
        "actions": flat(traj.actions),
        "targets": flat(targets),
    }
    tx = optimizer(config, hp)

    def loss_fn(params, mb):
        q = q_values(parts, params, mb["obs"])
        q_taken = jnp.take_along_axis(q, mb["actions"][..., None], axis=-1)[..., 0]
        return pqn_vdn_loss(q_taken, mb["targets"])

    def mb_step(carry, mb):
        params, opt_state = carry
        (_, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, mb)
        grads = common.data_mean(grads, axis_name)
        updates, opt_state = tx.update(grads, opt_state, params)
        metrics["grad_norm"] = optax.global_norm(grads)
        return (optax.apply_updates(params, updates), opt_state), metrics

    def epoch(carry, k):
        return jax.lax.scan(
            mb_step, carry, common.shuffled_minibatches(k, batch, config.num_minibatches)
        )

    (params, opt_state), metrics = jax.lax.scan(
        epoch, (state.params, state.opt_state), jax.random.split(key, config.num_epochs)
    )
    metrics = jax.tree.map(jnp.mean, metrics)
    metrics["epsilon"] = epsilon(hp, state.env_steps)
    new_state = PQNState(
        params=params,
        opt_state=opt_state,
        env_steps=state.env_steps + T * E * common.data_shards(axis_name),
        num_updates=state.num_updates + 1,
    )
    return new_state, metrics


def check_batch(config: PQNConfig, num_envs: int, rollout_len: int) -> None:
    """Raise a clear error when the rollout's steps do not split into `num_minibatches`."""
    n = num_envs * rollout_len
    if n % config.num_minibatches:
        raise ValueError(
            f"num_envs * rollout_len = {n} is not divisible by PQNConfig.num_minibatches = "
            f"{config.num_minibatches}"
        )


def make_pqn_vdn(config: PQNConfig, env: Environment, env_params: EnvParams | None = None) -> Agent:
    """Build a PQN-VDN agent for `env` (discrete actions, cooperative: one team reward).

    Args:
      config: static structure.
      env: the environment (only its spaces and number of agents are read).
      env_params: params used to read the spaces (default: `env.default_params()`).

    Returns:
      An `Agent` with a feed-forward Q-network (`initial_carry` is `()`); `get_params` gives
      `AgentParams(policy=Q-network params)`.

    Raises:
      ValueError: a non-discrete action space.
    """
    env_params = env.default_params() if env_params is None else env_params
    act_space = env.action_space(env_params)
    if not isinstance(act_space, spaces.Discrete):
        raise ValueError(f"PQN-VDN needs discrete actions; {env.name} has {act_space}")
    A = env.num_agents
    obs_space = env.observation_space(env_params)
    net = QNetwork(
        tuple(config.hidden_sizes), config.activation, act_space.n, False, 1, config.layer_norm
    )
    add_id = A if config.parameter_mode == "shared_id" else 0
    parts = PQNParts(config, A, net, len(obs_space.shape), obs_space.flat_dim + add_id)
    return Agent(
        init=functools.partial(init, parts),
        initial_carry=lambda num_envs: (),
        act=functools.partial(act, parts),
        update=functools.partial(update, parts),
        default_hparams=PQNHParams,
        get_params=lambda s: AgentParams(policy=s.params),
        check_batch=functools.partial(check_batch, config),
    )


def pqn_vdn(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """PQN-VDN with `PQNConfig(**config)`."""
    return make_pqn_vdn(PQNConfig(**config), env, env_params)


__all__ = ["PQNParts", "make_pqn_vdn", "pqn_vdn", "q_values", "update"]
