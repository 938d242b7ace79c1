"""Experiments: one typed description of a run, built once, executed by `marljax.execute`.

`run_experiment(Experiment(...))` is what `marljax train` and `marljax sweep` call. The
experiment is validated and resolved when it is constructed (every CLI or JSON string parsed
to its field's type and range-checked; the algorithm's config and hparams resolved from its
defaults, a named preset and the overrides); `build` makes the env, agent and trainer once;
`marljax.execute.execute` trains every (setting, seed) run in chunks with the run directory's
callbacks between chunks (finiteness check, metrics, checkpoint, progress). A run directory:

    manifest.json        kind (train / sweep), format version, hash of the static config
    config.json          the experiment (a valid `--config`), resolved configs, hparams, seeds,
                         package versions, git commit
    metrics.json         marl-eval JSON (training-episode returns per update, per seed)
    metrics.npz          every metric as arrays [G, S, U]
    sweep.json           (sweeps) settings ranked by score, the best setting
    learning_curve.png   mean return over seeds with a 95% bootstrap CI band, per setting, and
                         the env's reference returns; a panel per task score (SMAX win rate)
    progress.csv         one line per chunk (marljax.loggers.CSVLogger); tensorboard/ with
                         log=["tensorboard"]; eval.json after `marljax eval`
    checkpoints/         orbax checkpoints of every run's training carry

`run_experiment(exp, resume=RUN_DIR)` continues from the newest complete checkpoint (a sweep
too); a changed static configuration is refused with the differences named, except a larger
`train.total_env_steps` (extending a finished run) and, when allowed, the hyperparameters.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import importlib.metadata
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marljax import config as cfg
from marljax import execute as ex
from marljax import results, rundir
from marljax.agents import algo_spec
from marljax.checkpoint import Checkpointer
from marljax.core.registry import env_references, make
from marljax.rollout import score_label, task_metric_names
from marljax.train import TrainConfig, make_train

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
      sample: hyperparameter name -> distribution (`marljax.sweep.LogUniform` etc., or a CLI
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
        directory; `WANDB_MODE=offline` works without an account). See `marljax.loggers`.

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
        from marljax import sweep

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
            sweep.check_sweepable(self.algo, [*self.grid, *self.sample])
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
        sample = {k: sweep.as_distribution(v, k) for k, v in self.sample.items()}
        if sample and self.num_samples < 1:
            raise cfg.ConfigError("a random sample needs num_samples >= 1 (--num-samples N)")
        settings = sweep.make_settings(grid, sample, self.num_samples, self.sample_seed)
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
        from marljax import sweep

        out = {f.name: cfg.to_dict(getattr(self, f.name)) for f in dataclasses.fields(self)}
        out["sample"] = {k: sweep.distribution_dict(v) for k, v in self.sample.items()}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Experiment:
        """An `Experiment` from a JSON/YAML-like mapping: an experiment, or a whole run
        directory's `config.json` (its "experiment"). Unknown keys raise a `ConfigError` with
        the close matches; a config.json of a newer format is refused."""
        if not isinstance(data, dict):
            raise cfg.ConfigError(f"an experiment must be a mapping, got {type(data).__name__}")
        if "experiment" in data:  # a run directory's config.json
            version = data.get("format_version", 1)
            if not isinstance(version, int) or version > CONFIG_VERSION:
                raise cfg.ConfigError(
                    f"config format_version {version!r} is newer than this marljax reads "
                    f"({CONFIG_VERSION}); upgrade marljax"
                )
            data = data["experiment"]
            if not isinstance(data, dict):
                raise cfg.ConfigError("config.json's 'experiment' must be a mapping")
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
    from marljax.agents.presets import preset

    try:
        return preset(algo, name)
    except KeyError as err:
        raise cfg.ConfigError(err.args[0] if err.args else str(err)) from None


@dataclasses.dataclass
class Built:
    """Everything resolved from an `Experiment` before compiling (`build`, once per command)."""

    exp: Experiment
    env: Any
    env_params: Any
    agent: Any
    agent_config: Any
    hparams: Any  # stacked [G]
    settings: list[dict]
    trainer: Any
    #: host bytes of one run's state (kept between chunks, with every update's metrics).
    state_bytes_per_run: int = 0


def build(exp: Experiment) -> Built:
    """Make the env, agent and trainer of `exp` (clear errors; compiles nothing)."""
    from marljax import sweep

    env, env_params = make(exp.env, **exp.env_kwargs)
    _check_env_params(exp.env, env_params, env.default_params())
    if exp.opponents is None:
        agent = algo_spec(exp.algo).factory(exp.agent_config, env, env_params)
        trainer = make_train(exp.train, env, agent, env_params)
    else:  # one learner (agent 0) against a pool of scripted co-players
        from marljax.population.pool import make_pool_training, pool_from_spec

        num_actions = getattr(env.action_space(env_params), "n", 0)
        strategies, weights = pool_from_spec(exp.opponents, num_actions)
        pool = make_pool_training(
            env, strategies, exp.train, exp.algo, exp.agent_config, env_params, weights
        )
        env, agent, trainer = pool.env, pool.agent, pool.trainer
    try:  # trace (not compile) the initial state: errors from inside the agent surface here
        state = jax.eval_shape(trainer.init, jax.random.PRNGKey(0), exp.base_hparams, env_params)
    except (ValueError, TypeError, KeyError) as err:
        raise cfg.ConfigError(
            f"Invalid configuration for {exp.algo} on {exp.env} (agent {exp.agent}): {err}"
        ) from err
    if exp.metric not in RUNNER_METRICS:  # any other metric: trace one update to look for it
        check_metric(exp, _run_shapes(trainer, exp.base_hparams)[1])
    hparams = sweep.stack_settings(exp.base_hparams, exp.settings)
    return Built(
        exp, env, env_params, agent, exp.agent_config, hparams, exp.settings, trainer,
        _nbytes(state),
    )  # fmt: skip


#: metrics every trainer of `marljax.train.make_train` reports (`build` checks any other
#: `Experiment.metric` by tracing one update).
RUNNER_METRICS = ("episode_return", "episode_length", "env_steps")


def check_metric(exp: Experiment, metrics: dict) -> None:
    """Raise `ConfigError` naming the valid ones if `exp.metric` is not among `metrics`."""
    if exp.metric not in metrics:
        raise cfg.unknown_key_error(exp.metric, sorted(metrics), "metric")


def _nbytes(tree: Any) -> int:
    return sum(math.prod(x.shape) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree))


def check_host_memory(
    built: Built, available: int | None = None, metrics: dict | None = None
) -> None:
    """Refuse `R = settings x seeds` runs whose states and metrics would not fit in the host's
    memory, before anything is allocated (e.g. `--seeds 2000000000`).

    Args:
      built: the experiment.
      available: host bytes available (default: what the OS reports).
      metrics: the shapes of one update's metrics of one run (what `marljax.execute.execute`
        passes to its `check`); default: a lower bound, one float32 per `RUNNER_METRICS`
        name (`run_experiment` checks again with the traced shapes before compiling).

    Raises:
      ConfigError: with the numbers and the knobs to turn.
    """
    exp = built.exp
    per_update = 4 * len(RUNNER_METRICS) if metrics is None else _nbytes(metrics)
    per_run = built.state_bytes_per_run + per_update * exp.train.num_updates
    runs = len(built.settings) * exp.seeds
    need = runs * per_run
    available = ex._host_available_bytes() if available is None else available
    if need > available:
        raise cfg.ConfigError(
            f"{len(built.settings)} setting(s) x {exp.seeds:,} seeds = {runs:,} runs keep about "
            f"{ex.fmt_bytes(need)} on the host ({ex.fmt_bytes(per_run)} of "
            f"state and metrics per run), more than the {ex.fmt_bytes(available)} available. "
            "Use fewer seeds or settings (several runs of the command), or fewer updates. "
            "Nothing was run or written."
        )


def schedule_notes(built: Built) -> list[str]:
    """Schedules that do not finish within the run's budget (e.g. epsilon still annealing at
    the last update), each a sentence naming the setting to change."""
    exp, notes = built.exp, []
    steps = exp.train.num_updates * exp.train.steps_per_update
    anneal = getattr(built.hparams, "eps_anneal_steps", None)
    if anneal is not None:
        longest = float(np.max(np.asarray(anneal)))
        if longest > steps:
            hp = built.hparams
            start, finish = float(np.max(hp.eps_start)), float(np.max(hp.eps_finish))
            end = start + (finish - start) * steps / longest
            notes.append(
                f"epsilon anneals over {longest:,.0f} env steps but a run has {steps:,}: it ends "
                f"at epsilon {end:.2f}, not {finish:g} (--set eps_anneal_steps={steps // 2})"
            )
    graph = getattr(built.agent_config, "graph_anneal_updates", 0)
    if graph > exp.train.num_updates:
        notes.append(
            f"the graph threshold anneals over {graph} updates but a run has "
            f"{exp.train.num_updates} (--set graph_anneal_updates=N)"
        )
    return notes


def _run_shapes(trainer: Any, hparams: Any) -> tuple[Any, dict]:
    """Shapes of one run's state and of one update's metrics (traced, nothing compiled)."""
    return jax.eval_shape(
        lambda k: trainer.run(trainer.init(k, hparams), hparams, None, 1),
        jax.ShapeDtypeStruct((2,), jnp.uint32),
    )


def describe(built: Built, kind: str = "train") -> dict[str, Any]:
    """The JSON description of a run written to `config.json`."""
    exp = built.exp
    names = cfg.field_names(type(built.hparams))
    leaves = [np.asarray(getattr(built.hparams, n)) for n in names]
    return {
        "format_version": CONFIG_VERSION,
        "kind": kind,
        "experiment": exp.to_dict(),
        "resolved": {
            "agent": cfg.to_dict(built.agent_config),
            "hparams": [
                dict(zip(names, [float(x[g]) for x in leaves])) for g in range(len(built.settings))
            ],
            "grid_settings": built.settings,
            "train": {**cfg.to_dict(exp.train), "num_updates": exp.train.num_updates},
            "seeds": [exp.seed + s for s in range(exp.seeds)],
            "env_params": _params_dict(built.env_params),
        },
        "versions": _versions(),
        "git_commit": _git_commit(),
    }


#: experiment keys that may differ between a run and its resumption.
_NOT_STATIC = ("out_dir", "name", "checkpoint", "check_finite", "devices", "layout", "log")


def _static_part(description: dict[str, Any]) -> dict[str, Any]:
    """What must not change when resuming: the experiment, normalised, without output
    locations, per-invocation choices and the budget (`train.total_env_steps` may grow)."""
    exp = Experiment.from_dict(description).to_dict()
    for k in _NOT_STATIC:
        exp.pop(k, None)
    exp["train"] = {
        k: v for k, v in exp["train"].items() if k not in ("total_env_steps", "progress")
    }
    return {"experiment": exp}


@dataclasses.dataclass
class RunResult:
    """The outcome of `run_experiment` (metrics `[G, S, U]`, state leaves `[G, S, ...]`)."""

    run_dir: str | None
    metrics: dict[str, np.ndarray]
    state: Any
    settings: list[dict]
    finished: bool = True


def run_experiment(
    exp: Experiment | Built,
    resume: str | None = None,
    progress: bool = True,
    stop_after_chunks: int | None = None,
    max_memory_bytes: int | None = None,
    allow_hparam_change: bool = False,
    kind: str = "train",
    write: bool = True,
    callbacks: tuple = (),
) -> RunResult:
    """Train an experiment in chunks through `marljax.execute.execute`, writing its run
    directory (see the module docstring).

    Args:
      exp: the experiment (or its `build`).
      resume: a run directory to continue from its newest complete checkpoint that its metrics
        cover (from the start if it stopped before its first checkpoint). A finished run is
        left as it is (say so), unless `exp.train.total_env_steps` is larger (extended).
      progress: show a progress bar (tqdm) with env steps/s and ETA.
      stop_after_chunks: stop after this many chunks of this call (tests of interruption).
      max_memory_bytes: device memory one call may use (see `marljax.execute.execute`).
      allow_hparam_change: with `resume`, accept changed hyperparameters; config.json records
        them and the old ones in `history`.
      kind: `"train"` or `"sweep"` (the run directory's kind).
      write: write the run directory (False: train in memory only).
      callbacks: more `marljax.execute` callbacks (e.g. loggers), after the run directory's.

    Raises:
      ConfigError / KeyError / TypeError: invalid configuration, a mesh that does not divide
        the runs, or one run over the memory budget (nothing is written).
      ValueError: `resume` points to a run with a different static configuration or kind.
      BlockingIOError: another process is writing the run directory.
      NonFiniteError: a NaN/inf with `check_finite` (the newest checkpoint stays good).
    """
    built = exp if isinstance(exp, Built) else build(exp)
    exp = built.exp
    _check_loggers(exp.log)
    check_host_memory(built)  # before the keys of every run are allocated
    if jax.process_index() == 0:
        for note in schedule_notes(built):
            print(f"marljax: note: {note}", file=sys.stderr)
    description = describe(built, kind)
    run_dir = None
    if resume is not None:
        run_dir = os.path.abspath(resume)
        _check_resumable(run_dir, description, kind, allow_hparam_change)
    elif write:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
        prefix = "sweep_" if kind == "sweep" else ""
        name = exp.name or f"{prefix}{exp.algo}_{exp.env.replace('/', '_')}_{stamp}"
        run_dir = os.path.abspath(os.path.join(exp.out_dir, name))
        rundir.refuse_taken(run_dir)
    G, S = len(built.settings), exp.seeds
    keys = np.tile(
        np.asarray(jax.vmap(jax.random.PRNGKey)(jnp.arange(exp.seed, exp.seed + S))), (G, 1)
    )
    hparams = jax.tree.map(lambda x: np.repeat(np.asarray(x), S, axis=0), built.hparams)
    mesh = ex.make_mesh(exp.layout, exp.devices)
    pad = (
        exp.devices is None
    )  # every device by default: pad the runs; an explicit count must divide
    if exp.layout == "runs" and not pad:
        ex.check_divisible(G * S, mesh.size)
    box: list = [None]  # the Checkpointer, once the run directory is open

    def open_dir(stack: contextlib.ExitStack) -> None:
        """Create (new runs: only after the memory check passed) and lock the directory."""
        if resume is None:
            rundir.create(run_dir, kind, _static_part(description))
            results.write_json(os.path.join(run_dir, "config.json"), description)
        stack.enter_context(rundir.lock(run_dir))
        if exp.checkpoint:
            box[0] = stack.enter_context(Checkpointer(os.path.join(run_dir, "checkpoints")))

    with contextlib.ExitStack() as stack:
        start = None
        if resume is not None:
            open_dir(stack)
            if allow_hparam_change:
                _record_hparam_change(run_dir, description)
            if box[0] is None:
                raise FileNotFoundError(f"Cannot resume {run_dir} with checkpoint=False")
            start = _resume_point(box[0], built, keys, hparams, run_dir)
            if start is not None and start.done >= exp.train.num_updates:
                print(
                    f"marljax: {run_dir} is finished ({start.done} of {exp.train.num_updates} "
                    "updates); nothing to do (--steps N extends it)",
                    file=sys.stderr,
                )
                return _result(run_dir, built, start.metrics, start.state, True)
        cbs: list = []
        if exp.check_finite and kind == "train":  # a sweep ranks non-finite runs last
            cbs.append(_finite_check(built, lambda: box[0]))
        if run_dir is not None:
            cbs.append(lambda c: _write_outputs(run_dir, built, _grid(c.history, G, S)))
            cbs.append(lambda c: box[0].save(c.done, c.state()) if box[0] is not None else None)
            cbs.extend(_loggers(run_dir, exp, stack))
        if progress and jax.process_index() == 0:
            done0 = 0 if start is None else start.done
            bar = ex.progress_bar(f"{exp.algo} {exp.env}", exp.train.num_updates, done0)
            stack.callback(bar.close)
            cbs.append(bar)
        cbs.extend(callbacks)
        if stop_after_chunks is not None:
            cbs.append(_stop_after(stop_after_chunks))
        prepared = None
        if run_dir is not None and resume is None:
            prepared = lambda: open_dir(stack)  # noqa: E731

        def check(metrics: dict) -> None:  # traced, not yet compiled
            check_metric(exp, metrics)
            check_host_memory(built, metrics=metrics)

        out = ex.execute(
            built.trainer, keys, hparams, env_params=built.env_params, mesh=mesh,
            layout=exp.layout, pad=pad, chunk_updates=exp.updates_per_chunk, start=start,
            callbacks=cbs, max_memory_bytes=max_memory_bytes, prepared=prepared, check=check,
            say=lambda m: print(f"marljax: {m}", file=sys.stderr),
        )  # fmt: skip
    metrics = _grid(out.metrics, G, S)
    if run_dir is not None and out.finished:
        _write_plot(run_dir, built, metrics)
    return _result(run_dir, built, metrics, out.state, out.finished, grid=False)


def _check_loggers(names: tuple) -> None:
    """A missing optional logger package, named with the fix, before anything runs."""
    import importlib.util

    for name in names:
        module = LOGGERS[name]
        if importlib.util.find_spec(module) is None:
            raise cfg.ConfigError(
                f"the {name} logger needs the package {module!r}, which is not installed: "
                f'pip install "marljax[log]"'
            )


def _loggers(run_dir: str, exp: Experiment, stack: contextlib.ExitStack) -> list[Callable]:
    """The run directory's loggers: `progress.csv`, then `exp.log`'s, opened at the first
    chunk (after the directory exists) and closed with `stack`."""
    from marljax import loggers

    out: list[Callable] = [loggers.CSVLogger(os.path.join(run_dir, "progress.csv"))]
    for name in exp.log:
        if name == "tensorboard":
            make = lambda: loggers.TensorBoardLogger(os.path.join(run_dir, "tensorboard"))  # noqa: E731
        else:
            make = lambda: loggers.WandbLogger(  # noqa: E731
                project="marljax", name=os.path.basename(run_dir), dir=run_dir,
                config=Experiment.to_dict(exp),
            )  # fmt: skip
        out.append(_lazy(make, stack))
    return out


def _lazy(make: Callable, stack: contextlib.ExitStack) -> Callable:
    box: list = []

    def call(info: ex.Chunk) -> None:
        if not box:
            box.append(make())
            stack.callback(box[0].close)
        box[0](info)

    return call


def _stop_after(chunks: int) -> Callable:
    count = [0]

    def stop(_: ex.Chunk) -> bool:
        count[0] += 1
        return count[0] >= chunks

    return stop


def _grid(metrics: dict[str, np.ndarray], G: int, S: int) -> dict[str, np.ndarray]:
    """`[R, ...]` -> `[G, S, ...]` (run `r = g * S + s`)."""
    return {k: np.asarray(v).reshape(G, S, *np.shape(v)[1:]) for k, v in metrics.items()}


def _result(run_dir, built, metrics, state, finished, grid=True) -> RunResult:
    G, S = len(built.settings), built.exp.seeds
    if grid:
        metrics = _grid(metrics, G, S)
    state = jax.tree.map(lambda x: np.asarray(x).reshape(G, S, *np.shape(x)[1:]), state)
    return RunResult(run_dir, metrics, state, built.settings, finished)


def _check_resumable(run_dir: str, description: dict, kind: str, allow_hparam_change: bool) -> None:
    """Refuse to resume a directory that is not this run's (kind, format, static config)."""
    rundir.check(run_dir, kind)
    with open(os.path.join(run_dir, "config.json")) as f:
        saved = json.load(f)
    differences = cfg.diff(_static_part(saved), _static_part(description))
    if allow_hparam_change:
        differences = [d for d in differences if not d.startswith("experiment.hparams")]
    if differences:
        raise ValueError(
            f"Cannot resume {run_dir}: its configuration differs from this one:\n  "
            + "\n  ".join(differences)
            + ("" if allow_hparam_change else
               "\n(a change of hyperparameters only is allowed with --allow-hparam-change)")
        )  # fmt: skip
    old_steps = saved["experiment"].get("train", {}).get("total_env_steps")
    new = description["experiment"]["train"]["total_env_steps"]
    if old_steps is not None and new < old_steps:
        raise ValueError(
            f"Cannot resume {run_dir} with fewer env steps ({new:,}) than it was run with "
            f"({old_steps:,})"
        )
    if old_steps is not None and new != old_steps:  # an extended budget: record it
        results.write_json(os.path.join(run_dir, "config.json"), {**saved, **{
            "experiment": {**saved["experiment"], "train": description["experiment"]["train"]},
            "resolved": description["resolved"],
        }})  # fmt: skip


def _record_hparam_change(run_dir: str, description: dict) -> None:
    """Rewrite config.json with the new hyperparameters, keeping the old ones in `history`."""
    path = os.path.join(run_dir, "config.json")
    with open(path) as f:
        saved = json.load(f)
    old, new = saved["experiment"].get("hparams", {}), description["experiment"].get("hparams", {})
    if old == new:
        return
    ckpt_dir = os.path.join(run_dir, "checkpoints")
    steps = (
        sorted(int(n) for n in os.listdir(ckpt_dir) if n.isdigit())
        if os.path.isdir(ckpt_dir)
        else []
    )
    history = list(saved.get("history", []))
    history.append(
        {"from_update": steps[-1] if steps else 0, "hparams_before": old, "hparams": new}
    )
    saved["experiment"]["hparams"] = new
    results.write_json(path, {**saved, "history": history})


def _resume_point(ckpt: Checkpointer, built: Built, keys, hparams, run_dir: str):
    """The `marljax.execute.Start` to resume from: the newest intact checkpoint that
    metrics.npz covers (None: no checkpoint, start again from update 0 with the same keys).

    metrics.npz (`[G, S, U, ...]`) is written before each checkpoint, so it normally covers the
    newest one; a checkpoint that does not restore or that the metrics do not reach is skipped
    (a note on stderr) for the next older one; the metrics are cut to the checkpoint used.

    Raises:
      ValueError: there are checkpoints but none of them can be used.
    """
    steps = sorted(ckpt.all_steps(), reverse=True)
    if not steps:
        return None
    exp = built.exp
    like = ex.state_like(
        built.trainer, keys, hparams, env_params=built.env_params,
        mesh=ex.make_mesh(exp.layout, exp.devices), layout=exp.layout,
    )  # fmt: skip
    metrics, covered, why = _read_metrics(run_dir)
    if why:  # no metrics history at all: no checkpoint can be continued without a gap
        raise ValueError(
            f"Cannot resume {run_dir}: {why}, so none of its checkpoints "
            f"({', '.join(map(str, steps))}) can be continued without a gap in the metrics. "
            "Put back a copy of metrics.npz, or delete the checkpoints/ folder to train the run "
            "again from update 0."
        )
    skipped = []
    for step in steps:
        if step > covered:
            skipped.append(f"checkpoint {step}: metrics.npz covers {covered} updates")
            continue
        try:
            state = ckpt.restore(like, step)
        except ValueError as err:
            first = str(err).splitlines()[0]
            first = first if len(first) <= 160 else first[:160] + " ..."
            skipped.append(f"checkpoint {step}: cannot be restored ({first})")
            continue
        for note in skipped:
            print(f"marljax: resume: skipped {note}", file=sys.stderr)
        if skipped:
            print(f"marljax: resume: continuing from checkpoint {step}", file=sys.stderr)
        flat = {k: v[:, :, :step].reshape(-1, step, *v.shape[3:]) for k, v in metrics.items()}
        return ex.Start(jax.tree.map(np.asarray, state), step, flat)
    raise ValueError(
        f"Cannot resume {run_dir}: no usable checkpoint ("
        + "; ".join(skipped)
        + "). Delete its checkpoints/ folder to start the run again from update 0."
    )


def _finite_check(built: Built, ckpt: Any) -> Callable:
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
    from marljax.train import EVAL_PREFIX

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


def _check_env_params(env_id: str, params: Any, defaults: Any = None) -> None:
    """Every env needs `max_steps >= 1` and finite numeric params (clear errors before JAX).

    NaN is always refused. An infinite value is accepted only where it is the env's own default
    (e.g. MPE's `max_speed = inf`, meaning no limit); a user cannot introduce one.
    """
    for f in dataclasses.fields(params):
        value = getattr(params, f.name)
        if not f.metadata.get("pytree_node", True) or value is None:
            continue
        arr = np.asarray(value)
        if arr.dtype.kind != "f" or np.isfinite(arr).all():
            continue
        default = None if defaults is None else getattr(defaults, f.name, None)
        if (
            default is not None
            and not np.isnan(arr).any()
            and np.shape(default) == arr.shape
            and np.array_equal(np.asarray(default), arr)
        ):
            continue  # the env's own "no limit" default
        raise cfg.ConfigError(f"env.{f.name} of {env_id} must be finite, got {arr.tolist()}")
    steps = np.asarray(getattr(params, "max_steps", 1))
    if (steps < 1).any():
        raise cfg.ConfigError(f"env.max_steps of {env_id} must be >= 1, got {steps.tolist()}")


def _params_dict(params: Any) -> dict[str, Any]:
    return {
        f.name: np.asarray(getattr(params, f.name)).tolist() for f in dataclasses.fields(params)
    }


def _versions() -> dict[str, str]:
    out = {}
    for pkg in (
        "marljax",
        "jax",
        "jaxlib",
        "flax",
        "optax",
        "chex",
        "distrax",
        "orbax-checkpoint",
        "numpy",
    ):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _git_commit() -> str | None:
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        out = subprocess.run(
            ["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _read_metrics(run_dir: str) -> tuple[dict[str, np.ndarray], int, str]:
    """`(metrics, updates they cover, why they cover none)` of a run directory's metrics.npz."""
    path = os.path.join(run_dir, "metrics.npz")
    try:
        with np.load(path) as saved:
            metrics = {k: saved[k] for k in saved.files}
    except FileNotFoundError:
        return {}, 0, "metrics.npz is missing"
    except Exception as err:  # noqa: BLE001  (a damaged file: zip, pickle or value errors)
        text = str(err).splitlines()[0] if str(err) else ""
        text = text if len(text) <= 120 else text[:120] + " ..."
        return {}, 0, f"metrics.npz cannot be read ({type(err).__name__}: {text})"
    if not metrics:
        return {}, 0, "metrics.npz is empty"
    return metrics, min(int(v.shape[2]) for v in metrics.values()), ""


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


def baseline_main(
    doc: str,
    exp: Experiment,
    verdict: Callable[[float], str] | None = None,
    argv: list[str] | None = None,
) -> RunResult:
    """Command-line front end shared by the `baselines/` scripts.

    Parses `--seeds` and `--out` (defaults from `exp`), runs the experiment and prints each
    seed's final return, with `verdict(return)` (e.g. "optimum reached") when given.

    Args:
      doc: the script's docstring (its first line is the `--help` description).
      exp: the experiment the script reproduces.
      verdict: optional function turning a final return into a short verdict.
      argv: arguments (default: `sys.argv[1:]`).
    """
    import argparse

    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument("--seeds", type=int, default=exp.seeds, help="number of seeds")
    parser.add_argument("--out", default=exp.out_dir, help="parent folder of the run directory")
    args = parser.parse_args(argv)
    exp = dataclasses.replace(exp, seeds=args.seeds, out_dir=args.out)
    result = run_experiment(exp)
    final = final_returns(result.metrics)
    for g, setting in enumerate(result.settings):
        label = ",".join(f"{k}={v:g}" for k, v in setting.items())
        for s, ret in enumerate(final[g]):
            extra = f" {verdict(float(ret))}" if verdict is not None else ""
            print(
                f"{label + ' ' if label else ''}seed {exp.seed + s}: final return {ret:.2f}{extra}"
            )
    print(f"run directory: {result.run_dir}")
    return result


def _labels(built: Built) -> list[str]:
    return [",".join(f"{k}={v:g}" for k, v in s.items()) for s in built.settings]


def _write_outputs(run_dir: str, built: Built, metrics: dict[str, np.ndarray]) -> None:
    """metrics.npz (`[G, S, U]`, atomically) and marl-eval metrics.json of a run directory."""
    exp = built.exp
    tmp = os.path.join(run_dir, "metrics.tmp.npz")
    try:
        np.savez(tmp, **metrics)
        os.replace(tmp, os.path.join(run_dir, "metrics.npz"))
    except BaseException:  # e.g. no space: the previous metrics.npz stays, no partial file
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    S = metrics["episode_return"].shape[1]
    data: dict[str, Any] = {}
    for g, label in enumerate(_labels(built)):
        algo = exp.algo if not label else f"{exp.algo}[{label}]"
        per = {k: v[g] for k, v in metrics.items() if v.ndim == 3}
        names = (
            "episode_return",
            *(["eval/episode_return"] if "eval/episode_return" in per else []),
            *task_metric_names(per),
        )
        seeds = [f"seed_{exp.seed + s}" for s in range(S)]
        out = results.to_marl_eval(per, exp.env, algo, seeds, metric_names=names)
        for env_name, tasks in out.items():
            for task, algos in tasks.items():
                data.setdefault(env_name, {}).setdefault(task, {}).update(algos)
    results.write_json(os.path.join(run_dir, "metrics.json"), data)


def _write_plot(run_dir: str, built: Built, metrics: dict[str, np.ndarray]) -> None:
    exp = built.exp
    try:
        results.plot_learning_curves(
            metrics["env_steps"][0, 0],
            metrics["episode_return"],
            _labels(built),
            os.path.join(run_dir, "learning_curve.png"),
            title=f"{exp.algo} on {exp.env} ({exp.seeds} seeds)",
            references=env_references(exp.env, exp.env_kwargs),
            scores={
                score_label(m): metrics[m]
                for m in task_metric_names(metrics)
                if not m.startswith("eval/")
            },
        )
    except ImportError:  # matplotlib is an optional extra
        pass
