"""Results as data: per-seed result files, and the markdown tables generated from them.

A baseline script writes what it measured, one value per seed, with everything needed to rerun
it (`write_results`): the command, the configuration (algorithm, parameter mode, budget, seeds,
...), package versions and the git commit. Tables in the README files are generated from those
files and sit between markers::

    <!-- results:social-punishment-paper -->
    | ... the generated table ... |
    <!-- /results:social-punishment-paper -->

`fill_blocks` rewrites the marked blocks of a text; `stale_blocks` names those whose committed
text differs from what the data give, so a test can fail when a result file changed without the
tables being regenerated (`python baselines/tables.py --check`).

Summary statistics of a table are computed, never typed: `mean_ci` (mean with a percentile
bootstrap 95% CI over seeds, fixed resampling key so the text is reproducible), `iqm`,
`p_greater` (the library's estimators in `marljax.evaluation`) and `count` ("k/n seeds");
for binary outcomes per seed, `wilson_interval` (a proportion's 95% interval) and
`mcnemar_exact` (two schemes run on the same seeds).
"""

from __future__ import annotations

import datetime
import json
import math
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from marljax.evaluation.results import write_json

#: version of the result-file layout
SCHEMA = 1
_BLOCK = re.compile(
    r"(<!-- results:(?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- /results:(?P=name) -->)", re.S
)


def write_results(
    path: str,
    script: str,
    config: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    argv: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Write a baseline's per-seed results as JSON (atomically) and return what was written.

    Args:
      path: the file (its folder is created).
      script: the script's path relative to the repository (e.g. `baselines/x.py`).
      config: every setting that decides the numbers (algorithm, parameter mode, preset,
        budget, seeds, evaluation, ...); JSON-serialisable.
      rows: one mapping per condition: its labels plus `"per_seed"`, a mapping from metric name
        to one value per seed (NaN is written as null).
      argv: the command's arguments (default `sys.argv[1:]`).

    The file also records package versions, the git commit and `git_dirty` (tracked files
    changed since that commit: the numbers came from uncommitted code).
    """
    from marljax.shell.build import _git_commit, _versions

    argv = list(sys.argv[1:] if argv is None else argv)
    data = {
        "schema": SCHEMA,
        "script": script,
        "command": " ".join(["python", script, *argv]),
        "config": _jsonable(dict(config)),
        "versions": _versions(),
        "git_commit": _git_commit(),
        "git_dirty": _git_dirty(),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "rows": [_jsonable(dict(r)) for r in rows],
    }
    for i, row in enumerate(data["rows"]):
        if not isinstance(row.get("per_seed"), dict):
            raise ValueError(f"row {i} of {path} has no 'per_seed' mapping of metric -> values")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_json(path, data)  # atomic; NaN was written as null above
    return data


def _git_dirty() -> bool | None:
    """Whether tracked files differ from the commit (None outside a git checkout)."""
    import subprocess

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                             capture_output=True, text=True, timeout=10)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return bool(out.stdout.strip()) if out.returncode == 0 else None


def read_results(path: str) -> dict[str, Any]:
    """A result file written by `write_results` (checked: schema, rows, equal seed counts)."""
    with open(path) as f:
        data = json.load(f)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ValueError(f"{path} is not a marljax result file (schema {SCHEMA})")
    for i, row in enumerate(data.get("rows", [])):
        lengths = {len(v) for v in row.get("per_seed", {}).values()}
        if len(lengths) > 1:
            raise ValueError(f"{path}: row {i}'s metrics have different seed counts {lengths}")
    return data


def values(row: Mapping[str, Any], metric: str) -> np.ndarray:
    """`[S]` float64 per-seed values of `metric` in `row` (null -> NaN)."""
    per_seed = row["per_seed"]
    if metric not in per_seed:
        raise KeyError(f"no metric {metric!r} in the row (has {sorted(per_seed)})")
    return np.array([np.nan if v is None else v for v in per_seed[metric]], np.float64)


def mean_ci(x: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    """Mean and percentile bootstrap 95% CI over seeds (`marljax.evaluation.social.bootstrap_ci`
    with a fixed key, so the same data always give the same text)."""
    import jax

    from marljax.evaluation.social import bootstrap_ci

    x = np.asarray(x, np.float32)
    if x.ndim != 1 or x.size == 0 or not np.isfinite(x).all():
        raise ValueError(f"mean_ci needs [S] finite values, got {x!r}")
    mean, low, high = bootstrap_ci(jax.random.PRNGKey(seed), x)
    return float(x.astype(np.float64).mean()), float(low), float(high)


def iqm(x: np.ndarray) -> float:
    """Interquartile mean over seeds (`marljax.evaluation.stats.aggregate_iqm`, rliable's)."""
    from marljax.evaluation.stats import aggregate_iqm

    return float(aggregate_iqm(np.asarray(x, np.float32)[:, None]))


def iqm_ci(x: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    """IQM and stratified-bootstrap 95% CI over seeds (`marljax.evaluation.stats.interval_estimate`,
    rliable's percentile interval, fixed key: the same data always give the same text)."""
    import jax

    from marljax.evaluation.stats import aggregate_iqm, interval_estimate

    x = np.asarray(x, np.float32)
    if x.ndim != 1 or x.size == 0 or not np.isfinite(x).all():
        raise ValueError(f"iqm_ci needs [S] finite values, got {x!r}")
    est = interval_estimate(jax.random.PRNGKey(seed), aggregate_iqm, x[:, None])
    return float(est.point), float(est.low), float(est.high)


def p_greater(x: np.ndarray, y: np.ndarray) -> float:
    """P(a seed of `x` scores more than a seed of `y`), ties counted half
    (`marljax.evaluation.stats.probability_of_improvement` on one task)."""
    from marljax.evaluation.stats import probability_of_improvement

    as_runs = lambda v: np.asarray(v, np.float32)[:, None]  # noqa: E731
    return float(probability_of_improvement(as_runs(x), as_runs(y)))


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a binomial proportion (E. B. Wilson, JASA 1927)."""
    if n <= 0:
        raise ValueError(f"wilson_interval needs n >= 1 trials, got {n}")
    p = successes / n
    denom = 1.0 + z**2 / n
    centre = (p + z**2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_exact(only_x: int, only_y: int) -> float:
    """Two-sided exact McNemar p-value of paired binary outcomes: `only_x` pairs where only the
    first succeeded, `only_y` where only the second did (a binomial test of the discordant
    pairs at 1/2; 1.0 when there are none)."""
    n, k = only_x + only_y, min(only_x, only_y)
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


def count(x: np.ndarray, ok: Callable[[np.ndarray], np.ndarray]) -> str:
    """ "k/n": how many of the `n` seeds satisfy `ok`."""
    x = np.asarray(x)
    return f"{int(np.sum(ok(x)))}/{x.size}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub markdown table (cells as given; `None` is an empty cell)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"row {row!r} has {len(row)} cells, the header {len(header)}")
        cells = ["" if c is None else str(c) for c in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def fill_blocks(text: str, blocks: Mapping[str, str]) -> str:
    """`text` with the body of each `<!-- results:NAME -->` block replaced by `blocks[NAME]`.

    Raises:
      KeyError: a marker in `text` names no block (blocks without a marker are left out).
    """
    found = [m.group("name") for m in _BLOCK.finditer(text)]
    missing = sorted(set(found) - set(blocks))
    if missing:
        raise KeyError(f"markers without a generator: {missing}")

    def body(m: re.Match) -> str:
        new = blocks[m.group("name")]
        return m.group(1) + new + ("" if new.endswith("\n") else "\n") + m.group(4)

    return _BLOCK.sub(body, text)


def block_names(text: str) -> list[str]:
    """The names of the results blocks in `text`, in order."""
    return [m.group("name") for m in _BLOCK.finditer(text)]


def stale_blocks(text: str, blocks: Mapping[str, str]) -> list[str]:
    """The blocks of `text` whose committed body differs from the generated one."""
    current = {m.group("name"): m.group("body") for m in _BLOCK.finditer(text)}
    fresh = {m.group("name"): m.group("body") for m in _BLOCK.finditer(fill_blocks(text, blocks))}
    return [name for name in current if current[name] != fresh[name]]


def _jsonable(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (np.floating, float)):
        return float(x) if np.isfinite(x) else None
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    if hasattr(x, "__array__") and not isinstance(x, str):
        return _jsonable(np.asarray(x))
    return x


__all__ = [
    "SCHEMA",
    "block_names",
    "count",
    "fill_blocks",
    "iqm",
    "iqm_ci",
    "markdown_table",
    "mcnemar_exact",
    "mean_ci",
    "p_greater",
    "read_results",
    "stale_blocks",
    "values",
    "wilson_interval",
    "write_results",
]
