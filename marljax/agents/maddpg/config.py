"""Static configuration, traced hyperparameters, training state and published presets of MADDPG."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
from flax import struct

from marljax.agents import common
from marljax.agents.presets import Preset, lookup
from marljax.core.config import check_ranges, param
from marljax.nn.replay import ReplayState

Array = jax.Array

CRITIC_INPUTS = ("state", "obs")


@dataclasses.dataclass(frozen=True)
class MADDPGConfig:
    """Static structure of the MADDPG learner (shapes, loop lengths, switches).

    Attributes:
      parameter_mode: "independent" (one actor and one critic per agent, stacked `[A, ...]`, as
        in the paper), "shared" or "shared_id" (one actor; one critic that sees the agent's
        one-hot id, so that it can tell the agents' rewards apart).
      critic_input: what the centralised critics see besides the joint action: "state" (the
        env's `global_state`) or "obs" (all agents' observations concatenated, the paper's
        `x = (o_1, ..., o_A)`).
      hidden_sizes: widths of the actor and critic MLPs.
      activation: MLP activation.
      warmup_steps: environment steps with uniform random actions; learning starts after them.
      utd_ratio: gradient steps per vectorised environment step; an update of a rollout of `T`
        steps takes `max(1, round(utd_ratio * T))` steps.
      buffer_size: replay capacity in transitions.
      batch_size: transitions per gradient step (at most `buffer_size`).
    """

    parameter_mode: str = param(
        "independent", help='"independent" (stacked [A, ...]), "shared" or "shared_id".'
    )
    critic_input: str = param(
        "state", help='"state" (global_state) or "obs" (all observations) besides the actions.'
    )
    hidden_sizes: tuple[int, ...] = param((64, 64), help="widths of the actor and critic MLPs.")
    activation: str = param("relu", help="MLP activation.")
    warmup_steps: int = param(
        1000, lo=0, help="environment steps with uniform random actions before learning."
    )
    utd_ratio: float = param(
        1.0, lo=0.0, lo_open=True, help="gradient steps per vectorised environment step."
    )
    buffer_size: int = param(100_000, lo=1, help="replay capacity in transitions.", split=True)
    batch_size: int = param(
        1024, lo=1, help="transitions per gradient step (at most buffer_size).", split=True
    )

    def __post_init__(self):
        common.check_parameter_mode(self.parameter_mode)
        common.check_choice("MADDPGConfig.critic_input", self.critic_input, CRITIC_INPUTS)
        check_ranges(self, "MADDPGConfig")
        if not self.hidden_sizes or any(int(h) < 1 for h in self.hidden_sizes):
            raise ValueError(
                f"MADDPGConfig.hidden_sizes must be positive widths, got {self.hidden_sizes}"
            )
        if self.batch_size > self.buffer_size:
            raise ValueError(
                f"MADDPGConfig.batch_size = {self.batch_size} is larger than the replay buffer "
                f"(buffer_size = {self.buffer_size}): raise buffer_size or lower batch_size"
            )


@struct.dataclass
class MADDPGHParams:
    """Traced hyperparameters of MADDPG (each may be swept with `vmap`).

    Exploration noise is Gaussian with a standard deviation in the unit box `[-1, 1]` of the
    actions (where the tanh acts), annealed linearly from `noise_start` to `noise_finish` over
    `noise_anneal_steps` environment steps; for an env box of width `w` per dimension the noise
    in env units is `w / 2` times larger.

    Attributes:
      actor_lr, critic_lr: Adam learning rates.
      gamma: discount.
      tau: Polyak rate of the target actors and critics (per gradient step).
      max_grad_norm: global gradient-norm clip (per agent in the independent mode).
      actor_reg: weight of the penalty `mean(u^2)` on the actor's pre-tanh outputs `u`.
      noise_start, noise_finish, noise_anneal_steps: the exploration noise schedule.
      reward_scale: multiplies the agents' rewards.
      adam_eps: Adam's epsilon.
    """

    actor_lr: Any = param(1e-2, lo=0.0, lo_open=True, help="Adam learning rate of the actors.")
    critic_lr: Any = param(1e-2, lo=0.0, lo_open=True, help="Adam learning rate of the critics.")
    gamma: Any = param(0.95, lo=0.0, hi=1.0, help="discount.")
    tau: Any = param(
        0.01, lo=0.0, hi=1.0, help="Polyak rate of the target actors and critics (per step)."
    )
    max_grad_norm: Any = param(
        0.5, lo=0.0, lo_open=True, help="global gradient-norm clip (per agent if independent)."
    )
    actor_reg: Any = param(1e-3, lo=0.0, help="weight of mean(u^2) on the pre-tanh actions u.")
    noise_start: Any = param(0.1, lo=0.0, help="initial exploration noise std (unit box [-1, 1]).")
    noise_finish: Any = param(0.1, lo=0.0, help="final exploration noise std (unit box).")
    noise_anneal_steps: Any = param(
        1.0, lo=0.0, help="environment steps over which the noise goes from start to finish."
    )
    reward_scale: Any = param(1.0, help="multiplies the agents' rewards.")
    adam_eps: Any = param(1e-8, lo=0.0, lo_open=True, help="Adam's epsilon.")


@struct.dataclass
class MADDPGState:
    """Everything that changes while training (all leaves are arrays; checkpointable)."""

    actor_params: Any  # leading [A] axis in the independent mode
    critic_params: Any  # leading [A] axis in the independent mode
    target_actor_params: Any
    target_critic_params: Any
    actor_opt_state: Any
    critic_opt_state: Any
    replay: ReplayState  # leaves [C, ...], one transition per item
    env_steps: Array  # [] int32
    grad_steps: Array  # [] int32
    num_updates: Array  # [] int32


#: named published configurations (`marljax.agents.presets.Preset`)
PRESETS: dict[str, Preset] = {
    "maddpg_paper": Preset(
        "maddpg_paper",
        {
            "parameter_mode": "independent",
            "critic_input": "obs",
            "hidden_sizes": (64, 64),
            "batch_size": 1024,
            "buffer_size": 1_000_000,
            "warmup_steps": 25_600,
            "utd_ratio": 0.01,
        },
        dict(
            actor_lr=1e-2,
            critic_lr=1e-2,
            gamma=0.95,
            tau=0.01,
            max_grad_norm=0.5,
            actor_reg=1e-3,
        ),
        "Lowe et al. 2017 (appendix: Adam lr 1e-2, gamma 0.95, tau 0.01, batch 1024, 2x64 ReLU "
        "MLPs) and its code openai/maddpg (experiments/train.py, maddpg/trainer/maddpg.py: "
        "gradient-norm clip 0.5, actor penalty 1e-3 * mean(u^2), 1M buffer, learning from "
        "batch x 25 = 25,600 transitions, one gradient step per 100 env steps of one env). "
        "Here 4 envs x 25 steps per update and one gradient step per update keep that ratio. "
        "Not reproduced: the code's actors sample from a Gaussian head; here they are "
        "deterministic with additive Gaussian noise (noise_* hparams, std 0.1).",
        train={"num_envs": 4, "rollout_len": 25},
    ),
    "benchmarl": Preset(
        "benchmarl",
        {
            "parameter_mode": "shared",
            "critic_input": "state",
            "hidden_sizes": (256, 256),
            "activation": "tanh",
            "batch_size": 128,
            "buffer_size": 1_000_000,
            "warmup_steps": 0,
        },
        dict(
            actor_lr=5e-5,
            critic_lr=5e-5,
            gamma=0.99,
            tau=0.005,
            max_grad_norm=5.0,
            actor_reg=0.0,
            adam_eps=1e-6,
            noise_start=0.8,
            noise_finish=0.01,
            noise_anneal_steps=1_000_000.0,
        ),
        "BenchMARL (Bettini et al. 2024) benchmarl/conf/algorithm/maddpg.yaml and "
        "conf/experiment/base_experiment.yaml: shared actor and critic, tanh to the action box, "
        "l2 loss, Adam lr 5e-5 (eps 1e-6), grad-norm clip 5, Polyak 0.005, gamma 0.99, batch "
        "128, 1M buffer, additive Gaussian noise annealed 0.8 -> 0.01 over max_n_frames / 3 "
        "(1M of 3M frames; noise in its box units, VMAS's [-1, 1]); conf/model/layers/mlp.yaml: "
        "256x256 Tanh MLPs. Not reproduced: its 1000 gradient steps per 6000 collected frames "
        "(set utd_ratio for your env count: 1000 / (6000 / E) per vectorised step).",
    ),
}


def preset(name: str) -> tuple[dict[str, Any], MADDPGHParams]:
    """A published configuration: `(MADDPGConfig overrides, MADDPGHParams)`; see `PRESETS`."""
    p = lookup(PRESETS, name, "MADDPG")
    return dict(p.config), MADDPGHParams(**p.hparams)


__all__ = ["CRITIC_INPUTS", "PRESETS", "MADDPGConfig", "MADDPGHParams", "MADDPGState", "preset"]
