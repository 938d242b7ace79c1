"""Figures of evaluation results (matplotlib, imported lazily and drawn with the Agg backend).

Each `plot_*` function takes the output of a `marljax.evaluation.stats` (or `crossplay`)
function, writes one PNG and returns its path:

- `plot_learning_curves`: per-update return of run directories, mean (or IQM) over seeds with
  a stratified-bootstrap confidence band;
- `plot_sample_efficiency`: `sample_efficiency_curves` output;
- `plot_interval_estimates`: `aggregate_metrics` output, one panel per metric;
- `plot_probability_of_improvement`: `pairwise_probability_of_improvement` output;
- `plot_performance_profiles`: `performance_profiles` output;
- `plot_crossplay_heatmap`: a `[P, Q]` cross-play matrix;
- `plot_social_metrics`: social-metric curves over training (`marljax.evaluation.social`);
- `plot_swarm_snapshot`: positions and headings of a swarm (`swarm_snapshot` reads a state).

`plot_runs(run_dirs, out_dir)` reads run directories written by `marljax.experiment`
(`config.json`, `metrics.npz`) and writes all the figures that the runs support.

Reference: R. Agarwal et al., "Deep reinforcement learning at the edge of the statistical
precipice", NeurIPS 2021 (the figure types).
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from marljax.evaluation import stats

PathLike = str | os.PathLike


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: PathLike) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path)
    _pyplot().close(fig)
    return path


def _colors(n: int) -> list:
    cmap = _pyplot().get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(n)]


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
    fig, axes = plt.subplots(
        1, len(metrics), figsize=(3.2 * len(metrics), 0.5 * len(algos) + 1.4), squeeze=False
    )
    colors = _colors(len(algos))
    for ax, m in zip(axes[0], metrics):
        for i, a in enumerate(algos):
            p, lo, hi = (float(v) for v in estimates[a][m])
            ax.barh(i, hi - lo, left=lo, height=0.6, color=colors[i], alpha=0.75)
            ax.vlines(p, i - 0.3, i + 0.3, color="black", linewidth=1.5)
        ax.set_yticks(range(len(algos)), algos if ax is axes[0][0] else [""] * len(algos))
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
    fig, ax = plt.subplots(figsize=(5.5, 0.5 * len(pairs) + 1.4))
    for i, pair in enumerate(pairs):
        p, lo, hi = (float(v) for v in estimates[pair])
        ax.barh(i, hi - lo, left=lo, height=0.6, color="tab:blue", alpha=0.6)
        ax.vlines(p, i - 0.3, i + 0.3, color="black", linewidth=1.5)
    ax.axvline(0.5, color="gray", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(pairs)), [f"P({x} > {y})" for x, y in pairs])
    ax.set_xlim(0.0, 1.0)
    ax.set_xlabel("probability of improvement")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title)
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
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for color, (a, est) in zip(_colors(len(profiles)), profiles.items()):
        ax.plot(taus, np.asarray(est.point), color=color, label=a)
        ax.fill_between(taus, np.asarray(est.low), np.asarray(est.high), color=color, alpha=0.2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(r"fraction of runs with score $> \tau$")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.set_title(title)
    if len(profiles) > 1 or next(iter(profiles)):
        ax.legend(fontsize=8)
    return _save(fig, path)


def plot_sample_efficiency(
    curves: Mapping[str, stats.Interval] | stats.Interval,
    steps: Any,
    path: PathLike,
    ylabel: str = "IQM return",
    title: str = "",
) -> Path:
    """Aggregate learning curves with pointwise confidence bands.

    Args:
      curves: `{algorithm: Interval of [T]}` or one `Interval` (`stats.sample_efficiency_curves`).
      steps: `[T]` environment steps.
      path: output PNG.
      ylabel: axis label.
      title: figure title.

    Returns:
      The written path.
    """
    plt = _pyplot()
    if isinstance(curves, stats.Interval):
        curves = {"": curves}
    fig, ax = plt.subplots(figsize=(6, 4))
    _draw_curves(ax, curves, {a: np.asarray(steps) for a in curves})
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return _save(fig, path)


def _draw_curves(ax, curves: Mapping[str, stats.Interval], steps: Mapping[str, np.ndarray]):
    for color, (a, est) in zip(_colors(len(curves)), curves.items()):
        x = steps[a]
        ax.plot(x, np.asarray(est.point), color=color, label=a)
        ax.fill_between(x, np.asarray(est.low), np.asarray(est.high), color=color, alpha=0.2)
    ax.set_xlabel("environment steps")
    ax.grid(alpha=0.3)
    if len(curves) > 1 or next(iter(curves), ""):
        ax.legend(fontsize=8)


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
    Updates in which some seed finished no episode (NaN) are left out of that line.

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
            ok = _complete_updates(x)
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
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.6 * len(metrics), 3.2), squeeze=False)
    colors = _colors(len(runs))
    for ax, m in zip(axes[0], metrics):
        for color, (label, (x, est)) in zip(colors, curves[m].items()):
            ax.plot(x, np.asarray(est.point), color=color, label=label)
            ax.fill_between(x, np.asarray(est.low), np.asarray(est.high), color=color, alpha=0.2)
        ax.set_title(m.removeprefix("social/").replace("_", " "))
        ax.set_xlabel("environment steps")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"{statistic} over seeds, {confidence:.0%} CI")
    if len(runs) > 1 or next(iter(runs)):
        axes[0][-1].legend(fontsize=8)
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


# ----------------------------------------------------------------------------- run directories


@dataclasses.dataclass
class RunData:
    """Training returns of one run directory (one entry per hyperparameter setting).

    Attributes:
      run_dir: the directory.
      env: registered env id (the task).
      labels: `G` names, `algo` or `algo[setting]`.
      env_steps: `[U]` environment steps of the updates.
      returns: `[G, S, U]` training-episode returns (NaN where no episode finished).
    """

    run_dir: Path
    env: str
    labels: list[str]
    env_steps: np.ndarray
    returns: np.ndarray


def load_run(run_dir: PathLike) -> RunData:
    """Read a run directory written by `marljax.experiment.run_experiment`.

    Args:
      run_dir: a directory holding `config.json` and `metrics.npz`.

    Returns:
      A `RunData`.

    Raises:
      FileNotFoundError: a missing file is named.
    """
    run_dir = Path(run_dir)
    for name in ("config.json", "metrics.npz"):
        if not (run_dir / name).exists():
            raise FileNotFoundError(f"{run_dir} is not a run directory: {name} is missing")
    config = json.loads((run_dir / "config.json").read_text())
    exp = config.get("experiment", {})
    algo = exp.get("algo", run_dir.name)
    settings = config.get("resolved", {}).get("grid_settings") or [{}]
    with np.load(run_dir / "metrics.npz") as m:
        returns = np.asarray(m["episode_return"], np.float64)
        steps = np.asarray(m["env_steps"])[0, 0]
    labels = []
    for s in settings:
        tag = ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in s.items())
        labels.append(f"{algo}[{tag}]" if tag else algo)
    if len(labels) != returns.shape[0]:
        labels = [f"{algo}[{g}]" for g in range(returns.shape[0])]
    return RunData(run_dir, exp.get("env", "task"), labels, steps, returns)


def _complete_updates(returns: np.ndarray) -> np.ndarray:
    """`[U]` bool, the updates in which every seed finished an episode."""
    return np.all(np.isfinite(returns), axis=0)


def plot_learning_curves(
    run_dirs: Sequence[PathLike],
    path: PathLike,
    statistic: str = "mean",
    key: jax.Array | None = None,
    num_resamples: int = 2000,
    confidence: float = 0.95,
) -> Path:
    """Learning curves of run directories with bootstrap confidence bands over seeds.

    For every run and hyperparameter setting, the curve is `statistic` over seeds at each
    update (updates in which some seed finished no episode are left out), and the band its
    `confidence` percentile bootstrap interval (seeds resampled).

    Args:
      run_dirs: run directories.
      path: output PNG.
      statistic: an aggregate name (`"mean"`, `"iqm"`, `"median"`).
      key: PRNG key (default `PRNGKey(0)`).
      num_resamples: bootstrap resamples.
      confidence: band coverage.

    Returns:
      The written path.
    """
    key = jax.random.PRNGKey(0) if key is None else key
    runs = [load_run(d) for d in run_dirs]
    curves, steps, envs = {}, {}, set()
    envs_all = {run.env for run in runs}
    for r, run in enumerate(runs):
        envs.add(run.env)
        for g, label in enumerate(run.labels):
            name = _unique(f"{label} ({run.env})" if len(envs_all) > 1 else label, curves)
            ret = run.returns[g]
            ok = _complete_updates(ret)
            if not ok.any():
                warnings.warn(
                    f"{run.run_dir}: {label} has no update where every seed finished "
                    "an episode; left out of the learning curves",
                    stacklevel=2,
                )
                continue
            curves[name] = stats.sample_efficiency_curves(
                jax.random.fold_in(key, 1000 * r + g),
                ret[:, None, ok],
                statistic=statistic,
                num_resamples=num_resamples,
                confidence=confidence,
            )
            steps[name] = run.env_steps[ok]
    if not curves:
        raise ValueError("no run holds a complete update to plot")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    _draw_curves(ax, curves, steps)
    ax.set_ylabel(f"episode return ({statistic} over seeds, {confidence:.0%} CI)")
    ax.set_title(", ".join(sorted(envs)))
    return _save(fig, path)


def _unique(name: str, taken: Mapping[str, Any]) -> str:
    out, i = name, 2
    while out in taken:
        out, i = f"{name} #{i}", i + 1
    return out


def _final_scores(runs: Sequence[RunData]) -> dict[str, dict[str, list[float]]]:
    """`{label: {env: [final return per seed]}}` (last update with a finite return)."""
    out: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        for g, label in enumerate(run.labels):
            per_env = out.setdefault(label, {})
            if run.env in per_env:
                warnings.warn(
                    f"{label} on {run.env} appears in several runs; seeds are pooled", stacklevel=3
                )
            seeds = per_env.setdefault(run.env, [])
            for s, curve in enumerate(run.returns[g]):
                finite = curve[np.isfinite(curve)]
                if finite.size:
                    seeds.append(float(finite[-1]))
                else:
                    warnings.warn(
                        f"{run.run_dir}: {label} seed {s} finished no episode; left "
                        "out of the final scores",
                        stacklevel=3,
                    )
    return out


def _social_curves(runs: Sequence[RunData]) -> tuple[dict, np.ndarray] | None:
    """`({label: {"social/<name>": [S, U]}}, steps [U])` when every run logged social metrics.

    None (nothing to draw) when some run has no `"social/*"` metric in `metrics.npz`, or when
    the runs' update steps differ (a warning says so).
    """
    curves: dict[str, dict[str, np.ndarray]] = {}
    steps = runs[0].env_steps
    several_envs = len({run.env for run in runs}) > 1
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
        for g, label in enumerate(run.labels):
            name = _unique(f"{label} ({run.env})" if several_envs else label, curves)
            curves[name] = {k: v[g] for k, v in social.items()}
    return curves, steps


def plot_runs(
    run_dirs: Sequence[PathLike],
    out_dir: PathLike,
    key: jax.Array | None = None,
    num_resamples: int = 2000,
    confidence: float = 0.95,
) -> list[Path]:
    """Write every figure that a set of run directories supports.

    Always `learning_curves.png` (mean over seeds with bootstrap bands); `social_metrics.png`
    (`plot_social_metrics`) when every run logged `"social/*"` metrics (an env wrapped in
    `SocialMetrics`) over the same update steps. When there are at
    least two seeds per algorithm and every algorithm ran on the same environments (tasks):
    `aggregate_metrics.png` (median, IQM, mean of final returns with stratified-bootstrap CIs;
    the optimality gap is left out because raw returns have no natural threshold) and
    `performance_profile.png`; with two or more algorithms, `probability_of_improvement.png`.
    Final return = each seed's last update with a finished episode. Returns are raw: aggregating
    over several environments assumes their scores are comparable (normalise them otherwise,
    with the `stats` functions).

    Args:
      run_dirs: run directories written by `marljax.experiment`.
      out_dir: folder for the PNGs (created).
      key: PRNG key (default `PRNGKey(0)`).
      num_resamples: bootstrap resamples.
      confidence: interval coverage.

    Returns:
      The paths written.
    """
    if not run_dirs:
        raise ValueError("no run directories given")
    key = jax.random.PRNGKey(0) if key is None else key
    key_curves, key_agg, key_poi, key_prof = jax.random.split(key, 4)
    out_dir = Path(out_dir)
    runs = [load_run(d) for d in run_dirs]
    written = [
        plot_learning_curves(
            run_dirs,
            out_dir / "learning_curves.png",
            key=key_curves,
            num_resamples=num_resamples,
            confidence=confidence,
        )
    ]
    social = _social_curves(runs)
    if social is not None:
        curves, steps = social
        written.append(
            plot_social_metrics(
                curves,
                steps,
                out_dir / "social_metrics.png",
                key=jax.random.fold_in(key_curves, 1),
                num_resamples=num_resamples,
                confidence=confidence,
            )
        )
    finals = _final_scores(runs)
    task_sets = {label: tuple(sorted(per_env)) for label, per_env in finals.items()}
    if len(set(task_sets.values())) > 1:
        warnings.warn(
            f"algorithms ran on different environments {task_sets}; aggregate plots are skipped",
            stacklevel=2,
        )
        return written
    counts = {f"{a} on {t}": len(v) for a, per in finals.items() for t, v in per.items()}
    if min(counts.values()) < 2:
        return written  # a single seed has no bootstrap interval
    trimmed = {}
    for a, per in finals.items():
        n = min(len(v) for v in per.values())
        if any(len(v) != n for v in per.values()):
            warnings.warn(
                f"{a} has different numbers of seeds per environment "
                f"{ {t: len(v) for t, v in per.items()} }; using the first {n}",
                stacklevel=2,
            )
        trimmed[a] = {t: v[:n] for t, v in per.items()}
    scores, tasks = stats.stack_scores(trimmed)
    agg = stats.aggregate_metrics(
        key_agg,
        scores,
        metrics=("median", "iqm", "mean"),
        num_resamples=num_resamples,
        confidence=confidence,
    )
    written.append(
        plot_interval_estimates(
            agg,
            out_dir / "aggregate_metrics.png",
            xlabel="final return",
            title=f"{len(tasks)} task(s), {confidence:.0%} stratified-bootstrap CIs",
        )
    )
    all_scores = np.concatenate([v.ravel() for v in scores.values()])
    lo, hi = float(all_scores.min()), float(all_scores.max())
    taus = np.linspace(lo - 0.05 * (hi - lo + 1e-9), hi + 0.05 * (hi - lo + 1e-9), 41)
    prof = stats.performance_profiles(
        key_prof, scores, taus, num_resamples=num_resamples, confidence=confidence
    )
    written.append(
        plot_performance_profiles(
            prof, taus, out_dir / "performance_profile.png", xlabel=r"final return $\tau$"
        )
    )
    if len(scores) >= 2:
        poi = stats.pairwise_probability_of_improvement(
            key_poi, scores, num_resamples=num_resamples, confidence=confidence
        )
        written.append(
            plot_probability_of_improvement(poi, out_dir / "probability_of_improvement.png")
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
