"""Static configuration (`COMAConfig`), traced hyperparameters (`COMAHParams`), training state
and published presets of COMA."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
from flax import struct

from marljax.agents import common
from marljax.agents.presets import Preset
from marljax.core.config import check_ranges, param
from marljax.nn.qvalues import TARGETS

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class COMAConfig:
    """Static structure of a COMA agent (shapes and loop lengths; not traced).

    Attributes:
      parameter_mode: the actors' "shared", "shared_id" (shared + one-hot agent id) or
        "independent" parameters (the critic is one network with the agent id as input).
      hidden_sizes: widths of the actor MLP.
      activation: actor activation.
      critic_hidden: widths of the critic MLP (PyMARL's COMA critic: 128, 128).
      critic_steps: critic gradient steps on each rollout before the actor's step.
      target_update_interval: critic gradient steps between copies of the target critic.
      target: the critic's return target: "lambda" (TD(lambda), the paper), "n_step" or
        "one_step".
      n_steps: n of the n-step target.
      optimizer: "adam", "rmsprop" or "radam" (actor and critic).
    """

    parameter_mode: str = param(
        "shared_id", help='"shared", "shared_id" (shared + one-hot agent id) or "independent".'
    )
    hidden_sizes: tuple[int, ...] = param((64,), help="widths of the actor MLP.")
    activation: str = param("relu", help="actor activation.")
    critic_hidden: tuple[int, ...] = param((128, 128), help="widths of the critic MLP.")
    critic_steps: int = param(1, lo=1, help="critic gradient steps per rollout.")
    target_update_interval: int = param(
        200, lo=1, help="critic gradient steps between target-critic copies."
    )
    target: str = param("lambda", help='"lambda" (TD(lambda)), "n_step" or "one_step".')
    n_steps: int = param(5, lo=1, help="n of the n-step target.")
    optimizer: str = param("adam", help='"adam", "rmsprop" or "radam".')

    def __post_init__(self):
        common.check_parameter_mode(self.parameter_mode)
        common.check_choice("COMAConfig.target", self.target, TARGETS)
        common.check_choice("COMAConfig.optimizer", self.optimizer, ("adam", "rmsprop", "radam"))
        check_ranges(self, "COMAConfig")
        for name in ("hidden_sizes", "critic_hidden"):
            widths = getattr(self, name)
            if not widths or any(int(h) < 1 for h in widths):
                raise ValueError(f"COMAConfig.{name} must be positive widths, got {widths}")


@struct.dataclass
class COMAHParams:
    """Traced hyperparameters of COMA (each may be swept with `vmap`).

    Attributes:
      lr: actor learning rate.
      critic_lr: critic learning rate.
      gamma: discount.
      td_lambda: lambda of the critic's TD(lambda) target.
      ent_coef: weight of the actor's entropy bonus.
      max_grad_norm: global gradient-norm clip (each of actor and critic).
      reward_scale: multiplies the team reward.
      opt_eps: optimiser epsilon.
      rmsprop_decay: RMSprop's squared-gradient decay.
    """

    lr: Any = param(5e-4, lo=0.0, lo_open=True, help="actor learning rate.")
    critic_lr: Any = param(5e-4, lo=0.0, lo_open=True, help="critic learning rate.")
    gamma: Any = param(0.99, lo=0.0, hi=1.0, help="discount.")
    td_lambda: Any = param(0.8, lo=0.0, hi=1.0, help="lambda of the critic's TD(lambda) target.")
    ent_coef: Any = param(0.01, lo=0.0, help="weight of the actor's entropy bonus.")
    max_grad_norm: Any = param(10.0, lo=0.0, lo_open=True, help="global gradient-norm clip.")
    reward_scale: Any = param(1.0, help="multiplies the team reward.")
    opt_eps: Any = param(1e-8, lo=0.0, lo_open=True, help="optimiser epsilon.")
    rmsprop_decay: Any = param(0.99, lo=0.0, hi=1.0, help="RMSprop's squared-gradient decay.")


@struct.dataclass
class COMAState:
    """Everything that changes while training (all leaves are arrays; checkpointable)."""

    actor_params: Any  # [A, ...] leading axis when independent
    critic_params: Any
    target_critic_params: Any
    actor_opt_state: Any
    critic_opt_state: Any
    grad_steps: Array  # [] int32 critic gradient steps taken
    num_updates: Array  # [] int32


#: named published configurations of COMA
PRESETS: dict[str, Preset] = {
    "pymarl": Preset(
        "pymarl",
        dict(
            critic_hidden=(128, 128),
            target="lambda",
            target_update_interval=200,
            optimizer="rmsprop",
            hidden_sizes=(64,),
        ),  # fmt: skip
        dict(
            lr=5e-4,
            critic_lr=5e-4,
            td_lambda=0.8,
            gamma=0.99,
            ent_coef=0.0,
            max_grad_norm=10.0,
            opt_eps=1e-5,
            rmsprop_decay=0.99,
        ),  # fmt: skip
        "PyMARL (Samvelyan et al. 2019) src/config/algs/coma.yaml with default.yaml: TD(lambda "
        "= 0.8) critic, RMSprop lr 5e-4 for actor and critic, target critic copied every 200 "
        "critic steps, 8 parallel episodes per batch (num_envs 8). Its GRU actors, "
        "epsilon-floored sampling and per-timestep sequential critic training are not "
        "reproduced: feed-forward actors, one critic step per rollout.",
        train=dict(num_envs=8),
    ),
    "epymarl": Preset(
        "epymarl",
        dict(
            critic_hidden=(128, 128),
            target="n_step",
            n_steps=5,
            target_update_interval=200,
            optimizer="adam",
            hidden_sizes=(64,),
        ),  # fmt: skip
        dict(lr=5e-4, critic_lr=5e-4, gamma=0.99, ent_coef=0.01, max_grad_norm=10.0),
        "EPyMARL (Papoudakis et al. 2021) src/config/algs/coma.yaml: feed-forward actors, "
        "5-step critic targets, entropy 0.01, Adam lr 5e-4, target critic every 200 steps, 10 "
        "parallel episodes (num_envs 10). Its reward standardisation is not reproduced (use "
        "reward_scale). The marljax defaults, except TD(lambda = 0.8) targets.",
        train=dict(num_envs=10),
    ),
}


__all__ = ["PRESETS", "COMAConfig", "COMAHParams", "COMAState"]
