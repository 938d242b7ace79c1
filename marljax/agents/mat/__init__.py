"""MAT, the Multi-Agent Transformer (Wen et al., NeurIPS 2022): multi-agent RL as sequence modelling.

- An encoder embeds every agent's observation and runs self-attention over the agents; it gives
  per-agent representations and per-agent values `V(o)_i` (the critic).
- A decoder generates the joint action agent by agent: agent `i`'s distribution conditions on
  the encoder's representations and on the actions of agents `0 .. i-1` (shifted action tokens
  with a start token, causal self-attention, causal attention to the encoder's output). Acting
  is a `jax.lax.scan` over the agents inside the compiled program; training scores the taken
  actions in one teacher-forced pass.
- Trained with PPO's clipped objective on the per-agent conditional log-probabilities, the
  (clipped) value loss on the encoder's values and an entropy bonus (`mat_loss`), with
  per-agent GAE and optional value normalisation, as the authors' `mat_trainer.py`.
- Feed-forward; Discrete (with action masks) or 1-D Box actions; every agent must have the same
  observation size (`check_env` refuses the others at build time).

Modules: `config` (MATConfig, MATHParams, MATState, PRESETS), `networks` (the transformer and the
action tokens), `loss` (mat_loss) and `agent` (the factory `make_mat` and the pure functions it
wires).

Reference: M. Wen et al., "Multi-Agent Reinforcement Learning is a Sequence Modeling Problem",
NeurIPS 2022 (https://arxiv.org/abs/2205.14953); code: PKU-MARL/Multi-Agent-Transformer.
"""

from __future__ import annotations

from marljax.agents.mat.agent import (
    MATParts,
    check_env,
    decode_autoregressive,
    log_prob_and_entropy,
    make_mat,
    make_parts,
    mat,
)
from marljax.agents.mat.config import PRESETS, MATConfig, MATHParams, MATState
from marljax.agents.mat.loss import mat_loss
from marljax.agents.mat.networks import MultiAgentTransformer, action_tokens

__all__ = [
    "PRESETS",
    "MATConfig",
    "MATHParams",
    "MATParts",
    "MATState",
    "MultiAgentTransformer",
    "action_tokens",
    "check_env",
    "decode_autoregressive",
    "log_prob_and_entropy",
    "make_mat",
    "make_parts",
    "mat",
    "mat_loss",
]
