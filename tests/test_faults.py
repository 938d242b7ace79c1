"""Fault injection: every fault ends in a clear `marljax: error: ...` (or is recovered from) and
loses no data.

One fault per test case. Each case that refuses checks that the command returned exit code 2
within seconds, printed `marljax: error:` without a traceback, and left every file of the run
directory it was pointed at byte for byte as it was. The classes (run directories, damaged
files, OS errors, sizes and memory, non-finite runs, checkpoint writes) are those of
`docs/reliability.md`; crash safety under SIGKILL lives in `tests/test_crash_safety.py`.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from types import SimpleNamespace

import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.shell import cli
from marljax.shell.experiment import run_experiment
from marljax.training.checkpoint import Checkpointer, CheckpointError

# 4 envs x 4 steps per update, 3 updates of 4 (chunks of 1): an unfinished run to damage.
TINY = ["--env", "matrix/penalty_k0-v0", "--seeds", "1", "--set", "num_envs=4"]
TINY += ["--set", "rollout_len=4", "--set", "hidden_sizes=8", "--set", "num_minibatches=1"]
TINY += ["--set", "num_epochs=1", "--set", "chunk_updates=1", "--no-progress"]
STEPS = ["--steps", str(4 * 4 * 4)]
FAST = 10.0  # seconds: a refusal happens before anything is compiled


@pytest.fixture(scope="module")
def partial_run(tmp_path_factory) -> str:
    """An interrupted run: checkpoints 2 and 3 (of 4 updates), metrics of 3 updates."""
    out = tmp_path_factory.mktemp("base")
    args = cli.build_parser().parse_args(["train", *TINY, *STEPS])
    exp = cli.experiment_from_args(args).replace(out_dir=str(out), name="run")
    result = run_experiment(exp, progress=False, stop_after_chunks=3)
    return result.run_dir


def snapshot(folder) -> dict[str, str]:
    """relative path -> sha256 of every file under `folder` (the lock file's pid aside)."""
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            if name == ".lock":
                continue
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, folder)] = hashlib.sha256(f.read()).hexdigest()
    return out


def refused(args, capsys, *needles: str) -> str:
    """Run the CLI in-process; it must refuse quickly with a clear error naming `needles`."""
    t0 = time.perf_counter()
    code = cli.main(args)
    seconds = time.perf_counter() - t0
    err = capsys.readouterr().err
    assert code == 2, err
    assert seconds < FAST, f"the refusal took {seconds:.1f} s"
    assert "marljax: error:" in err and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, f"{needle!r} not in: {err}"
    return err


def damaged_copy(partial_run, tmp_path, damage) -> str:
    run = str(tmp_path / "run")
    shutil.copytree(partial_run, run)
    damage(run)
    return run


def _write(path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def _damage_checkpoints(run: str) -> None:
    for root, _, files in os.walk(os.path.join(run, "checkpoints")):
        for name in files:
            if not name.startswith("_"):  # keep orbax's markers: finalised but damaged steps
                _write(os.path.join(root, name), b"damaged")


# ------------------------------------------------------- run directories and damaged files

#: (id, damage applied to a copy of the interrupted run, words the error must contain)
RESUME_FAULTS = [
    (
        "manifest-damaged",
        lambda run: _write(os.path.join(run, "manifest.json"), b"{half"),
        ["manifest.json is damaged", "cannot be trusted"],
    ),
    (
        "manifest-newer-format",
        lambda run: _write(
            os.path.join(run, "manifest.json"),
            json.dumps({"kind": "train", "format_version": 99}).encode(),
        ),
        ["newer marljax", "format 99"],
    ),
    (
        "manifest-of-a-sweep",
        lambda run: _write(
            os.path.join(run, "manifest.json"),
            json.dumps({"kind": "sweep", "format_version": 1}).encode(),
        ),
        ["is a sweep directory"],
    ),
    (
        "config-damaged",
        lambda run: _write(os.path.join(run, "config.json"), b'{"experiment": '),
        ["config.json"],
    ),
    (
        "metrics-missing",
        lambda run: os.remove(os.path.join(run, "metrics.npz")),
        ["metrics.npz is missing", "without a gap", "checkpoints/"],
    ),
    (
        "metrics-damaged",
        lambda run: _write(os.path.join(run, "metrics.npz"), b"PK\x03\x04 damaged"),
        ["metrics.npz cannot be read", "without a gap"],
    ),
    (
        "every-checkpoint-damaged",
        _damage_checkpoints,
        ["no usable checkpoint", "checkpoint 3: cannot be restored", "checkpoint 2"],
    ),
]


@pytest.mark.parametrize(
    ("damage", "needles"), [f[1:] for f in RESUME_FAULTS], ids=[f[0] for f in RESUME_FAULTS]
)
def test_resume_of_a_damaged_run_directory_is_refused_and_changes_nothing(
    partial_run, tmp_path, capsys, damage, needles
):
    run = damaged_copy(partial_run, tmp_path, damage)
    before = snapshot(run)
    refused(["train", "--resume", run, "--no-progress"], capsys, *needles)
    assert snapshot(run) == before


def test_two_writers_second_process_is_refused(partial_run, tmp_path, capsys):
    """A second `marljax train --resume` of a run another process is writing (the lock is held
    by a real second process) is refused at once, naming that process."""
    run = damaged_copy(partial_run, tmp_path, lambda run: None)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl,os,sys,time\n"
         "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\nos.pwrite(fd, str(os.getpid()).encode(), 0)\n"
         "print('locked', flush=True)\ntime.sleep(60)",
         os.path.join(run, ".lock")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = snapshot(run)
        refused(
            ["train", "--resume", run, "--no-progress"],
            capsys,
            "being written by another marljax process",
            f"pid {holder.pid}",
        )
        assert snapshot(run) == before
        # a refused resume with a larger budget writes nothing either (config.json included:
        # a later plain --resume would otherwise train the refused run's extra updates)
        refused(
            ["train", "--resume", run, "--steps", "100000", "--no-progress"],
            capsys,
            "being written by another marljax process",
        )
        assert snapshot(run) == before
    finally:
        holder.kill()
        holder.wait()


def test_metrics_shorter_than_the_newest_checkpoint_are_cut_never_spliced(
    partial_run, tmp_path, capsys
):
    """metrics.npz covering 2 updates, checkpoints 2 and 3: resume skips checkpoint 3 (saying
    so), continues from 2 and ends with 4 updates of metrics, the first 2 as they were (no gap;
    that the numbers equal an uninterrupted run's is `test_cli.py`'s damaged-checkpoint test)."""

    def cut(run):
        path = os.path.join(run, "metrics.npz")
        with np.load(path) as m:
            short = {k: m[k][:, :, :2] for k in m.files}
        np.savez(path, **short)

    run = damaged_copy(partial_run, tmp_path, cut)
    with np.load(os.path.join(run, "metrics.npz")) as m:
        kept = {k: m[k] for k in m.files}
    assert cli.main(["train", "--resume", run, "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "skipped checkpoint 3: metrics.npz covers 2 updates" in err, err
    assert "continuing from checkpoint 2" in err, err
    with np.load(os.path.join(run, "metrics.npz")) as got:
        assert got["policy_loss"].shape[-1] == 4 and np.isfinite(got["policy_loss"]).all()
        np.testing.assert_array_equal(got["env_steps"][0, 0], 16 * np.arange(1, 5))
        for k, v in kept.items():
            np.testing.assert_array_equal(got[k][:, :, :2], v, err_msg=k)


# ------------------------------------------------------------------------------- OS errors


def _a_file(tmp_path) -> str:
    path = tmp_path / "a_file"
    path.write_text("not a folder")
    return str(path)


#: (id, arguments given tmp_path, words the error must contain)
OS_FAULTS = [
    ("out-is-a-file", lambda t: ["train", "--out", _a_file(t)], ["is a file, not a folder"]),
    (
        "out-under-a-file",
        lambda t: ["sweep", "--grid", "lr=1e-3", "--out", _a_file(t) + "/sub"],
        ["is a file, not a folder"],
    ),
    (  # sysfs refuses new folders for every user (EPERM/EACCES), root included
        "out-read-only",
        lambda t: ["train", "--out", "/sys/marljax_runs"],
        ["cannot create /sys/marljax_runs", "refuses writes"],
    ),
    (
        "config-is-a-directory",
        lambda t: ["train", "--config", str(t)],
        ["is a directory", "config.json"],
    ),
    (
        "config-missing",
        lambda t: ["train", "--config", str(t / "nope.yaml")],
        ["no such file"],
    ),
    (
        "resume-a-file",
        lambda t: ["train", "--resume", _a_file(t)],
        ["is not a run directory"],
    ),
    (
        "resume-an-empty-folder",
        lambda t: ["train", "--resume", str(t)],
        ["is not a run directory"],
    ),
]


@pytest.mark.parametrize(
    ("args", "needles"), [f[1:] for f in OS_FAULTS], ids=[f[0] for f in OS_FAULTS]
)
def test_os_errors_are_messages_naming_the_path(tmp_path, capsys, args, needles):
    argv = args(tmp_path)
    before = snapshot(tmp_path)
    refused([*argv, *TINY, *STEPS], capsys, *needles)
    assert snapshot(tmp_path) == before and not os.path.exists("/sys/marljax_runs")


def test_a_sweep_into_an_existing_run_is_refused_before_training(partial_run, capsys):
    out, name = os.path.dirname(partial_run), os.path.basename(partial_run)
    before = snapshot(partial_run)
    refused(
        ["sweep", "--grid", "lr=1e-3,3e-3", *TINY, *STEPS, "--out", out, "--name", name],
        capsys,
        "already holds a run",
    )
    assert snapshot(partial_run) == before


# ------------------------------------------------------------------------ sizes and memory

SIZE_FAULTS = [
    ("seeds-2e9", ["--seeds", "2000000000"], ["2,000,000,000 runs", "on the host"]),
    ("num-envs-1e9", ["--set", "num_envs=1000000000"], ["int32", "num_envs 1000000000"]),
    (
        "lbf-grid-1e5",
        ["--env", "grid/lbf-v0", "--set", "env.grid_size=100000"],
        ["LBF grid 100000x100000", "int32"],
    ),
]


@pytest.mark.parametrize(
    ("extra", "needles"), [f[1:] for f in SIZE_FAULTS], ids=[f[0] for f in SIZE_FAULTS]
)
def test_sizes_beyond_memory_or_int32_are_refused_before_anything_is_written(
    tmp_path, capsys, extra, needles
):
    refused(["train", *TINY, *STEPS, *extra, "--out", str(tmp_path)], capsys, *needles)
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------------------------ non-finite


def test_diverged_run_exits_non_zero_naming_update_seed_and_setting(tmp_path, capsys):
    """lr=1e30 on the climbing game: NaN parameters whose greedy policy scores the optimum.
    The run must not be reported as a result (in-program evaluation every 2nd update, so
    updates without one carry NaN eval metrics by design and are not the fault)."""
    args = ["train", *TINY, *STEPS, "--env", "matrix/climbing-v0", "--seed", "7"]
    args += ["--set", "lr=1e30", "--set", "eval_interval=2", "--out", str(tmp_path)]
    args += ["--name", "nan"]
    code = cli.main(args)
    out = capsys.readouterr()
    assert code == 2, out.err
    # Adam's first step moves the parameters by about lr (1e30, still finite in float32);
    # the second makes them inf/NaN.
    match = re.search(r"marljax: error: Non-finite value at update (\d) of 4", out.err)
    assert match and int(match.group(1)) <= 2, out.err
    assert "seed 7" in out.err and "lr=1e+30" in out.err and "Traceback" not in out.err
    assert "final return" not in out.out  # no result is reported
    with Checkpointer(tmp_path / "nan" / "checkpoints") as ckpt:
        assert all(step < int(match.group(1)) for step in ckpt.all_steps())


def test_nan_by_design_is_not_a_fault():
    """Episode statistics of updates where no episode ended, and eval metrics of updates
    without an evaluation, are NaN by design; a NaN loss or one NaN where an evaluation ran is
    a fault."""
    from marljax.shell.experiment import finite_runs

    nan = np.nan
    metrics = {  # [G=1, S=2, U=4]
        "loss": np.array([[[0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.3, 0.4]]]),
        "num_episodes": np.array([[[0, 2, 2, 2], [0, 2, 2, 2]]], np.float32),
        "episode_return": np.array([[[nan, 1, 2, 3], [nan, 1, 2, 3]]]),
        "social/efficiency": np.array([[[nan, 1, 1, 1], [nan, 1, 1, 1]]]),
        "eval/num_episodes": np.array([[[nan, 4, nan, 4], [nan, 4, nan, 4]]]),
        "eval/episode_return": np.array([[[nan, 5, nan, 5], [nan, 5, nan, 5]]]),
        "eval/social/efficiency": np.array([[[nan, 1, nan, 1], [nan, 1, nan, 1]]]),
    }
    params = {"w": np.ones((1, 2, 3), np.float32)}
    assert finite_runs(metrics, params).tolist() == [[True, True]]
    for name, where in [
        ("loss", (0, 1, 2)),  # a NaN loss
        ("eval/episode_return", (0, 1, 3)),  # NaN where an evaluation ran
        ("episode_return", (0, 1, 2)),  # NaN where episodes ended
        ("eval/num_episodes", (0, 1, 1)),  # the count itself NaN where others are not
    ]:
        bad = {k: v.copy() for k, v in metrics.items()}
        bad[name][where] = nan
        if name == "eval/num_episodes":
            bad["eval/episode_return"][where] = 5.0
        assert finite_runs(bad, params).tolist() == [[True, False]], name
    bad_params = {"w": np.ones((1, 2, 3), np.float32)}
    bad_params["w"][0, 0, 1] = np.inf
    assert finite_runs(metrics, bad_params).tolist() == [[False, True]]


# ----------------------------------------------------------------------- checkpoint writes


def test_a_failed_checkpoint_write_is_a_clear_error_and_leaves_no_partial_files(
    tmp_path, monkeypatch
):
    """Two faults: a state orbax cannot store, and no space left at the final rename of the
    write. Each raises `CheckpointError` at once naming the folder and the cause; the
    temporary folder is removed and the previous checkpoint restores as it was."""
    from orbax.checkpoint._src.path import async_path

    state = {"w": jnp.arange(3.0), "mask": jnp.zeros((2, 0), bool)}
    with Checkpointer(tmp_path / "c") as ckpt:
        ckpt.save(1, state)
        with pytest.raises(CheckpointError, match=r"Checkpoint 2 could not be written to .*c "):
            ckpt.save(2, {**state, "bad": object()})

        async def no_space(src, dst):
            raise OSError(errno.ENOSPC, "No space left on device", str(dst))

        monkeypatch.setattr(async_path, "rename", no_space)
        t0 = time.perf_counter()
        with pytest.raises(CheckpointError, match="No space left on device") as info:
            ckpt.save(3, state)
        assert time.perf_counter() - t0 < FAST
        assert "newest complete checkpoint is 1, which is intact" in str(info.value)
        monkeypatch.undo()
        assert os.listdir(tmp_path / "c") == ["1"], "a partial checkpoint was left behind"
        assert ckpt.all_steps() == [1]
        back = ckpt.restore(state)
    np.testing.assert_array_equal(back["w"], state["w"])
    assert back["mask"].shape == (2, 0)


def test_a_failed_checkpoint_write_ends_the_process_promptly(tmp_path):
    """A real `marljax train` process whose second checkpoint write fails (no space, injected
    at the write's final rename) exits with code 2 within seconds of the failure, saying so,
    with its first checkpoint intact and no temporary folder (a resume continues from it and
    cuts the metrics to it, as in `test_cli.py`'s damaged-checkpoint test)."""
    stamp = tmp_path / "failed_at"
    script = (
        "import errno, sys, time\n"
        "from orbax.checkpoint._src.path import async_path\n"
        "orig, calls = async_path.rename, []\n"
        "async def rename(src, dst):\n"
        "    if str(dst).endswith('/2'):\n"
        f"        open({str(stamp)!r}, 'w').write(repr(time.time()))\n"
        "        raise OSError(errno.ENOSPC, 'No space left on device', str(dst))\n"
        "    return await orig(src, dst)\n"
        "async_path.rename = rename\n"
        "from marljax import cli\n"
        "sys.exit(cli.main(sys.argv[1:]))\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(marljax.__file__)))
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": root}
    args = ["train", *TINY, *STEPS, "--out", str(tmp_path), "--name", "run"]
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    ended = time.time()
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "marljax: error: Checkpoint 2 could not be written" in proc.stderr
    assert "No space left on device" in proc.stderr and "Traceback" not in proc.stderr
    assert ended - float(stamp.read_text()) < FAST, "the process did not exit promptly"
    assert sorted(os.listdir(tmp_path / "run" / "checkpoints")) == ["1"]
    with np.load(tmp_path / "run" / "metrics.npz") as m:  # written before the failed save
        assert m["episode_return"].shape[-1] == 2  # resume cuts it to checkpoint 1


def test_no_space_while_writing_metrics_or_config_keeps_the_previous_file(tmp_path, monkeypatch):
    """Two faults: the disk fills while config.json / metrics.npz are written. The error
    propagates (naming the file), the previous file is kept and no temporary file is left."""
    from marljax.evaluation import results
    from marljax.shell import outputs

    def no_space(obj, f, **kwargs):  # half written, then the disk is full
        f.write('{"a": ')
        raise OSError(errno.ENOSPC, "No space left on device", f.name)

    def no_space_npz(path, **arrays):
        with open(path, "wb") as f:
            f.write(b"PK\x03\x04 half")
        raise OSError(errno.ENOSPC, "No space left on device", path)

    config = tmp_path / "config.json"
    results.write_json(config, {"a": 1})
    monkeypatch.setattr(results.json, "dump", no_space)
    with pytest.raises(OSError, match="No space left.*config.json.tmp"):
        results.write_json(config, {"a": 2})
    monkeypatch.undo()
    np.savez(tmp_path / "metrics.npz", x=np.arange(3))
    monkeypatch.setattr(outputs.np, "savez", no_space_npz)
    with pytest.raises(OSError, match="No space left.*metrics.tmp.npz"):
        outputs.write_metrics(str(tmp_path), SimpleNamespace(exp=None), {"x": np.arange(4)})
    monkeypatch.undo()
    assert json.loads(config.read_text()) == {"a": 1}
    with np.load(tmp_path / "metrics.npz") as m:
        np.testing.assert_array_equal(m["x"], np.arange(3))
    assert sorted(os.listdir(tmp_path)) == ["config.json", "metrics.npz"]


def test_a_full_disk_at_the_first_write_leaves_no_half_run(tmp_path, monkeypatch):
    """The disk fills while a new run's config.json is written: the error names the path, no
    directory is left (a half-run with only manifest.json could neither resume nor restart),
    and the same command then succeeds."""
    from marljax.shell import rundir

    real = rundir.json.dump

    def no_space(obj, f, **kwargs):
        if str(f.name).endswith("config.json.tmp"):
            raise OSError(errno.ENOSPC, "No space left on device", f.name)
        return real(obj, f, **kwargs)

    run = tmp_path / "runs" / "r"
    monkeypatch.setattr(rundir.json, "dump", no_space)
    with pytest.raises(OSError, match=r"No space left on device: .*config.json.tmp.*left behind"):
        rundir.create(str(run), "train", {"x": 1}, {"experiment": {"algo": "ippo"}})
    assert not run.exists()
    monkeypatch.undo()
    rundir.create(str(run), "train", {"x": 1}, {"experiment": {"algo": "ippo"}})
    assert sorted(os.listdir(run)) == ["config.json", "manifest.json"]
