"""Static configuration, traced hyperparameters, state and published presets of HAPPO / HATRPO.

HAPPO's networks, rollout batch, GAE and critic are MAPPO's (`marljax.agents.ppo`), so
`HAPPOConfig` is a `PPOConfig` with the sequential update's fields added and `HAPPOHParams` a
`PPOHParams` with the trust-region step's. The critic is one centralised `V(s)` for all agents.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
from flax import struct

from marljax.agents import common
from marljax.agents.ppo.config import PPOConfig, PPOHParams
from marljax.agents.presets import Preset
from marljax.core.config import param
from marljax.nn import losses

Array = jax.Array

#: "ppo": HAPPO's clipped step; "trpo": HATRPO's KL-constrained natural-gradient step
ACTOR_UPDATES = ("ppo", "trpo")


@dataclasses.dataclass(frozen=True)
class HAPPOConfig(PPOConfig):
    """Static structure of HAPPO / HATRPO (a `PPOConfig`; see it for the shared fields).

    Attributes:
      parameter_mode: the actors' mode; "independent" (one actor per agent, HARL's default
        `share_param: False`) by default. The critic is always one shared `V(s)`.
      actor_update: "ppo" (HAPPO: `num_epochs` x `num_minibatches` clipped steps per agent) or
        "trpo" (HATRPO: one KL-constrained natural-gradient step per agent on the whole batch).
      fixed_order: update the agents in index order instead of a fresh random permutation.
      cg_iters: HATRPO's conjugate-gradient iterations (HARL's `nsteps`).
      line_search_steps: HATRPO's backtracking line-search steps (HARL's `ls_step`).
    """

    parameter_mode: str = param(
        "independent", help='the actors\': "independent", "shared" or "shared_id".'
    )
    actor_update: str = param(
        "ppo", help='"ppo" (HAPPO, clipped surrogate) or "trpo" (HATRPO, trust-region step).'
    )
    fixed_order: bool = param(
        False, help="update agents in index order instead of a random permutation."
    )
    cg_iters: int = param(10, lo=1, help="HATRPO: conjugate-gradient iterations.")
    line_search_steps: int = param(10, lo=1, help="HATRPO: backtracking line-search steps.")

    def __post_init__(self):
        super().__post_init__()
        common.check_choice("HAPPOConfig.actor_update", self.actor_update, ACTOR_UPDATES)
        if self.critic_input != "global":
            raise ValueError(
                "HAPPOConfig.critic_input must be 'global': HAPPO / HATRPO's critic is the "
                f"centralised V(s), got {self.critic_input!r}"
            )
        if self.uses_graph:
            raise ValueError(
                "HAPPOConfig.graph must be 'none': the sequential update trains independent "
                f"per-agent policies, not a Bayesian-network joint policy (got {self.graph!r})"
            )

    @property
    def algorithm(self) -> str:
        """ "HAPPO" or "HATRPO" (for messages)."""
        return "HATRPO" if self.actor_update == "trpo" else "HAPPO"


@struct.dataclass
class HAPPOHParams(PPOHParams):
    """Traced hyperparameters of HAPPO / HATRPO: `PPOHParams` plus HATRPO's trust region.

    `lr` is the actors' and the critic's learning rate (HARL's `lr` and `critic_lr` are equal in
    its configs); HATRPO's actors take no optimiser step, only the critic uses `lr` there.
    """

    kl_threshold: Any = param(
        0.01, lo=0.0, lo_open=True, help="HATRPO: bound on the mean KL(pi_old || pi) of a step."
    )
    accept_ratio: Any = param(
        0.5, lo=0.0, help="HATRPO: accept a step if improvement / expected improvement > this."
    )
    backtrack_coeff: Any = param(
        0.8, lo=0.0, lo_open=True, hi=1.0, help="HATRPO: line-search shrink factor."
    )
    cg_damping: Any = param(
        0.1, lo=0.0, help="HATRPO: damping added to the Fisher-vector product (HARL: 0.1)."
    )


@struct.dataclass
class HAPPOState:
    """Everything that changes during HAPPO / HATRPO training (all leaves are arrays)."""

    actor_params: Any  # leading [A] axis in the independent mode
    critic_params: Any  # one V(s)
    actor_opt_state: Any  # per agent ([A] leading axis when independent); () for HATRPO
    critic_opt_state: Any
    value_norm: losses.RunningMeanStd  # [] running statistics of returns
    num_updates: Array  # [] int32


_HARL_COMMON = dict(hidden_sizes=(128, 128), activation="relu", value_norm=True)
_HARL_HP = dict(lr=5e-4, adam_eps=1e-5, max_grad_norm=10.0, gamma=0.99, gae_lambda=0.95)
_HARL_TRAIN = dict(num_envs=20, rollout_len=200, total_env_steps=10_000_000)
_NOT_REPRODUCED = (
    "Not reproduced: its Huber value loss (delta 10; squared error here), input feature "
    "normalisation, separate critic epochs/minibatches (the critic shares the actors' here), "
    "and whole-buffer advantage normalisation (per minibatch here)."
)

#: published configurations, by algorithm (`happo`, `hatrpo`) then name
PRESETS: dict[str, dict[str, Preset]] = {
    "happo": {
        "harl": Preset(
            "harl",
            dict(**_HARL_COMMON, num_epochs=5, num_minibatches=1),
            dict(**_HARL_HP, clip_eps=0.2, value_clip_eps=0.2, ent_coef=0.01, vf_coef=1.0),
            "Kuba et al. 2022 (HAPPO, ICLR) and HARL harl/configs/algos_cfgs/happo.yaml: 5 "
            "epochs of 1 minibatch, clip 0.2, entropy 0.01, value-loss weight 1, Adam lr 5e-4 "
            "(eps 1e-5), grad-norm clip 10, ValueNorm, 2x128 ReLU MLPs, 20 envs x 200 steps, "
            "10M steps. " + _NOT_REPRODUCED,
            train=_HARL_TRAIN,
        ),
    },
    "hatrpo": {
        "harl": Preset(
            "harl",
            dict(**_HARL_COMMON, num_epochs=5, num_minibatches=1, line_search_steps=10),
            dict(
                **_HARL_HP,
                value_clip_eps=0.2,
                vf_coef=1.0,
                kl_threshold=0.01,
                accept_ratio=0.5,
                backtrack_coeff=0.8,
            ),  # fmt: skip
            "Kuba et al. 2022 (HATRPO, ICLR) and HARL harl/configs/algos_cfgs/hatrpo.yaml: KL "
            "bound 0.01, 10 line-search steps (shrink 0.8, accept ratio 0.5), 10 CG steps, "
            "critic 5 epochs of 1 minibatch, value clip 0.2, Adam lr 5e-4 (eps 1e-5), grad-norm "
            "clip 10, ValueNorm, 2x128 ReLU MLPs, 20 envs x 200 steps, 10M steps. The KL is the "
            "exact one of the action distributions (HARL's discrete KL is taken on logits). "
            + _NOT_REPRODUCED,
            train=_HARL_TRAIN,
        ),
    },
}


__all__ = ["ACTOR_UPDATES", "PRESETS", "HAPPOConfig", "HAPPOHParams", "HAPPOState"]
