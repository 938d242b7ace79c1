"""Hyperparameter sweeps: a grid or a random sample x seeds as ONE compiled program.

    exp = Experiment(algo="ippo", env="matrix/climbing-v0", seeds=4,
                     grid={"lr": [1e-3, 3e-4]})
    result = run_sweep(exp, sample={"ent_coef": LogUniform(1e-4, 1e-1)}, num_samples=8)
    result.best_setting        # e.g. {"lr": 0.001, "ent_coef": 0.0032}
    result.scores              # [G] mean final return over seeds, one per setting

Only *traced* hyperparameters (the fields of the algorithm's hparams class, e.g. `PPOHParams`)
can be swept inside one program; settings that change shapes or loop lengths (the agent's static
config such as `hidden_sizes`, or `TrainConfig` such as `num_envs`) need one compile per value
and are rejected with the list of sweepable names.

The `G` settings x `S` seeds are flattened into `R = G * S` independent runs (run
`r = g * S + s`), `vmap`ped through the fused training function and sharded over every device
(`marljax.distributed`). Before running, `estimate_memory` compiles the program and reads
XLA's memory analysis; if one call would exceed `max_memory_bytes`, the runs are split into
several calls of ONE compiled program of fewer runs (the last call padded with copies of its
last run), and the results concatenated. A sweep writes one run directory with the
conventions of `marljax.experiment`:

    config.json          the experiment, resolved hparams of every setting, the sweep spec
    metrics.json         marl-eval JSON (one algorithm entry per setting: `ippo[lr=0.001]`)
    metrics.npz          every metric as arrays [G, S, U]
    sweep.json           settings ranked by score, the best setting and its hparams
    learning_curve.png   mean return over seeds with a min-max band, per setting
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import itertools
import math
import os
import time
import warnings
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from marljax import config as cfg
from marljax import distributed as dist
from marljax import results, rundir
from marljax.agents import algo_spec
from marljax.train import TrainConfig, Trainer

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


# ----------------------------------------------------------------------------- memory


@dataclasses.dataclass
class MemoryEstimate:
    """What one call of the sweep program needs, per device.

    Attributes:
      runs: runs in the estimated call (a multiple of `devices`).
      devices: devices the call is sharded over.
      state_bytes_per_run: exact size of one run's final state and metrics (`jax.eval_shape`).
      peak_bytes_per_device: XLA's memory analysis of the compiled call (arguments + outputs +
        temporaries) on one device; None where the backend does not report it.
      compiled: the compiled call (reused by `run_runs` when the runs fit in one call).
    """

    runs: int
    devices: int
    state_bytes_per_run: int
    peak_bytes_per_device: int | None
    compiled: Any = dataclasses.field(default=None, repr=False)

    @property
    def bytes_per_run(self) -> int:
        """Bytes one run needs on its device (XLA peak per run, else 3x its state and metrics)."""
        if self.peak_bytes_per_device is None:
            return 3 * self.state_bytes_per_run
        return max(1, -(-self.peak_bytes_per_device // max(1, self.runs // self.devices)))

    def total_bytes(self, num_runs: int) -> int:
        """Estimated bytes, summed over devices, of `num_runs` runs in one call."""
        return self.bytes_per_run * num_runs

    def __str__(self) -> str:
        peak = (
            f"XLA peak {_fmt(self.peak_bytes_per_device)} per device"
            if self.peak_bytes_per_device is not None
            else "no XLA memory analysis on this backend"
        )
        return (
            f"memory estimate: {self.runs} runs on {self.devices} device(s): {peak} "
            f"({_fmt(self.bytes_per_run)} per run; final state + metrics "
            f"{_fmt(self.state_bytes_per_run)} per run)"
        )


def _fmt(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def default_memory_budget(mesh: Any = None) -> int:
    """Bytes one device may use for a sweep call.

    Accelerators: 80% of the device's `bytes_limit` (`memory_stats`). CPU: half of the
    available host memory (`/proc/meminfo` MemAvailable, else total), shared by the local CPU
    devices.
    """
    devices = list(mesh.devices.flat) if mesh is not None else jax.devices()
    local = [d for d in devices if d.process_index == jax.process_index()] or devices
    device = local[0]
    if device.platform != "cpu":
        stats = device.memory_stats() or {}
        if "bytes_limit" in stats:
            return int(0.8 * stats["bytes_limit"])
    return int(0.5 * _host_available_bytes() / max(1, len(local)))


def parse_bytes(text: str | int) -> int:
    """A byte count from `"4GiB"`, `"512MB"`, `"2e9"` or an int (for `--max-memory`).

    Raises:
      ConfigError: an unparsable or non-positive size.
    """
    if isinstance(text, (int, np.integer)) and not isinstance(text, bool):
        value = float(text)
    else:
        raw = str(text).strip().lower().replace(" ", "")
        units = {
            "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
            "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "k": 2**10, "m": 2**20, "g": 2**30,
            "b": 1,
        }  # fmt: skip
        scale = 1.0
        for suffix, factor in units.items():
            if raw.endswith(suffix):
                raw, scale = raw[: -len(suffix)], float(factor)
                break
        try:
            value = float(raw) * scale
        except ValueError:
            raise cfg.ConfigError(
                f"memory size must be like 4GiB, 512MB or 2e9, got {text!r}"
            ) from None
    if not math.isfinite(value) or value < 1:
        raise cfg.ConfigError(f"memory size must be a positive number of bytes, got {text!r}")
    return int(value)


def _host_available_bytes() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def estimate_memory(
    trainer: Trainer,
    num_runs: int,
    hparams: Any = None,
    env_params: Any = None,
    mesh: Any = None,
) -> MemoryEstimate:
    """Estimate the memory of `num_runs` runs in one call, before running anything.

    Compiles the sharded program for `num_runs` runs (padded to a multiple of the device count)
    and reads `compiled.memory_analysis()` (per device: arguments + outputs + temporaries);
    the exact size of a run's outputs comes from `jax.eval_shape`. The compiled program is
    kept in the estimate, so estimating before a sweep that fits costs no extra compile.

    Args:
      trainer: from `make_train`.
      num_runs: runs `R` in the call.
      hparams: an hparams instance (default: the agent's defaults); only its structure matters.
      env_params: env params shared by the runs (default: the trainer's).
      mesh: the `"runs"` mesh (default `distributed.runs_mesh()`).

    Returns:
      A `MemoryEstimate` (print it for a one-line summary).
    """
    mesh = dist.runs_mesh() if mesh is None else mesh
    devices = mesh.size
    runs = dist.valid_run_counts(int(num_runs), devices)[1]
    hparams = trainer.agent.default_hparams() if hparams is None else hparams
    key_struct = jax.ShapeDtypeStruct((runs, 2), jnp.uint32)
    hp_struct = jax.tree.map(lambda _: jax.ShapeDtypeStruct((runs,), jnp.float32), hparams)
    one = jax.eval_shape(
        dist.vmapped_train(trainer),
        jax.ShapeDtypeStruct((1, 2), jnp.uint32),
        jax.tree.map(lambda _: jax.ShapeDtypeStruct((1,), jnp.float32), hparams),
        env_params,
    )
    state_bytes = sum(int(np.prod(x.shape)) * x.dtype.itemsize for x in jax.tree.leaves(one))
    fn = dist.sharded_train(trainer, mesh, env_params)
    compiled = fn.lower(key_struct, hp_struct).compile()
    peak = None
    try:
        stats = compiled.memory_analysis()
    except (NotImplementedError, RuntimeError, AttributeError):
        stats = None
    if stats is not None:
        peak = int(
            stats.argument_size_in_bytes
            + stats.output_size_in_bytes
            + stats.temp_size_in_bytes
            - stats.alias_size_in_bytes
        )
    return MemoryEstimate(runs, devices, state_bytes, peak, compiled)


# ----------------------------------------------------------------------------- running


def run_runs(
    trainer: Trainer,
    keys: Any,
    hparams: Any,
    env_params: Any = None,
    mesh: Any = None,
    max_memory_bytes: int | None = None,
    runs_per_call: int | None = None,
    verbose: bool = True,
) -> tuple[Any, dict[str, np.ndarray]]:
    """Train `R` independent runs as calls of ONE compiled, sharded program; host results.

    Args:
      trainer: from `make_train`.
      keys: `[R, 2]` PRNG keys (`jax.random.PRNGKey` style), one per run.
      hparams: hparams pytree with leaves `[R]`, one row per run.
      env_params: env params shared by the runs (default: the trainer's).
      mesh: `"runs"` mesh to shard over (default: every device).
      max_memory_bytes: per-device budget of one call (default `default_memory_budget`).
      runs_per_call: runs per call (rounded up to a multiple of the device count); by default
        all runs if the estimate fits the budget, else as many as fit.
      verbose: print the memory estimate and the calls.

    Returns:
      `(states, metrics)`: numpy pytrees with leading axis `[R]` (metrics `[R, U]`), the same
      on every process.
    """
    mesh = dist.runs_mesh() if mesh is None else mesh
    if jax.dtypes.issubdtype(jnp.asarray(keys).dtype, jax.dtypes.prng_key):
        keys = jax.random.key_data(keys)  # typed keys -> raw uint32 [R, 2]
    keys = np.asarray(keys)
    num_runs = int(keys.shape[0])
    hparams = jax.tree.map(lambda x: np.asarray(x, np.float32), hparams)
    devices = mesh.size
    say = print if verbose and jax.process_index() == 0 else (lambda *a, **k: None)
    template = jax.tree.map(lambda x: x[0], hparams)
    if runs_per_call is not None:
        if int(runs_per_call) < 1:
            raise ValueError(f"runs_per_call must be >= 1, got {runs_per_call}")
        per_call = dist.valid_run_counts(min(int(runs_per_call), num_runs), devices)[1]
        estimate = estimate_memory(trainer, per_call, template, env_params, mesh)
        say(estimate)
    else:
        budget = default_memory_budget(mesh) if max_memory_bytes is None else max_memory_bytes
        per_call = dist.valid_run_counts(num_runs, devices)[1]
        estimate = estimate_memory(trainer, per_call, template, env_params, mesh)
        say(f"{estimate}; budget {_fmt(budget)} per device")
        per_device = per_call // devices
        if estimate.bytes_per_run * per_device > budget:
            fit = max(1, int(budget // estimate.bytes_per_run))
            if estimate.bytes_per_run > budget:
                raise cfg.ConfigError(
                    f"One run needs about {_fmt(estimate.bytes_per_run)} of device memory, more "
                    f"than the budget {_fmt(budget)} per device; use fewer envs or a smaller "
                    "model, or --max-memory to raise the budget. Nothing was run or written."
                )
            per_call = fit * devices
            say(
                f"{num_runs} runs do not fit in one call: {per_call} runs per call "
                f"({fit} per device), {math.ceil(num_runs / per_call)} calls of one program"
            )
            estimate = estimate_memory(trainer, per_call, template, env_params, mesh)
    compiled = estimate.compiled
    padded = math.ceil(num_runs / per_call) * per_call
    if padded != num_runs:
        say(f"{num_runs} runs padded to {padded} (calls of {per_call} on {devices} device(s))")
    outs = []
    num_calls = math.ceil(num_runs / per_call)
    for c in range(num_calls):
        lo, hi = c * per_call, min(num_runs, (c + 1) * per_call)
        chunk_keys, chunk_hp = dist.pad_runs(
            jax.tree.map(lambda x, lo=lo, hi=hi: x[lo:hi], (keys, hparams)), per_call
        )
        start = time.perf_counter()
        out = compiled(dist.shard_runs(chunk_keys, mesh), dist.shard_runs(chunk_hp, mesh))
        out = jax.tree.map(lambda x, n=hi - lo: x[:n], dist.gather(out))
        if num_calls > 1:
            say(
                f"call {c + 1}/{num_calls}: runs {lo}-{hi - 1} in {time.perf_counter() - start:.1f}s"
            )
        outs.append(out)
    if len(outs) == 1:
        return outs[0]
    return jax.tree.map(lambda *xs: np.concatenate(xs, axis=0), *outs)


# ----------------------------------------------------------------------------- sweeps


@dataclasses.dataclass
class SweepResult:
    """The outcome of `run_sweep`.

    Attributes:
      run_dir: the run directory (None when nothing was written).
      settings: the `G` swept settings (dicts name -> value), in result order.
      seeds: the `S` seeds.
      metrics: name -> `[G, S, U]` arrays.
      states: final `RunnerState` with leading `[G, S]` (numpy).
      final: `[G, S]` final value of the score metric per run (see `score_runs`).
      scores: `[G]` mean of `final` over seeds (NaN-aware); NaN for a setting with a
        non-finite run, so that it ranks last.
      finite: `[G, S]` bool, False where a run produced NaN/inf in a metric or parameter (its
        return is not a result: a NaN policy can score the best possible return).
      best_index: index of the best finite setting (0 if none is).
      best_setting: `settings[best_index]`.
      best_hparams: the full hparams of the best setting.
      metric: the score metric; `mode`: "max" or "min".
    """

    run_dir: str | None
    settings: list[dict[str, float]]
    seeds: list[int]
    metrics: dict[str, np.ndarray]
    states: Any
    final: np.ndarray
    scores: np.ndarray
    best_index: int
    best_setting: dict[str, float]
    best_hparams: Any
    metric: str
    mode: str
    finite: np.ndarray | None = None


def score_runs(values: np.ndarray, window: int = 1) -> np.ndarray:
    """Per-run final score: the mean of the last `window` finite values of `[..., U]` (NaN if none).

    Updates in which no episode ended have NaN returns; they are skipped, as in
    `experiment.final_returns`.
    """
    values = np.asarray(values, np.float64)
    out = np.full(values.shape[:-1], np.nan)
    for idx in np.ndindex(*values.shape[:-1]):
        finite = values[idx][np.isfinite(values[idx])]
        if len(finite):
            out[idx] = finite[-max(1, int(window)) :].mean()
    return out


def best_setting(scores: np.ndarray, mode: str = "max") -> int:
    """Index of the best score (`mode` "max" or "min"); NaN scores rank last."""
    if mode not in ("max", "min"):
        raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
    s = np.asarray(scores, np.float64)
    if not np.isfinite(s).any():
        return 0
    s = np.where(np.isfinite(s), s, -np.inf if mode == "max" else np.inf)
    return int(np.argmax(s) if mode == "max" else np.argmin(s))


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


def run_sweep(
    exp: Any,
    sample: dict[str, Any] | None = None,
    num_samples: int = 0,
    sample_seed: int = 0,
    metric: str = "episode_return",
    mode: str = "max",
    window: int = 1,
    max_memory_bytes: int | None = None,
    runs_per_call: int | None = None,
    mesh: Any = None,
    write: bool = True,
    verbose: bool = True,
) -> SweepResult:
    """Run a hyperparameter sweep x seeds as one compiled program and pick the best setting.

    Args:
      exp: a `marljax.experiment.Experiment`; its `grid` is swept (Cartesian product), its
        `hparams` are the base of every setting, its `seeds`/`seed` the seeds.
      sample: name -> `Uniform`/`LogUniform`/`Choice`/list for a random search.
      num_samples: random draws (with a grid: draws per grid point).
      sample_seed: seed of the random search.
      metric: metric to score settings by (the mean over seeds of each run's final value).
      mode: "max" or "min".
      window: a run's final value is the mean of its last `window` finite values.
      max_memory_bytes: per-device budget of one call (default: from free memory).
      runs_per_call: force runs per call (default: as many as fit).
      mesh: `"runs"` mesh (default: every device of every process).
      write: write the run directory under `exp.out_dir` (process 0 only).
      verbose: print the memory estimate and the ranking.

    Returns:
      A `SweepResult`.

    Raises:
      ConfigError: a static or unknown setting in the sweep (listing what can be swept), or any
        invalid value; raised before anything is compiled or written.
    """
    from marljax import experiment as xp

    if write and exp.name:  # refuse before training, not after the whole sweep has run
        taken = os.path.join(os.path.abspath(exp.out_dir), exp.name, "config.json")
        if os.path.exists(taken):
            raise FileExistsError(
                f"{os.path.dirname(taken)} already holds a run; choose another name"
            )
    sample = dict(sample or {})
    names = [*exp.grid, *sample]
    check_sweepable(exp.algo, names)
    settings = make_settings(exp.grid, sample, num_samples, sample_seed)
    built = xp.build(dataclasses.replace(exp, grid={}))
    base_hp = cfg.replace_checked(algo_spec(exp.algo).hparams_cls(), exp.hparams, "hparams")
    # Values from a CLI or YAML may be strings: record the parsed numbers that are trained.
    settings = [
        {k: getattr(cfg.replace_checked(base_hp, s, "sweep"), k) for k in s} for s in settings
    ]
    hp_grid = stack_settings(base_hp, settings)
    if metric not in _metric_names(built.trainer, base_hp):
        valid = _metric_names(built.trainer, base_hp)
        raise cfg.unknown_key_error(metric, valid, "metric")
    built = dataclasses.replace(built, hparams=hp_grid, settings=settings)

    G, S = len(settings), exp.seeds
    seeds = [exp.seed + s for s in range(S)]
    keys = np.asarray(jax.vmap(jax.random.PRNGKey)(jnp.asarray(seeds)))
    run_keys = np.tile(keys, (G, 1))  # run r = g * S + s
    run_hp = jax.tree.map(lambda x: np.repeat(x, S, axis=0), hp_grid)
    if verbose and jax.process_index() == 0:
        print(f"sweep: {G} settings x {S} seeds = {G * S} runs of {exp.algo} on {exp.env}")
    states, metrics = run_runs(
        built.trainer,
        run_keys,
        run_hp,
        built.env_params,
        mesh,
        max_memory_bytes,
        runs_per_call,
        verbose,
    )
    unflat = lambda x: np.asarray(x).reshape(G, S, *np.shape(x)[1:])  # noqa: E731
    metrics = {k: unflat(v) for k, v in metrics.items()}
    states = jax.tree.map(unflat, states)
    values = metrics[metric]
    if values.ndim > 3:  # per-agent metrics [G, S, U, A]: the mean over agents
        values = values.reshape(*values.shape[:3], -1).mean(-1)
    finite = xp.finite_runs(metrics, states.agent_state)
    final = np.where(finite, score_runs(values, window), np.nan)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a setting with no finite run: NaN
        scores = np.nanmean(final, axis=1) if final.size else final
    scores = np.where(finite.all(axis=1), scores, np.nan)
    best = best_setting(scores, mode)
    best_hp = jax.tree.map(lambda x: float(x[best]), hp_grid)
    result = SweepResult(
        None,
        settings,
        seeds,
        metrics,
        states,
        final,
        scores,
        best,
        settings[best],
        best_hp,
        metric,
        mode,
        finite,
    )
    if verbose and jax.process_index() == 0:
        print(_ranking_text(result))
    if write and jax.process_index() == 0:
        result.run_dir = _write_sweep(exp, built, result, sample, num_samples, sample_seed, window)
        if verbose:
            print(f"run directory: {result.run_dir}")
    return result


def _metric_names(trainer: Trainer, hparams: Any) -> list[str]:
    out = jax.eval_shape(
        lambda k: trainer.run(trainer.init(k, hparams), hparams, None, 1)[1],
        jax.ShapeDtypeStruct((2,), jnp.uint32),
    )
    return sorted(out)


def _label(setting: dict[str, float]) -> str:
    return ",".join(f"{k}={v:g}" for k, v in setting.items()) or "default"


def _ranking_text(result: SweepResult, top: int = 10) -> str:
    order = np.argsort(-result.scores if result.mode == "max" else result.scores, kind="stable")
    order = [int(g) for g in order if np.isfinite(result.scores[g])] + [
        int(g) for g in order if not np.isfinite(result.scores[g])
    ]
    lines = [f"{'rank':>4}  {'score':>10}  setting ({result.metric}, mean over seeds)"]
    for rank, g in enumerate(order[:top], 1):
        mark = ""
        if result.finite is not None and not result.finite[g].all():
            bad = int((~result.finite[g]).sum())
            mark = f"  NON-FINITE in {bad} of {result.finite.shape[1]} seeds (not a result)"
        lines.append(f"{rank:>4}  {result.scores[g]:>10.4f}  {_label(result.settings[g])}{mark}")
    if len(order) > top:
        lines.append(f"      ... {len(order) - top} more in sweep.json")
    return "\n".join(lines)


def _write_sweep(exp, built, result, sample, num_samples, sample_seed, window) -> str:
    from marljax import experiment as xp

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    name = exp.name or f"sweep_{exp.algo}_{exp.env.replace('/', '_')}_{stamp}"
    run_dir = os.path.abspath(os.path.join(exp.out_dir, name))
    spec = {
        "grid": {k: list(v) for k, v in exp.grid.items()},
        "sample": {k: _dist_dict(v) for k, v in sample.items()},
        "num_samples": num_samples,
        "sample_seed": sample_seed,
        "metric": result.metric,
        "mode": result.mode,
        "window": window,
    }
    description = xp.describe(exp, built)
    description["sweep"] = spec
    rundir.create(run_dir, "sweep", xp._static_part(description))
    results.write_json(os.path.join(run_dir, "config.json"), description)
    xp._write_outputs(run_dir, exp, built, result.metrics)
    order = np.argsort(-result.scores if result.mode == "max" else result.scores, kind="stable")
    summary = {
        "metric": result.metric,
        "mode": result.mode,
        "best": {
            "index": result.best_index,
            "setting": result.best_setting,
            "score": _num(result.scores[result.best_index]),
            "hparams": cfg.to_dict(result.best_hparams),
        },
        "ranking": [
            {
                "index": int(g),
                "setting": result.settings[g],
                "score": _num(result.scores[g]),
                "final_per_seed": {
                    f"seed_{s}": _num(v) for s, v in zip(result.seeds, result.final[g])
                },
                "non_finite_seeds": [s for s, ok in zip(result.seeds, result.finite[g]) if not ok],
            }
            for g in order
        ],
    }
    results.write_json(os.path.join(run_dir, "sweep.json"), summary)
    try:
        xp._write_plot(run_dir, exp, built, result.metrics)
    except ImportError:  # matplotlib is an optional extra
        pass
    return run_dir


def _dist_dict(d: Any) -> dict[str, Any]:
    d = _checked(d, "sample")
    if isinstance(d, Choice):
        return {"choice": list(d.values)}
    return {"distribution": type(d).__name__, "low": d.low, "high": d.high}


def _num(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


__all__ = [
    "Choice",
    "LogUniform",
    "MemoryEstimate",
    "SweepResult",
    "Uniform",
    "best_setting",
    "check_sweepable",
    "default_memory_budget",
    "estimate_memory",
    "grid_settings",
    "make_settings",
    "parse_bytes",
    "parse_distribution",
    "random_settings",
    "run_runs",
    "run_sweep",
    "score_runs",
    "stack_settings",
]
