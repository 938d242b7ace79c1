"""Value-based MARL: IQL, VDN and QMIX as ONE learner with a mixer switch.

- `mixer="none"`: independent Q-learning (IQL, Tan 1993): each agent's TD target uses its own
  reward and its own next-state value.
- `mixer="vdn"`: Q_tot = sum of the agents' chosen-action values (Sunehag et al. 2018).
- `mixer="qmix"`: Q_tot from a monotonic hypernetwork mixer on the global state (Rashid et al.
  2018), see `marljax.nn.mixers.QMixer`.

The agent network is an MLP torso, an optional GRU (`marljax.nn.networks.RecurrentCore`, carry reset
at episode starts) and a linear head giving one value per action; parameter modes `shared`,
`shared_id` and `independent` (see `marljax.agents.common`). Acting is epsilon-greedy over legal
actions, epsilon annealed linearly in environment steps between two traced hyperparameters.

Learning: every update adds the rollout to an on-device replay buffer (`marljax.nn.replay`) as
fixed-length sequences of `sequence_len` steps, together with the recurrent carry at each
sequence start ("stored state", Kapturowski et al. 2019, R2D2), then takes `gradient_steps`
gradient steps on uniformly sampled batches of sequences. Targets:

- double-Q (van Hasselt et al. 2016): the online network picks the next action, the target
  network values it; next-action choices respect the next state's action mask;
- 1-step, n-step or TD(lambda) returns (`marljax.nn.losses`), bootstrapping through truncation (on
  the value of the episode's final observation) but not termination, and cut at every episode
  boundary inside a sequence;
- target network: hard copy every `target_update_interval` gradient steps, or Polyak averaging
  with a traced `tau` every gradient step.

Published configurations differ (see `PRESETS`); the defaults follow PyMARL2 (Hu et al. 2021,
"Rethinking the Implementation Tricks and Monotonicity Constraint in Cooperative Multi-Agent
Reinforcement Learning"): Adam, lr 1e-3, TD(lambda = 0.6), epsilon 1 -> 0.05 over 100k steps,
hard target updates every 200 gradient steps, GRU agents.

The package: `config` (QConfig, QHParams, QState, PRESETS), `networks` (QNetwork, the mixer and
how they are applied), `loss` (the TD losses as importable pure functions), `agent` (`QParts`,
the agent's pure functions and the `make_q_learner` factory), `diagnostics` (Q tables of a trained
learner).
"""

from __future__ import annotations

from marljax.agents.qlearning.agent import epsilon, iql, make_q_learner, qmix, vdn
from marljax.agents.qlearning.config import PRESETS, QConfig, QHParams, QState, preset
from marljax.agents.qlearning.diagnostics import first_step_q_table, format_q_table, q_table
from marljax.agents.qlearning.loss import (
    double_q_values,
    masked_argmax,
    mixed_td_loss,
    td_targets,
    team_reward,
)
from marljax.agents.qlearning.networks import QNetwork, QNetworks, make_q_networks, next_q

__all__ = [
    "PRESETS",
    "QConfig",
    "QHParams",
    "QNetwork",
    "QNetworks",
    "QState",
    "double_q_values",
    "epsilon",
    "first_step_q_table",
    "format_q_table",
    "iql",
    "make_q_learner",
    "make_q_networks",
    "masked_argmax",
    "mixed_td_loss",
    "next_q",
    "preset",
    "q_table",
    "qmix",
    "td_targets",
    "team_reward",
    "vdn",
]
