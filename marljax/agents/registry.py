"""The algorithm registry: every algorithm's config class, hparams class, factory and presets.

Adding an algorithm touches its own folder and one `AlgoSpec` entry here (docs/agents.md).
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable
from typing import Any

from marljax.agents.base import Agent
from marljax.agents.coma import PRESETS as _COMA_PRESETS
from marljax.agents.coma import COMAConfig, COMAHParams, make_coma
from marljax.agents.facmac import PRESETS as _FACMAC_PRESETS
from marljax.agents.facmac import FACMACConfig, FACMACHParams, make_facmac
from marljax.agents.happo import PRESETS as _HAPPO_PRESETS
from marljax.agents.happo import HAPPOConfig, HAPPOHParams, make_happo
from marljax.agents.maddpg import PRESETS as _MADDPG_PRESETS
from marljax.agents.maddpg import MADDPGConfig, MADDPGHParams, make_maddpg
from marljax.agents.mat import PRESETS as _MAT_PRESETS
from marljax.agents.mat import MATConfig, MATHParams, make_mat
from marljax.agents.meanfield import MFPGConfig, make_mfpg
from marljax.agents.ppo import (
    A2C_OVERRIDES,
    PPOConfig,
    PPOHParams,
    make_ppo,
)
from marljax.agents.ppo.presets import PRESETS as _PPO_PRESETS
from marljax.agents.pqn import PRESETS as _PQN_PRESETS
from marljax.agents.pqn import PQNConfig, PQNHParams, make_pqn_vdn
from marljax.agents.presets import NO_PRESETS, Preset, lookup, offered
from marljax.agents.qlearning import PRESETS as _Q_PRESETS
from marljax.agents.qlearning import QConfig, QHParams, make_q_learner
from marljax.agents.qtran import PRESETS as _QTRAN_PRESETS
from marljax.agents.qtran import QTRANConfig, QTRANHParams, make_qtran
from marljax.agents.sac import PRESETS as _SAC_PRESETS
from marljax.agents.sac import SACConfig, SACHParams, make_sac
from marljax.agents.shaq import PRESETS as _SHAQ_PRESETS
from marljax.agents.shaq import SHAQConfig, SHAQHParams, make_shaq
from marljax.agents.transf_qmix import PRESETS as _TRANSF_QMIX_PRESETS
from marljax.agents.transf_qmix import (
    TransfQMIXConfig,
    TransfQMIXHParams,
    make_transf_qmix,
)


@dataclasses.dataclass(frozen=True)
class AlgoSpec:
    """How to build an algorithm: its static config class, traced hparams class and factory.

    `config_defaults` are the config values that make the algorithm what it is (e.g. QMIX's
    mixer); `presets` are its published configurations by name (`marljax.agents.presets`), none
    of which changes a value of `config_defaults`.
    """

    name: str
    config_cls: type
    hparams_cls: type
    factory: Callable[[Any, Any, Any], Agent]  # (config, env, env_params) -> Agent
    config_defaults: dict = dataclasses.field(default_factory=dict)
    description: str = ""
    presets: dict[str, Preset] = dataclasses.field(default_factory=dict)


ALGORITHMS: dict[str, AlgoSpec] = {
    "ippo": AlgoSpec(
        "ippo",
        PPOConfig,
        PPOHParams,
        make_ppo,
        {"critic_input": "local"},
        "Independent PPO: decentralised actors, critic on each agent's observation.",
        presets=_PPO_PRESETS["ippo"],
    ),
    "mappo": AlgoSpec(
        "mappo",
        PPOConfig,
        PPOHParams,
        make_ppo,
        {"critic_input": "global"},
        "Multi-agent PPO: decentralised actors, centralised critic on the global state.",
        presets=_PPO_PRESETS["mappo"],
    ),
    "bn_mappo": AlgoSpec(
        "bn_mappo",
        PPOConfig,
        PPOHParams,
        make_ppo,
        {"critic_input": "global", "graph": "learned"},
        "BN-MAPPO: MAPPO with a Bayesian-network joint policy on a context-aware DAG (Chen 2023).",
    ),
    "ia2c": AlgoSpec(
        "ia2c",
        PPOConfig,
        PPOHParams,
        make_ppo,
        {"critic_input": "local", **A2C_OVERRIDES},
        "IA2C: independent advantage actor-critic, PPO with one epoch, one minibatch, raw "
        "advantages and no value clipping (exactly A2C; Huang et al. 2022).",
        presets=_PPO_PRESETS["ia2c"],
    ),
    "maa2c": AlgoSpec(
        "maa2c",
        PPOConfig,
        PPOHParams,
        make_ppo,
        {"critic_input": "global", **A2C_OVERRIDES},
        "MAA2C: advantage actor-critic with a centralised critic on the global state (PPO "
        "configured as A2C).",
        presets=_PPO_PRESETS["maa2c"],
    ),
    "coma": AlgoSpec(
        "coma",
        COMAConfig,
        COMAHParams,
        make_coma,
        {},
        "COMA: decentralised actors trained with a counterfactual baseline from a centralised "
        "critic over the joint action (Foerster et al. 2018).",
        presets=_COMA_PRESETS,
    ),
    "iql": AlgoSpec(
        "iql",
        QConfig,
        QHParams,
        make_q_learner,
        {"mixer": "none"},
        "Independent Q-learning with replay (value-based learner without a mixer).",
        presets=offered(_Q_PRESETS, {"mixer": "none"}),
    ),
    "vdn": AlgoSpec(
        "vdn",
        QConfig,
        QHParams,
        make_q_learner,
        {"mixer": "vdn"},
        "VDN: Q_tot as the sum of per-agent values.",
        presets=offered(_Q_PRESETS, {"mixer": "vdn"}),
    ),
    "qmix": AlgoSpec(
        "qmix",
        QConfig,
        QHParams,
        make_q_learner,
        {"mixer": "qmix"},
        "QMIX: monotonic hypernetwork mixing of per-agent values on the global state.",
        presets=offered(_Q_PRESETS, {"mixer": "qmix"}),
    ),
    "qtran": AlgoSpec(
        "qtran",
        QTRANConfig,
        QTRANHParams,
        make_qtran,
        {"mixer": "qtran"},
        "QTRAN-base: greedy per-agent utilities made a factorization of a joint Q_jt(s, u) by "
        "two constraint losses; no monotonicity (Son et al. 2019).",
        presets=_QTRAN_PRESETS,
    ),
    "transf_qmix": AlgoSpec(
        "transf_qmix",
        TransfQMIXConfig,
        TransfQMIXHParams,
        make_transf_qmix,
        {"mixer": "transf_qmix"},
        "TransfQMIX: QMIX with transformer agents over entity tokens (recurrent hidden token) "
        "and a transformer mixer giving the monotonic mixing weights (Gallici et al. 2023); "
        "needs an env with entity tokens (particle/simple_spread-v0, grid/lbf-*).",
        presets=_TRANSF_QMIX_PRESETS,
    ),
    "pqn_vdn": AlgoSpec(
        "pqn_vdn",
        PQNConfig,
        PQNHParams,
        make_pqn_vdn,
        {},
        "PQN-VDN: parallel Q-learning without replay or target network, layer-normalised "
        "Q-network, Q(lambda) targets of the VDN sum (Gallici et al. 2024; JaxMARL).",
        presets=_PQN_PRESETS,
    ),
    "mfpg": AlgoSpec(
        "mfpg",
        MFPGConfig,
        PPOHParams,
        make_mfpg,
        {},
        "Mean-field policy gradient (Dec-POMFC): shared actor on local observations, critic on "
        "the mean-field global state; runs with any number of agents.",
    ),
    "hasac": AlgoSpec(
        "hasac",
        SACConfig,
        SACHParams,
        make_sac,
        {"sequential": True},
        "HASAC: max-entropy off-policy actor-critic, twin centralised soft Q critic, agents' "
        "actors updated sequentially in a random order (Liu et al. 2024).",
        presets=offered(_SAC_PRESETS, {"sequential": True}),
    ),
    "masac": AlgoSpec(
        "masac",
        SACConfig,
        SACHParams,
        make_sac,
        {"sequential": False},
        "MASAC: HASAC's learner with all agents' actors updated simultaneously.",
        presets=offered(_SAC_PRESETS, {"sequential": False}),
    ),
    "happo": AlgoSpec(
        "happo",
        HAPPOConfig,
        HAPPOHParams,
        make_happo,
        {"actor_update": "ppo"},
        "HAPPO: heterogeneous actors updated one after another in a random order, each on a "
        "clipped surrogate weighted by the earlier agents' ratios; centralised V(s) (Kuba et "
        "al. 2022).",
        presets=_HAPPO_PRESETS["happo"],
    ),
    "hatrpo": AlgoSpec(
        "hatrpo",
        HAPPOConfig,
        HAPPOHParams,
        make_happo,
        {"actor_update": "trpo"},
        "HATRPO: HAPPO's sequential scheme with a KL-constrained natural-gradient step per "
        "agent (conjugate gradient, backtracking line search; Kuba et al. 2022).",
        presets=_HAPPO_PRESETS["hatrpo"],
    ),
    "maddpg": AlgoSpec(
        "maddpg",
        MADDPGConfig,
        MADDPGHParams,
        make_maddpg,
        {},
        "MADDPG: deterministic actors (continuous actions), one centralised critic per agent on "
        "the state and joint action, Polyak targets, Gaussian exploration (Lowe et al. 2017).",
        presets=_MADDPG_PRESETS,
    ),
    "facmac": AlgoSpec(
        "facmac",
        FACMACConfig,
        FACMACHParams,
        make_facmac,
        {},
        "FACMAC: MADDPG's deterministic actors with per-agent utilities mixed by QMIX into "
        "Q_tot and a centralised policy gradient through the mixer (Peng et al. 2021).",
        presets=_FACMAC_PRESETS,
    ),
    "shaq": AlgoSpec(
        "shaq",
        SHAQConfig,
        SHAQHParams,
        make_shaq,
        {"mixer": "shaq"},
        "SHAQ: VDN-style utilities whose non-greedy values are weighted by a learned alpha >= 1 "
        "estimated over sampled coalitions (Markov Shapley values; Wang et al. 2022).",
        presets=_SHAQ_PRESETS,
    ),
    "mat": AlgoSpec(
        "mat",
        MATConfig,
        MATHParams,
        make_mat,
        {},
        "MAT: Multi-Agent Transformer; an encoder over the agents' observations gives per-agent "
        "values, a decoder generates the joint action agent by agent, trained with PPO's "
        "clipped objective (Wen et al. 2022).",
        presets=_MAT_PRESETS,
    ),
}


def algo_spec(name: str) -> AlgoSpec:
    """The `AlgoSpec` of `name`; unknown names raise `KeyError` with close matches."""
    if name not in ALGORITHMS:
        folded = {a.lower(): a for a in ALGORITHMS}  # `MAPPO` -> `mappo` first
        close = [folded[name.lower()]] if isinstance(name, str) and name.lower() in folded else []
        close += [
            c
            for c in difflib.get_close_matches(str(name), list(ALGORITHMS), n=3, cutoff=0.4)
            if c not in close
        ]
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise KeyError(
            f"Unknown algorithm {name!r}.{hint} Available: {', '.join(sorted(ALGORITHMS))}."
        )
    return ALGORITHMS[name]


def preset(algo: str, name: str) -> Preset:
    """The preset `name` of algorithm `algo` (see `AlgoSpec.presets`).

    Args:
      algo: an algorithm of `marljax.agents.ALGORITHMS`.
      name: one of its presets.

    Returns:
      The `Preset`: `.config`, `.hparams` and `.train` are override mappings for the
      algorithm's config class, hparams class and `TrainConfig`.

    Raises:
      KeyError: an unknown algorithm, or a preset the algorithm does not have (the message names
        the algorithm, close matches and the available presets, or why it has none).
    """
    spec = algo_spec(algo)
    if not spec.presets and algo in NO_PRESETS:
        raise KeyError(f"Algorithm {algo!r} has no presets: {NO_PRESETS[algo]}")
    if name not in spec.presets:
        others = [a for a, s in ALGORITHMS.items() if name in s.presets]
        if others:  # e.g. harl_masac under hasac, mappo_paper under ippo
            config = ALGORITHMS[others[0]].presets[name].config
            clash = sorted(
                k for k, v in spec.config_defaults.items() if k in config and config[k] != v
            )
            why = (
                f"it sets {', '.join(clash)}, part of what defines {algo!r}"
                if clash
                else ("it was published for another algorithm")
            )
            raise KeyError(
                f"Preset {name!r} is not offered for algorithm {algo!r} ({why}); it is offered "
                f"for {', '.join(others)}. Presets available for {algo!r}: "
                f"{', '.join(sorted(spec.presets)) or 'none'}."
            )
    return lookup(spec.presets, name, f"algorithm {algo!r}")


__all__ = ["ALGORITHMS", "AlgoSpec", "algo_spec", "preset"]
