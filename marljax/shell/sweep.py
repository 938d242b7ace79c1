"""Hyperparameter sweeps: a grid and/or a random sample x seeds as ONE compiled program.

    exp = Experiment(algo="ippo", env="matrix/climbing-v0", seeds=4, grid={"lr": [1e-3, 3e-4]},
                     sample={"ent_coef": LogUniform(1e-4, 1e-1)}, num_samples=8)
    result = run_sweep(exp)
    result.best_setting        # e.g. {"lr": 0.001, "ent_coef": 0.0032}
    result.scores              # [G] mean final return over seeds, one per setting

Only *traced* hyperparameters (the fields of the algorithm's hparams class, e.g. `PPOHParams`)
can be swept inside one program; settings that change shapes or loop lengths (the agent's static
config such as `hidden_sizes`, or `TrainConfig` such as `num_envs`) need one compile per value
and are rejected with the list of sweepable names.

A sweep is an experiment like any other (`marljax.shell.experiment.run_experiment`, through
`marljax.training.execute`): the `G` settings x `S` seeds are `R = G * S` runs (run `r = g * S + s`)
sharded over every device, split into calls of one program when they do not fit in memory,
trained in chunks with progress, checkpoints and resume. Its run directory adds `sweep.json`
(settings ranked by score, the best setting and its hparams). Settings whose scores are equal up
to float rounding (`tied_best`) are reported as a tie, in the printed ranking and in
`sweep.json`'s `best.tie`; `best_setting` is then only the first of them.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from typing import Any

import jax
import numpy as np

from marljax.core import config as cfg
from marljax.evaluation import results
from marljax.shell import experiment as xp
from marljax.training.space import (  # noqa: F401  (also reachable here, as before)
    Choice,
    LogUniform,
    Uniform,
    as_distribution,
    check_sweepable,
    distribution_dict,
    grid_settings,
    make_settings,
    parse_distribution,
    random_settings,
    stack_settings,
)

# ----------------------------------------------------------------------------- sweeps


@dataclasses.dataclass
class SweepResult:
    """The outcome of `run_sweep`.

    Attributes:
      run_dir: the run directory (None when nothing was written).
      settings: the `G` swept settings (dicts name -> value), in result order.
      seeds: the `S` seeds.
      metrics: name -> `[G, S, U]` arrays.
      states: final `RunnerState` with leading `[G, S]` (numpy).
      final: `[G, S]` final value of the score metric per run (see `score_runs`).
      scores: `[G]` mean of `final` over seeds (NaN-aware); NaN for a setting with a
        non-finite run, so that it ranks last.
      finite: `[G, S]` bool, False where a run produced NaN/inf in a metric or parameter (its
        return is not a result: a NaN policy can score the best possible return).
      best_index: index of the best finite setting (0 if none is).
      best_setting: `settings[best_index]`.
      best_hparams: the full hparams of the best setting.
      metric: the score metric; `mode`: "max" or "min".
      tied: indices of the settings whose score ties the best one (`tied_best`), the best first;
        more than one means the top is a tie and `best_index` is only the first of them.
    """

    run_dir: str | None
    settings: list[dict[str, float]]
    seeds: list[int]
    metrics: dict[str, np.ndarray]
    states: Any
    final: np.ndarray
    scores: np.ndarray
    best_index: int
    best_setting: dict[str, float]
    best_hparams: Any
    metric: str
    mode: str
    finite: np.ndarray | None = None
    finished: bool = True
    tied: list[int] = dataclasses.field(default_factory=list)


def score_runs(values: np.ndarray, window: int = 1) -> np.ndarray:
    """Per-run final score: the mean of the last `window` finite values of `[..., U]` (NaN if none).

    Updates in which no episode ended have NaN returns; they are skipped, as in
    `experiment.final_returns`.
    """
    values = np.asarray(values, np.float64)
    out = np.full(values.shape[:-1], np.nan)
    for idx in np.ndindex(*values.shape[:-1]):
        finite = values[idx][np.isfinite(values[idx])]
        if len(finite):
            out[idx] = finite[-max(1, int(window)) :].mean()
    return out


def best_setting(scores: np.ndarray, mode: str = "max") -> int:
    """Index of the best score (`mode` "max" or "min"); NaN scores rank last."""
    if mode not in ("max", "min"):
        raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
    s = np.asarray(scores, np.float64)
    if not np.isfinite(s).any():
        return 0
    s = np.where(np.isfinite(s), s, -np.inf if mode == "max" else np.inf)
    return int(np.argmax(s) if mode == "max" else np.argmin(s))


#: scores within this relative tolerance of each other tie (the returns are float32, whose
#: rounding is about 6e-8 relative; a mean over seeds and updates adds a little)
TIE_RTOL = 1e-6
#: and within this absolute tolerance (scores near zero)
TIE_ATOL = 1e-9


def tied_best(scores: np.ndarray, mode: str = "max") -> list[int]:
    """Indices of every setting whose score ties the best one, the best (`best_setting`) first.

    Two scores tie when they are equal up to float rounding:
    `|a - b| <= TIE_ATOL + TIE_RTOL * |b|` (`numpy.isclose`); NaN scores never tie. A list
    longer than one means the top of the ranking is a tie.

    Args:
      scores: `[G]` scores.
      mode: "max" or "min".

    Returns:
      The tied indices in index order after the best (empty when no score is finite).
    """
    best = best_setting(scores, mode)
    s = np.asarray(scores, np.float64)
    if not np.isfinite(s[best]):
        return []
    close = np.isfinite(s) & np.isclose(s, s[best], rtol=TIE_RTOL, atol=TIE_ATOL)
    return [best] + [int(g) for g in np.flatnonzero(close) if g != best]


def run_sweep(
    exp: Any,
    max_memory_bytes: int | None = None,
    write: bool = True,
    verbose: bool = True,
    resume: str | None = None,
    progress: bool | None = None,
    stop_after_chunks: int | None = None,
) -> SweepResult:
    """Run a hyperparameter sweep x seeds (`exp.grid`, `exp.sample`) and pick the best setting.

    Args:
      exp: a `marljax.shell.experiment.Experiment` (its `metric`, `mode` and `window` rank the
        settings).
      max_memory_bytes: per-device budget of one call (default: from free memory).
      write: write the run directory under `exp.out_dir` (process 0 only).
      verbose: print the ranking.
      resume: a sweep's run directory to continue from its newest checkpoint.
      progress: show a progress bar (default: `verbose`).
      stop_after_chunks: stop after this many chunks (tests of interruption).

    Returns:
      A `SweepResult` (`finished` False when stopped early; then nothing is ranked).

    Raises:
      ConfigError: a static or unknown setting in the sweep (listing what can be swept), or any
        invalid value; raised before anything is compiled or written.
    """
    built = xp.build(exp)
    G, S = len(built.settings), exp.seeds
    if verbose and jax.process_index() == 0:
        print(f"sweep: {G} settings x {S} seeds = {G * S} runs of {exp.algo} on {exp.env}")
    run = xp.run_experiment(
        built,
        resume=resume,
        progress=verbose if progress is None else progress,
        stop_after_chunks=stop_after_chunks,
        max_memory_bytes=max_memory_bytes,
        kind="sweep",
        write=write and jax.process_index() == 0,
    )
    result = rank(built, run.metrics, run.state, run.run_dir)
    result.finished = run.finished
    if not run.finished:
        return result
    if verbose and jax.process_index() == 0:
        print(_ranking_text(result))
    if run.run_dir is not None:
        _write_summary(run.run_dir, result)
        if verbose:
            print(f"run directory: {run.run_dir}")
    return result


def rank(built: Any, metrics: dict, states: Any, run_dir: str | None = None) -> SweepResult:
    """Score every setting of a finished experiment (`[G, S, U]` metrics) and pick the best."""
    exp = built.exp
    values = metrics[exp.metric]
    if values.ndim > 3:  # per-agent metrics [G, S, U, A]: the mean over agents
        values = values.reshape(*values.shape[:3], -1).mean(-1)
    finite = xp.finite_runs(metrics, states.agent_state)
    final = np.where(finite, score_runs(values, exp.window), np.nan)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a setting with no finite run: NaN
        scores = np.nanmean(final, axis=1) if final.size else final
    scores = np.where(finite.all(axis=1), scores, np.nan)
    best = best_setting(scores, exp.mode)
    return SweepResult(
        run_dir,
        built.settings,
        [exp.seed + s for s in range(exp.seeds)],
        metrics,
        states,
        final,
        scores,
        best,
        built.settings[best],
        jax.tree.map(lambda x: float(x[best]), built.hparams),
        exp.metric,
        exp.mode,
        finite,
        tied=tied_best(scores, exp.mode),
    )


def _label(setting: dict[str, float]) -> str:
    return ",".join(f"{k}={v:g}" for k, v in setting.items()) or "default"


def _ranking_text(result: SweepResult, top: int = 10) -> str:
    order = np.argsort(-result.scores if result.mode == "max" else result.scores, kind="stable")
    order = [int(g) for g in order if np.isfinite(result.scores[g])] + [
        int(g) for g in order if not np.isfinite(result.scores[g])
    ]
    tied = set(result.tied) if len(result.tied) > 1 else set()
    lines = [f"{'rank':>4}  {'score':>10}  setting ({result.metric}, mean over seeds)"]
    for rank, g in enumerate(order[:top], 1):
        mark = "  (tied for best)" if g in tied else ""
        if result.finite is not None and not result.finite[g].all():
            bad = int((~result.finite[g]).sum())
            mark = f"  NON-FINITE in {bad} of {result.finite.shape[1]} seeds (not a result)"
        lines.append(f"{rank:>4}  {result.scores[g]:>10.4f}  {_label(result.settings[g])}{mark}")
    if len(order) > top:
        lines.append(f"      ... {len(order) - top} more in sweep.json")
    if tied:
        lines.append(_tie_text(result))
    return "\n".join(lines)


def _tie_text(result: SweepResult) -> str:
    """The sentence that reports a tie at the top (printed and written to sweep.json)."""
    names = ", ".join(f"{g} ({_label(result.settings[g])})" for g in result.tied)
    return (
        f"tie: settings {names} score {result.scores[result.best_index]:.4f} (equal within "
        f"relative {TIE_RTOL:g}); the best setting reported is the first of them, "
        f"{result.best_index}, not a winner"
    )


def _write_summary(run_dir: str, result: SweepResult) -> None:
    """sweep.json: the settings ranked by score, the best setting and its hparams."""
    order = np.argsort(-result.scores if result.mode == "max" else result.scores, kind="stable")
    finite = np.ones(len(result.settings), bool) if result.finite is None else result.finite
    any_finite = bool(np.asarray(finite).all(axis=-1).any())  # a setting without NaN/inf runs
    summary = {
        "metric": result.metric,
        "mode": result.mode,
        # no best when every setting has a NaN/inf run (a diverged policy is not a result)
        "best": {
            "index": result.best_index,
            "setting": result.best_setting,
            "score": cfg.json_number(result.scores[result.best_index]),
            "hparams": cfg.to_dict(result.best_hparams),
            "tied_with": [g for g in result.tied if g != result.best_index],
            "tie": _tie_text(result) if len(result.tied) > 1 else None,
        }
        if any_finite
        else None,
        "ranking": [
            {
                "index": int(g),
                "setting": result.settings[g],
                "score": cfg.json_number(result.scores[g]),
                "final_per_seed": {
                    f"seed_{s}": cfg.json_number(v) for s, v in zip(result.seeds, result.final[g])
                },
                "non_finite_seeds": [s for s, ok in zip(result.seeds, result.finite[g]) if not ok],
            }
            for g in order
        ],
    }
    results.write_json(os.path.join(run_dir, "sweep.json"), summary)


__all__ = [
    "SweepResult",
    "best_setting",
    "rank",
    "run_sweep",
    "score_runs",
    "tied_best",
]
