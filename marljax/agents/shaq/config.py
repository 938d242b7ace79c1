"""Static configuration, traced hyperparameters and published presets of SHAQ.

SHAQ is the value-based learner (`marljax.agents.qlearning`) with SHAQ's alpha network in place
of a mixer and SHAQ's loss in place of the mixed TD loss, so `SHAQConfig` is a `QConfig` (every
replay, target and agent-network field applies) with the coalition sample size and the
alpha network's shape added, and the defaults of JaxMARL's `shaq_mpe.yaml`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from flax import struct

from marljax.agents.presets import Preset, lookup
from marljax.agents.qlearning.config import QConfig, QHParams
from marljax.core.config import param


@dataclasses.dataclass(frozen=True)
class SHAQConfig(QConfig):
    """Static structure of SHAQ (a `QConfig`; see it for the shared fields).

    Attributes:
      mixer: always "shaq".
      sample_size: `M`, random orders of the grand coalition sampled per transition to estimate
        `alpha_i` (JaxMARL's `SAMPLE_SIZE: 5`).
      mixer_embed_dim: width of the alpha network's mixing layer (JaxMARL's 32).
      hypernet_hidden: hidden width of the alpha network's hypernetworks (JaxMARL's 64).
      mixer_init_scale: orthogonal scale of the alpha network's layers; JaxMARL's 1e-5 makes
        `alpha` start at 1, i.e. SHAQ starts as VDN.
      manual_alpha: 0 learns `alpha` (the algorithm); a value > 0 fixes `alpha` of every
        non-greedy action to it (JaxMARL's `MANUAL_ALPHA_ESTIMATES`, the paper's appendix
        ablation); 1 is then exactly VDN.

    The defaults follow JaxMARL's `shaq_mpe.yaml` (GRU agents with shared parameters, TD(0.6)
    double-Q targets, batch 32 episodes, buffer 5000, Adam, target copied every 200 gradient
    steps, team reward the sum of the agents' rewards).
    """

    MIXERS: ClassVar[tuple[str, ...]] = ("shaq",)
    #: no "grouped": only the value-based learner implements it
    PARAMETER_MODES: ClassVar[tuple[str, ...]] = ("shared", "shared_id", "independent")
    UNUSED: ClassVar[tuple[str, ...]] = ("hypernet_layers", "positive_map")

    mixer: str = param("shaq", help='always "shaq" (the alpha network replaces a mixer).')
    parameter_mode: str = param(
        "shared", help='"shared", "shared_id" (shared + one-hot agent id) or "independent".'
    )
    batch_size: int = param(32, lo=1, help="sequences per gradient step.", split=True)
    mixer_init_scale: float = param(
        1e-5, help="orthogonal scale of the alpha network's layers (1e-5: alpha starts at 1)."
    )
    team_reward: str = param(
        "sum", help='how the agents\' rewards make the team reward: "mean" or "sum".'
    )
    sample_size: int = param(
        5, lo=1, help="random coalition orders per transition for the alpha estimate."
    )
    manual_alpha: float = param(
        0.0, lo=0.0, help="0: learn alpha; > 0: fix the non-greedy actions' alpha to it."
    )


@struct.dataclass
class SHAQHParams(QHParams):
    """Traced hyperparameters of SHAQ: `QHParams` with JaxMARL's `shaq_mpe.yaml` defaults.

    JaxMARL trains the alpha network with its own optimiser (`LR_ALPHA`); with its MPE config's
    linear learning-rate decay both optimisers use `LR`, which is what one optimiser over all
    parameters here reproduces.
    """

    lr: Any = param(5e-3, lo=0.0, lo_open=True, help="learning rate.")
    gamma: Any = param(0.9, lo=0.0, hi=1.0, help="discount.")
    max_grad_norm: Any = param(25.0, lo=0.0, lo_open=True, help="global gradient-norm clip.")
    opt_eps: Any = param(1e-3, lo=0.0, lo_open=True, help="optimiser epsilon (Adam/RAdam/RMSprop).")


#: named published configurations of SHAQ
PRESETS: dict[str, Preset] = {
    "jaxmarl": Preset(
        "jaxmarl",
        dict(
            recurrent=True,
            hidden_sizes=(64,),
            gru_size=64,
            sequence_len=25,
            parameter_mode="shared",
            target="lambda",
            double_q=True,
            batch_size=32,
            buffer_size=5000,
            target_update="hard",
            target_update_interval=200,
            optimizer="adam",
            mixer_embed_dim=32,
            hypernet_hidden=64,
            mixer_init_scale=1e-5,
            sample_size=5,
            manual_alpha=0.0,
            team_reward="sum",
        ),  # fmt: skip
        dict(
            lr=5e-3,
            opt_eps=1e-3,
            gamma=0.9,
            td_lambda=0.6,
            max_grad_norm=25.0,
            eps_start=1.0,
            eps_finish=0.05,
            eps_anneal_steps=100_000.0,
        ),  # fmt: skip
        "JaxMARL (Rutherford et al. 2024) baselines/QLearning/config/alg/shaq_mpe.yaml: GRU "
        "agents (64) with shared parameters, 5 sampled coalition orders, alpha network 32/64 "
        "at init scale 1e-5, Adam lr 5e-3 (its linear decay: set lr_decay_steps to the run's "
        "gradient steps; its AdamW weight decay 1e-5 is not reproduced), eps 1e-3, grad clip "
        "25, gamma 0.9, TD(0.6), target copied every 200 updates, epsilon 1 -> 0.05 over 100k "
        "steps, 8 envs, 2.05M steps. The marljax defaults.",
        train=dict(num_envs=8, rollout_len=25, total_env_steps=2_050_000),
    ),
}


def preset(name: str) -> tuple[dict[str, Any], SHAQHParams]:
    """A published configuration: `(SHAQConfig overrides, SHAQHParams)`; see `PRESETS`."""
    p = lookup(PRESETS, name, "SHAQ")
    return dict(p.config), SHAQHParams(**p.hparams)


__all__ = ["PRESETS", "SHAQConfig", "SHAQHParams", "preset"]
