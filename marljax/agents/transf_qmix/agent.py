"""TransfQMIX's agent: the value-based learner's agent (`marljax.agents.qlearning.agent`) built
with transformer agents and mixer (`networks`) and `loss_fn` (`loss.transf_qmix_loss`).

Acting (epsilon-greedy on the agents' Q), the replay buffer of sequences with their start
carries (the agents' hidden tokens), the targets (1-step, n-step, TD(lambda)) and the target
network's hard or Polyak updates are the value-based learner's.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from marljax.agents.base import Agent
from marljax.agents.qlearning import agent as qagent
from marljax.agents.transf_qmix import loss as tq_loss
from marljax.agents.transf_qmix.config import TransfQMIXConfig, TransfQMIXHParams
from marljax.agents.transf_qmix.networks import TransfQMIXNetworks, make_transf_qmix_networks
from marljax.core.types import Environment, EnvParams
from marljax.nn import qvalues

Array = jax.Array


def loss_fn(nets: TransfQMIXNetworks, params, target_params, batch, hp: TransfQMIXHParams):
    """TransfQMIX's loss on a replay batch (`loss.transf_qmix_loss`).

    The online agents are unrolled over the sequence from its stored start carry; the target
    agents too, and both are stepped once more on the observation after each step, which gives
    the next step's Q and hidden tokens. The next joint action is the online agents' masked
    argmax (double Q, `config.double_q`; else the target agents'); the target mixer mixes its
    target values with the target agents' hidden tokens and the next global states. No gradient
    flows from the mixer into the agents' hidden tokens (JaxMARL's `stop_gradient`). The target
    mixer's own hidden token runs over the next states `s_{t+1}` of the sequence and restarts
    where an episode starts at `t` (so it first reads an episode's second state, as JaxMARL's
    target mixer starts at step 1).
    """
    config = nets.config
    b = jax.tree.map(
        lambda x: jnp.swapaxes(x, 0, 1), {k: v for k, v in batch.items() if k != "carry"}
    )
    x, x_next = nets.inputs(b["obs"]), nets.inputs(b["next_obs"])  # [L, B, A, K * F]
    carry0 = batch["carry"]  # [B, A, H]
    _, (q, hidden) = nets.apply_agents(params["agent"], carry0, x, b["reset"])
    target_agent = jax.lax.stop_gradient(target_params["agent"])
    _, (q_t, hidden_t) = nets.apply_agents(target_agent, carry0, x, b["reset"])
    q_next_t, h_next_t = nets.next_values(target_agent, q_t, hidden_t, x_next, b["truncated"])
    q_next_online = None
    if config.double_q:
        q_next_online, _ = nets.next_values(params["agent"], q, hidden, x_next, b["truncated"])
    chosen = jnp.take_along_axis(q, b["actions"][..., None], axis=-1)[..., 0]  # [L, B, A]
    v_next = qvalues.double_q_values(q_next_t, q_next_online, b["next_mask"])  # [L, B, A]
    q_tot = nets.mix_sequence(
        params["mixer"], chosen, jax.lax.stop_gradient(hidden), b["state"], b["reset"]
    )
    v_tot = nets.mix_sequence(
        jax.lax.stop_gradient(target_params["mixer"]), v_next, h_next_t, b["next_state"], b["reset"]
    )
    r = qvalues.team_reward(b["reward"] * hp.reward_scale, config.team_reward)
    discount = hp.gamma * (1.0 - b["terminated"].astype(jnp.float32))
    done = jnp.logical_or(b["terminated"], b["truncated"])
    targets = qvalues.td_targets(
        r,
        discount,
        v_tot,
        done,
        target=config.target,
        td_lambda=hp.td_lambda,
        n_steps=config.n_steps,
    )
    return tq_loss.transf_qmix_loss(q_tot, targets)


def make_transf_qmix(
    config: TransfQMIXConfig,
    env: Environment,
    env_params: EnvParams | None = None,
) -> Agent:
    """Build a TransfQMIX agent for `env` (discrete actions, entity tokens, one team reward).

    Args:
      config: static structure (a `QConfig` with the transformers' sizes).
      env: the environment; it must have `entity_obs` and `entity_state` (see `networks`).
      env_params: params used to read the spaces (default: `env.default_params()`).

    Returns:
      An `Agent` acting epsilon-greedily (greedily with `greedy=True`) on the transformer
      agents' Q; its carry `[E, A, H]` is each agent's hidden token; `get_params` gives
      `AgentParams(policy=agent params, critic=mixer params)`; `default_hparams` is
      `TransfQMIXHParams`.

    Raises:
      ValueError: continuous actions, an env without entity tokens (named), a sequence longer
        than the episode cap.
    """
    return qagent.make_q_learner(
        config,
        env,
        env_params,
        networks=make_transf_qmix_networks(config, env, env_params),
        loss=loss_fn,
        metric_names=tq_loss.METRICS,
        default_hparams=TransfQMIXHParams,
        rebuild=lambda c: make_transf_qmix(c, env, env_params),
    )


def transf_qmix(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """TransfQMIX with `TransfQMIXConfig(**config)`."""
    return make_transf_qmix(TransfQMIXConfig(**config), env, env_params)


__all__ = ["loss_fn", "make_transf_qmix", "transf_qmix"]
