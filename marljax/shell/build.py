"""An experiment built once: env, agent and trainer (`build`), what it will run (`describe`,
`schedule_notes`) and whether it fits in host memory (`check_host_memory`).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import math
import os
import subprocess
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marljax.agents import algo_spec
from marljax.core import config as cfg
from marljax.core.registry import make
from marljax.shell import rundir
from marljax.shell.spec import CONFIG_VERSION, Experiment
from marljax.training import execute as ex
from marljax.training import space
from marljax.training.train import make_train


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
    env, env_params = make(exp.env, **exp.env_kwargs)
    _check_env_params(exp.env, env_params, env.default_params())
    if exp.league_config is not None:  # learners against snapshots of themselves / each other
        from marljax.population.league import make_league

        fixed, weights = (), None
        if exp.opponents is not None:  # scripted strategies join the pool as fixed members
            from marljax.population.pool import pool_from_spec

            num_actions = getattr(env.action_space(env_params), "n", 0)
            fixed, weights = pool_from_spec(exp.opponents, num_actions)
        learners = league_learners(exp, env, env_params)
        agent = make_league(learners, env, exp.league_config, fixed=fixed, fixed_weights=weights)
        trainer = make_train(exp.train, env, agent, env_params)
    elif exp.opponents is None:
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
    hparams = space.stack_settings(exp.base_hparams, exp.settings)
    return Built(
        exp, env, env_params, agent, exp.agent_config, hparams, exp.settings, trainer,
        _nbytes(state),
    )  # fmt: skip


def league_learners(exp: Experiment, env: Any, env_params: Any) -> Any:
    """The learner of `exp`'s league (built for team 0), or its pair of learners (one per team)
    when the league has two populations (`marljax.population.league.league_populations`)."""
    from marljax.population.league import TeamView, league_populations

    populations, teams = league_populations(env, exp.league_config)
    factory = algo_spec(exp.algo).factory
    learners = tuple(factory(exp.agent_config, TeamView(env, t), env_params) for t in teams)
    return learners if populations == 2 else learners[0]


#: metrics every trainer of `marljax.training.train.make_train` reports (`build` checks any other
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
      metrics: the shapes of one update's metrics of one run (what `marljax.training.execute.execute`
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
    refuse_over_memory(
        need,
        f"{len(built.settings)} setting(s) x {exp.seeds:,} seeds = {runs:,} runs keep, on the "
        f"host ({ex.fmt_bytes(per_run)} of state and metrics per run),",
        "use fewer seeds or settings (several runs of the command), or fewer updates"
        + (
            f", or a smaller league capacity ({exp.league_config.capacity} snapshots of the "
            "learner's state per run)"
            if exp.league_config is not None
            else ""
        ),
        available,
    )


def refuse_over_memory(need: int, what: str, fix: str, available: int | None = None) -> None:
    """Raise `ConfigError` "<what> about N, more than the M available; <fix>" when `need`
    bytes exceed the host's available memory (or `available`): the one wording of every
    entry point's memory check, made before anything is allocated or compiled."""
    available = ex._host_available_bytes() if available is None else available
    if need > available:
        raise cfg.ConfigError(
            f"{what} about {ex.fmt_bytes(need)}, more than the {ex.fmt_bytes(available)} "
            f"available; {fix}. Nothing was run or written."
        )


def schedule_notes(built: Built) -> list[str]:
    """Schedules that do not finish within the run's budget (e.g. epsilon still annealing at
    the last update), each a sentence naming the setting to change."""
    exp, notes = built.exp, []
    steps = exp.train.num_updates * exp.train.steps_per_update
    anneal = getattr(built.hparams, "eps_anneal_steps", None)
    if anneal is not None:
        longest = float(np.max(np.asarray(anneal)))
        hp = built.hparams
        constant = np.array_equal(np.asarray(hp.eps_start), np.asarray(hp.eps_finish))
        if longest > steps and not constant:  # a constant epsilon has nothing to anneal
            start, finish = float(np.max(hp.eps_start)), float(np.max(hp.eps_finish))
            end = start + (finish - start) * steps / longest
            notes.append(
                f"epsilon anneals over {longest:,.0f} env steps but a run has {steps:,}: it ends "
                f"at epsilon {end:.2f}, not {finish:g} (--set eps_anneal_steps={steps // 2})"
            )
    for name in ("warmup_steps", "learning_starts"):  # off-policy learners' first gradient step
        source = built.agent_config if hasattr(built.agent_config, name) else built.hparams
        value = getattr(source, name, None)
        if value is not None and float(np.max(np.asarray(value))) >= steps:
            notes.append(
                f"{name} is {float(np.max(np.asarray(value))):,.0f} env steps but a run has "
                f"{steps:,}: it never takes a gradient step (--set {name}={steps // 10})"
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


def static_part(description: dict[str, Any]) -> dict[str, Any]:
    """What must not change when resuming: the experiment, normalised, without output
    locations, per-invocation choices and the budget (`train.total_env_steps` may grow)."""
    exp = Experiment.from_dict(description).to_dict()
    for k in rundir.RESUMABLE_KEYS:
        exp.pop(k, None)
    exp["train"] = {
        k: v for k, v in exp["train"].items() if k not in ("total_env_steps", "progress")
    }
    return {"experiment": exp}


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


__all__ = [
    "build",
    "Built",
    "check_host_memory",
    "check_metric",
    "refuse_over_memory",
    "describe",
    "RUNNER_METRICS",
    "schedule_notes",
    "static_part",
]
