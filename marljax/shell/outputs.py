"""The outputs of a run directory: metrics.npz, marl-eval metrics.json, learning_curve.png.

Written by `marljax.shell.experiment.run_experiment` after every chunk (metrics) and at the end
(the plot); `marljax.evaluation.results` reads and draws them.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import numpy as np

from marljax.core.registry import env_references
from marljax.evaluation import plots, results
from marljax.shell.build import Built
from marljax.training.rollout import score_label, task_metric_names


def setting_labels(built: Built) -> list[str]:
    """`"name=value,..."` of every setting of a built experiment (`""` without a sweep; `"draw
    g"` in a tuning sweep, whose draws differ per seed: `marljax.shell.tune`)."""
    if built.exp.tune:
        return [f"draw {g}" for g in range(len(built.settings))]
    return [",".join(f"{k}={v:g}" for k, v in s.items()) for s in built.settings]


def write_metrics(run_dir: str, built: Built, metrics: dict[str, np.ndarray]) -> None:
    """metrics.npz (`[G, S, U]`, atomically) and marl-eval metrics.json of a run directory."""
    exp = built.exp
    tmp = os.path.join(run_dir, "metrics.tmp.npz")
    try:
        np.savez(tmp, **metrics)
        os.replace(tmp, os.path.join(run_dir, "metrics.npz"))
    except BaseException:  # e.g. no space: the previous metrics.npz stays, no partial file
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    S = metrics["episode_return"].shape[1]
    data: dict[str, Any] = {}
    for g, label in enumerate(setting_labels(built)):
        algo = exp.algo if not label else f"{exp.algo}[{label}]"
        per = {k: v[g] for k, v in metrics.items() if v.ndim == 3}
        names = (
            "episode_return",
            *(["eval/episode_return"] if "eval/episode_return" in per else []),
            *task_metric_names(per),
        )
        seeds = [f"seed_{exp.seed + s}" for s in range(S)]
        out = results.to_marl_eval(per, exp.env, algo, seeds, metric_names=names)
        for env_name, tasks in out.items():
            for task, algos in tasks.items():
                data.setdefault(env_name, {}).setdefault(task, {}).update(algos)
    results.write_json(os.path.join(run_dir, "metrics.json"), data)


def write_plot(run_dir: str, built: Built, metrics: dict[str, np.ndarray]) -> None:
    """learning_curve.png: the return over seeds per setting, and a panel per task score."""
    exp = built.exp
    try:
        plots.plot_setting_curves(
            metrics["env_steps"][0, 0],
            metrics["episode_return"],
            setting_labels(built),
            os.path.join(run_dir, "learning_curve.png"),
            title=f"{exp.algo} on {exp.env} ({exp.seeds} seeds)",
            references=env_references(exp.env, exp.env_kwargs),
            scores={
                score_label(m): metrics[m]
                for m in task_metric_names(metrics)
                if not m.startswith("eval/")
            },
        )
    except ImportError:  # matplotlib is an optional extra
        pass


__all__ = ["setting_labels", "write_metrics", "write_plot"]


def write_tune_events(run_dir: str, events: list[dict], summary: dict | None = None) -> None:
    """tune.json: the tuner's events (its state after each step, `marljax.training.tune`), and
    at the end its `summary`; written before each checkpoint, so a resume reads it back."""
    data = {"events": events, **(summary or {})}
    results.write_json(os.path.join(run_dir, "tune.json"), data)


def read_tune_events(run_dir: str) -> list[dict]:
    """The events of a run directory's tune.json (empty when it stopped before the first).

    Raises:
      ValueError: a tune.json that cannot be read (the run cannot be resumed exactly).
    """
    import json

    path = os.path.join(run_dir, "tune.json")
    if not os.path.exists(path):
        return []
    try:
        with open(path) as f:
            return list(json.load(f)["events"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"Cannot resume {run_dir}: tune.json cannot be read ({err})") from None
