"""Published presets: every (algorithm, preset) pair is valid for its algorithm and builds an agent.

Shapes only (`jax.eval_shape` of `agent.init`): nothing is compiled, so the 1M-transition buffers
of the SAC presets cost nothing.
"""

from __future__ import annotations

import dataclasses

import jax
import pytest

import marljax
from marljax.agents import ALGORITHMS, Preset, algo_spec, preset
from marljax.agents.presets import NO_PRESETS, TRAIN_FIELDS, lookup, offered
from marljax.core import config as cfg
from marljax.training.train import TrainConfig

PAIRS = [(algo, name) for algo, spec in ALGORITHMS.items() for name in spec.presets]

#: the env each family is built on, and the few config values that only fit the tiny env
#: (a Q-learner's replay sequence must fit the one-step matrix game)
ENVS = {
    "PPOConfig": (("matrix/climbing-v0", {}), {}),
    "QConfig": (("matrix/climbing-v0", {}), {"sequence_len": 1}),
    "QTRANConfig": (("matrix/climbing-v0", {}), {"sequence_len": 1}),
    "SHAQConfig": (("matrix/climbing-v0", {}), {"sequence_len": 1}),
    "COMAConfig": (("matrix/climbing-v0", {}), {}),
    "PQNConfig": (("matrix/climbing-v0", {}), {}),
    "TransfQMIXConfig": (("particle/simple_spread-v0", {}), {}),
    "SACConfig": (("particle/simple_spread-v0", {"continuous": True}), {}),
    "MADDPGConfig": (("particle/simple_spread-v0", {"continuous": True}), {}),
    "FACMACConfig": (("particle/simple_spread-v0", {"continuous": True}), {}),
    "MATConfig": (("particle/simple_spread-v0", {}), {}),
    "HAPPOConfig": (("particle/simple_spread-v0", {}), {}),
}


def _configs(algo: str, p: Preset):
    spec = algo_spec(algo)
    config = cfg.replace_checked(spec.config_cls(**spec.config_defaults), p.config, "agent")
    hparams = cfg.replace_checked(spec.hparams_cls(), p.hparams, "hparams")
    return spec, config, hparams


def test_every_algorithm_has_presets_or_a_reason():
    for algo, spec in ALGORITHMS.items():
        assert bool(spec.presets) != (algo in NO_PRESETS), algo
    assert set(NO_PRESETS) <= set(ALGORITHMS)
    assert {"ippo", "mappo", "ia2c", "maa2c", "iql", "vdn", "qmix", "hasac", "masac"} <= {
        a for a, _ in PAIRS
    }


@pytest.mark.parametrize(("algo", "name"), PAIRS)
def test_preset_is_valid_and_keeps_the_algorithm(algo, name):
    p = preset(algo, name)
    assert p.name == name and p.source
    spec, config, hparams = _configs(algo, p)  # unknown keys and out-of-range values raise
    for key, value in spec.config_defaults.items():  # never turns qmix into vdn, hasac into masac
        assert getattr(config, key) == value, (algo, name, key)
    for key in p.hparams:
        assert float(getattr(hparams, key)) == pytest.approx(float(p.hparams[key]))
    assert set(p.train) <= set(TRAIN_FIELDS)
    train = cfg.replace_checked(TrainConfig(), dict(p.train), "train")
    assert train.num_updates >= 1


@pytest.mark.parametrize(("algo", "name"), PAIRS)
def test_preset_builds_an_agent(algo, name):
    spec, config, hparams = _configs(algo, preset(algo, name))
    (env_id, env_kwargs), fit = ENVS[spec.config_cls.__name__]
    env, params = marljax.make(env_id, **env_kwargs)
    agent = spec.factory(dataclasses.replace(config, **fit), env, params)
    state = jax.eval_shape(agent.init, jax.random.PRNGKey(0), hparams)
    assert jax.tree.leaves(state)


def test_published_values():
    mappo = preset("mappo", "mappo_paper")
    assert mappo.hparams["lr"] == 7e-4 and mappo.config["num_epochs"] == 10
    assert mappo.config["value_norm"] and mappo.train["num_envs"] == 128
    ippo = preset("ippo", "jaxmarl")
    assert ippo.hparams["lr"] == 2.5e-4 and ippo.train == {
        "num_envs": 16,
        "rollout_len": 128,
        "total_env_steps": 10_000_000,
    }
    assert preset("maa2c", "epymarl").hparams["ent_coef"] == 0.01
    assert "mixer" not in preset("qmix", "pymarl2").config


def test_sac_presets_keep_the_update_order():
    assert "harl_masac" not in algo_spec("hasac").presets
    assert algo_spec("masac").presets["harl_masac"].config["sequential"] is False
    for name in ("harl", "harl_mpe", "sac_v2"):
        assert "sequential" not in preset("hasac", name).config
        assert _configs("hasac", preset("hasac", name))[1].sequential
        assert not _configs("masac", preset("masac", name))[1].sequential


def test_unknown_names_raise_with_close_matches():
    with pytest.raises(KeyError, match=r"(?s)'qmix'.*pymarl2.*available"):
        preset("qmix", "pymarl3")
    with pytest.raises(KeyError, match="offered for masac"):
        preset("hasac", "harl_masac")
    with pytest.raises(KeyError, match="mappo_paper.*mappo"):
        preset("ippo", "mappo_paper")
    with pytest.raises(KeyError, match="no presets"):
        preset("mfpg", "jaxmarl")
    with pytest.raises(KeyError, match="Unknown algorithm"):
        preset("qmx", "pymarl")
    with pytest.raises(KeyError, match="none"):
        lookup({}, "x", "nothing")


def test_offered_drops_presets_that_change_the_algorithm():
    a, b = Preset("a", {"sequential": False}), Preset("b", {"n_step": 1})
    assert list(offered({"a": a, "b": b}, {"sequential": True})) == ["b"]
    assert list(offered({"a": a, "b": b}, {"sequential": False})) == ["a", "b"]
    with pytest.raises(ValueError, match="train overrides"):
        Preset("c", train={"num_env": 4})


def test_family_lookups_still_work():
    from marljax.agents import qlearning, sac

    config, hp = qlearning.preset("jaxmarl")
    assert config["optimizer"] == "radam" and float(hp.lr) == 5e-3
    config, hp = sac.preset("harl_masac")
    assert config["sequential"] is False


def test_docs_table_lists_every_preset():
    import pathlib
    import re

    text = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "presets.md").read_text()
    listed = set()
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[1].startswith("`"):
            for algo in re.findall(r"`(\w+)`", cells[0]):
                listed.add((algo, cells[1].strip("`")))
        elif len(cells) == 3 and cells[1] == "none":
            assert cells[0].strip("`") in NO_PRESETS
    assert listed == set(PAIRS)
