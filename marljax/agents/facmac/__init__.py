"""FACMAC (Peng et al. 2021): factored multi-agent centralised policy gradients.

MADDPG's deterministic actors, exploration, replay and update loop (`marljax.agents.maddpg`),
with two changes:

- the critic is factored: per-agent utilities `Q_i(o_i, a_i)` (shared parameters with the agent's
  id by default) mixed into `Q_tot(s, a) = mixer(Q_1, ..., Q_A; s)` by QMIX's monotonic mixer
  (`marljax.nn.mixers.QMixer`, the value-based learner's) or VDN's sum, trained on the team reward
  with the value-based learner's `mixed_td_loss` and Polyak-averaged targets;
- the centralised policy gradient: all actors ascend `Q_tot` of the joint action of the CURRENT
  policies, the gradient flowing to every actor through the mixer (`centralised_actor_loss`),
  instead of MADDPG's per-agent gradient at the others' replayed actions.

The package: `config` (FACMACConfig, FACMACHParams, PRESETS), `networks` (FACMACModel), `loss`
(`centralised_actor_loss`), `agent` (the steps and the factory).

Reference: B. Peng, T. Rashid, C. Schroeder de Witt, P.-A. Kamienny, P. Torr, W. Boehmer,
S. Whiteson, "FACMAC: Factored Multi-Agent Centralised Policy Gradients", NeurIPS 2021
(https://arxiv.org/abs/2003.06709).
"""

from __future__ import annotations

from marljax.agents.facmac.agent import facmac, make_facmac
from marljax.agents.facmac.config import MIXERS, PRESETS, FACMACConfig, FACMACHParams, preset
from marljax.agents.facmac.loss import centralised_actor_loss
from marljax.agents.facmac.networks import FACMACModel, make_facmac_model

__all__ = [
    "MIXERS",
    "PRESETS",
    "FACMACConfig",
    "FACMACHParams",
    "FACMACModel",
    "centralised_actor_loss",
    "facmac",
    "make_facmac",
    "make_facmac_model",
    "preset",
]
