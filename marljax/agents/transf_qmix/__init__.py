"""TransfQMIX (Gallici, Martin & Masmitja 2023): QMIX with transformers over entity tokens.

Each agent sees its observation as a set of entity tokens (itself, the landmarks, the other
agents, ...), embeds them, prepends a recurrent hidden token and runs a transformer encoder; the
hidden token's output is carried to the next step and gives the agent's Q-values. The mixer is a
transformer too, over the global state's entity tokens, the agents' hidden tokens and its own
recurrent token; its output tokens are the weights of QMIX's monotonic mixing network (through
`abs`), so the greedy joint action is still the tuple of the agents' greedy actions.

The package: `config` (TransfQMIXConfig, TransfQMIXHParams, PRESETS), `networks` (the agent and
mixer transformers, `entity_shapes`), `loss` (`monotonic_mix`, `transf_qmix_loss` as importable
pure functions) and `agent` (the factory: the value-based learner of
`marljax.agents.qlearning` with these networks and this loss).

Environments provide entity tokens through two methods, `entity_obs` and `entity_state`
(`particle/simple_spread-v0` and the LBF envs with vector observations have them); other envs are refused by name when the agent is built.

Reference: M. Gallici, M. Martin and I. Masmitja, "TransfQMix: Transformers for Leveraging the
Graph Structure of Multi-Agent Reinforcement Learning Problems", AAMAS 2023
(https://arxiv.org/abs/2301.05334); JaxMARL's `baselines/QLearning/transf_qmix.py`.
"""

from __future__ import annotations

from marljax.agents.transf_qmix.agent import make_transf_qmix, transf_qmix
from marljax.agents.transf_qmix.config import (
    PRESETS,
    TransfQMIXConfig,
    TransfQMIXHParams,
    preset,
)
from marljax.agents.transf_qmix.loss import monotonic_mix, transf_qmix_loss
from marljax.agents.transf_qmix.networks import (
    TransformerAgent,
    TransformerMixer,
    TransfQMIXNetworks,
    entity_shapes,
    make_transf_qmix_networks,
)

__all__ = [
    "PRESETS",
    "TransfQMIXConfig",
    "TransfQMIXHParams",
    "TransfQMIXNetworks",
    "TransformerAgent",
    "TransformerMixer",
    "entity_shapes",
    "make_transf_qmix",
    "make_transf_qmix_networks",
    "monotonic_mix",
    "preset",
    "transf_qmix",
    "transf_qmix_loss",
]
