"""Static configuration (`PQNConfig`), traced hyperparameters (`PQNHParams`), training state and
published presets of PQN-VDN."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
from flax import struct

from marljax.agents import common
from marljax.agents.presets import Preset
from marljax.core.config import check_ranges, param
from marljax.nn.qvalues import TEAM_REWARDS

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class PQNConfig:
    """Static structure of PQN-VDN (shapes and loop lengths; not traced).

    The defaults follow JaxMARL's `pqn_vdn_ff_mpe.yaml`.

    Attributes:
      parameter_mode: "shared", "shared_id" (shared + one-hot agent id) or "independent".
      hidden_sizes: widths of the Q-network's hidden layers.
      activation: hidden activation.
      layer_norm: normalise every hidden layer (what keeps PQN's TD learning stable without a
        target network).
      num_epochs: passes over each rollout.
      num_minibatches: minibatches per epoch (over the rollout's `T * E` steps).
      optimizer: "radam", "adam" or "rmsprop".
      team_reward: the team reward of per-agent rewards, "mean" or "sum".
    """

    parameter_mode: str = param(
        "shared_id", help='"shared", "shared_id" (shared + one-hot agent id) or "independent".'
    )
    hidden_sizes: tuple[int, ...] = param((256, 256), help="widths of the Q-network's layers.")
    activation: str = param("relu", help="hidden activation.")
    layer_norm: bool = param(True, help="normalise every hidden layer (LayerNorm).")
    num_epochs: int = param(4, lo=1, help="passes over each rollout.")
    num_minibatches: int = param(16, lo=1, help="minibatches per epoch (over T * E steps).")
    optimizer: str = param("radam", help='"radam", "adam" or "rmsprop".')
    team_reward: str = param("mean", help='the team reward: "mean" or "sum" of the rewards.')

    def __post_init__(self):
        common.check_parameter_mode(self.parameter_mode)
        common.check_choice("PQNConfig.optimizer", self.optimizer, ("adam", "rmsprop", "radam"))
        common.check_choice("PQNConfig.team_reward", self.team_reward, TEAM_REWARDS)
        check_ranges(self, "PQNConfig")
        if not self.hidden_sizes or any(int(h) < 1 for h in self.hidden_sizes):
            raise ValueError(
                f"PQNConfig.hidden_sizes must be positive widths, got {self.hidden_sizes}"
            )


@struct.dataclass
class PQNHParams:
    """Traced hyperparameters of PQN-VDN (each may be swept with `vmap`).

    Attributes:
      lr: learning rate.
      gamma: discount.
      td_lambda: lambda of the Q(lambda) targets.
      eps_start, eps_finish: epsilon-greedy endpoints.
      eps_anneal_steps: environment steps over which epsilon goes linearly from start to finish.
      max_grad_norm: global gradient-norm clip.
      reward_scale: multiplies the team reward.
      opt_eps: optimiser epsilon.
      rmsprop_decay: RMSprop's squared-gradient decay.
    """

    lr: Any = param(5e-4, lo=0.0, lo_open=True, help="learning rate.")
    gamma: Any = param(0.9, lo=0.0, hi=1.0, help="discount.")
    td_lambda: Any = param(0.3, lo=0.0, hi=1.0, help="lambda of the Q(lambda) targets.")
    eps_start: Any = param(1.0, lo=0.0, hi=1.0, help="epsilon-greedy start value.")
    eps_finish: Any = param(0.1, lo=0.0, hi=1.0, help="epsilon-greedy final value.")
    eps_anneal_steps: Any = param(
        200_000.0, lo=0.0, help="environment steps over which epsilon goes from start to finish."
    )
    max_grad_norm: Any = param(1.0, lo=0.0, lo_open=True, help="global gradient-norm clip.")
    reward_scale: Any = param(1.0, help="multiplies the team reward.")
    opt_eps: Any = param(1e-8, lo=0.0, lo_open=True, help="optimiser epsilon.")
    rmsprop_decay: Any = param(0.99, lo=0.0, hi=1.0, help="RMSprop's squared-gradient decay.")


@struct.dataclass
class PQNState:
    """Everything that changes while training (all leaves are arrays; checkpointable)."""

    params: Any  # Q-network; [A, ...] leading axis when independent
    opt_state: Any
    env_steps: Array  # [] int32 environment steps collected
    num_updates: Array  # [] int32


#: named published configurations of PQN-VDN
PRESETS: dict[str, Preset] = {
    "jaxmarl": Preset(
        "jaxmarl",
        dict(
            hidden_sizes=(256, 256),
            layer_norm=True,
            num_epochs=4,
            num_minibatches=16,
            optimizer="radam",
            parameter_mode="shared_id",
            team_reward="sum",
        ),  # fmt: skip
        dict(
            lr=5e-4,
            gamma=0.9,
            td_lambda=0.3,
            eps_start=1.0,
            eps_finish=0.1,
            eps_anneal_steps=200_000.0,
            max_grad_norm=1.0,
        ),  # fmt: skip
        "JaxMARL (Rutherford et al. 2024) baselines/QLearning/config/alg/pqn_vdn_ff_mpe.yaml: "
        "256 envs x 16 steps, 2M steps, 2x256 layer-normalised ReLU layers, RAdam lr 5e-4, "
        "grad clip 1, gamma 0.9, lambda 0.3, epsilon 1 -> 0.1 over 10% of the run, 4 epochs "
        "of 16 minibatches. Its targets treat time limits as terminal; ours bootstrap there.",
        train=dict(num_envs=256, rollout_len=16, total_env_steps=2_000_000),
    ),
}


__all__ = ["PRESETS", "PQNConfig", "PQNHParams", "PQNState"]
