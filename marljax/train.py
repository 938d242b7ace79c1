"""Training: the whole run as one jittable function of a key, with seeds and hparams as vmap axes.

    trainer = make_train(TrainConfig(), env, agent)
    state, metrics = jax.jit(trainer.train)(key, hparams)            # fused: one call
    state = trainer.init(key, hparams)                                # chunked: same step function
    state, metrics = jax.jit(trainer.run, static_argnums=3)(state, hparams, env_params, 10)
    metrics = sweep(trainer, keys, hparam_grid)                       # grid x seeds, one compile

An *update* is a `lax.scan` of `rollout_len` environment steps over `num_envs` environments
followed by `agent.update`; a run is a `lax.scan` of updates. The carry (`RunnerState`) holds
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

from marljax.agents.base import Agent, Observation, Trajectory
from marljax.core.types import Environment, EnvParams, TimeStep
from marljax.core.wrappers import BatchedAutoReset, EpisodeStats

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
    """

    init: Callable[..., RunnerState]
    run: Callable[..., tuple[RunnerState, dict]]
    train: Callable[..., tuple[RunnerState, dict]]
    config: TrainConfig
    env: Environment
    env_params: EnvParams
    agent: Agent
    axis_names: tuple[str, ...] = ()


#: names of the vmap axes that `sweep` and `batched` put around a run.
SWEEP_AXES = ("hparams", "seeds")


def make_train(
    config: TrainConfig,
    env: Environment,
    agent: Agent,
    env_params: EnvParams | None = None,
    axis_names: tuple[str, ...] = (),
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

    Returns:
      A `Trainer`.
    """
    agent.check_batch(config.num_envs, config.rollout_len)
    vec_env = BatchedAutoReset(EpisodeStats(env), axis_names)
    default_params = env.default_params() if env_params is None else env_params
    E, T = config.num_envs, config.rollout_len
    total_updates = config.num_updates

    def init(key: Array, hparams: Any, env_params: EnvParams | None = None) -> RunnerState:
        env_params = default_params if env_params is None else env_params
        key_agent, key_env, key_run = jax.random.split(key, 3)
        agent_state = agent.init(key_agent, hparams)
        env_state, ts = vec_env.reset(jax.random.split(key_env, E), env_params)
        return RunnerState(
            agent_state=agent_state,
            env_state=env_state,
            timestep=ts,
            episode_start=jnp.ones((E,), bool),
            carry=agent.initial_carry(E),
            key=key_run,
            update_idx=jnp.int32(0),
        )

    def update_step(state: RunnerState, hparams: Any, env_params: EnvParams):
        def env_step(rs: RunnerState, _):
            key, key_act, key_env = jax.random.split(rs.key, 3)
            ts = rs.timestep
            observation = Observation(ts.obs, ts.action_mask, ts.global_state, rs.episode_start)
            actions, carry, info = agent.act(
                rs.agent_state, rs.carry, observation, key_act, hparams
            )
            env_state, ts_next = vec_env.step(
                jax.random.split(key_env, E), rs.env_state, actions, env_params
            )
            step_out = (
                observation,
                actions,
                ts_next.reward,
                ts_next.terminated,
                ts_next.truncated,
                ts_next.extras["final_obs"],
                ts_next.extras["final_global_state"],
                ts_next.extras["final_action_mask"],
                info,
                ts_next.extras["episode_return"],
                ts_next.extras["episode_length"],
                {k: v for k, v in ts_next.extras.items() if _is_episode_metric(k, v, E)},
            )
            rs = rs.replace(
                env_state=env_state,
                timestep=ts_next,
                episode_start=ts_next.done,
                carry=carry,
                key=key,
            )
            return rs, step_out

        initial_carry = state.carry
        state, out = jax.lax.scan(env_step, state, None, length=T)
        (obs, actions, reward, term, trunc, next_obs, next_gs, next_mask, info) = out[:9]
        ep_ret, ep_len, ep_metrics = out[9:]
        ts = state.timestep
        traj = Trajectory(
            observation=obs,
            actions=actions,
            reward=reward,
            terminated=term,
            truncated=trunc,
            next_obs=next_obs,
            next_global_state=next_gs,
            next_action_mask=next_mask,
            policy_info=info,
            last_observation=Observation(
                ts.obs, ts.action_mask, ts.global_state, state.episode_start
            ),
            initial_carry=initial_carry,
        )
        key, key_update = jax.random.split(state.key)
        agent_state, metrics = agent.update(state.agent_state, traj, hparams, key_update)

        # Episode statistics of the episodes that finished during this rollout (NaN if none).
        done = jnp.logical_or(term, trunc).astype(jnp.float32)  # [T, E]
        n_done = done.sum()
        safe = jnp.maximum(n_done, 1.0)
        per_agent = jnp.einsum("te,tea->a", done, ep_ret) / safe
        nan_if_none = jnp.where(n_done > 0, 1.0, jnp.nan)
        metrics = dict(metrics)
        metrics["episode_return"] = per_agent.mean() * nan_if_none
        metrics["episode_return_per_agent"] = per_agent * nan_if_none
        metrics["episode_length"] = (done * ep_len).sum() / safe * nan_if_none
        for name, value in ep_metrics.items():  # e.g. "social/efficiency" from SocialMetrics
            metrics[name] = (done * value).sum() / safe * nan_if_none
        metrics["num_episodes"] = n_done
        metrics["env_steps"] = (state.update_idx + 1) * (E * T)
        state = state.replace(agent_state=agent_state, key=key, update_idx=state.update_idx + 1)
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

    return Trainer(init, run, train, config, env, default_params, agent, tuple(axis_names))


#: runner metrics that are averages over the episodes finished in an update (NaN if none).
EPISODE_AVERAGES = ("episode_return", "episode_return_per_agent", "episode_length")


def combine_shard_metrics(metrics: dict[str, Array], axis_name: str) -> dict[str, Array]:
    """One update's runner metrics from shards of the environments, for the whole batch.

    Inside a mapped axis `axis_name` whose shards each ran `make_train`'s update on their own
    environments: episode averages (`EPISODE_AVERAGES` and `group/name` episode metrics) are
    weighted by each shard's finished episodes, `num_episodes` is summed, `env_steps` counts
    every shard's steps, and everything else (the agent's losses, which the data-parallel
    agents already average) is the mean over shards. Every shard returns the same values.
    """
    n = metrics["num_episodes"]
    count = jax.lax.psum(n, axis_name)
    out = {}
    for name, value in metrics.items():
        if name in EPISODE_AVERAGES or "/" in name:
            w = n.reshape(n.shape + (1,) * (value.ndim - n.ndim))
            total = jax.lax.psum(jnp.where(w > 0, value * w, 0.0), axis_name)
            c = count.reshape(w.shape)
            out[name] = jnp.where(c > 0, total / jnp.where(c > 0, c, 1.0), jnp.nan)
        elif name == "num_episodes":
            out[name] = count
        elif name == "env_steps":
            out[name] = value * jax.lax.psum(1, axis_name)
        else:
            out[name] = jax.lax.pmean(value, axis_name)
    return out


def _is_episode_metric(name: str, value: Array, num_envs: int) -> bool:
    """Extras named `group/name` with one scalar per env are per-episode metrics (see TimeStep)."""
    return "/" in name and value.shape == (num_envs,)


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
    return make_train(trainer.config, trainer.env, trainer.agent, trainer.env_params, SWEEP_AXES)


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
