"""Static configuration, traced hyperparameters, training state and published presets of the
value-based learner (IQL / VDN / QMIX)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Literal

import jax
from flax import struct

from marljax.agents import common
from marljax.agents.presets import Preset, lookup
from marljax.core.config import check_ranges, param
from marljax.nn.mixers import POSITIVE_MAPS
from marljax.nn.replay import ReplayState

Array = jax.Array

Mixer = Literal["none", "vdn", "qmix"]


@dataclasses.dataclass(frozen=True)
class QConfig:
    """Static structure of the value-based learner (shapes, loop lengths, switches).

    Attributes:
      mixer: "none" (IQL), "vdn" or "qmix".
      parameter_mode: "shared", "shared_id" (shared + one-hot agent id), "independent" or
        "grouped" (`num_groups` parameter sets, agent `a` using set `floor(a * G / A)`; see
        `marljax.agents.common.group_params`).
      num_groups: `G`, the number of parameter sets when `parameter_mode == "grouped"`.
      hidden_sizes: widths of the agent MLP torso (before the GRU).
      activation: torso activation.
      recurrent: put a GRU between the torso and the Q head.
      gru_size: width of the GRU.
      mixer_embed_dim: QMIX mixing width.
      hypernet_hidden: QMIX hypernetwork hidden width.
      hypernet_layers: 1 (linear) or 2 (one hidden layer) QMIX hypernetworks.
      positive_map: non-negative map of the QMIX weights (abs, relu, softplus, exp).
      mixer_init_scale: orthogonal scale of the mixer's layers. Small by default: the mixing
        weights are products of hypernetwork layers applied to the raw global state, so with a
        scale of 1 and states of magnitude ~5 (e.g. LBF coordinates) Q_tot starts ~50x the
        agents' values and the TD targets run away (measured on LBF: target mean ~26 for
        returns <= 1, no learning in 400k steps; in 200k steps the team return reached 0.55
        with 0.01 and 0.46 with 0.1, one seed each). Much smaller scales slow the two-step game down (0.01: 4 of 8 seeds found
        the optimum in 600 updates, 0.1 and 1.0: 8 of 8).
      buffer_size: replay capacity in sequences.
      batch_size: sequences per gradient step.
      sequence_len: steps per stored sequence; must divide the runner's `rollout_len` and be at
        most the env's `max_steps`. Set it to the episode length (with `rollout_len` a multiple
        of it) to store whole episodes, as PyMARL and JaxMARL do.
      gradient_steps: gradient steps per update (per rollout).
      learning_starts: environment steps collected before the first gradient step (learning
        also waits until the buffer holds one batch).
      target: "one_step", "n_step" or "lambda" (TD(lambda)).
      n_steps: n of the n-step target.
      double_q: double-Q targets.
      target_update: "hard" (copy every `target_update_interval` gradient steps) or "polyak"
        (every gradient step, rate `hparams.tau`).
      target_update_interval: gradient steps between hard target updates.
      optimizer: "adam", "rmsprop" or "radam".
      lr_decay_steps: linear learning-rate decay to 0 over this many gradient steps (0: constant).
      team_reward: how VDN/QMIX turn per-agent rewards `[A]` into the team reward: "mean" or
        "sum" (for common-payoff games both give the common reward with "mean").
    """

    mixer: Mixer = param("qmix", help='"none" (IQL), "vdn" or "qmix".')
    parameter_mode: str = param(
        "shared_id",
        help='"shared", "shared_id" (shared + one-hot agent id), "independent" or "grouped".',
    )
    num_groups: int = param(
        1, lo=1, help='parameter sets when parameter_mode="grouped" (agent a uses a*G//A).'
    )
    hidden_sizes: tuple[int, ...] = param(
        (64,), help="widths of the agent MLP torso (before the GRU)."
    )
    activation: str = param("relu", help="torso activation.")
    recurrent: bool = param(True, help="put a GRU between the torso and the Q head.")
    gru_size: int = param(64, lo=1, help="width of the GRU.")
    mixer_embed_dim: int = param(32, lo=1, help="QMIX mixing width.")
    hypernet_hidden: int = param(64, lo=1, help="QMIX hypernetwork hidden width.")
    hypernet_layers: int = param(2, help="1 (linear) or 2 (one hidden layer) QMIX hypernetworks.")
    positive_map: str = param(
        "abs", help="non-negative map of the QMIX weights (abs, relu, softplus, exp)."
    )
    mixer_init_scale: float = param(
        0.1, help="orthogonal scale of the mixer's layers (small: see the class docstring)."
    )
    buffer_size: int = param(5000, lo=1, help="replay capacity in sequences.", split=True)
    batch_size: int = param(128, lo=1, help="sequences per gradient step.", split=True)
    sequence_len: int = param(
        8, lo=1, help="steps per stored sequence (divides rollout_len, at most max_steps)."
    )
    gradient_steps: int = param(1, lo=1, help="gradient steps per update (per rollout).")
    learning_starts: int = param(
        0, lo=0, help="environment steps collected before the first gradient step."
    )
    target: str = param("lambda", help='"one_step", "n_step" or "lambda" (TD(lambda)).')
    n_steps: int = param(3, lo=1, help="n of the n-step target.")
    double_q: bool = param(True, help="double-Q targets.")
    target_update: str = param(
        "hard", help='"hard" (copy every target_update_interval steps) or "polyak" (rate tau).'
    )
    target_update_interval: int = param(
        200, lo=1, help="gradient steps between hard target updates."
    )
    optimizer: str = param("adam", help='"adam", "rmsprop" or "radam".')
    lr_decay_steps: int = param(
        0, lo=0, help="linear learning-rate decay to 0 over this many gradient steps (0: constant)."
    )
    team_reward: str = param(
        "mean", help='how VDN/QMIX turn per-agent rewards into the team reward: "mean" or "sum".'
    )

    #: the values `mixer` may take (a learner built on this config may allow its own)
    MIXERS: ClassVar[tuple[str, ...]] = ("none", "vdn", "qmix")
    #: the values `parameter_mode` may take ("grouped" only where the learner implements it)
    PARAMETER_MODES: ClassVar[tuple[str, ...]] = (*common.PARAMETER_MODES, "grouped")
    #: fields a learner built on this config never reads; setting one is refused
    UNUSED: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self):
        _choice("mixer", self.mixer, self.MIXERS)
        for name in self.UNUSED:
            default = type(self).__dataclass_fields__[name].default
            if getattr(self, name) != default:
                raise ValueError(
                    f"{type(self).__name__}.{name} is not used by this learner (got "
                    f"{getattr(self, name)!r}); leave it at {default!r}"
                )
        _choice("parameter_mode", self.parameter_mode, self.PARAMETER_MODES)
        if self.parameter_mode != "grouped" and self.num_groups != 1:
            raise ValueError(
                f"QConfig.num_groups = {self.num_groups} is only read when parameter_mode is "
                f"'grouped' (got {self.parameter_mode!r}); leave it at 1"
            )
        _choice("target", self.target, ("one_step", "n_step", "lambda"))
        _choice("target_update", self.target_update, ("hard", "polyak"))
        _choice("optimizer", self.optimizer, ("adam", "rmsprop", "radam"))
        _choice("team_reward", self.team_reward, ("mean", "sum"))
        _choice("positive_map", self.positive_map, tuple(POSITIVE_MAPS))
        _choice("hypernet_layers", self.hypernet_layers, (1, 2))
        check_ranges(self, "QConfig")
        if not self.hidden_sizes or any(int(h) < 1 for h in self.hidden_sizes):
            raise ValueError(
                f"QConfig.hidden_sizes must be positive widths, got {self.hidden_sizes}"
            )
        if self.buffer_size < self.batch_size:
            raise ValueError(
                f"QConfig.buffer_size = {self.buffer_size} sequences is smaller than one batch "
                f"(batch_size = {self.batch_size})"
            )


@struct.dataclass
class QHParams:
    """Traced hyperparameters of the value-based learner (each may be swept with `vmap`).

    Attributes:
      lr: learning rate.
      gamma: discount.
      td_lambda: lambda of the TD(lambda) target.
      eps_start, eps_finish: epsilon-greedy endpoints.
      eps_anneal_steps: environment steps over which epsilon goes linearly from start to finish.
      tau: Polyak rate of the target network (`target_update="polyak"`).
      max_grad_norm: global gradient-norm clip.
      reward_scale: multiplies rewards in the targets.
      opt_eps: optimiser epsilon (Adam/RAdam/RMSprop).
      rmsprop_decay: RMSprop's squared-gradient decay (PyMARL's `optim_alpha`).
    """

    lr: Any = param(1e-3, lo=0.0, lo_open=True, help="learning rate.")
    gamma: Any = param(0.99, lo=0.0, hi=1.0, help="discount.")
    td_lambda: Any = param(0.6, lo=0.0, hi=1.0, help="lambda of the TD(lambda) target.")
    eps_start: Any = param(1.0, lo=0.0, hi=1.0, help="epsilon-greedy start value.")
    eps_finish: Any = param(0.05, lo=0.0, hi=1.0, help="epsilon-greedy final value.")
    eps_anneal_steps: Any = param(
        100_000.0, lo=0.0, help="environment steps over which epsilon goes from start to finish."
    )
    tau: Any = param(
        0.005, lo=0.0, hi=1.0, help='Polyak rate of the target network (target_update="polyak").'
    )
    max_grad_norm: Any = param(10.0, lo=0.0, lo_open=True, help="global gradient-norm clip.")
    reward_scale: Any = param(1.0, help="multiplies rewards in the targets.")
    opt_eps: Any = param(1e-8, lo=0.0, lo_open=True, help="optimiser epsilon (Adam/RAdam/RMSprop).")
    rmsprop_decay: Any = param(
        0.99, lo=0.0, hi=1.0, help="RMSprop's squared-gradient decay (PyMARL's optim_alpha)."
    )


@struct.dataclass
class QState:
    """Everything that changes while training (all leaves are arrays; checkpointable)."""

    params: Any  # {"agent": ..., "mixer": ...}; agent params [A, ...] when independent
    target_params: Any
    opt_state: Any
    replay: ReplayState  # leaves [C, L, ...]
    env_steps: Array  # [] int32 environment steps collected
    grad_steps: Array  # [] int32 gradient steps taken
    num_updates: Array  # [] int32


#: what every published QMIX configuration below shares (PyMARL lineage): double-Q targets, hard
#: target copies every 200 gradient steps, 2-layer hypernetworks, agent ids, grad clip 10.
_PYMARL_COMMON = dict(
    double_q=True,
    target_update="hard",
    target_update_interval=200,
    hypernet_layers=2,
    hypernet_hidden=64,
    parameter_mode="shared_id",
    batch_size=32,
    buffer_size=5000,
    target="one_step",
)

#: named published configurations (`marljax.agents.presets.Preset`). None sets `mixer`: the
#: algorithm (iql / vdn / qmix) keeps its own.
PRESETS: dict[str, Preset] = {
    "pymarl": Preset(
        "pymarl",
        {**_PYMARL_COMMON, "optimizer": "rmsprop", "recurrent": True},
        dict(
            lr=5e-4,
            opt_eps=1e-5,
            rmsprop_decay=0.99,
            max_grad_norm=10.0,
            gamma=0.99,
            eps_anneal_steps=50_000.0,
        ),  # fmt: skip
        "PyMARL (Samvelyan et al. 2019) src/config/{default,algs/qmix}.yaml: RMSprop, 1-step "
        "double-Q targets, target copied every 200 episodes (one gradient step per episode).",
    ),
    "epymarl": Preset(
        "epymarl",
        {**_PYMARL_COMMON, "optimizer": "adam", "recurrent": False, "buffer_size": 40_000},
        dict(lr=5e-4, max_grad_norm=10.0, gamma=0.99, eps_anneal_steps=50_000.0),
        "EPyMARL (Papoudakis et al. 2021) src/config/algs/qmix.yaml: Adam, feed-forward agents, "
        "buffer 40k episodes (its reward standardisation is not reproduced; use reward_scale).",
    ),
    "pymarl2": Preset(
        "pymarl2",
        {
            **_PYMARL_COMMON,
            "optimizer": "adam",
            "recurrent": True,
            "batch_size": 128,
            "target": "lambda",
        },  # fmt: skip
        dict(lr=1e-3, td_lambda=0.6, max_grad_norm=10.0, gamma=0.99, eps_anneal_steps=100_000.0),
        "PyMARL2 (Hu et al. 2021) src/config/algs/qmix.yaml: Adam lr 1e-3, TD(lambda=0.6), "
        "batch 128, epsilon annealed over 100k steps. The marljax defaults.",
    ),
    "jaxmarl": Preset(
        "jaxmarl",
        {
            **_PYMARL_COMMON,
            "optimizer": "radam",
            "recurrent": True,
            "hidden_sizes": (64,),
            "gru_size": 64,
            "hypernet_hidden": 128,
            "mixer_init_scale": 0.001,
            "learning_starts": 10_000,
        },  # fmt: skip
        dict(lr=5e-3, max_grad_norm=25.0, gamma=0.9, eps_finish=0.05),
        "JaxMARL (Rutherford et al. 2024) baselines/QLearning/config/alg/ql_rnn_mpe.yaml: RAdam "
        "lr 5e-3 (its linear decay: set lr_decay_steps to the run's gradient steps), gamma 0.9, "
        "grad clip 25, target copied every 200 updates (one gradient step per update), epsilon "
        "annealed over 10% of the run (set eps_anneal_steps).",
    ),
}


def preset(name: str) -> tuple[dict[str, Any], QHParams]:
    """A published configuration: `(QConfig overrides, QHParams)`; see `PRESETS`."""
    p = lookup(PRESETS, name, "the value-based learner (iql / vdn / qmix)")
    return dict(p.config), QHParams(**p.hparams)


def _choice(name: str, value: Any, choices: tuple) -> None:
    common.check_choice(f"QConfig.{name}", value, choices)


__all__ = ["PRESETS", "QConfig", "QHParams", "QState", "preset"]
