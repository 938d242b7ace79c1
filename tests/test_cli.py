"""The CLI and experiment runner: run directory contents, resume, and clear errors on bad input."""

from __future__ import annotations

import json
import os
import sys

import flax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
import marljax.evaluation.results
import marljax.testing
import marljax.training.checkpoint
from marljax.agents import PPOConfig, PPOHParams
from marljax.shell import cli
from marljax.shell.experiment import Experiment, run_experiment
from marljax.training.train import TrainConfig

#: the results and plotting code must not warn (an empty slice is handled, not averaged)
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

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
    metrics = marljax.evaluation.results.read_marl_eval(finished_run / "metrics.json")
    runs = metrics["matrix"]["penalty_k0-v0"]["mappo"]
    assert set(runs) == {"seed_0", "seed_1"}
    steps = [k for k in runs["seed_0"] if k.startswith("step_")]
    assert steps and runs["seed_0"][steps[0]]["step_count"] > 0
    assert len(runs["seed_0"]["absolute_metrics"]["return"]) == 1
    with open(finished_run / "learning_curve.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.listdir(finished_run / "checkpoints"), "no checkpoint written"


def test_resume_skips_a_damaged_newest_checkpoint(tmp_path, finished_run, capsys):
    """The newest checkpoint damaged: resume says so, continues from the one before (metrics cut
    to it, no gap) and ends with the uninterrupted run's numbers."""
    args = cli.build_parser().parse_args(["train", *SMALL_ARGS])
    exp = cli.experiment_from_args(args)
    exp = exp.replace(out_dir=str(tmp_path), name="dmg")
    partial = run_experiment(exp, progress=False, stop_after_chunks=2)  # checkpoints 2 and 4
    newest = os.path.join(partial.run_dir, "checkpoints", "4")
    for root, _, files in os.walk(newest):
        for name in files:
            if not name.startswith("_"):  # keep orbax's markers: a finalised but damaged step
                with open(os.path.join(root, name), "wb") as f:
                    f.write(b"damaged")
    # A reader also takes the newest checkpoint that restores, with a note; the storage
    # library's late reports against the failed read's closed event loop are not printed.
    code, out, err = run_cli(["eval", partial.run_dir, "--episodes", "2"], capsys)
    assert code == 0 and "checkpoint 2)" in out and "skipped Checkpoint 4" in err, err
    assert "Traceback" not in err
    report = type("Report", (), {"exc_type": RuntimeError, "exc_traceback": None,
                                 "exc_value": RuntimeError("Event loop is closed"),
                                 "err_msg": None, "object": None})  # fmt: skip
    sys.unraisablehook(report)
    assert "Event loop" not in capsys.readouterr().err
    code, _, err = run_cli(["train", "--resume", partial.run_dir, "--no-progress"], capsys)
    assert code == 0, err
    assert "skipped checkpoint 4" in err and "continuing from checkpoint 2" in err
    resumed = np.load(os.path.join(partial.run_dir, "metrics.npz"))
    full = np.load(finished_run / "metrics.npz")
    for k in full.files:
        np.testing.assert_array_equal(resumed[k], full[k], err_msg=f"metric {k}")


def test_resume_after_interruption_equals_uninterrupted(tmp_path, finished_run, capsys):
    """`marljax train --resume RUN_DIR` alone: the run's own config, the same final numbers."""
    args = cli.build_parser().parse_args(["train", *SMALL_ARGS])
    exp = cli.experiment_from_args(args)
    exp = exp.replace(out_dir=str(tmp_path), name="cut")
    partial = run_experiment(exp, progress=False, stop_after_chunks=1)
    assert partial.metrics["episode_return"].shape[-1] == 2  # one chunk of 2 updates
    # --check-finite is a choice of each invocation, not part of the static configuration.
    code, out, err = run_cli(
        ["train", "--resume", partial.run_dir, "--check-finite", "--no-progress"], capsys
    )
    assert code == 0, err
    assert partial.run_dir in out
    resumed = np.load(os.path.join(partial.run_dir, "metrics.npz"))
    full = np.load(finished_run / "metrics.npz")
    for k in full.files:
        np.testing.assert_array_equal(resumed[k], full[k], err_msg=f"metric {k}")


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
        (["--grid", "num_envs=4,8"], "static setting of TrainConfig"),
        (["--algo", "mapo"], "mappo"),
        (["--set", "num_minibatches=3"], "not divisible"),
        (["--qtable"], "--qtable needs a value learner"),
        (["--algo", "qmix", "--qtable"], "feed-forward"),
        (["--algo", "qmix", "--set", "sequence_len=3"], "multiple of the replay sequence_len"),
        # 100,000 agents: once a 37 GiB allocation (particle pairs) and a digit-limit error
        (["--env", "particle/simple_spread-v0", "--set", "env.num_agents=100000"], "pairs"),
        (["--env", "matrix/public_goods-v0", "--set", "env.num_agents=100000"], "10^30102"),
    ],
)
def test_bad_input_fails_clearly_before_anything_is_written(args, needle, tmp_path, capsys):
    code, _, err = run_cli(["train", *args, "--out", str(tmp_path), "--no-progress"], capsys)
    assert code == 2, err
    assert needle in err, err
    assert os.listdir(tmp_path) == [], "a failed configuration must not create a run directory"


def test_env_defaults_may_be_infinite_but_user_values_may_not():
    """MPE's default `max_speed = inf` means "no limit": accepted; a user's inf or NaN is not."""
    from marljax.shell.experiment import build

    built = build(Experiment(algo="mappo", env="particle/simple_spread-v0"))
    assert np.isinf(np.asarray(built.env_params.max_speed))
    built.trainer.agent.check_batch(16, 32)  # the whole build went through
    for bad in (float("nan"), float("inf")):
        for field in ("damping", "max_speed"):
            if field == "max_speed" and bad == float("inf"):
                continue  # that is the default itself
            exp = Experiment(algo="mappo", env="particle/simple_spread-v0", env_kwargs={field: bad})
            with pytest.raises(ValueError, match=field):
                build(exp)


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


# ------------------------------------------------------------------------------ --resume


@pytest.mark.parametrize(
    "extra,needles",
    [
        (["--env", "matrix/penalty_k25-v0"], ["env", "penalty_k0-v0", "penalty_k25-v0"]),
        (["--algo", "ippo"], ["algo", "mappo", "ippo"]),
        (["--seeds", "3"], ["seeds", "2", "3"]),
        (["--set", "lr=1e-3"], ["hparams", "lr"]),
        (["--set", "env.max_steps=7"], ["env_kwargs", "max_steps"]),
        (["--grid", "ent_coef=0,0.1"], ["grid", "ent_coef"]),
        (["--set", "gae_lambda=0.5"], ["hparams", "gae_lambda"]),
    ],
)
def test_resume_refuses_each_changed_static_option_naming_it(finished_run, extra, needles, capsys):
    before = sorted(os.listdir(finished_run / "checkpoints"))
    code, _, err = run_cli(
        ["train", "--resume", str(finished_run), *extra, "--no-progress"], capsys
    )
    assert code == 2, err
    assert "differs" in err, err
    for needle in needles:
        assert needle in err, f"{needle!r} not in: {err}"
    assert sorted(os.listdir(finished_run / "checkpoints")) == before


def test_resume_of_a_missing_or_broken_run_dir_fails_clearly(tmp_path, capsys):
    code, _, err = run_cli(["train", "--resume", str(tmp_path / "nope")], capsys)
    assert code == 2 and "not a run directory" in err, err
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{half")
    code, _, err = run_cli(["train", "--resume", str(tmp_path / "broken")], capsys)
    assert code == 2 and "config.json" in err and "Traceback" not in err, err


# ------------------------------------------------------------------------------ --check-finite


class NaNAfterEnv(marljax.testing.CountingEnv):
    """CountingEnv whose rewards turn NaN from step `nan_at` of an episode on (long episodes)."""

    def default_params(self):
        return NaNAfterParams()

    def step(self, key, state, actions, params):
        state, ts = super().step(key, state, actions, params)
        bad = state.count >= params.nan_at
        return state, ts.replace(reward=jnp.where(bad, jnp.nan, ts.reward))


@flax.struct.dataclass
class NaNAfterParams(marljax.testing.CountingParams):
    max_steps: int = 100
    goal: int = 100
    nan_at: int = 10


NAN_ENV = "testing/nan_after-v0"


@pytest.fixture
def nan_env():
    """Registers NaNAfterEnv for one test only (other modules iterate the registry)."""
    from marljax.core import registry

    registry.register(NAN_ENV, NaNAfterEnv, description="rewards turn NaN at step 10")
    try:
        yield NAN_ENV
    finally:
        registry._REGISTRY.pop(NAN_ENV, None)


# 4 envs x 4 steps per update: step 10 of every episode falls in update 3 (chunk 2 of 2 updates).
# No in-training evaluation: its greedy episodes would meet the NaN rewards in update 1.
NAN_ARGS = [
    "--env",
    NAN_ENV,
    "--seeds",
    "2",
    "--seed",
    "5",
    "--steps",
    str(4 * 4 * 6),
    "--set",
    "num_envs=4",
    "--set",
    "rollout_len=4",
    "--set",
    "hidden_sizes=8",
    "--set",
    "num_minibatches=1",
    "--set",
    "num_epochs=1",
    "--set",
    "chunk_updates=2",
    "--set",
    "eval_interval=0",
    "--no-progress",
]


def test_check_finite_stops_at_the_first_nan_and_keeps_the_last_good_checkpoint(
    tmp_path, capsys, nan_env
):
    # on by default: no flag needed
    code, _, err = run_cli(
        ["train", *NAN_ARGS, "--grid", "lr=1e-3,3e-3", "--out", str(tmp_path)] + ["--name", "nan"],
        capsys,
    )
    assert code == 2, err
    assert "update 3 of 6" in err, err
    assert "seed 5" in err and "lr=0.001" in err, err  # the first seed of the first setting
    assert "metric '" in err and "Traceback" not in err, err
    assert "newest checkpoint (update 2)" in err, err
    run = tmp_path / "nan"
    with marljax.training.checkpoint.Checkpointer(run / "checkpoints") as ckpt:
        assert ckpt.all_steps() == [2], "the chunk with the NaN must not be checkpointed"
    assert np.load(run / "metrics.npz")["policy_loss"].shape[-1] == 2


def test_check_finite_accepts_nan_episode_returns_of_updates_where_no_episode_ended(
    tmp_path, capsys
):
    """CountingEnv episodes last 5 steps: updates 1 and 6 (4 steps each) end none: NaN returns."""
    good = [a if a != NAN_ENV else "testing/counting-v0" for a in NAN_ARGS]
    code, _, err = run_cli(
        ["train", *good, "--check-finite", "--out", str(tmp_path), "--name", "b"], capsys
    )
    assert code == 0, err
    returns = np.load(tmp_path / "b" / "metrics.npz")["episode_return"]
    assert np.isnan(returns[..., [0, 5]]).all() and np.isfinite(returns[..., 1:5]).all()


def test_non_finite_parameter_is_named_when_the_metrics_are_finite():
    from marljax.shell.experiment import NonFiniteError, finite_check
    from marljax.training.execute import Chunk

    exp = Experiment(seeds=2, seed=3, train=TrainConfig(num_envs=2, rollout_len=2))

    class B:
        settings = [{"lr": 0.01}, {"lr": 0.1}]

    B.exp = exp
    loss = np.zeros((4, 4), np.float32)  # runs (2 settings x 2 seeds) x 4 updates, all finite
    w = np.ones((4, 2), np.float32)
    w[3, 1] = np.nan  # setting lr=0.1, seed 4
    state = type("S", (), {"agent_state": {"actor": {"w": w}}})()
    info = Chunk(8, 20, 4, {"loss": loss}, {"loss": loss}, 1.0, 1.0, lambda: state)
    with pytest.raises(NonFiniteError, match=r"update 8 .*\['actor'\]\['w'\].*seed 4.*lr=0.1"):
        finite_check(B, None)(info)
    good = type("S", (), {"agent_state": {"w": np.ones((4, 2), np.float32)}})()
    finite_check(B, None)(Chunk(8, 20, 4, {"loss": loss}, {"loss": loss}, 1.0, 1.0, lambda: good))


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--grid", "hidden_sizes=32,64"], "static setting"),
        (["--sample", "lr=log:1e-4:1e-2"], "--num-samples"),
        (["--sample", "lr=gauss:0:1", "--num-samples", "2"], "lr"),
        (["--grid", "lrr=1e-3,1e-4"], "lr"),
    ],
)
def test_sweep_bad_input_fails_before_compiling(args, needle, tmp_path, capsys):
    code, _, err = run_cli(["sweep", *args, "--out", str(tmp_path)], capsys)
    assert code == 2, err
    assert needle in err, err
    assert os.listdir(tmp_path) == []


def test_plot_writes_figures_for_a_run_directory(finished_run, tmp_path, capsys):
    code, out, err = run_cli(["plot", str(finished_run), "--out", str(tmp_path)], capsys)
    assert code == 0, err
    written = [line for line in out.splitlines() if line.endswith(".png")]
    assert written and all(os.path.getsize(p) > 0 for p in written)


def test_optional_fields_parse_as_their_type_or_none():
    """`X | None` config fields (e.g. a target entropy override): numbers, `none`, clear errors."""
    from marljax.core.config import ConfigError, parse_value

    assert parse_value("-2", float | None, None, "t") == -2.0
    assert parse_value(-2, float | None, None, "t") == -2.0
    assert parse_value("none", float | None, 1.0, "t") is None
    assert parse_value(None, int | None, 3, "t") is None
    assert parse_value("7", int | None, None, "t") == 7
    with pytest.raises(ConfigError, match="t must be a number"):
        parse_value("abc", float | None, None, "t")


def test_sweep_never_names_a_diverged_setting_best(tmp_path, capsys):
    """lr=1e30 makes every parameter NaN; its NaN policy would score the climbing game's
    optimum (always action 0). The sweep ranks it last, marks it, and picks the finite one.
    Evaluation every 2nd update: the NaN eval metrics of the other updates are not faults."""
    tiny = ["--set", "num_envs=4", "--set", "rollout_len=4", "--set", "hidden_sizes=8"]
    tiny += ["--set", "num_minibatches=1", "--set", "num_epochs=1", "--set", "eval_interval=2"]
    code, out, err = run_cli(
        ["sweep", "--algo", "mappo", "--env", "matrix/climbing-v0", "--grid", "lr=1e30,1e-3"]
        + ["--seeds", "2", "--steps", "64", *tiny, "--out", str(tmp_path), "--name", "s"],
        capsys,
    )
    assert code == 0, err
    ranking = out[out.index("rank") :].splitlines()
    assert "lr=0.001" in ranking[1] and "NON-FINITE" not in ranking[1]
    assert "lr=1e+30" in ranking[2] and "NON-FINITE in 2 of 2 seeds" in ranking[2]
    assert "best setting: {'lr': 0.001}" in out
    summary = json.loads((tmp_path / "s" / "sweep.json").read_text())
    assert summary["best"]["setting"] == {"lr": 0.001}
    assert summary["ranking"][-1]["non_finite_seeds"] == [0, 1]
    # the diverged setting has no policy: eval and load_policy refuse it, naming the finite one
    run = str(tmp_path / "s")
    code, out, err = run_cli(["eval", run, "--setting", "lr=1e30", "--episodes", "2"], capsys)
    assert code == 2 and "not finite (NaN/inf)" in err and "lr=0.001" in err, (out, err)
    assert "IQM" not in out and "Traceback" not in err
    with pytest.raises(ValueError, match="diverged"):
        marljax.load_policy(run, setting={"lr": 1e30})
    assert marljax.load_policy(run).setting == {"lr": 0.001}  # the default: the finite best

    # every setting diverged: sweep.json names no best, and eval refuses the sweep
    code, out, err = run_cli(
        ["sweep", "--algo", "mappo", "--env", "matrix/climbing-v0", "--grid", "lr=1e20,1e30"]
        + ["--seeds", "2", "--steps", "64", *tiny, "--out", str(tmp_path), "--name", "all"],
        capsys,
    )
    assert code == 1 and "no setting trained without NaN/inf" in out + err
    summary = json.loads((tmp_path / "all" / "sweep.json").read_text())
    assert summary["best"] is None
    code, out, err = run_cli(["eval", str(tmp_path / "all"), "--episodes", "2"], capsys)
    assert code == 2 and "no setting" in err and "names no best" in err, (out, err)


def test_os_and_size_errors_are_messages_before_anything_runs(tmp_path, capsys, finished_run):
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    code, _, err = run_cli(["train", "--out", str(a_file), "--no-progress"], capsys)
    assert code == 2 and "is a file, not a folder" in err and str(a_file) in err
    code, _, err = run_cli(["train", "--set", "num_envs=1000000000", "--no-progress"], capsys)
    assert code == 2 and "int32" in err and "num_envs 1000000000" in err
    # a sweep into an existing run's folder is refused before it trains
    out, name = str(finished_run.parent), finished_run.name
    code, _, err = run_cli(["sweep", "--grid", "lr=1e-3", "--out", out, "--name", name], capsys)
    assert code == 2 and "already holds a run" in err


def test_train_over_the_memory_budget_is_refused_before_anything_is_written(tmp_path, capsys):
    code, _, err = run_cli(
        ["train", *SMALL_ARGS, "--max-memory", "1KiB", "--out", str(tmp_path), "--name", "big"],
        capsys,
    )
    assert code == 2 and "device memory per chunk" in err and "--max-memory" in err
    assert not (tmp_path / "big").exists()


def test_run_directories_know_whose_they_are(tmp_path, capsys, finished_run):
    """A sweep's directory, a folder with another run's files, and a directory another process
    is writing are refused with a message, before anything is compiled or written."""
    from marljax.shell import rundir

    assert json.loads((finished_run / "manifest.json").read_text())["kind"] == "train"
    sweep_dir = tmp_path / "a_sweep"
    rundir.create(str(sweep_dir), "sweep", {})
    (sweep_dir / "config.json").write_text((finished_run / "config.json").read_text())
    code, _, err = run_cli(["train", "--resume", str(sweep_dir), "--no-progress"], capsys)
    assert code == 2 and "is a sweep directory" in err
    taken = tmp_path / "taken"
    (taken / "checkpoints").mkdir(parents=True)
    code, _, err = run_cli(
        ["train", *SMALL_ARGS, "--out", str(tmp_path), "--name", "taken"], capsys
    )
    assert code == 2 and "already holds a run (checkpoints)" in err
    with rundir.lock(str(finished_run)):
        code, _, err = run_cli(["train", "--resume", str(finished_run), "--no-progress"], capsys)
    assert code == 2 and "being written by another marljax process" in err


def test_resume_with_changed_hparams_only_on_purpose(tmp_path, capsys):
    args = cli.build_parser().parse_args(["train", *SMALL_ARGS])
    exp = cli.experiment_from_args(args)
    exp = exp.replace(out_dir=str(tmp_path), name="lr")
    partial = run_experiment(exp, progress=False, stop_after_chunks=1)
    resume = ["train", "--resume", partial.run_dir, "--set", "lr=1e-4", "--no-progress"]
    code, _, err = run_cli(resume, capsys)
    assert code == 2 and "experiment.hparams" in err and "--allow-hparam-change" in err
    code, _, err = run_cli([*resume, "--allow-hparam-change"], capsys)
    assert code == 0, err
    config = json.loads((tmp_path / "lr" / "config.json").read_text())
    assert float(config["experiment"]["hparams"]["lr"]) == 1e-4  # (CLI values are strings)
    (change,) = config["history"]
    assert change["from_update"] == 2 and float(change["hparams"]["lr"]) == 1e-4


def test_sweep_refuses_a_run_over_the_memory_budget(tmp_path, capsys):
    tiny = ["--set", "num_envs=4", "--set", "rollout_len=4", "--set", "hidden_sizes=8"]
    code, _, err = run_cli(
        ["sweep", "--grid", "lr=1e-3", "--seeds", "1", "--steps", "32", *tiny]
        + ["--max-memory", "1KiB", "--out", str(tmp_path), "--name", "big"],
        capsys,
    )
    assert code == 2 and "One run needs about" in err and "--max-memory" in err
    assert not (tmp_path / "big").exists()


def test_config_file_of_a_run_reproduces_it_and_presets_are_reachable(tmp_path):
    """`--config runs/X/config.json` trains run X again bit for bit; `--preset` applies a
    published configuration; a wrong preset, schema or version fails before compiling."""
    base = ["train", "--algo", "iql", "--env", "matrix/climbing-v0", "--seeds", "1", "--steps",
            "128", "--set", "num_envs=4", "--set", "rollout_len=8", "--set", "recurrent=false",
            "--set", "hidden_sizes=8", "--set", "learning_starts=8", "--set", "batch_size=4",
            "--preset", "epymarl", "--out", str(tmp_path), "--no-progress"]  # fmt: skip
    main = cli.main
    assert main([*base, "--name", "a"]) == 0
    saved = json.loads((tmp_path / "a" / "config.json").read_text())
    assert saved["experiment"]["preset"] == "epymarl" and saved["format_version"] >= 2
    assert saved["resolved"]["agent"]["buffer_size"] == 40_000  # from the preset
    conf = str(tmp_path / "a" / "config.json")
    assert main(["train", "--config", conf, "--name", "b", "--no-progress"]) == 0
    a, b = np.load(tmp_path / "a" / "metrics.npz"), np.load(tmp_path / "b" / "metrics.npz")
    for k in a.files:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert main([*base[:-5], "--preset", "pymarl3", "--name", "c"]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format_version": 99, "experiment": {}}))
    assert main(["train", "--config", str(bad), "--name", "d"]) == 2
    bad.write_text(json.dumps({"algo": "iql", "seedz": 2}))
    assert main(["train", "--config", str(bad), "--name", "e"]) == 2
    assert not any((tmp_path / n).exists() for n in ("c", "d", "e"))


def test_auto_chunks_are_one_program_where_the_update_count_allows():
    """`chunk_updates=0` picks a chunk size that divides the run (one compiled program for every
    chunk, none for a shorter tail) with at most 40 chunks, and at least 5 where the run has
    them; only a run with no such divisor (e.g. a prime count over 40) keeps a shorter tail."""
    from marljax.shell.spec import auto_chunk

    for n in range(1, 3000):
        c = auto_chunk(n)
        chunks = -(-n // c)
        assert min(n, 5) <= chunks <= 40, (n, c)
        if n % c:  # only where no count of 5 to 40 equal chunks exists
            assert n > 40 and all(n % k or k < 5 for k in range(1, 41)), (n, c)
    assert [auto_chunk(n) for n in (80, 195, 320, 1953)] == [4, 13, 16, 93]
    assert Experiment(train={"num_envs": 16, "rollout_len": 32}).updates_per_chunk == 4  # 80 / 20


@pytest.mark.parametrize(
    "command", ["train", "sweep", "plot", "eval", "render", "benchmark", "check", "psro"]
)
def test_help_texts_print_plain_percent_signs(command, capsys):
    """Every subcommand's `-h` prints `95%`, never an unformatted `95%%`."""
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "-h"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "%%" not in out and out.strip()


def test_algorithm_names_in_another_case_are_suggested():
    from marljax.agents import algo_spec

    with pytest.raises(KeyError, match="Unknown algorithm 'MAPPO'. Did you mean mappo"):
        algo_spec("MAPPO")


def test_resume_of_a_finished_run_draws_its_missing_figure(tmp_path, finished_run, capsys):
    """A run killed after its last checkpoint but before learning_curve.png: `--resume` says it
    is finished and draws the figure (nothing else changes)."""
    import shutil

    run = tmp_path / "copy"
    shutil.copytree(finished_run, run)
    os.remove(run / "learning_curve.png")
    before = (run / "metrics.npz").read_bytes()
    code, _, err = run_cli(["train", "--resume", str(run), "--no-progress"], capsys)
    assert code == 0 and "is finished" in err
    assert (run / "learning_curve.png").stat().st_size > 0
    assert (run / "metrics.npz").read_bytes() == before


@pytest.mark.parametrize("change", [("activation", "relu"), ("hidden_sizes", [32])])
def test_a_hand_edited_config_is_refused_by_resume_and_eval(tmp_path, finished_run, capsys, change):
    """config.json edited after the run was written (a network the checkpoints do not hold):
    `--resume`, `eval` and `load_policy` refuse it, naming the key; nothing in the run changes."""
    import json
    import shutil

    from marljax.shell.policy import load_policy

    run = tmp_path / "edited"
    shutil.copytree(finished_run, run)
    config = json.loads((run / "config.json").read_text())
    key, value = change
    config["experiment"]["agent"][key] = value
    (run / "config.json").write_text(json.dumps(config))
    before = {p: (run / p).read_bytes() for p in ("config.json", "metrics.npz", "manifest.json")}
    for command in (["train", "--resume", str(run), "--no-progress"], ["eval", str(run)]):
        code, _, err = run_cli(command, capsys)
        assert code == 2, (command, err)
        assert "was changed after the run was written" in err and f"experiment.agent.{key}" in err
        assert "Traceback" not in err
    with pytest.raises(ValueError, match="was changed after the run was written"):
        load_policy(str(run))
    assert before == {p: (run / p).read_bytes() for p in before}


@pytest.mark.parametrize(
    "link", [".lock", "progress.csv", "learning_curve.png", "eval.json.tmp", "checkpoints"]
)
def test_no_write_follows_a_symlink_out_of_a_run_directory(tmp_path, finished_run, capsys, link):
    """A link inside a run directory (to a file or folder outside it): resume and eval refuse
    with the link named, and the target outside is unchanged."""
    import shutil

    run = tmp_path / "linked"
    shutil.copytree(finished_run, run)
    outside = tmp_path / "outside"
    if link == "checkpoints":
        shutil.copytree(run / "checkpoints", outside)
        shutil.rmtree(run / "checkpoints")
    else:
        outside.write_text("keep me")
        if (run / link).exists():
            os.remove(run / link)
    os.symlink(outside, run / link)

    def snapshot():
        if outside.is_dir():
            return sorted(str(p.relative_to(outside)) for p in outside.rglob("*"))
        return outside.read_text()

    before = snapshot()
    for command in (["train", "--resume", str(run), "--steps", str(4 * 4 * 8), "--no-progress"],
                    ["eval", str(run), "--episodes", "2"]):  # fmt: skip
        code, _, err = run_cli(command, capsys)
        assert code == 2, (command, err)
        assert "is a symbolic link" in err and link in err and "Traceback" not in err
        assert snapshot() == before


def test_unbounded_config_files_are_refused_under_2gib(tmp_path):
    """`--config /dev/zero`, a YAML alias chain ("billion laughs"), JSON nested thousands of
    levels and an oversized file: each a `marljax: error:` with exit 2, peak RSS under 2 GiB."""
    import subprocess
    import sys

    laughs = tmp_path / "laughs.yaml"
    rows = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    rows += [f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]" for p, n in zip("abcdefgh", "bcdefghi")]
    laughs.write_text("\n".join(rows) + "\n")
    deep = tmp_path / "deep.json"
    deep.write_text('{"a": ' + "[" * 5000 + "]" * 5000 + "}")
    big = tmp_path / "big.json"
    big.write_text('{"algo": "' + "x" * (5 * 1024 * 1024) + '"}')
    # the child's own peak (VmHWM of its address space: ru_maxrss would count the forking
    # pytest worker's peak, which Linux carries over the exec)
    script = (
        "import re, sys\n"
        "from marljax.shell.cli import main\n"
        "codes = [main(['train', '--config', p]) for p in sys.argv[1:]]\n"
        "peak = re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1)\n"
        "print(codes, peak)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, "/dev/zero", str(laughs), str(deep), str(big)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    codes, rss_kib = out.stdout.strip().rsplit(" ", 1)
    assert codes == "[2, 2, 2, 2]", out.stderr
    assert int(rss_kib) < 2 * 1024 * 1024, f"peak RSS {int(rss_kib) / 1024:.0f} MiB"
    for needle in ("not a regular file", "aliases (*a) are not accepted", "over 32 levels deep",
                   "a config is at most"):  # fmt: skip
        assert needle in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_ctrl_c_is_a_message_not_a_traceback(tmp_path):
    """Ctrl-C in a running `marljax train` (compiling or training): exit 130, one line naming
    how to continue, no traceback."""
    import signal
    import subprocess
    import sys
    import time

    at = SMALL_ARGS.index("--steps") + 1
    long = [*SMALL_ARGS[:at], str(4 * 4 * 100_000), *SMALL_ARGS[at + 1 :]]  # more than we wait
    # (through `as_terminal`: Ctrl-C as a terminal delivers it, even under a background job)
    launcher = os.path.join(os.path.dirname(os.path.abspath(__file__)), "support", "as_terminal.py")
    command = [sys.executable, launcher, "-m", "marljax.shell.cli", "train", *long,
               "--out", str(tmp_path), "--name", "r"]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not (tmp_path / "r" / "manifest.json").exists():  # the run has started: it compiles
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1]
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 130, err
    assert "marljax: interrupted" in err and "Traceback" not in err


def test_ctrl_c_inside_a_gc_callback_is_not_lost():
    """Ctrl-C that lands in a garbage-collector callback (jax registers one; it happened during
    compilation, and the run went on training) is raised again in the main thread."""
    import gc
    import signal
    import time

    fired = []

    def callback(phase, info):
        if phase == "start" and not fired:
            fired.append(phase)
            raise KeyboardInterrupt  # what the SIGINT handler raises there

    # Python's own SIGINT handler, as in a terminal (a background job's is SIG_IGN)
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    gc.callbacks.append(callback)
    try:
        with pytest.raises(KeyboardInterrupt), cli.interrupts_kept():
            gc.collect()  # Python prints "Exception ignored" and drops the interrupt here
            time.sleep(5)  # (interrupted within about 0.05 s)
    finally:
        gc.callbacks.remove(callback)
        signal.signal(signal.SIGINT, handler)
    assert fired


def test_a_psro_run_of_days_is_refused_and_one_of_minutes_is_announced(capsys):
    """`psro --population 3000` (once still running after 300 s, with nothing printed and
    Ctrl-C ineffective inside its one program): refused with its estimated time."""
    from marljax.shell.cli.train import _check_psro_time

    code, _, err = run_cli(["psro", "--env", "matrix/rps-v0", "--population", "3000"], capsys)
    assert code == 2 and "estimated at 123.0 h" in err and "at most about 1,265" in err, err
    _check_psro_time(400, 8)  # about 5 minutes: runs, with a note
    assert "marljax: note: --population 400" in capsys.readouterr().err
    _check_psro_time(100, 8)  # seconds: nothing to say
    assert capsys.readouterr().err == ""


def test_unbounded_eval_and_psro_sizes_are_refused_under_2gib(finished_run):
    """`eval --episodes 100000000` and `psro --population 100000000` (once an out-of-memory
    traceback and a hang): refused before compiling, nothing written, peak RSS under 2 GiB."""
    import subprocess
    import sys

    before = sorted(p.name for p in finished_run.iterdir())
    script = (
        "import re, sys\n"
        "from marljax.shell.cli import main\n"
        "codes = [main(['eval', sys.argv[1], '--episodes', '100000000']),\n"
        "         main(['psro', '--population', '100000000'])]\n"
        "peak = re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1)\n"
        "print(codes, peak)\n"
    )
    out = subprocess.run([sys.executable, "-c", script, str(finished_run)],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    codes, rss_kib = out.stdout.strip().rsplit(" ", 1)
    assert codes == "[2, 2]", out.stderr
    assert int(rss_kib) < 2 * 1024 * 1024, f"peak RSS {int(rss_kib) / 1024:.0f} MiB"
    assert "use fewer --episodes" in out.stderr and "use a smaller --population" in out.stderr
    assert "Traceback" not in out.stderr
    assert sorted(p.name for p in finished_run.iterdir()) == before


def test_user_errors_of_the_third_probe_are_messages(tmp_path, finished_run, capsys):
    """Each once a traceback or silently ignored: now `marljax: error:` (or argparse's) with
    exit 2, no traceback, and the run directory unchanged."""
    import shutil

    before = (finished_run / "metrics.npz").read_bytes()
    cases = [
        (["train", "--env", "matrix/ipd-v0", "--set", "env.num_rounds=-5"], "num_rounds must be >= 1"),
        (["train", "--env", "matrix/ipd-v0", "--set", "env.num_rounds=0"], "num_rounds must be >= 1"),
        (["eval", str(finished_run), "--crossplay", str(finished_run), "--roles", "5"],
         "must name some but not all of the agents 0..1"),
        (["eval", str(finished_run), "--max-steps", "0"], "--max-steps: must be >= 1"),
        (["eval", str(finished_run), "--episodes", "-3"], "--episodes: must be >= 1"),
    ]  # fmt: skip
    damaged = tmp_path / "damaged"
    shutil.copytree(finished_run, damaged)
    (damaged / "metrics.npz").write_bytes(before[:300])  # truncated
    cases.append((["plot", str(damaged), "--out", str(tmp_path / "p")], "metrics.npz is damaged"))
    for args, needle in cases:
        try:
            code, _, err = run_cli([*args, "--out", str(tmp_path)] if args[0] == "train" else args,
                                   capsys)  # fmt: skip
        except SystemExit as exit_:  # argparse's own refusal
            code, err = exit_.code, capsys.readouterr().err
        assert code == 2, (args, err)
        assert needle in err and "Traceback" not in err, (args, err)
    assert (finished_run / "metrics.npz").read_bytes() == before


def test_the_readme_reproduce_line_makes_a_new_run(tmp_path, finished_run, capsys):
    """`marljax train --config RUN/config.json` reproduces the run in a new directory (the
    stored name is the old run's), with the same numbers."""
    code, out, err = run_cli(
        ["train", "--config", str(finished_run / "config.json"), "--out", str(tmp_path)], capsys
    )
    assert code == 0, err
    (new,) = [p for p in tmp_path.iterdir() if (p / "metrics.npz").exists()]
    old, again = np.load(finished_run / "metrics.npz"), np.load(new / "metrics.npz")
    np.testing.assert_array_equal(again["episode_return"], old["episode_return"])


def test_eval_accepts_the_setting_label_it_prints(tmp_path, capsys):
    """A sweep's labels print 6 significant digits (`lr=0.000346396`); `--setting` takes them."""
    from marljax.shell.policy import _label, _read, _setting_index

    code, _, err = run_cli(["sweep", *SMALL_ARGS, "--sample", "lr=log:1e-4:1e-2", "--num-samples",
                            "2", "--out", str(tmp_path), "--name", "sw"], capsys)  # fmt: skip
    assert code == 0, err
    run = _read(tmp_path / "sw")
    for g, setting in enumerate(run.built.settings):
        assert _setting_index(run, _label(setting)) == g


@pytest.mark.parametrize(
    ("config", "needle"),
    [('{"train": [1]}', "experiment.train must be a mapping"),
     ('{"format_version": 2, "experiment": {"algo": ["x"]}}', "experiment.algo must be an algorithm name"),
     ('{"hparams": [1]}', "hparams must be a mapping")],
)  # fmt: skip
def test_a_wrong_schema_config_names_the_key(tmp_path, capsys, config, needle):
    path = tmp_path / "c.json"
    path.write_text(config)
    code, _, err = run_cli(["train", "--config", str(path), "--steps", "64", "--out", str(tmp_path)],
                           capsys)  # fmt: skip
    assert code == 2 and needle in err and "Traceback" not in err, err


def test_resume_without_checkpoints_says_it_starts_again(tmp_path, finished_run, capsys):
    import shutil

    run = tmp_path / "nockpt"
    shutil.copytree(finished_run, run)
    shutil.rmtree(run / "checkpoints")
    code, _, err = run_cli(["train", "--resume", str(run), "--no-progress"], capsys)
    assert code == 0 and "has no checkpoint; training it again from update 0" in err
