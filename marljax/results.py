"""Run results on disk: marl-eval JSON metrics and learning-curve plots.

The JSON layout is marl-eval's (Gorsane et al. 2022, instadeepai/marl-eval):
`{env: {task: {algorithm: {run_i: {step_k: {"step_count": int, metric: [values]}, ...,
"absolute_metrics": {metric: [values]}}}}}}`. Our training metrics are the mean return of the
training episodes that finished during each update (one value per step; updates in which no
episode finished are left out).
"""

from __future__ import annotations

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
        `episode_return`.
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
                if not math.isfinite(v):
                    ok = False
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
    return "return" if m == "episode_return" else m


def write_json(path: str | os.PathLike, data: Any) -> None:
    """Write JSON atomically (temporary file, then rename)."""
    tmp = f"{os.fspath(path)}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


def read_marl_eval(path: str | os.PathLike) -> dict[str, Any]:
    """Read a marl-eval JSON file (validates the nesting)."""
    with open(path) as f:
        data = json.load(f)
    for env, tasks in data.items():
        for task, algos in tasks.items():
            for algo, runs in algos.items():
                for run, steps in runs.items():
                    if "absolute_metrics" not in steps:
                        raise ValueError(f"{env}/{task}/{algo}/{run} has no absolute_metrics")
    return data


def plot_learning_curves(
    env_steps: np.ndarray,
    returns: np.ndarray,
    labels: list[str],
    path: str | os.PathLike,
    title: str = "",
) -> None:
    """Plot mean return over seeds with a min-max band, one line per hparams setting.

    Args:
      env_steps: `[U]` environment steps at each update.
      returns: `[G, S, U]` returns (NaN where no episode finished).
      labels: `G` legend labels.
      path: output PNG.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    for g, label in enumerate(labels):
        r = returns[g]
        with np.errstate(all="ignore"):
            mean = np.nanmean(r, axis=0)
            lo, hi = np.nanmin(r, axis=0), np.nanmax(r, axis=0)
        ax.plot(env_steps, mean, label=label)
        ax.fill_between(env_steps, lo, hi, alpha=0.2)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("episode return (mean over agents)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if len(labels) > 1 or labels[0]:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
