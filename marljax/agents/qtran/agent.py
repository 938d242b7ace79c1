"""QTRAN's agent: the value-based learner's agent (`marljax.agents.qlearning.agent`) built with
QTRAN's joint networks and `loss_fn` (`loss.qtran_loss`) in place of a mixer and the mixed TD
loss.

Acting, the replay buffer, the agent networks, double-Q action selection, the targets (1-step,
n-step, TD(lambda)) and the target-network updates are the value-based learner's.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from marljax.agents.base import Agent
from marljax.agents.qlearning import agent as qagent
from marljax.agents.qtran import loss as qtran_losses
from marljax.agents.qtran.config import QTRANConfig, QTRANHParams
from marljax.agents.qtran.networks import QTRANNetworks, make_qtran_networks
from marljax.core.types import Environment, EnvParams
from marljax.nn import qvalues

Array = jax.Array


def _take(q: Array, actions: Array) -> Array:
    return jnp.take_along_axis(q, actions[..., None], axis=-1)[..., 0]


def loss_fn(nets: QTRANNetworks, params, target_params, batch, hp: QTRANHParams):
    """QTRAN-base's loss on a replay batch (`loss.qtran_loss`).

    The agents' greedy joint action `u_bar` is the tuple of per-agent masked argmaxes of the
    online utilities; the TD target's next joint action is chosen by the online agents with
    double-Q (`config.double_q`), else by the target agents, and valued by the target `Q_jt`.
    """
    config = nets.config
    b, q, q_next_t, q_next_online = qagent.unroll(nets, params, target_params, batch)
    greedy = qvalues.masked_argmax(q, b["mask"])  # [L, B, A]
    select = q_next_t if q_next_online is None else q_next_online
    next_greedy = qvalues.masked_argmax(select, b["next_mask"])  # [L, B, A]
    joint, target_joint = params["mixer"], jax.lax.stop_gradient(target_params["mixer"])
    q_jt = nets.joint_q(joint, b["state"], b["actions"])  # [L, B]
    q_jt_greedy = nets.joint_q(joint, b["state"], greedy)
    v = nets.state_value(joint, b["state"])
    q_jt_next = nets.joint_q(target_joint, b["next_state"], next_greedy)
    r = qvalues.team_reward(b["reward"] * hp.reward_scale, config.team_reward)
    discount = hp.gamma * (1.0 - b["terminated"].astype(jnp.float32))
    done = jnp.logical_or(b["terminated"], b["truncated"])
    targets = qvalues.td_targets(
        r,
        discount,
        q_jt_next,
        done,
        target=config.target,
        td_lambda=hp.td_lambda,
        n_steps=config.n_steps,
    )
    return qtran_losses.qtran_loss(
        q_jt,
        targets,
        q_jt_greedy,
        v,
        _take(q, b["actions"]).sum(-1),
        _take(q, greedy).sum(-1),
        opt_weight=hp.opt_weight,
        nopt_weight=hp.nopt_weight,
    )


def make_qtran(
    config: QTRANConfig,
    env: Environment,
    env_params: EnvParams | None = None,
) -> Agent:
    """Build a QTRAN-base agent for `env` (discrete actions, cooperative: one team reward).

    Args:
      config: static structure (a `QConfig` with QTRAN's joint-network widths).
      env: the environment.
      env_params: params used to read the spaces (default: `env.default_params()`).

    Returns:
      An `Agent` acting epsilon-greedily (greedily with `greedy=True`) on the agents' utilities;
      `get_params` gives `AgentParams(policy=agent Q-network params, critic={"joint": Q_jt
      params, "value": V_jt params})`; `default_hparams` is `QTRANHParams`.

    Raises:
      ValueError: continuous actions, a sequence longer than the episode cap.
    """
    return qagent.make_q_learner(
        config,
        env,
        env_params,
        networks=make_qtran_networks(config, env, env_params),
        loss=loss_fn,
        metric_names=qtran_losses.METRICS,
        default_hparams=QTRANHParams,
        rebuild=lambda c: make_qtran(c, env, env_params),
    )


def qtran(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """QTRAN-base with `QTRANConfig(**config)`."""
    return make_qtran(QTRANConfig(**config), env, env_params)


__all__ = ["loss_fn", "make_qtran", "qtran"]
