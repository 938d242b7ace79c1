"""PPO for many agents: IPPO and MAPPO as ONE implementation with a critic-input switch.

- Decentralised actors: each agent's policy sees only its own observation (plus a one-hot agent
  id in the `shared_id` parameter mode).
- Critic input: `"local"` (own observation: IPPO, de Witt et al. 2020) or `"global"` (the
  environment's global state: MAPPO, Yu et al. 2022).
- Parameter modes: `shared`, `shared_id` (shared + one-hot agent id) and `independent` (one
  parameter pytree with a leading agent axis, applied with `vmap`).
- Policy heads (`marljax.agents.heads`): masked categorical, diagonal Gaussian, tanh-Gaussian
  rescaled to the action box; greedy acting (`act(..., greedy=True)`) takes the head's mode.
- Networks are arguments (`PPONetworks`): by default an MLP for vector observations and a small
  CNN (`marljax.nn.networks.GridEncoder`) for grid observations; feed-forward or GRU through
  `marljax.nn.networks.RecurrentCore` (carry reset at episode starts); recurrent training replays
  whole rollout sequences, minibatched over environments.
- GAE that bootstraps through truncation but not termination (`marljax.nn.losses.gae`), optional
  advantage normalisation, optional value normalisation (running mean/std, MAPPO's ValueNorm),
  optional clipped value loss; the total loss is the importable `ppo_loss`.
- BN-MAPPO (`graph != "none"`, discrete feed-forward policies): PPO with the Bayesian-network
  joint policy of `marljax.agents.bn` (Chen et al. 2023) as its head. With the empty graph it
  gives exactly MAPPO's numbers.
- IA2C / MAA2C: PPO with `A2C_OVERRIDES` (one epoch, one minibatch, raw advantages, no value
  clipping), which is exactly A2C (Huang et al. 2022).

Modules: `config` (PPOConfig, PPOHParams, state), `networks` (PPONetworks, defaults, checks),
`loss` (ppo_loss) and `agent` (the factory `make_ppo` and the pure functions it wires).
"""

from marljax.agents.ppo.agent import PPOParts, ia2c, ippo, maa2c, make_ppo, mappo
from marljax.agents.ppo.config import (
    A2C_OVERRIDES,
    GRAPHS,
    TORSOS,
    CriticInput,
    ParameterMode,
    PPOCarry,
    PPOConfig,
    PPOHParams,
    PPOState,
    Torso,
)
from marljax.agents.ppo.loss import ppo_loss
from marljax.agents.ppo.networks import PPONetworks, default_networks

__all__ = [
    "A2C_OVERRIDES",
    "GRAPHS",
    "TORSOS",
    "CriticInput",
    "ParameterMode",
    "PPOCarry",
    "PPOConfig",
    "PPOHParams",
    "PPONetworks",
    "PPOParts",
    "PPOState",
    "Torso",
    "default_networks",
    "ia2c",
    "ippo",
    "maa2c",
    "make_ppo",
    "mappo",
    "ppo_loss",
]
