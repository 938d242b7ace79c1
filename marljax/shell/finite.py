"""Finiteness of runs: a NaN or inf in a metric or a parameter is not a result.

`finite_runs` flags the runs whose metrics or parameters are non-finite (a NaN policy can score the
best possible return); `finite_check` is the engine callback that stops a single run at the
first non-finite chunk with `NonFiniteError` (update, what, seed, setting).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from marljax.shell.build import Built
from marljax.training import execute as ex


def finite_check(built: Built, ckpt: Any) -> Callable:
    """A callback raising `NonFiniteError` for the earliest non-finite metric or parameter."""
    exp = built.exp

    def check(info: ex.Chunk) -> None:
        bad = _first_non_finite(info.metrics, info.state().agent_state)
        if bad is None:
            return
        u, what, r = bad
        g, s_ = divmod(r, exp.seeds)
        setting = built.settings[g]
        label = _setting_label({**exp.hparams, **setting}) or "the default hparams"
        c = ckpt() if callable(ckpt) else ckpt
        kept = c.latest_step() if c is not None else None
        where = (f"the newest checkpoint (update {kept}) is left as it was" if kept is not None
                 else "no checkpoint was written")  # fmt: skip
        update = info.first + u + 1
        raise NonFiniteError(
            f"Non-finite value at update {update} of {exp.train.num_updates}: {what} is NaN or "
            f"inf for seed {exp.seed + s_} with {label}. The run stopped before checkpointing "
            f"updates {info.first + 1}-{info.done}; {where}.",
            update, what, exp.seed + s_, setting,
        )  # fmt: skip

    return check


def _setting_label(hparams: dict) -> str:
    """`lr=1e+30, ent_coef=0.01`: the hparams a run was given (overrides and its setting)."""
    return ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in hparams.items()
    )


#: Metrics that are NaN by design in an update where no episode finished.
_EPISODE_METRICS = ("episode_return", "episode_return_per_agent", "episode_length")


def _metric_flags(metrics: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`[R, U]` bool per metric, True = finite.

    NaN by design counts as finite: episode statistics (`episode_return`, ..., and per-episode
    `group/name` metrics) of an update in which no episode ended (`num_episodes == 0`), and
    every `eval/...` metric of an update without an evaluation (all of them NaN) or whose
    evaluation ended no episode.
    """
    from marljax.training.train import EVAL_PREFIX

    def all_nan(x) -> np.ndarray:
        x = np.asarray(x)
        return np.isnan(x.reshape(*x.shape[:2], -1)).all(-1)

    def no_episode(prefix: str) -> np.ndarray | None:
        """`[R, U]`: updates in which this group of metrics saw no episode."""
        count = metrics.get(prefix + "num_episodes")
        if count is None:
            return None
        none = np.asarray(count, np.float64) == 0
        if prefix:  # no evaluation in the update: every one of its metrics is NaN
            group = [all_nan(v) for k, v in metrics.items() if k.startswith(prefix)]
            none = none | np.logical_and.reduce(group)
        return none

    none = {"": no_episode(""), EVAL_PREFIX: no_episode(EVAL_PREFIX)}
    out = {}
    for name, x in metrics.items():
        x = np.asarray(x)
        flat = x.reshape(*x.shape[:2], -1)
        ok = (
            np.isfinite(flat).all(-1)
            if np.issubdtype(x.dtype, np.inexact)
            else np.ones(x.shape[:2], bool)
        )
        prefix = EVAL_PREFIX if name.startswith(EVAL_PREFIX) else ""
        rest = name[len(prefix) :]
        per_episode = rest in _EPISODE_METRICS or "/" in rest or (prefix and rest == "num_episodes")
        if per_episode and none[prefix] is not None:
            ok = ok | (none[prefix] & np.isnan(flat).all(-1))
        out[name] = ok
    return out


def _param_flags(agent_state: Any) -> list[tuple[str, np.ndarray]]:
    """`(path, [R] bool)` per floating leaf of runs-first agent states, True = finite."""
    out = []
    for path, x in jax.tree_util.tree_flatten_with_path(agent_state)[0]:
        x = np.asarray(x)
        if np.issubdtype(x.dtype, np.inexact):
            out.append((jax.tree_util.keystr(path), np.isfinite(x.reshape(x.shape[0], -1)).all(-1)))
    return out


def finite_params(agent_state: Any) -> np.ndarray:
    """`[R]` bool: True where every floating leaf of a runs-first agent state is finite."""
    flags = [f for _, f in _param_flags(agent_state)]
    if not flags:
        return np.ones(jax.tree.leaves(agent_state)[0].shape[0], bool)
    return np.logical_and.reduce(flags)


def refuse_non_finite(
    agent_state: Any, labels: list[str], g: int, seeds: list[int], first_seed: int, where: str
) -> None:
    """Raise `ValueError` when setting `g`'s runs `seeds` of a `[G, S, ...]` agent state hold
    NaN/inf parameters: a diverged run is no policy (its greedy actions can score as well as the
    optimum). The message names the bad seeds and the settings whose parameters are finite."""
    ok = finite_params(jax.tree.map(lambda x: x[g][np.asarray(seeds)], agent_state))
    if ok.all():
        return
    bad = [first_seed + s for s, fine in zip(seeds, ok) if not fine]
    good = [
        label for h, label in enumerate(labels)
        if finite_params(jax.tree.map(lambda x, h=h: x[h], agent_state)).all()
    ]  # fmt: skip
    raise ValueError(
        f"the parameters of setting {g} ({labels[g]}) of {where} are not finite (NaN/inf) for "
        f"seed(s) {', '.join(map(str, bad))}: the run diverged and has no policy to evaluate. "
        + (f"Settings with finite parameters: {'; '.join(good)}." if good
           else "No setting has finite parameters.")
    )  # fmt: skip


def _first_non_finite(metrics: dict, agent_state: Any) -> tuple[int, str, int] | None:
    """`(update in chunk, what, run)` of the earliest non-finite metric, else the first bad
    parameter (reported at the chunk's last update), else None."""
    first = None
    for name, ok in sorted(_metric_flags(metrics).items()):
        bad = np.argwhere(~ok)
        if bad.size:
            r, u = min(bad.tolist(), key=lambda row: (row[1], row[0]))
            if first is None or u < first[0]:
                first = (u, f"metric {name!r}", r)
    if first is not None:
        return first
    n = next(iter(metrics.values())).shape[1]
    for path, ok in _param_flags(agent_state):
        if not ok.all():
            return (n - 1, f"parameter {path}", int(np.argmin(ok)))
    return None


def finite_runs(metrics: dict, agent_state: Any) -> np.ndarray:
    """`[G, S]` bool: True where a run's metrics (every update) and parameters are all finite.

    Args:
      metrics: name -> `[G, S, U, ...]` arrays.
      agent_state: the runs' final agent states, leaves `[G, S, ...]`.
    """
    G, S = np.shape(metrics["episode_return"])[:2]
    flat = {k: np.asarray(v).reshape(G * S, *np.shape(v)[2:]) for k, v in metrics.items()}
    ok = np.ones(G * S, bool)
    for flags in _metric_flags(flat).values():
        ok &= flags.all(-1)
    runs_first = jax.tree.map(lambda x: np.asarray(x).reshape(G * S, *np.shape(x)[2:]), agent_state)
    for _, flags in _param_flags(runs_first):
        ok &= flags
    return ok.reshape(G, S)


class NonFiniteError(FloatingPointError):
    """A training run produced NaN or inf (raised by `run_experiment(check_finite=True)`).

    Attributes:
      update: the first update (1-based) after which the value was seen.
      what: `"metric <name>"` or `"parameter <path>"`.
      seed: the seed of the run.
      setting: the hparams setting of the run (a dict; empty without a grid).
    """

    def __init__(self, message: str, update: int, what: str, seed: int, setting: dict):
        super().__init__(message)
        self.update, self.what, self.seed, self.setting = update, what, seed, setting


def final_returns(metrics: dict[str, np.ndarray], metric: str = "episode_return") -> np.ndarray:
    """`[G, S]` last finite value of `metric` per run: the return of the last update in which
    an episode finished, or with `"eval/episode_return"` the last greedy evaluation (NaN if
    none)."""
    ret = metrics[metric]
    out = np.full(ret.shape[:2], np.nan)
    for idx in np.ndindex(*ret.shape[:2]):
        finite = ret[idx][np.isfinite(ret[idx])]
        if len(finite):
            out[idx] = finite[-1]
    return out


__all__ = [
    "final_returns",
    "finite_check",
    "finite_params",
    "finite_runs",
    "NonFiniteError",
    "refuse_non_finite",
]
