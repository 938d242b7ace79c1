"""Training: the whole run as one jittable function of a key, with seeds and hparams as vmap axes.

    trainer = make_train(TrainConfig(), env, agent)
    state, metrics = jax.jit(trainer.train)(key, hparams)            # fused: one call
    state = trainer.init(key, hparams)                                # chunked: same step function
    state, metrics = jax.jit(trainer.run, static_argnums=3)(state, hparams, env_params, 10)
    states, metrics = sweep(trainer, keys, hparam_grid)               # grid x seeds, one program

Many runs, chunks, devices, checkpoints and callbacks: `marljax.training.execute.execute`.

An *update* is a `lax.scan` of `rollout_len` environment steps over `num_envs` environments
(`marljax.training.rollout.rollout`) followed by `agent.update`; a run is a `lax.scan` of updates. The carry (`RunnerState`) holds
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

from marljax.agents.base import Agent
from marljax.core.config import param
from marljax.core.types import Environment, EnvParams, TimeStep
from marljax.core.wrappers import any_across_vmap
from marljax.training import rollout

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
      eval_interval: greedy evaluation every this many updates and after the last one (0: no
        evaluation inside the program; -1: about 10 per run, `num_updates // 10`, when the env
        params have a `max_steps` or `eval_steps` is set, else none). See `make_train`.
      eval_episodes: episodes per evaluation: that many fresh environments, each played to the
        end of its first episode.
      eval_steps: step budget of one evaluation (0: the env params' `max_steps`, or
        `num_rounds` when smaller); an episode still running after it does not count.
    """

    num_envs: int = param(16, lo=1, help="parallel environments per run")
    rollout_len: int = param(32, lo=1, help="environment steps per update")
    total_env_steps: int = param(
        40_960, lo=1, help="environment steps per run (rounded down to whole updates)"
    )
    progress: bool = param(False, help="report progress from inside the compiled program")
    eval_interval: int = param(
        0, lo=-1, help="greedy evaluation every N updates and after the last (0: none, -1: ~10)"
    )
    eval_episodes: int = param(16, lo=1, help="episodes per evaluation (one per fresh env)")
    eval_steps: int = param(0, lo=0, help="step budget per evaluation (0: the env's max_steps)")

    def __post_init__(self):
        for name in ("num_envs", "rollout_len", "total_env_steps", "eval_episodes"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"TrainConfig.{name} must be >= 1, got {getattr(self, name)}")
        for name, low in (("eval_interval", -1), ("eval_steps", 0)):
            if int(getattr(self, name)) < low:
                raise ValueError(f"TrainConfig.{name} must be >= {low}, got {getattr(self, name)}")
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
        """The acting loop's part of the carry (see `marljax.training.rollout`)."""
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
      run: `run(state, hparams, env_params, num_updates, live=None) -> (state, metrics)`;
        `num_updates` is static (jit with `static_argnums=3`). Metrics are `[num_updates]`
        arrays. `live` (a traced int) does only the first `live` updates and leaves the state
        as it is for the rest (their metrics are NaN, or 0 for integers): one compiled program
        of `num_updates` runs a shorter last chunk too.
      train: `train(key, hparams, env_params=None) -> (state, metrics)`, the fused whole run.
      config: the `TrainConfig`.
      env: the core environment given to `make_train`.
      env_params: the default env params of this trainer.
      agent: the agent.
    """

    init: Callable[..., RunnerState]
    run: Callable[..., tuple[RunnerState, dict]]
    train: Callable[..., tuple[RunnerState, dict]]
    config: TrainConfig
    env: Environment
    env_params: EnvParams
    agent: Agent


def make_train(
    config: TrainConfig,
    env: Environment,
    agent: Agent,
    env_params: EnvParams | None = None,
    *,
    axis_name: str | None = None,
) -> Trainer:
    """Build the pure training functions for `agent` on `env`.

    Args:
      config: static run configuration.
      env: a core environment (it is wrapped with episode statistics and auto-reset here).
      agent: an `Agent` built for this env.
      env_params: default env params (may be overridden per call, e.g. to sweep a game family).
      axis_name: passed to `agent.update(..., axis_name=)` when set: the mapped axis over which
        data-parallel learners average (the `"envs"` layout of `marljax.training.execute` sets
        it); None (default) calls `update` without it.

    The functions know nothing of devices or of the runs around them: under any `vmap` (runs,
    seeds, a user's own) the environments auto-reset only on steps where an episode ended in
    some run of the batch, a real branch (`marljax.core.wrappers.any_across_vmap`); layouts over
    devices are options of `marljax.training.execute`.

    With `config.eval_interval > 0`, every `eval_interval`-th update and the last one end with a
    greedy evaluation (`evaluate_greedy`) inside the program, reported as `eval/...` metrics
    (NaN on the other updates). It draws from its own keys (folded from the run's key without
    advancing it), so training is the same, bit for bit, with or without evaluation; the branch
    is real under `vmap`, so updates without evaluation do not pay for it.

    Returns:
      A `Trainer`.
    """
    agent.check_batch(config.num_envs, config.rollout_len)
    vec_env = rollout.batched_env(env)
    default_params = env.default_params() if env_params is None else env_params
    config = _resolve_eval_interval(config, default_params)
    E, T = config.num_envs, config.rollout_len
    total_updates = config.num_updates
    evaluate = (
        make_evaluate(env, agent, config.eval_episodes, eval_budget(config, default_params))
        if config.eval_interval > 0
        else None
    )

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
        if axis_name is None:
            agent_state, metrics = agent.update(state.agent_state, traj, hparams, key_update)
        else:
            agent_state, metrics = agent.update(
                state.agent_state, traj, hparams, key_update, axis_name=axis_name
            )
        # Episode statistics of the episodes that finished during this rollout (NaN if none).
        metrics = {**metrics, **rollout.episode_statistics(transitions.episode)}
        metrics["env_steps"] = (state.update_idx + 1) * (E * T)
        state = state.replace_rollout_state(acting.replace(key=key)).replace(
            agent_state=agent_state, update_idx=state.update_idx + 1
        )
        if evaluate is not None:
            metrics = {**metrics, **evaluate_now(state, hparams, env_params)}
        if config.progress:
            jax.debug.callback(_report_progress, state.update_idx, metrics["episode_return"])
        return state, metrics

    def evaluate_now(state: RunnerState, hparams: Any, env_params: EnvParams) -> dict:
        n = state.update_idx
        due = any_across_vmap((n % config.eval_interval == 0) | (n == total_updates))
        key = jax.random.fold_in(state.key, EVAL_STREAM)  # the run's own stream is not advanced
        skipped = jax.eval_shape(evaluate, state.agent_state, hparams, env_params, key)
        return jax.lax.cond(
            due,
            lambda: evaluate(state.agent_state, hparams, env_params, key),
            lambda: _blank(skipped),
        )

    def run(
        state: RunnerState,
        hparams: Any,
        env_params: EnvParams | None,
        num_updates: int,
        live: Array | None = None,
    ):
        env_params = default_params if env_params is None else env_params

        def step(s):
            return update_step(s, hparams, env_params)

        if live is None:
            return jax.lax.scan(lambda s, _: step(s), state, None, length=num_updates)

        def skip(s):  # a masked update: the state as it is, blank metrics
            return s, _blank(jax.eval_shape(step, s)[1])

        def body(s, i):
            return jax.lax.cond(i < live, step, skip, s)

        return jax.lax.scan(body, state, jnp.arange(num_updates))

    def train(key: Array, hparams: Any, env_params: EnvParams | None = None):
        state = init(key, hparams, env_params)
        return run(state, hparams, env_params, total_updates)

    return Trainer(init, run, train, config, env, default_params, agent)


def _blank(shapes: Any) -> Any:
    """Metrics of `shapes` (`jax.ShapeDtypeStruct`s) for a computation that did not run (a
    skipped evaluation, a masked update): NaN, or 0 for integers and booleans."""

    def blank(x: Any) -> Array:
        return jnp.full(x.shape, jnp.nan if jnp.issubdtype(x.dtype, jnp.floating) else 0, x.dtype)

    return jax.tree.map(blank, shapes)


#: runner metrics that are averages over the episodes finished in an update (NaN if none).
EPISODE_AVERAGES = ("episode_return", "episode_return_per_agent", "episode_length")
#: prefix of the in-program evaluation's metrics.
EVAL_PREFIX = "eval/"
#: `fold_in` constant of the evaluation's keys (any fixed value apart from the run's stream).
EVAL_STREAM = 0x45564C  # "EVL"


def _resolve_eval_interval(config: TrainConfig, env_params: EnvParams) -> TrainConfig:
    """`eval_interval=-1` made concrete: `num_updates // 10` (at least 1), or 0 when no step
    budget is known."""
    if config.eval_interval != -1:
        return config
    known = config.eval_steps > 0 or getattr(env_params, "max_steps", None) is not None
    interval = max(1, config.num_updates // 10) if known else 0
    return dataclasses.replace(config, eval_interval=interval)


def eval_budget(config: TrainConfig, env_params: EnvParams) -> int:
    """Steps of one evaluation: `config.eval_steps`, or the env params' longest episode: its
    `max_steps`, or `num_rounds` when smaller (repeated games end after their rounds)."""
    if config.eval_steps > 0:
        return int(config.eval_steps)
    max_steps = getattr(env_params, "max_steps", None)
    rounds = getattr(env_params, "num_rounds", None)
    if max_steps is not None and rounds is not None:
        max_steps = min(int(max_steps), int(rounds))
    if max_steps is None:
        raise ValueError(
            f"{type(env_params).__name__} has no max_steps: set TrainConfig.eval_steps, the step "
            "budget of one evaluation"
        )
    return int(max_steps)


def make_evaluate(env: Environment, agent: Agent, num_episodes: int, num_steps: int) -> Callable:
    """`evaluate(agent_state, hparams, env_params, key) -> eval/... metrics` (greedy policy).

    `num_episodes` fresh environments act with `agent.act(..., greedy=True)` for `num_steps`
    steps; each contributes its FIRST episode (later ones are dropped, so short episodes do not
    outweigh long ones). Returns `eval/episode_return` (mean over agents),
    `eval/episode_return_per_agent`, `eval/episode_length`, each per-episode `group/name`
    metric as `eval/group/name`, and `eval/num_episodes` (episodes that ended within the
    budget; the averages are NaN when none did).
    """
    vec_env = rollout.batched_env(env)

    def evaluate(agent_state: Any, hparams: Any, env_params: EnvParams, key: Array) -> dict:
        key_reset, key_run = jax.random.split(key)
        carry = agent.initial_carry(num_episodes)
        state = rollout.reset(vec_env, env_params, key_reset, key_run, num_episodes, carry)
        _, episodes = rollout.rollout(
            vec_env, env_params, agent, agent_state, hparams, state, num_steps,
            greedy=True, record=lambda t: t.episode,
        )  # fmt: skip
        first = episodes.done & (jnp.cumsum(episodes.done.astype(jnp.int32), axis=0) == 1)
        stats = rollout.episode_statistics(episodes.replace(done=first))
        return {EVAL_PREFIX + k: v for k, v in stats.items()}

    return evaluate


def evaluate_bytes(
    env: Environment,
    agent: Agent,
    env_params: EnvParams,
    agent_state: Any,
    hparams: Any,
    num_episodes: int,
    num_steps: int,
) -> int:
    """Bytes `make_evaluate`'s evaluation of one agent state holds: `num_episodes` env states
    and every step's episode record (shapes traced for one env and one step; nothing runs)."""
    vec_env = rollout.batched_env(env)

    def one(key):
        state = rollout.reset(vec_env, env_params, key, key, 1, agent.initial_carry(1))
        _, episodes = rollout.rollout(
            vec_env, env_params, agent, agent_state, hparams, state, 1,
            greedy=True, record=lambda t: t.episode,
        )  # fmt: skip
        return state, episodes

    state, episodes = jax.eval_shape(one, jax.random.PRNGKey(0))
    size = lambda tree: sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(tree))  # noqa: E731
    return int(num_episodes) * (size(state) + int(num_steps) * size(episodes))


def combine_shard_metrics(metrics: dict[str, Array], axis_name: str) -> dict[str, Array]:
    """One update's runner metrics from shards of the environments, for the whole batch.

    Inside a mapped axis `axis_name` whose shards each ran `make_train`'s update on their own
    environments: episode averages (`EPISODE_AVERAGES` and `group/name`
    episode metrics) are weighted by each shard's finished episodes
    (`marljax.training.rollout.episode_averages`), `num_episodes` is summed, `env_steps` counts every
    shard's steps, and everything else (the agent's losses, which the data-parallel agents
    already average) is the mean over shards. Every shard returns the same values.
    `marljax.training.execute`'s `"envs"` layout applies it to every chunk.
    """
    episode = _shard_episode_averages(metrics, "", axis_name)
    if EVAL_PREFIX + "num_episodes" in metrics:
        episode.update(_shard_episode_averages(metrics, EVAL_PREFIX, axis_name))
    out = {}
    for name, value in metrics.items():
        if name in episode:
            out[name] = episode[name]
        elif name == "env_steps":
            out[name] = value * jax.lax.psum(1, axis_name)
        else:
            out[name] = jax.lax.pmean(value, axis_name)
    return out


def _shard_episode_averages(metrics: dict[str, Array], prefix: str, axis_name: str) -> dict:
    """The episode averages among `metrics` named `prefix...`, weighted over the shards."""
    n = metrics[prefix + "num_episodes"]
    totals = {}
    for name, value in metrics.items():
        rest = name[len(prefix) :]
        if not name.startswith(prefix) or rest == "num_episodes" or not rest:
            continue
        if not prefix and name.startswith(EVAL_PREFIX):
            continue
        if rest in EPISODE_AVERAGES or "/" in rest:
            w = n.reshape(n.shape + (1,) * (value.ndim - n.ndim))
            totals[rest] = jnp.where(w > 0, value * w, 0.0)
    means = rollout.episode_averages(totals, n, axis_name)
    return {prefix + k: v for k, v in means.items()}


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
