"""Independent runs sharded over devices and hosts with `jax.sharding` (no process pool).

A sweep is `R = G * S` independent runs (hyperparameter settings x seeds). Flattened to one
*runs* axis, they are split over a 1-D `Mesh` of every device (all hosts' devices once
`jax.distributed.initialize` has run) with `NamedSharding(mesh, P("runs"))`; inside, each device
`vmap`s its `R / D` runs through the same fused training function:

    mesh = runs_mesh()                                   # all devices, axis "runs"
    fn = sharded_train(trainer, mesh)                    # jit(shard_map(vmap(train)))
    states, metrics = fn(shard_runs(keys, mesh), shard_runs(hparams, mesh))
    metrics = gather(metrics)                            # numpy [R, U] on every process

The runs never talk to each other: the only collective inside a run is the environments'
auto-reset predicate (`BatchedAutoReset` reduces "did an episode end?" over the named `vmap`
axis), and under `shard_map` that `psum` covers a device's own runs only, so a step costs no
cross-device communication. The predicate only decides whether a reset is computed at all (the
reset itself is selected per environment), so per-device reduction gives the same numbers as a
reduction over all runs.

Results equal the single-device program's up to float32 rounding: XLA vectorises a batch of
`R / D` runs per device differently from a batch of `R` runs, so reductions can differ in the
last bit (measured on CPU: <= 5e-7 absolute on a gradient norm, sampled actions and returns
identical). With the same number of runs per device (one process with 4 devices, or two
processes with 2 each) the results are bitwise identical (`tests/test_distributed.py`).

Multi-host: call `initialize()` (a thin wrapper of `jax.distributed.initialize`) in every
process before anything else touches JAX; every process then runs the same script, builds the
same global inputs, and `gather` returns the full results everywhere. On CPU the collectives
are gloo (`jax_cpu_collectives_implementation`, jax's default).

Data-parallel environments (one run, its `E` environments split over devices):

    mesh = envs_mesh()                                   # all devices, axis "envs"
    state = shard_envs(trainer.init(key, hparams), mesh) # env leaves split, agent replicated
    run = data_parallel_run(trainer, mesh)
    state, metrics = run(state, hparams, env_params, num_updates)

This uses XLA's automatic partitioner (GSPMD) instead of hand-written collectives: the runner
state's per-environment leaves (env states, latest timestep, episode flags, recurrent carry)
are sharded on their leading `E` axis, the agent state (parameters, optimiser state, replay
buffer) and the key are replicated, and `jit` partitions the unchanged program. Environment
steps and the forward passes of acting run locally on each device's environments; wherever
the agent's update reduces over the batch (loss means, i.e. the gradient average, value
normalisation statistics, minibatch shuffles, replay inserts) the partitioner inserts the
all-reduce or gather, so no agent needs a `pmean` of its own and every agent works unchanged.
The result is the single-device computation up to float32 reduction order
(`tests/test_distributed.py`). Costs to know: a replay buffer is replicated (every device
holds all of it), and minibatch shuffles across environments move data between devices.

Data-parallel learners (one run, its environments AND its learner split over devices; the
Anakin architecture of Hessel et al. 2021):

    states, metrics = data_parallel_train(trainer)(key, hparams)   # state leaves [D, ...]

Each device keeps its own share of the learner's data (rollout share, or its own replay
buffer) and its share of every batch; agents that support it (`Agent.data_parallel`) average
gradients and batch statistics with `pmean`, so the parameters stay identical on every device.
This is the fast path (the learner's arithmetic itself runs in parallel, also over the cores of
one CPU seen as several host devices); `data_parallel_run` is the general one.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from marljax.train import RunnerState, Trainer, make_train

#: name of the mesh axis the independent runs are sharded over.
RUNS_AXIS = "runs"
#: name of the mesh axis the environments of one run are split over (data parallel).
ENVS_AXIS = "envs"
#: name of the `vmap` axis over a device's own runs (the auto-reset `psum` reduces over it).
LOCAL_RUNS_AXIS = "local_runs"


def runs_mesh(devices: Sequence[Any] | None = None) -> Mesh:
    """A 1-D mesh with axis `"runs"` over `devices` (default: every device of every process)."""
    devices = jax.devices() if devices is None else list(devices)
    if not devices:
        raise ValueError("runs_mesh needs at least one device")
    return Mesh(np.asarray(devices), (RUNS_AXIS,))


def valid_run_counts(num_runs: int, num_devices: int) -> tuple[int, int]:
    """The nearest run counts around `num_runs` that `num_devices` divides: `(below, above)`.

    `below` is 0 when `num_runs < num_devices`.
    """
    below = (num_runs // num_devices) * num_devices
    above = -(-num_runs // num_devices) * num_devices
    return below, above


def check_divisible(num_runs: int, num_devices: int, what: str = "runs") -> None:
    """Raise `ValueError` naming the nearest valid counts if `num_devices` does not divide.

    Args:
      num_runs: runs `R = G * S` (or runs per call; environments when `what="envs"`).
      num_devices: devices of the mesh.
      what: `"runs"` (the sweep axis, which `pad=True` can fill) or `"envs"` (`num_envs`).
    """
    if num_runs < 1 or num_devices < 1:
        raise ValueError(f"need >= 1 {what} and >= 1 device, got {num_runs} {what}, {num_devices}")
    if num_runs % num_devices:
        below, above = valid_run_counts(num_runs, num_devices)
        choices = " or ".join(str(n) for n in (below, above) if n > 0)
        divisors = [d for d in range(1, num_devices + 1) if num_runs % d == 0]
        if what == "envs":
            hint = f"TrainConfig.num_envs = {choices}"
            tail = "."
        else:
            hint = f"{choices} runs (hparams settings x seeds)"
            tail = (
                ", or pad=True to fill the last devices with copies of the last run (dropped "
                "from the results)."
            )
        raise ValueError(
            f"{num_runs} {what} cannot be split evenly over {num_devices} devices. Use {hint}, "
            f"or {max(divisors)} device(s) (a device count dividing {num_runs}: "
            f"{divisors}){tail}"
        )


def pad_runs(tree: Any, num_runs: int) -> Any:
    """Pad every leaf's leading runs axis to `num_runs` with copies of its last entry."""

    def pad(x):
        x = np.asarray(x)
        extra = num_runs - x.shape[0]
        if extra < 0:
            raise ValueError(f"cannot pad {x.shape[0]} runs down to {num_runs}")
        if extra == 0:
            return x
        return np.concatenate([x, np.repeat(x[-1:], extra, axis=0)], axis=0)

    return jax.tree.map(pad, tree)


def shard_runs(tree: Any, mesh: Mesh) -> Any:
    """Place a pytree with leading runs axis `[R, ...]` as global arrays sharded over `"runs"`.

    Works in one process and in several (every process passes the same full host data; each
    keeps the rows of its own devices). `R` must be a multiple of the mesh size.
    """
    sharding = NamedSharding(mesh, P(RUNS_AXIS))

    def place(x):
        x = np.asarray(x)
        check_divisible(x.shape[0], mesh.size)
        if jax.process_count() == 1:
            return jax.device_put(x, sharding)
        return jax.make_array_from_callback(x.shape, sharding, lambda idx: x[idx])

    return jax.tree.map(place, tree)


def replicate(tree: Any, mesh: Mesh) -> Any:
    """Place a pytree replicated on every device of `mesh` (e.g. env params shared by all runs)."""
    sharding = NamedSharding(mesh, P())

    def place(x):
        x = np.asarray(x)
        if jax.process_count() == 1:
            return jax.device_put(x, sharding)
        return jax.make_array_from_callback(x.shape, sharding, lambda idx: x[idx])

    return jax.tree.map(place, tree)


def runs_trainer(trainer: Trainer, axis_name: str = LOCAL_RUNS_AXIS) -> Trainer:
    """`trainer` rebuilt to run under a `vmap` over runs named `axis_name` (see `make_train`)."""
    if trainer.axis_names == (axis_name,):
        return trainer
    return make_train(trainer.config, trainer.env, trainer.agent, trainer.env_params, (axis_name,))


def vmapped_train(trainer: Trainer) -> Callable:
    """`train(keys [R], hparams [R], env_params) -> (states [R], metrics [R, U])`, unjitted.

    One flat `vmap` over runs, each run with its own key and hparams row. The same function
    runs on one device (`jax.jit`) and per device inside `sharded_train`.
    """
    named = runs_trainer(trainer)
    return jax.vmap(named.train, in_axes=(0, 0, None), axis_name=LOCAL_RUNS_AXIS)


def sharded_train(trainer: Trainer, mesh: Mesh | None = None, env_params: Any = None) -> Callable:
    """The fused training of `R` runs sharded over `mesh`'s `"runs"` axis, jitted once.

    Args:
      trainer: from `make_train`.
      mesh: a mesh with a `"runs"` axis (default `runs_mesh()`: every device).
      env_params: env params shared by every run (default: the trainer's), closed over as
        constants.

    Returns:
      `fn(keys [R], hparams [R]) -> (states [R], metrics [R, U])`, with inputs and outputs
      sharded `NamedSharding(mesh, P("runs"))`; `R` must be a multiple of the mesh size
      (`pad_runs`). Inside, each device `vmap`s over its `R / D` runs.
    """
    mesh = runs_mesh() if mesh is None else mesh
    inner = vmapped_train(trainer)

    def per_device(keys, hparams):
        return inner(keys, hparams, env_params)

    mapped = jax.shard_map(
        per_device,
        mesh=mesh,
        in_specs=(P(RUNS_AXIS), P(RUNS_AXIS)),
        out_specs=P(RUNS_AXIS),
        check_vma=False,  # runs are independent; nothing is replicated to check
    )
    sharding = NamedSharding(mesh, P(RUNS_AXIS))
    return jax.jit(mapped, in_shardings=sharding, out_shardings=sharding)


def gather(tree: Any) -> Any:
    """Every leaf as a full host numpy array, on every process (an all-gather across hosts)."""
    if jax.process_count() == 1:
        return jax.tree.map(np.asarray, tree)
    from jax.experimental import multihost_utils

    return jax.tree.map(
        lambda x: np.asarray(multihost_utils.process_allgather(x, tiled=True)), tree
    )


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    local_device_ids: Sequence[int] | None = None,
    cpu_devices: int | None = None,
) -> None:
    """Join a multi-process JAX program (call first, before any other JAX call).

    A thin wrapper of `jax.distributed.initialize`: with no arguments JAX detects the cluster
    (SLURM, Open MPI, Cloud TPU, Kubernetes); otherwise name the coordinator `host:port`, the
    number of processes and this process's id. Afterwards `jax.devices()` lists every
    process's devices and `runs_mesh()` spans all of them.

    Args:
      coordinator_address: `host:port` of process 0 (e.g. `"localhost:12345"`).
      num_processes: number of processes.
      process_id: this process's id in `[0, num_processes)`.
      local_device_ids: restrict this process to these local devices (e.g. one GPU each).
      cpu_devices: on CPU, the number of devices this process exposes
        (`jax_num_cpu_devices`; for testing multi-device code on one machine).
    """
    if cpu_devices is not None:
        jax.config.update("jax_num_cpu_devices", int(cpu_devices))
    # gloo is jax's default CPU collectives backend; set it explicitly so CPU-only clusters
    # get cross-process all-gathers even if a site config changed the default.
    if os.environ.get("JAX_CPU_COLLECTIVES_IMPLEMENTATION") is None:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=coordinator_address,
        num_processes=num_processes,
        process_id=process_id,
        local_device_ids=local_device_ids,
    )


def run_sharded(
    trainer: Trainer,
    keys: jax.Array,
    hparams: Any,
    mesh: Mesh | None = None,
    env_params: Any = None,
    pad: bool = True,
) -> tuple[Any, dict[str, np.ndarray]]:
    """Train `R` runs (one key and hparams row each) sharded over `mesh`; host results.

    Args:
      trainer: from `make_train`.
      keys: `[R]` PRNG keys.
      hparams: hparams pytree with leaves `[R]`.
      mesh: default `runs_mesh()`.
      env_params: env params shared by all runs.
      pad: pad the runs to a multiple of the device count with copies of the last run (dropped
        again from the results); with `pad=False` a count that does not divide raises a
        `ValueError` naming the nearest valid choices.

    Returns:
      `(states, metrics)` as numpy arrays with leading axis `[R]`, on every process.
    """
    mesh = runs_mesh() if mesh is None else mesh
    num_runs = int(np.shape(keys)[0])
    if pad:
        padded = valid_run_counts(num_runs, mesh.size)[1]
        keys, hparams = pad_runs((keys, hparams), padded)
    else:
        check_divisible(num_runs, mesh.size)
    fn = sharded_train(trainer, mesh, env_params)
    out = fn(shard_runs(keys, mesh), shard_runs(hparams, mesh))
    return jax.tree.map(lambda x: x[:num_runs], gather(out))


def envs_mesh(devices: Sequence[Any] | None = None) -> Mesh:
    """A 1-D mesh with axis `"envs"` over `devices` (default: every device of every process)."""
    devices = jax.devices() if devices is None else list(devices)
    if not devices:
        raise ValueError("envs_mesh needs at least one device")
    return Mesh(np.asarray(devices), (ENVS_AXIS,))


def envs_shardings(state: RunnerState, mesh: Mesh) -> RunnerState:
    """The sharding of each leaf of a runner state for data-parallel environments.

    Per-environment leaves (`env_state`, `timestep`, `episode_start`, `carry`; leading axis
    `E`) are split over `"envs"`; the agent state, key and update counter are replicated.
    """
    split, whole = NamedSharding(mesh, P(ENVS_AXIS)), NamedSharding(mesh, P())
    per_env = lambda tree: jax.tree.map(lambda _: split, tree)  # noqa: E731
    per_run = lambda tree: jax.tree.map(lambda _: whole, tree)  # noqa: E731
    return state.replace(
        agent_state=per_run(state.agent_state),
        env_state=per_env(state.env_state),
        timestep=per_env(state.timestep),
        episode_start=split,
        carry=per_env(state.carry),
        key=whole,
        update_idx=whole,
    )


def shard_envs(state: RunnerState, mesh: Mesh) -> RunnerState:
    """Place one run's state (from `trainer.init`) with its environments split over `mesh`.

    Raises:
      ValueError: the number of environments is not a multiple of the device count (naming
        the nearest valid `num_envs` and device counts).
    """
    num_envs = int(np.shape(state.episode_start)[0])
    check_divisible(num_envs, mesh.size, what="envs")
    shardings = envs_shardings(state, mesh)
    return jax.tree.map(jax.device_put, state, shardings)


def data_parallel_run(trainer: Trainer, mesh: Mesh | None = None) -> Callable:
    """`run(state, hparams, env_params, num_updates)` with the environments split over `mesh`.

    The trainer's own chunked `run`, jitted with the state's environment leaves sharded over
    the mesh's `"envs"` axis (see the module docstring); `num_updates` is static. Pass a state
    placed by `shard_envs`; the returned state keeps that placement, so chunks chain.
    """
    mesh = envs_mesh() if mesh is None else mesh
    check_divisible(trainer.config.num_envs, mesh.size, what="envs")
    whole = NamedSharding(mesh, P())
    abstract = jax.eval_shape(trainer.init, jax.random.key(0), trainer.agent.default_hparams())
    state_shardings = envs_shardings(abstract, mesh)
    return jax.jit(
        trainer.run,
        static_argnums=3,
        in_shardings=(state_shardings, whole, whole),
        out_shardings=(state_shardings, whole),
    )


def data_parallel_train(
    trainer: Trainer, mesh: Mesh | None = None, env_params: Any = None
) -> Callable:
    """ONE run with its environments and its learner split over devices (Anakin-style).

    Each of the `D` devices of `mesh`'s `"envs"` axis steps `E / D` environments, keeps the
    learner's data of those environments (its share of a PPO rollout, or a replay buffer of its
    own sequences holding `buffer_size / D`) and computes the loss on its share of every
    (mini)batch (`batch_size / D` sequences for the value learners); gradients and batch
    statistics (advantage and value normalisation) are averaged over the devices with `pmean`
    (`Agent.data_parallel`), so every device applies the same update and the parameters stay
    identical everywhere. The communication is one all-reduce per gradient step (plus one per
    PPO minibatch for the advantage statistics and one per update for ValueNorm). The
    agent starts from the same parameters on every device (the run's key); the environments
    and the acting noise use `fold_in(key, device)`, so with `D > 1` a run samples different
    trajectories than `trainer.train` with the same key (with `D = 1` it is `trainer.train`).

    Unlike `data_parallel_run` (GSPMD, any agent, a replicated learner whose batch work XLA
    partitions), this needs agents that support it (`Agent.data_parallel`: PPO-family, the value
    learners and HASAC/MASAC) and makes the learner's arithmetic itself parallel, which is what makes
    it faster even on one multi-core CPU seen as several host devices
    (`XLA_FLAGS=--xla_force_host_platform_device_count=2`): small batches do not spread over
    cores inside one XLA:CPU device.

    Args:
      trainer: from `make_train`; its `num_envs` (and a value learner's `batch_size` and
        `buffer_size`) must be multiples of the device count.
      mesh: a mesh with an `"envs"` axis (default `envs_mesh()`: every device).
      env_params: env params (default: the trainer's).

    Returns:
      `fn(key, hparams) -> (state, metrics)`, jitted: `metrics` are the runner's `[U]` metrics
      of the whole run (episode averages over every device's episodes, losses averaged over
      devices); every leaf of `state` has a leading `[D]` device axis (environment leaves then
      `[D, E / D, ...]`; the agent's parameters are the same on every device).

    Raises:
      ValueError: the agent does not support data-parallel learners, or a batch size does not
        divide by the device count (naming valid choices).
    """
    mesh = envs_mesh() if mesh is None else mesh
    if ENVS_AXIS not in mesh.shape:
        raise ValueError(f"the mesh needs an {ENVS_AXIS!r} axis (see envs_mesh), got {mesh.shape}")
    D = mesh.shape[ENVS_AXIS]
    config = trainer.config
    check_divisible(config.num_envs, D, what="envs")
    if trainer.agent.data_parallel is None:
        raise ValueError(
            "this agent does not support data-parallel learners (Agent.data_parallel is None); "
            "use data_parallel_run (GSPMD, any agent) instead"
        )
    agent = trainer.agent if D == 1 else trainer.agent.data_parallel(ENVS_AXIS, D)
    try:
        agent.check_batch(config.num_envs // D, config.rollout_len)
    except ValueError as err:
        raise ValueError(
            f"with {D} devices each device steps num_envs / {D} = {config.num_envs // D} "
            f"environments: {err}"
        ) from None
    local_config = dataclasses.replace(
        config,
        num_envs=config.num_envs // D,
        total_env_steps=config.num_updates * config.steps_per_update // D,
    )
    # With D > 1 each device's runner combines its metrics over the devices' shards.
    shard_axis = ENVS_AXIS if D > 1 else None
    local = make_train(local_config, trainer.env, agent, trainer.env_params, shard_axis=shard_axis)
    num_updates = local_config.num_updates

    def per_device(key, hparams):
        state = local.init(key, hparams, env_params)  # the agent's start: the same everywhere
        if D > 1:
            own = local.init(
                jax.random.fold_in(key, jax.lax.axis_index(ENVS_AXIS)), hparams, env_params
            )
            state = own.replace(agent_state=state.agent_state)
        state, metrics = local.run(state, hparams, env_params, num_updates)
        return jax.tree.map(lambda x: x[None], state), metrics

    mapped = jax.shard_map(
        per_device,
        mesh=mesh,
        in_specs=(P(), P()),
        out_specs=(P(ENVS_AXIS), P()),
        check_vma=False,  # metrics are reduced over the axis; the state is per device
    )
    return jax.jit(mapped)


def as_float32_rows(hparams: Any, num_runs: int) -> Any:
    """hparams with every leaf as a float32 `[num_runs]` array (broadcasting scalars)."""
    return jax.tree.map(
        lambda x: np.broadcast_to(np.asarray(x, np.float32), (num_runs,)).copy(), hparams
    )


__all__ = [
    "ENVS_AXIS",
    "LOCAL_RUNS_AXIS",
    "RUNS_AXIS",
    "as_float32_rows",
    "check_divisible",
    "data_parallel_run",
    "data_parallel_train",
    "envs_mesh",
    "envs_shardings",
    "gather",
    "initialize",
    "pad_runs",
    "replicate",
    "run_sharded",
    "runs_mesh",
    "runs_trainer",
    "shard_runs",
    "shard_envs",
    "sharded_train",
    "valid_run_counts",
    "vmapped_train",
]
