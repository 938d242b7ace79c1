"""The experiment spec: one typed description of a run (`Experiment`), checked when constructed.

Every CLI or JSON string is parsed to its field's type and range-checked; the algorithm's config
and hparams are resolved from its defaults, a named preset and the overrides; `to_dict` /
`from_dict` are the `--config` file. `marljax.shell.build` makes the env, agent and trainer
from it; `marljax.shell.experiment.run_experiment` runs it.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np

from marljax.agents import algo_spec, preset
from marljax.core import config as cfg
from marljax.training import execute as ex
from marljax.training import space, tune
from marljax.training.train import TrainConfig

DEFAULT_ENV = "matrix/climbing-v0"


#: version of config.json's layout; a newer file is refused with a clear message.
CONFIG_VERSION = 2


#: The train defaults of a run from the shell: `TrainConfig`'s own (the library's one set of
#: defaults, which presets and `bench/` build on too), with the in-program greedy evaluation on
#: (about 10 per run; training is bit for bit the same with or without it).
DEFAULT_TRAIN = TrainConfig(eval_interval=-1)


#: optional loggers of `Experiment.log` -> the package each needs.
LOGGERS = {"tensorboard": "tensorboardX", "wandb": "wandb"}


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One experiment: algorithm x env x hparams settings (grid x random sample) x seeds.

    Attributes:
      algo: registered algorithm name (`marljax.agents.ALGORITHMS`).
      env: registered env id (`jaxmarl/<name>` for JaxMARL's envs).
      env_kwargs: env overrides (static constructor args or params fields).
      preset: a named published configuration of the algorithm (`marljax.agents.presets`),
        applied under `agent`, `hparams` and `train`.
      seeds: number of seeds `S`; `seed`: the base seed (run `s` uses `PRNGKey(seed + s)`).
      train: static run configuration (a `TrainConfig` or a mapping of its fields).
      agent: overrides of the algorithm's static config (e.g. `{"recurrent": True}`).
      hparams: overrides of the algorithm's traced hyperparameters (e.g. `{"lr": 3e-4}`).
      grid: hyperparameter name -> list of values; the Cartesian product is swept.
      sample: hyperparameter name -> distribution (`marljax.training.space.LogUniform` etc., or a CLI
        string such as `"log:1e-4:1e-2"`); `num_samples` draws per grid point, `sample_seed`.
      metric, mode, window: how a sweep ranks settings (the mean over seeds of each run's mean
        of its last `window` finite values of `metric`; `mode` "max" or "min").
      chunk_updates: updates per compiled chunk (0: about 20 chunks per run, of one size where
        the run's update count allows it: `auto_chunk`).
      devices: devices to use (None: every device); `layout`: "runs" (runs sharded over the
        devices) or "envs" (each run's envs and learner split over them).
      out_dir: parent folder of run directories; `name`: the run directory's name (default
        `<algo>_<env>_<timestamp>`), a plain name.
      checkpoint: write checkpoints between chunks.
      check_finite: stop at the first NaN/inf metric or parameter before it is checkpointed (a
        diverged policy can look perfect); a choice of each invocation, not of the run.
      opponents: train against scripted co-players instead of learning every seat: a pool
        written `"pool:NAME[=WEIGHT],..."` (`marljax.population.parse_pool`; names of
        `marljax.envs.matrix.strategies.STRATEGIES`), a member drawn per episode. The env must
        be a two-player repeated matrix game; the algorithm learns agent 0
        (`marljax.population.make_pool_training`). With `league`, the pool's strategies join
        the league's pool as fixed members (`league.fixed_share` of the episodes).
      league: train a league on a two-sided env (`marljax.population.league`): the fields of
        `LeagueConfig` (`{"rule": "pfsp", "capacity": 8, ...}`); the algorithm learns team 0
        against its own snapshots (rule `self`: against itself).
      tune: tune while training (a sweep of `sample` draws, each seed its own population with
        its own draws; `marljax.shell.tune`): `{"method": "pbt", "interval": N, ...}` (the
        fields of `marljax.training.tune.PBT`), `{"method": "halving", "rungs": [...],
        "keep": F}` (`Halving`) or `{"method": "random"}` (the same draws, no tuning: the
        random-search baseline); `"metric"` ranks the runs (default: the greedy evaluation's
        task score, such as the win rate, or its return).
      log: loggers besides the run directory's `progress.csv`: "tensorboard" (event files in
        `<run dir>/tensorboard`) and/or "wandb" (a Weights & Biases run named after the run
        directory; `WANDB_MODE=offline` works without an account). See `marljax.shell.loggers`.

    Resolved once, when constructed (every value parsed and validated; a `ConfigError` names the
    key), and typed from then on:
      agent_config: the algorithm's static config: its defaults, then the preset, then `agent`.
      base_hparams: its hparams: defaults, then the preset, then `hparams`.
      settings: the `G` swept settings (grid x sample draws; `[{}]` without a sweep).
      train: a `TrainConfig`: `DEFAULT_TRAIN`, then the preset's, then `train`.
    `agent` and `hparams` keep only the overrides (parsed), so `to_dict` records what was asked.
    """

    algo: str = "mappo"
    env: str = DEFAULT_ENV
    env_kwargs: dict = dataclasses.field(default_factory=dict)
    preset: str | None = None
    seeds: int = 4
    seed: int = 0
    train: TrainConfig | dict | None = None
    agent: dict = dataclasses.field(default_factory=dict)
    hparams: dict = dataclasses.field(default_factory=dict)
    grid: dict = dataclasses.field(default_factory=dict)
    sample: dict = dataclasses.field(default_factory=dict)
    num_samples: int = 0
    sample_seed: int = 0
    metric: str = "episode_return"
    mode: str = "max"
    window: int = 1
    chunk_updates: int = 0
    devices: int | None = None
    layout: str = "runs"
    out_dir: str = "runs"
    name: str | None = None
    checkpoint: bool = True
    check_finite: bool = True
    log: tuple = ()
    opponents: str | None = None
    league: dict | None = None
    tune: dict = dataclasses.field(default_factory=dict)
    # resolved once, in __post_init__, from the fields above (not arguments, not in to_dict)
    agent_config: Any = dataclasses.field(init=False, repr=False, compare=False)
    base_hparams: Any = dataclasses.field(init=False, repr=False, compare=False)
    settings: list = dataclasses.field(init=False, repr=False, compare=False)
    league_config: Any = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self):
        for key in ("algo", "env", "out_dir", "metric"):
            if not isinstance(getattr(self, key), str):
                raise cfg.ConfigError(f"{key} must be a string, got {getattr(self, key)!r}")
        ints = ("seeds", "seed", "chunk_updates", "num_samples", "sample_seed", "window")
        for key in ints:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise cfg.ConfigError(f"{key} must be an integer, got {value!r}")
            if not -(2**31) <= int(value) < 2**31:
                raise cfg.ConfigError(f"{key} must fit in a 32-bit integer, got {value!r}")
        for key, low in (("seeds", 1), ("chunk_updates", 0), ("num_samples", 0), ("window", 1)):
            if getattr(self, key) < low:
                raise cfg.ConfigError(f"{key} must be >= {low}, got {getattr(self, key)}")
        if self.preset is not None and not isinstance(self.preset, str):
            raise cfg.ConfigError(f"preset must be a preset name, got {self.preset!r}")
        for key in ("checkpoint", "check_finite"):
            if not isinstance(getattr(self, key), (bool, np.bool_)):
                raise cfg.ConfigError(f"{key} must be a boolean, got {getattr(self, key)!r}")
        if self.mode not in ("max", "min"):
            raise cfg.ConfigError(f"mode must be 'max' or 'min', got {self.mode!r}")
        if self.layout not in ex.LAYOUTS:
            raise cfg.ConfigError(f"layout must be one of {list(ex.LAYOUTS)}, got {self.layout!r}")
        if self.devices is not None and (
            isinstance(self.devices, bool) or not isinstance(self.devices, (int, np.integer))
            or self.devices < 1
        ):  # fmt: skip
            raise cfg.ConfigError(f"devices must be a positive integer, got {self.devices!r}")
        for key in ("env_kwargs", "agent", "hparams", "grid", "sample", "tune"):
            value = getattr(self, key)
            if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
                raise cfg.ConfigError(f"{key} must be a mapping of name: value, got {value!r}")
        if self.name is not None and (
            not isinstance(self.name, str) or not self.name.strip()
            or os.sep in self.name or "/" in self.name or self.name in (".", "..")
            or not self.name.isprintable()
        ):  # fmt: skip
            raise cfg.ConfigError(
                f"name must be a plain directory name, printable characters without a path "
                f"separator (use out_dir for the folder), got "
                f"{self.name!r}"
            )
        log = (self.log,) if isinstance(self.log, str) else self.log
        if not isinstance(log, (list, tuple)) or any(x not in LOGGERS for x in log):
            raise cfg.ConfigError(f"log must be a list of {list(LOGGERS)}, got {self.log!r}")
        object.__setattr__(self, "log", tuple(dict.fromkeys(log)))
        if self.opponents is not None:
            from marljax.population.pool import parse_pool

            try:  # names and weights checked before anything is built
                parse_pool(self.opponents)
            except cfg.ConfigError as err:
                raise cfg.ConfigError(f"opponents: {err}") from None
        if self.league is not None:
            if not isinstance(self.league, dict):
                raise cfg.ConfigError(
                    f"league must be a mapping of name: value, got {self.league!r}"
                )
            if self.layout == "envs":
                raise cfg.ConfigError("a league trains with layout 'runs' (its pool is per run)")
        self._resolve()

    def _resolve(self) -> None:
        """Parse every override against the algorithm's classes (once, here)."""
        spec = algo_spec(self.algo)
        preset = None if self.preset is None else _preset(self.algo, self.preset)
        config = spec.config_cls(**spec.config_defaults)
        hparams = spec.hparams_cls()
        train = DEFAULT_TRAIN
        if preset is not None:
            config = cfg.replace_checked(config, dict(preset.config), f"preset {self.preset}")
            hparams = cfg.replace_checked(hparams, dict(preset.hparams), f"preset {self.preset}")
            extra = dict(getattr(preset, "train", None) or {})
            train = cfg.replace_checked(train, extra, f"preset {self.preset}")
        config = cfg.replace_checked(config, self.agent, "agent")
        hparams = cfg.replace_checked(hparams, self.hparams, "hparams")
        if isinstance(self.train, dict):
            train = cfg.replace_checked(train, self.train, "train")
        elif self.train is not None:
            if not isinstance(self.train, TrainConfig):
                raise cfg.ConfigError(
                    f"train must be a TrainConfig or a mapping, got {self.train!r}"
                )
            train = self.train
        try:
            space.check_sweepable(self.algo, [*self.grid, *self.sample])
        except cfg.ConfigError as err:  # name where the key came from
            where = "grid" if set(self.grid) - set(cfg.field_names(hparams)) else "sample"
            raise cfg.ConfigError(f"{where}: {err}") from None
        grid = {}
        for key, values in self.grid.items():
            if isinstance(values, str):
                values = [v for v in values.split(",") if v.strip()]
            if not isinstance(values, (list, tuple)) or len(values) == 0:
                raise cfg.ConfigError(
                    f"grid.{key} must be a non-empty list of values, got {values!r}"
                )
            grid[key] = [
                getattr(cfg.replace_checked(hparams, {key: v}, "grid"), key) for v in values
            ]
        sample = {k: space.as_distribution(v, k) for k, v in self.sample.items()}
        if sample and self.num_samples < 1:
            raise cfg.ConfigError("a random sample needs num_samples >= 1 (--num-samples N)")
        settings = space.make_settings(grid, sample, self.num_samples, self.sample_seed)
        # The recorded settings are the parsed numbers that are trained.
        settings = [
            {k: getattr(cfg.replace_checked(hparams, s, "sweep"), k) for k in s} for s in settings
        ]
        parsed = lambda obj, over: {k: getattr(obj, k) for k in over}  # noqa: E731
        object.__setattr__(self, "agent", parsed(config, self.agent))
        object.__setattr__(self, "hparams", parsed(hparams, self.hparams))
        object.__setattr__(self, "train", train)
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "sample", sample)
        object.__setattr__(self, "tune", _tune_spec(self.tune, grid, sample))
        if self.tune:  # each population draws its own settings (marljax.shell.tune): the G
            settings = [{} for _ in range(self.num_samples)]  # slots start from the base here
        object.__setattr__(self, "agent_config", config)
        object.__setattr__(self, "base_hparams", hparams)
        object.__setattr__(self, "settings", settings)
        league = None
        if self.league is not None:
            from marljax.population.league import LeagueConfig, validate_league

            over = {k: v for k, v in self.league.items() if k != "num_envs"}
            league = cfg.replace_checked(LeagueConfig(num_envs=train.num_envs), over, "league")
            validate_league(league)
            object.__setattr__(self, "league", {k: getattr(league, k) for k in over})
        object.__setattr__(self, "league_config", league)

    @property
    def tuning(self) -> Any:
        """The `marljax.training.tune.PBT` / `Halving` of `tune` (None: no tuning or "random")."""
        return tuning_method(self.tune)

    @property
    def updates_per_chunk(self) -> int:
        """`chunk_updates`, or when 0 `auto_chunk(num_updates)` (with `tune`, a size whose ends
        include every step of the tuner)."""
        n = self.train.num_updates
        if self.chunk_updates > 0:
            return self.chunk_updates
        method = self.tuning
        return auto_chunk(n) if method is None else tune.chunk_for(method, n)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (`config.json`'s "experiment"; `from_dict` reads it back)."""
        out = cfg.to_dict(self)
        out["sample"] = {k: space.distribution_dict(v) for k, v in self.sample.items()}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Experiment:
        """An `Experiment` from a JSON/YAML-like mapping: an experiment, or a whole run
        directory's `config.json` (its "experiment"). Unknown keys raise a `ConfigError` with
        the close matches; a config.json of a newer format is refused."""
        data = experiment_mapping(data)
        valid = _arguments(cls)
        for key in data:
            if key not in valid:
                raise cfg.unknown_key_error(str(key), valid, "experiment")
        values = dict(data)
        ints = ("seeds", "seed", "chunk_updates", "num_samples", "sample_seed", "window")
        scalars = {k: values.pop(k) for k in (*ints, "checkpoint", "check_finite") if k in values}
        base = cfg.replace_checked(_Scalars(), scalars, "experiment")
        values.update({k: getattr(base, k) for k in scalars})
        try:
            return cls(**values)
        except TypeError as err:
            raise cfg.ConfigError(f"Invalid experiment: {err}") from err

    @classmethod
    def loads(cls, text: str) -> Experiment:
        """`from_dict` of a JSON or YAML text."""
        return cls.from_dict(cfg.loads(text, "experiment"))

    def replace(self, **changes: Any) -> Experiment:
        """A copy with `changes` (validated again)."""
        return dataclasses.replace(self, **changes)


TUNE_METHODS = ("pbt", "halving", "random")


def tuning_method(spec: dict) -> Any:
    """The `PBT` or `Halving` of an experiment's `tune` mapping (None: none, or "random")."""
    if not spec or spec["method"] == "random":
        return None
    kwargs = {k: v for k, v in spec.items() if k not in ("method", "metric")}
    kind = tune.PBT if spec["method"] == "pbt" else tune.Halving
    names = [f.name for f in dataclasses.fields(kind)]
    for key in kwargs:
        if key not in names:
            raise cfg.unknown_key_error(key, [*names, "metric"], f"tune ({spec['method']})")
    try:
        return kind(**kwargs)
    except TypeError as err:
        raise cfg.ConfigError(f"tune ({spec['method']}): {err}") from None


def _tune_spec(spec: dict, grid: dict, sample: dict) -> dict:
    """`Experiment.tune` checked (its method built once, to validate it)."""
    if not spec:
        return {}
    method = spec.get("method")
    if method not in TUNE_METHODS:
        raise cfg.ConfigError(f"tune.method must be one of {list(TUNE_METHODS)}, got {method!r}")
    metric = spec.get("metric")
    if metric is not None and not isinstance(metric, str):
        raise cfg.ConfigError(f"tune.metric must be a metric name, got {metric!r}")
    if grid:
        raise cfg.ConfigError(
            "tune draws its settings from sample (each seed its own draws); a grid cannot be "
            "tuned: give the values as sample NAME=choice:V1,V2,..."
        )
    if not sample:
        raise cfg.ConfigError(
            f"tune ({method}) needs hyperparameters with declared ranges to draw and explore: "
            "sample NAME=log:LOW:HIGH (--sample) and num_samples >= 2"
        )
    spec = dict(spec)
    for key in ("rungs", "perturb"):
        if isinstance(spec.get(key), str):
            try:
                spec[key] = [float(x) for x in spec[key].replace("/", ",").split(",") if x]
            except ValueError:
                raise cfg.ConfigError(f"tune.{key}: expected numbers, got {spec[key]!r}") from None
    for key in ("interval", "window"):
        if isinstance(spec.get(key), str) and spec[key].strip().lstrip("-").isdigit():
            spec[key] = int(spec[key])
    for key in ("fraction", "resample", "keep"):
        if isinstance(spec.get(key), str):
            try:
                spec[key] = float(spec[key])
            except ValueError:
                raise cfg.ConfigError(f"tune.{key}: expected a number, got {spec[key]!r}") from None
    for key in ("rungs", "perturb"):
        if key in spec:
            spec[key] = list(spec[key])
    tuning_method(spec)
    return spec


def auto_chunk(num_updates: int, target: int = 20, most: int = 40) -> int:
    """Updates per chunk for a run of `num_updates`: about `target` chunks, all of one size.

    A chunk size that divides the run means one compiled program for every chunk; a shorter last
    chunk would compile a second one (tens of seconds on a CPU). So: among the chunk counts from
    5 (or `num_updates`, if fewer) to `most` that divide `num_updates`, the one closest to
    `target` (the larger chunk on a tie); when there is none (e.g. a prime number of updates
    over `most`), `ceil(num_updates / target)` with a shorter last chunk, so that progress and
    checkpoints still come about `target` times.
    """
    n = max(1, int(num_updates))
    counts = [c for c in range(min(n, 5), min(n, most) + 1) if n % c == 0]
    if not counts:
        return -(-n // target)
    return n // min(counts, key=lambda c: (abs(c - target), c))


def experiment_mapping(data: Any) -> dict[str, Any]:
    """The experiment mapping of an experiment or of a run directory's whole `config.json` (its
    "experiment", after checking the file's format version), without building anything.

    Raises:
      ConfigError: not a mapping, or a config.json of a newer format than this marljax reads.
    """
    if not isinstance(data, dict):
        raise cfg.ConfigError(f"an experiment must be a mapping, got {type(data).__name__}")
    if "experiment" not in data:
        return data
    version = data.get("format_version", 1)
    if not isinstance(version, int) or version > CONFIG_VERSION:
        raise cfg.ConfigError(
            f"config format_version {version!r} is newer than this marljax reads "
            f"({CONFIG_VERSION}); upgrade marljax"
        )
    if not isinstance(data["experiment"], dict):
        raise cfg.ConfigError("config.json's 'experiment' must be a mapping")
    return data["experiment"]


@dataclasses.dataclass(frozen=True)
class _Scalars:
    """The scalar fields of `Experiment`, for parsing them from strings (`from_dict`)."""

    seeds: int = 4
    seed: int = 0
    chunk_updates: int = 0
    num_samples: int = 0
    sample_seed: int = 0
    window: int = 1
    checkpoint: bool = True
    check_finite: bool = True


def _arguments(cls_or_obj: Any) -> list[str]:
    """The fields an `Experiment` is written with (not the ones it resolves)."""
    return [f.name for f in dataclasses.fields(cls_or_obj) if f.init]


def _preset(algo: str, name: str) -> Any:
    try:
        return preset(algo, name)
    except KeyError as err:
        raise cfg.ConfigError(err.args[0] if err.args else str(err)) from None


__all__ = [
    "experiment_mapping",
    "CONFIG_VERSION",
    "DEFAULT_ENV",
    "DEFAULT_TRAIN",
    "Experiment",
    "LOGGERS",
]
