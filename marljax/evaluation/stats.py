"""Aggregate performance with stratified-bootstrap confidence intervals, on device with JAX.

The rliable / marl-eval evaluation protocol for deep (multi-agent) RL. Scores of one algorithm
are an array `[R, K]` (`R` independent runs, e.g. seeds, times `K` tasks) or `[R, K, T]` (`T`
points of a learning curve); several algorithms are a dict `{name: scores}` (the number of runs
may differ between algorithms, the tasks may not). Every statistic is a pure jittable function
of such arrays:

- `aggregate_mean`: mean over tasks of the per-task mean over runs;
- `aggregate_median`: median over tasks of the per-task mean over runs;
- `aggregate_iqm`: interquartile mean, the mean of the middle 50 % of all `R * K` scores
  (`scipy.stats.trim_mean(scores, 0.25, axis=None)`: `floor(0.25 * R K)` scores are cut from each
  end of the sorted scores);
- `aggregate_optimality_gap`: `threshold - mean(min(scores, threshold))`;
- `probability_of_improvement`: `P(X > Y)`, for each task the Mann-Whitney statistic
  `mean_{i,j} [x_i > y_j] + 0.5 [x_i = y_j]`, averaged over tasks;
- `score_distribution` / `average_score_distribution`: performance profiles, the fraction of
  run scores (or of per-task mean scores) strictly above each threshold `tau`.

`interval_estimate` puts a percentile confidence interval on any of them with the *stratified
bootstrap* (`bootstrap_replicates` returns the resampled values themselves): each resample draws, independently for every task, `R` runs with replacement from
that task's runs (for `[R, K, T]` curves a drawn run keeps its whole curve). All resamples are
drawn and evaluated in one `vmap` (optionally in chunks, `batch_size`), so 10^4 to 10^5
resamples take milliseconds to seconds. `aggregate_metrics`, `probability_of_improvement_ci`,
`pairwise_probability_of_improvement`, `performance_profiles` and `sample_efficiency_curves` are
the host-level entry points: they validate their inputs (clear errors for NaN/inf scores,
mismatched tasks or runs; `stack_scores` builds arrays from `{algorithm: {task: runs}}` and names
what is missing) and return `Interval(point, low, high)` tuples.

Point estimates equal rliable's `metrics.aggregate_*` and `probability_of_improvement` exactly
(up to float32 rounding); the intervals are the same procedure as rliable's
`get_interval_estimates(..., method="percentile")` with independent random draws, so they agree
within bootstrap noise. Default `num_resamples` is 2000 (rliable: 50000 for aggregates, 2000 for
profiles); on an accelerator 50000 is cheap.

References:
  R. Agarwal, M. Schwarzer, P. S. Castro, A. Courville and M. G. Bellemare, "Deep reinforcement
  learning at the edge of the statistical precipice", NeurIPS 2021 (rliable).
  R. Gorsane, O. Mahjoub, R. de Kock, R. Dubb, S. Singh and A. Pretorius, "Towards a
  standardised performance evaluation protocol for cooperative MARL", NeurIPS 2022 (marl-eval).
  B. Efron and R. J. Tibshirani, "An Introduction to the Bootstrap", 1993.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

AGGREGATES = ("median", "iqm", "mean", "optimality_gap")


class Interval(NamedTuple):
    """A point estimate with a confidence interval (all arrays of the statistic's shape)."""

    point: Array
    low: Array
    high: Array


# ----------------------------------------------------------------------------- statistics


def aggregate_mean(scores: Array) -> Array:
    """Mean over tasks of the per-task mean score.

    Args:
      scores: `[R, K]` scores (runs x tasks).

    Returns:
      `[]` float.
    """
    return jnp.mean(jnp.mean(scores, axis=0))


def aggregate_median(scores: Array) -> Array:
    """Median over tasks of the per-task mean score (`[R, K] -> []`)."""
    return jnp.median(jnp.mean(scores, axis=0))


def aggregate_iqm(scores: Array) -> Array:
    """Interquartile mean of all scores, pooled over runs and tasks.

    The 25 % trimmed mean of the `n = R K` flattened scores: with `c = floor(0.25 n)`, the mean
    of the sorted scores `s_(c) ... s_(n-c-1)` (exactly `scipy.stats.trim_mean(scores, 0.25,
    axis=None)`, rliable's `aggregate_iqm`). Robust to outlier runs and tasks, yet uses half of
    the data, unlike the median.

    Reference: Agarwal et al. 2021, Sec. 4.3.

    Args:
      scores: `[R, K]` scores.

    Returns:
      `[]` float.
    """
    flat = jnp.sort(jnp.ravel(scores))
    n = flat.shape[0]
    cut = int(0.25 * n)
    return jnp.mean(flat[cut : n - cut])


def aggregate_optimality_gap(scores: Array, threshold: float = 1.0) -> Array:
    """How far scores fall short of `threshold`: `threshold - mean(min(scores, threshold))`.

    Args:
      scores: `[R, K]` scores (typically normalised so that `threshold` is "solved").
      threshold: score above which no further credit is given (rliable's `gamma`).

    Returns:
      `[]` float; lower is better.
    """
    return threshold - jnp.mean(jnp.minimum(scores, threshold))


def probability_of_improvement(scores_x: Array, scores_y: Array) -> Array:
    """Probability that algorithm X beats algorithm Y on a random task, `P(X > Y)`.

    For task `k`, `P(X_k > Y_k) = (1 / (R_x R_y)) sum_{i,j} ([x_ik > y_jk] + 0.5 [x_ik = y_jk])`
    (the Mann-Whitney U statistic normalised to `[0, 1]`); the result is the mean over tasks.

    Reference: Agarwal et al. 2021, Sec. 4.3.

    Args:
      scores_x: `[R_x, K]` scores of X.
      scores_y: `[R_y, K]` scores of Y (same tasks, any number of runs).

    Returns:
      `[]` float in `[0, 1]`.
    """
    x = scores_x[:, None, :]
    y = scores_y[None, :, :]
    wins = (x > y).astype(jnp.float32) + 0.5 * (x == y).astype(jnp.float32)  # [R_x, R_y, K]
    return jnp.mean(jnp.mean(wins, axis=(0, 1)))


def score_distribution(scores: Array, taus: Array) -> Array:
    """Performance profile: fraction of all run scores strictly above each threshold.

    Args:
      scores: `[R, K]` scores.
      taus: `[M]` thresholds.

    Returns:
      `[M]` float in `[0, 1]`, non-increasing in `tau`.
    """
    return jnp.mean(jnp.ravel(scores)[None, :] > jnp.asarray(taus)[:, None], axis=1)


def average_score_distribution(scores: Array, taus: Array) -> Array:
    """Performance profile of per-task mean scores: fraction of tasks whose mean is above `tau`.

    Args:
      scores: `[R, K]` scores.
      taus: `[M]` thresholds.

    Returns:
      `[M]` float in `[0, 1]`.
    """
    return score_distribution(jnp.mean(scores, axis=0, keepdims=True), taus)


@functools.lru_cache(maxsize=64)
def aggregate_fn(name: str, threshold: float = 1.0) -> Callable[[Array], Array]:
    """The `[R, K] -> []` statistic called `name` (one of `AGGREGATES`).

    Cached: equal arguments return the same function object, so bootstrap programs built on it
    compile once.
    """
    table = {
        "mean": aggregate_mean,
        "median": aggregate_median,
        "iqm": aggregate_iqm,
        "optimality_gap": functools.partial(aggregate_optimality_gap, threshold=threshold),
    }
    if name not in table:
        raise ValueError(f"unknown aggregate metric {name!r}; choose from {list(table)}")
    return table[name]


# ----------------------------------------------------------------------------- bootstrap


def stratified_resample(key: Array, scores: Array) -> Array:
    """One stratified bootstrap resample: runs drawn with replacement, independently per task.

    Args:
      key: PRNG key.
      scores: `[R, K, ...]` scores; trailing axes (e.g. a learning curve `T`) move with the run.

    Returns:
      `[R, K, ...]`, `out[r, k] = scores[idx[r, k], k]` with `idx` uniform on `0 .. R-1`.
    """
    num_runs, num_tasks = scores.shape[:2]
    idx = jax.random.randint(key, (num_runs, num_tasks), 0, num_runs)
    return scores[idx, jnp.arange(num_tasks)[None, :]]


def _replicates(
    key: Array,
    scores: tuple[Array, ...],
    statistic: Callable[..., Array],
    num_resamples: int,
    batch_size: int | None,
) -> Array:
    # All run indices are drawn up front, one `randint` per score array ([B, R_i, K] int32),
    # which compiles faster than a key split per resample and makes chunked (`lax.map`) and
    # unchunked evaluation draw identical resamples.
    keys = jax.random.split(key, len(scores))
    idx = tuple(
        jax.random.randint(k, (num_resamples,) + s.shape[:2], 0, s.shape[0])
        for k, s in zip(keys, scores)
    )

    def one(ids):
        return statistic(*[s[i, jnp.arange(s.shape[1])[None, :]] for s, i in zip(scores, ids)])

    if batch_size is None:
        return jax.vmap(one)(idx)
    return jax.lax.map(one, idx, batch_size=batch_size)


@functools.partial(jax.jit, static_argnames=("statistic", "num_resamples", "batch_size"))
def _bootstrap(
    key: Array,
    scores: tuple[Array, ...],
    statistic: Callable[..., Array],
    num_resamples: int,
    confidence: Array,
    batch_size: int | None,
) -> Interval:
    reps = _replicates(key, scores, statistic, num_resamples, batch_size)
    alpha = (1.0 - confidence) / 2.0
    low = jnp.quantile(reps, alpha, axis=0)
    high = jnp.quantile(reps, 1.0 - alpha, axis=0)
    return Interval(statistic(*scores), low, high)


def bootstrap_replicates(
    key: Array,
    statistic: Callable[..., Array],
    *scores: Array,
    num_resamples: int = 2000,
    batch_size: int | None = None,
) -> Array:
    """The statistic on `num_resamples` stratified bootstrap resamples (the raw distribution).

    `interval_estimate(key, ...)` with the same arguments returns quantiles of exactly these
    values. Use it for other interval methods or to histogram the bootstrap distribution.

    Args:
      key: PRNG key.
      statistic: jittable function of the score arrays.
      *scores: `[R_i, K, ...]` finite score arrays, each resampled independently.
      num_resamples: resamples `B` (static).
      batch_size: see `interval_estimate`.

    Returns:
      `[B, *statistic_shape]`.
    """
    arrays = tuple(check_scores(s, f"scores[{i}]") for i, s in enumerate(scores))
    return _replicates_jit(key, arrays, statistic, int(num_resamples), batch_size)


_replicates_jit = jax.jit(_replicates, static_argnames=("statistic", "num_resamples", "batch_size"))


def interval_estimate(
    key: Array,
    statistic: Callable[..., Array],
    *scores: Array,
    num_resamples: int = 2000,
    confidence: float = 0.95,
    batch_size: int | None = None,
) -> Interval:
    """Point estimate and stratified-bootstrap percentile confidence interval of a statistic.

    Each resample draws, for every score array independently and for every task, `R_i` runs
    with replacement (as `stratified_resample` does), evaluates `statistic` on the resampled arrays, and the interval is the
    `(1 - confidence) / 2` and `(1 + confidence) / 2` quantiles (linear interpolation, as
    `numpy.percentile`) of the `num_resamples` values: rliable's `method="percentile"`.

    Args:
      key: PRNG key.
      statistic: jittable function of the score arrays returning an array of any fixed shape
        (e.g. `aggregate_iqm`, or `probability_of_improvement` with two arrays). Pass the same
        function object to reuse the compiled program.
      *scores: one or more `[R_i, K, ...]` finite score arrays (validated: see `check_scores`).
      num_resamples: bootstrap resamples `B` (static).
      confidence: coverage of the interval, in `(0, 1)`.
      batch_size: if given, evaluate resamples in `lax.map` chunks of this size, so that only
        `batch_size` resampled arrays exist at a time (the run indices, `B x R_i x K` int32,
        are still drawn up front; the result is identical); default: all in one `vmap`.

    Returns:
      `Interval(point, low, high)`, each of the statistic's shape.

    Reference: Agarwal et al. 2021, Appendix A.
    """
    if not scores:
        raise ValueError("interval_estimate needs at least one score array")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if int(num_resamples) < 1:
        raise ValueError(f"num_resamples must be >= 1, got {num_resamples}")
    arrays = tuple(check_scores(s, f"scores[{i}]") for i, s in enumerate(scores))
    return _bootstrap(
        key, arrays, statistic, int(num_resamples), jnp.float32(confidence), batch_size
    )


# ----------------------------------------------------------------------------- validation


def check_scores(scores: Any, name: str = "scores", min_ndim: int = 2) -> Array:
    """Validate a score array and return it as a float `jax.Array` (float64 under x64).

    Args:
      scores: `[R, K, ...]` array-like (a ragged nested list is rejected).
      name: how to call it in error messages (e.g. the algorithm).
      min_ndim: required number of leading axes (2: runs and tasks).

    Returns:
      The scores as a float array.

    Raises:
      ValueError: ragged input, too few axes, no runs or tasks, or a NaN/inf entry (its index
        is named). Traced arrays (inside `jit`) are only shape-checked.
    """
    if isinstance(scores, jax.core.Tracer):
        arr = scores
    else:
        try:
            host = np.asarray(scores, dtype=np.float64)
        except ValueError as err:
            raise ValueError(
                f"{name}: could not build an array (runs of unequal length?): {err}. "
                "Use stack_scores({algorithm: {task: runs}}) for ragged data."
            ) from err
        bad = np.argwhere(~np.isfinite(host))
        if bad.size:
            where = ", ".join(str(tuple(int(i) for i in b)) for b in bad[:5])
            more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
            raise ValueError(
                f"{name} contains {len(bad)} non-finite (NaN/inf) value(s) at index {where}"
                f"{more}; drop or impute them before computing statistics"
            )
        arr = jnp.asarray(host, jnp.result_type(float))
    if arr.ndim < min_ndim:
        raise ValueError(
            f"{name} must have shape [runs, tasks{', ...' if min_ndim > 2 else ''}] "
            f"(at least {min_ndim} axes), got shape {tuple(arr.shape)}; "
            "a single task is [runs, 1]"
        )
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"{name} has no runs or no tasks: shape {tuple(arr.shape)}")
    return arr


def _check_dict(score_dict: Mapping[str, Any], ndim: int | None = None) -> dict[str, Array]:
    if isinstance(score_dict, Mapping):
        if not score_dict:
            raise ValueError("score dict is empty")
        out = {str(k): check_scores(v, f"scores of {k!r}") for k, v in score_dict.items()}
    else:
        out = {"": check_scores(score_dict)}
    shapes = {k: tuple(v.shape) for k, v in out.items()}
    first = next(iter(out))
    for k, v in out.items():
        if ndim is not None and v.ndim != ndim:
            raise ValueError(
                f"scores of {k!r} must have {ndim} axes "
                f"{'[runs, tasks]' if ndim == 2 else '[runs, tasks, T]'}, got shape {shapes[k]}"
            )
        if v.shape[1:] != out[first].shape[1:]:
            raise ValueError(
                f"algorithms disagree on tasks (or curve length): {k!r} has shape {shapes[k]} "
                f"but {first!r} has {shapes[first]} (axes [runs, tasks, ...]; runs may differ). "
                "Use stack_scores({algorithm: {task: runs}}) to match tasks by name."
            )
    return out


def stack_scores(
    data: Mapping[str, Mapping[str, Any]],
    tasks: Sequence[str] | None = None,
) -> tuple[dict[str, np.ndarray], list[str]]:
    """Build `[R, K]` (or `[R, K, T]`) arrays from `{algorithm: {task: runs}}`, checking them.

    Args:
      data: algorithm -> task -> a sequence of runs, each a score (giving `[R, K]`) or a
        learning curve of `T` scores (giving `[R, K, T]`).
      tasks: task order (default: all tasks of all algorithms, in first-seen order); tasks
        not listed are an error.

    Returns:
      `(scores, tasks)`: algorithm -> float64 array `[R_a, K(, T)]`, and the `K` task names.

    Raises:
      ValueError: naming the algorithm and task that is missing, the task whose number of runs
        differs from the algorithm's other tasks, runs with curves of unequal length, or NaN.
    """
    if not data:
        raise ValueError("no algorithms given")
    if tasks is None:  # every task any algorithm has, in first-seen order
        tasks = list(dict.fromkeys(t for per_task in data.values() for t in per_task))
    tasks = list(tasks)
    problems = []
    for algo, per_task in data.items():
        missing = [t for t in tasks if t not in per_task]
        extra = [t for t in per_task if t not in tasks]
        if missing:
            problems.append(f"algorithm {algo!r} is missing task(s) {missing}")
        if extra:
            problems.append(f"algorithm {algo!r} has task(s) {extra} not in {tasks}")
    if problems:
        raise ValueError("tasks differ between algorithms: " + "; ".join(problems))
    out = {}
    for algo, per_task in data.items():
        columns = []
        for task in tasks:
            runs = [np.asarray(r, np.float64) for r in per_task[task]]
            if not runs:
                raise ValueError(f"algorithm {algo!r}, task {task!r} has no runs")
            lengths = {r.shape for r in runs}
            if len(lengths) > 1:
                detail = ", ".join(f"run {i}: {r.shape}" for i, r in enumerate(runs))
                raise ValueError(
                    f"algorithm {algo!r}, task {task!r}: runs have unequal lengths ({detail})"
                )
            columns.append(np.stack(runs))
        counts = {t: len(c) for t, c in zip(tasks, columns)}
        if len(set(counts.values())) > 1:
            raise ValueError(
                f"algorithm {algo!r} has a different number of runs per task: {counts}"
            )
        curve_shapes = {t: c.shape[1:] for t, c in zip(tasks, columns)}
        if len(set(curve_shapes.values())) > 1:
            raise ValueError(
                f"algorithm {algo!r} has learning curves of different lengths per task: "
                f"{curve_shapes}"
            )
        arr = np.stack(columns, axis=1)
        check_scores(arr, f"scores of {algo!r}")
        out[algo] = arr
    curve = {a: v.shape[2:] for a, v in out.items()}
    if len(set(curve.values())) > 1:
        raise ValueError(f"algorithms have learning curves of different lengths: {curve}")
    return out, tasks


# ----------------------------------------------------------------------------- entry points


def _algo_keys(key: Array, names: Sequence[str]) -> dict[str, Array]:
    return {n: jax.random.fold_in(key, i) for i, n in enumerate(names)}


def aggregate_metrics(
    key: Array,
    scores: Mapping[str, Any] | Any,
    metrics: Sequence[str] = AGGREGATES,
    threshold: float = 1.0,
    num_resamples: int = 2000,
    confidence: float = 0.95,
    batch_size: int | None = None,
) -> dict[str, Any]:
    """Aggregate metrics (median, IQM, mean, optimality gap) with stratified-bootstrap CIs.

    Args:
      key: PRNG key (algorithm `a`, in dict order `i`, uses `fold_in(key, i)`; every metric of
        one algorithm is computed on the same resamples).
      scores: `[R, K]` scores of one algorithm, or `{algorithm: [R_a, K]}`.
      metrics: names from `AGGREGATES`.
      threshold: optimality-gap threshold.
      num_resamples: bootstrap resamples.
      confidence: interval coverage.
      batch_size: see `interval_estimate`.

    Returns:
      `{metric: Interval}` for an array input, `{algorithm: {metric: Interval}}` for a dict;
      each `Interval` holds `[]` arrays.
    """
    score_dict = _check_dict(scores, ndim=2)
    fns = tuple(aggregate_fn(m, float(threshold)) for m in metrics)
    names = tuple(metrics)
    statistic = _stacked_statistic(fns)
    out = {}
    for algo, k in _algo_keys(key, list(score_dict)).items():
        est = interval_estimate(
            k,
            statistic,
            score_dict[algo],
            num_resamples=num_resamples,
            confidence=confidence,
            batch_size=batch_size,
        )
        out[algo] = {
            m: Interval(est.point[i], est.low[i], est.high[i]) for i, m in enumerate(names)
        }
    return out[""] if not isinstance(scores, Mapping) else out


@functools.lru_cache(maxsize=64)
def _stacked_statistic(fns: tuple[Callable[[Array], Array], ...]) -> Callable[[Array], Array]:
    # Cached so that equal metric lists reuse one compiled bootstrap program.
    def statistic(s: Array) -> Array:
        return jnp.stack([f(s) for f in fns])

    return statistic


def probability_of_improvement_ci(
    key: Array,
    scores_x: Any,
    scores_y: Any,
    num_resamples: int = 2000,
    confidence: float = 0.95,
    batch_size: int | None = None,
) -> Interval:
    """`P(X > Y)` with a CI; the runs of X and Y are resampled independently, per task.

    Args:
      key: PRNG key.
      scores_x: `[R_x, K]` scores of X.
      scores_y: `[R_y, K]` scores of Y.
      num_resamples, confidence, batch_size: see `interval_estimate`.

    Returns:
      `Interval` of `[]` arrays.
    """
    pair = _check_dict({"X": scores_x, "Y": scores_y}, ndim=2)
    return interval_estimate(
        key,
        probability_of_improvement,
        pair["X"],
        pair["Y"],
        num_resamples=num_resamples,
        confidence=confidence,
        batch_size=batch_size,
    )


def pairwise_probability_of_improvement(
    key: Array,
    score_dict: Mapping[str, Any],
    pairs: Sequence[tuple[str, str]] | None = None,
    num_resamples: int = 2000,
    confidence: float = 0.95,
    batch_size: int | None = None,
) -> dict[tuple[str, str], Interval]:
    """`P(X > Y)` with CIs for pairs of algorithms.

    Args:
      key: PRNG key (pair `i` uses `fold_in(key, i)`).
      score_dict: `{algorithm: [R_a, K]}`.
      pairs: `(X, Y)` name pairs (default: every ordered pair `X` before `Y` in dict order).
      num_resamples, confidence, batch_size: see `interval_estimate`.

    Returns:
      `{(X, Y): Interval}`.
    """
    checked = _check_dict(score_dict, ndim=2)
    names = list(checked)
    if pairs is None:
        pairs = [(x, y) for i, x in enumerate(names) for y in names[i + 1 :]]
    for x, y in pairs:
        for n in (x, y):
            if n not in checked:
                raise KeyError(f"unknown algorithm {n!r}; have {names}")
    return {
        (x, y): interval_estimate(
            jax.random.fold_in(key, i),
            probability_of_improvement,
            checked[x],
            checked[y],
            num_resamples=num_resamples,
            confidence=confidence,
            batch_size=batch_size,
        )
        for i, (x, y) in enumerate(pairs)
    }


def format_comparison(
    key: Array,
    score_dict: Mapping[str, Any],
    metrics: Sequence[str] = ("iqm", "mean"),
    pairs: Sequence[tuple[str, str]] | None = None,
    label: str = "",
    num_resamples: int = 2000,
    confidence: float = 0.95,
) -> str:
    """A printable comparison: aggregate metrics and `P(X > Y)`, each with its bootstrap CI.

    The lines a baseline script prints at its end. `aggregate_metrics` gives one line per
    algorithm and metric, `pairwise_probability_of_improvement` one line per pair.

    Args:
      key: PRNG key (the aggregates use `fold_in(key, 0)`, the pairs `fold_in(key, 1)`).
      score_dict: `{algorithm: [R_a]}` (one score per run, e.g. per seed) or `{algorithm: [R_a, K]}`.
      metrics: names from `AGGREGATES`.
      pairs: `(X, Y)` name pairs (default: every ordered pair `X` before `Y` in dict order).
      label: text put at the start of every line (e.g. `"greedy"`).
      num_resamples, confidence: see `interval_estimate`.

    Returns:
      The lines, joined by newlines (no trailing newline).
    """
    scores = {k: jnp.asarray(v)[:, None] if jnp.ndim(v) == 1 else v for k, v in score_dict.items()}
    agg = aggregate_metrics(
        jax.random.fold_in(key, 0), scores, metrics, num_resamples=num_resamples,
        confidence=confidence,
    )  # fmt: skip
    pct = f"{100 * confidence:g}% CI"
    prefix = f"{label} " if label else ""
    width = max(len(n) for n in scores)
    lines = [
        f"{prefix}{name:{width}s} {metric:4s} {float(iv.point):8.2f}  {pct} "
        f"[{float(iv.low):.2f}, {float(iv.high):.2f}]"
        for name, res in agg.items()
        for metric, iv in res.items()
    ]
    poi = pairwise_probability_of_improvement(
        jax.random.fold_in(key, 1), scores, pairs, num_resamples=num_resamples,
        confidence=confidence,
    )  # fmt: skip
    lines += [
        f"{prefix}P({x} > {y}) = {float(iv.point):.2f}  {pct} "
        f"[{float(iv.low):.2f}, {float(iv.high):.2f}]"
        for (x, y), iv in poi.items()
    ]
    return "\n".join(lines)


def performance_profiles(
    key: Array,
    score_dict: Mapping[str, Any] | Any,
    taus: Any,
    per_task_mean: bool = False,
    num_resamples: int = 2000,
    confidence: float = 0.95,
    batch_size: int | None = None,
) -> dict[str, Interval] | Interval:
    """Performance profiles (score distributions) with pointwise bootstrap CIs.

    Args:
      key: PRNG key.
      score_dict: `[R, K]` or `{algorithm: [R_a, K]}`.
      taus: `[M]` thresholds.
      per_task_mean: profile of per-task mean scores (rliable's `use_score_distribution=False`)
        instead of all run scores.
      num_resamples, confidence, batch_size: see `interval_estimate`.

    Returns:
      `Interval` of `[M]` arrays, or `{algorithm: Interval}` for a dict.

    Reference: Agarwal et al. 2021, Sec. 4.2; E. D. Dolan and J. J. More, "Benchmarking
    optimization software with performance profiles", Math. Program. 2002.
    """
    checked = _check_dict(score_dict, ndim=2)
    taus = jnp.asarray(np.asarray(taus, np.float32).reshape(-1))
    statistic = _profile_statistic(per_task_mean, tuple(np.asarray(taus).tolist()))
    out = {
        algo: interval_estimate(
            k,
            statistic,
            checked[algo],
            num_resamples=num_resamples,
            confidence=confidence,
            batch_size=batch_size,
        )
        for algo, k in _algo_keys(key, list(checked)).items()
    }
    return out if isinstance(score_dict, Mapping) else out[""]


@functools.lru_cache(maxsize=64)
def _profile_statistic(per_task_mean: bool, taus: tuple[float, ...]) -> Callable[[Array], Array]:
    fn = average_score_distribution if per_task_mean else score_distribution
    t = np.asarray(taus, np.float32)
    return lambda s: fn(s, t)


def sample_efficiency_curves(
    key: Array,
    score_dict: Mapping[str, Any] | Any,
    statistic: str | Callable[[Array], Array] = "iqm",
    threshold: float = 1.0,
    num_resamples: int = 2000,
    confidence: float = 0.95,
    batch_size: int | None = None,
) -> dict[str, Interval] | Interval:
    """An aggregate (IQM by default) at every point of learning curves, with pointwise CIs.

    A resample draws whole runs (curves) per task, so the curves of the bounds are smooth; the
    interval at each point has the same distribution as rliable's, which draws runs
    independently per point.

    Args:
      key: PRNG key.
      score_dict: `[R, K, T]` scores or `{algorithm: [R_a, K, T]}` (same `K` and `T`).
      statistic: an `AGGREGATES` name or a `[R, K] -> []` jittable function.
      threshold: optimality-gap threshold (if `statistic="optimality_gap"`).
      num_resamples, confidence, batch_size: see `interval_estimate`.

    Returns:
      `Interval` of `[T]` arrays, or `{algorithm: Interval}` for a dict.
    """
    checked = _check_dict(score_dict, ndim=3)
    fn = aggregate_fn(statistic, float(threshold)) if isinstance(statistic, str) else statistic
    per_point = _per_point(fn)
    out = {
        algo: interval_estimate(
            k,
            per_point,
            checked[algo],
            num_resamples=num_resamples,
            confidence=confidence,
            batch_size=batch_size,
        )
        for algo, k in _algo_keys(key, list(checked)).items()
    }
    return out if isinstance(score_dict, Mapping) else out[""]


@functools.lru_cache(maxsize=64)
def _per_point(fn: Callable[[Array], Array]) -> Callable[[Array], Array]:
    return jax.vmap(fn, in_axes=2)
