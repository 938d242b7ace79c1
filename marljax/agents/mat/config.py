"""Static structure (`MATConfig`), traced hyperparameters (`MATHParams`), state and presets of MAT."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
from flax import struct

from marljax.agents.ppo.config import PPOHParams
from marljax.agents.presets import Preset
from marljax.core.config import ConfigError, check_ranges, param
from marljax.nn import losses

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class MATConfig:
    """Static structure of the Multi-Agent Transformer (shapes and loop lengths; not traced).

    Defaults are those of the authors' `mat/config.py` (Wen et al. 2022).

    Attributes:
      embed_dim: width of every token (the authors' `n_embd`).
      num_heads: attention heads of every attention layer (`n_head`); divides `embed_dim`.
      num_blocks: transformer blocks of the encoder and of the decoder each (`n_block`).
      num_epochs: passes over each rollout (`ppo_epoch`).
      num_minibatches: minibatches per epoch; a sample is one (step, env) with all its agents,
        since the decoder needs every agent's action (`num_mini_batch`).
      normalize_advantages: standardise advantages per minibatch.
      value_norm: learn values in a running standardised scale (the authors' ValueNorm).
      clip_value_loss: use the PPO clipped value loss (clip range `hparams.value_clip_eps`).
    """

    embed_dim: int = param(64, lo=1, help="width of every token (the authors' n_embd).")
    num_heads: int = param(
        1, lo=1, help="attention heads of every attention layer; divides embed_dim."
    )
    num_blocks: int = param(1, lo=1, help="transformer blocks of the encoder and the decoder each.")
    num_epochs: int = param(15, lo=1, help="passes over each rollout.")
    num_minibatches: int = param(
        1, lo=1, help="minibatches per epoch (of steps x envs, each with all its agents)."
    )
    normalize_advantages: bool = param(True, help="standardise advantages per minibatch.")
    value_norm: bool = param(
        True, help="learn values in a running standardised scale (the authors' ValueNorm)."
    )
    clip_value_loss: bool = param(
        True, help="use the PPO clipped value loss (clip range hparams.value_clip_eps)."
    )

    def __post_init__(self):
        check_ranges(self, "MATConfig")
        if self.embed_dim % self.num_heads:
            raise ConfigError(
                f"MATConfig.embed_dim must be a multiple of MATConfig.num_heads, got "
                f"embed_dim={self.embed_dim} and num_heads={self.num_heads}"
            )


@struct.dataclass
class MATHParams(PPOHParams):
    """Traced hyperparameters of MAT: `PPOHParams` with the defaults of the authors' `config.py`.

    The value loss is clipped with `value_clip_eps`, the authors' `clip_param` (set both to the
    same value to reproduce them).
    """

    vf_coef: Any = param(1.0, lo=0.0, help="weight of the value loss.")
    max_grad_norm: Any = param(10.0, lo=0.0, lo_open=True, help="global gradient-norm clip.")


@struct.dataclass
class MATState:
    """Everything that changes during MAT training (all leaves are arrays)."""

    params: Any  # the transformer's (encoder and decoder) and the policy head's parameters
    opt_state: Any
    value_norm: losses.RunningMeanStd  # [] running statistics of returns
    num_updates: Array  # [] int32


#: The authors' MPE run (`mat/scripts/train_mpe.sh`) sets these over `mat/config.py`, whose
#: values are the defaults of `MATConfig` and `MATHParams`.
PRESETS: dict[str, Preset] = {
    "mat": Preset(
        "mat",
        config=dict(num_epochs=10, num_blocks=1, embed_dim=64),
        hparams=dict(lr=7e-4, clip_eps=0.05, value_clip_eps=0.05),
        train=dict(num_envs=128, rollout_len=25, total_env_steps=20_000_000),
        source=(
            "MAT (Wen et al. 2022) PKU-MARL/Multi-Agent-Transformer mat/scripts/train_mpe.sh "
            "(simple spread) over the defaults of mat/config.py: 1 block, 64-wide tokens, 1 head, "
            "Adam 7e-4 (eps 1e-5), 10 epochs x 1 minibatch, clip 0.05 (value clipped with the "
            "same range), entropy 0.01, value weight 1, grad clip 10, ValueNorm, 128 envs x 25 "
            "steps, 2e7 steps. Not reproduced: the Huber value loss (delta 10; squared error "
            "here), ValueNorm's debiased EMA (a running mean/std here), advantages standardised "
            "over the whole rollout (per minibatch here; the same with 1 minibatch), the "
            "Gaussian's std sigmoid(log_std) / 2 (exp(log_std) here)."
        ),
    ),
}


__all__ = ["PRESETS", "MATConfig", "MATHParams", "MATState"]
