"""Tune while training: PBT and successive halving over the runs axis (issue 44).

One tiny IPPO configuration on the climbing game is compiled for every run here (chunks of 4
updates, 12 updates per run), so the programs are shared through the compilation cache.
"""

from __future__ import annotations

import json
import os

import jax
import numpy as np
import pytest

from marljax.core import config as cfg
from marljax.shell.cli import main as cli_main
from marljax.shell.experiment import Experiment, build
from marljax.shell.tune import run_tune
from marljax.training import execute as ex
from marljax.training import tune
from marljax.training.execute import Chunk
from marljax.training.space import Choice, LogUniform, Uniform

SAMPLE = {"lr": "log:1e-4:1e-2", "ent_coef": "uniform:0.001:0.05"}
TRAIN = {"num_envs": 4, "rollout_len": 4, "total_env_steps": 4 * 4 * 12, "eval_interval": 2}
AGENT = {"hidden_sizes": [8], "num_minibatches": 1, "num_epochs": 1}


def tiny(tmp_path, method: dict, **kw) -> Experiment:
    args = dict(
        algo="ippo", env="matrix/climbing-v0", seeds=2, num_samples=4, sample=SAMPLE,
        train=TRAIN, agent=AGENT, chunk_updates=4, tune=method, out_dir=str(tmp_path),
    )  # fmt: skip
    args.update(kw)
    return Experiment(**args)


# ----------------------------------------------------------------------------- the engine


def test_exploit_copies_exactly_the_donors_states(tmp_path):
    """`Adaptation.source`: every leaf of run r is run source[r]'s, except its own PRNG key."""
    built = build(tiny(tmp_path, {}, num_samples=0, sample={}, seeds=4))
    keys = np.asarray(jax.vmap(jax.random.PRNGKey)(np.arange(4)))
    hparams = jax.tree.map(lambda x: np.repeat(np.asarray(x)[None], 4, 0), built.exp.base_hparams)
    source = np.array([2, 1, 2, 0])
    seen = {}

    def adapt(info: Chunk):
        if info.done == 4:
            seen["before"] = info.state()
            return ex.Adaptation(source=source)
        return None

    def after(info: Chunk):
        if info.done == 4:
            seen["after"] = info.state()

    out = ex.execute(built.trainer, keys, hparams, chunk_updates=4, adapt=adapt, callbacks=[after])
    before, after_ = seen["before"], seen["after"]
    for field in ("agent_state", "env_state", "timestep", "episode_start", "update_idx"):
        for b, a in zip(
            jax.tree.leaves(getattr(before, field)), jax.tree.leaves(getattr(after_, field))
        ):
            np.testing.assert_array_equal(a, np.asarray(b)[source], err_msg=field)
    np.testing.assert_array_equal(after_.key, before.key)  # each run keeps its own key
    # the copies go on differently from their donor (own keys), and every run trained on
    assert out.done == 12 and np.isfinite(out.metrics["env_steps"]).all()
    p0, p2 = (jax.tree.leaves(out.state.agent_state)[0][i] for i in (0, 2))
    assert not np.array_equal(p0, p2)


def test_stopped_runs_keep_their_state_and_report_nan(tmp_path):
    built = build(tiny(tmp_path, {}, num_samples=0, sample={}, seeds=4))
    keys = np.asarray(jax.vmap(jax.random.PRNGKey)(np.arange(4)))
    hparams = jax.tree.map(lambda x: np.repeat(np.asarray(x)[None], 4, 0), built.exp.base_hparams)
    seen = {}

    def adapt(info: Chunk):
        if info.done == 4:
            seen["at_stop"] = info.state()
            return ex.Adaptation(active=np.array([True, False, True, False]))
        return None

    out = ex.execute(built.trainer, keys, hparams, chunk_updates=4, adapt=adapt)
    ret = out.metrics["episode_return"]
    assert np.isnan(ret[[1, 3], 4:]).all() and np.isfinite(ret[[0, 2], 4:]).all()
    assert (out.metrics["env_steps"][[1, 3], 4:] == 0).all()
    for b, a in zip(jax.tree.leaves(seen["at_stop"]), jax.tree.leaves(out.state)):
        np.testing.assert_array_equal(np.asarray(a)[[1, 3]], np.asarray(b)[[1, 3]])
    assert out.active.tolist() == [True, False, True, False]


# ----------------------------------------------------------------------------- the policies


@pytest.mark.parametrize(
    "dist", [LogUniform(1e-4, 1e-2), Uniform(0.0, 0.05), Choice((1.0, 2.0, 4.0))]
)
def test_explore_keeps_every_value_in_its_declared_range(dist):
    rng = np.random.default_rng(0)
    method = tune.PBT(interval=1, resample=0.3, perturb=(0.01, 100.0))
    value = float(dist.values[0]) if isinstance(dist, Choice) else float(dist.high)
    for _ in range(2000):
        value = tune.explore(value, dist, rng, method)
        assert value == float(np.float32(value))
        if isinstance(dist, Choice):
            assert value in dist.values
        else:
            assert dist.low <= value <= dist.high


def _chunk(done: int, values: np.ndarray) -> Chunk:
    return Chunk(done, 100, done - 1, {}, {"m": values}, 1.0, 1.0)


def _tuner(method, scores_shape=(2, 8)):
    P, n = scores_shape
    R = P * n
    from marljax.agents.ppo import PPOHParams

    h = PPOHParams()
    hp = jax.tree.map(lambda x: np.full(R, float(x), np.float32), h)
    hp = hp.replace(lr=np.linspace(1e-3, 2e-3, R).astype(np.float32))
    pops = [[g * P + s for g in range(n)] for s in range(P)]
    return tune.Tuner(method, {"lr": LogUniform(1e-4, 1e-2)}, "m", pops, hp, total=100)


def test_halving_over_identical_runs_keeps_the_declared_fraction():
    for keep, expect in ((0.5, [8, 4, 2, 1]), (0.3, [8, 3, 1, 1])):
        t = _tuner(tune.Halving(rungs=(0.25, 0.5, 0.75), keep=keep))
        counts = []
        for done in (25, 50, 75):
            counts.append([int(t.active[p].sum()) for p in t.populations])
            change = t(_chunk(done, np.ones((16, done))))  # every run scores the same
            assert change is not None and change.source.tolist() == list(range(16))
        counts.append([int(t.active[p].sum()) for p in t.populations])
        assert counts == [[c, c] for c in expect], (keep, counts)


def test_pbt_step_copies_bottom_from_top_within_each_population():
    t = _tuner(tune.PBT(interval=10, fraction=0.25))
    scores = np.arange(16, dtype=float)[:, None] * np.ones((16, 10))  # run r scores r
    change = t(_chunk(10, scores))
    for members in t.populations:
        ranked = sorted(members, key=lambda r: -r)
        top, bottom = set(ranked[:2]), ranked[-2:]
        for r in members:
            if r in bottom:
                assert change.source[r] in top
            else:
                assert change.source[r] == r
    lineage = t.lineage()
    assert len(lineage) == 4 and {c["run"] for c in lineage} == {0, 1, 2, 3}
    assert t(_chunk(11, scores)) is None  # not a step: nothing changes


# ----------------------------------------------------------------------------- resume


@pytest.mark.parametrize("method", [{"method": "pbt", "interval": 4},
                                    {"method": "halving", "rungs": [0.34], "keep": 0.5}])  # fmt: skip
def test_a_resumed_tuning_sweep_equals_the_uninterrupted_one_bitwise(tmp_path, method):
    whole = run_tune(tiny(tmp_path / "a", method), verbose=False)
    cut = run_tune(tiny(tmp_path / "b", method), verbose=False, stop_after_chunks=2)
    assert not cut.finished
    resumed = run_tune(tiny(tmp_path / "b", method), verbose=False, resume=cut.run_dir)
    for name, values in whole.metrics.items():
        np.testing.assert_array_equal(resumed.metrics[name], values, err_msg=name)
    np.testing.assert_array_equal(resumed.population_scores, whole.population_scores)
    assert resumed.best_hparams == whole.best_hparams
    events = [json.load(open(os.path.join(r.run_dir, "tune.json")))["events"]
              for r in (whole, resumed)]  # fmt: skip
    assert events[0] == events[1] and events[0]
    files = set(os.listdir(whole.run_dir))
    assert {"tune.json", "best_config.json", "lineage.png", "learning_curve.png"} <= files
    best = Experiment.from_dict(json.load(open(os.path.join(whole.run_dir, "best_config.json"))))
    assert not best.tune and not best.sample
    assert best.base_hparams.lr == pytest.approx(whole.best_hparams["lr"], rel=1e-6)
    if method["method"] == "halving":  # the stopped half reports NaN after the rung
        ret = whole.metrics["episode_return"].reshape(8, -1)
        stopped = np.isnan(ret[:, 4:]).all(axis=1)
        assert stopped.sum() == 4


# ----------------------------------------------------------------------------- bad input


def test_bad_tuning_input_is_refused_before_anything_compiles(tmp_path):
    with pytest.raises(cfg.ConfigError, match=r"fraction must be in \(0, 0.5\]"):
        tiny(tmp_path, {"method": "pbt", "interval": 4, "fraction": 1.5})
    with pytest.raises(cfg.ConfigError, match=r"keep must be in \(0, 1\)"):
        tiny(tmp_path, {"method": "halving", "keep": 0})
    with pytest.raises(cfg.ConfigError, match=r"rung must be in \(0, 1\)"):
        tiny(tmp_path, {"method": "halving", "rungs": [0.5, 1.2]})
    with pytest.raises(cfg.ConfigError, match="declared ranges"):
        tiny(tmp_path, {"method": "pbt", "interval": 4}, sample={}, num_samples=0)
    with pytest.raises(cfg.ConfigError, match="a grid cannot be tuned"):
        tiny(tmp_path, {"method": "pbt", "interval": 4}, grid={"clip_eps": [0.1, 0.2]})
    with pytest.raises(cfg.ConfigError, match="Did you mean 'interval'"):
        tiny(tmp_path, {"method": "pbt", "intervall": 4})
    with pytest.raises(cfg.ConfigError, match="not shorter than the run"):
        run_tune(tiny(tmp_path, {"method": "pbt", "interval": 12}), verbose=False)
    with pytest.raises(cfg.ConfigError, match="evaluate at least as often"):
        run_tune(tiny(tmp_path, {"method": "pbt", "interval": 4},
                      train={**TRAIN, "eval_interval": 6}), verbose=False)  # fmt: skip
    with pytest.raises(cfg.ConfigError, match="tune metric"):
        run_tune(tiny(tmp_path, {"method": "pbt", "interval": 4, "metric": "win_rate"}),
                 verbose=False)  # fmt: skip
    assert not os.listdir(tmp_path)  # nothing was written


def test_the_cli_builds_the_tuning_spec(tmp_path, capsys):
    base = ["sweep", "--algo", "ippo", "--env", "matrix/climbing-v0", "--seeds", "2",
            "--num-samples", "4", "--sample", "lr=log:1e-4:1e-2", "--out", str(tmp_path)]  # fmt: skip
    assert cli_main([*base, "--pbt", "4", "--halving", "0.5"]) != 0
    assert "choose one way to tune" in capsys.readouterr().err
    assert cli_main([*base, "--tune-set", "fraction=0.3"]) != 0
    assert "--tune-set needs" in capsys.readouterr().err
    from marljax.shell.cli.parser import build_parser
    from marljax.shell.cli.train import experiment_from_args

    args = build_parser().parse_args(
        [*base, "--halving", "0.25/0.5", "--tune-set", "keep=0.4", "--tune-set", "metric=x"]
    )
    exp = experiment_from_args(args)
    assert exp.tune == {"method": "halving", "rungs": [0.25, 0.5], "keep": 0.4, "metric": "x"}
    assert exp.tuning == tune.Halving(rungs=(0.25, 0.5), keep=0.4)
    assert exp.updates_per_chunk > 0
