"""The CLI and experiment runner: run directory contents, resume, and clear errors on bad input."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import marljax
import marljax.results
from marljax import cli
from marljax.agents import PPOConfig, PPOHParams
from marljax.experiment import Experiment, run_experiment
from marljax.train import TrainConfig

SMALL_ARGS = [
    "--env",
    "matrix/penalty_k0-v0",
    "--seeds",
    "2",
    "--steps",
    str(4 * 4 * 6),
    "--set",
    "num_envs=4",
    "--set",
    "rollout_len=4",
    "--set",
    "hidden_sizes=16",
    "--set",
    "num_minibatches=2",
    "--set",
    "chunk_updates=2",
    "--no-progress",
]


def run_cli(args, capsys):
    code = cli.main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    code = cli.main(["train", *SMALL_ARGS, "--out", str(out), "--name", "run"])
    assert code == 0
    return out / "run"


def test_train_writes_a_complete_run_directory(finished_run):
    files = set(os.listdir(finished_run))
    assert {
        "config.json",
        "metrics.json",
        "metrics.npz",
        "learning_curve.png",
        "checkpoints",
    } <= files
    config = json.loads((finished_run / "config.json").read_text())
    assert config["experiment"]["env"] == "matrix/penalty_k0-v0"
    assert config["resolved"]["seeds"] == [0, 1]
    assert config["resolved"]["agent"]["hidden_sizes"] == [16]
    assert config["versions"]["jax"] == __import__("jax").__version__
    metrics = marljax.results.read_marl_eval(finished_run / "metrics.json")
    runs = metrics["matrix"]["penalty_k0-v0"]["mappo"]
    assert set(runs) == {"seed_0", "seed_1"}
    steps = [k for k in runs["seed_0"] if k.startswith("step_")]
    assert steps and runs["seed_0"][steps[0]]["step_count"] > 0
    assert len(runs["seed_0"]["absolute_metrics"]["return"]) == 1
    with open(finished_run / "learning_curve.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.listdir(finished_run / "checkpoints"), "no checkpoint written"


def test_resume_after_interruption_equals_uninterrupted(tmp_path, finished_run):
    args = cli.build_parser().parse_args(["train", *SMALL_ARGS])
    exp = cli.experiment_from_args(args)
    exp = Experiment(**{**exp.__dict__, "out_dir": str(tmp_path), "name": "cut"})
    partial = run_experiment(exp, progress=False, stop_after_chunks=1)
    assert partial.metrics["episode_return"].shape[-1] == 2  # one chunk of 2 updates
    resumed = run_experiment(exp, resume=partial.run_dir, progress=False)
    full = np.load(finished_run / "metrics.npz")
    for k in full.files:
        np.testing.assert_array_equal(resumed.metrics[k], full[k], err_msg=f"metric {k}")


def test_resume_with_changed_config_is_refused_and_nothing_is_lost(finished_run, capsys):
    before = {
        p: (finished_run / p).read_bytes() for p in ("config.json", "metrics.json", "metrics.npz")
    }
    ckpts = sorted(os.listdir(finished_run / "checkpoints"))
    args = [a if a != "hidden_sizes=16" else "hidden_sizes=32" for a in SMALL_ARGS]
    code, _, err = run_cli(["train", *args, "--resume", str(finished_run)], capsys)
    assert code == 2
    assert "hidden_sizes" in err and "16" in err and "32" in err
    after = {p: (finished_run / p).read_bytes() for p in before}
    assert before == after
    assert sorted(os.listdir(finished_run / "checkpoints")) == ckpts


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--env", "matrix/climbng-v0"], "matrix/climbing-v0"),  # close match listed
        (["--set", "lrr=1e-3"], "'lr'"),
        (["--set", "lr=fast"], "lr must be a number"),
        (["--set", "num_envs=2.5"], "num_envs must be an integer"),
        (["--set", "parameter_mode=private"], "parameter_mode"),
        (["--set", "env.num_roundz=3"], "num_rounds"),
        (["--grid", "num_envs=4,8"], "only traced hparams"),
        (["--algo", "mapo"], "mappo"),
        (["--set", "num_minibatches=3"], "not divisible"),
    ],
)
def test_bad_input_fails_clearly_before_anything_is_written(args, needle, tmp_path, capsys):
    code, _, err = run_cli(["train", *args, "--out", str(tmp_path), "--no-progress"], capsys)
    assert code == 2, err
    assert needle in err, err
    assert os.listdir(tmp_path) == [], "a failed configuration must not create a run directory"


def test_train_help_documents_every_option(capsys):
    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    text = capsys.readouterr().out
    for cls in (TrainConfig, PPOConfig, PPOHParams):
        for f in cls.__dataclass_fields__:
            assert f in text, f"`marljax train --help` does not mention {cls.__name__}.{f}"
    for flag in ("--algo", "--env", "--seeds", "--set", "--grid", "--resume"):
        assert flag in text


def test_envs_lists_every_registered_env(capsys):
    code, out, _ = run_cli(["envs"], capsys)
    assert code == 0
    for env_id in marljax.registered_envs():
        assert env_id in out
    code, out, _ = run_cli(["envs", "--options", "matrix/ipd-v0"], capsys)
    assert code == 0 and "num_rounds" in out


def test_no_arguments_gives_the_documented_default_experiment():
    args = cli.build_parser().parse_args(["train"])
    exp = cli.experiment_from_args(args)
    assert exp == Experiment()
    assert exp.algo == "mappo" and exp.env == "matrix/climbing-v0" and exp.seeds == 4


def test_grid_sweep_through_the_cli(tmp_path, capsys):
    code, out, err = run_cli(
        ["train", *SMALL_ARGS, "--grid", "lr=1e-3,3e-3", "--out", str(tmp_path), "--name", "g"],
        capsys,
    )
    assert code == 0, err
    assert "lr=0.001" in out and "lr=0.003" in out
    data = json.loads((tmp_path / "g" / "metrics.json").read_text())
    assert set(data["matrix"]["penalty_k0-v0"]) == {"mappo[lr=0.001]", "mappo[lr=0.003]"}
