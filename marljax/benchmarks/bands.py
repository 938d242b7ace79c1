"""Reference bands (versioned data) and `marljax check RUN`: does a run stay inside its band?

A band is the learning curve of a stored benchmark cell at `K` points (`scores.curve_points`):
at every point the IQM over seeds with its 95% CI and the range of the seeds, with what
produced it: the cell's task, algorithm, preset and budget, the seeds, the marljax and env
versions and the resolved configuration. `marljax/benchmarks/data/bands.json` holds the bands
of the stored benchmark runs (`marljax benchmark ... --write-bands`).

`check_run(run_dir)` finds the band of a run (same algorithm, env, env options and budget),
computes the run's curve at the same points and says, point by point, whether the run is
inside: its IQM over seeds lies within the band, the union of the reference's 95% CI of the
IQM and the range of its seeds (a rerun with other seeds lands there; a broken one does not).
It names the first point where the run leaves the band and every configuration key in which the
run differs from the band's.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import numpy as np

from marljax.benchmarks import scores
from marljax.evaluation import results

#: the packaged reference bands
BANDS_PATH = os.path.join(os.path.dirname(__file__), "data", "bands.json")
#: bands file format
BANDS_VERSION = 1


def _read_run(run_dir: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    path = os.path.join(run_dir, "config.json")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{run_dir} is not a run directory (no config.json)")
    with open(path) as f:
        config = json.load(f)
    mpath = os.path.join(run_dir, "metrics.npz")
    if not os.path.exists(mpath):
        raise FileNotFoundError(f"{run_dir} has no metrics.npz (did it train?)")
    with np.load(mpath) as m:
        metrics = {k: np.asarray(m[k]) for k in m.files}
    return config, metrics


def _key(exp: dict[str, Any]) -> dict[str, Any]:
    """What identifies a band: algorithm, env, env options, budget."""
    return {
        "algo": exp["algo"],
        "env": exp["env"],
        "env_kwargs": exp.get("env_kwargs", {}),
        "total_env_steps": int(exp["train"]["total_env_steps"]),
    }


def make_band(run_dir: str, name: str, metric: str, upstream: str = "") -> dict[str, Any]:
    """The reference band of a finished run directory (one setting, several seeds).

    Args:
      run_dir: the run.
      name: the band's name (the benchmark cell, e.g. `"smax/3m:mappo"`).
      metric: the metric of the curve (`"task/win_rate"`, `"episode_return"`).
      upstream: the env's upstream package and version, recorded with the band.
    """
    config, metrics = _read_run(run_dir)
    if metric not in metrics:
        raise KeyError(f"{run_dir} has no metric {metric!r}")
    values = metrics[metric]
    if values.shape[0] != 1:
        raise ValueError("a band comes from a run of one setting (not a sweep)")
    steps, curve = scores.curve_points(values[0], metrics["env_steps"][0, 0])
    exp = config["experiment"]
    resolved = config["resolved"]
    return {
        "name": name,
        **_key(exp),
        "preset": exp.get("preset"),
        "metric": metric,
        "seeds": resolved["seeds"],
        "versions": {**config.get("versions", {}), "env": upstream},
        "config": {
            "agent": resolved["agent"],
            "hparams": resolved["hparams"][0],
            "train": resolved["train"],
        },
        "steps": steps.tolist(),
        **scores.curve_band(curve),
    }


def load_bands(path: str | None = None) -> list[dict[str, Any]]:
    """The bands of a bands file (default: the packaged `data/bands.json`)."""
    path = BANDS_PATH if path is None else path
    if not os.path.exists(path):
        return []
    with open(path) as f:
        data = json.load(f)
    if data.get("format_version") != BANDS_VERSION:
        raise ValueError(f"{path}: bands format {data.get('format_version')}, expected 1")
    return list(data["bands"])


def write_bands(bands: list[dict[str, Any]], path: str | None = None) -> str:
    """Write (merge by name and budget into) a bands file; returns its path."""
    path = BANDS_PATH if path is None else path
    old = load_bands(path) if os.path.exists(path) else []
    new_keys = {(b["name"], b["total_env_steps"]) for b in bands}
    kept = [b for b in old if (b["name"], b["total_env_steps"]) not in new_keys]
    merged = sorted(kept + list(bands), key=lambda b: (b["name"], b["total_env_steps"]))
    results.write_json(path, {"format_version": BANDS_VERSION, "bands": merged})
    return path


@dataclasses.dataclass
class CheckReport:
    """The outcome of `check_run`.

    Attributes:
      run_dir, band: the run and the band's name.
      inside: the run is inside the band at every point.
      points: per point `(env steps, run IQM, run low, run high, band low, band high, inside)`,
        where the band's interval is the union of its IQM CI and its seeds' range.
      first_exit: the first point outside, as in `points`, or None.
      differences: `"section.key: run value != band value"` for every configuration key in which
        the run differs from the band's stored configuration.
    """

    run_dir: str
    band: str
    inside: bool
    points: list[tuple]
    first_exit: tuple | None
    differences: list[str]

    def __str__(self) -> str:
        lines = [
            f"{self.run_dir} against the band {self.band}: "
            + ("INSIDE at every point" if self.inside else "OUTSIDE")
        ]
        lines.append("  env steps     run IQM [95% CI]           band [low, high]   inside")
        for s, iqm, lo, hi, blo, bhi, ok in self.points:
            lines.append(
                f"  {s:>10,}  {iqm:9.3f} [{lo:8.3f}, {hi:8.3f}]  [{blo:8.3f}, {bhi:8.3f}]  "
                + ("yes" if ok else "NO")
            )
        if self.first_exit is not None:
            s, iqm = self.first_exit[0], self.first_exit[1]
            lines.append(f"  leaves the band at {s:,} env steps (IQM {iqm:.3f})")
        if self.differences:
            lines.append("  configuration keys that differ from the band's:")
            lines += [f"    {d}" for d in self.differences]
        else:
            lines.append("  configuration: the band's, key for key")
        return "\n".join(lines)


def find_band(exp: dict[str, Any], bands: list[dict[str, Any]]) -> dict[str, Any]:
    """The band of a run's experiment, or a `KeyError` naming the bands that exist."""
    key = _key(exp)
    for b in bands:
        if {k: b[k] for k in key} == key:
            return b
    same = [b for b in bands if b["algo"] == key["algo"] and b["env"] == key["env"]]
    if same:
        budgets = ", ".join(f"{b['total_env_steps']:,}" for b in same)
        raise KeyError(
            f"No reference band for {key['algo']} on {key['env']} at {key['total_env_steps']:,} "
            f"env steps (with these env options); bands exist at {budgets} env steps"
        )
    names = ", ".join(sorted({b["name"] for b in bands})) or "none"
    raise KeyError(f"No reference band for {key['algo']} on {key['env']}; bands exist for: {names}")


def _differences(config: dict[str, Any], band: dict[str, Any]) -> list[str]:
    resolved = config["resolved"]
    run = {
        "agent": resolved["agent"],
        "hparams": resolved["hparams"][0],
        "train": resolved["train"],
    }
    out = []
    for section, ref in band["config"].items():
        mine = run.get(section, {})
        for k in sorted(set(ref) | set(mine)):
            a, b = mine.get(k, "<missing>"), ref.get(k, "<missing>")
            if json.dumps(a, sort_keys=True, default=str) != json.dumps(
                b, sort_keys=True, default=str
            ):
                out.append(f"{section}.{k}: {a!r} != {b!r}")
    return out


def check_run(run_dir: str, bands: str | list | None = None) -> CheckReport:
    """Whether a run stays inside its reference band (see the module docstring).

    Args:
      run_dir: a finished (or partly trained) run directory of one setting.
      bands: a bands file, a list of bands, or None for the packaged bands.

    Raises:
      FileNotFoundError: not a run directory.
      KeyError: no band for the run's algorithm, env and budget (names the bands that exist).
    """
    band_list = bands if isinstance(bands, list) else load_bands(bands)
    config, metrics = _read_run(run_dir)
    band = find_band(config["experiment"], band_list)
    if band["metric"] not in metrics:
        raise KeyError(f"{run_dir} has no metric {band['metric']!r}")
    values = metrics[band["metric"]]
    if values.shape[0] != 1:
        raise ValueError(f"{run_dir} is a sweep; check one setting's run")
    steps, curve = scores.curve_points(values[0], metrics["env_steps"][0, 0], len(band["steps"]))
    points, first = [], None
    for j, s in enumerate(steps):
        if j >= len(band["steps"]):
            break
        iqm, lo, hi = scores.iqm_ci(curve[:, j], seed=j)
        blo = min(band["low"][j], band["min"][j])
        bhi = max(band["high"][j], band["max"][j])
        ok = bool(np.isfinite(iqm) and blo <= iqm <= bhi)
        ok = ok or not np.isfinite(blo)  # the band has no value there: nothing to compare
        point = (int(s), iqm, lo, hi, blo, bhi, ok)
        points.append(point)
        if not ok and first is None:
            first = point
    return CheckReport(
        run_dir=run_dir,
        band=f"{band['name']} at {band['total_env_steps']:,} env steps",
        inside=first is None,
        points=points,
        first_exit=first,
        differences=_differences(config, band),
    )


__all__ = [
    "BANDS_PATH",
    "CheckReport",
    "check_run",
    "find_band",
    "load_bands",
    "make_band",
    "write_bands",
]
