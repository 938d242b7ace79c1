"""Mean-field policy gradient (MFPG): one shared actor on local observations, a mean-field critic.

Centralised training with decentralised execution for large swarms in the spirit of Dec-POMFC
(K. Cui, S. Hauck, C. Fabian and H. Koeppl, "Learning Decentralized Partially Observable Mean
Field Control for Artificial Collective Behavior", ICLR 2024):

- **Actor**: ONE parameter set shared by every agent, fed only the agent's local observation
  (no one-hot agent id), so the policy does not depend on the number of agents `A`: a policy
  trained with `A = 100` runs unchanged on a swarm of `A = 10,000` (`transfer`).
- **Critic**: a value function of the swarm's mean field, i.e. the environment's
  `global_state`. The swarm envs (`marljax.envs.swarm`) give the empirical distribution of
  positions and headings/phases as a fixed-size histogram (`mean_field="histogram"`) or kernel
  mean embedding (`mean_field="kernel"`): choose it when making the env, e.g.
  `marljax.make("swarm/vicsek-v0", num_agents=100, mean_field="kernel")`. Its size does not
  depend on `A` either, so the critic transfers too.
- **Update**: PPO's clipped surrogate, GAE and clipped value loss
  (`marljax.nn.losses.ppo_clip_loss`, `marljax.nn.losses.gae`, `marljax.nn.losses.value_loss`) over all
  agents' samples. With a shared policy and a global (mean-field) reward, the average over
  agents of `grad log pi(a_i | o_i) A(mu)` estimates the policy gradient of the mean-field
  control problem for the shared decentralised policy (the quantity Dec-POMFC optimises), with
  `A` samples per step. With a per-agent reward (e.g. the swarm envs' `local_ratio > 0`) the
  advantages are per agent and the critic predicts their mean-field average.

This module adds no second PPO: `make_mfpg` is `marljax.agents.ppo.make_ppo` with the
parameter mode fixed to `"shared"` and the critic input fixed to `"global"`, plus the checks
that keep the agent size-independent. Registered as `"mfpg"` in `marljax.agents.ALGORITHMS`
(`marljax train --algo mfpg --env swarm/vicsek-v0 --set env.num_agents=100` and
`Experiment(algo="mfpg", ...)`). The critic, shared and fed the same mean field for every
agent, is evaluated once per environment. Greedy acting (`act(..., greedy=True)`) takes the
policy head's mode, and `get_params` returns `AgentParams(policy=actor, critic=critic)`, both
from PPO.

    env, params = marljax.make("swarm/vicsek-v0", num_agents=100)
    agent = mfpg(env, params)                    # or make_mfpg(MFPGConfig(), env, params)
    ...train with marljax.training.train.make_train...
    big_env, big_params = marljax.make("swarm/vicsek-v0", num_agents=10_000)
    big_agent = transfer(MFPGConfig(), big_env, agent_state, env_params=big_params)
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np

from marljax.agents.base import Agent
from marljax.agents.ppo import (
    CriticInput,
    ParameterMode,
    PPOConfig,
    PPOHParams,
    PPONetworks,
    make_ppo,
)
from marljax.core.config import param
from marljax.core.types import Environment, EnvParams


@dataclasses.dataclass(frozen=True)
class MFPGConfig(PPOConfig):
    """Static structure of the mean-field policy gradient agent.

    The fields are those of `marljax.agents.ppo.PPOConfig`; `parameter_mode` must stay
    `"shared"` (an agent id or per-agent parameters would tie the policy to one swarm size) and
    `critic_input` must stay `"global"` (the critic reads the mean field). Every other default
    is PPO's.
    """

    critic_input: CriticInput = param(
        "global", help='must stay "global": the critic reads the mean field.'
    )
    parameter_mode: ParameterMode = param(
        "shared", help='must stay "shared": one actor for every agent, for any swarm size.'
    )

    def __post_init__(self):
        super().__post_init__()
        if self.parameter_mode != "shared":
            raise ValueError(
                f"MFPGConfig.parameter_mode must be 'shared' (one actor for every agent, so the "
                f"policy runs with any number of agents), got {self.parameter_mode!r}; use "
                "marljax.agents.ppo.make_ppo for agent ids or independent parameters."
            )
        if self.critic_input != "global":
            raise ValueError(
                f"MFPGConfig.critic_input must be 'global' (the critic reads the mean field, the "
                f"env's global state), got {self.critic_input!r}; use IPPO for a local critic."
            )


def make_mfpg(
    config: MFPGConfig,
    env: Environment,
    env_params: EnvParams | None = None,
    networks: PPONetworks | None = None,
) -> Agent:
    """Build the mean-field policy gradient agent for `env`.

    Args:
      config: an `MFPGConfig` (a `PPOConfig` with `parameter_mode="shared"` and
        `critic_input="global"` is accepted too).
      env: the environment; its global state should be a mean-field embedding whose size does
        not depend on the number of agents (as for the `swarm/*` envs), or the critic will not
        transfer to other swarm sizes.
      env_params: params used to read the spaces (default: `env.default_params()`).
      networks: optional actor and critic (`marljax.agents.ppo.PPONetworks`); their parameter
        shapes must not depend on the number of agents for `transfer` to work.

    Returns:
      An `Agent` (the PPO agent's functions; its state is a `PPOState` whose parameter shapes do
      not depend on `env.num_agents`).

    Raises:
      ValueError: a config with agent ids, independent parameters or a local critic.
    """
    if not isinstance(config, PPOConfig):
        raise ValueError(f"make_mfpg needs an MFPGConfig, got {type(config).__name__}")
    if not isinstance(config, MFPGConfig):
        # Re-validate a plain PPOConfig through MFPGConfig's checks.
        config = MFPGConfig(**dataclasses.asdict(config))
    return make_ppo(config, env, env_params, networks)


def mfpg(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """The mean-field policy gradient agent for `env` (keyword overrides of `MFPGConfig`)."""
    return make_mfpg(MFPGConfig(**config), env, env_params)


def transfer(
    config: MFPGConfig,
    env: Environment,
    agent_state: Any,
    env_params: EnvParams | None = None,
) -> Agent:
    """The agent for `env` (any number of agents) that can act with a trained `agent_state`.

    The trained state is used unchanged; this builds the agent's functions for the new swarm
    size and checks (on shapes only, nothing is compiled) that the state fits them, so a
    mismatch (e.g. an env whose observation or mean-field size differs) fails here with a clear
    message rather than inside `jit`.

    Args:
      config: the config the state was trained with.
      env: the environment to run in (e.g. the same task with 10,000 agents).
      agent_state: a trained `PPOState` (no seed axis).
      env_params: params of `env` (default: `env.default_params()`).

    Returns:
      An `Agent` whose `act(agent_state, ...)` drives `env`.

    Raises:
      ValueError: the state's parameter shapes do not match the agent built for `env`.
    """
    agent = make_mfpg(config, env, env_params)
    expected = jax.eval_shape(agent.init, jax.random.PRNGKey(0), PPOHParams())
    want = agent.get_params(expected)
    have = agent.get_params(agent_state)
    same = jax.tree.structure(want) == jax.tree.structure(have) and all(
        tuple(w.shape) == tuple(np.shape(h))
        for w, h in zip(jax.tree.leaves(want), jax.tree.leaves(have), strict=True)
    )
    if not same:
        raise ValueError(
            f"the trained MFPG state does not fit {env.name} with {env.num_agents} agents: "
            "parameter shapes differ (observation or global-state size changed, or the state "
            "has a seed axis: index one seed first, e.g. jax.tree.map(lambda x: x[0], state))."
        )
    return agent


__all__ = ["MFPGConfig", "make_mfpg", "mfpg", "transfer"]
