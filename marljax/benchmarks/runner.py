"""`marljax benchmark`: algorithms x tasks x seeds, one compiled seeds program per cell, resumable.

A benchmark directory holds one run directory per cell (`<task>__<algo>/`, an ordinary marljax
run: config, checkpoints, metrics, marl-eval JSON, learning curve) and:

    benchmark.json       the plan (cells, seeds, budget) and each finished cell's summary:
                         per-seed final scores, their IQM and 95% CI, the curve at 10 points
    results.md           the results table: IQM [95% CI] of each cell's score beside the
                         published number, with the budget it was run at
    performance_profile.png   score distributions of the algorithms over every task
                         (scores normalised per task, see `normalised_scores`)

A killed benchmark resumes where it stopped: finished cells (in `benchmark.json`) are not run
again, an unfinished cell continues from its newest checkpoint (`run_experiment(resume=...)`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
from typing import Any

import numpy as np

from marljax.benchmarks import scores
from marljax.benchmarks.suite import TASKS, Cell, cell, experiment_kwargs
from marljax.core.config import ConfigError
from marljax.evaluation import results

#: the packaged published numbers (`{cell name: {...}}`), see `published`
PUBLISHED_PATH = os.path.join(os.path.dirname(__file__), "data", "published.json")
PLAN = "benchmark.json"


def published() -> dict[str, dict[str, Any]]:
    """The published numbers of the suite's cells, by cell name (`"smax/2s3z:mappo"`).

    Each entry: `value`, `ci` (`[low, high]` or None), `metric`, `statistic`, `budget`,
    `seeds`, `source` and `from_figure` (read off a figure, about +-0.03).
    """
    with open(PUBLISHED_PATH) as f:
        return json.load(f)["cells"]


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a benchmark directory runs: cells, seeds, budget and any configuration overrides
    (`marljax benchmark --set`: an ablation of the published configurations)."""

    cells: tuple[str, ...]
    seeds: int
    seed: int
    budget: str  # "published", "cpu" or a number of env steps
    overrides: tuple[tuple[str, str], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The plan as stored in `benchmark.json` (no `overrides` key when there are none, as
        the directories written before overrides existed)."""
        out = dataclasses.asdict(self)
        out["cells"] = list(out["cells"])
        out.pop("overrides")
        if self.overrides:
            out["overrides"] = dict(self.overrides)
        return out

    def steps(self, c: Cell) -> int:
        """The env steps of cell `c` under this plan's budget."""
        if self.budget == "published":
            return c.budget
        if self.budget == "cpu":
            return c.cpu_budget
        return int(self.budget)


def plan_cells(tasks: list[str], algos: list[str]) -> list[Cell]:
    """The cells of `algos` x `tasks`, checked before anything is built.

    Raises:
      KeyError: an unknown task or algorithm, or an algorithm without a cell on a task (its
        action space does not fit, or no source configures it), naming what exists.
    """
    out = []
    for t in tasks:
        for a in algos:
            out.append(cell(t, a))
    return out


def with_overrides(c: Cell, kwargs: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Cell `c`'s experiment fields (`experiment_kwargs`) with `overrides` routed by field name
    into its agent config, its hparams or its `TrainConfig` (as `marljax train --set`).

    Raises:
      ConfigError: a key that is none of these for `c`'s algorithm (with close matches), the
        budget (`total_env_steps`: use the benchmark's budget) or an env option (the task fixes
        its env).
    """
    from marljax.agents import algo_spec
    from marljax.core import config as cfg
    from marljax.training.train import TrainConfig

    for key in overrides:
        if key.startswith("env."):
            raise ConfigError(
                f"benchmark --set {key}: a task's env options are part of the task; choose "
                "another task, or train the changed env with marljax train"
            )
        if key == "total_env_steps":
            raise ConfigError("benchmark --set total_env_steps: set the env steps with --budget")
    spec = algo_spec(c.algo)
    groups = {
        "train": set(cfg.field_names(TrainConfig)),
        "agent": set(cfg.field_names(spec.config_cls)),
        "hparams": set(cfg.field_names(spec.hparams_cls)),
    }
    routed = cfg.route_assignments(dict(overrides), groups, f"benchmark --set (cell {c.name})")
    return {**kwargs, **{g: {**kwargs[g], **v} for g, v in routed.items() if v}}


def parse_budget(budget: str | int) -> str:
    """`"published"`, `"cpu"` or a positive number of env steps (as text)."""
    text = str(budget).strip().lower()
    if text in ("published", "cpu"):
        return text
    try:
        steps = int(float(text))
    except ValueError:
        raise ConfigError(
            f"budget must be 'published', 'cpu' or a number of env steps, got {budget!r}"
        ) from None
    if steps < 1 or steps != float(text):
        raise ConfigError(f"budget must be a positive whole number of env steps, got {budget!r}")
    return str(steps)


def run_benchmark(
    tasks: list[str],
    algos: list[str],
    out_dir: str,
    seeds: int = 5,
    seed: int = 0,
    budget: str | int = "published",
    progress: bool = True,
    max_memory_bytes: int | None = None,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run (or resume) a benchmark: every cell of `algos` x `tasks` as one seeds program.

    Args:
      tasks: task names (`marljax.benchmarks.TASKS`), e.g. `["smax/3m", "mpe/simple_spread"]`.
      algos: algorithms, e.g. `["ippo", "mappo"]`.
      out_dir: the benchmark directory (created; an existing one is resumed if its plan is
        the same, refused otherwise).
      seeds, seed: seeds per cell (the issue's minimum for a result is 5) and the first seed.
      budget: `"published"` (each source's budget), `"cpu"` (the stated CPU budget of each
        cell) or env steps for every cell.
      progress: progress bars.
      max_memory_bytes: device memory budget of one cell (see `marljax.training.execute`).
      overrides: `{key: value}` set on every cell over its published configuration (agent
        config, hparams or `TrainConfig` fields, routed by name: `with_overrides`), for an
        ablation; recorded in the plan and the report. Every cell must accept every key.

    Returns:
      The plan file's content: `{"plan": ..., "cells": {name: summary}}`.

    Raises:
      KeyError / ConfigError: bad tasks, algorithms or budget, before anything is compiled.
      ValueError: `out_dir` holds a benchmark with another plan.
    """
    from marljax.core.registry import spec
    from marljax.shell.experiment import Experiment

    cells = plan_cells(list(tasks), list(algos))
    overrides = {str(k): v for k, v in (overrides or {}).items()}
    plan = Plan(
        tuple(c.name for c in cells), int(seeds), int(seed), parse_budget(budget),
        tuple(sorted((k, str(v)) for k, v in overrides.items())),
    )  # fmt: skip
    if plan.seeds < 1:
        raise ConfigError(f"seeds must be >= 1, got {seeds}")
    exps = {}
    for c in cells:  # every configuration checked before the first compile
        spec(TASKS[c.task].env)
        kwargs = experiment_kwargs(c, plan.steps(c))
        if overrides:
            kwargs = with_overrides(c, kwargs, overrides)
        exps[c.name] = Experiment(
            seeds=plan.seeds, seed=plan.seed, out_dir=out_dir, name=c.dirname, **kwargs
        )
        if overrides:
            from marljax.shell.build import build

            build(exps[c.name])  # a value of the wrong type fails here, before any compile
    state = _open(out_dir, plan)
    for c in cells:
        if c.name in state["cells"]:
            print(f"benchmark: {c.name} finished before, not run again", file=sys.stderr)
            continue
        run_dir = _run_cell(exps[c.name], os.path.join(out_dir, c.dirname), progress,
                            max_memory_bytes)  # fmt: skip
        state["cells"][c.name] = summarise_cell(run_dir, c, plan.steps(c))
        results.write_json(os.path.join(out_dir, PLAN), state)
    write_report(out_dir, state)
    return state


def read_state(out_dir: str) -> dict[str, Any]:
    """The stored results of a benchmark directory (its `benchmark.json`)."""
    path = os.path.join(out_dir, PLAN)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{out_dir} is not a benchmark directory (no {PLAN})")
    with open(path) as f:
        return json.load(f)


def _open(out_dir: str, plan: Plan) -> dict[str, Any]:
    path = os.path.join(out_dir, PLAN)
    mine = plan.as_dict()
    if os.path.exists(path):
        with open(path) as f:
            state = json.load(f)
        if state.get("plan") != mine:
            raise ValueError(
                f"{out_dir} holds a benchmark with another plan ({state.get('plan')}); use "
                "another directory, or the same tasks, algorithms, seeds, budget and --set "
                "overrides to resume it"
            )
        return state
    os.makedirs(out_dir, exist_ok=True)
    state = {"plan": mine, "cells": {}}
    results.write_json(path, state)
    return state


def _run_cell(exp, run_dir: str, progress: bool, max_memory_bytes: int | None) -> str:
    """Train one cell, continuing from its newest checkpoint if it was interrupted."""
    from marljax.shell.experiment import run_experiment

    resume = run_dir if os.path.exists(os.path.join(run_dir, "config.json")) else None
    if resume is None and os.path.isdir(run_dir):
        # killed after the manifest, before config.json: nothing trained, start the cell anew
        for name in ("manifest.json", ".lock"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(run_dir, name))
    out = run_experiment(exp, resume=resume, progress=progress, max_memory_bytes=max_memory_bytes)
    return out.run_dir


def summarise_cell(run_dir: str, c: Cell, steps: int) -> dict[str, Any]:
    """A finished cell's summary from its run directory's metrics.

    Returns:
      `{"run_dir", "budget", "seeds", "metric", "final": [S], "iqm", "low", "high",
      "curve": {"steps": [K], "iqm": [K], ...}}` (final = each seed's score over the last
      tenth of training, see `marljax.benchmarks.scores`).
    """
    metric = TASKS[c.task].metric
    with np.load(os.path.join(run_dir, "metrics.npz")) as m:
        values = np.asarray(m[metric])[0]  # [S, U]
        env_steps = np.asarray(m["env_steps"])[0, 0]
    pts, curve = scores.curve_points(values, env_steps)
    final = curve[:, -1]
    iqm, low, high = scores.iqm_ci(final)
    return {
        "run_dir": os.path.basename(os.path.normpath(run_dir)),
        "budget": int(steps),
        "seeds": int(values.shape[0]),
        "metric": metric,
        "final": [float(x) for x in final],
        "iqm": iqm,
        "low": low,
        "high": high,
        "curve": {"steps": pts.tolist(), **scores.curve_band(curve)},
    }


def results_table(state: dict[str, Any], reference: dict[str, dict] | None = None) -> str:
    """The results table (markdown) of a benchmark's finished cells, with the published numbers.

    A published number is "inside" when it lies in the cell's 95% CI, or its CI overlaps it.
    """
    reference = published() if reference is None else reference
    rows = [
        "| task | algorithm | score | env steps trained | seeds | IQM [95% CI] | published | inside |",
        "|---|---|---|---:|---:|---|---|---|",
    ]
    for name, s in state["cells"].items():
        task, algo = name.split(":")
        ref = reference.get(name)
        pub, inside = "none found", ""
        if ref is not None:
            ci = ref.get("ci")
            pub = f"{ref['value']:.3g}" + (f" [{ci[0]:.3g}, {ci[1]:.3g}]" if ci else "")
            pub += f" at {ref['budget']:.0e}" + (
                " (read off a figure)" if ref.get("from_figure") else ""
            )
            lo, hi = ci if ci else (ref["value"], ref["value"])
            inside = "yes" if (lo <= s["high"] and hi >= s["low"]) else "no"
            if ref.get("budget") and int(ref["budget"]) != s["budget"]:
                inside += " (other budget)"
        trained = s.get("curve", {}).get("steps", [s["budget"]])[-1]  # whole updates
        rows.append(
            f"| {task} | {algo} | {TASKS[task].label} | {trained:,} | {s['seeds']} | "
            f"{s['iqm']:.3f} [{s['low']:.3f}, {s['high']:.3f}] | {pub} | {inside} |"
        )
    return "\n".join(rows) + "\n"


def normalised_scores(state: dict[str, Any]) -> dict[str, np.ndarray]:
    """`{algo: [S, T]}` final scores per seed and task, normalised to `[0, 1]` per task.

    Win rates are already in `[0, 1]`; a return is min-max normalised over every seed of every
    algorithm on that task (so a profile compares the algorithms of one benchmark run, not
    runs of different benchmarks). Tasks that not every algorithm ran are left out.
    """
    by_task: dict[str, dict[str, np.ndarray]] = {}
    for name, s in state["cells"].items():
        task, algo = name.split(":")
        by_task.setdefault(task, {})[algo] = np.asarray(s["final"], np.float64)
    algos = sorted({a for per in by_task.values() for a in per})
    tasks = [t for t, per in by_task.items() if set(per) == set(algos)]
    out = {a: [] for a in algos}
    for t in tasks:
        per = by_task[t]
        if TASKS[t].metric == "task/win_rate":
            lo, hi = 0.0, 1.0
        else:
            allv = np.concatenate(list(per.values()))
            allv = allv[np.isfinite(allv)]
            lo, hi = (float(allv.min()), float(allv.max())) if allv.size else (0.0, 0.0)
        for a in algos:  # (a seed without a score stays NaN)
            same = np.where(np.isfinite(per[a]), 1.0, np.nan)
            out[a].append((per[a] - lo) / (hi - lo) if hi > lo else same)
    seeds = min((len(v) for per in by_task.values() for v in per.values()), default=0)
    return {a: np.stack([v[:seeds] for v in vs], axis=1) for a, vs in out.items() if vs}


def write_report(out_dir: str, state: dict[str, Any]) -> None:
    """`results.md` and `performance_profile.png` of a benchmark directory."""
    text = "# Benchmark results\n\n"
    changed = state.get("plan", {}).get("overrides")
    if changed:
        sets = ", ".join(f"`{k}={v}`" for k, v in changed.items())
        text += (
            f"Every cell with {sets} over its published configuration (an ablation): the "
            "published numbers are those of the unchanged configurations.\n\n"
        )
    text += results_table(state)
    with open(os.path.join(out_dir, "results.md"), "w") as f:
        f.write(text)
    profile = normalised_scores(state)
    if not profile or any(not np.isfinite(v).all() for v in profile.values()):
        return
    import jax

    from marljax.evaluation import plots, stats

    taus = np.linspace(0.0, 1.0, 41)
    est = stats.performance_profiles(jax.random.PRNGKey(0), profile, taus, num_resamples=500)
    plots.plot_performance_profiles(
        est, taus, os.path.join(out_dir, "performance_profile.png"),
        xlabel=r"normalised score $\tau$", title="performance profile",
    )  # fmt: skip


__all__ = [
    "PLAN",
    "Plan",
    "normalised_scores",
    "parse_budget",
    "plan_cells",
    "published",
    "read_state",
    "results_table",
    "run_benchmark",
    "summarise_cell",
    "with_overrides",
    "write_report",
]
