"""Tune while training: `marljax sweep --pbt N`, `--halving RUNGS` or `--tune-random`.

    exp = Experiment(algo="mappo", env="mpe/simple_spread", seeds=8, num_samples=8,
                     sample={"lr": "log:1e-4:3e-3", "ent_coef": "log:1e-4:0.1"},
                     tune={"method": "pbt", "interval": 50})
    result = run_tune(exp)
    result.population_scores   # [S]: each population's best run's final score
    result.best_hparams        # the best run's final hyperparameters

Each seed is one tuning procedure: its `num_samples` settings are its own draws from `sample`
(so the seeds are independent repetitions of the whole procedure), and `marljax.training.tune`
ranks, copies, perturbs or stops them between chunks, all `settings x seeds` runs in one compiled
program (`marljax.shell.experiment.run_experiment`, with checkpoints and bitwise resume). The
run directory adds:

    tune.json            every run's starting hparams (run r = g * S + s); every step (scores,
                         hparams, active runs, copies); each population's best run, its score
                         and its hyperparameter schedule; the best overall
    best_config.json     the best run's final hyperparameters as a plain `--config`
    lineage.png          PBT: each run's hyperparameters over the run, copies as jumps, the
                         best run's schedule in bold; halving: the curves and where runs stopped
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import jax
import numpy as np

from marljax.core import config as cfg
from marljax.evaluation import results
from marljax.shell import experiment as xp
from marljax.shell import outputs
from marljax.training import space, tune


@dataclasses.dataclass
class TuneResult:
    """The outcome of `run_tune`.

    Attributes:
      run_dir: the run directory (None when nothing was written).
      method: "pbt", "halving" or "random"; `metric`: the metric runs were ranked by.
      scores: `[G, S]` every run's final score (NaN for runs halving stopped: not a result).
      best_runs: `[S]` the best run of each population (its setting index `g`).
      population_scores: `[S]` the best run's final score per population (the outcome of each
        repetition of the procedure).
      best_population: the population of the best run overall; `best_hparams`: its final
        hyperparameters (a plain run's `hparams`); `schedules`: `[S]` each best run's schedule.
      metrics: `[G, S, U]` arrays; `finished`: False when stopped early.
    """

    run_dir: str | None
    method: str
    metric: str
    scores: np.ndarray
    best_runs: np.ndarray
    population_scores: np.ndarray
    best_population: int
    best_hparams: dict[str, float]
    schedules: list[list[dict]]
    metrics: dict[str, np.ndarray]
    finished: bool = True


def population_seed(sample_seed: int, population: int) -> int:
    """The sampler seed of one population's starting draws (independent per population)."""
    return int(
        np.random.SeedSequence([int(sample_seed) & 0xFFFFFFFF, population]).generate_state(1)[0]
    )


def make_tuner(built: Any) -> tune.Tuner:
    """The tuner of a built experiment with `tune`: every population's own draws (run
    `r = g * S + s` is draw `g` of population `s`), checked against the run's schedule.

    Raises:
      ConfigError: fewer than 2 draws per population, a schedule the run cannot follow, or a
        default (greedy evaluation) metric without evaluations often enough.
    """
    exp = built.exp
    G, S = exp.num_samples, exp.seeds
    if G < 2:
        raise cfg.ConfigError(
            f"tune needs at least 2 settings per population to rank (--num-samples), got {G}"
        )
    draws = [
        space.random_settings(G, population_seed(exp.sample_seed, s), **exp.sample)
        for s in range(S)
    ]
    rows = [draws[s][g] for g in range(G) for s in range(S)]
    hparams = space.stack_settings(exp.base_hparams, rows, "tune")
    method = exp.tuning
    total = built.trainer.config.num_updates
    metric = exp.tune.get("metric")
    if method is not None:
        tune.check_schedule(method, total, exp.updates_per_chunk)
        every = built.trainer.config.eval_interval
        first = min(
            method.interval if isinstance(method, tune.PBT) else method.steps(total)[0],
            *method.steps(total),
        )
        if (metric is None or metric.startswith("eval/")) and every > first:
            raise cfg.ConfigError(
                f"the tuner ranks runs by the greedy evaluation, which runs every {every} "
                f"updates, but it acts after {first} updates: evaluate at least as often "
                f"(--set eval_interval={first}) or rank by a training metric (--tune-set "
                "metric=episode_return)"
            )
    populations = [[g * S + s for g in range(G)] for s in range(S)]
    return tune.Tuner(method, exp.sample, metric, populations, hparams, total, exp.mode,
                      seed=exp.sample_seed)  # fmt: skip


def run_tune(
    exp: Any,
    max_memory_bytes: int | None = None,
    write: bool = True,
    verbose: bool = True,
    resume: str | None = None,
    progress: bool | None = None,
    stop_after_chunks: int | None = None,
) -> TuneResult:
    """Run a tuning sweep (`exp.tune`; see the module docstring).

    Raises:
      ConfigError: any invalid setting, before anything is compiled or written.
    """
    built = xp.build(exp)
    exp = built.exp
    tuner = make_tuner(built)
    G, S = exp.num_samples, exp.seeds
    method = exp.tune["method"]
    if verbose and jax.process_index() == 0:
        print(f"tune ({method}): {S} population(s) x {G} draws = {G * S} runs of {exp.algo} "
              f"on {exp.env}")  # fmt: skip
    run = xp.run_experiment(
        built, resume=resume, progress=verbose if progress is None else progress,
        stop_after_chunks=stop_after_chunks, max_memory_bytes=max_memory_bytes, kind="sweep",
        write=write and jax.process_index() == 0, tuner=tuner,
    )  # fmt: skip
    result = summarise(tuner, run.metrics, exp, run.run_dir, run.finished)
    if not run.finished:
        return result
    if run.run_dir is not None:
        _write(run.run_dir, tuner, result, exp)
    if verbose and jax.process_index() == 0:
        print(_text(result))
        if run.run_dir is not None:
            print(f"run directory: {run.run_dir}")
    return result


def summarise(tuner: tune.Tuner, metrics: dict, exp: Any, run_dir=None, finished=True):
    """Each population's best run (among the runs still active at the end) and its schedule."""
    G, S = exp.num_samples, exp.seeds
    values = np.asarray(metrics[tuner.metric])
    flat = values.reshape(G * S, *values.shape[2:])
    window = exp.window if tuner.method is None else tuner.method.window
    scores = tune.run_scores(flat, 0, window)
    scores = np.where(tuner.active, scores, np.nan)
    best_runs, pop_scores, schedules = [], [], []
    for members in tuner.populations:
        order = tune._order(scores[members], exp.mode)
        best = int(members[order[0]])
        best_runs.append(best // S)
        pop_scores.append(scores[best])
        schedules.append(tuner.schedule(best))
    pop_scores = np.asarray(pop_scores)
    best_pop = int(tune._order(pop_scores, exp.mode)[0])
    return TuneResult(
        run_dir, exp.tune["method"], tuner.metric, scores.reshape(G, S), np.asarray(best_runs),
        pop_scores, best_pop, dict(schedules[best_pop][-1]["hparams"]), schedules, metrics,
        finished,
    )  # fmt: skip


def _write(run_dir: str, tuner: tune.Tuner, result: TuneResult, exp: Any) -> None:
    summary = {
        "method": result.method,
        "tune": exp.tune,
        "metric": result.metric,
        "mode": exp.mode,
        "populations": [
            {
                "population": s,
                "seed": exp.seed + s,
                "best_setting": int(result.best_runs[s]),
                "score": cfg.json_number(result.population_scores[s]),
                "schedule": result.schedules[s],
            }
            for s in range(exp.seeds)
        ],  # fmt: skip
        "best": {
            "population": result.best_population,
            "hparams": result.best_hparams,
            "score": cfg.json_number(result.population_scores[result.best_population]),
        },  # fmt: skip
        "lineage": tuner.lineage(),
        "initial": {
            k: [float(x) for x in np.asarray(getattr(tuner.initial, k))] for k in tuner.space
        },  # fmt: skip
    }
    outputs.write_tune_events(run_dir, tuner.events, summary)
    best = exp.replace(
        hparams={**exp.hparams, **result.best_hparams}, sample={}, num_samples=0, tune={},
        name=None,
    )  # fmt: skip
    results.write_json(os.path.join(run_dir, "best_config.json"), best.to_dict())
    try:
        from marljax.evaluation import plots

        plots.plot_lineage(
            os.path.join(run_dir, "lineage.png"), tuner, result.metrics[result.metric],
            result.schedules[result.best_population], result.best_population,
        )  # fmt: skip
    except ImportError:  # matplotlib is an extra
        pass


def _text(result: TuneResult) -> str:
    fin = result.population_scores[np.isfinite(result.population_scores)]
    label = ",".join(f"{k}={v:.4g}" for k, v in result.best_hparams.items())
    lines = [
        f"{result.method}: best {result.metric} per population: "
        + ", ".join(f"{x:.4f}" for x in result.population_scores),
        f"mean over populations {fin.mean():.4f}" if len(fin) else "no finite score",
        f"best run: population {result.best_population}, final hparams {label}",
    ]
    return "\n".join(lines)


__all__ = ["TuneResult", "make_tuner", "population_seed", "run_tune", "summarise"]
