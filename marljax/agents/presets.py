"""Published configurations of the algorithms as named, typed specs (`Preset`), found by name.

A preset is what a paper or a reference implementation ran: static config overrides, traced
hparams overrides and, where the source fixes them, the training loop's sizes (environments,
rollout length, total steps). Each algorithm of `marljax.agents.ALGORITHMS` lists the presets
that apply to it in `AlgoSpec.presets`; `preset(algo, name)` looks one up.

A preset never changes what defines its algorithm: it never sets a key of the algorithm's
`AlgoSpec.config_defaults` to another value (QMIX's mixer, HASAC's sequential update, MAPPO's
critic input, IA2C's single epoch). The value-based presets therefore leave `mixer` to
iql / vdn / qmix, and the SAC presets leave `sequential` to hasac / masac, except
`harl_masac`, which names the simultaneous update and is offered to masac only (`offered`
drops presets that contradict an algorithm).

Applying one (what `Experiment` and `marljax train --preset NAME` do):

    p = preset("mappo", "mappo_paper")
    config = replace_checked(PPOConfig(**spec.config_defaults), p.config, "agent")
    hparams = replace_checked(PPOHParams(), p.hparams, "hparams")
    train_config = replace_checked(TrainConfig(), p.train, "train")

Algorithms without a published configuration here are listed in `NO_PRESETS` with the reason.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from typing import Any

#: `TrainConfig` fields a preset may set (the training loop's sizes, not the agent's)
TRAIN_FIELDS = ("num_envs", "rollout_len", "total_env_steps")


@dataclasses.dataclass(frozen=True)
class Preset:
    """A named published configuration: config, hparams and training-loop overrides, and source.

    Attributes:
      name: the preset's name (`marljax train --preset NAME`).
      config: overrides of the algorithm's static config (`AlgoSpec.config_cls` fields).
      hparams: overrides of its traced hyperparameters (`AlgoSpec.hparams_cls` fields).
      source: the paper or project and its config file, and what is not reproduced.
      train: overrides of `marljax.training.train.TrainConfig` (`num_envs`, `rollout_len`,
        `total_env_steps`) where the source fixes them; applied by the experiment layer.
      notes: anything else a user should know before running it.

    The three override dicts are plain `dict`s (what `marljax.core.config.replace_checked` takes);
    presets are shared constants, so copy one before changing it.
    """

    name: str
    config: dict[str, Any] = dataclasses.field(default_factory=dict)
    hparams: dict[str, Any] = dataclasses.field(default_factory=dict)
    source: str = ""
    train: dict[str, Any] = dataclasses.field(default_factory=dict)
    notes: str = ""

    def __post_init__(self):
        unknown = sorted(set(self.train) - set(TRAIN_FIELDS))
        if unknown:
            raise ValueError(
                f"Preset {self.name!r}: train overrides {unknown} are not among {TRAIN_FIELDS}"
            )


def offered(presets: Mapping[str, Preset], config_defaults: Mapping[str, Any]) -> dict[str, Preset]:
    """The presets that keep an algorithm what it is: none sets a defining key to another value.

    Args:
      presets: a family's presets, by name.
      config_defaults: the algorithm's `AlgoSpec.config_defaults` (what defines it).

    Returns:
      `{name: preset}` of the presets whose config agrees with `config_defaults` on every key
      both set, in the order given.
    """
    return {
        name: p
        for name, p in presets.items()
        if all(p.config[k] == v for k, v in config_defaults.items() if k in p.config)
    }


def lookup(presets: Mapping[str, Preset], name: str, what: str) -> Preset:
    """`presets[name]`; an unknown name raises `KeyError` naming `what`, close matches and all.

    Args:
      presets: the presets to look in, by name.
      name: the preset's name.
      what: what the presets belong to, for the message (e.g. "algorithm 'qmix'").
    """
    if name in presets:
        return presets[name]
    close = difflib.get_close_matches(name, list(presets), n=3, cutoff=0.4)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    available = ", ".join(sorted(presets)) or "none"
    raise KeyError(f"Unknown preset {name!r} for {what}.{hint} Presets available: {available}.")


#: algorithms with no published configuration here, and why
NO_PRESETS: dict[str, str] = {
    "bn_mappo": (
        "the settings of Chen et al. 2023 (context-aware Bayesian-network policies) could not "
        "be checked against a released config file, and the MAPPO presets are recurrent while "
        "the Bayesian-network joint policy needs feed-forward actors (PPOConfig.graph)."
    ),
    "mfpg": (
        "Dec-POMFC (Cui et al. 2024) publishes no configuration for this PPO-based mean-field "
        "learner's fields; the PPO defaults apply (parameter_mode and critic_input are fixed)."
    ),
}


__all__ = ["NO_PRESETS", "TRAIN_FIELDS", "Preset", "lookup", "offered"]
