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

A sweep is an experiment like any other (`marljax.experiment.run_experiment`, through
`marljax.execute`): the `G` settings x `S` seeds are `R = G * S` runs (run `r = g * S + s`)
sharded over every device, split into calls of one program when they do not fit in memory,
trained in chunks with progress, checkpoints and resume. Its run directory adds `sweep.json`
(settings ranked by score, the best setting and its hparams). Settings whose scores are equal up
to float rounding (`tied_best`) are reported as a tie, in the printed ranking and in
`sweep.json`'s `best.tie`; `best_setting` is then only the first of them.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import math
import os
import warnings
from typing import Any, NamedTuple

import jax
import numpy as np

from marljax import config as cfg
from marljax import results
from marljax.agents import algo_spec
from marljax.train import TrainConfig

# ----------------------------------------------------------------------------- search spaces


class Uniform(NamedTuple):
    """Sample uniformly in `[low, high]`."""

    low: float
    high: float


class LogUniform(NamedTuple):
    """Sample log-uniformly in `[low, high]` (`0 < low`), e.g. learning rates."""

    low: float
    high: float


class Choice(NamedTuple):
    """Sample uniformly among `values`."""

    values: tuple


Distribution = Uniform | LogUniform | Choice


def parse_distribution(text: str, name: str = "value") -> Distribution:
    """A distribution from a CLI string: `log:1e-4:1e-2`, `uniform:0:0.1` or `choice:1,2,4`.

    Raises:
      ConfigError: naming `name` and the accepted forms.
    """
    kind, _, rest = str(text).partition(":")
    kind = kind.strip().lower()
    forms = "log:LOW:HIGH, uniform:LOW:HIGH or choice:V1,V2,..."
    try:
        if kind in ("log", "loguniform", "log_uniform"):
            low, high = (float(x) for x in rest.split(":"))
            return _checked(LogUniform(low, high), name)
        if kind in ("uniform", "lin", "linear"):
            low, high = (float(x) for x in rest.split(":"))
            return _checked(Uniform(low, high), name)
        if kind == "choice":
            values = tuple(float(x) for x in rest.split(",") if x.strip())
            return _checked(Choice(values), name)
    except ValueError as err:
        if isinstance(err, cfg.ConfigError):
            raise
        raise cfg.ConfigError(f"{name}: cannot parse {text!r}; expected {forms}") from None
    raise cfg.ConfigError(f"{name}: unknown distribution {text!r}; expected {forms}")


def _checked(dist_: Any, name: str) -> Distribution:
    if isinstance(dist_, (list, tuple)) and not isinstance(dist_, (Uniform, LogUniform, Choice)):
        dist_ = Choice(tuple(dist_))
    if isinstance(dist_, Choice):
        if not dist_.values:
            raise cfg.ConfigError(f"{name}: a choice needs at least one value")
        return dist_
    if not isinstance(dist_, (Uniform, LogUniform)):
        raise cfg.ConfigError(
            f"{name}: expected Uniform(low, high), LogUniform(low, high), Choice(values) or a "
            f"list, got {dist_!r}"
        )
    low, high = float(dist_.low), float(dist_.high)
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        raise cfg.ConfigError(f"{name}: need finite low <= high, got {dist_!r}")
    if isinstance(dist_, LogUniform) and low <= 0:
        raise cfg.ConfigError(f"{name}: LogUniform needs 0 < low, got {dist_!r}")
    return type(dist_)(low, high)


def grid_settings(**values: list) -> list[dict[str, float]]:
    """The Cartesian product of `name=[values]` as a list of settings (first name slowest)."""
    names = list(values)
    return [dict(zip(names, combo)) for combo in itertools.product(*(values[n] for n in names))]


def random_settings(num_samples: int, seed: int = 0, **space: Any) -> list[dict[str, float]]:
    """`num_samples` settings drawn independently from `name=distribution` (numpy, seeded).

    Values are rounded to float32, the precision they are trained with, so the recorded
    settings are exactly what ran.

    Args:
      num_samples: number of settings.
      seed: seed of the sampler (independent of the training seeds).
      **space: name -> `Uniform`, `LogUniform`, `Choice` or a list (a choice).
    """
    if num_samples < 1:
        raise cfg.ConfigError(f"num_samples must be >= 1, got {num_samples}")
    rng = np.random.default_rng(seed)
    dists = {n: _checked(d, n) for n, d in space.items()}
    out = []
    for _ in range(num_samples):
        row = {}
        for name, d in dists.items():
            if isinstance(d, Choice):
                value = d.values[int(rng.integers(len(d.values)))]
            elif isinstance(d, LogUniform):
                value = math.exp(rng.uniform(math.log(d.low), math.log(d.high)))
            else:
                value = rng.uniform(d.low, d.high)
            row[name] = float(np.float32(value))
        out.append(row)
    return out


# ----------------------------------------------------------------------------- validation


def check_sweepable(algo: str, names: list[str]) -> None:
    """Raise `ConfigError` unless every name is a traced hyperparameter of `algo`.

    A static setting (a field of the agent's config or of `TrainConfig`) is refused with the
    reason and the list of sweepable names; an unknown name gets the close matches.
    """
    spec = algo_spec(algo)
    traced = cfg.field_names(spec.hparams_cls)
    static = {n: spec.config_cls.__name__ for n in cfg.field_names(spec.config_cls)}
    static.update({n: "TrainConfig" for n in cfg.field_names(TrainConfig)})
    sweepable = ", ".join(sorted(traced))
    for name in names:
        if name in traced:
            continue
        if name in static:
            raise cfg.ConfigError(
                f"Cannot sweep {name!r}: it is a static setting of {static[name]} (it fixes "
                f"array shapes or loop lengths, so every value needs its own compiled program). "
                f"Settings of {algo} that can be swept in one program (its "
                f"{spec.hparams_cls.__name__} fields): {sweepable}. To compare values of "
                f"{name!r}, run one sweep per value."
            )
        if name in ("seed", "seeds"):
            raise cfg.ConfigError(
                f"Cannot sweep {name!r}: seeds are the other sweep axis; set seeds=N instead. "
                f"Sweepable: {sweepable}."
            )
        close = difflib.get_close_matches(name, [*traced, *static], n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise cfg.ConfigError(
            f"Unknown hyperparameter {name!r} for {algo}.{hint} Sweepable: {sweepable}."
        )


def stack_settings(base: Any, settings: list[dict[str, Any]], where: str = "sweep") -> Any:
    """hparams pytree with leaves `[G]` float32, one row per setting (each range-checked)."""
    rows = [cfg.replace_checked(base, dict(s), where) for s in settings] or [base]
    return jax.tree.map(
        lambda *xs: np.stack([np.asarray(x, np.float32) for x in xs]).astype(np.float32), *rows
    )


def as_distribution(value: Any, name: str) -> Distribution:
    """A distribution from a `Uniform`/`LogUniform`/`Choice`, a list (a choice), a CLI string
    (`parse_distribution`) or its JSON form (`distribution_dict`)."""
    if isinstance(value, str):
        return parse_distribution(value, name)
    if isinstance(value, dict):
        if "choice" in value:
            return _checked(Choice(tuple(value["choice"])), name)
        kinds = {"Uniform": Uniform, "LogUniform": LogUniform}
        try:
            return _checked(kinds[value["distribution"]](value["low"], value["high"]), name)
        except (KeyError, TypeError):
            raise cfg.ConfigError(
                f"sample.{name}: expected {{'distribution': 'Uniform' or 'LogUniform', 'low', "
                f"'high'}} or {{'choice': [...]}}, got {value!r}"
            ) from None
    return _checked(value, name)


def distribution_dict(d: Any) -> dict[str, Any]:
    """The JSON form of a distribution (read back by `as_distribution`)."""
    d = _checked(d, "sample")
    if isinstance(d, Choice):
        return {"choice": list(d.values)}
    return {"distribution": type(d).__name__, "low": d.low, "high": d.high}


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


def make_settings(
    grid: dict[str, list] | None = None,
    sample: dict[str, Any] | None = None,
    num_samples: int = 0,
    sample_seed: int = 0,
) -> list[dict[str, float]]:
    """Settings of a sweep: the grid's product, each combined with `num_samples` random draws.

    With only a grid: the Cartesian product. With only `sample`: `num_samples` draws. With both:
    every grid point x every draw (the same draws for each grid point).
    """
    grid = dict(grid or {})
    sample = dict(sample or {})
    overlap = sorted(set(grid) & set(sample))
    if overlap:
        raise cfg.ConfigError(f"{overlap} appear in both the grid and the random sample")
    for name, values in grid.items():
        if not isinstance(values, (list, tuple)) or not values:
            raise cfg.ConfigError(f"grid.{name} must be a non-empty list, got {values!r}")
    if sample and num_samples < 1:
        raise cfg.ConfigError("a random sample needs num_samples >= 1")
    points = grid_settings(**grid) if grid else [{}]
    draws = random_settings(num_samples, sample_seed, **sample) if sample else [{}]
    return [{**p, **d} for p in points for d in draws]


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
      exp: a `marljax.experiment.Experiment` (its `metric`, `mode` and `window` rank the
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
    from marljax import experiment as xp

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
    from marljax import experiment as xp

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
    summary = {
        "metric": result.metric,
        "mode": result.mode,
        "best": {
            "index": result.best_index,
            "setting": result.best_setting,
            "score": _num(result.scores[result.best_index]),
            "hparams": cfg.to_dict(result.best_hparams),
            "tied_with": [g for g in result.tied if g != result.best_index],
            "tie": _tie_text(result) if len(result.tied) > 1 else None,
        },
        "ranking": [
            {
                "index": int(g),
                "setting": result.settings[g],
                "score": _num(result.scores[g]),
                "final_per_seed": {
                    f"seed_{s}": _num(v) for s, v in zip(result.seeds, result.final[g])
                },
                "non_finite_seeds": [s for s, ok in zip(result.seeds, result.finite[g]) if not ok],
            }
            for g in order
        ],
    }
    results.write_json(os.path.join(run_dir, "sweep.json"), summary)


def _num(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


__all__ = [
    "Choice",
    "LogUniform",
    "SweepResult",
    "Uniform",
    "as_distribution",
    "best_setting",
    "check_sweepable",
    "distribution_dict",
    "grid_settings",
    "make_settings",
    "parse_distribution",
    "random_settings",
    "rank",
    "run_sweep",
    "score_runs",
    "stack_settings",
    "tied_best",
]
