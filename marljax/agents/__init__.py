"""Functional agents, one folder per algorithm, and the algorithm registry (`registry`)."""

from __future__ import annotations

from marljax.agents.base import Agent, Observation, Trajectory
from marljax.agents.coma import COMAConfig, COMAHParams, coma, make_coma
from marljax.agents.facmac import FACMACConfig, FACMACHParams, facmac, make_facmac
from marljax.agents.happo import HAPPOConfig, HAPPOHParams, happo, hatrpo, make_happo
from marljax.agents.maddpg import MADDPGConfig, MADDPGHParams, maddpg, make_maddpg
from marljax.agents.mat import MATConfig, MATHParams, make_mat, mat
from marljax.agents.ppo import (
    PPOConfig,
    PPOHParams,
    ia2c,
    ippo,
    maa2c,
    make_ppo,
    mappo,
)
from marljax.agents.pqn import PQNConfig, PQNHParams, make_pqn_vdn, pqn_vdn
from marljax.agents.presets import Preset
from marljax.agents.qlearning import QConfig, QHParams, iql, make_q_learner, qmix, vdn
from marljax.agents.qtran import QTRANConfig, QTRANHParams, make_qtran, qtran
from marljax.agents.registry import ALGORITHMS, AlgoSpec, algo_spec, preset
from marljax.agents.sac import SACConfig, SACHParams, hasac, make_sac, masac
from marljax.agents.shaq import SHAQConfig, SHAQHParams, make_shaq, shaq
from marljax.agents.transf_qmix import (
    TransfQMIXConfig,
    TransfQMIXHParams,
    make_transf_qmix,
    transf_qmix,
)

__all__ = [
    "ALGORITHMS",
    "Agent",
    "AlgoSpec",
    "COMAConfig",
    "COMAHParams",
    "FACMACConfig",
    "FACMACHParams",
    "HAPPOConfig",
    "HAPPOHParams",
    "MADDPGConfig",
    "MADDPGHParams",
    "MATConfig",
    "MATHParams",
    "Observation",
    "PPOConfig",
    "PPOHParams",
    "PQNConfig",
    "PQNHParams",
    "Preset",
    "QConfig",
    "QHParams",
    "QTRANConfig",
    "QTRANHParams",
    "SACConfig",
    "SACHParams",
    "SHAQConfig",
    "SHAQHParams",
    "Trajectory",
    "TransfQMIXConfig",
    "TransfQMIXHParams",
    "algo_spec",
    "coma",
    "facmac",
    "happo",
    "hasac",
    "hatrpo",
    "ia2c",
    "ippo",
    "iql",
    "maa2c",
    "maddpg",
    "make_coma",
    "make_facmac",
    "make_happo",
    "make_maddpg",
    "make_mat",
    "make_ppo",
    "make_pqn_vdn",
    "make_q_learner",
    "make_qtran",
    "make_sac",
    "make_shaq",
    "make_transf_qmix",
    "mappo",
    "masac",
    "mat",
    "pqn_vdn",
    "preset",
    "qmix",
    "qtran",
    "shaq",
    "transf_qmix",
    "vdn",
]
