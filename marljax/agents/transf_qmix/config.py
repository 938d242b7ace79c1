"""Static configuration, traced hyperparameters and published presets of TransfQMIX.

TransfQMIX is the value-based learner (`marljax.agents.qlearning`) with transformer agents over
entity tokens and a transformer mixer, so `TransfQMIXConfig` is a `QConfig` (its replay, target
and optimiser fields apply) with the transformers' sizes added. The agents are recurrent (the
hidden token is the recurrence; `recurrent=False` restarts it at every step) and share their parameters (`"shared"`, as in JaxMARL) or
keep one set per agent (`"independent"`); entity tokens carry no agent id.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from flax import struct

from marljax.agents.presets import Preset, lookup
from marljax.agents.qlearning.config import QConfig, QHParams
from marljax.core.config import param


@dataclasses.dataclass(frozen=True)
class TransfQMIXConfig(QConfig):
    """Static structure of TransfQMIX (a `QConfig`; see it for the shared fields).

    Attributes:
      mixer: always "transf_qmix".
      parameter_mode: "shared" or "independent" (entity tokens carry no one-hot id).
      recurrent: carry the agent's hidden token across steps (the paper's agent); False starts
        it from zeros at every step (a feed-forward transformer agent).
      embed_dim: width `H` of every token (entity embeddings, hidden tokens, mixing layer).
      agent_layers, agent_heads, agent_ff: the agent transformer's encoder blocks, attention
        heads and feed-forward width.
      mixer_layers, mixer_heads, mixer_ff: the same for the mixer transformer.
      agent_init_scale: orthogonal scale of the agent's entity embedder and Q head.
      mixer_init_scale: orthogonal scale of the mixer's state embedder and `b_2` head.
      embed_relu: a ReLU after the entity embedding (JaxMARL's `EMBEDDER_USE_RELU`).
      embed_norm: LayerNorm on the entity embeddings (JaxMARL normalises with BatchNorm, see
        `docs/agents.md`).

    The defaults follow JaxMARL's `transf_qmix_mpe.yaml` (whole 25-step episodes, batch 32,
    buffer 5000 episodes, TD(lambda=0.6), Adam, target copied every 200 gradient steps).
    """

    MIXERS: ClassVar[tuple[str, ...]] = ("transf_qmix",)
    #: no "grouped": only the value-based learner implements it
    PARAMETER_MODES: ClassVar[tuple[str, ...]] = ("shared", "independent")

    mixer: str = param("transf_qmix", help='always "transf_qmix" (the transformer mixer).')
    parameter_mode: str = param(
        "shared", help='"shared" or "independent" (entity tokens carry no agent id).'
    )
    recurrent: bool = param(True, help="carry the hidden token across steps (False: zeros).")
    batch_size: int = param(32, lo=1, help="sequences per gradient step.", split=True)
    sequence_len: int = param(
        25, lo=1, help="steps per stored sequence (divides rollout_len, at most max_steps)."
    )
    embed_dim: int = param(32, lo=1, help="width of every token (embeddings, hidden tokens).")
    agent_layers: int = param(2, lo=1, help="encoder blocks of the agent transformer.")
    agent_heads: int = param(8, lo=1, help="attention heads of the agent transformer.")
    agent_ff: int = param(128, lo=1, help="feed-forward width of the agent transformer.")
    mixer_layers: int = param(2, lo=1, help="encoder blocks of the mixer transformer.")
    mixer_heads: int = param(8, lo=1, help="attention heads of the mixer transformer.")
    mixer_ff: int = param(128, lo=1, help="feed-forward width of the mixer transformer.")
    agent_init_scale: float = param(
        1.0, lo=0.0, lo_open=True, help="orthogonal scale of the agent's embedder and Q head."
    )
    mixer_init_scale: float = param(
        0.01, lo=0.0, lo_open=True, help="orthogonal scale of the mixer's embedder and b_2 head."
    )
    embed_relu: bool = param(False, help="a ReLU after the entity embedding.")
    embed_norm: bool = param(True, help="LayerNorm on the entity embeddings.")

    def __post_init__(self):
        if self.parameter_mode == "shared_id":
            raise ValueError(
                "TransfQMIXConfig.parameter_mode must be 'shared' or 'independent', got "
                "'shared_id' (entity tokens carry no one-hot agent id)"
            )
        super().__post_init__()
        for part in ("agent", "mixer"):
            heads = getattr(self, f"{part}_heads")
            if self.embed_dim % heads:
                raise ValueError(
                    f"TransfQMIXConfig.embed_dim = {self.embed_dim} is not divisible by "
                    f"{part}_heads = {heads}; use heads dividing embed_dim"
                )


@struct.dataclass
class TransfQMIXHParams(QHParams):
    """Traced hyperparameters of TransfQMIX: `QHParams` with JaxMARL's MPE defaults."""

    gamma: Any = param(0.9, lo=0.0, hi=1.0, help="discount.")
    opt_eps: Any = param(1e-6, lo=0.0, lo_open=True, help="optimiser epsilon (Adam/RAdam/RMSprop).")


#: named published configurations of TransfQMIX
PRESETS: dict[str, Preset] = {
    "jaxmarl": Preset(
        "jaxmarl",
        dict(
            parameter_mode="shared",
            embed_dim=32,
            agent_layers=2,
            agent_heads=8,
            agent_ff=128,
            mixer_layers=2,
            mixer_heads=8,
            mixer_ff=128,
            agent_init_scale=1.0,
            mixer_init_scale=0.01,
            embed_relu=False,
            embed_norm=True,
            buffer_size=5000,
            batch_size=32,
            sequence_len=25,
            gradient_steps=1,
            learning_starts=6400,
            target="lambda",
            double_q=True,
            target_update="hard",
            target_update_interval=200,
            optimizer="adam",
            team_reward="sum",
        ),  # fmt: skip
        dict(
            lr=1e-3,
            opt_eps=1e-6,
            max_grad_norm=10.0,
            gamma=0.9,
            td_lambda=0.6,
            eps_start=1.0,
            eps_finish=0.05,
            eps_anneal_steps=800_000.0,
        ),  # fmt: skip
        "JaxMARL (Rutherford et al. 2024) baselines/QLearning/config/alg/transf_qmix_mpe.yaml "
        "(TransfQMIX of Gallici, Martin & Masmitja 2023 on MPE simple spread): 8 envs x 25 "
        "steps per update, buffer 5000 episodes, batch 32, hidden 32, 2 layers x 8 heads, ff "
        "128, Adam lr 1e-3 eps 1e-6, TD(lambda=0.6), gamma 0.9, target every 200 updates, team "
        "reward summed over agents, epsilon 1 -> 0.05 over EPSILON_ANNEAL_TIME = 100k steps of "
        "its 8 vectorised envs (800k env steps), learning once its buffer holds 32 rollouts per "
        "env (6400 env steps). Not "
        "reproduced: BatchNorm of inputs and embeddings (LayerNorm of the embeddings here) and "
        "its Performer fast attention (USE_FAST_ATTENTION; exact softmax attention here).",
        train=dict(num_envs=8, rollout_len=25, total_env_steps=10_000_000),
    ),
}


def preset(name: str) -> tuple[dict[str, Any], TransfQMIXHParams]:
    """A published configuration: `(TransfQMIXConfig overrides, TransfQMIXHParams)`."""
    p = lookup(PRESETS, name, "TransfQMIX")
    return dict(p.config), TransfQMIXHParams(**p.hparams)


__all__ = ["PRESETS", "TransfQMIXConfig", "TransfQMIXHParams", "preset"]
