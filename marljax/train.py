"""Training: the whole run as one jittable function of a key, with seeds and hparams as vmap axes.

    trainer = make_train(TrainConfig(), env, agent)
    state, metrics = jax.jit(trainer.train)(key, hparams)            # fused: one call
    state = trainer.init(key, hparams)                                # chunked: same step function
    state, metrics = jax.jit(trainer.run, static_argnums=3)(state, hparams, env_params, 10)
    metrics = sweep(trainer, keys, hparam_grid)                       # grid x seeds, one compile

An *update* is a `lax.scan` of `rollout_len` environment steps over `num_envs` environments
(`marljax.rollout.rollout`) followed by `agent.update`; a run is a `lax.scan` of updates. The carry (`RunnerState`) holds
the agent state, the environments, the recurrent carry and the PRNG key, so resuming from a
checkpointed carry continues exactly where the run stopped.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from marljax import rollout
from marljax.agents.base import Agent
from marljax.core.types import Environment, EnvParams, TimeStep

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Static configuration of a training run (shapes and loop lengths).

    Attributes:
      num_envs: parallel environments per run `E`.
      rollout_len: environment steps per update `T`.
      total_env_steps: environment steps per run (rounded down to whole updates, at least one).
      progress: report progress from inside the compiled program through a host callback
        (opt-in; never changes results).
    """

    num_envs: int = 16
    rollout_len: int = 32
    total_env_steps: int = 100_000
    progress: bool = False

    def __post_init__(self):
        for name in ("num_envs", "rollout_len", "total_env_steps"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"TrainConfig.{name} must be >= 1, got {getattr(self, name)}")
        # env-step counters are int32 inside the program: refuse sizes that would overflow them
        # here, before anything is compiled or written
        if self.steps_per_update * self.num_updates >= 2**31:
            raise ValueError(
                f"TrainConfig: {self.num_updates} updates x num_envs {self.num_envs} x rollout_len "
                f"{self.rollout_len} = {self.steps_per_update * self.num_updates:,} env steps per "
                "run does not fit the int32 step counters (< 2,147,483,648); use fewer envs or "
                "steps, or several runs"
            )

    @property
    def steps_per_update(self) -> int:
        """Environment steps per update, `E * T`."""
        return self.num_envs * self.rollout_len

    @property
    def num_updates(self) -> int:
        """Updates per run."""
        return max(1, self.total_env_steps // self.steps_per_update)


@struct.dataclass
class RunnerState:
    """The carry of a training run; every leaf is an array (checkpointable)."""

    agent_state: Any
    env_state: Any  # leaves [E, ...]
    timestep: TimeStep  # leaves [E, ...]: the latest timestep
    episode_start: Array  # [E] bool, the latest observation starts an episode
    carry: Any  # agent's recurrent carry, leaves [E, ...]
    key: Array  # PRNG key of the run
    update_idx: Array  # [] int32, updates done so far

    # The acting loop's fields are kept flat (not a nested `RolloutState`), so checkpoints and
    # shardings of the runner state keep their structure.
    @property
    def rollout_state(self) -> rollout.RolloutState:
        """The acting loop's part of the carry (see `marljax.rollout`)."""
        return rollout.RolloutState(
            env_state=self.env_state,
            timestep=self.timestep,
            episode_start=self.episode_start,
            carry=self.carry,
            key=self.key,
        )

    def replace_rollout_state(self, acting: rollout.RolloutState) -> RunnerState:
        """This state with the acting loop's fields taken from `acting`."""
        return self.replace(
            env_state=acting.env_state,
            timestep=acting.timestep,
            episode_start=acting.episode_start,
            carry=acting.carry,
            key=acting.key,
        )


class Trainer(NamedTuple):
    """The pure functions of a training run (see the module docstring).

    Attributes:
      init: `init(key, hparams, env_params=None) -> RunnerState`.
      run: `run(state, hparams, env_params, num_updates) -> (state, metrics)`; `num_updates` is
        static (jit with `static_argnums=3`). Metrics are `[num_updates]` arrays.
      train: `train(key, hparams, env_params=None) -> (state, metrics)`, the fused whole run.
      config: the `TrainConfig`.
      env: the core environment given to `make_train`.
      env_params: the default env params of this trainer.
      agent: the agent.
      axis_names: named `vmap` axes the trainer expects around it (see `make_train`).
      shard_axis: the mapped axis one run's environments are sharded over (see `make_train`).
    """

    init: Callable[..., RunnerState]
    run: Callable[..., tuple[RunnerState, dict]]
    train: Callable[..., tuple[RunnerState, dict]]
    config: TrainConfig
    env: Environment
    env_params: EnvParams
    agent: Agent
    axis_names: tuple[str, ...] = ()
    shard_axis: str | None = None


#: names of the vmap axes that `sweep` and `batched` put around a run.
SWEEP_AXES = ("hparams", "seeds")


def make_train(
    config: TrainConfig,
    env: Environment,
    agent: Agent,
    env_params: EnvParams | None = None,
    axis_names: tuple[str, ...] = (),
    shard_axis: str | None = None,
) -> Trainer:
    """Build the pure training functions for `agent` on `env`.

    Args:
      config: static run configuration.
      env: a core environment (it is wrapped with episode statistics and auto-reset here).
      agent: an `Agent` built for this env.
      env_params: default env params (may be overridden per call, e.g. to sweep a game family).
      axis_names: names of the `vmap` axes the run will be mapped over (`sweep` and `batched`
        set them). The environments auto-reset only on steps where an episode ended in SOME run
        of the whole batch; that stays a real branch under any `vmap`, named or not (a user's own
        `vmap(train)` included, see `marljax.core.wrappers.any_across_vmap`).
      shard_axis: for one shard of a data-parallel run (`marljax.distributed.data_parallel_train`):
        the mapped axis whose shards each step their own `num_envs` environments. The metrics
        are then those of the whole batch: episode statistics over every shard's finished
        episodes (`marljax.rollout.episode_statistics`), `env_steps` counting every shard, the
        agent's metrics averaged over shards.

    Returns:
      A `Trainer`.
    """
    agent.check_batch(config.num_envs, config.rollout_len)
    vec_env = rollout.batched_env(env, axis_names)
    default_params = env.default_params() if env_params is None else env_params
    E, T = config.num_envs, config.rollout_len
    total_updates = config.num_updates

    def init(key: Array, hparams: Any, env_params: EnvParams | None = None) -> RunnerState:
        env_params = default_params if env_params is None else env_params
        key_agent, key_env, key_run = jax.random.split(key, 3)
        agent_state = agent.init(key_agent, hparams)
        acting = rollout.reset(vec_env, env_params, key_env, key_run, E, agent.initial_carry(E))
        return RunnerState(
            agent_state=agent_state,
            env_state=acting.env_state,
            timestep=acting.timestep,
            episode_start=acting.episode_start,
            carry=acting.carry,
            key=acting.key,
            update_idx=jnp.int32(0),
        )

    def update_step(state: RunnerState, hparams: Any, env_params: EnvParams):
        acting, transitions = rollout.rollout(
            vec_env, env_params, agent, state.agent_state, hparams, state.rollout_state, T
        )
        traj = rollout.to_trajectory(transitions, acting, initial_carry=state.carry)
        key, key_update = jax.random.split(acting.key)
        agent_state, metrics = agent.update(state.agent_state, traj, hparams, key_update)
        env_steps = (state.update_idx + 1) * (E * T)
        if shard_axis is not None:  # the whole batch's metrics on every shard
            metrics = jax.lax.pmean(metrics, shard_axis)
            env_steps = env_steps * jax.lax.psum(1, shard_axis)
        # Episode statistics of the episodes that finished during this rollout (NaN if none).
        metrics = {**metrics, **rollout.episode_statistics(transitions.episode, shard_axis)}
        metrics["env_steps"] = env_steps
        state = state.replace_rollout_state(acting.replace(key=key)).replace(
            agent_state=agent_state, update_idx=state.update_idx + 1
        )
        if config.progress:
            jax.debug.callback(_report_progress, state.update_idx, metrics["episode_return"])
        return state, metrics

    def run(state: RunnerState, hparams: Any, env_params: EnvParams | None, num_updates: int):
        env_params = default_params if env_params is None else env_params

        def body(s, _):
            return update_step(s, hparams, env_params)

        return jax.lax.scan(body, state, None, length=num_updates)

    def train(key: Array, hparams: Any, env_params: EnvParams | None = None):
        state = init(key, hparams, env_params)
        return run(state, hparams, env_params, total_updates)

    return Trainer(
        init, run, train, config, env, default_params, agent, tuple(axis_names), shard_axis
    )


#: runner metrics that are averages over the episodes finished in an update (NaN if none).
EPISODE_AVERAGES = ("episode_return", "episode_return_per_agent", "episode_length")


def combine_shard_metrics(metrics: dict[str, Array], axis_name: str) -> dict[str, Array]:
    """One update's runner metrics from shards of the environments, for the whole batch.

    Inside a mapped axis `axis_name` whose shards each ran `make_train`'s update on their own
    environments (without `shard_axis`): episode averages (`EPISODE_AVERAGES` and `group/name`
    episode metrics) are weighted by each shard's finished episodes
    (`marljax.rollout.episode_averages`), `num_episodes` is summed, `env_steps` counts every
    shard's steps, and everything else (the agent's losses, which the data-parallel agents
    already average) is the mean over shards. Every shard returns the same values.
    `make_train(..., shard_axis=axis_name)` computes the same metrics inside the run.
    """
    n = metrics["num_episodes"]
    totals = {}
    for name, value in metrics.items():
        if name in EPISODE_AVERAGES or "/" in name:
            w = n.reshape(n.shape + (1,) * (value.ndim - n.ndim))
            totals[name] = jnp.where(w > 0, value * w, 0.0)
    episode = rollout.episode_averages(totals, n, axis_name)
    out = {}
    for name, value in metrics.items():
        if name in episode:
            out[name] = episode[name]
        elif name == "env_steps":
            out[name] = value * jax.lax.psum(1, axis_name)
        else:
            out[name] = jax.lax.pmean(value, axis_name)
    return out


# ----------------------------------------------------------------------------- sweeps


def hparam_grid(base: Any, **values: list) -> tuple[Any, list[dict[str, Any]]]:
    """The Cartesian product of hyperparameter values, stacked along a leading grid axis `[G]`.

    Args:
      base: an hparams dataclass (e.g. `PPOHParams()`) giving the other fields.
      **values: field name -> list of values, e.g. `lr=[1e-3, 3e-4], ent_coef=[0.0, 0.01]`.

    Returns:
      `(stacked_hparams, settings)`: a pytree with leaves `[G]` and the list of the `G` settings
      (dicts of the swept fields) in the same order.

    Raises:
      TypeError: a name that is not a field of `base`.
    """
    import itertools

    fields = {f.name for f in dataclasses.fields(base)}
    unknown = sorted(set(values) - fields)
    if unknown:
        raise TypeError(f"Unknown hyperparameter(s) {unknown}; valid: {sorted(fields)}")
    names = list(values)
    settings = [dict(zip(names, combo)) for combo in itertools.product(*(values[n] for n in names))]
    if not settings:
        settings = [{}]
    rows = [base.replace(**s) for s in settings]
    stacked = jax.tree.map(lambda *xs: jnp.stack([jnp.asarray(x, jnp.float32) for x in xs]), *rows)
    return stacked, settings


def broadcast_hparams(hparams: Any, num: int) -> Any:
    """`hparams` with every leaf stacked `num` times along a new leading axis."""
    return jax.tree.map(lambda x: jnp.broadcast_to(jnp.asarray(x, jnp.float32), (num,)), hparams)


def sweep(trainer: Trainer, keys: Array, hparams_grid: Any, env_params: EnvParams | None = None):
    """Train every (hparams setting, seed) pair as ONE compiled program.

    Args:
      trainer: from `make_train`.
      keys: `[S]` PRNG keys (one per seed).
      hparams_grid: hparams pytree with leaves `[G]` (see `hparam_grid`).
      env_params: optional env params shared by all runs.

    Returns:
      `(states, metrics)` with leading axes `[G, S]`.
    """
    named = _with_sweep_axes(trainer)
    fn = jax.vmap(
        jax.vmap(named.train, in_axes=(0, None, None), axis_name=SWEEP_AXES[1]),
        in_axes=(None, 0, None),
        axis_name=SWEEP_AXES[0],
    )
    return jax.jit(fn)(keys, hparams_grid, env_params)


def _with_sweep_axes(trainer: Trainer) -> Trainer:
    """The same trainer, built to run under `sweep`'s named (hparams, seeds) vmap axes."""
    if trainer.axis_names == SWEEP_AXES:
        return trainer
    return make_train(
        trainer.config,
        trainer.env,
        trainer.agent,
        trainer.env_params,
        SWEEP_AXES,
        trainer.shard_axis,
    )


def batched(trainer: Trainer) -> tuple[Callable, Callable]:
    """Chunked-mode functions over a `[G, S]` grid x seeds, each jitted once.

    Returns:
      `(init, run)` with `init(keys [S], hparams [G], env_params) -> state [G, S]` and
      `run(state [G, S], hparams [G], env_params, num_updates) -> (state, metrics [G, S, U])`.
    """
    named = _with_sweep_axes(trainer)
    h_ax, s_ax = SWEEP_AXES
    init = jax.jit(
        jax.vmap(
            jax.vmap(named.init, in_axes=(0, None, None), axis_name=s_ax),
            in_axes=(None, 0, None),
            axis_name=h_ax,
        )
    )

    def run(state, hparams, env_params, num_updates):
        f = jax.vmap(
            jax.vmap(named.run, in_axes=(0, None, None, None), axis_name=s_ax),
            in_axes=(0, 0, None, None),
            axis_name=h_ax,
        )
        return f(state, hparams, env_params, num_updates)

    return init, jax.jit(run, static_argnums=3)


# ----------------------------------------------------------------------------- progress

_PROGRESS: list[Callable[[int, float], None]] = []


def _report_progress(update_idx, episode_return) -> None:
    for fn in _PROGRESS:
        fn(int(jnp.max(update_idx)), float(jnp.nanmean(episode_return)))


class progress_callback:
    """Context manager routing in-program progress reports to `fn(update_idx, mean_return)`.

    Used with `TrainConfig(progress=True)`; the CLI uses host-side progress between chunks.
    """

    def __init__(self, fn: Callable[[int, float], None]):
        self.fn = fn

    def __enter__(self):
        _PROGRESS.append(self.fn)
        return self

    def __exit__(self, *exc):
        _PROGRESS.remove(self.fn)
        return False


def tqdm_progress(total: int, desc: str = "training"):
    """A `progress_callback` that drives a tqdm bar of `total` updates (for notebooks/scripts).

    Example::

        trainer = make_train(TrainConfig(progress=True), env, agent)
        with tqdm_progress(trainer.config.num_updates):
            state, metrics = jax.jit(trainer.train)(key, hparams)
    """
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=desc, unit="update")

    def report(update_idx: int, mean_return: float) -> None:
        if update_idx > bar.n:
            bar.update(update_idx - bar.n)
            if mean_return == mean_return:  # not NaN
                bar.set_postfix(ret=f"{mean_return:.3f}")

    class _Ctx(progress_callback):
        def __exit__(self, *exc):
            bar.close()
            return super().__exit__(*exc)

    return _Ctx(report)


def num_chunks(total_updates: int, chunk: int) -> int:
    """Number of chunks of `chunk` updates covering `total_updates` (the last may be shorter)."""
    return math.ceil(total_updates / max(1, chunk))
