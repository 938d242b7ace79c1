"""PQN-VDN: JaxMARL's parallel Q-network with VDN (Gallici et al. 2024; Rutherford et al. 2024).

No replay buffer, no target network: many parallel environments, a layer-normalised Q-network
(the value-based learner's `QNetwork` with `layer_norm=True`), epsilon-greedy acting, and on each
rollout Q(lambda) targets of the VDN sum `sum_a Q_a` regressed on for a few epochs of minibatches.

The package: `config` (PQNConfig, PQNHParams, PQNState, PRESETS), `loss` (`vdn_lambda_targets`,
`pqn_vdn_loss` as importable pure functions) and `agent` (the factory `make_pqn_vdn`).
"""

from __future__ import annotations

from marljax.agents.pqn.agent import make_pqn_vdn, pqn_vdn
from marljax.agents.pqn.config import PRESETS, PQNConfig, PQNHParams, PQNState
from marljax.agents.pqn.loss import pqn_vdn_loss, vdn_lambda_targets

__all__ = [
    "PRESETS",
    "PQNConfig",
    "PQNHParams",
    "PQNState",
    "make_pqn_vdn",
    "pqn_vdn",
    "pqn_vdn_loss",
    "vdn_lambda_targets",
]
