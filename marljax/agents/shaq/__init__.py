"""SHAQ (Wang et al. 2022): multi-agent Q-learning with Markov Shapley values.

The agents act greedily on per-agent utilities `Q_i`, as in VDN, and the team value is their
sum at the greedy joint action; away from it each non-greedy utility is weighted by
`alpha_i(s, a_i) >= 1`, an alpha network's estimate averaged over randomly sampled coalition
orders (Monte Carlo Shapley weighting, `loss.sample_coalitions`). The weighted sum is trained by
TD on the team reward (`loss.shaq_loss`).

The package: `config` (SHAQConfig, SHAQHParams, PRESETS), `networks` (AlphaNetwork,
SHAQNetworks), `loss` (`sample_coalitions`, `coalition_mean`, `shapley_weights`, `shaq_loss` as
importable pure functions), `agent` (the factory, the value-based learner of
`marljax.agents.qlearning` with these networks and this loss).

Reference: J. Wang, Y. Zhang, Y. Gu and T.-K. Kim, "SHAQ: Incorporating Shapley Value Theory
into Multi-Agent Q-Learning", NeurIPS 2022 (https://arxiv.org/abs/2105.15013); semantics as in
JaxMARL's `baselines/QLearning/shaq.py`.
"""

from __future__ import annotations

from marljax.agents.shaq.agent import make_shaq, shaq
from marljax.agents.shaq.config import PRESETS, SHAQConfig, SHAQHParams, preset
from marljax.agents.shaq.loss import (
    coalition_mean,
    sample_coalitions,
    shapley_probability,
    shapley_weights,
    shaq_loss,
)
from marljax.agents.shaq.networks import AlphaNetwork, SHAQNetworks, make_shaq_networks

__all__ = [
    "PRESETS",
    "AlphaNetwork",
    "SHAQConfig",
    "SHAQHParams",
    "SHAQNetworks",
    "coalition_mean",
    "make_shaq",
    "make_shaq_networks",
    "preset",
    "sample_coalitions",
    "shapley_probability",
    "shapley_weights",
    "shaq",
    "shaq_loss",
]
