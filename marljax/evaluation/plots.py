"""Figures of evaluation results (matplotlib, imported lazily and drawn with the Agg backend).

Each `plot_*` function takes the output of a `marljax.evaluation.stats` (or `crossplay`)
function, writes one PNG and returns its path:

- `plot_setting_curves`: one run's learning curves from arrays, a line per setting (a run
  directory's `learning_curve.png`).
- `plot_learning_curves`: per-update return of run directories, mean (or IQM) over seeds with
  a stratified-bootstrap confidence band;
- `plot_sample_efficiency`: `sample_efficiency_curves` output;
- `plot_interval_estimates`: `aggregate_metrics` output, one panel per metric;
- `plot_probability_of_improvement`: `pairwise_probability_of_improvement` output;
- `plot_performance_profiles`: `performance_profiles` output;
- `plot_crossplay_heatmap`: a `[P, Q]` cross-play matrix;
- `plot_lineage`: a tuning run's hyperparameter lineage (PBT) or stopped runs (halving);
- `plot_social_metrics`: social-metric curves over training (`marljax.evaluation.social`);
- `plot_swarm_snapshot`: positions and headings of a swarm (`swarm_snapshot` reads a state).

`plot_runs(run_dirs, out_dir)` reads run directories written by `marljax.shell.experiment`
(`config.json`, `metrics.npz`) and writes all the figures that the runs support.

Reference: R. Agarwal et al., "Deep reinforcement learning at the edge of the statistical
precipice", NeurIPS 2021 (the figure types).
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from marljax.evaluation import stats
from marljax.training.rollout import score_label, task_metric_names

PathLike = str | os.PathLike


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


#: figures never grow taller than this (inches), however many settings they show
MAX_HEIGHT = 8.0
#: `plot_runs` shows at most this many settings (the best by mean final return) by default
DEFAULT_TOP = 8
_LINESTYLES = ("-", "--", ":", "-.")


def _save(fig, path: PathLike) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    fig.savefig(path)
    _pyplot().close(fig)
    return path


def _colors(n: int) -> list:
    cmap = _pyplot().get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(n)]


def _styles(n: int) -> list[tuple[Any, str]]:
    """`n` distinct `(colour, line style)` pairs: the 10 tab10 colours, then other line styles."""
    cmap = _pyplot().get_cmap("tab10")
    return [(cmap(i % 10), _LINESTYLES[(i // 10) % len(_LINESTYLES)]) for i in range(n)]


def _height(rows: int) -> float:
    return min(MAX_HEIGHT, 0.45 * rows + 1.4)


# ----------------------------------------------------------------------------- figures


def plot_interval_estimates(
    estimates: Mapping[str, Mapping[str, stats.Interval]],
    path: PathLike,
    metrics: Sequence[str] | None = None,
    xlabel: str = "score",
    title: str = "",
) -> Path:
    """Aggregate metrics with confidence intervals: one panel per metric, one bar per algorithm.

    Args:
      estimates: `{algorithm: {metric: Interval}}` (the output of `stats.aggregate_metrics`).
      path: output PNG.
      metrics: which metrics, in order (default: those of the first algorithm).
      xlabel: axis label.
      title: figure title.

    Returns:
      The written path.
    """
    plt = _pyplot()
    algos = list(estimates)
    metrics = list(metrics or next(iter(estimates.values())))
    width = 3.2 * len(metrics) + 0.065 * max(len(a) for a in algos)
    fig, axes = plt.subplots(1, len(metrics), figsize=(width, _height(len(algos))), squeeze=False)
    colors = _colors(len(algos))
    for ax, m in zip(axes[0], metrics):
        for i, a in enumerate(algos):
            p, lo, hi = (float(v) for v in estimates[a][m])
            ax.barh(i, hi - lo, left=lo, height=0.6, color=colors[i], alpha=0.75)
            ax.vlines(p, i - 0.3, i + 0.3, color="black", linewidth=1.5)
        ax.set_yticks(range(len(algos)), algos if ax is axes[0][0] else [""] * len(algos))
        ax.set_ylim(len(algos) - 0.5, -0.5)  # the first algorithm on top
        ax.set_title(m.replace("_", " "))
        ax.set_xlabel(xlabel)
        ax.margins(x=0.08)  # keeps zero-width intervals at the data range's edge visible
        ax.grid(axis="x", alpha=0.3)
    if title:
        fig.suptitle(title)
    return _save(fig, path)


def plot_probability_of_improvement(
    estimates: Mapping[tuple[str, str], stats.Interval],
    path: PathLike,
    title: str = "",
) -> Path:
    """`P(X > Y)` with confidence intervals, one row per pair (0.5 = no difference).

    Args:
      estimates: `{(X, Y): Interval}` (`stats.pairwise_probability_of_improvement`).
      path: output PNG.
      title: figure title.

    Returns:
      The written path.
    """
    plt = _pyplot()
    pairs = list(estimates)
    firsts = {x for x, _ in pairs}
    if len(firsts) == 1 and len(pairs) > 1:  # one setting against the others: name the others
        ticks = [y for _, y in pairs]
        xlabel = f"P({pairs[0][0]} > setting)"
    else:
        ticks = [f"P({x} > {y})" for x, y in pairs]
        xlabel = "probability of improvement"
    width = max(6.0, 3.5 + 0.065 * max(len(t) for t in ticks))
    fig, ax = plt.subplots(figsize=(min(width, 14.0), _height(len(pairs))))
    for i, pair in enumerate(pairs):
        p, lo, hi = (float(v) for v in estimates[pair])
        ax.barh(i, hi - lo, left=lo, height=0.6, color="tab:blue", alpha=0.6)
        ax.vlines(p, i - 0.3, i + 0.3, color="black", linewidth=1.5)
    ax.axvline(0.5, color="gray", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(pairs)), ticks)
    ax.set_ylim(len(pairs) - 0.5, -0.5)  # the first pair on top
    ax.set_xlim(0.0, 1.0)
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title, fontsize=9)
    return _save(fig, path)


def plot_performance_profiles(
    profiles: Mapping[str, stats.Interval] | stats.Interval,
    taus: Any,
    path: PathLike,
    xlabel: str = r"score $\tau$",
    title: str = "",
) -> Path:
    """Score distributions: fraction of runs with score above `tau`, with confidence bands.

    Args:
      profiles: `{algorithm: Interval of [M]}` or one `Interval` (`stats.performance_profiles`).
      taus: `[M]` thresholds.
      path: output PNG.
      xlabel: axis label.
      title: figure title.

    Returns:
      The written path.
    """
    plt = _pyplot()
    if isinstance(profiles, stats.Interval):
        profiles = {"": profiles}
    taus = np.asarray(taus)
    fig, ax = plt.subplots(figsize=(5.5, 4), layout="constrained")
    for (color, style), (a, est) in zip(_styles(len(profiles)), profiles.items()):
        ax.plot(taus, np.asarray(est.point), color=color, linestyle=style, label=a)
        ax.fill_between(taus, np.asarray(est.low), np.asarray(est.high), color=color, alpha=0.2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(r"fraction of runs with score $> \tau$")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.set_title(title)
    if len(profiles) > 1 or next(iter(profiles)):
        _legend_outside(fig, ax.get_legend_handles_labels())
    return _save(fig, path)


def plot_sample_efficiency(
    curves: Mapping[str, stats.Interval] | stats.Interval,
    steps: Any,
    path: PathLike,
    ylabel: str = "IQM return",
    title: str = "",
    xlabel: str = "environment steps",
) -> Path:
    """Aggregate learning curves with pointwise confidence bands.

    Args:
      curves: `{algorithm: Interval of [T]}` or one `Interval` (`stats.sample_efficiency_curves`).
      steps: `[T]` environment steps (or any other x, named by `xlabel`).
      path: output PNG.
      ylabel: axis label.
      title: figure title.
      xlabel: x-axis label.

    Returns:
      The written path.
    """
    plt = _pyplot()
    if isinstance(curves, stats.Interval):
        curves = {"": curves}
    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    _draw_curves(ax, curves, {a: np.asarray(steps) for a in curves})
    if len(curves) > 1 or next(iter(curves), ""):
        _legend_outside(fig, ax.get_legend_handles_labels())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return _save(fig, path)


def _draw_curves(ax, curves: Mapping[str, stats.Interval], steps: Mapping[str, np.ndarray]):
    for (color, style), (a, est) in zip(_styles(len(curves)), curves.items()):
        x = steps[a]
        ax.plot(x, np.asarray(est.point), color=color, linestyle=style, label=a)
        ax.fill_between(x, np.asarray(est.low), np.asarray(est.high), color=color, alpha=0.2)
    ax.set_xlabel("environment steps")
    ax.grid(alpha=0.3)


def _legend_outside(fig, handles_labels, title: str | None = None) -> None:
    """One legend right of the axes (never over the curves); labels wrapped at 40 characters."""
    import textwrap

    handles, labels = handles_labels
    labels = ["\n".join(textwrap.wrap(lb, 40)) or lb for lb in labels]
    fig.legend(
        handles,
        labels,
        loc="outside right upper",
        fontsize=8,
        title=title,
        title_fontsize=8,
        alignment="left",
    )


def plot_crossplay_heatmap(
    matrix: Any,
    path: PathLike,
    labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    title: str = "cross-play",
    value_label: str = "return",
) -> Path:
    """A cross-play matrix as an annotated heatmap (rows: first role, columns: partner).

    Args:
      matrix: `[P, Q]`, or `[P, Q, A]` per-agent values (summed to a team value).
      path: output PNG.
      labels: `P` row labels (and column labels if `col_labels` is not given and `P = Q`).
      col_labels: `Q` column labels.
      title: figure title.
      value_label: colour-bar label.

    Returns:
      The written path.
    """
    plt = _pyplot()
    m = np.asarray(matrix, np.float64)
    if m.ndim > 2:
        m = m.reshape(m.shape[0], m.shape[1], -1).sum(axis=-1)
    if m.ndim != 2:
        raise ValueError(f"matrix must be [P, Q] or [P, Q, A], got shape {np.shape(matrix)}")
    rows = list(labels) if labels is not None else [str(i) for i in range(m.shape[0])]
    cols = (
        list(col_labels)
        if col_labels is not None
        else (rows if m.shape[0] == m.shape[1] else [str(j) for j in range(m.shape[1])])
    )
    size = max(3.0, 0.55 * max(m.shape) + 1.5)
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    im = ax.imshow(m, cmap="viridis")
    fig.colorbar(im, ax=ax, label=value_label)
    ax.set_xticks(range(m.shape[1]), cols, rotation=45, ha="right")
    ax.set_yticks(range(m.shape[0]), rows)
    ax.set_xlabel("partner")
    ax.set_ylabel("policy")
    if m.size <= 400:
        mid = (np.nanmax(m) + np.nanmin(m)) / 2
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                ax.text(
                    j,
                    i,
                    f"{m[i, j]:.3g}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="black" if m[i, j] > mid else "white",
                )
    ax.set_title(title)
    return _save(fig, path)


def plot_social_metrics(
    runs: Mapping[str, Mapping[str, Any]],
    steps: Any,
    path: PathLike,
    metrics: Sequence[str] | None = None,
    statistic: str = "mean",
    key: jax.Array | None = None,
    num_resamples: int = 2000,
    confidence: float = 0.95,
    title: str = "",
) -> Path:
    """Social-metric curves over training: one panel per metric, one line per run (e.g. mode).

    The training metrics of an env wrapped in `marljax.evaluation.social.SocialMetrics` hold
    `"social/<name>"` arrays `[S, U]` (seeds x updates); each line is `statistic` over seeds
    at each update with a percentile bootstrap band over seeds (`stats.sample_efficiency_curves`).
    As in `curve_band`, an update in which a seed finished no episode (NaN) carries that seed's
    last value forward; a line starts once every seed has a value.

    Args:
      runs: `{label: {metric: [S, U]}}`, e.g. `{"shared": metrics, "independent": metrics}`
        with the metrics dicts returned by training (other keys are ignored).
      steps: `[U]` environment steps of the updates.
      path: output PNG.
      metrics: metric names, with or without the `"social/"` prefix (default: every
        `"social/*"` key that all runs have, in the order of `social.METRICS`).
      statistic: an aggregate name (`"mean"`, `"iqm"`, `"median"`).
      key: PRNG key (default `PRNGKey(0)`).
      num_resamples: bootstrap resamples.
      confidence: band coverage.
      title: figure title.

    Returns:
      The written path.

    Raises:
      ValueError: no runs, a missing metric (named with the run), arrays that are not `[S, U]`
        with `U = len(steps)`, or a run and metric without any complete update.

    Reference: J. Perolat et al., "A multi-agent reinforcement learning model of common-pool
    resource appropriation", NeurIPS 2017 (the metrics and this figure type).
    """
    from marljax.evaluation.social import METRICS as SOCIAL_METRICS

    if not runs:
        raise ValueError("runs is empty: pass {label: {'social/<name>': [S, U] array}}")
    steps = np.asarray(steps)
    if steps.ndim != 1:
        raise ValueError(f"steps must be [U], got shape {steps.shape}")
    if metrics is None:
        common = set.intersection(*(set(m) for m in runs.values()))
        metrics = [f"social/{m}" for m in SOCIAL_METRICS if f"social/{m}" in common]
        metrics += sorted(m for m in common if m.startswith("social/") and m not in metrics)
        if not metrics:
            raise ValueError(
                "no 'social/<name>' metric common to all runs; train on "
                "SocialMetrics(env) or pass metrics=[...]"
            )
    else:
        metrics = [
            m if m.startswith("social/") or m in _first(runs) else f"social/{m}" for m in metrics
        ]
    key = jax.random.PRNGKey(0) if key is None else key
    curves: dict[str, dict[str, tuple[np.ndarray, stats.Interval]]] = {m: {} for m in metrics}
    for r, (label, run) in enumerate(runs.items()):
        for j, m in enumerate(metrics):
            if m not in run:
                raise ValueError(f"run {label!r} has no metric {m!r}; it has {sorted(run)[:12]}")
            x = np.asarray(run[m], np.float64)
            if x.ndim != 2 or x.shape[1] != steps.shape[0]:
                raise ValueError(
                    f"run {label!r} metric {m!r} must be [S, U] = [seeds, {steps.shape[0]}] "
                    f"(one value per update, U = len(steps)), got shape {x.shape}"
                )
            x = fill_forward(x)  # as `curve_band`: a seed's last finished episode carries on
            ok = np.all(np.isfinite(x), axis=0)
            if not ok.any():
                raise ValueError(
                    f"run {label!r} metric {m!r} has no update in which every seed finished "
                    "an episode (all NaN); train longer or with more environments"
                )
            est = stats.sample_efficiency_curves(
                jax.random.fold_in(key, 1000 * r + j),
                x[:, None, ok],
                statistic=statistic,
                num_resamples=num_resamples,
                confidence=confidence,
            )
            curves[m][label] = (steps[ok], est)
    plt = _pyplot()
    fig, axes = plt.subplots(
        1, len(metrics), figsize=(3.6 * len(metrics), 3.2), squeeze=False, layout="constrained"
    )
    styles = _styles(len(runs))
    for ax, m in zip(axes[0], metrics):
        for (color, style), (label, (x, est)) in zip(styles, curves[m].items()):
            ax.plot(x, np.asarray(est.point), color=color, linestyle=style, label=label)
            ax.fill_between(x, np.asarray(est.low), np.asarray(est.high), color=color, alpha=0.2)
        ax.set_title(m.removeprefix("social/").replace("_", " "))
        ax.set_xlabel("environment steps")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"{statistic} over seeds, {confidence:.0%} CI")
    if len(runs) > 1 or next(iter(runs)):
        _legend_outside(fig, axes[0][0].get_legend_handles_labels())
    if title:
        fig.suptitle(title)
    return _save(fig, path)


def _first(runs: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any]:
    return next(iter(runs.values()))


def swarm_snapshot(state: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """Positions and headings of a swarm env state (`marljax.envs.swarm`), as host arrays.

    Args:
      state: a swarm state (`VicsekState`, `KuramotoState`, `AggregationState`, possibly with
        leading batch axes) or anything with a `pos` field `[..., A, 2]`.

    Returns:
      `(positions [..., A, 2], headings [..., A] or None)`: the heading is `state.heading`
      (Vicsek), else the oscillator phase `state.phase` (Kuramoto, drawn as a direction), else
      None (aggregation agents have no heading).

    Raises:
      ValueError: `state` has no `pos` field.
    """
    inner = getattr(state, "inner", None)
    if not hasattr(state, "pos") and inner is not None:  # unwrap wrapper states
        return swarm_snapshot(inner)
    if not hasattr(state, "pos"):
        raise ValueError(
            f"{type(state).__name__} has no `pos` field: pass a swarm env state "
            "(marljax.envs.swarm) or positions to plot_swarm_snapshot directly"
        )
    pos = np.asarray(state.pos)
    for name in ("heading", "phase"):
        if hasattr(state, name):
            return pos, np.asarray(getattr(state, name))
    return pos, None


def plot_swarm_snapshot(
    positions: Any,
    path: PathLike,
    headings: Any | None = None,
    size: float | None = None,
    titles: Sequence[str] | None = None,
    title: str = "",
) -> Path:
    """Swarm snapshots: agents' positions, with arrows for their headings, one panel per frame.

    Args:
      positions: `[A, 2]` positions of one frame or `[P, A, 2]` for `P` frames (panels), e.g.
        the first and last state of an episode (see `swarm_snapshot`).
      path: output PNG.
      headings: optional `[A]` or `[P, A]` angles in radians (drawn as unit arrows coloured by
        angle); None draws points only.
      size: side `L` of the torus `[0, L)^2` (axes limits; default: the data range).
      titles: `P` panel titles (default: "frame p").
      title: figure title.

    Returns:
      The written path.

    Raises:
      ValueError: shapes that do not match (named), or `len(titles) != P`.
    """
    pos = np.asarray(positions, np.float64)
    if pos.ndim == 2:
        pos = pos[None]
    if pos.ndim != 3 or pos.shape[-1] != 2:
        raise ValueError(f"positions must be [A, 2] or [P, A, 2], got shape {np.shape(positions)}")
    P, A = pos.shape[:2]
    head = None
    if headings is not None:
        head = np.asarray(headings, np.float64)
        if head.ndim == 1:
            head = head[None]
        if head.shape != (P, A):
            raise ValueError(
                f"headings must be [A] or [P, A] = {[P, A]} to match positions, got shape "
                f"{np.shape(headings)}"
            )
    if titles is not None and len(titles) != P:
        raise ValueError(f"titles must have one entry per frame ({P}), got {len(titles)}")
    titles = list(titles) if titles is not None else [f"frame {p}" for p in range(P)]
    if size is not None and not float(size) > 0:
        raise ValueError(f"size (the torus side L) must be > 0, got {size}")
    plt = _pyplot()
    fig, axes = plt.subplots(1, P, figsize=(3.6 * P, 3.6), squeeze=False)
    for p, ax in enumerate(axes[0]):
        if head is None:
            ax.scatter(pos[p, :, 0], pos[p, :, 1], s=12, color="tab:blue")
        else:
            arrow = 0.04 * (float(size) if size is not None else np.ptp(pos[p]) + 1e-9)
            ax.quiver(
                pos[p, :, 0],
                pos[p, :, 1],
                np.cos(head[p]),
                np.sin(head[p]),
                np.mod(head[p], 2 * np.pi),
                cmap="hsv",
                clim=(0.0, 2 * np.pi),
                angles="xy",
                scale_units="xy",
                scale=1.0 / arrow,
                width=0.006,
            )
        if size is not None:
            ax.set_xlim(0.0, float(size))
            ax.set_ylim(0.0, float(size))
        ax.set_aspect("equal")
        ax.set_title(titles[p])
        ax.set_xticks([])
        ax.set_yticks([])
    if title:
        fig.suptitle(title)
    return _save(fig, path)


# ----------------------------------------------------------------------------- learning curves


class CurveBand(NamedTuple):
    """A learning curve with its band (`curve_band`).

    Attributes:
      steps: `[T]` environment steps of the points shown.
      mean: `[T]` mean return over seeds.
      low: `[T]` lower bound of the bootstrap confidence interval of the mean.
      high: `[T]` upper bound.
      num_seeds: the number of seeds `S`.
    """

    steps: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    num_seeds: int


def fill_forward(values: Any) -> np.ndarray:
    """Carry each row's last finite value forward over the NaN entries that follow it.

    Args:
      values: `[..., U]` per-update values, NaN where an update had no finished episode.

    Returns:
      `[..., U]` float64, NaN only before the first finite value of a row.
    """
    x = np.array(values, np.float64)
    ok = np.isfinite(x)
    idx = np.where(ok, np.arange(x.shape[-1]), 0)
    idx = np.maximum.accumulate(idx, axis=-1)
    out = np.take_along_axis(x, idx, axis=-1)
    out[~np.maximum.accumulate(ok, axis=-1)] = np.nan
    return out


def curve_band(
    returns: Any,
    env_steps: Any,
    confidence: float = 0.95,
    num_resamples: int = 2000,
    seed: int = 0,
) -> CurveBand | None:
    """The learning-curve statistic of every marljax plot: the mean over seeds, with a
    percentile bootstrap confidence interval of that mean (seeds resampled with replacement).

    An update in which a seed finished no episode (NaN) carries that seed's last finished
    return forward (`fill_forward`), so a curve shows the return of the latest finished
    episodes and has no gaps; it starts at the first update by which every seed has finished
    an episode. The interval is the procedure of `stats.sample_efficiency_curves(...,
    statistic="mean")` for one task (whole curves resampled, `(1 -+ confidence) / 2`
    quantiles), computed with numpy so that drawing a run's curve compiles nothing.

    Args:
      returns: `[S, U]` per-update returns (NaN where no episode finished).
      env_steps: `[U]` environment steps of the updates.
      confidence: coverage of the band, in `(0, 1)`.
      num_resamples: bootstrap resamples.
      seed: seed of the resampling.

    Returns:
      A `CurveBand` (with one seed the band is the curve itself), or None when some seed
      finished no episode at all.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    steps = np.asarray(env_steps).reshape(-1)
    x = fill_forward(np.asarray(returns, np.float64).reshape(-1, steps.shape[0]))
    ok = np.all(np.isfinite(x), axis=0)
    if not ok.any():
        return None
    x = x[:, ok]
    num_seeds = x.shape[0]
    mean = x.mean(axis=0)
    low, high = mean.copy(), mean.copy()
    if num_seeds > 1:
        rng = np.random.default_rng(seed)
        weights = rng.multinomial(num_seeds, np.full(num_seeds, 1.0 / num_seeds), num_resamples)
        weights = weights / num_seeds  # [B, S]: a resample's mean is weights @ x
        alpha = (1.0 - confidence) / 2.0
        for start in range(0, x.shape[1], 1024):  # [B, 1024] replicates at a time
            cols = slice(start, start + 1024)
            low[cols], high[cols] = np.quantile(weights @ x[:, cols], [alpha, 1 - alpha], axis=0)
    return CurveBand(steps[ok], mean, low, high, num_seeds)


#: below this many seeds a bootstrap band is labelled as the seeds' range (`band_name`)
FEW_SEEDS = 5


def band_name(num_seeds: Sequence[int], confidence: float = 0.95) -> str:
    """The legend title that names the curve statistic and its band (`curve_band`), e.g.
    "line: mean over 4 seeds" and "band: 95% bootstrap CI of the mean" on two lines."""
    counts = sorted(set(int(n) for n in num_seeds))
    if counts == [1]:
        return "1 seed (no confidence band)"
    seeds = f"{counts[0]} seeds" if len(counts) == 1 else "seeds (n per curve)"
    name = f"line: mean over {seeds}\nband: {confidence:.0%} bootstrap CI of the mean"
    if counts[0] < FEW_SEEDS:  # a percentile bootstrap over 2-4 values undercovers
        name += f"\n(under {FEW_SEEDS} seeds: about the seeds' range, not a {confidence:.0%} CI)"
    return name


def _draw_learning_curves(
    path: PathLike,
    panels: Sequence[tuple[str, Sequence[tuple[str, CurveBand]], Mapping[str, float]]],
    confidence: float,
    title: str = "",
    styles: Mapping[str, tuple[Any, str]] | None = None,
) -> Path:
    """One panel per task: `(panel title, [(label, band)], references)`; one legend outside."""
    import math

    plt = _pyplot()
    labels = list(dict.fromkeys(lb for _, curves, _ in panels for lb, _ in curves))
    styles = dict(styles or zip(labels, _styles(len(labels))))
    seeds = [band.num_seeds for _, curves, _ in panels for _, band in curves]
    several = len(set(seeds)) > 1
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    longest = max([len(lb) for lb in labels] + [len(r) for *_, refs in panels for r in refs] + [8])
    legend_width = min(4.0, 0.06 * min(longest, 40) + 0.8)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(4.6 * ncols + legend_width, min(MAX_HEIGHT, 3.4 * nrows + 0.4)),
        squeeze=False,
        layout="constrained",
    )
    handles: dict[str, Any] = {}
    ref_styles = ((0, (5, 3)), (0, (1, 2)), (0, (6, 2, 1, 2)), (0, (2, 4)))
    for i, (ax, (panel, curves, refs)) in enumerate(zip(axes.flat, panels)):
        for label, band in curves:
            color, style = styles[label]
            text = f"{label} (n={band.num_seeds})" if several else label
            (line,) = ax.plot(band.steps, band.mean, color=color, linestyle=style, label=text)
            ax.fill_between(band.steps, band.low, band.high, color=color, alpha=0.2)
            handles.setdefault(text, line)
        for j, (name, value) in enumerate(refs.items()):
            text = f"{name} = {value:g}" + (f" ({panel})" if len(panels) > 1 else "")
            ref = ax.axhline(
                value, color="0.3", linewidth=1.0, linestyle=ref_styles[j % len(ref_styles)]
            )
            handles.setdefault(text, ref)
        if not curves:
            ax.text(
                0.5, 0.5, "no seed has finished an episode yet", ha="center", transform=ax.transAxes
            )
        ax.set_title(panel, fontsize=10)
        ax.set_xlabel("environment steps")
        if i % ncols == 0:
            ax.set_ylabel("episode return")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    if handles:
        name = band_name(seeds, confidence) if seeds else None
        _legend_outside(fig, (list(handles.values()), list(handles)), name)
    if title:
        fig.suptitle(title, fontsize=10, x=0.02, ha="left")
    return _save(fig, path)


# ----------------------------------------------------------------------------- run directories


@dataclasses.dataclass
class RunData:
    """Training returns of one run directory (one entry per hyperparameter setting).

    Attributes:
      run_dir: the directory.
      env: registered env id (the task).
      labels: `G` names of the run on its own, `algo` or `algo[setting]` (`label_runs` names
        the settings of several runs by what differs between them).
      env_steps: `[U]` environment steps of the updates.
      returns: `[G, S, U]` training-episode returns (NaN where no episode finished).
      config: the run's `config.json`.
      scores: the task's own scores, `{"task/<name>": [G, S, U]}` (e.g. SMAX's win rate).
    """

    run_dir: Path
    env: str
    labels: list[str]
    env_steps: np.ndarray
    returns: np.ndarray
    config: dict = dataclasses.field(default_factory=dict)
    scores: dict = dataclasses.field(default_factory=dict)


def load_run(run_dir: PathLike) -> RunData:
    """Read a run directory written by `marljax.shell.experiment.run_experiment`.

    Args:
      run_dir: a directory holding `config.json` and `metrics.npz`.

    Returns:
      A `RunData`.

    Raises:
      FileNotFoundError: a missing file is named.
      ValueError: a damaged config.json or metrics.npz (e.g. truncated), named.
    """
    run_dir = Path(run_dir)
    for name in ("config.json", "metrics.npz"):
        if not (run_dir / name).exists():
            raise FileNotFoundError(f"{run_dir} is not a run directory: {name} is missing")
    try:
        config = json.loads((run_dir / "config.json").read_text())
        exp = config.get("experiment", {})
        algo = exp.get("algo", run_dir.name)
        settings = config.get("resolved", {}).get("grid_settings") or [{}]
        with np.load(run_dir / "metrics.npz") as m:
            returns = np.asarray(m["episode_return"], np.float64)
            steps = np.asarray(m["env_steps"])[0, 0]
            scores = {
                k: np.asarray(m[k], np.float64)
                for k in task_metric_names(m.files)
                if not k.startswith("eval/")
            }
    except (ValueError, KeyError, IndexError, EOFError, AttributeError, zipfile.BadZipFile) as err:
        raise ValueError(
            f"{run_dir} cannot be read: its config.json or metrics.npz is damaged "
            f"({type(err).__name__}: {str(err)[:120]})"
        ) from None
    if returns.ndim > 3:  # per-agent returns [G, S, U, A]: the mean over agents
        returns = returns.reshape(*returns.shape[:3], -1).mean(axis=-1)
    labels = []
    for s in settings:
        tag = ",".join(f"{k}={_fmt(v)}" for k, v in s.items())
        labels.append(f"{algo}[{tag}]" if tag else algo)
    if len(labels) != returns.shape[0]:
        labels = [f"{algo}[{g}]" for g in range(returns.shape[0])]
    return RunData(run_dir, exp.get("env", "task"), labels, steps, returns, config, scores)


def _fmt(v: Any) -> str:
    """A config value as a label shows it: `3e-4`, `0.99`, `64,64`, `none`."""
    if v is None:
        return "none"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        plain = f"{v:.4g}"
        mantissa, _, exponent = f"{v:.3e}".partition("e")
        short = f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
        return short if v != 0 and abs(v) < 1 and len(short) < len(plain) else plain
    if isinstance(v, (list, tuple)):
        return ",".join(_fmt(x) for x in v)
    if isinstance(v, dict):
        return json.dumps(v, separators=(",", ":"), sort_keys=True)
    return str(v)


#: experiment keys that say how a run was stored, executed or ranked, or define a sweep (whose
#: settings are described one by one): never part of a label
_NOT_DESCRIBING = (
    "out_dir",
    "name",
    "checkpoint",
    "check_finite",
    "devices",
    "layout",
    "chunk_updates",
    "grid",
    "sample",
    "num_samples",
    "sample_seed",
    "metric",
    "mode",
    "window",
)


def _describe(run: RunData, g: int) -> dict[str, str]:
    """Everything that defines setting `g` of a run, `{key: value}` with `--set`-style keys."""
    exp = run.config.get("experiment", {})
    resolved = run.config.get("resolved", {})
    out = {"algo": str(exp.get("algo", run.run_dir.name)), "env": run.env}
    for k, v in exp.items():
        if k not in (*_NOT_DESCRIBING, "algo", "env", "env_kwargs", "train", "agent", "hparams"):
            out[k] = _fmt(v)
    for k, v in (exp.get("env_kwargs") or {}).items():
        out[f"env.{k}"] = _fmt(v)
    settings = resolved.get("grid_settings") or [{}]
    hparams = resolved.get("hparams")
    if isinstance(hparams, list) and g < len(hparams):
        hp = hparams[g]
    else:
        hp = {**(exp.get("hparams") or {}), **(settings[g] if g < len(settings) else {})}
    train = resolved.get("train") or exp.get("train") or {}
    train = {k: v for k, v in train.items() if k not in ("progress", "num_updates")}
    agent = resolved.get("agent") or exp.get("agent") or {}
    for group, values in (("train", train), ("agent", agent), ("hparams", hp)):
        for k, v in values.items():
            out[k if k not in out else f"{group}.{k}"] = _fmt(v)
    return out


class _Entry(NamedTuple):
    """One setting of one run: a curve and a row of the aggregate figures."""

    label: str
    task: str
    run: RunData
    index: int  # the setting g of the run


def _entries(runs: Sequence[RunData]) -> list[_Entry]:
    """Every (run, setting), labelled by what differs between them (see `label_runs`)."""
    pairs = [(run, g) for run in runs for g in range(run.returns.shape[0])]
    desc = [_describe(run, g) for run, g in pairs]
    keys = list(dict.fromkeys(k for d in desc for k in d))
    differ = [k for k in keys if len({d.get(k, "default") for d in desc}) > 1]
    task_keys = [k for k in differ if k.startswith("env.")]
    label_keys = [k for k in differ if k not in ("algo", "env", *task_keys)]
    labels, tasks = [], []
    for d in desc:
        parts = ", ".join(f"{k}={d.get(k, 'default')}" for k in label_keys)
        labels.append(f"{d['algo']} {parts}".strip())
        env_parts = ", ".join(f"{k}={d.get(k, 'default')}" for k in task_keys)
        tasks.append(f"{d['env']} {env_parts}".strip())
    # Entries that no config value tells apart: named by their run directory (and setting).
    groups: dict[tuple[str, str], list[int]] = {}
    for i, key in enumerate(zip(labels, tasks)):
        groups.setdefault(key, []).append(i)
    for members in groups.values():
        if len(members) < 2:
            continue
        names = [pairs[i][0].run_dir.name for i in members]
        for i in members:
            run, g = pairs[i]
            tag = run.run_dir.name if names.count(run.run_dir.name) == 1 else str(run.run_dir)
            tag += f"[{g}]" if run.returns.shape[0] > 1 else ""
            labels[i] = f"{labels[i]} ({tag})"
    out: list[_Entry] = []
    for (run, g), label, task in zip(pairs, labels, tasks):  # the same run given twice
        out.append(
            _Entry(_unique(label, {e.label: 0 for e in out if e.task == task}), task, run, g)
        )
    return out


def label_runs(runs: Sequence[RunData]) -> list[list[str]]:
    """Names of every setting of every run, from what differs between their configs.

    A label is the algorithm followed by the config values that differ between the settings
    shown together, `--set`-style (`"mappo lr=3e-4"`, `"ippo ent_coef=0.01, seeds=8"`); the
    env and its options are the task, not the label. Settings that no config value tells apart
    are named by their run directory (`"mappo (run_a)"`), so two runs are never one row.

    Args:
      runs: `load_run` outputs.

    Returns:
      `[[label of setting g] for each run]`.
    """
    entries = iter(_entries(runs))
    return [[next(entries).label for _ in range(run.returns.shape[0])] for run in runs]


def _unique(name: str, taken: Mapping[str, Any]) -> str:
    out, i = name, 2
    while out in taken:
        out, i = f"{name} #{i}", i + 1
    return out


def _final(run: RunData, g: int, label: str) -> list[float]:
    """Each seed's final return (last update with a finished episode)."""
    seeds = []
    for s, curve in enumerate(run.returns[g]):
        finite = curve[np.isfinite(curve)]
        if finite.size:
            seeds.append(float(finite[-1]))
        else:
            warnings.warn(
                f"{run.run_dir}: {label} seed {s} finished no episode; left out of the final "
                "scores",
                stacklevel=3,
            )
    return seeds


def _final_scores(entries: Sequence[_Entry]) -> dict[str, dict[str, list[float]]]:
    """`{label: {task: [final return per seed]}}`; every (label, task) is one setting of one
    run (never seeds of several runs pooled)."""
    out: dict[str, dict[str, list[float]]] = {}
    for e in entries:
        per_task = out.setdefault(e.label, {})
        assert e.task not in per_task, f"{e.label} on {e.task} twice"
        per_task[e.task] = _final(e.run, e.index, e.label)
    return out


def _ranked(finals: Mapping[str, Mapping[str, list[float]]]) -> list[str]:
    """Labels by mean final return (mean over tasks of the mean over seeds), best first."""

    def score(label: str) -> float:
        means = [float(np.mean(v)) for v in finals[label].values() if len(v)]
        return float(np.mean(means)) if means else -np.inf

    return sorted(finals, key=lambda lb: -score(lb))


def _shown(entries: Sequence[_Entry], top: int | None) -> tuple[list[str], str]:
    """The labels to draw (all in their order, or the best `top`) and a caption saying so."""
    labels = list(dict.fromkeys(e.label for e in entries))
    if top is None or len(labels) <= top:
        return labels, ""
    if top < 1:
        raise ValueError(f"top must be >= 1, got {top}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeds without an episode are reported when plotted
        best = _ranked(_final_scores(entries))[:top]
    return best, f"best {top} of {len(labels)} settings by mean final return"


def _rng_seed(key: jax.Array) -> list[int]:
    data = (
        jax.random.key_data(key) if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    )
    return [int(x) for x in np.asarray(data).reshape(-1)]


def _curve_panels(
    entries: Sequence[_Entry],
    shown: Sequence[str],
    key: jax.Array,
    num_resamples: int,
    confidence: float,
) -> list[tuple[str, list[tuple[str, CurveBand]], dict[str, float]]]:
    from marljax.core.registry import env_references

    seed = _rng_seed(key)
    panels: dict[str, tuple[str, list[tuple[str, CurveBand]], dict[str, float]]] = {}
    order = {label: i for i, label in enumerate(shown)}
    for i, e in enumerate(entries):
        if e.label not in order:
            continue
        exp = e.run.config.get("experiment", {})
        refs = env_references(e.run.env, exp.get("env_kwargs") or None)
        _, curves, panel_refs = panels.setdefault(e.task, (e.task, [], {}))
        panel_refs.update(refs)
        band = curve_band(
            e.run.returns[e.index],
            e.run.env_steps,
            confidence=confidence,
            num_resamples=num_resamples,
            seed=[*seed, i],
        )
        if band is None:
            warnings.warn(
                f"{e.run.run_dir}: {e.label} has a seed that finished no episode; left out of "
                "the learning curves",
                stacklevel=3,
            )
            continue
        curves.append((e.label, band))
        for name, values in e.run.scores.items():  # a panel per task score (SMAX's win rate)
            title = f"{e.task}: {score_label(name)}"
            score_band = curve_band(
                values[e.index], e.run.env_steps, confidence=confidence,
                num_resamples=num_resamples, seed=[*seed, i],
            )  # fmt: skip
            if score_band is not None:
                panels.setdefault(title, (title, [], {}))[1].append((e.label, score_band))
    out = [p for p in panels.values() if p[1]]
    for p in out:
        p[1].sort(key=lambda c: order[c[0]])
    if not out:
        raise ValueError("no run has a seed-complete update to plot")
    return out


def plot_setting_curves(
    env_steps: np.ndarray,
    returns: np.ndarray,
    labels: list[str],
    path: str | os.PathLike,
    title: str = "",
    references: dict[str, float] | None = None,
    confidence: float = 0.95,
    scores: dict[str, np.ndarray] | None = None,
) -> None:
    """Plot the mean return over seeds with a bootstrap confidence band, one line per setting.

    The statistic of every marljax learning curve (`curve_band`, named
    in the legend): the mean over seeds with a percentile bootstrap confidence interval of the
    mean; an update in which a seed finished no episode carries that seed's last finished
    return forward, so curves have no gaps (and no empty-slice warnings).

    Args:
      env_steps: `[U]` environment steps at each update.
      returns: `[G, S, U]` returns (NaN where no episode finished).
      labels: `G` legend labels (`""` for a run without settings).
      path: output PNG (a run directory's `learning_curve.png`).
      title: figure title.
      references: `{name: return}` drawn as dashed lines, e.g.
        `marljax.core.env_references(env_id, env_kwargs)`.
      confidence: band coverage.
      scores: optional task scores `{name: [G, S, U]}` (e.g. `{"win rate": ...}`), each drawn
        in a panel of its own beside the return.
    """
    # one legend for every panel: a run without settings is "all seeds" beside a task score
    what = "all seeds" if scores else "episode return"

    def panel(values: np.ndarray) -> list:
        values = np.asarray(values, np.float64)
        if values.ndim > 3:  # per-agent returns [G, S, U, A]: the mean over agents
            values = values.reshape(*values.shape[:3], -1).mean(axis=-1)
        curves = []
        for g, label in enumerate(labels):
            band = curve_band(values[g], env_steps, confidence=confidence, seed=g)
            if band is not None:  # a seed without a finished episode: no curve (figure says so)
                curves.append((label or what, band))
        return curves

    panels = [("episode return" if scores else "", panel(returns), dict(references or {}))]
    panels += [(name, panel(v), {}) for name, v in (scores or {}).items()]
    _draw_learning_curves(path, panels, confidence, title)


def plot_lineage(
    path: PathLike, tuner: Any, values: Any, schedule: Sequence[dict], population: int = 0
) -> Path:
    """A tuning run's lineage figure (`marljax.shell.tune`), for one population.

    PBT: a panel per tuned hyperparameter, each run's value over the updates (a copy is a
    jump), the best run's schedule in bold, and the runs' curves of the ranking metric.
    Successive halving and random search: the runs' curves, a cross where halving stopped a
    run.

    Args:
      path: the PNG to write.
      tuner: the `marljax.training.tune.Tuner` after the run (its `events`, `populations`).
      values: the ranking metric `[G, S, U]` (or `[G, S, U, A]`).
      schedule: the best run's schedule (`Tuner.schedule`).
      population: the population drawn.
    """
    plt = _pyplot()
    members = np.asarray(tuner.populations[population])
    total = int(tuner.total)
    events = tuner.events
    names = list(tuner.space)
    pbt = any(e.get("copies") for e in events)
    flat = np.asarray(values, np.float64)
    flat = flat.reshape(flat.shape[0] * flat.shape[1], flat.shape[2], -1).mean(-1)
    if pbt:
        fig, axes = plt.subplots(len(names) + 1, 1, figsize=(7, 2.6 * (len(names) + 1)),
                                 squeeze=False)  # fmt: skip
        best = int(schedule[-1]["run"]) if schedule else -1
        for r in members:  # the runs' curves: a copy continues its donor's state
            curve = fill_forward(flat[r])
            bold = dict(color="C0", lw=2.2, label="best run") if r == best else dict(color="0.7")
            axes[-1, 0].plot(np.arange(1, len(curve) + 1), curve, **bold)
        axes[-1, 0].set_ylabel(tuner.metric)
        for ax, name in zip(axes[:-1, 0], names):
            for r in members:
                xs = [0] + [int(e["update"]) for e in events] + [total]
                ys = [float(np.asarray(getattr(tuner.initial, name))[r])]
                ys += [float(e["hparams"][name][r]) for e in events]
                ax.step(xs, ys + ys[-1:], where="post", color="0.7", lw=0.8)
            xs = [s["from_update"] for s in schedule] + [total]
            ys = [s["hparams"][name] for s in schedule]
            ax.step(xs, ys + ys[-1:], where="post", color="C0", lw=2.2, label="best run")
            ax.set_ylabel(name)
            if np.all(np.asarray(ys) > 0):
                ax.set_yscale("log")
        axes[0, 0].legend(loc="best", fontsize=8)
        axes[-1, 0].set_xlabel("update")
        axes[0, 0].set_title(f"PBT lineage, population {population}")
    else:
        fig, ax = plt.subplots(figsize=(7, 3.6))
        stopped = {r: int(e["update"]) for e in events for r in e.get("stopped", [])}
        for i, r in enumerate(members):
            curve = fill_forward(flat[r])
            end = stopped.get(int(r), total)
            ax.plot(np.arange(1, end + 1), curve[:end], color=_colors(len(members))[i], lw=1)
            if int(r) in stopped:
                ax.plot([end], [curve[end - 1]], "x", color="k")
        ax.set_xlabel("update")
        ax.set_ylabel(tuner.metric)
        ax.set_title(f"runs of population {population} (x: stopped)")
    return _save(fig, path)


def plot_learning_curves(
    run_dirs: Sequence[PathLike],
    path: PathLike,
    key: jax.Array | None = None,
    num_resamples: int = 2000,
    confidence: float = 0.95,
    top: int | None = None,
) -> Path:
    """Learning curves of run directories: mean return over seeds with a bootstrap CI band.

    One curve per setting of each run, labelled by what differs between them (`label_runs`);
    one panel per task (env), with the env's reference returns (`env_references`) as dashed
    lines. The curve and band are `curve_band`'s, named in the legend.

    Args:
      run_dirs: run directories.
      path: output PNG.
      key: PRNG key of the bootstrap (default `PRNGKey(0)`).
      num_resamples: bootstrap resamples.
      confidence: band coverage.
      top: draw only the best `top` settings by mean final return (default: all).

    Returns:
      The written path.
    """
    key = jax.random.PRNGKey(0) if key is None else key
    entries = _entries([load_run(d) for d in run_dirs])
    shown, caption = _shown(entries, top)
    panels = _curve_panels(entries, shown, key, num_resamples, confidence)
    return _draw_learning_curves(path, panels, confidence, title=caption)


def _social_curves(runs: Sequence[RunData]) -> tuple[dict, np.ndarray] | None:
    """`({label: {"social/<name>": [S, U]}}, steps [U])` when every run logged social metrics.

    None (nothing to draw) when some run has no `"social/*"` metric in `metrics.npz`, or when
    the runs' update steps differ (a warning says so).
    """
    curves: dict[str, dict[str, np.ndarray]] = {}
    steps = runs[0].env_steps
    labelled = _entries(runs)
    several_tasks = len({e.task for e in labelled}) > 1
    entries = iter(labelled)
    for run in runs:
        with np.load(run.run_dir / "metrics.npz") as m:
            social = {k: np.asarray(m[k], np.float64) for k in m.files if k.startswith("social/")}
        if not social:
            return None
        if not np.array_equal(run.env_steps, steps):
            warnings.warn(
                f"{run.run_dir}: update steps differ from {runs[0].run_dir}; social-metric "
                "curves are skipped",
                stacklevel=3,
            )
            return None
        for g in range(run.returns.shape[0]):
            e = next(entries)
            name = f"{e.label} ({e.task})" if several_tasks else e.label
            curves[name] = {k: v[g] for k, v in social.items()}
    return curves, steps


def _inside(path: Path, folder: Path) -> bool:
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


def plot_runs(
    run_dirs: Sequence[PathLike],
    out_dir: PathLike,
    key: jax.Array | None = None,
    num_resamples: int = 2000,
    confidence: float = 0.95,
    top: int | None = DEFAULT_TOP,
) -> list[Path]:
    """Write every figure that a set of run directories supports.

    Every setting of every run is its own curve and its own row, labelled by what differs
    between the configs (`label_runs`); seeds of different runs are never pooled. With more
    than `top` settings, the figures show the best `top` by mean final return (and say so).

    Always `learning_curves.png` (one panel per env: `curve_band`'s mean over seeds with a
    bootstrap band, the env's reference returns as dashed lines; one more per task score such
    as SMAX's win rate); `social_metrics.png`
    (`plot_social_metrics`) when every run logged `"social/*"` metrics (an env wrapped in
    `SocialMetrics`) over the same update steps. When there are at least two seeds per setting
    and every setting ran on the same environments (tasks): `aggregate_metrics.png` (median,
    IQM, mean of final returns with stratified-bootstrap CIs; the optimality gap is left out
    because raw returns have no natural threshold) and `performance_profile.png`; with two or
    more settings, `probability_of_improvement.png` (every pair for up to 4 settings, else the
    best against each other one). Final return = each seed's last update with a finished
    episode. Returns are raw: aggregating over several environments assumes their scores are
    comparable (normalise them otherwise, with the `stats` functions).

    Args:
      run_dirs: run directories written by `marljax.shell.experiment`.
      out_dir: folder for the PNGs (created); not a run directory nor inside one.
      key: PRNG key (default `PRNGKey(0)`).
      num_resamples: bootstrap resamples.
      confidence: interval coverage.
      top: the most settings a figure shows (None: all).

    Returns:
      The paths written.

    Raises:
      ValueError: no run directories, or `out_dir` is (inside) one of them.
    """
    out_dir = Path(out_dir)
    runs = _load_runs(run_dirs, out_dir)
    key = jax.random.PRNGKey(0) if key is None else key
    key_curves, key_agg, key_poi, key_prof = jax.random.split(key, 4)
    entries = _entries(runs)
    shown, caption = _shown(entries, top)
    panels = _curve_panels(entries, shown, key_curves, num_resamples, confidence)
    written = [_draw_learning_curves(out_dir / "learning_curves.png", panels, confidence, caption)]
    social = _social_curves(runs)
    if social is not None:
        curves, steps = social
        if caption:
            curves = {k: v for k, v in curves.items() if k in shown} or curves
        written.append(
            plot_social_metrics(
                curves,
                steps,
                out_dir / "social_metrics.png",
                key=jax.random.fold_in(key_curves, 1),
                num_resamples=num_resamples,
                confidence=confidence,
                title=caption,
            )
        )
    finals = _final_scores([e for e in entries if e.label in shown])
    finals = {label: finals[label] for label in shown}
    trimmed = _comparable_finals(finals)
    if trimmed is None:
        return written
    scores, tasks = stats.stack_scores(trimmed)
    keys = key_agg, key_prof, key_poi
    written += _write_aggregates(
        scores, len(tasks), finals, out_dir, keys, num_resamples, confidence, caption
    )
    return written


def _load_runs(run_dirs: Sequence[PathLike], out_dir: Path) -> list:
    """Each distinct run directory loaded once (`load_run`); refused when there are none or
    when `out_dir` is (inside) one of them."""
    if not run_dirs:
        raise ValueError("no run directories given")
    unique: dict[Path, Path] = {}
    for d in run_dirs:
        unique.setdefault(Path(d).resolve(), Path(d))
    runs = [load_run(d) for d in unique.values()]
    for d in unique.values():
        if _inside(out_dir, d):
            raise ValueError(
                f"the output folder {out_dir} is inside the run directory {d}; figures of "
                "several runs go to a folder of their own (choose another one)"
            )
    return runs


def _comparable_finals(finals: dict) -> dict | None:
    """`finals` (setting -> task -> final returns of its seeds) cut to the same number of seeds
    per task, or None (said in a warning) when the settings ran on different tasks or a
    setting has a single seed somewhere (no bootstrap interval)."""
    task_sets = {label: tuple(sorted(per_task)) for label, per_task in finals.items()}
    if len(set(task_sets.values())) > 1:
        warnings.warn(
            f"settings ran on different environments {task_sets}; aggregate plots are skipped",
            stacklevel=3,
        )
        return None
    counts = {f"{a} on {t}": len(v) for a, per in finals.items() for t, v in per.items()}
    if min(counts.values()) < 2:
        return None  # a single seed has no bootstrap interval
    trimmed = {}
    for a, per in finals.items():
        n = min(len(v) for v in per.values())
        if any(len(v) != n for v in per.values()):
            warnings.warn(
                f"{a} has different numbers of seeds per environment "
                f"{ {t: len(v) for t, v in per.items()} }; using the first {n}",
                stacklevel=3,
            )
        trimmed[a] = {t: v[:n] for t, v in per.items()}
    return trimmed


def _write_aggregates(scores: dict, num_tasks: int, finals: dict, out_dir: Path, keys: tuple,
                      num_resamples: int, confidence: float, caption: str | None) -> list[Path]:  # fmt: skip
    """`aggregate_metrics.png`, `performance_profile.png` and, with two or more settings,
    `probability_of_improvement.png` of the final `scores` (setting -> `[seeds, tasks]`);
    `keys` are the aggregates', the profiles' and the comparisons' PRNG keys."""
    key_agg, key_prof, key_poi = keys
    agg = stats.aggregate_metrics(
        key_agg,
        scores,
        metrics=("median", "iqm", "mean"),
        num_resamples=num_resamples,
        confidence=confidence,
    )
    suffix = f"; {caption}" if caption else ""
    written = [
        plot_interval_estimates(
            agg,
            out_dir / "aggregate_metrics.png",
            xlabel="final return",
            title=f"{num_tasks} task(s), {confidence:.0%} stratified-bootstrap CIs{suffix}",
        )
    ]
    all_scores = np.concatenate([v.ravel() for v in scores.values()])
    lo, hi = float(all_scores.min()), float(all_scores.max())
    taus = np.linspace(lo - 0.05 * (hi - lo + 1e-9), hi + 0.05 * (hi - lo + 1e-9), 41)
    prof = stats.performance_profiles(
        key_prof, scores, taus, num_resamples=num_resamples, confidence=confidence
    )
    written.append(
        plot_performance_profiles(
            prof,
            taus,
            out_dir / "performance_profile.png",
            xlabel=r"final return $\tau$",
            title=caption,
        )
    )
    if len(scores) < 2:
        return written
    names = list(scores)
    if len(names) <= 4:
        pairs, title = None, caption
    else:
        best = _ranked(finals)[0]
        pairs = [(best, n) for n in names if n != best]
        title = f"the best setting against each other one{suffix}"
        title = title.replace("; ", "\n")
    poi = stats.pairwise_probability_of_improvement(
        key_poi, scores, pairs=pairs, num_resamples=num_resamples, confidence=confidence
    )
    written.append(
        plot_probability_of_improvement(
            poi, out_dir / "probability_of_improvement.png", title=title
        )
    )
    return written


def plot_dag(
    edge_probs: Any,
    path: PathLike,
    titles: Sequence[str] | None = None,
    min_prob: float = 0.05,
    suptitle: str | None = None,
) -> Path:
    """Draw (learned) DAGs over agents, one panel per context.

    Agents sit on a circle; an arrow `j -> i` is drawn with opacity and width proportional to its
    probability `edge_probs[..., i, j]` (parent masks of 0/1 draw a plain graph). Used for the
    context-aware graphs of `marljax.agents.bn` (Chen et al. 2023, "Context-Aware Bayesian
    Network Actor-Critic Methods for Cooperative MARL").

    Args:
      edge_probs: `[A, A]` or `[C, A, A]` probabilities (or 0/1 masks) of `j -> i` at `[i, j]`.
      path: PNG file to write.
      titles: one title per context (default "context c").
      min_prob: edges below this probability are not drawn.
      suptitle: optional figure title.

    Returns:
      The path written.
    """
    probs = np.asarray(edge_probs, np.float64)
    if probs.ndim == 2:
        probs = probs[None]
    if probs.ndim != 3 or probs.shape[1] != probs.shape[2]:
        raise ValueError(f"edge_probs must be [A, A] or [C, A, A], got {np.shape(edge_probs)}")
    if not np.all(np.isfinite(probs)) or probs.min() < 0 or probs.max() > 1:
        raise ValueError("edge_probs must be probabilities in [0, 1]")
    C, A = probs.shape[:2]
    if titles is not None and len(titles) != C:
        raise ValueError(f"got {len(titles)} titles for {C} contexts")
    plt = _pyplot()
    fig, axes = plt.subplots(1, C, figsize=(3.2 * C, 3.4), squeeze=False)
    angle = np.pi / 2 - 2 * np.pi * np.arange(A) / A
    xy = np.stack([np.cos(angle), np.sin(angle)], -1)
    for c, ax in enumerate(axes[0]):
        for i in range(A):
            for j in range(A):
                p = probs[c, i, j]
                if i == j or p < min_prob:
                    continue
                ax.annotate(
                    "",
                    xy=xy[i] * 0.86 + xy[j] * 0.14,
                    xytext=xy[j] * 0.86 + xy[i] * 0.14,
                    arrowprops={"arrowstyle": "-|>", "lw": 0.5 + 2.5 * p, "alpha": float(p)},
                )
        ax.scatter(xy[:, 0], xy[:, 1], s=420, c="white", edgecolors="black", zorder=3)
        for a in range(A):
            ax.text(xy[a, 0], xy[a, 1], str(a), ha="center", va="center", zorder=4)
        density = probs[c][~np.eye(A, dtype=bool)].sum() / max(A * (A - 1) / 2, 1)
        ax.set_title(titles[c] if titles is not None else f"context {c}", fontsize=9)
        ax.text(0, -1.35, f"expected density {density:.2f}", ha="center", fontsize=8)
        ax.set_xlim(-1.4, 1.4)
        ax.set_ylim(-1.5, 1.3)
        ax.set_aspect("equal")
        ax.axis("off")
    if suptitle:
        fig.suptitle(suptitle, fontsize=10)
    return _save(fig, path)
