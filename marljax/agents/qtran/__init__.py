"""QTRAN-base (Son et al. 2019): value factorisation without monotonicity.

The agents act greedily on per-agent utilities `Q_i`, as in VDN; a joint action-value network
`Q_jt(s, u)` (trained by TD on the team reward) and a state-value network `V_jt(s)` make the sum
of the utilities a factorization of `Q_jt` through two constraint losses (`loss`), so the agents'
greedy joint action is `Q_jt`'s argmax even where `Q_jt` is not monotonic in the agents'
values (the non-monotonic matrix game `matrix/nonmonotonic-v0`, where VDN and QMIX fail).

The package: `config` (QTRANConfig, QTRANHParams, PRESETS), `networks` (QTRANNetworks), `loss`
(`qtran_loss`, `opt_loss`, `nopt_loss` as importable pure functions), `agent` (the factory,
the value-based learner of `marljax.agents.qlearning` with these networks and this loss).

Reference: K. Son et al., "QTRAN: Learning to Factorize with Transformation for Cooperative
Multi-Agent Reinforcement Learning", ICML 2019 (https://arxiv.org/abs/1905.05408).
"""

from __future__ import annotations

from marljax.agents.qtran.agent import make_qtran, qtran
from marljax.agents.qtran.config import PRESETS, QTRANConfig, QTRANHParams, preset
from marljax.agents.qtran.loss import nopt_loss, opt_loss, qtran_loss
from marljax.agents.qtran.networks import QTRANNetworks, make_qtran_networks

__all__ = [
    "PRESETS",
    "QTRANConfig",
    "QTRANHParams",
    "QTRANNetworks",
    "make_qtran",
    "make_qtran_networks",
    "nopt_loss",
    "opt_loss",
    "preset",
    "qtran",
    "qtran_loss",
]
