"""The statistics of the benchmark: a run's curve at `K` points, its final score, IQM and CIs.

Every benchmark number is computed here, from a run's `metrics.npz`, so that the results table,
the reference bands and `marljax check` agree:

- **curve points**: training is cut into `K` equal windows of updates (`POINTS = 10`); a seed's
  value at point `k` is the mean of the task's metric (the win rate, or the episode return) over
  the updates of window `k` in which episodes ended, at the env steps where the window ends;
- **final score** of a seed: its value at the last point (the mean over the last tenth of
  training), which smooths the noise of one update as the published learning curves do;
- **IQM and 95% CI** over seeds: rliable's interquartile mean with a stratified bootstrap
  percentile interval (`marljax.evaluation.stats`); with one seed the interval is the value.
"""

from __future__ import annotations

import numpy as np

from marljax.evaluation.results import curve_points  # noqa: F401  (the benchmark's curves)

#: curve points of a benchmark run (windows of a tenth of training)
POINTS = 10


def iqm_ci(values: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    """`(iqm, low, high)` of `[S]` per-seed values (95% stratified bootstrap; NaNs dropped).

    Returns NaNs when no seed has a value; with one seed, the value three times.
    """
    from marljax.evaluation import stats

    v = np.asarray(values, np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return (float("nan"),) * 3
    if v.size == 1:
        return (float(v[0]),) * 3
    import jax

    est = stats.interval_estimate(
        jax.random.PRNGKey(seed), stats.aggregate_iqm, v[:, None].astype(np.float32),
        num_resamples=2000,
    )  # fmt: skip
    return float(est.point), float(est.low), float(est.high)


def curve_band(curve: np.ndarray) -> dict[str, list[float]]:
    """IQM, 95% CI, min and max over seeds at every point of `[S, K]` curves."""
    out: dict[str, list[float]] = {"iqm": [], "low": [], "high": [], "min": [], "max": []}
    for j in range(curve.shape[1]):
        col = curve[:, j]
        iqm, low, high = iqm_ci(col, seed=j)
        out["iqm"].append(iqm)
        out["low"].append(low)
        out["high"].append(high)
        finite = col[np.isfinite(col)]
        out["min"].append(float(finite.min()) if finite.size else float("nan"))
        out["max"].append(float(finite.max()) if finite.size else float("nan"))
    return out


__all__ = ["POINTS", "curve_band", "curve_points", "iqm_ci"]
