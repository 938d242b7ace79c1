"""Static configuration, traced hyperparameters and published presets of QTRAN-base.

QTRAN is the value-based learner (`marljax.agents.qlearning`) with QTRAN's joint networks in
place of a mixer, so `QTRANConfig` is a `QConfig` (every replay, target and agent-network field
applies) with the joint networks' widths added and the defaults of EPyMARL's `qtran.yaml`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from flax import struct

from marljax.agents.presets import Preset, lookup
from marljax.agents.qlearning.config import QConfig, QHParams
from marljax.core.config import param


@dataclasses.dataclass(frozen=True)
class QTRANConfig(QConfig):
    """Static structure of QTRAN-base (a `QConfig`; see it for the shared fields).

    Attributes:
      mixer: always "qtran".
      joint_hidden: widths of the hidden layers of the joint action-value network
        `Q_jt(s, u)` (input: the flat global state and the agents' one-hot actions) and of the
        state-value network `V_jt(s)` (EPyMARL's `mixing_embed_dim: 64`, `network_size: small`).

    The defaults follow EPyMARL's `qtran.yaml` (feed-forward agents, 1-step double-Q targets,
    batch 32 episodes, buffer 5000, RMSprop, target copied every 200 gradient steps).
    """

    MIXERS: ClassVar[tuple[str, ...]] = ("qtran",)
    #: no "grouped": only the value-based learner implements it
    PARAMETER_MODES: ClassVar[tuple[str, ...]] = ("shared", "shared_id", "independent")
    UNUSED: ClassVar[tuple[str, ...]] = (
        "mixer_embed_dim", "hypernet_hidden", "hypernet_layers", "positive_map",
        "mixer_init_scale",
    )  # fmt: skip

    mixer: str = param("qtran", help='always "qtran" (the joint networks replace a mixer).')
    recurrent: bool = param(False, help="put a GRU between the torso and the Q head.")
    batch_size: int = param(32, lo=1, help="sequences per gradient step.", split=True)
    target: str = param("one_step", help='"one_step", "n_step" or "lambda" (TD(lambda)).')
    optimizer: str = param("rmsprop", help='"adam", "rmsprop" or "radam".')
    joint_hidden: tuple[int, ...] = param(
        (64, 64), help="hidden widths of the joint Q_jt(s, u) and V_jt(s) networks."
    )

    def __post_init__(self):
        super().__post_init__()
        if not self.joint_hidden or any(int(h) < 1 for h in self.joint_hidden):
            raise ValueError(
                f"QTRANConfig.joint_hidden must be positive widths, got {self.joint_hidden}"
            )


@struct.dataclass
class QTRANHParams(QHParams):
    """Traced hyperparameters of QTRAN-base: `QHParams` plus the constraint-loss weights.

    Attributes:
      opt_weight: lambda_opt, the weight of L_opt (EPyMARL and PyMARL: 1).
      nopt_weight: lambda_nopt, the weight of L_nopt (EPyMARL: 1; PyMARL: 0.1).
    """

    lr: Any = param(5e-4, lo=0.0, lo_open=True, help="learning rate.")
    eps_anneal_steps: Any = param(
        50_000.0, lo=0.0, help="environment steps over which epsilon goes from start to finish."
    )
    opt_weight: Any = param(1.0, lo=0.0, help="lambda_opt, the weight of L_opt.")
    nopt_weight: Any = param(1.0, lo=0.0, help="lambda_nopt, the weight of L_nopt.")


#: what EPyMARL's and PyMARL's `qtran.yaml` share: the replay, targets and RMSprop optimiser
_PYMARL_CONFIG = dict(
    target="one_step",
    double_q=True,
    batch_size=32,
    buffer_size=5000,
    target_update="hard",
    target_update_interval=200,
    optimizer="rmsprop",
    parameter_mode="shared_id",
    joint_hidden=(64, 64),
)  # fmt: skip
_PYMARL_HPARAMS = dict(lr=5e-4, opt_eps=1e-5, rmsprop_decay=0.99, gamma=0.99, max_grad_norm=10.0)

#: named published configurations of QTRAN-base
PRESETS: dict[str, Preset] = {
    "epymarl": Preset(
        "epymarl",
        dict(recurrent=False, **_PYMARL_CONFIG),
        dict(
            **_PYMARL_HPARAMS,
            eps_start=1.0,
            eps_finish=0.05,
            eps_anneal_steps=50_000.0,
            opt_weight=1.0,
            nopt_weight=1.0,
        ),  # fmt: skip
        "EPyMARL (Papoudakis et al. 2021) src/config/algs/qtran.yaml with default.yaml: "
        "qtran_base with the coma_critic architecture (Q_jt on the state and one-hot joint "
        "action), mixing_embed_dim 64, opt_loss 1, nopt_min_loss 1, RMSprop lr 5e-4; its "
        "reward standardisation is not reproduced (use reward_scale). The marljax defaults.",
    ),
    "pymarl": Preset(
        "pymarl",
        dict(recurrent=True, **_PYMARL_CONFIG),
        dict(**_PYMARL_HPARAMS, eps_anneal_steps=50_000.0, opt_weight=1.0, nopt_weight=0.1),
        "PyMARL (Samvelyan et al. 2019) src/config/algs/qtran.yaml: GRU agents, opt_loss 1, "
        "nopt_min_loss 0.1, RMSprop lr 5e-4. Its qtran_paper architecture (Q_jt on the "
        "agents' hidden states) is not reproduced: Q_jt here sees the state and joint action.",
    ),
}


def preset(name: str) -> tuple[dict[str, Any], QTRANHParams]:
    """A published configuration: `(QTRANConfig overrides, QTRANHParams)`; see `PRESETS`."""
    p = lookup(PRESETS, name, "QTRAN")
    return dict(p.config), QTRANHParams(**p.hparams)


__all__ = ["PRESETS", "QTRANConfig", "QTRANHParams", "preset"]
