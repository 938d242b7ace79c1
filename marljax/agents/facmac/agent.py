"""The FACMAC agent: its critic and actor steps, carried with a `FACMACModel` in a `MADDPGParts`
record and run by MADDPG's `init` / `act` / `update` (`marljax.agents.maddpg.agent`): MADDPG's
deterministic actors, replay and update loop with a mixed critic and the centralised policy
gradient.

One gradient step: the utilities and the mixer regress `Q_tot` of the stored joint action on
`r + gamma (1 - terminated) Q'_tot(s', mu'(o'))` (the value-based learner's `mixed_td_loss`,
team reward = the mean of the agents' rewards); then all actors ascend `Q_tot` of the joint
action of the CURRENT policies (`loss.centralised_actor_loss`); then the targets move (Polyak).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import optax

from marljax.agents import common
from marljax.agents.base import Agent
from marljax.agents.facmac import loss as floss
from marljax.agents.facmac.config import FACMACConfig, FACMACHParams
from marljax.agents.facmac.networks import FACMACModel, make_facmac_model
from marljax.agents.maddpg import agent as ddpg
from marljax.agents.maddpg.config import MADDPGState
from marljax.core.types import Environment, EnvParams
from marljax.nn.qvalues import mixed_td_loss
from marljax.nn.replay import make_replay

Array = jax.Array


def critic_step(model: FACMACModel, state: MADDPGState, batch, hp: FACMACHParams, axis_name):
    """One step of the utilities and the mixer on the mixed one-step TD loss."""
    view = model.critic_view(batch["obs"], batch["state"])
    view_next = model.critic_view(batch["next_obs"], batch["next_state"])
    x, x_next = model.inputs(batch["obs"]), model.inputs(batch["next_obs"])
    a_next = jnp.tanh(model.actor_all(state.target_actor_params, x_next))
    target = state.target_critic_params
    v = model.utilities(target["utility"], x_next, a_next)  # [B, A]
    terminated = batch["terminated"][None] > 0.5
    truncated = jnp.zeros_like(terminated)  # one-step targets: truncation bootstraps anyway

    def loss_fn(params):
        q = model.utilities(params["utility"], x, batch["actions"])
        return mixed_td_loss(
            q[None],
            v[None],
            batch["reward"][None],
            terminated,
            truncated,
            hp.gamma,
            mix_tm1=lambda u: model.mix(params["mixer"], u, view[None]),
            mix_t=lambda u: model.mix(target["mixer"], u, view_next[None]),
        )

    (loss, m), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.critic_params)
    grads = common.data_mean(grads, axis_name)
    params, opt_state = ddpg.apply_grads(
        False, ddpg.optimizer(hp.critic_lr, hp), grads, state.critic_opt_state, state.critic_params
    )
    metrics = {
        "critic_loss": loss,
        "q_mean": m["q_taken"],
        "target_mean": m["target_mean"],
        "critic_grad_norm": optax.global_norm(grads),
    }
    return state.replace(critic_params=params, critic_opt_state=opt_state), metrics


def actor_step(model: FACMACModel, state: MADDPGState, batch, hp: FACMACHParams, axis_name):
    """One step of all actors on `loss.centralised_actor_loss` through the (just updated) mixer."""
    view = model.critic_view(batch["obs"], batch["state"])
    x = model.inputs(batch["obs"])

    def loss_fn(params):
        a = jnp.tanh(model.actor_all(params, x))  # [B, A, D]
        return floss.centralised_actor_loss(
            model.q_tot(state.critic_params, view, x, a), a, hp.actor_reg
        )

    loss, grads = jax.value_and_grad(loss_fn)(state.actor_params)
    grads = common.data_mean(grads, axis_name)
    params, opt_state = ddpg.apply_grads(
        model.independent,
        ddpg.optimizer(hp.actor_lr, hp),
        grads,
        state.actor_opt_state,
        state.actor_params,
    )
    metrics = {"actor_loss": loss, "actor_grad_norm": optax.global_norm(grads)}
    return state.replace(actor_params=params, actor_opt_state=opt_state), metrics


def make_facmac(
    config: FACMACConfig,
    env: Environment,
    env_params: EnvParams | None = None,
) -> Agent:
    """Build a FACMAC agent for `env` (continuous 1-D box actions; cooperative: one team reward).

    Args:
      config: static structure (a `MADDPGConfig` with the mixer's fields).
      env: the environment.
      env_params: params used to read the spaces (default: `env.default_params()`).

    Returns:
      An `Agent` of MADDPG's functions (`marljax.agents.maddpg.agent`) on FACMAC's model and
      steps, acting as MADDPG's (noisy deterministic actors; noiseless with `greedy=True`);
      `get_params` gives `AgentParams(policy=actors, critic={"utility", "mixer"})`;
      `default_hparams` is `FACMACHParams`.

    Raises:
      ValueError: an action space that is not a bounded 1-D `Box`.
    """
    env_params = env.default_params() if env_params is None else env_params
    model = make_facmac_model(config, env, env_params)
    replay = make_replay(config.buffer_size, config.batch_size)
    parts = ddpg.MADDPGParts(model, replay, critic_step=critic_step, actor_step=actor_step)
    return Agent(
        init=functools.partial(ddpg.init, parts),
        initial_carry=lambda num_envs: (),  # feed-forward actors
        act=functools.partial(ddpg.act, parts),
        update=functools.partial(ddpg.update, parts),
        default_hparams=FACMACHParams,
        get_params=ddpg.get_params,
        config=config,
        rebuild=lambda c: make_facmac(c, env, env_params),
    )


def facmac(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """FACMAC with `FACMACConfig(**config)`."""
    return make_facmac(FACMACConfig(**config), env, env_params)


__all__ = ["actor_step", "critic_step", "facmac", "make_facmac"]
