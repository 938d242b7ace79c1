"""Static configuration, traced hyperparameters, training state, target entropies and published
presets of HASAC / MASAC."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import numpy as np
from flax import struct

from marljax.agents import common
from marljax.agents.presets import Preset, lookup
from marljax.core.config import check_ranges, param
from marljax.nn import losses
from marljax.nn.replay import ReplayState

Array = jax.Array

#: log-std bounds of the Gaussian policy head (Haarnoja et al. 2018's reference implementation).
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


@dataclasses.dataclass(frozen=True)
class SACConfig:
    """Static structure of the HASAC / MASAC learner (shapes, loop lengths, switches).

    Attributes:
      sequential: True: HASAC's sequential heterogeneous-agent update; False: MASAC.
      fixed_order: update agents in the order 0..A-1 instead of a fresh random permutation.
      parameter_mode: "independent" (stacked `[A, ...]`), "shared" or "shared_id".
      action_type: "auto" (from the env's action space), "discrete" or "continuous"; a value
        that contradicts the env raises a `ValueError` when the agent is built.
      hidden_sizes: widths of the actor and critic MLPs.
      activation: MLP activation.
      n_step: length of the n-step return window.
      critic_loss: "huber" (delta `hparams.huber_delta`) or "mse" (`0.5 * td^2`).
      value_norm: learn the critic in a running standardised scale of the targets (ValueNorm).
      auto_alpha: tune each agent's temperature towards the target entropy.
      target_entropy: override of the target entropy (None: `-dim(A)` continuous,
        `hparams.target_entropy_scale * log(N)` discrete). Must be negative for continuous
        actions and in `(0, log N]` for discrete ones.
      used_entries_only: continuous actions: where the env declares which entries of each
        agent's action box it reads (`env.action_entries_used`, `[A, D]` bool), count only those
        in the log-probabilities and the default target entropy (`-(used entries)` per agent)
        and give the critic zeros for the others. Off by default (HARL counts every entry).
      warmup_steps: environment steps with uniform random actions; learning starts after them.
      utd_ratio: gradient steps per vectorised environment step (HARL's `update_per_train`);
        an update of a rollout of `T` steps takes `max(1, round(utd_ratio * T))` steps.
      policy_delay: actor and temperature updated every `policy_delay` gradient steps (TD3).
      buffer_size: replay capacity in transitions.
      batch_size: transitions per gradient step (at most `buffer_size`).
    """

    sequential: bool = param(
        True, help="True: HASAC's sequential heterogeneous-agent update; False: MASAC."
    )
    fixed_order: bool = param(
        False, help="update agents in the order 0..A-1 instead of a random permutation."
    )
    parameter_mode: str = param(
        "independent", help='"independent" (stacked [A, ...]), "shared" or "shared_id".'
    )
    action_type: str = param(
        "auto", help='"auto" (from the env\'s action space), "discrete" or "continuous".'
    )
    hidden_sizes: tuple[int, ...] = param((256, 256), help="widths of the actor and critic MLPs.")
    activation: str = param("relu", help="MLP activation.")
    n_step: int = param(20, lo=1, help="length of the n-step return window.")
    critic_loss: str = param(
        "huber", help='"huber" (delta hparams.huber_delta) or "mse" (0.5 * td^2).'
    )
    value_norm: bool = param(
        True, help="learn the critic in a running standardised scale of the targets."
    )
    auto_alpha: bool = param(
        False, help="tune each agent's temperature towards the target entropy."
    )
    target_entropy: float | None = param(
        None,
        help="override of the target entropy (None: -dim(A) continuous, scaled log N discrete).",
    )
    used_entries_only: bool = param(
        False,
        help="count only the action entries the env reads (env.action_entries_used) in the "
        "log-probs and target entropy.",
    )
    warmup_steps: int = param(
        10_000, lo=0, help="environment steps with uniform random actions before learning."
    )
    utd_ratio: float = param(
        1.0, lo=0.0, lo_open=True, help="gradient steps per vectorised environment step."
    )
    policy_delay: int = param(
        1, lo=1, help="actor and temperature updated every policy_delay gradient steps (TD3)."
    )
    buffer_size: int = param(100_000, lo=1, help="replay capacity in transitions.", split=True)
    batch_size: int = param(
        1000, lo=1, help="transitions per gradient step (at most buffer_size).", split=True
    )

    def __post_init__(self):
        if isinstance(self.target_entropy, str):  # from the CLI / YAML: "none", "null" or a number
            text = self.target_entropy.strip().lower()
            try:
                value = None if text in ("none", "null", "") else float(text)
            except ValueError:
                raise ValueError(
                    f"SACConfig.target_entropy must be a number or none, got {self.target_entropy!r}"
                ) from None
            object.__setattr__(self, "target_entropy", value)
        if self.target_entropy is not None:
            value = self.target_entropy
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
                raise ValueError(
                    f"SACConfig.target_entropy must be a number or none, got {value!r}"
                )
            if not math.isfinite(float(value)):
                raise ValueError(f"SACConfig.target_entropy must be finite, got {value!r}")
            object.__setattr__(self, "target_entropy", float(value))
        common.check_parameter_mode(self.parameter_mode)
        _choice("action_type", self.action_type, ("auto", "discrete", "continuous"))
        _choice("critic_loss", self.critic_loss, ("huber", "mse"))
        check_ranges(self, "SACConfig")
        if not self.hidden_sizes or any(int(h) < 1 for h in self.hidden_sizes):
            raise ValueError(
                f"SACConfig.hidden_sizes must be positive widths, got {self.hidden_sizes}"
            )
        if self.batch_size > self.buffer_size:
            raise ValueError(
                f"SACConfig.batch_size = {self.batch_size} is larger than the replay buffer "
                f"(buffer_size = {self.buffer_size}): raise buffer_size or lower batch_size"
            )


@struct.dataclass
class SACHParams:
    """Traced hyperparameters of HASAC / MASAC (each may be swept with `vmap`).

    Attributes:
      actor_lr, critic_lr, alpha_lr: Adam learning rates.
      gamma: discount.
      tau: Polyak rate of the target critics (per gradient step).
      init_alpha: initial temperature (the fixed one when `auto_alpha=False`).
      target_entropy_scale: discrete target entropy as a fraction of `log(N)`.
      huber_delta: Huber threshold of the critic loss.
      max_grad_norm: global gradient-norm clip of actor and critic steps (per agent for actors).
      reward_scale: multiplies the team reward (the mean of the agents' rewards).
    """

    actor_lr: Any = param(5e-4, lo=0.0, lo_open=True, help="Adam learning rate of the actors.")
    critic_lr: Any = param(5e-4, lo=0.0, lo_open=True, help="Adam learning rate of the critics.")
    alpha_lr: Any = param(
        3e-4, lo=0.0, lo_open=True, help="Adam learning rate of the temperatures."
    )
    gamma: Any = param(0.99, lo=0.0, hi=1.0, help="discount.")
    tau: Any = param(
        0.005, lo=0.0, hi=1.0, help="Polyak rate of the target critics (per gradient step)."
    )
    init_alpha: Any = param(
        1e-3, lo=0.0, lo_open=True, help="initial temperature (the fixed one without auto_alpha)."
    )
    target_entropy_scale: Any = param(0.98, help="discrete target entropy as a fraction of log(N).")
    huber_delta: Any = param(10.0, lo=0.0, lo_open=True, help="Huber threshold of the critic loss.")
    max_grad_norm: Any = param(
        10.0, lo=0.0, lo_open=True, help="global gradient-norm clip (per agent for actors)."
    )
    reward_scale: Any = param(
        1.0, help="multiplies the team reward (the mean of the agents' rewards)."
    )


@struct.dataclass
class SACState:
    """Everything that changes while training (all leaves are arrays; checkpointable)."""

    actor_params: Any  # leading [A] axis in the independent mode
    critic_params: Any  # leading [2] axis: the twin critics
    target_critic_params: Any
    actor_opt_state: Any  # leading [A] axis in the independent mode
    critic_opt_state: Any
    log_alpha: Array  # [A]
    alpha_opt_state: Any
    value_norm: losses.RunningMeanStd  # [] statistics of the critic targets
    replay: ReplayState  # leaves [C, ...], one transition per item
    env_steps: Array  # [] int32
    grad_steps: Array  # [] int32
    num_updates: Array  # [] int32


#: named published configurations (`marljax.agents.presets.Preset`). Only `harl_masac` sets
#: `sequential` (to False: MASAC); the others leave the update order to the algorithm (hasac:
#: sequential, masac: simultaneous), so no preset turns HASAC into MASAC.
PRESETS: dict[str, Preset] = {
    "harl": Preset(
        "harl",
        {"buffer_size": 1_000_000},
        {},
        "HARL harl/configs/algos_cfgs/hasac.yaml (Liu et al. 2024): the marljax defaults with "
        "the published 1M-transition buffer.",
    ),
    "harl_masac": Preset(
        "harl_masac",
        {"sequential": False, "buffer_size": 1_000_000},
        {},
        "HARL harl/configs/algos_cfgs/hasac.yaml (Liu et al. 2024) with the simultaneous update "
        "(MASAC), the paper's ablation; the same as `harl` under the masac algorithm.",
    ),
    "harl_mpe": Preset(
        "harl_mpe",
        {
            "auto_alpha": True,
            "critic_loss": "mse",
            "value_norm": False,
            "buffer_size": 1_000_000,
        },
        dict(init_alpha=1.0, max_grad_norm=1e9),
        "HARL tuned_configs/pettingzoo_mpe/simple_spread_v2-continuous/hasac/config.json (Liu "
        "et al. 2024): hasac.yaml but with a learned temperature (HARL starts log alpha at 0, "
        "i.e. alpha = 1; its 'alpha: 0.2' is unused when auto_alpha is on), MSE critic loss, no "
        "ValueNorm; HARL clips no gradients. Its 20 envs x 1 gradient step per vector step is "
        "0.05 gradient steps per transition: with E envs use utd_ratio = E / 20 for that ratio.",
    ),
    "sac_v2": Preset(
        "sac_v2",
        {
            "n_step": 1,
            "critic_loss": "mse",
            "value_norm": False,
            "auto_alpha": True,
            "batch_size": 256,
            "buffer_size": 1_000_000,
        },
        dict(actor_lr=3e-4, critic_lr=3e-4, alpha_lr=3e-4, init_alpha=1.0, max_grad_norm=1e9),
        "Haarnoja et al. 2018b, 'Soft Actor-Critic Algorithms and Applications', table 1: Adam "
        "3e-4, batch 256, 1M buffer, tau 0.005, gamma 0.99, learned temperature, 1-step targets.",
    ),
}


def preset(name: str) -> tuple[dict[str, Any], SACHParams]:
    """A published configuration: `(SACConfig overrides, SACHParams)`; see `PRESETS`."""
    p = lookup(PRESETS, name, "HASAC / MASAC")
    return dict(p.config), SACHParams(**p.hparams)


def _choice(name: str, value: Any, choices: tuple) -> None:
    common.check_choice(f"SACConfig.{name}", value, choices)


def target_entropy(
    config: SACConfig, discrete: bool, act_dim: int, scale: Array | float = 0.98
) -> Array | float:
    """Target entropy per agent: the override, `-dim(A)` (continuous) or `scale * log(N)`.

    `act_dim` may be an `[A]` array of the entries each agent uses (continuous actions with
    `used_entries_only`): the target is then `[A]`.
    """
    if config.target_entropy is not None:
        return float(config.target_entropy)
    if discrete:
        return scale * math.log(act_dim)
    return -1.0 * act_dim


def check_target_entropy(config: SACConfig, discrete: bool, act_dim: int) -> None:
    value = config.target_entropy
    if value is None:
        return
    if discrete and not 0.0 < value <= math.log(act_dim) + 1e-9:
        raise ValueError(
            f"SACConfig.target_entropy = {value} is invalid for discrete actions: an entropy over "
            f"{act_dim} actions lies in (0, log {act_dim} = {math.log(act_dim):.3f}]; a negative "
            "target (the continuous convention -dim(A)) never binds and drives the temperature "
            "to zero. Leave it None to use target_entropy_scale * log(N)."
        )
    if not discrete and value >= 0.0:
        raise ValueError(
            f"SACConfig.target_entropy = {value} has the wrong sign for continuous actions: the "
            f"convention is negative, -dim(A) = {-act_dim} (Haarnoja et al. 2018b); leave it "
            "None for that default."
        )


__all__ = [
    "LOG_STD_MAX",
    "LOG_STD_MIN",
    "PRESETS",
    "SACConfig",
    "SACHParams",
    "SACState",
    "check_target_entropy",
    "preset",
    "target_entropy",
]
