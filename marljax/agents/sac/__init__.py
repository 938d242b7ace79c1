"""HASAC and MASAC: off-policy maximum-entropy actor-critic for cooperative games, ONE learner.

- Centralised twin soft Q critic `Q_j(s, a_1..a_A)`, j in {1, 2}, on the global state and the
  joint action, with Polyak-averaged target networks and the clipped double-Q minimum
  (Fujimoto et al. 2018, TD3; Haarnoja et al. 2018, SAC).
- Decentralised actors `pi_i(a_i | o_i)`: parameter modes `independent` (default: one pytree with
  a leading agent axis `[A, ...]`), `shared` and `shared_id` (see `marljax.agents.common`).
- `sequential=True` (HASAC, Liu et al. 2024, "Maximum Entropy Heterogeneous-Agent Reinforcement
  Learning", ICLR; its template MEHAML): at every actor update a permutation of the agents is
  drawn (`fixed_order=True`: 0, 1, ..., A-1) and the agents are updated one after the other. Agent
  `i_m` maximises `E[min_j Q_j(s, a) - alpha_i log pi_i(a_i | o_i)]` where the joint action holds
  the actions of the already updated agents `i_1..i_{m-1}` re-sampled from their NEW policies;
  after its step, agent `i_m`'s new action overwrites its slot. This is a `lax.scan` over the
  permutation reading and writing slice `i` of the stacked actor parameters and optimiser
  states, so the compiled program does not grow with the number of agents.
- `sequential=False` (MASAC): every agent is updated simultaneously against joint actions
  sampled from the current (pre-update) policies, for ablations of the sequential scheme.
- Per-agent temperature `alpha_i`, fixed (`auto_alpha=False`, the HARL default) or tuned towards
  a target entropy (Haarnoja et al. 2018b, "Soft Actor-Critic Algorithms and Applications"):
  `-dim(A)` for continuous actions, `target_entropy_scale * log(num_actions)` for discrete ones.
  Issue 7 reports a shape bug in the HASAC reference code that makes the discrete target zero;
  it is deliberately not reproduced: the target here is positive and scales with `log(N)`.
- Discrete actions: masked categorical policies; the actor and temperature losses use the exact
  expectation over the agent's own actions (Christodoulou 2019, "Soft Actor-Critic for Discrete
  Action Settings"), the critic sees one-hot actions. Continuous actions: tanh-squashed Gaussian
  with the log-determinant correction (`marljax.nn.distributions.TanhGaussian`), rescaled to the
  env's action box; the critic sees actions in `[-1, 1]`.
- Replay: every update adds the rollout to an on-device buffer (`marljax.nn.replay`, one item per
  transition) as n-step transitions, then takes `round(utd_ratio * rollout_len)` gradient steps.
  The n-step window is cut at episode ends (truncation bootstraps from the final observation,
  termination does not) and at the end of the rollout (the last `n - 1` steps of a rollout use
  shorter windows), so use `rollout_len >= n_step` for full windows.

Defaults follow the HARL repository's published HASAC configuration
(`harl/configs/algos_cfgs/hasac.yaml`, Liu et al. 2024): MLP (256, 256) ReLU, Adam with actor and
critic lr 5e-4, fixed temperature 1e-3 (alpha lr 3e-4 when tuned), gamma 0.99, batch 1000,
Polyak 0.005, 20-step returns, Huber critic loss (delta 10), ValueNorm, 10k warm-up steps, one
gradient step per vectorised environment step, independent parameters, random order. Deviations:
the buffer holds 100k transitions (HARL: 1M; use the `harl` preset), and HARL's input LayerNorm
("feature normalisation") is not used. HARL's tuned config for continuous simple spread is the
`harl_mpe` preset (learned temperature from 1, MSE, no ValueNorm). Two differences from the HARL
code that are deliberate: HARL's squashed Gaussian outputs `high[0] * tanh(u)`, i.e. `[-1, 1]`
for MPE's `Box(0, 1)` actions (which the PettingZoo env does not clip), while here the unit box
is mapped affinely onto `[low, high]` (log-densities and the target entropy `-dim(A)` refer to
the unit box; the affine map only shifts them by a constant); and HARL's critic uses a separate
joint temperature (its own learned `log alpha`) in the soft target, while here the target
subtracts `sum_i alpha_i log pi_i` with the agents' temperatures.

The package: `config` (SACConfig, SACHParams, SACState, PRESETS, target entropies), `networks`
(actors, twin critics and how they are applied), `loss` (the critic, actor and temperature
losses as importable pure functions), `agent` (the update steps, the agent's functions and the
factory).
"""

from __future__ import annotations

from marljax.agents.sac.agent import agent_order, hasac, make_sac, masac
from marljax.agents.sac.config import (
    LOG_STD_MAX,
    LOG_STD_MIN,
    PRESETS,
    SACConfig,
    SACHParams,
    SACState,
    check_target_entropy,
    preset,
    target_entropy,
)
from marljax.agents.sac.loss import (
    discrete_actor_loss,
    gaussian_actor_loss,
    n_step_transitions,
    soft_td_target,
    temperature_loss,
    twin_critic_loss,
)
from marljax.agents.sac.networks import SACModel, SACNetworks, make_sac_model, make_sac_networks

__all__ = [
    "LOG_STD_MAX",
    "LOG_STD_MIN",
    "PRESETS",
    "SACConfig",
    "SACHParams",
    "SACModel",
    "SACNetworks",
    "SACState",
    "agent_order",
    "check_target_entropy",
    "discrete_actor_loss",
    "gaussian_actor_loss",
    "hasac",
    "make_sac",
    "make_sac_model",
    "make_sac_networks",
    "masac",
    "n_step_transitions",
    "preset",
    "soft_td_target",
    "target_entropy",
    "temperature_loss",
    "twin_critic_loss",
]
