"""Experiments: one typed description of a run, built once, executed by `marljax.training.execute`.

`run_experiment(Experiment(...))` is what `marljax train` and `marljax sweep` call. The
experiment is validated and resolved when it is constructed (every CLI or JSON string parsed
to its field's type and range-checked; the algorithm's config and hparams resolved from its
defaults, a named preset and the overrides); `build` makes the env, agent and trainer once;
`marljax.training.execute.execute` trains every (setting, seed) run in chunks with the run directory's
callbacks between chunks (finiteness check, metrics, checkpoint, progress). A run directory:

    manifest.json        kind (train / sweep), format version, hash of the static config
    config.json          the experiment (a valid `--config`), resolved configs, hparams, seeds,
                         package versions, git commit
    metrics.json         marl-eval JSON (training-episode returns per update, per seed)
    metrics.npz          every metric as arrays [G, S, U]
    sweep.json           (sweeps) settings ranked by score, the best setting
    learning_curve.png   mean return over seeds with a 95% bootstrap CI band, per setting, and
                         the env's reference returns; a panel per task score (SMAX win rate)
    progress.csv         one line per chunk (marljax.shell.loggers.CSVLogger); tensorboard/ with
                         log=["tensorboard"]; eval.json after `marljax eval`
    checkpoints/         orbax checkpoints of every run's training carry

`run_experiment(exp, resume=RUN_DIR)` continues from the newest complete checkpoint (a sweep
too); a changed static configuration is refused with the differences named, except a larger
`train.total_env_steps` (extending a finished run) and, when allowed, the hyperparameters.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marljax.core import config as cfg
from marljax.evaluation import results
from marljax.shell import outputs, rundir
from marljax.shell.build import (  # noqa: F401  (the experiment's one import path)
    RUNNER_METRICS,
    Built,
    build,
    check_host_memory,
    check_metric,
    describe,
    schedule_notes,
    static_part,
)
from marljax.shell.finite import (  # noqa: F401  (the experiment's one import path)
    NonFiniteError,
    final_returns,
    finite_check,
    finite_runs,
)
from marljax.shell.spec import (  # noqa: F401  (the experiment's one import path)
    CONFIG_VERSION,
    DEFAULT_ENV,
    LOGGERS,
    Experiment,
)
from marljax.training import execute as ex
from marljax.training.checkpoint import Checkpointer


@dataclasses.dataclass
class RunResult:
    """The outcome of `run_experiment` (metrics `[G, S, U]`, state leaves `[G, S, ...]`)."""

    run_dir: str | None
    metrics: dict[str, np.ndarray]
    state: Any
    settings: list[dict]
    finished: bool = True


def run_experiment(
    exp: Experiment | Built,
    resume: str | None = None,
    progress: bool = True,
    stop_after_chunks: int | None = None,
    max_memory_bytes: int | None = None,
    allow_hparam_change: bool = False,
    kind: str = "train",
    write: bool = True,
    callbacks: tuple = (),
    tuner: Any = None,
) -> RunResult:
    """Train an experiment in chunks through `marljax.training.execute.execute`, writing its run
    directory (see the module docstring).

    Args:
      exp: the experiment (or its `build`).
      resume: a run directory to continue from its newest complete checkpoint that its metrics
        cover (from the start if it stopped before its first checkpoint). A finished run is
        left as it is (say so), unless `exp.train.total_env_steps` is larger (extended).
      progress: show a progress bar (tqdm) with env steps/s and ETA.
      stop_after_chunks: stop after this many chunks of this call (tests of interruption).
      max_memory_bytes: device memory one call may use (see `marljax.training.execute.execute`).
      allow_hparam_change: with `resume`, accept changed hyperparameters; config.json records
        them and the old ones in `history`.
      kind: `"train"` or `"sweep"` (the run directory's kind).
      write: write the run directory (False: train in memory only).
      callbacks: more `marljax.training.execute` callbacks (e.g. loggers), after the run directory's.
      tuner: a `marljax.training.tune.Tuner` (or its random-search stand-in) giving every run's
        starting hparams (`.hparams`, leaves `[G * S]`) and adapting them between chunks; its
        `events` go to `tune.json` before each checkpoint and are read back on `resume`.

    Raises:
      ConfigError / KeyError / TypeError: invalid configuration, a mesh that does not divide
        the runs, or one run over the memory budget (nothing is written).
      ValueError: `resume` points to a run with a different static configuration or kind.
      BlockingIOError: another process is writing the run directory.
      NonFiniteError: a NaN/inf with `check_finite` (the newest checkpoint stays good).
    """
    built = exp if isinstance(exp, Built) else build(exp)
    exp = built.exp
    _check_loggers(exp.log)
    check_host_memory(built)  # before the keys of every run are allocated
    if jax.process_index() == 0:
        for note in schedule_notes(built):
            print(f"marljax: note: {note}", file=sys.stderr)
    description = describe(built, kind)
    run_dir = None
    if resume is not None:
        run_dir = os.path.abspath(resume)
        extended = _check_resumable(run_dir, description, kind, allow_hparam_change)
    elif write:
        run_dir = _new_run_dir(exp, kind)
    G, S = len(built.settings), exp.seeds
    keys, hparams = _run_inputs(built, tuner)
    mesh = ex.make_mesh(exp.layout, exp.devices)
    pad = (
        exp.devices is None
    )  # every device by default: pad the runs; an explicit count must divide
    if exp.layout == "runs" and not pad:
        ex.check_divisible(G * S, mesh.size)
    box: list = [None]  # the Checkpointer, once the run directory is open

    def open_dir(stack: contextlib.ExitStack) -> None:
        """Create (new runs: only after the memory check passed) and lock the directory; a
        resumed run's extended budget is written only once the lock is held."""
        if resume is None:
            rundir.create(run_dir, kind, static_part(description), description)
        stack.enter_context(rundir.lock(run_dir))
        if resume is not None and extended is not None:
            results.write_json(os.path.join(run_dir, "config.json"), extended)
        if exp.checkpoint:
            box[0] = stack.enter_context(Checkpointer(os.path.join(run_dir, "checkpoints")))

    with contextlib.ExitStack() as stack:
        start = None
        if resume is not None:
            open_dir(stack)
            if allow_hparam_change:
                _record_hparam_change(run_dir, description)
                with open(os.path.join(run_dir, "config.json")) as f:
                    rundir.record(run_dir, json.load(f))
            if box[0] is None:
                raise FileNotFoundError(f"Cannot resume {run_dir} with checkpoint=False")
            start, hparams = _resume_start(box[0], built, keys, hparams, run_dir, tuner)
            if start is not None and start.done >= exp.train.num_updates:
                return _finished(run_dir, built, start)
        cbs = _chunk_callbacks(built, kind, run_dir, box, stack, tuner)
        if progress and jax.process_index() == 0:
            done0 = 0 if start is None else start.done
            bar = ex.progress_bar(f"{exp.algo} {exp.env}", exp.train.num_updates, done0)
            stack.callback(bar.close)
            cbs.append(bar)
        cbs.extend(callbacks)
        if stop_after_chunks is not None:
            cbs.append(_stop_after(stop_after_chunks))
        prepared = None
        if run_dir is not None and resume is None:
            prepared = lambda: open_dir(stack)  # noqa: E731

        def check(metrics: dict) -> None:  # traced, not yet compiled
            check_metric(exp, metrics)
            if tuner is not None:
                tuner.check(metrics)
            check_host_memory(built, metrics=metrics)

        out = ex.execute(
            built.trainer, keys, hparams, env_params=built.env_params, mesh=mesh,
            layout=exp.layout, pad=pad, chunk_updates=exp.updates_per_chunk, start=start,
            callbacks=cbs, max_memory_bytes=max_memory_bytes, prepared=prepared, check=check,
            say=lambda m: print(f"marljax: {m}", file=sys.stderr),
            adapt=None if tuner is None or tuner.method is None else tuner,
        )  # fmt: skip
    metrics = _grid(out.metrics, G, S)
    if run_dir is not None and out.finished:
        outputs.write_plot(run_dir, built, metrics)
    return _result(run_dir, built, metrics, out.state, out.finished, grid=False)


def _new_run_dir(exp: Experiment, kind: str) -> str:
    """A new run's directory: `exp.name`, or `[sweep_]<algo>_<env>_<time>`, under
    `exp.out_dir` (refused if it holds a run already)."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    prefix = "sweep_" if kind == "sweep" else ""
    name = exp.name or f"{prefix}{exp.algo}_{exp.env.replace('/', '_')}_{stamp}"
    run_dir = os.path.abspath(os.path.join(exp.out_dir, name))
    rundir.refuse_taken(run_dir)
    return run_dir


def _run_inputs(built: Built, tuner: Any) -> tuple[np.ndarray, Any]:
    """Every run's key `[G * S, 2]` (seed `exp.seed + s` in every setting) and hparams (leaves
    `[G * S]`: each setting's repeated over its seeds, or the tuner's); run `r = g * S + s`."""
    exp = built.exp
    G, S = len(built.settings), exp.seeds
    seeds = jnp.arange(exp.seed, exp.seed + S)
    keys = np.tile(np.asarray(jax.vmap(jax.random.PRNGKey)(seeds)), (G, 1))
    if tuner is not None:
        return keys, tuner.hparams
    return keys, jax.tree.map(lambda x: np.repeat(np.asarray(x), S, axis=0), built.hparams)


def _chunk_callbacks(
    built: Built, kind: str, run_dir: str | None, box: list, stack: contextlib.ExitStack,
    tuner: Any,
) -> list[Callable]:  # fmt: skip
    """The run's own callbacks after each chunk, in order: the finiteness check (training
    runs with `check_finite`), then with a run directory metrics.npz / metrics.json,
    tune.json (with a tuner), the checkpoint (`box[0]`, the Checkpointer once the directory is
    open) and the loggers."""
    exp = built.exp
    G, S = len(built.settings), exp.seeds
    cbs: list[Callable] = []
    if exp.check_finite and kind == "train":  # a sweep ranks non-finite runs last
        cbs.append(finite_check(built, lambda: box[0]))
    if run_dir is None:
        return cbs
    cbs.append(lambda c: outputs.write_metrics(run_dir, built, _grid(c.history, G, S)))
    if tuner is not None:
        cbs.append(lambda c: outputs.write_tune_events(run_dir, tuner.events))
    cbs.append(lambda c: box[0].save(c.done, c.state()) if box[0] is not None else None)
    cbs.extend(_loggers(run_dir, built, stack))
    return cbs


def _resume_start(ckpt, built: Built, keys, hparams, run_dir: str, tuner: Any):
    """`(start, hparams)` of a resume: the newest usable checkpoint (None: from update 0, said
    on stderr) and, with a tuner, its events up to there (hparams and active runs)."""
    start = _resume_point(ckpt, built, keys, hparams, run_dir)
    if start is None:
        print(f"marljax: resume: {run_dir} has no checkpoint; training it again from update 0",
              file=sys.stderr)  # fmt: skip
    elif tuner is not None:
        tuner.restore(outputs.read_tune_events(run_dir), start.done)
        hparams, start.active = tuner.hparams, tuner.active
    return start, hparams


def _finished(run_dir: str, built: Built, start: ex.Start) -> RunResult:
    """A resumed run that is already finished: say so, draw its figure if a kill came between
    its last checkpoint and the figure, and return what it has."""
    total = built.exp.train.num_updates
    print(f"marljax: {run_dir} is finished ({start.done} of {total} updates); nothing to do "
          "(--steps N extends it)", file=sys.stderr)  # fmt: skip
    if not os.path.exists(os.path.join(run_dir, "learning_curve.png")):
        G, S = len(built.settings), built.exp.seeds
        outputs.write_plot(run_dir, built, _grid(start.metrics, G, S))
    return _result(run_dir, built, start.metrics, start.state, True)


def _check_loggers(names: tuple) -> None:
    """A missing optional logger package or W&B login, named with the fix, before anything
    runs."""
    import importlib.util

    from marljax.shell.loggers import wandb_ready

    for name in names:
        module = LOGGERS[name]
        if importlib.util.find_spec(module) is None:
            raise cfg.ConfigError(
                f"the {name} logger needs the package {module!r}, which is not installed: "
                f'pip install "marljax[log]"'
            )
    if "wandb" in names and not wandb_ready():
        raise cfg.ConfigError(
            "the wandb logger needs a login before the run starts: run `wandb login`, set "
            "WANDB_API_KEY, or WANDB_MODE=offline (logs locally; `wandb sync` uploads later)"
        )


def _loggers(run_dir: str, built: Built, stack: contextlib.ExitStack) -> list[Callable]:
    """The run directory's loggers: `progress.csv`, then `exp.log`'s (one series per setting
    in a sweep), opened at the first chunk (after the directory exists), closed with `stack`."""
    from marljax.shell import loggers

    exp = built.exp
    out: list[Callable] = [loggers.CSVLogger(os.path.join(run_dir, "progress.csv"))]
    series = loggers.sweep_series(outputs.setting_labels(built), exp.seeds)
    for name in exp.log:
        if name == "tensorboard":
            make = lambda: loggers.TensorBoardLogger(  # noqa: E731
                os.path.join(run_dir, "tensorboard"), series=series)  # fmt: skip
        else:
            make = lambda: loggers.WandbLogger(  # noqa: E731
                series, project="marljax", name=os.path.basename(run_dir), dir=run_dir,
                config=Experiment.to_dict(exp),
            )  # fmt: skip
        out.append(_lazy(make, stack))
    return out


def _lazy(make: Callable, stack: contextlib.ExitStack) -> Callable:
    box: list = []

    def call(info: ex.Chunk) -> None:
        if not box:
            box.append(make())
            stack.callback(box[0].close)
        box[0](info)

    return call


def _stop_after(chunks: int) -> Callable:
    count = [0]

    def stop(_: ex.Chunk) -> bool:
        count[0] += 1
        return count[0] >= chunks

    return stop


def _grid(metrics: dict[str, np.ndarray], G: int, S: int) -> dict[str, np.ndarray]:
    """`[R, ...]` -> `[G, S, ...]` (run `r = g * S + s`)."""
    return {k: np.asarray(v).reshape(G, S, *np.shape(v)[1:]) for k, v in metrics.items()}


def _result(run_dir, built, metrics, state, finished, grid=True) -> RunResult:
    G, S = len(built.settings), built.exp.seeds
    if grid:
        metrics = _grid(metrics, G, S)
    state = jax.tree.map(lambda x: np.asarray(x).reshape(G, S, *np.shape(x)[1:]), state)
    if run_dir is not None and finished and built.exp.league_config is not None:
        outputs.write_league(run_dir, built, state.agent_state)
    return RunResult(run_dir, metrics, state, built.settings, finished)


def _check_resumable(
    run_dir: str, description: dict, kind: str, allow_hparam_change: bool
) -> dict | None:
    """Refuse to resume a directory that is not this run's (kind, format, static config).

    Returns:
      The config.json to write once the run's lock is held when the budget grew (None if not):
      nothing is written here, so a resume refused by another writer's lock changes nothing.
    """
    rundir.check(run_dir, kind)
    with open(os.path.join(run_dir, "config.json")) as f:
        saved = json.load(f)
    rundir.verify(run_dir, saved)
    differences = cfg.diff(static_part(saved), static_part(description))
    if allow_hparam_change:
        differences = [d for d in differences if not d.startswith("experiment.hparams")]
    if differences:
        raise ValueError(
            f"Cannot resume {run_dir}: its configuration differs from this one:\n  "
            + "\n  ".join(differences)
            + ("" if allow_hparam_change or kind != "train" else
               "\n(a change of hyperparameters only is allowed with --allow-hparam-change)")
        )  # fmt: skip
    old_steps = saved["experiment"].get("train", {}).get("total_env_steps")
    new = description["experiment"]["train"]["total_env_steps"]
    if old_steps is not None and new < old_steps:
        raise ValueError(
            f"Cannot resume {run_dir} with fewer env steps ({new:,}) than it was run with "
            f"({old_steps:,})"
        )
    if old_steps is not None and new != old_steps:  # an extended budget: recorded under the lock
        return {**saved, **{
            "experiment": {**saved["experiment"], "train": description["experiment"]["train"]},
            "resolved": description["resolved"],
        }}  # fmt: skip
    return None


def _record_hparam_change(run_dir: str, description: dict) -> None:
    """Rewrite config.json with the new hyperparameters, keeping the old ones in `history`."""
    path = os.path.join(run_dir, "config.json")
    with open(path) as f:
        saved = json.load(f)
    old, new = saved["experiment"].get("hparams", {}), description["experiment"].get("hparams", {})
    if old == new:
        return
    ckpt_dir = os.path.join(run_dir, "checkpoints")
    steps = (
        sorted(int(n) for n in os.listdir(ckpt_dir) if n.isdigit())
        if os.path.isdir(ckpt_dir)
        else []
    )
    history = list(saved.get("history", []))
    history.append(
        {"from_update": steps[-1] if steps else 0, "hparams_before": old, "hparams": new}
    )
    saved["experiment"]["hparams"] = new
    results.write_json(path, {**saved, "history": history})


def _resume_point(ckpt: Checkpointer, built: Built, keys, hparams, run_dir: str):
    """The `marljax.training.execute.Start` to resume from: the newest intact checkpoint that
    metrics.npz covers (None: no checkpoint, start again from update 0 with the same keys).

    metrics.npz (`[G, S, U, ...]`) is written before each checkpoint, so it normally covers the
    newest one; a checkpoint that does not restore or that the metrics do not reach is skipped
    (a note on stderr) for the next older one; the metrics are cut to the checkpoint used.

    Raises:
      ValueError: there are checkpoints but none of them can be used.
    """
    steps = sorted(ckpt.all_steps(), reverse=True)
    if not steps:
        return None
    exp = built.exp
    like = ex.state_like(
        built.trainer, keys, hparams, env_params=built.env_params,
        mesh=ex.make_mesh(exp.layout, exp.devices), layout=exp.layout,
    )  # fmt: skip
    metrics, covered, why = _read_metrics(run_dir)
    if why:  # no metrics history at all: no checkpoint can be continued without a gap
        raise ValueError(
            f"Cannot resume {run_dir}: {why}, so none of its checkpoints "
            f"({', '.join(map(str, steps))}) can be continued without a gap in the metrics. "
            "Put back a copy of metrics.npz, or delete the checkpoints/ folder to train the run "
            "again from update 0."
        )
    skipped = []
    for step in steps:
        if step > covered:
            skipped.append(f"checkpoint {step}: metrics.npz covers {covered} updates")
            continue
        try:
            state = ckpt.restore(like, step)
        except ValueError as err:
            first = str(err).splitlines()[0]
            first = first if len(first) <= 160 else first[:160] + " ..."
            skipped.append(f"checkpoint {step}: cannot be restored ({first})")
            continue
        for note in skipped:
            print(f"marljax: resume: skipped {note}", file=sys.stderr)
        if skipped:
            print(f"marljax: resume: continuing from checkpoint {step}", file=sys.stderr)
        flat = {k: v[:, :, :step].reshape(-1, step, *v.shape[3:]) for k, v in metrics.items()}
        return ex.Start(jax.tree.map(np.asarray, state), step, flat)
    raise ValueError(
        f"Cannot resume {run_dir}: no usable checkpoint ("
        + "; ".join(skipped)
        + "). Delete its checkpoints/ folder to start the run again from update 0."
    )


def _read_metrics(run_dir: str) -> tuple[dict[str, np.ndarray], int, str]:
    """`(metrics, updates they cover, why they cover none)` of a run directory's metrics.npz."""
    path = os.path.join(run_dir, "metrics.npz")
    try:
        with np.load(path) as saved:
            metrics = {k: saved[k] for k in saved.files}
    except FileNotFoundError:
        return {}, 0, "metrics.npz is missing"
    except Exception as err:  # noqa: BLE001  (a damaged file: zip, pickle or value errors)
        text = str(err).splitlines()[0] if str(err) else ""
        text = text if len(text) <= 120 else text[:120] + " ..."
        return {}, 0, f"metrics.npz cannot be read ({type(err).__name__}: {text})"
    if not metrics:
        return {}, 0, "metrics.npz is empty"
    return metrics, min(int(v.shape[2]) for v in metrics.values()), ""


__all__ = [
    "Built",
    "Experiment",
    "NonFiniteError",
    "RunResult",
    "build",
    "check_host_memory",
    "check_metric",
    "describe",
    "final_returns",
    "finite_runs",
    "run_experiment",
    "schedule_notes",
]
