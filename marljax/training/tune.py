"""Tune while training: population-based training and successive halving over the runs axis.

    tuner = Tuner(PBT(interval=20), space, metric="eval/episode_return", populations=pops,
                  hparams=h0)
    out = execute(trainer, keys, tuner.hparams, adapt=tuner)      # one compiled program

A sweep's runs are split into *populations* (by default each seed's settings: run
`r = g * S + s` belongs to population `s`), each one independent tuning procedure. Between chunks
`Tuner` ranks every population's active runs by their recent `metric` and returns an
`marljax.training.execute.Adaptation` that the engine applies without a new compile (the
hyperparameters are traced):

- `PBT` (Jaderberg et al. 2017, truncation selection): every `interval` updates, the bottom
  `fraction` of a population copies the whole training state of a member of its top `fraction`
  (parameters, optimiser, replay buffer and environments; each run keeps its own PRNG key) and
  *explores*: every tuned hyperparameter is redrawn from its declared distribution with
  probability `resample`, otherwise multiplied by one of `perturb` (a `Choice` moves to a
  neighbouring value) and clipped to the declared range.
- `Halving` (successive halving, Jamieson and Talwalkar 2016; Li et al. 2020): at each rung, a
  fraction of the run's updates, the runs below the best `keep` fraction of their population
  stop; they are not computed afterwards, so the later chunks run fewer runs (the chunk program
  is compiled once more per rung, for the smaller run count).

Every decision is a function of the metrics so far and a PRNG seeded by `(seed, population,
update)`, and the tuner's state is a list of JSON events (`events`), so a run resumed from a
checkpoint (`Tuner.restore`) continues bit for bit. `lineage` records every copy.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from marljax.core import config as cfg
from marljax.training.execute import Adaptation, Chunk
from marljax.training.space import Choice, Distribution, LogUniform, as_distribution


@dataclasses.dataclass(frozen=True)
class PBT:
    """Population-based training (see the module docstring).

    Attributes:
      interval: updates between two exploit/explore steps.
      fraction: the bottom and top fractions of a population, in (0, 0.5].
      resample: probability that a hyperparameter is redrawn instead of perturbed, in [0, 1].
      perturb: the factors a perturbed value is multiplied by (one drawn uniformly).
      window: a run's score: the mean of its last `window` finite values of the metric since
        the previous step.
    """

    interval: int
    fraction: float = 0.25
    resample: float = 0.25
    perturb: tuple = (0.8, 1.25)
    window: int = 1

    def __post_init__(self):
        _check_int(self.interval, "pbt interval", 1)
        _check_int(self.window, "pbt window", 1)
        _check_fraction(self.fraction, "pbt fraction", high=0.5)
        if not 0.0 <= float(self.resample) <= 1.0:
            raise cfg.ConfigError(f"pbt resample must be in [0, 1], got {self.resample!r}")
        factors = tuple(float(f) for f in self.perturb)
        if not factors or not all(math.isfinite(f) and f > 0 for f in factors):
            raise cfg.ConfigError(f"pbt perturb must be positive factors, got {self.perturb!r}")
        object.__setattr__(self, "perturb", factors)

    def steps(self, total: int) -> list[int]:
        """The updates after which PBT acts (never after the last)."""
        return list(range(self.interval, total, self.interval))


@dataclasses.dataclass(frozen=True)
class Halving:
    """Successive halving (see the module docstring).

    Attributes:
      rungs: increasing fractions of the run, in (0, 1), after which the weak runs stop.
      keep: the fraction of a population's active runs that go on at a rung, in (0, 1) (at
        least one run goes on).
      window: a run's score: the mean of its last `window` finite values of the metric.
    """

    rungs: tuple = (0.25, 0.5)
    keep: float = 0.5
    window: int = 1

    def __post_init__(self):
        rungs = tuple(float(r) for r in self.rungs)
        if not rungs:
            raise cfg.ConfigError("halving needs at least one rung")
        for r in rungs:
            _check_fraction(r, "halving rung")
        if list(rungs) != sorted(set(rungs)):
            raise cfg.ConfigError(f"halving rungs must increase, got {self.rungs!r}")
        _check_fraction(self.keep, "halving keep")
        _check_int(self.window, "halving window", 1)
        object.__setattr__(self, "rungs", rungs)

    def steps(self, total: int) -> list[int]:
        """The updates after which runs stop (each rung rounded to a whole update)."""
        return sorted({max(1, min(total - 1, round(r * total))) for r in self.rungs})


Method = PBT | Halving


def _check_fraction(x: Any, name: str, high: float = 1.0) -> None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0.0 < float(x) <= high:
        bound = "1)" if high == 1.0 else f"{high}]"
        raise cfg.ConfigError(f"{name} must be in (0, {bound}, got {x!r}")
    if high == 1.0 and float(x) >= 1.0:
        raise cfg.ConfigError(f"{name} must be in (0, 1), got {x!r}")


def _check_int(x: Any, name: str, low: int) -> None:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < low:
        raise cfg.ConfigError(f"{name} must be an integer >= {low}, got {x!r}")


def check_schedule(method: Method, total: int, chunk: int) -> None:
    """Refuse a schedule that cannot act in a run of `total` updates in chunks of `chunk`.

    Raises:
      ConfigError: an exploit interval as long as the run, or steps between chunk ends.
    """
    steps = method.steps(total)
    if isinstance(method, PBT) and not steps:
        raise cfg.ConfigError(
            f"pbt interval {method.interval} updates is not shorter than the run "
            f"({total} updates): PBT would never act. Use a shorter interval or more steps."
        )
    if isinstance(method, Halving) and total < 2:
        raise cfg.ConfigError(f"halving needs a run of at least 2 updates, got {total}")
    off = [s for s in steps if s % chunk]
    if off:
        raise cfg.ConfigError(
            f"the tuner acts after updates {off[:5]}, which are not chunk ends (chunks of {chunk} "
            "updates); use a chunk size (chunk_updates) that divides them"
        )


def chunk_for(method: Method, total: int, target: int = 20) -> int:
    """A chunk size whose ends include every step of `method` (their GCD with the run's length,
    split further towards about `target` chunks)."""
    g = total
    for s in method.steps(total):
        g = math.gcd(g, s)
    divisors = [d for d in range(1, g + 1) if g % d == 0]
    return min(divisors, key=lambda d: (abs(total / d - target), -d))


def run_scores(values: np.ndarray, first: int, window: int) -> np.ndarray:
    """Per run: the mean of the last `window` finite values of `values[:, first:]` (NaN if none);
    per-agent metrics `[R, U, A]` are averaged over agents first."""
    values = np.asarray(values, np.float64)
    if values.ndim > 2:
        values = values.reshape(*values.shape[:2], -1).mean(-1)
    out = np.full(values.shape[0], np.nan)
    for r, row in enumerate(values[:, first:]):
        finite = row[np.isfinite(row)]
        if len(finite):
            out[r] = finite[-window:].mean()
    return out


def resolve_metric(metric: str | None, metrics: dict) -> str:
    """`metric` if the runs log it; None: `eval/task/<score>` (e.g. the win rate) when there is
    one, else `eval/episode_return`.

    Raises:
      ConfigError: the metric is not logged (the logged ones named), or there is no greedy
        evaluation to rank by default.
    """
    if metric:
        if metric not in metrics:
            raise cfg.unknown_key_error(metric, sorted(metrics), "tune metric")
        return metric
    tasks = sorted(n for n in metrics if n.startswith("eval/task/"))
    if tasks:
        return tasks[0]
    if "eval/episode_return" in metrics:
        return "eval/episode_return"
    raise cfg.ConfigError(
        "the tuner ranks runs by the greedy evaluation's return by default, but these runs "
        "have no evaluation (train.eval_interval = 0, or an env without max_steps): set "
        "--set eval_interval=N, or rank by a training metric: --tune-set metric=episode_return"
    )


def _order(scores: np.ndarray, mode: str) -> np.ndarray:
    """Indices best first; NaN last; ties kept in index order."""
    key = np.where(np.isfinite(scores), scores, -np.inf if mode == "max" else np.inf)
    return np.argsort(-key if mode == "max" else key, kind="stable")


def explore(value: float, dist: Distribution, rng: np.random.Generator, method: PBT) -> float:
    """A PBT explore step of one hyperparameter value within `dist`'s range (float32)."""
    if isinstance(dist, Choice):
        values = [float(v) for v in dist.values]
        if rng.random() < method.resample:
            return float(np.float32(values[int(rng.integers(len(values)))]))
        near = int(np.argmin([abs(v - value) for v in values]))
        step = int(rng.choice([-1, 1]))
        return float(np.float32(values[min(len(values) - 1, max(0, near + step))]))
    low, high = float(dist.low), float(dist.high)
    if rng.random() < method.resample:
        if isinstance(dist, LogUniform):
            new = math.exp(rng.uniform(math.log(low), math.log(high)))
        else:
            new = rng.uniform(low, high)
    else:
        new = value * method.perturb[int(rng.integers(len(method.perturb)))]
    new = float(np.float32(min(high, max(low, new))))
    if new < low:  # float32 rounding below the range
        new = float(np.nextafter(np.float32(new), np.float32(np.inf)))
    elif new > high:
        new = float(np.nextafter(np.float32(new), np.float32(-np.inf)))
    return new


class Tuner:
    """The `adapt` of `marljax.training.execute.execute` for PBT or successive halving.

    Args:
      method: a `PBT` or a `Halving` (None: random search, the starting draws trained as
        they are).
      space: hyperparameter name -> distribution (every tuned name needs one: its range).
      metric: the metric runs are ranked by (e.g. `"eval/episode_return"`); `mode` "max"/"min".
      populations: lists of run indices; each one is ranked on its own.
      hparams: the runs' starting hparams (leaves `[R]`).
      total: updates per run; `seed`: seed of the explore steps.
    """

    def __init__(
        self,
        method: Method | None,
        space: dict[str, Any],
        metric: str | None,
        populations: Sequence[Sequence[int]],
        hparams: Any,
        total: int,
        mode: str = "max",
        seed: int = 0,
    ):
        self.method = method
        self.space = {k: as_distribution(v, k) for k, v in space.items()}
        if isinstance(method, PBT) and not self.space:
            raise cfg.ConfigError(
                "PBT explores hyperparameters within their declared ranges: give at least one "
                "with a distribution (--sample NAME=log:LOW:HIGH)"
            )
        missing = [k for k in self.space if not hasattr(hparams, k)]
        if missing:
            raise cfg.ConfigError(f"{missing} are not hyperparameters of these runs")
        self.metric, self.mode, self.total, self.seed = metric, mode, int(total), int(seed)
        self.populations = [np.asarray(p, np.int64) for p in populations]
        self.R = int(np.asarray(getattr(hparams, next(iter(self.space)))).shape[0]) if (
            self.space) else int(sum(len(p) for p in self.populations))  # fmt: skip
        self.initial = hparams
        self.hparams = hparams
        self.active = np.ones(self.R, bool)
        self.steps = set() if method is None else set(method.steps(self.total))
        self.events: list[dict] = []  # one per step: the state after it and the lineage

    def check(self, metrics: dict) -> None:
        """Before compile, with the shapes of one update's metrics: resolve the default metric
        (the greedy evaluation's task score, such as the win rate, else its return) or refuse
        one the runs do not log (`ConfigError`, naming those they do)."""
        self.metric = resolve_metric(self.metric, metrics)

    # ------------------------------------------------------------------------- state

    def restore(self, events: list[dict], done: int) -> None:
        """Continue from a checkpoint after update `done`: the events up to it (from
        `events`, e.g. a run directory's `tune.json`) give the hparams and the active runs."""
        self.events = [e for e in events if int(e["update"]) <= done]
        self.hparams, self.active = self.initial, np.ones(self.R, bool)
        if self.events:
            last = self.events[-1]
            self.hparams = self._with(self.initial, {k: np.asarray(v, np.float32)
                                                     for k, v in last["hparams"].items()})  # fmt: skip
            self.active = np.asarray(last["active"], bool)

    @staticmethod
    def _with(hparams: Any, values: dict[str, np.ndarray]) -> Any:
        return hparams.replace(**values) if hasattr(hparams, "replace") else (
            dataclasses.replace(hparams, **values))  # fmt: skip

    def lineage(self) -> list[dict]:
        """Every copy so far: update, population, run, donor, their scores, new hparams."""
        return [c for e in self.events for c in e.get("copies", [])]

    def schedule(self, run: int) -> list[dict]:
        """The hparams run `run` trained with, `[{from_update, hparams}]` along its ancestry (a
        PBT copy inherits its donor's schedule up to the copy; only a copy changes a run's
        hparams)."""
        segments, who, until = [], run, self.total
        for e in reversed(self.events):
            u = int(e["update"])
            copy = next((c for c in e.get("copies", []) if c["run"] == who), None)
            if u < until and copy is not None:
                segments.append((u, who, e))
                who, until = copy["donor"], u
        initial = {k: float(np.asarray(getattr(self.initial, k))[who]) for k in self.space}
        out = [{"from_update": 0, "run": int(who), "hparams": initial}]
        for u, slot, e in reversed(segments):
            values = {k: float(e["hparams"][k][slot]) for k in self.space}
            out.append({"from_update": u, "run": int(slot), "hparams": values})
        return out

    # ------------------------------------------------------------------------- decisions

    def __call__(self, info: Chunk) -> Adaptation | None:
        if info.done not in self.steps:
            return None
        values = info.history[self.metric]
        method = self.method
        if isinstance(method, PBT):
            first = max(0, info.done - method.interval)
            change = self._pbt(run_scores(values, first, method.window), info.done)
        else:
            change = self._halve(run_scores(values, 0, method.window), info.done)
        self.events = [e for e in self.events if int(e["update"]) < info.done]
        self.events.append(change)
        self.hparams = self._with(self.hparams, {k: np.asarray(v, np.float32)
                                                 for k, v in change["hparams"].items()})  # fmt: skip
        self.active = np.asarray(change["active"], bool)
        source = np.asarray(change.pop("_source"), np.int64)
        return Adaptation(hparams=self.hparams, source=source, active=self.active)

    def _values(self) -> dict[str, np.ndarray]:
        return {k: np.asarray(getattr(self.hparams, k), np.float64).copy() for k in self.space}

    def _pbt(self, scores: np.ndarray, done: int) -> dict:
        method = self.method
        source = np.arange(self.R)
        values = self._values()
        copies = []
        for p, members in enumerate(self.populations):
            members = members[self.active[members]]
            n = len(members)
            k = min(n // 2, max(1, int(math.floor(method.fraction * n)))) if n >= 2 else 0
            if k == 0:
                continue
            ranked = members[_order(scores[members], self.mode)]
            top, bottom = ranked[:k], ranked[n - k :]
            rng = np.random.default_rng([self.seed, p, done])
            for run in bottom:
                donor = int(top[int(rng.integers(k))])
                source[run] = donor
                for name, dist in self.space.items():
                    values[name][run] = explore(float(values[name][donor]), dist, rng, method)
                copies.append({
                    "run": int(run), "donor": donor, "population": p,
                    "score": cfg.json_number(scores[run]), "donor_score": cfg.json_number(scores[donor]),
                    "hparams": {k: float(values[k][run]) for k in self.space},
                })  # fmt: skip
        return self._event(done, values, self.active, copies, source, scores)

    def _halve(self, scores: np.ndarray, done: int) -> dict:
        active = self.active.copy()
        stopped = []
        for members in self.populations:
            members = members[active[members]]
            keep = max(1, int(math.ceil(self.method.keep * len(members))))
            ranked = members[_order(scores[members], self.mode)]
            for run in ranked[keep:]:
                active[run] = False
                stopped.append(int(run))
        event = self._event(done, self._values(), active, [], np.arange(self.R), scores)
        event["stopped"] = sorted(stopped)
        return event

    def _event(self, done, values, active, copies, source, scores) -> dict:
        return {
            "update": int(done),
            "scores": [cfg.json_number(s) for s in scores],
            "hparams": {k: [float(np.float32(x)) for x in v] for k, v in values.items()},
            "active": [bool(a) for a in active],
            "copies": copies,
            "_source": source,
        }


__all__ = [
    "PBT",
    "Halving",
    "Tuner",
    "check_schedule",
    "chunk_for",
    "explore",
    "resolve_metric",
    "run_scores",
]
