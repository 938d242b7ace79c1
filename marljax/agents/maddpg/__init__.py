"""MADDPG (Lowe et al. 2017): deterministic decentralised actors, centralised per-agent critics.

- Actors `mu_i(o_i) = tanh(u_i(o_i))`, mapped affinely from the unit box onto the env's action
  box; parameter modes `independent` (default, as in the paper: one actor per agent, a leading
  agent axis `[A, ...]`), `shared` and `shared_id` (see `marljax.agents.common`).
- One centralised critic per agent, `Q_i(x, a_1, ..., a_A)`, on the global state
  (`critic_input="state"`) or all agents' observations (`"obs"`, the paper's `x`) and the joint
  action in the unit box, trained on the agent's OWN reward, so mixed cooperative-competitive
  games work; with shared parameters one critic sees the agent's one-hot id.
- Target actors and critics moved by Polyak averaging (`tau`); one-step TD targets
  `y_i = r_i + gamma (1 - terminated) Q'_i(x', mu'_1(o'_1), ..., mu'_A(o'_A))` (truncation
  bootstraps from the final observation).
- Actor `i` ascends `Q_i` at the STORED joint action of a replay batch with its own slot set to
  `mu_i(o_i)` (the deterministic policy gradient of eq. (5)), plus `actor_reg * mean(u_i^2)`.
- Exploration: clipped additive Gaussian noise in the unit box, std annealed linearly
  (`noise_start` -> `noise_finish` over `noise_anneal_steps`); uniform random actions during
  `warmup_steps`; greedy acting (`act(..., greedy=True)`) plays `mu_i(o_i)` without noise.
- Replay: every update adds the rollout to an on-device buffer (`marljax.nn.replay`) and takes
  `round(utd_ratio * rollout_len)` gradient steps (`marljax.agents.offpolicy`).

Defaults follow the paper and its code (openai/maddpg): Adam lr 1e-2 for actors and critics,
gamma 0.95, tau 0.01, batch 1024, 2x64 ReLU MLPs, gradient-norm clip 0.5, actor penalty 1e-3;
the buffer holds 100k transitions (the paper: 1M, the `maddpg_paper` preset) and learning starts
after 1,000 steps. Deviation: the official code's continuous actors sample from a Gaussian head
whose mean and log-std the network outputs; here the actor is deterministic (DDPG, as the
paper's text describes and as EPyMARL and BenchMARL implement it) with additive noise.

The package: `config` (MADDPGConfig, MADDPGHParams, MADDPGState, PRESETS), `networks`
(actors, critics and how they are applied), `loss` (`td_target`, `critic_loss`, `actor_loss`
as importable pure functions), `agent` (the update steps, the agent's functions and the factory).

Reference: R. Lowe, Y. Wu, A. Tamar, J. Harb, P. Abbeel, I. Mordatch, "Multi-Agent Actor-Critic
for Mixed Cooperative-Competitive Environments", NeurIPS 2017 (https://arxiv.org/abs/1706.02275).
"""

from __future__ import annotations

from marljax.agents.maddpg.agent import maddpg, make_maddpg, noise_std
from marljax.agents.maddpg.config import (
    CRITIC_INPUTS,
    PRESETS,
    MADDPGConfig,
    MADDPGHParams,
    MADDPGState,
    preset,
)
from marljax.agents.maddpg.loss import actor_loss, critic_loss, td_target
from marljax.agents.maddpg.networks import (
    MADDPGModel,
    MADDPGNetworks,
    make_maddpg_model,
    make_maddpg_networks,
)

__all__ = [
    "CRITIC_INPUTS",
    "PRESETS",
    "MADDPGConfig",
    "MADDPGHParams",
    "MADDPGModel",
    "MADDPGNetworks",
    "MADDPGState",
    "actor_loss",
    "critic_loss",
    "maddpg",
    "make_maddpg",
    "make_maddpg_model",
    "make_maddpg_networks",
    "noise_std",
    "preset",
    "td_target",
]
