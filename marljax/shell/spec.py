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
from marljax.shell import space
from marljax.training import execute as ex
from marljax.training.train import TrainConfig

DEFAULT_ENV = "matrix/climbing-v0"


#: version of config.json's layout; a newer file is refused with a clear message.
CONFIG_VERSION = 2


_DEFAULT_TRAIN = TrainConfig(num_envs=16, rollout_len=8, total_env_steps=40_960, eval_interval=-1)


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
      sample: hyperparameter name -> distribution (`marljax.shell.space.LogUniform` etc., or a CLI
        string such as `"log:1e-4:1e-2"`); `num_samples` draws per grid point, `sample_seed`.
      metric, mode, window: how a sweep ranks settings (the mean over seeds of each run's mean
        of its last `window` finite values of `metric`; `mode` "max" or "min").
      chunk_updates: updates per compiled chunk (0: about 20 chunks per run).
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
        (`marljax.population.make_pool_training`).
      log: loggers besides the run directory's `progress.csv`: "tensorboard" (event files in
        `<run dir>/tensorboard`) and/or "wandb" (a Weights & Biases run named after the run
        directory; `WANDB_MODE=offline` works without an account). See `marljax.shell.loggers`.

    Every value is parsed and validated here: a `ConfigError` names the key. The resolved
    algorithm config and base hparams are `agent_config` and `base_hparams`.
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
        for key in ("env_kwargs", "agent", "hparams", "grid", "sample"):
            value = getattr(self, key)
            if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
                raise cfg.ConfigError(f"{key} must be a mapping of name: value, got {value!r}")
        if self.name is not None and (
            not isinstance(self.name, str) or not self.name.strip()
            or os.sep in self.name or "/" in self.name or self.name in (".", "..")
        ):  # fmt: skip
            raise cfg.ConfigError(
                f"name must be a plain directory name (use out_dir for the folder), got "
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
        self._resolve()

    def _resolve(self) -> None:
        """Parse every override against the algorithm's classes (once, here)."""
        spec = algo_spec(self.algo)
        preset = None if self.preset is None else _preset(self.algo, self.preset)
        config = spec.config_cls(**spec.config_defaults)
        hparams = spec.hparams_cls()
        train = _DEFAULT_TRAIN
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
        object.__setattr__(self, "_resolved", (config, hparams, settings))

    @property
    def agent_config(self) -> Any:
        """The algorithm's static config: defaults, then the preset, then `agent`."""
        return self._resolved[0]

    @property
    def base_hparams(self) -> Any:
        """The algorithm's hparams: defaults, then the preset, then `hparams`."""
        return self._resolved[1]

    @property
    def settings(self) -> list[dict[str, float]]:
        """The `G` swept settings (grid x sample draws; `[{}]` without a sweep)."""
        return self._resolved[2]

    @property
    def updates_per_chunk(self) -> int:
        n = self.train.num_updates
        return self.chunk_updates if self.chunk_updates > 0 else max(1, -(-n // 20))

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (`config.json`'s "experiment"; `from_dict` reads it back)."""
        out = {f.name: cfg.to_dict(getattr(self, f.name)) for f in dataclasses.fields(self)}
        out["sample"] = {k: space.distribution_dict(v) for k, v in self.sample.items()}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Experiment:
        """An `Experiment` from a JSON/YAML-like mapping: an experiment, or a whole run
        directory's `config.json` (its "experiment"). Unknown keys raise a `ConfigError` with
        the close matches; a config.json of a newer format is refused."""
        data = experiment_mapping(data)
        valid = cfg.field_names(cls)
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


def _preset(algo: str, name: str) -> Any:
    try:
        return preset(algo, name)
    except KeyError as err:
        raise cfg.ConfigError(err.args[0] if err.args else str(err)) from None


__all__ = ["experiment_mapping", "CONFIG_VERSION", "DEFAULT_ENV", "Experiment", "LOGGERS"]
