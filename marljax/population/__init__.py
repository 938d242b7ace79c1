"""Game-theoretic population training: meta-solvers, PSRO, and opponent shaping (LOLA).

- `metasolvers`: pure jittable meta-solvers on an empirical two-player payoff matrix (uniform,
  last-iterate, Nash by regret matching+, projected replicator dynamics, alpha-rank and the
  risk-averse equilibrium), with a registry by name.
- `psro`: PSRO on two-player normal-form games, the whole run as one compiled program
  (fictitious play and self-play are its `uniform` and `last` meta-solvers).
- `lola`: LOLA and naive learners with exact returns on the iterated Prisoner's Dilemma.
- `advantage_alignment`: Advantage Alignment and naive policy-gradient learners on the iterated
  Prisoner's Dilemma (sampled episodes, exact critic), and `make_aa_ppo`, Advantage Alignment
  as a neural PPO agent for any two-player env (e.g. the Coin Game).
- `pool`: co-player pools: one learner trained against scripted co-players drawn per episode
  (also from text, `parse_pool`: `marljax train --opponents pool:...`), and cross-play of the
  trained seeds.
- `coplayer`: a two-player matrix game seen by one learner against a traced mixed strategy
  (PSRO's `agent` best-response oracle trains registered agents on it).
"""

from marljax.population.advantage_alignment import (
    AAPPOHParams,
    AdvantageAlignmentConfig,
    AdvantageAlignmentHParams,
    AdvantageAlignmentOutput,
    aligned_advantages,
    aligned_pair_advantages,
    episodic_past_sum,
    make_aa_ppo,
    make_advantage_alignment_ipd,
)
from marljax.population.coplayer import MixedCoPlayer, MixedCoPlayerParams, swap_roles
from marljax.population.lola import (
    LOLAConfig,
    LOLAHParams,
    LOLAOutput,
    ipd_values,
    lola_gradients,
    lola_ipd_payoffs,
    make_lola_ipd,
    naive_gradients,
)
from marljax.population.metasolvers import (
    META_SOLVERS,
    MetaSolverHParams,
    alpharank,
    get_meta_solver,
    project_to_simplex,
    projected_replicator_dynamics,
    regret_matching,
    risk_averse_equilibrium,
    risk_averse_utility,
)
from marljax.population.pool import (
    PoolTraining,
    agent_strategy,
    make_pool_training,
    pair_agents,
    parse_pool,
    pool_crossplay,
    pool_from_spec,
    pool_strategy,
)
from marljax.population.psro import PSROConfig, PSROHParams, PSROOutput, make_psro

__all__ = [
    "agent_strategy",
    "pool_strategy",
    "pool_from_spec",
    "parse_pool",
    "pool_crossplay",
    "pair_agents",
    "make_pool_training",
    "PoolTraining",
    "AAPPOHParams",
    "aligned_pair_advantages",
    "episodic_past_sum",
    "make_aa_ppo",
    "AdvantageAlignmentConfig",
    "AdvantageAlignmentHParams",
    "AdvantageAlignmentOutput",
    "aligned_advantages",
    "make_advantage_alignment_ipd",
    "LOLAConfig",
    "LOLAHParams",
    "LOLAOutput",
    "META_SOLVERS",
    "MetaSolverHParams",
    "MixedCoPlayer",
    "MixedCoPlayerParams",
    "PSROConfig",
    "PSROHParams",
    "PSROOutput",
    "alpharank",
    "get_meta_solver",
    "ipd_values",
    "lola_gradients",
    "lola_ipd_payoffs",
    "make_lola_ipd",
    "make_psro",
    "naive_gradients",
    "project_to_simplex",
    "projected_replicator_dynamics",
    "regret_matching",
    "risk_averse_equilibrium",
    "risk_averse_utility",
    "swap_roles",
]
