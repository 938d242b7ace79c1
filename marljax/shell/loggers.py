"""Loggers: `marljax.training.execute` callbacks that write metrics as training goes.

    run_experiment(exp, callbacks=[TensorBoardLogger("runs/tb"), WandbLogger(project="marl")])
    execute(trainer, keys, hparams, callbacks=[CSVLogger("progress.csv")])

Every logger is called after each chunk with a `marljax.training.execute.Chunk` (metrics `[R, n]` for
the chunk's `n` updates of `R` runs) and reports, per update, each scalar metric's mean over
the runs that have a value (NaN entries, e.g. updates in which no episode ended or updates
without evaluation, are left out; an update where no run has a value is not logged). The
x-axis is the env steps per run.

- `CSVLogger`: one line per chunk (always written in a run directory as `progress.csv`): the
  updates done, env steps per run, wall time, throughput, and each metric's mean over the
  chunk's updates and the runs. Resuming drops the lines past the resumed point.
- `TensorBoardLogger`: one scalar per metric and update (`pip install "marljax[log]"`:
  tensorboardX).
- `WandbLogger`: the same to Weights & Biases (`pip install "marljax[log]"`); `mode="offline"`
  writes locally without an account (`wandb sync` uploads later).

Per-agent metrics (`[R, n, A]`) are logged as their mean over agents. In a sweep the TensorBoard
and W&B loggers write one series per setting, tagged `"<setting label>/<metric>"` (the mean over
its seeds; `sweep_series(..., per_seed=True)` for one per seed), so settings can be compared.
"""

from __future__ import annotations

import csv
import os
import time
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from marljax.training.execute import Chunk


def update_means(info: Chunk, runs: Any = None) -> Iterator[tuple[int, int, dict[str, float]]]:
    """`(update, env_steps per run, {metric: mean over runs})` for each update of the chunk
    that has a value, skipping metrics with no value in that update (`runs`: only these)."""
    metrics = info.metrics if runs is None else {
        k: np.asarray(v)[list(runs)] for k, v in info.metrics.items()}  # fmt: skip
    steps = metrics.get("env_steps")
    means = _run_means(metrics)
    for i in range(info.done - info.first):
        row = {k: float(v[i]) for k, v in means.items() if np.isfinite(v[i])}
        env_steps = int(np.max(steps[:, i])) if steps is not None else info.first + i + 1
        if row:
            yield info.first + i + 1, env_steps, row


def tagged_updates(info: Chunk, series: Any = None) -> Iterator[tuple[int, dict[str, float]]]:
    """`(env_steps, {tag: value})` per update of the chunk: with `series`, every metric once per
    label as `"<label>/<metric>"` (the mean over that label's runs); without, `"<metric>"`."""
    rows: dict[int, dict[str, float]] = {}
    for label, runs in [("", None)] if series is None else series:
        for _, env_steps, row in update_means(info, runs):
            tags = {f"{label}/{k}" if label else k: v for k, v in row.items()}
            rows.setdefault(env_steps, {}).update(tags)
    yield from sorted(rows.items())


def sweep_series(labels: list[str], seeds: int, per_seed: bool = False) -> Any:
    """The series of a sweep's runs (run `r = g * S + s`): one per setting label, or with
    `per_seed` one per setting and seed (`"<label>/seed_<s>"`); None for one unlabelled run."""
    if len(labels) <= 1 and not per_seed:
        return None
    names = [lab or f"setting_{g}" for g, lab in enumerate(labels)]
    if per_seed:
        return [
            (f"{n}/seed_{s}", [g * seeds + s]) for g, n in enumerate(names) for s in range(seeds)
        ]
    return [(n, [g * seeds + s for s in range(seeds)]) for g, n in enumerate(names)]


def _run_means(metrics: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """metric -> `[n]` mean over runs (and agents) ignoring NaN; NaN where no run has one."""
    out = {}
    for name, value in metrics.items():
        if name == "env_steps":
            continue
        v = np.asarray(value, np.float64)
        v = v.reshape(*v.shape[:2], -1).mean(-1) if v.ndim > 2 else v  # [R, n]
        finite = np.isfinite(v)
        count = finite.sum(0)
        total = np.where(finite, v, 0.0).sum(0)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return out


class CSVLogger:
    """One CSV line per chunk: `update, env_steps, seconds, env_steps_per_s, <metric>...`.

    A metric's value is its mean over the chunk's updates and the runs that have one (empty
    where none has). The columns are fixed by the first chunk written; a resumed run keeps the
    file's lines up to the resumed update and appends.

    Args:
      path: the CSV file (its folder must exist).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        self.columns: list[str] | None = None
        self.start = time.monotonic()

    def __call__(self, info: Chunk) -> None:
        means = _run_means(info.metrics)
        values = {}
        for name, v in means.items():
            finite = v[np.isfinite(v)]
            values[name] = float(finite.mean()) if finite.size else float("nan")
        steps = info.metrics.get("env_steps")
        row = {
            "update": info.done,
            "env_steps": int(np.max(steps[:, -1])) if steps is not None else info.done,
            "seconds": round(time.monotonic() - self.start, 3),
            "env_steps_per_s": round(info.env_steps_per_s, 1),
            **values,
        }
        if self.columns is None:
            self._open(row, info.first)
        with open(self.path, "a", newline="") as f:
            csv.writer(f).writerow([_cell(row.get(c)) for c in self.columns])

    def _open(self, row: dict[str, Any], first: int) -> None:
        """Fix the columns; keep an existing file's lines up to update `first` (a resume)."""
        kept: list[list[str]] = []
        if os.path.exists(self.path):
            with open(self.path, newline="") as f:
                lines = list(csv.reader(f))
            if lines:
                self.columns = lines[0]
                kept = [r for r in lines[1:] if r and int(r[0]) <= first]
        if self.columns is None:
            self.columns = list(row)
        with open(self.path, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(self.columns)
            writer.writerows(kept)


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return ""
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def read_csv(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """A `CSVLogger` file as column -> array (empty cells are NaN)."""
    with open(path, newline="") as f:
        lines = list(csv.reader(f))
    columns, rows = lines[0], lines[1:]
    return {
        c: np.array([float(r[i]) if r[i] != "" else np.nan for r in rows])
        for i, c in enumerate(columns)
    }


def _require(module: str, what: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(
            f"{what} needs the package {module!r}, which is not installed: "
            f'pip install "marljax[log]" (or pip install {module})'
        ) from err


def wandb_ready() -> bool:
    """Whether a W&B run can start without asking for a login: `WANDB_MODE` offline or
    disabled, `WANDB_API_KEY` set, or a stored login (`wandb login` writes it to ~/.netrc)."""
    import netrc
    import urllib.parse

    if os.environ.get("WANDB_MODE", "").lower() in ("offline", "disabled", "dryrun"):
        return True
    if os.environ.get("WANDB_API_KEY"):
        return True
    url = os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai"
    try:
        return netrc.netrc().authenticators(urllib.parse.urlparse(url).hostname or "") is not None
    except (OSError, netrc.NetrcParseError):
        return False


class TensorBoardLogger:
    """Scalars per update to TensorBoard event files in `logdir` (`tensorboard --logdir`).

    Args:
      logdir: the folder of the event files.
      prefix: put before every tag (e.g. the run's name).
      series: one series per label (`sweep_series`: a sweep's settings, tags
        `"<label>/<metric>"`); None: the mean over every run.
    """

    def __init__(self, logdir: str | os.PathLike, prefix: str = "", series: Any = None):
        tbx = _require("tensorboardX", "TensorBoardLogger")
        self.writer = tbx.SummaryWriter(os.fspath(logdir))
        self.prefix, self.series = prefix, series

    def __call__(self, info: Chunk) -> None:
        for env_steps, row in tagged_updates(info, self.series):
            for name, value in row.items():
                self.writer.add_scalar(self.prefix + name, value, env_steps)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandbLogger:
    """Scalars per update to a Weights & Biases run (`wandb.init(**kwargs)`).

    Args:
      series: one series per label (`sweep_series`), keys `"<label>/<metric>"`; None: the mean
        over every run.
      **init: arguments of `wandb.init`, e.g. `project="marl"`, `config={...}`,
        `mode="offline"` (no account or network needed; `wandb sync` uploads later).
    """

    def __init__(self, series: Any = None, **init: Any):
        wandb = _require("wandb", "WandbLogger")
        self.series = series
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            self.run = wandb.init(**init)

    def __call__(self, info: Chunk) -> None:
        for env_steps, row in tagged_updates(info, self.series):
            self.run.log({**row, "env_steps": env_steps}, step=env_steps)

    def close(self) -> None:
        self.run.finish()


__all__ = [
    "CSVLogger",
    "TensorBoardLogger",
    "WandbLogger",
    "read_csv",
    "sweep_series",
    "tagged_updates",
    "update_means",
    "wandb_ready",
]
