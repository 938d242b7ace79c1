"""HAPPO and HATRPO (Kuba et al., ICLR 2022): heterogeneous-agent trust-region learning.

- Heterogeneous actors (`parameter_mode="independent"` by default; shared modes also run), one
  centralised critic `V(s)` on the global state: MAPPO's networks, acting, GAE and value loss
  (`marljax.agents.ppo`).
- One update draws a random permutation of the agents (`fixed_order` keeps index order) and
  updates them one after another inside the compiled program (a `lax.scan` over the order, so
  compile time does not grow with the number of agents). Agent `i_m`'s objective weights the
  advantage by `M`, the product of the earlier agents' new / old ratios after their updates.
- HAPPO (`actor_update="ppo"`): each agent's PPO epochs x minibatches of the clipped surrogate
  `loss.happo_loss`. HATRPO (`"trpo"`): each agent's natural-gradient step of bounded KL
  (conjugate gradient on the Fisher-vector product, backtracking line search that leaves the
  actor unchanged when no step is accepted).
- Discrete and Box action spaces, feed-forward or recurrent actors.

Modules: `config` (HAPPOConfig, HAPPOHParams, HAPPOState, PRESETS), `loss` (the pure objectives
and trust-region pieces), `agent` (the factory `make_happo` and the pure functions it wires).

Reference: J. G. Kuba, R. Chen, M. Wen, Y. Wen, F. Sun, J. Wang, Y. Yang, "Trust Region Policy
Optimisation in Multi-Agent Reinforcement Learning", ICLR 2022 (https://arxiv.org/abs/2109.11251);
HARL (PKU-MARL/HARL).
"""

from marljax.agents.happo.agent import HAPPOParts, happo, hatrpo, make_happo
from marljax.agents.happo.config import (
    ACTOR_UPDATES,
    PRESETS,
    HAPPOConfig,
    HAPPOHParams,
    HAPPOState,
)
from marljax.agents.happo.loss import (
    conjugate_gradient,
    happo_loss,
    hatrpo_surrogate,
    line_search,
    max_step,
    policy_kl,
)

__all__ = [
    "ACTOR_UPDATES",
    "PRESETS",
    "HAPPOConfig",
    "HAPPOHParams",
    "HAPPOParts",
    "HAPPOState",
    "conjugate_gradient",
    "happo",
    "happo_loss",
    "hatrpo",
    "hatrpo_surrogate",
    "line_search",
    "make_happo",
    "max_step",
    "policy_kl",
]
