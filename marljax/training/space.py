"""The hyperparameter space of a sweep: grids, random distributions and their settings.

    make_settings(grid={"lr": [1e-3, 3e-4]}, sample={"ent_coef": LogUniform(1e-4, 1e-1)},
                  num_samples=8)   # 2 x 8 settings, each a dict name -> value

Only traced hyperparameters can be swept (`check_sweepable`); `stack_settings` turns settings
into the hparams pytree with a leading settings axis that the engine runs as one program.
`marljax.shell.sweep` runs and ranks them.
"""

from __future__ import annotations

import difflib
import itertools
import math
from typing import Any, NamedTuple

import jax
import numpy as np

from marljax.agents import algo_spec
from marljax.core import config as cfg
from marljax.training.train import TrainConfig

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


__all__ = [
    "Choice",
    "LogUniform",
    "Uniform",
    "as_distribution",
    "check_sweepable",
    "distribution_dict",
    "grid_settings",
    "make_settings",
    "parse_distribution",
    "random_settings",
    "stack_settings",
]
