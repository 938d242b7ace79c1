"""Experiments: a typed config, a run directory, chunked training with checkpoints and resume.

`run_experiment(Experiment(...))` is what `marljax train` calls. It validates everything before
compiling, then trains the whole grid x seeds in chunks of updates (one compiled program reused
for every chunk); between chunks it updates the progress bar, writes metrics and an orbax
checkpoint. A run directory holds:

    config.json          the experiment, resolved configs, hparams, seeds, package versions, git commit
    metrics.json         marl-eval JSON (training-episode returns per update, per seed)
    metrics.npz          every metric as arrays [G, S, U]
    learning_curve.png   mean return over seeds with a min-max band, per hparams setting
    checkpoints/         orbax checkpoints of the full training carry

`run_experiment(exp, resume=RUN_DIR)` continues a run from its newest complete checkpoint; a
changed static configuration is refused with the differences named.

Reliability: every key and value is validated before anything is compiled or written (a
`ConfigError` naming the key); checkpoints are written atomically (a run killed at any moment
resumes from its newest complete checkpoint, bit-identical to a run never stopped on CPU); with
`check_finite=True` a non-finite metric or parameter stops the run before its chunk is
checkpointed, so the last good checkpoint stays the newest.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib.metadata
import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marljax import config as cfg
from marljax import results, rundir
from marljax.agents import algo_spec
from marljax.checkpoint import Checkpointer
from marljax.core.registry import make
from marljax.train import TrainConfig, batched, hparam_grid, make_train

DEFAULT_ENV = "matrix/climbing-v0"


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One experiment: algorithm x env x hparams grid x seeds.

    Attributes:
      algo: registered algorithm name (`marljax.agents.ALGORITHMS`).
      env: registered env id.
      env_kwargs: env overrides (static constructor args or params fields).
      seeds: number of seeds `S`.
      seed: base seed; run `s` uses `PRNGKey(seed + s)`.
      train: static run configuration.
      agent: overrides of the algorithm's static config (e.g. `{"recurrent": True}`).
      hparams: overrides of the algorithm's traced hyperparameters (e.g. `{"lr": 3e-4}`).
      grid: hyperparameter name -> list of values; the Cartesian product is swept.
      chunk_updates: updates per compiled chunk (0: about 20 chunks per run).
      out_dir: parent folder of run directories.
      name: run directory name (default: `<algo>_<env>_<timestamp>`); a plain name, no path.
      checkpoint: write checkpoints between chunks.
      check_finite: after every chunk, check metrics and parameters for NaN/inf and stop with
        a `NonFiniteError` (naming the update, the metric or parameter, the seed and the hparams
        setting) before that chunk is checkpointed. On by default: a diverged run is never
        reported as a result (a NaN policy can look perfect, e.g. always the first action).
        Not part of the static configuration: a run may be resumed with or without it.

    `Experiment.from_dict` builds one from a JSON/YAML-like mapping, rejecting unknown keys.
    """

    algo: str = "mappo"
    env: str = DEFAULT_ENV
    env_kwargs: dict = dataclasses.field(default_factory=dict)
    seeds: int = 4
    seed: int = 0
    train: TrainConfig = dataclasses.field(
        default_factory=lambda: TrainConfig(num_envs=16, rollout_len=8, total_env_steps=40_960)
    )
    agent: dict = dataclasses.field(default_factory=dict)
    hparams: dict = dataclasses.field(default_factory=dict)
    grid: dict = dataclasses.field(default_factory=dict)
    chunk_updates: int = 0
    out_dir: str = "runs"
    name: str | None = None
    checkpoint: bool = True
    check_finite: bool = True

    def __post_init__(self):
        for key, kind in (("algo", str), ("env", str), ("out_dir", str)):
            if not isinstance(getattr(self, key), kind):
                raise cfg.ConfigError(f"{key} must be a string, got {getattr(self, key)!r}")
        for key in ("seeds", "seed", "chunk_updates"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise cfg.ConfigError(f"{key} must be an integer, got {value!r}")
            if not -(2**31) <= int(value) < 2**31:
                raise cfg.ConfigError(f"{key} must fit in a 32-bit integer, got {value!r}")
        for key in ("checkpoint", "check_finite"):
            if not isinstance(getattr(self, key), (bool, np.bool_)):
                raise cfg.ConfigError(f"{key} must be a boolean, got {getattr(self, key)!r}")
        for key in ("env_kwargs", "agent", "hparams", "grid"):
            value = getattr(self, key)
            if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
                raise cfg.ConfigError(f"{key} must be a mapping of name: value, got {value!r}")
        for key, values in self.grid.items():
            if not isinstance(values, (list, tuple)) or len(values) == 0:
                raise cfg.ConfigError(
                    f"grid.{key} must be a non-empty list of values, got {values!r}"
                )
        if isinstance(self.train, dict):  # from JSON/YAML: validated like any other key
            object.__setattr__(
                self, "train", cfg.replace_checked(TrainConfig(), self.train, "train")
            )
        if not isinstance(self.train, TrainConfig):
            raise cfg.ConfigError(f"train must be a TrainConfig or a mapping, got {self.train!r}")
        if self.seeds < 1:
            raise cfg.ConfigError(f"seeds must be >= 1, got {self.seeds}")
        if self.chunk_updates < 0:
            raise cfg.ConfigError(f"chunk_updates must be >= 0, got {self.chunk_updates}")
        if self.name is not None:
            if not isinstance(self.name, str) or not self.name.strip():
                raise cfg.ConfigError(f"name must be a non-empty string, got {self.name!r}")
            if os.sep in self.name or "/" in self.name or self.name in (".", ".."):
                raise cfg.ConfigError(
                    f"name must be a plain directory name (use out_dir for the folder), got "
                    f"{self.name!r}"
                )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Experiment:
        """An `Experiment` from a JSON/YAML-like mapping (e.g. `config.json`'s "experiment").

        Every key and value is validated: unknown keys (top level and `train`) raise a
        `ConfigError` listing the close matches; wrong types and out-of-range values raise a
        `ConfigError` naming the key. Agent, hparams and env keys are checked by `build`.
        """
        if not isinstance(data, dict):
            raise cfg.ConfigError(f"an experiment must be a mapping, got {type(data).__name__}")
        valid = cfg.field_names(cls)
        for key in data:
            if key not in valid:
                raise cfg.unknown_key_error(str(key), valid, "experiment")
        values = dict(data)
        base = cls()
        scalars = {
            k: values.pop(k)
            for k in ("seeds", "seed", "chunk_updates", "checkpoint", "check_finite", "out_dir")
            if k in values
        }
        if "train" in values:
            values["train"] = cfg.replace_checked(base.train, values["train"], "train")
        out = cfg.replace_checked(base, scalars, "experiment") if scalars else base
        try:
            return dataclasses.replace(out, **values)
        except TypeError as err:
            raise cfg.ConfigError(f"Invalid experiment: {err}") from err

    @classmethod
    def loads(cls, text: str) -> Experiment:
        """`from_dict` of a JSON or YAML text."""
        return cls.from_dict(cfg.loads(text, "experiment"))

    @property
    def updates_per_chunk(self) -> int:
        n = self.train.num_updates
        return self.chunk_updates if self.chunk_updates > 0 else max(1, -(-n // 20))


@dataclasses.dataclass
class Built:
    """Everything resolved from an `Experiment` before compiling."""

    env: Any
    env_params: Any
    agent: Any
    agent_config: Any
    hparams: Any  # stacked [G]
    settings: list[dict]
    trainer: Any


def build(exp: Experiment) -> Built:
    """Resolve and validate an experiment (raises clear errors; compiles nothing)."""
    spec = algo_spec(exp.algo)
    env, env_params = make(exp.env, **exp.env_kwargs)
    _check_env_params(exp.env, env_params, env.default_params())
    agent_config = cfg.replace_checked(spec.config_cls(**spec.config_defaults), exp.agent, "agent")
    base_hp = cfg.replace_checked(spec.hparams_cls(), exp.hparams, "hparams")
    grid = {}
    for key, values in exp.grid.items():
        if key not in cfg.field_names(base_hp):
            raise cfg.unknown_key_error(key, cfg.field_names(base_hp), "grid (hparams)")
        grid[key] = [getattr(cfg.replace_checked(base_hp, {key: v}, "grid"), key) for v in values]
    hparams, settings = hparam_grid(base_hp, **grid)
    agent = spec.factory(agent_config, env, env_params)
    trainer = make_train(exp.train, env, agent, env_params)
    try:  # trace (not compile) the initial state: errors from inside the agent surface here
        jax.eval_shape(trainer.init, jax.random.PRNGKey(0), base_hp, env_params)
    except (ValueError, TypeError, KeyError) as err:
        raise cfg.ConfigError(
            f"Invalid configuration for {exp.algo} on {exp.env} (agent {exp.agent}): {err}"
        ) from err
    return Built(env, env_params, agent, agent_config, hparams, settings, trainer)


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


def describe(exp: Experiment, built: Built) -> dict[str, Any]:
    """The JSON description of a run written to `config.json`."""
    return {
        "experiment": cfg.to_dict(exp),
        "resolved": {
            "agent": cfg.to_dict(built.agent_config),
            "hparams": [
                dict(zip(cfg.field_names(type(built.hparams)), row)) for row in _hp_rows(built)
            ],
            "grid_settings": built.settings,
            "train": {**cfg.to_dict(exp.train), "num_updates": exp.train.num_updates},
            "seeds": [exp.seed + s for s in range(exp.seeds)],
            "env_params": _params_dict(built.env_params),
        },
        "versions": _versions(),
        "git_commit": _git_commit(),
    }


def _hp_rows(built: Built) -> list[list[float]]:
    leaves = [np.asarray(getattr(built.hparams, n)) for n in cfg.field_names(type(built.hparams))]
    return [[float(x[g]) for x in leaves] for g in range(len(built.settings))]


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


def _static_part(description: dict[str, Any]) -> dict[str, Any]:
    """What must not change when resuming (everything but output locations and versions)."""
    exp = dict(description["experiment"])
    for k in ("out_dir", "name", "checkpoint", "check_finite"):
        exp.pop(k, None)
    return {"experiment": exp}


@dataclasses.dataclass
class RunResult:
    run_dir: str
    metrics: dict[str, np.ndarray]  # name -> [G, S, U]
    state: Any  # final RunnerState with leading [G, S]
    settings: list[dict]


def run_experiment(
    exp: Experiment,
    resume: str | None = None,
    progress: bool = True,
    stop_after_chunks: int | None = None,
    max_memory_bytes: int | None = None,
    allow_hparam_change: bool = False,
) -> RunResult:
    """Train an experiment in chunks, writing the run directory (see the module docstring).

    Args:
      exp: the experiment.
      resume: an existing run directory to continue from its newest complete checkpoint (from
        the start if it was stopped before its first checkpoint). A checkpoint that was being
        written when the process died is never listed, so never restored.
      progress: show a progress bar (tqdm).
      stop_after_chunks: stop after this many chunks of this call (for tests of interruption).
      max_memory_bytes: device memory one chunk may use (default: `sweep.default_memory_budget`,
        80% of an accelerator's memory or half the free host memory). The chunk program is
        compiled first and XLA's memory analysis of it checked against this, before any state
        is allocated; the same compiled program then runs the chunks.
      allow_hparam_change: with `resume`, accept changed hyperparameters (e.g. a lower learning
        rate after a divergence); config.json records them and the old ones in `history`.

    Returns:
      A `RunResult`.

    Raises:
      ConfigError / KeyError / TypeError: invalid configuration, or a run over the memory budget
        (nothing is written).
      ValueError: `resume` points to a run with a different static configuration, or to a
        directory that is not a train run (a sweep's, a newer format's).
      BlockingIOError: another process is writing the run directory.
    """
    built = build(exp)  # all validation happens here, before any compile or write
    description = describe(exp, built)
    if resume is not None:
        run_dir = os.path.abspath(resume)
        _check_resumable(run_dir, description, allow_hparam_change)
    else:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
        name = exp.name or f"{exp.algo}_{exp.env.replace('/', '_')}_{stamp}"
        run_dir = os.path.abspath(os.path.join(exp.out_dir, name))
        rundir.refuse_taken(run_dir)
    init_fn, run_fn = batched(built.trainer)
    chunk_fn = _compile_checked_chunk(exp, built, init_fn, run_fn, max_memory_bytes)
    if resume is None:
        rundir.create(run_dir, "train", _static_part(description))
        results.write_json(os.path.join(run_dir, "config.json"), description)
    with rundir.lock(run_dir):
        if resume is not None and allow_hparam_change:
            _record_hparam_change(run_dir, description)
        state = init_fn(
            jax.vmap(jax.random.PRNGKey)(jnp.arange(exp.seed, exp.seed + exp.seeds)),
            built.hparams,
            built.env_params,
        )
        return _train_chunks(
            exp, built, run_dir, state, resume is not None, (chunk_fn, run_fn), progress,
            stop_after_chunks,
        )  # fmt: skip


def _check_resumable(run_dir: str, description: dict, allow_hparam_change: bool) -> None:
    """Refuse to resume a directory that is not this run's (kind, format, static config)."""
    rundir.check(run_dir, "train")
    with open(os.path.join(run_dir, "config.json")) as f:
        saved = json.load(f)
    differences = cfg.diff(_static_part(saved), _static_part(description))
    if allow_hparam_change:
        differences = [d for d in differences if not d.startswith("experiment.hparams")]
    if differences:
        raise ValueError(
            f"Cannot resume {run_dir}: its configuration differs from this one:\n  "
            + "\n  ".join(differences)
            + (
                ""
                if allow_hparam_change
                else "\n(a change of hyperparameters only is allowed with --allow-hparam-change)"
            )
        )


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
    results.write_json(path, {**description, "history": history})


def _train_chunks(exp, built, run_dir, state, resume, fns, progress, stop_after_chunks):
    """The chunk loop of `run_experiment` (in its locked run directory)."""
    chunk_fn, run_fn = fns
    history: dict[str, list[np.ndarray]] = {}
    done_updates = 0
    ckpt = Checkpointer(os.path.join(run_dir, "checkpoints")) if exp.checkpoint else None
    if resume:
        if ckpt is None:
            raise FileNotFoundError(
                f"Cannot resume {run_dir} with checkpoint=False (nothing to restore from)"
            )
        state, done_updates, history = _resume_point(ckpt, state, run_dir)

    total = exp.train.num_updates
    chunk = exp.updates_per_chunk
    bar = _progress_bar(total, done_updates, exp) if progress else None
    chunks_run = 0
    finite_fn = jax.jit(_finite_flags) if exp.check_finite else None
    try:
        while done_updates < total:
            n = min(chunk, total - done_updates)
            if n == min(chunk, total):  # the program compiled (and checked) up front
                state, metrics = chunk_fn(state, built.hparams, built.env_params)
            else:
                state, metrics = run_fn(state, built.hparams, built.env_params, n)
            if finite_fn is not None:
                # Before anything of this chunk is written: the newest checkpoint stays good.
                _raise_if_non_finite(
                    finite_fn(metrics, state.agent_state), exp, built, done_updates, n, ckpt
                )
            for k, v in metrics.items():
                history.setdefault(k, []).append(np.asarray(v))
            done_updates += n
            merged = {k: np.concatenate(v, axis=2) for k, v in history.items()}
            _write_outputs(run_dir, exp, built, merged)
            if ckpt is not None:
                ckpt.save(done_updates, state)
            if bar is not None:
                ret = merged["episode_return"][..., -1]
                bar.set_postfix(ret=f"{np.nanmean(ret):.3f}" if np.isfinite(ret).any() else "n/a")
                bar.update(n)
            chunks_run += 1
            if stop_after_chunks is not None and chunks_run >= stop_after_chunks:
                break
    finally:
        if bar is not None:
            bar.close()
        if ckpt is not None:
            ckpt.close()
    merged = {k: np.concatenate(v, axis=2) for k, v in history.items()}
    if done_updates >= total:
        _write_plot(run_dir, exp, built, merged)
    return RunResult(run_dir, merged, state, built.settings)


def _compile_checked_chunk(exp, built, init_fn, run_fn, max_memory_bytes: int | None):
    """Compile one chunk of the run from shapes alone and refuse it over the memory budget."""
    from marljax import sweep

    keys = jax.ShapeDtypeStruct((exp.seeds, 2), jnp.uint32)
    state = jax.eval_shape(init_fn, keys, built.hparams, built.env_params)
    n = min(exp.updates_per_chunk, exp.train.num_updates)
    compiled = run_fn.lower(state, built.hparams, built.env_params, n).compile()
    try:
        stats = compiled.memory_analysis()
    except (NotImplementedError, RuntimeError, AttributeError):
        stats = None
    if stats is None:
        return compiled
    need = int(
        stats.argument_size_in_bytes
        + stats.output_size_in_bytes
        + stats.temp_size_in_bytes
        - stats.alias_size_in_bytes
    )
    budget = sweep.default_memory_budget() if max_memory_bytes is None else int(max_memory_bytes)
    if need > budget:
        G = len(built.settings)
        raise cfg.ConfigError(
            f"This run needs about {sweep._fmt(need)} of device memory per chunk ({G} settings x "
            f"{exp.seeds} seeds x {exp.train.num_envs} envs, {n} updates per chunk; XLA's estimate of arguments + outputs + temporaries), over the budget of "
            f"{sweep._fmt(budget)}. Use fewer seeds, settings or envs, smaller chunk_updates, or "
            "--max-memory to raise the budget. Nothing was written."
        )
    return compiled


def _read_metrics(run_dir: str) -> tuple[dict[str, np.ndarray], int, str]:
    """`(metrics, updates they cover, why they cover none)` of a run directory's metrics.npz."""
    path = os.path.join(run_dir, "metrics.npz")
    try:
        with np.load(path) as saved:
            metrics = {k: saved[k] for k in saved.files}
    except FileNotFoundError:
        return {}, 0, "metrics.npz is missing"
    except Exception as err:  # noqa: BLE001  (a damaged file: zip, pickle or value errors)
        return {}, 0, f"metrics.npz cannot be read ({type(err).__name__}: {err})"
    if not metrics:
        return {}, 0, "metrics.npz is empty"
    return metrics, min(int(v.shape[2]) for v in metrics.values()), ""


def _resume_point(ckpt: Checkpointer, like: Any, run_dir: str) -> tuple[Any, int, dict]:
    """`(state, done updates, metrics history)` to resume from: the newest intact checkpoint
    that metrics.npz covers.

    metrics.npz (`[G, S, U, ...]` arrays) is written before each checkpoint, so it normally
    covers the newest one; a write after it is cut off. A checkpoint that does not restore
    (damaged) or that the metrics do not reach (damaged or missing metrics.npz) is skipped,
    with a note on stderr, for the next older one; the metrics are cut to the checkpoint used,
    never spliced with a gap. No checkpoint at all: update 0 (same keys, same result).

    Raises:
      ValueError: there are checkpoints but none of them can be used.
    """
    steps = sorted(ckpt.all_steps(), reverse=True)
    if not steps:  # killed before its first checkpoint
        return like, 0, {}
    metrics, covered, why = _read_metrics(run_dir)
    skipped = []
    for step in steps:
        if step > covered:
            skipped.append(
                f"checkpoint {step}: " + (why or f"metrics.npz covers {covered} updates")
            )
            continue
        try:
            state = ckpt.restore(like, step)
        except ValueError as err:
            skipped.append(f"checkpoint {step}: cannot be restored ({str(err).splitlines()[0]})")
            continue
        for note in skipped:
            print(f"marljax: resume: skipped {note}", file=sys.stderr)
        if skipped:
            print(f"marljax: resume: continuing from checkpoint {step}", file=sys.stderr)
        return state, step, {k: [v[:, :, :step]] for k, v in metrics.items()}
    raise ValueError(
        f"Cannot resume {run_dir}: no usable checkpoint ("
        + "; ".join(skipped)
        + "). Delete its checkpoints/ folder to start the run again from update 0."
    )


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


#: Metrics that are NaN by design in an update where no episode finished.
_EPISODE_METRICS = ("episode_return", "episode_return_per_agent", "episode_length")


def _finite_flags(metrics: dict, agent_state: Any) -> tuple[dict, Any]:
    """`([G, S, U] bool per metric, [G, S] bool per floating parameter leaf)`, True = finite.

    A metric that is NaN by design (episode statistics of an update where no episode ended)
    counts as finite.
    """
    no_episode = metrics["num_episodes"] == 0 if "num_episodes" in metrics else None

    def metric_ok(name, x):
        x = jnp.asarray(x)
        ok = jnp.isfinite(x) if jnp.issubdtype(x.dtype, jnp.inexact) else jnp.ones(x.shape, bool)
        ok = ok.reshape(*ok.shape[:3], -1).all(-1)  # per-agent metrics: all agents
        if no_episode is not None and (name in _EPISODE_METRICS or "/" in name):
            ok = ok | (no_episode & jnp.isnan(jnp.asarray(x).reshape(*ok.shape, -1)).all(-1))
        return ok

    def leaf_ok(x):
        x = jnp.asarray(x)
        if not jnp.issubdtype(x.dtype, jnp.inexact):
            return jnp.ones(x.shape[:2], bool)
        return jnp.isfinite(x).reshape(*x.shape[:2], -1).all(-1)

    return {k: metric_ok(k, v) for k, v in metrics.items()}, jax.tree.map(leaf_ok, agent_state)


def finite_runs(metrics: dict, agent_state: Any) -> np.ndarray:
    """`[G, S]` bool: True where a run's metrics (every update) and parameters are all finite.

    Args:
      metrics: name -> `[G, S, U, ...]` arrays (NaN episode statistics of updates in which no
        episode ended count as finite).
      agent_state: the runs' final agent states, leaves `[G, S, ...]`.
    """
    metric_flags, param_flags = jax.tree.map(
        np.asarray, jax.jit(_finite_flags)(metrics, agent_state)
    )
    ok = None
    for flags in metric_flags.values():
        run_ok = flags.reshape(*flags.shape[:2], -1).all(-1)
        ok = run_ok if ok is None else ok & run_ok
    for flags in jax.tree.leaves(param_flags):
        ok = flags if ok is None else ok & flags
    return np.asarray(ok, bool)


def _raise_if_non_finite(flags, exp: Experiment, built: Built, done: int, n: int, ckpt) -> None:
    """Raise `NonFiniteError` for the earliest non-finite metric, else the first bad parameter."""
    metric_flags, param_flags = jax.tree.map(np.asarray, flags)
    first = None  # (update index in chunk, name, g, s)
    for name, ok in sorted(metric_flags.items()):
        bad = np.argwhere(~ok)  # rows (g, s, u)
        if bad.size:
            g, s_, u = min(bad.tolist(), key=lambda r: (r[2], r[0], r[1]))
            if first is None or u < first[0]:
                first = (u, f"metric {name!r}", g, s_)
    if first is None:
        leaves, _ = jax.tree_util.tree_flatten_with_path(param_flags)
        for path, ok in leaves:
            bad = np.argwhere(~ok)
            if bad.size:
                g, s_ = bad[0].tolist()
                first = (n - 1, f"parameter {jax.tree_util.keystr(path)}", g, s_)
                break
    if first is None:
        return
    u, what, g, s_ = first
    update = done + u + 1
    seed = exp.seed + s_
    setting = built.settings[g]
    label = ", ".join(f"{k}={v:g}" for k, v in setting.items()) or "the default hparams"
    kept = ckpt.latest_step() if ckpt is not None else None
    where = (
        f"the newest checkpoint (update {kept}) is left as it was"
        if kept is not None
        else "no checkpoint was written"
    )
    raise NonFiniteError(
        f"Non-finite value at update {update} of {exp.train.num_updates}: {what} is NaN or inf "
        f"for seed {seed} with {label}. The run stopped before checkpointing updates "
        f"{done + 1}-{done + n}; {where}.",
        update,
        what,
        seed,
        setting,
    )


def final_returns(metrics: dict[str, np.ndarray]) -> np.ndarray:
    """`[G, S]` return of the last update in which an episode finished (NaN if none did)."""
    ret = metrics["episode_return"]
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


def _progress_bar(total: int, initial: int, exp: Experiment):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=f"{exp.algo} {exp.env}", unit="update")


def _labels(built: Built) -> list[str]:
    return [",".join(f"{k}={v:g}" for k, v in s.items()) for s in built.settings]


def _write_outputs(
    run_dir: str, exp: Experiment, built: Built, metrics: dict[str, np.ndarray]
) -> None:
    tmp = os.path.join(run_dir, "metrics.tmp.npz")
    np.savez(tmp, **metrics)
    os.replace(tmp, os.path.join(run_dir, "metrics.npz"))
    G, S = metrics["episode_return"].shape[:2]
    data: dict[str, Any] = {}
    for g, label in enumerate(_labels(built)):
        algo = exp.algo if not label else f"{exp.algo}[{label}]"
        per = {k: v[g] for k, v in metrics.items() if v.ndim == 3}
        out = results.to_marl_eval(per, exp.env, algo, [f"seed_{exp.seed + s}" for s in range(S)])
        for env_name, tasks in out.items():
            for task, algos in tasks.items():
                data.setdefault(env_name, {}).setdefault(task, {}).update(algos)
    results.write_json(os.path.join(run_dir, "metrics.json"), data)


def _write_plot(
    run_dir: str, exp: Experiment, built: Built, metrics: dict[str, np.ndarray]
) -> None:
    steps = metrics["env_steps"][0, 0]
    results.plot_learning_curves(
        steps,
        metrics["episode_return"],
        _labels(built),
        os.path.join(run_dir, "learning_curve.png"),
        title=f"{exp.algo} on {exp.env} ({exp.seeds} seeds)",
    )
