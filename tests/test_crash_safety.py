"""Crash safety: a training process killed at any moment resumes to the same bits.

A real `marljax train` (or `marljax sweep`) subprocess is killed with SIGKILL several times
(while a checkpoint is being written, and at random moments between chunks), resumed each time
with `marljax train --resume RUN_DIR` (`marljax sweep --resume RUN_DIR`), and finally run to the
end. Its final checkpoint and metrics must equal, bit for bit, those of an uninterrupted run
started alongside it. A checkpoint that was being written when the process died must never be
listed or restored. Adding an agent is one entry of `CASES`.

`marljax benchmark` is killed the same way (on MPE simple spread cells shrunk to test size,
`tests/support/tiny_benchmark.py`) and resumed by running the same command again: every cell's
final checkpoint and metrics, and the benchmark's summary of it, must equal the uninterrupted
benchmark's.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

import marljax
from marljax.training.checkpoint import Checkpointer

UPDATES = 12  # one checkpoint per update: many chances to die inside a write
if os.environ.get("MARLJAX_KILLS"):
    UPDATES = 4 * int(os.environ["MARLJAX_KILLS"])
COMMON = [
    "--env",
    "matrix/ipd-v0",
    "--seeds",
    "2",
    "--seed",
    "3",
    "--steps",
    str(4 * 4 * UPDATES),
    "--set",
    "num_envs=4",
    "--set",
    "rollout_len=4",
    "--set",
    "chunk_updates=1",
    "--no-progress",
]
# A continuous-action particle env, one seed, no in-training evaluation: the smallest program.
CONTINUOUS = ["--env", "particle/simple_spread-v0", "--set", "env.continuous=true"]
CONTINUOUS += ["--seeds", "1", "--set", "hidden_sizes=8", "--set", "eval_interval=0"]
# (id, command, extra arguments): one entry per agent.
CASES = [
    (
        "mappo",
        "train",
        ["--algo", "mappo", "--set", "hidden_sizes=8", "--set", "num_minibatches=2"],
    ),
    (  # a sweep: 2 settings x 2 seeds, one program, killed and resumed as a whole
        "sweep-ippo",
        "sweep",
        ["--algo", "ippo", "--set", "hidden_sizes=8", "--grid", "lr=1e-3,3e-2"],
    ),
    (  # population-based training: 2 populations of 4 draws, exploit/explore every 2 updates
        # (copied states, new hparams and the tuner's events all survive the kills)
        "sweep-pbt",
        "sweep",
        [
            "--algo",
            "ippo",
            "--set",
            "hidden_sizes=8",
            "--sample",
            "lr=log:1e-3:3e-2",
            "--num-samples",
            "4",
            "--pbt",
            "2",
            "--tune-set",
            "metric=episode_return",
        ],
    ),  # fmt: skip
    (  # off-policy: the replay buffer is part of the checkpointed agent state
        "qmix",
        "train",
        [
            "--algo",
            "qmix",
            "--set",
            "hidden_sizes=8",
            "--set",
            "gru_size=8",
            "--set",
            "mixer_embed_dim=8",
            "--set",
            "hypernet_hidden=8",
            "--set",
            "buffer_size=16",
            "--set",
            "batch_size=4",
            "--set",
            "sequence_len=4",
        ],
    ),  # fmt: skip
    (  # continuous actions: the [E, A, 0] action mask is an empty leaf of the checkpoint
        "mappo-continuous",
        "train",
        [*CONTINUOUS, "--algo", "mappo", "--set", "num_minibatches=1", "--set", "num_epochs=1"],
    ),
    (  # off-policy continuous: the replay buffer (with its empty mask leaves) is checkpointed
        "hasac-continuous",
        "train",
        [
            *CONTINUOUS,
            "--algo",
            "hasac",
            "--set",
            "warmup_steps=16",
            "--set",
            "batch_size=8",
            "--set",
            "buffer_size=64",
            "--set",
            "n_step=2",
        ],
    ),  # fmt: skip
    (  # a benchmark of one cell, resumed by running the same command again
        "benchmark",
        "benchmark",
        ["--tasks", "mpe/simple_spread", "--algos", "ippo"],
    ),
]
if os.environ.get("MARLJAX_KILLS"):  # the campaign also kills between and inside two cells
    CASES[-1] = (
        "benchmark",
        "benchmark",
        ["--tasks", "mpe/simple_spread", "--algos", "ippo,mappo"],
    )
    # and a league (PFSP over 3 snapshots; CI resumes a league in tests/test_league.py)
    LEAGUE = [
        "--league",
        "pfsp",
        "--set",
        "league.capacity=3",
        "--set",
        "league.snapshot_interval=2",
    ]
    CASES.append(("league", "train", ["--algo", "ippo", "--set", "hidden_sizes=8", *LEAGUE]))
# `marljax benchmark`'s options (the cells' batch of 4 envs x 4 steps is 16 env steps an update)
BENCHMARK = ["--seeds", "2", "--seed", "3", "--budget", str(16 * UPDATES), "--no-progress"]
# When each kill lands, once the process has written a new checkpoint: "write" as soon as the
# next checkpoint's temporary folder appears (mid-write); a number, that many seconds (plus a
# random fraction) later. Two kills per case (each kill is one more process start, about 12 s
# on 2 cores): one inside a checkpoint write, one at a random moment of a resumed process.
KILL_PLAN = [("write", signal.SIGKILL), (0.0, signal.SIGKILL)]
# The benchmark's third: Ctrl-C inside a checkpoint write (the save is abandoned: exit 130, one
# line and no traceback, from the main thread or orbax's background threads).
KILL_PLANS = {"benchmark": [*KILL_PLAN, ("write", signal.SIGINT)]}
# `MARLJAX_KILLS=N` (a campaign outside CI): N kills, in turn mid-write SIGKILL, SIGKILL at a
# random moment and Ctrl-C (SIGINT) at a random moment; the run needs enough updates for them.
if os.environ.get("MARLJAX_KILLS"):
    _cycle = [("write", signal.SIGKILL), (0.0, signal.SIGKILL), (0.0, signal.SIGINT)]
    KILL_PLAN = [_cycle[i % 3] for i in range(int(os.environ["MARLJAX_KILLS"]))]
    KILL_PLANS = {}
    UPDATES = 4 * len(KILL_PLAN)
SUPPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "support")
TIMEOUT = 240  # seconds for any single wait (a hang fails instead of eating the CI budget)


def start(command: str, args: list[str], cwd) -> subprocess.Popen:
    """A `marljax COMMAND ARGS` process (`benchmark` on the shrunk cells) in `cwd`."""
    # Run outside the repository, importing the marljax that this test imports. The processes share
    # a persistent compilation cache (as a user's resumed runs would): a resumed process loads
    # the compiled program instead of compiling it again. It changes no result (the program is
    # the same), only the test's time.
    root = os.path.dirname(os.path.dirname(os.path.abspath(marljax.__file__)))
    path = [root, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(path),  # the marljax this test imports
        "JAX_PLATFORMS": "cpu",
        "JAX_COMPILATION_CACHE_DIR": str(cwd / "jax_cache"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    }
    if command == "benchmark":
        program = [os.path.join(SUPPORT, "tiny_benchmark.py")]
    else:
        program = ["-m", "marljax.shell.cli", command]
    # (through `as_terminal`: Ctrl-C as a terminal delivers it, even under a background job)
    return subprocess.Popen(
        [sys.executable, os.path.join(SUPPORT, "as_terminal.py"), *program, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def entries(ckpt_dir) -> tuple[list[int], list[str]]:
    """(finalised steps, in-progress temporary entries) of a checkpoint folder."""
    try:
        names = os.listdir(ckpt_dir)
    except FileNotFoundError:
        return [], []
    done = sorted(int(n) for n in names if n.isdigit())
    return done, [n for n in names if not n.isdigit()]


def newest(ckpt_dir) -> int:
    steps = entries(ckpt_dir)[0]
    return steps[-1] if steps else 0


def tmp_step(name: str) -> int:
    """The step of a temporary entry such as `5.orbax-checkpoint-tmp` (-1 if none)."""
    head = name.split(".")[0]
    return int(head) if head.isdigit() else -1


def wait_for(predicate, proc: subprocess.Popen, what: str, poll: float = 0.002) -> bool:
    """Poll until `predicate()`; False if the process exited first."""
    deadline = time.monotonic() + TIMEOUT
    while not predicate():
        if proc.poll() is not None:
            return False
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(poll)
    return True


def finish(proc: subprocess.Popen) -> str:
    out, _ = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, f"training exited with {proc.returncode}:\n{out[-3000:]}"
    return out


def final_state(run_dir) -> dict:
    """The newest checkpoint as raw arrays (no template needed) and the metrics."""
    with Checkpointer(run_dir / "checkpoints") as ckpt:
        step = ckpt.latest_step()
        assert step == UPDATES, f"{run_dir}: newest checkpoint {step}, expected {UPDATES}"
        # host arrays: the runs are CPU processes, this test's process may sit on a GPU
        state = ckpt.restore_numpy(step)
    with np.load(run_dir / "metrics.npz") as m:
        metrics = {k: m[k] for k in m.files}
    return {"state": jax.tree.map(np.asarray, state), "metrics": metrics}


def run_dirs(command: str, extra: list[str], root) -> list:
    """The run directories of a run at `root` (a benchmark's: one per cell, in its order)."""
    if command != "benchmark":
        return [root]
    algos = extra[extra.index("--algos") + 1].split(",")
    return [root / f"mpe_simple_spread__{a}" for a in algos]


def progress(dirs) -> int:
    """Complete checkpoints over the runs (each run's newest step)."""
    return sum(newest(d / "checkpoints") for d in dirs)


def writing(dirs) -> bool:
    """True while a run's next checkpoint has its temporary folder."""
    for d in dirs:
        last = newest(d / "checkpoints")
        if any(tmp_step(n) > last for n in entries(d / "checkpoints")[1]):
            return True
    return False


def summary(root) -> str:
    """A benchmark's stored cells, without their run directory paths (as JSON text: NaN == NaN)."""
    with open(root / "benchmark.json") as f:
        cells = json.load(f)["cells"]
    cells = {k: {f: v for f, v in c.items() if f != "run_dir"} for k, c in cells.items()}
    return json.dumps(cells, sort_keys=True)


@pytest.mark.parametrize(("case", "command", "extra"), CASES, ids=[c[0] for c in CASES])
def test_killed_and_resumed_run_equals_an_uninterrupted_run(case, command, extra, tmp_path):
    rng = random.Random(0)  # the kill plan's random delays (the timing itself is the OS's)
    out = tmp_path / "runs"
    dirs = run_dirs(command, extra, out / "cut")
    if command == "benchmark":  # resumed by the same command
        args = {n: [*BENCHMARK, *extra, "--out", str(out / n)] for n in ("cut", "ref")}
        resume = args["cut"]
    else:
        args = {n: [*COMMON, *extra, "--out", str(out), "--name", n] for n in ("cut", "ref")}
        resume = ["--resume", str(dirs[0]), "--no-progress"]
    proc = start(command, args["cut"], tmp_path)
    reference = None
    kills, mid_write, interrupts = 0, 0, 0
    for plan, sig in KILL_PLANS.get(case, KILL_PLAN):
        if reference is None and wait_for(lambda: progress(dirs) > 0, proc, "a checkpoint"):
            # The program is compiled and cached by now: the reference loads it.
            reference = start(command, args["ref"], tmp_path)
        # First some progress of this process: a new complete checkpoint.
        last = progress(dirs)
        alive = wait_for(lambda last=last: progress(dirs) > last, proc, "a new checkpoint")
        if alive and plan == "write":
            # Then kill while the next checkpoint's temporary folder exists.
            alive = wait_for(lambda: writing(dirs), proc, "a checkpoint write")
        elif alive:
            time.sleep(plan + rng.uniform(0.0, 0.3))  # a random moment
        if not alive or proc.poll() is not None:
            break  # finished before the kill: nothing left to interrupt
        proc.send_signal(sig)
        said, _ = proc.communicate(timeout=TIMEOUT)
        if proc.returncode == 0:  # it had finished (it was exiting when the signal came)
            assert "Traceback" not in said, said[-3000:]
            break
        if sig == signal.SIGINT:
            assert proc.returncode == 130 and "Traceback" not in said, said[-3000:]
            assert "marljax: interrupted" in said
        kills += 1
        interrupts += sig == signal.SIGINT
        for d in dirs:
            steps, tmp = entries(d / "checkpoints")
            if tmp:
                mid_write += 1
                # The half-written checkpoint is not listed, so never restored.
                with Checkpointer(d / "checkpoints") as ckpt:
                    latest = ckpt.latest_step()
                assert latest == (steps[-1] if steps else None)
                assert all(tmp_step(n) > (latest or 0) for n in tmp)
        proc = start(command, resume, tmp_path)
    finish(proc)
    if reference is None:  # (only if the run ended before its first checkpoint)
        reference = start(command, args["ref"], tmp_path)
    finish(reference)
    print(f"{case}: {kills} kills ({interrupts} Ctrl-C), {mid_write} mid-checkpoint")
    assert kills >= 2, f"only {kills} kills landed before the run finished"
    assert mid_write >= 1, "no kill landed inside a checkpoint write"
    for d in dirs:
        assert entries(d / "checkpoints")[1] == [], f"{d}: a temporary checkpoint folder was left"
    if command == "benchmark":
        assert summary(out / "cut") == summary(out / "ref")
    for cut, ref in zip(dirs, run_dirs(command, extra, out / "ref")):
        got, want = final_state(cut), final_state(ref)
        for part in ("metrics", "state"):
            leaves_got, tree_got = jax.tree_util.tree_flatten_with_path(got[part])
            leaves_want, tree_want = jax.tree.flatten(want[part])
            assert tree_got == tree_want, f"{part}: different structure after resume"
            for (path, x), y in zip(leaves_got, leaves_want):
                assert x.dtype == y.dtype and x.shape == y.shape, jax.tree_util.keystr(path)
                assert x.tobytes() == y.tobytes(), (
                    f"{cut.name} {part} {jax.tree_util.keystr(path)} differs after {kills} kills"
                )
