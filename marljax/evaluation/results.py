"""Run results on disk: marl-eval JSON metrics (learning-curve plots: `marljax.evaluation.plots`).

The JSON layout is marl-eval's (Gorsane et al. 2022, instadeepai/marl-eval):
`{env: {task: {algorithm: {run_i: {step_k: {"step_count": int, metric: [values]}, ...,
"absolute_metrics": {metric: [values]}}}}}}`. Our training metrics are the mean return of the
training episodes that finished during each update (one value per step; updates in which no
episode finished are left out).

`load_marl_eval` reads such a file (ours or another framework's, e.g. Mava's) into the
`[runs, tasks]` final scores and `[runs, tasks, T]` learning curves that
`marljax.evaluation.stats` takes; `scores_to_marl_eval` writes arrays back (a round trip).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
from typing import Any

import numpy as np


def to_marl_eval(
    metrics: dict[str, np.ndarray],
    env_id: str,
    algorithm: str,
    run_names: list[str],
    metric_names: tuple[str, ...] = ("episode_return",),
) -> dict[str, Any]:
    """Convert stacked metrics `[R, U]` (runs x updates) into marl-eval's nested dict.

    Args:
      metrics: name -> `[R, U]` array; must include "env_steps".
      env_id: registered id `family/name-vN`; family becomes the environment name, the rest
        the task name.
      algorithm: algorithm name (include the hparams setting when sweeping).
      run_names: `R` names, e.g. `["seed_0", ...]`.
      metric_names: which metrics to export; exported as marl-eval's "return" for
        `episode_return`, a task score `task/<name>` as `<name>` (`win_rate`). Evaluation metrics (`eval/...`, NaN on updates without an
        evaluation) are exported where they have a value, as `eval_<name>` (`eval_return`),
        and the last one in `absolute_metrics` (the final greedy evaluation).
    """
    family, _, task = env_id.partition("/")
    steps = np.asarray(metrics["env_steps"])
    runs: dict[str, Any] = {}
    for r, run in enumerate(run_names):
        entry: dict[str, Any] = {}
        k = 0
        for u in range(steps.shape[-1]):
            row = {"step_count": int(steps[r, u])}
            ok = True
            for m in metric_names:
                v = float(np.asarray(metrics[m])[r, u])
                if not math.isfinite(v) and not m.startswith("eval/"):
                    ok = False
                if math.isfinite(v) or not m.startswith("eval/"):
                    row[_export_name(m)] = [v]
            if ok:
                entry[f"step_{k}"] = row
                k += 1
        final = {}
        for m in metric_names:
            vals = np.asarray(metrics[m])[r]
            vals = vals[np.isfinite(vals)]
            final[_export_name(m)] = [float(vals[-1])] if len(vals) else []
        entry["absolute_metrics"] = final
        runs[run] = entry
    return {family: {task: {algorithm: runs}}}


def _export_name(m: str) -> str:
    if m.startswith("eval/"):
        return "eval_" + _export_name(m[len("eval/") :])
    if m.startswith("task/"):  # a task's own score, e.g. task/win_rate -> win_rate
        return m[len("task/") :]
    return "return" if m == "episode_return" else m.replace("/", "_")


def write_json(path: str | os.PathLike, data: Any) -> None:
    """Write JSON atomically (temporary file, then rename); on an error (e.g. no space) the
    temporary file is removed and `path` keeps its previous content."""
    tmp = f"{os.fspath(path)}.tmp"
    try:
        if os.path.islink(tmp):  # never write through a link (os.replace then replaces it)
            os.remove(tmp)
        nofollow = lambda p, flags: os.open(p, flags | os.O_NOFOLLOW, 0o644)  # noqa: E731
        with open(tmp, "w", opener=nofollow) as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def read_marl_eval(path: str | os.PathLike) -> dict[str, Any]:
    """Read a marl-eval JSON file and validate its nesting.

    Args:
      path: a JSON file in marl-eval's layout (ours or another framework's, e.g. Mava's).

    Returns:
      The nested dict `{env: {task: {algorithm: {run: {...}}}}}`.

    Raises:
      ValueError: naming the first entry that does not follow the layout.
    """
    with open(path) as f:
        data = json.load(f)
    validate_marl_eval(data, source=os.fspath(path))
    return data


def validate_marl_eval(data: Any, source: str = "data") -> None:
    """Check the marl-eval nesting; raise `ValueError` naming the first bad entry.

    Every run needs `absolute_metrics` (a dict of metric -> list of numbers) and its other keys
    must be `step_<k>` dicts with an integer `step_count` and metric -> list of numbers. A
    top-level `"extra"` entry (marl-eval's processed data) is ignored.
    """
    if not isinstance(data, dict):
        raise ValueError(
            f"{source}: expected a JSON object {{env: ...}}, got {type(data).__name__}"
        )
    for env, tasks in _envs(data).items():
        for task, algos in _as_dict(tasks, f"{env}").items():
            for algo, runs in _as_dict(algos, f"{env}/{task}").items():
                for run, steps in _as_dict(runs, f"{env}/{task}/{algo}").items():
                    where = f"{env}/{task}/{algo}/{run}"
                    _as_dict(steps, where)
                    if "absolute_metrics" not in steps:
                        raise ValueError(f"{source}: {where} has no absolute_metrics")
                    for name, entry in steps.items():
                        _as_dict(entry, f"{where}/{name}")
                        if name == "absolute_metrics":
                            continue
                        if not name.startswith("step_") or not name[5:].isdigit():
                            raise ValueError(
                                f"{source}: {where} has key {name!r}; expected step_<k> or "
                                "absolute_metrics"
                            )
                        if "step_count" not in entry:
                            raise ValueError(f"{source}: {where}/{name} has no step_count")


def _envs(data: dict) -> dict:
    return {k: v for k, v in data.items() if k != "extra"}


def _as_dict(x: Any, where: str) -> dict:
    if not isinstance(x, dict):
        raise ValueError(f"marl-eval entry {where} should be an object, got {type(x).__name__}")
    return x


@dataclasses.dataclass
class MarlEvalScores:
    """Score arrays extracted from marl-eval JSON, ready for `marljax.evaluation.stats`.

    Attributes:
      final: algorithm -> `[R, K]` final scores (runs x tasks).
      curves: algorithm -> `[R, K, T]` scores at the `T` logged steps.
      step_counts: `[T]` environment steps of the curve points.
      tasks: the `K` task names, `"<env>/<task>"` (for our runs: the registered env id).
      runs: algorithm -> task -> the run names, in the order of the `R` axis.
      metric: the metric that was read.
    """

    final: dict[str, np.ndarray]
    curves: dict[str, np.ndarray]
    step_counts: np.ndarray
    tasks: list[str]
    runs: dict[str, dict[str, list[str]]]
    metric: str


def load_marl_eval(
    source: str | os.PathLike | dict[str, Any],
    metric: str = "return",
    env: str | None = None,
    final: str = "absolute",
    align: str = "index",
) -> MarlEvalScores:
    """Turn marl-eval JSON (a path or the loaded dict) into `[R, K]` and `[R, K, T]` arrays.

    As in marl-eval, the value of a metric at a step is the mean of its list (e.g. over the
    evaluation episodes). Runs are ordered by name (natural order, `seed_2` before `seed_10`);
    steps by their `step_<k>` index.

    Args:
      source: a JSON path, or the dict `read_marl_eval` returns.
      metric: metric name as written in the file (ours: `"return"`; Mava: e.g.
        `"mean_episode_return"`); a name not in the file raises an error listing those present.
      env: keep only this environment (default: every environment; tasks are `env/task`).
      final: where the final `[R, K]` scores come from: `"absolute"` (each run's
        `absolute_metrics`, marl-eval's convention) or `"last_step"` (the last logged step).
      align: how curve points of different runs are matched: `"index"` (by `step_<k>`; every
        run must log the same number of steps at the same step counts) or `"step_count"` (keep
        only the step counts logged by every run, e.g. for our runs, which skip updates in
        which no episode finished).

    Returns:
      A `MarlEvalScores`.

    Raises:
      ValueError: a missing metric, environment or task (named), runs of unequal length, a
        NaN value, or algorithms with different task sets.
    """
    from marljax.evaluation.stats import stack_scores

    if final not in ("absolute", "last_step"):
        raise ValueError(f"final must be 'absolute' or 'last_step', got {final!r}")
    if align not in ("index", "step_count"):
        raise ValueError(f"align must be 'index' or 'step_count', got {align!r}")
    if isinstance(source, dict):
        data = source
        validate_marl_eval(data)
    else:
        data = read_marl_eval(source)
    envs = _envs(data)
    if env is not None:
        if env not in envs:
            raise ValueError(f"environment {env!r} not in the data; it has {sorted(envs)}")
        envs = {env: envs[env]}

    # algorithm -> task -> run name -> (step_counts [T], values [T], final value)
    table: dict[str, dict[str, dict[str, tuple[np.ndarray, np.ndarray, float]]]] = {}
    for env_name, tasks in envs.items():
        for task, algos in tasks.items():
            label = f"{env_name}/{task}"
            for algo, runs in algos.items():
                per_run = table.setdefault(algo, {}).setdefault(label, {})
                for run in sorted(runs, key=_natural):
                    where = f"{label}/{algo}/{run}"
                    entry = runs[run]
                    steps = sorted(
                        (k for k in entry if k != "absolute_metrics"), key=lambda k: int(k[5:])
                    )
                    counts = np.array([int(entry[k]["step_count"]) for k in steps], np.int64)
                    values = np.array(
                        [_metric_value(entry[k], metric, f"{where}/{k}") for k in steps],
                        np.float64,
                    )
                    if final == "absolute":
                        last = _metric_value(
                            entry["absolute_metrics"], metric, f"{where}/absolute_metrics"
                        )
                    elif len(values):
                        last = float(values[-1])
                    else:
                        raise ValueError(f"{where} has no logged steps for final='last_step'")
                    per_run[run] = (counts, values, last)
    if not table:
        raise ValueError("the marl-eval data holds no runs")

    finals, tasks_order = stack_scores(
        {
            a: {t: [r[2] for r in runs.values()] for t, runs in per.items()}
            for a, per in table.items()
        },
    )
    step_counts, curves_in = _align_curves(table, align)
    curves, _ = stack_scores(curves_in, tasks_order) if step_counts.size else ({}, None)
    run_names = {a: {t: list(runs) for t, runs in per.items()} for a, per in table.items()}
    return MarlEvalScores(finals, curves, step_counts, tasks_order, run_names, metric)


def _natural(name: str) -> tuple:
    head = name.rstrip("0123456789")
    tail = name[len(head) :]
    return (head, int(tail) if tail else -1, name)


def _metric_value(entry: dict, metric: str, where: str) -> float:
    if metric not in entry:
        present = sorted(k for k in entry if k != "step_count")
        raise ValueError(f"metric {metric!r} missing at {where}; present: {present}")
    values = np.asarray(entry[metric], np.float64).reshape(-1)
    if values.size == 0:
        raise ValueError(f"metric {metric!r} at {where} is an empty list")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"metric {metric!r} at {where} holds a NaN/inf value: {values.tolist()}")
    return float(values.mean())


def _align_curves(table: dict, align: str) -> tuple[np.ndarray, dict]:
    """Curves `{algo: {task: [[T] per run]}}` on a common step grid, and that grid `[T]`."""
    runs = [
        (f"{task}/{algo}/{run}", c, v)
        for algo, per in table.items()
        for task, rs in per.items()
        for run, (c, v, _) in rs.items()
    ]
    ref_name, ref, _ = runs[0]
    if align == "index":
        for name, c, _ in runs:
            if len(c) != len(ref) or not np.array_equal(c, ref):
                raise ValueError(
                    f"runs log different steps: {name} has {len(c)} steps "
                    f"(step counts {_short(c)}) but {ref_name} has {len(ref)} "
                    f"({_short(ref)}); use align='step_count' to keep the common step counts"
                )
        grid = ref
    else:
        grid = ref
        for _, c, _ in runs[1:]:
            grid = np.intersect1d(grid, c)
        if len(ref) and not grid.size:
            raise ValueError("no step count is logged by every run; cannot align curves")
    curves = {
        algo: {
            task: [
                v[np.searchsorted(c, grid)] if align == "step_count" else v
                for c, v, _ in rs.values()
            ]
            for task, rs in per.items()
        }
        for algo, per in table.items()
    }
    return np.asarray(grid, np.int64), curves


def _short(x: np.ndarray) -> str:
    x = list(np.asarray(x).tolist())
    return str(x) if len(x) <= 6 else f"[{x[0]}, {x[1]}, ..., {x[-1]}]"


def curve_points(values: np.ndarray, env_steps: np.ndarray, points: int = 10):
    """A run's curve at `points` windows of its updates.

    Args:
      values: `[S, U]` a metric per seed and update (NaN where no episode ended).
      env_steps: `[U]` env steps at each update.
      points: number of windows `K` (at most `U`).

    Returns:
      `(steps [K], curve [S, K])`: the env steps at each window's end and each seed's mean
      over the window (NaN where no episode ended in the whole window).
    """
    values = np.asarray(values, np.float64)
    env_steps = np.asarray(env_steps)
    U = values.shape[-1]
    if U < 1:
        raise ValueError("a run with no update has no curve")
    k = min(points, U)
    edges = np.linspace(0, U, k + 1).round().astype(int)
    curve = np.full((values.shape[0], k), np.nan)
    for j in range(k):
        window = values[:, edges[j] : edges[j + 1]]
        ok = np.isfinite(window)
        with np.errstate(invalid="ignore"):
            curve[:, j] = np.where(
                ok.any(1), np.nansum(window, 1) / np.maximum(ok.sum(1), 1), np.nan
            )
    return env_steps[edges[1:] - 1].astype(np.int64), curve


def aligned_marl_eval(
    metrics: dict[str, np.ndarray],
    env_steps: np.ndarray,
    env_id: str,
    algorithm: str,
    run_names: list[str],
    points: int = 20,
) -> dict[str, Any]:
    """marl-eval JSON whose runs all have the same steps, whatever their logging schedules.

    Each metric's curve is cut into `points` equal windows of the updates (`curve_points`); a
    window in which no episode ended (or no evaluation ran) takes the previous window's value,
    and the steps start at the first window where every run and metric has a value. So every run
    of every file exported with the same `points` has the keys `step_0 .. step_{T-1}` and the
    same metrics in each, plus `absolute_metrics` (each metric's last value), which
    marl-eval's `concatenate_json_files` and `data_process_pipeline` need.

    Args:
      metrics: export name (e.g. `"return"`, `"eval_return"`, `"win_rate"`) -> `[R, U]` values.
      env_steps: `[U]` env steps of the updates.
      env_id: registered id `family/name-vN` (family = marl-eval's env, the rest its task).
      algorithm: the algorithm's name in the file (commas are refused by marl-eval).
      run_names: `R` names, e.g. `["seed_0", ...]`.
      points: windows per run.

    Raises:
      ValueError: a metric with no value at all in some run, or a comma in `algorithm`.
    """
    if "," in algorithm:
        raise ValueError(f"marl-eval refuses commas in algorithm names: {algorithm!r}")
    curves, steps = {}, None
    for name, values in metrics.items():
        steps, curve = curve_points(values, env_steps, points)
        for r in range(curve.shape[0]):
            row = curve[r]
            if not np.isfinite(row).any():
                raise ValueError(f"{name} has no value in run {run_names[r]}")
            for k in range(1, row.size):  # carry the last value over empty windows
                if not np.isfinite(row[k]):
                    row[k] = row[k - 1]
        curves[name] = curve
    start = max(int(np.argmax(np.isfinite(c).all(0))) for c in curves.values())
    family, _, task = env_id.partition("/")
    runs: dict[str, Any] = {}
    for r, run in enumerate(run_names):
        entry: dict[str, Any] = {}
        for t, k in enumerate(range(start, len(steps))):
            entry[f"step_{t}"] = {"step_count": int(steps[k])}
            entry[f"step_{t}"].update({n: [float(c[r, k])] for n, c in curves.items()})
        entry["absolute_metrics"] = {n: [float(c[r, -1])] for n, c in curves.items()}
        runs[run] = entry
    return {family: {task: {algorithm: runs}}}


def scores_to_marl_eval(
    curves: dict[str, np.ndarray],
    step_counts: np.ndarray,
    tasks: list[str],
    metric: str = "return",
    final: dict[str, np.ndarray] | None = None,
    run_names: list[str] | None = None,
) -> dict[str, Any]:
    """Write score arrays as marl-eval JSON (the inverse of `load_marl_eval`).

    Args:
      curves: algorithm -> `[R, K, T]` scores.
      step_counts: `[T]` environment steps of the curve points.
      tasks: `K` names `"<env>/<task>"` (a name without "/" goes to env `"marljax"`).
      metric: metric name to write.
      final: algorithm -> `[R, K]` absolute metrics (default: the last curve point).
      run_names: `R` run names (default `seed_<r>`).

    Returns:
      The nested marl-eval dict (write it with `write_json`).
    """
    out: dict[str, Any] = {}
    steps = np.asarray(step_counts).reshape(-1)
    for algo, arr in curves.items():
        arr = np.asarray(arr, np.float64)
        if arr.ndim != 3 or arr.shape[1] != len(tasks) or arr.shape[2] != len(steps):
            raise ValueError(
                f"curves of {algo!r} must be [R, K={len(tasks)}, T={len(steps)}], got {arr.shape}"
            )
        fin = np.asarray(final[algo]) if final is not None else arr[:, :, -1]
        names = run_names or [f"seed_{r}" for r in range(arr.shape[0])]
        for k, label in enumerate(tasks):
            env_name, _, task = label.partition("/") if "/" in label else ("marljax", "", label)
            runs = out.setdefault(env_name, {}).setdefault(task, {}).setdefault(algo, {})
            for r, run in enumerate(names):
                entry = {
                    f"step_{t}": {"step_count": int(steps[t]), metric: [float(arr[r, k, t])]}
                    for t in range(len(steps))
                }
                entry["absolute_metrics"] = {metric: [float(fin[r, k])]}
                runs[run] = entry
    return out


def __getattr__(name: str) -> Any:
    if name == "plot_learning_curves":  # moved: one run's curves are drawn in `plots`
        import warnings

        from marljax.evaluation.plots import plot_setting_curves

        warnings.warn(
            "marljax.evaluation.results.plot_learning_curves moved to "
            "marljax.evaluation.plots.plot_setting_curves",
            DeprecationWarning,
            stacklevel=2,
        )
        return plot_setting_curves
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
