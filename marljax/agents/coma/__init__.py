"""COMA (Foerster et al. 2018): counterfactual multi-agent policy gradients.

Decentralised actors (masked categorical policies on each agent's observation) and one
centralised critic over the joint action. For each agent the critic gives, in one pass, the
values of all its own actions with the other agents' actions fixed; the *counterfactual
baseline* marginalises the agent's own action under its policy, so its advantage
`Q(s, u) - sum_u' pi(u') Q(s, (u_-a, u'))` credits only its own choice. The critic learns from
TD(lambda) targets of the team reward with a target critic.

The package: `config` (COMAConfig, COMAHParams, COMAState, PRESETS), `networks` (the default
actor and critic, `critic_inputs`), `loss` (the counterfactual baseline and advantage, actor and
critic losses as importable pure functions) and `agent` (the factory `make_coma`).

Reference: J. Foerster et al., "Counterfactual Multi-Agent Policy Gradients", AAAI 2018
(https://arxiv.org/abs/1705.08926).
"""

from __future__ import annotations

from marljax.agents.coma.agent import coma, make_coma
from marljax.agents.coma.config import PRESETS, COMAConfig, COMAHParams, COMAState
from marljax.agents.coma.loss import (
    coma_actor_loss,
    coma_critic_loss,
    counterfactual_advantage,
    counterfactual_baseline,
    counterfactual_q,
)
from marljax.agents.coma.networks import COMANetworks, critic_inputs, default_networks

__all__ = [
    "PRESETS",
    "COMAConfig",
    "COMAHParams",
    "COMANetworks",
    "COMAState",
    "coma",
    "coma_actor_loss",
    "coma_critic_loss",
    "counterfactual_advantage",
    "counterfactual_baseline",
    "counterfactual_q",
    "critic_inputs",
    "default_networks",
    "make_coma",
]
