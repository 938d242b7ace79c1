"""SHAQ's agent: the value-based learner's agent (`marljax.agents.qlearning.agent`) built with
SHAQ's alpha network in place of a mixer and `loss_fn` (`loss.shaq_loss`) in place of the mixed
TD loss.

Acting, the replay buffer, the agent networks, double-Q action selection, the targets (1-step,
n-step, TD(lambda)) and the target-network updates are the value-based learner's.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from marljax.agents.base import Agent
from marljax.agents.qlearning import agent as qagent
from marljax.agents.shaq import loss as shaq_losses
from marljax.agents.shaq.config import SHAQConfig, SHAQHParams
from marljax.agents.shaq.networks import SHAQNetworks, make_shaq_networks
from marljax.core.types import Environment, EnvParams
from marljax.nn import qvalues

Array = jax.Array


def loss_fn(nets: SHAQNetworks, params, target_params, batch, hp: SHAQHParams, *, key: Array):
    """SHAQ's loss on a replay batch (`loss.shaq_loss`).

    The prediction weighs each agent's utility of its taken action by 1 where that action is
    the agent's (masked) greedy one and by the alpha network's Monte Carlo estimate `alpha_i`
    (or `config.manual_alpha`) elsewhere; the TD target bootstraps from the target agents'
    greedy sum `sum_i Q_i^target(s', a_i')`, with `a_i'` chosen by the online agents under
    double-Q (`config.double_q`), else by the target agents.
    """
    config = nets.config
    b, q, q_next_t, q_next_online = qagent.unroll(nets, params, target_params, batch)
    chosen = jnp.take_along_axis(q, b["actions"][..., None], axis=-1)[..., 0]  # [L, B, A]
    greedy = b["actions"] == qvalues.masked_argmax(jax.lax.stop_gradient(q), b["mask"])
    if config.manual_alpha > 0:
        alpha = jnp.full_like(chosen, config.manual_alpha)
    else:
        alpha = nets.alpha_weights(params["mixer"], chosen, b["state"], key)
    v_next = qvalues.double_q_values(q_next_t, q_next_online, b["next_mask"]).sum(-1)  # [L, B]
    r = qvalues.team_reward(b["reward"] * hp.reward_scale, config.team_reward)
    discount = hp.gamma * (1.0 - b["terminated"].astype(jnp.float32))
    done = jnp.logical_or(b["terminated"], b["truncated"])
    targets = qvalues.td_targets(
        r,
        discount,
        v_next,
        done,
        target=config.target,
        td_lambda=hp.td_lambda,
        n_steps=config.n_steps,
    )
    return shaq_losses.shaq_loss(chosen, alpha, greedy, targets)


def make_shaq(
    config: SHAQConfig,
    env: Environment,
    env_params: EnvParams | None = None,
) -> Agent:
    """Build a SHAQ agent for `env` (discrete actions, a global state, cooperative).

    Args:
      config: static structure (a `QConfig` with SHAQ's sample size and alpha network).
      env: the environment.
      env_params: params used to read the spaces (default: `env.default_params()`).

    Returns:
      An `Agent` acting epsilon-greedily (greedily with `greedy=True`) on the agents' utilities;
      `get_params` gives `AgentParams(policy=agent Q-network params, critic=alpha network
      params)`; `default_hparams` is `SHAQHParams`.

    Raises:
      ValueError: continuous actions, an empty global state, a sequence longer than the
        episode cap.
    """
    return qagent.make_q_learner(
        config,
        env,
        env_params,
        networks=make_shaq_networks(config, env, env_params),
        loss=loss_fn,
        metric_names=shaq_losses.METRICS,
        loss_uses_key=True,
        default_hparams=SHAQHParams,
        rebuild=lambda c: make_shaq(c, env, env_params),
    )


def shaq(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """SHAQ with `SHAQConfig(**config)`."""
    return make_shaq(SHAQConfig(**config), env, env_params)


__all__ = ["loss_fn", "make_shaq", "shaq"]
