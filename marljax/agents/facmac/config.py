"""Static configuration, traced hyperparameters and published presets of FACMAC.

FACMAC's actors, replay and update loop are MADDPG's (`marljax.agents.maddpg`), so
`FACMACConfig` is a `MADDPGConfig` with the mixer's fields added and `FACMACHParams` a
`MADDPGHParams` with FACMAC's defaults. `critic_input` names what the MIXER conditions on (the
global state or all observations); the per-agent utilities see the agent's own observation and
action.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from flax import struct

from marljax.agents import common
from marljax.agents.maddpg.config import MADDPGConfig, MADDPGHParams
from marljax.agents.presets import Preset, lookup
from marljax.core.config import param

MIXERS = ("qmix", "vdn")


@dataclasses.dataclass(frozen=True)
class FACMACConfig(MADDPGConfig):
    """Static structure of FACMAC (a `MADDPGConfig`; see it for the shared fields).

    Attributes:
      parameter_mode: as MADDPG's; the default `shared_id` is FACMAC's (one actor and one
        utility network for all agents, the agent's one-hot id in the input).
      mixer: "qmix" (monotonic hypernetwork mixer on the state, `marljax.nn.mixers.QMixer`) or
        "vdn" (the sum of the utilities).
      mixer_embed_dim: width of the QMIX mixing layer.
      hypernet_layers: 1 (linear hypernetworks) or 2.
      hypernet_hidden: hidden width of two-layer hypernetworks.
    """

    parameter_mode: str = param(
        "shared_id", help='"independent" (stacked [A, ...]), "shared" or "shared_id".'
    )
    mixer: str = param("qmix", help='"qmix" (monotonic, on the state) or "vdn" (sum).')
    mixer_embed_dim: int = param(64, lo=1, help="width of the QMIX mixing layer.")
    hypernet_layers: int = param(1, lo=1, hi=2, help="1 (linear hypernetworks) or 2.")
    hypernet_hidden: int = param(64, lo=1, help="hidden width of two-layer hypernetworks.")

    def __post_init__(self):
        super().__post_init__()
        common.check_choice("FACMACConfig.mixer", self.mixer, MIXERS)


@struct.dataclass
class FACMACHParams(MADDPGHParams):
    """Traced hyperparameters of FACMAC: `MADDPGHParams` with the defaults of FACMAC's
    `facmac_pp.yaml` (the actor penalty acts on the actions, not the pre-tanh outputs)."""

    gamma: Any = param(0.85, lo=0.0, hi=1.0, help="discount.")
    tau: Any = param(
        0.001, lo=0.0, hi=1.0, help="Polyak rate of the target actors and critics (per step)."
    )
    adam_eps: Any = param(0.01, lo=0.0, lo_open=True, help="Adam's epsilon.")
    actor_reg: Any = param(1e-3, lo=0.0, help="weight of mean(a^2) on the actors' actions a.")


#: named published configurations of FACMAC
PRESETS: dict[str, Preset] = {
    "facmac_pp": Preset(
        "facmac_pp",
        dict(
            parameter_mode="shared_id",
            mixer="qmix",
            mixer_embed_dim=64,
            hypernet_layers=1,
            hidden_sizes=(64, 64),
            warmup_steps=0,
        ),  # fmt: skip
        dict(
            actor_lr=0.01,
            critic_lr=0.01,
            gamma=0.85,
            tau=0.001,
            max_grad_norm=0.5,
            adam_eps=0.01,
            actor_reg=1e-3,
            noise_start=0.1,
            noise_finish=0.1,
        ),  # fmt: skip
        "Peng et al. 2021 (FACMAC, NeurIPS) and its code oxwhirl/facmac: "
        "src/config/algs/facmac_pp.yaml (Adam lr 0.01 for actors and critics, eps 0.01, gamma "
        "0.85, grad-norm clip 0.5, Polyak 0.001, Gaussian noise 0.1, QMIX mixer embed 64 with "
        "linear hypernetworks, no warm-up) and src/learners/facmac_learner.py (actor penalty "
        "1e-3 * mean(a^2)). Not reproduced: its GRU agents (feed-forward 2x64 here), its "
        "replay of 32 whole episodes per step (transitions here) and its weight decay 1e-4.",
    ),
}


def preset(name: str) -> tuple[dict[str, Any], FACMACHParams]:
    """A published configuration: `(FACMACConfig overrides, FACMACHParams)`; see `PRESETS`."""
    p = lookup(PRESETS, name, "FACMAC")
    return dict(p.config), FACMACHParams(**p.hparams)


__all__ = ["MIXERS", "PRESETS", "FACMACConfig", "FACMACHParams", "preset"]
