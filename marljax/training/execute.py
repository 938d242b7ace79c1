"""The one execution engine: every run of marljax goes through `execute`.

    out = execute(trainer, keys, hparams)                     # R runs, every device, chunked
    out.metrics["episode_return"]                              # numpy [R, U]

A call trains `R` independent runs (one PRNG key and one hparams row each: a grid x seeds
flattened, run `r = g * S + s`) of one `Trainer`. The options are orthogonal:

- **layout** `"runs"` (default): the runs are sharded over a 1-D device mesh (axis `"runs"`,
  `shard_map` of a `vmap` over each device's runs); they never communicate, so the results are
  the one-device results up to float32 reduction order. `"envs"`: every run's environments and
  learner are split over the mesh (axis `"envs"`; the Anakin architecture of Hessel et al. 2021:
  each device steps `E / D` envs, keeps its share of the learner's data and averages gradients
  with the others: the engine gives each device its share of the sizes the agent's config
  declares `param(..., split=True)` (`for_devices`) and passes the axis name to
  `agent.update(..., axis_name="envs")`; agents know nothing of devices).
- **chunking**: the run's `U` updates go in chunks of `chunk_updates` (one compiled program for
  every full chunk, one more for a shorter last chunk); between chunks the callbacks run.
- **memory**: the chunk program is compiled from shapes first and XLA's memory analysis checked
  against `max_memory_bytes`; runs that do not fit in one call are split into calls of one
  program of fewer runs (`runs_per_call`), and one run that does not fit is refused before
  anything runs.
- **callbacks** `fn(Chunk) -> bool | None` between chunks (progress, checkpoints, finiteness
  checks, logging); returning True stops after that chunk. An exception stops the run.
- **start**: continue from a saved state (`Start`, e.g. a checkpoint), bit for bit on CPU.
- **adapt** `fn(Chunk) -> Adaptation | None` between chunks, before the callbacks: new traced
  hparams, copies of one run's state into another, stopped runs (PBT and successive halving,
  `marljax.training.tune`).

`marljax train`, `marljax sweep`, `marljax.shell.experiment` and the benches are configurations of it
(`programs` gives the benches the compiled fused programs themselves).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import os
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from marljax.agents.base import Agent
from marljax.core.config import ConfigError, split_config
from marljax.core.types import EnvParams
from marljax.training.rollout import TASK_METRIC_PREFIX, task_metric_names
from marljax.training.train import Trainer, combine_shard_metrics, make_train

#: name of the mesh axis independent runs are sharded over.
RUNS_AXIS = "runs"
#: name of the mesh axis one run's environments (and learner) are split over.
ENVS_AXIS = "envs"
LAYOUTS = ("runs", "envs")
Layout = Literal["runs", "envs"]
Array = jax.Array


# ----------------------------------------------------------------------------- meshes


def make_mesh(layout: Layout = "runs", devices: int | Sequence[Any] | None = None) -> Mesh:
    """A 1-D mesh for `layout` (axis `"runs"` or `"envs"`) over `devices`.

    Args:
      layout: `"runs"` or `"envs"`.
      devices: a device list, a number of devices (the first ones of `jax.devices()`), or None
        for every device of every process.

    Raises:
      ConfigError: an unknown layout, or more devices than there are.
    """
    if layout not in LAYOUTS:
        raise ConfigError(f"layout must be one of {list(LAYOUTS)}, got {layout!r}")
    every = jax.devices()
    if devices is None:
        chosen = every
    elif isinstance(devices, (int, np.integer)):
        if not 1 <= int(devices) <= len(every):
            raise ConfigError(f"devices must be in [1, {len(every)}] here, got {devices}")
        chosen = every[: int(devices)]
    else:
        chosen = list(devices)
    return Mesh(np.asarray(chosen), (RUNS_AXIS if layout == "runs" else ENVS_AXIS,))


def check_divisible(count: int, num_devices: int, what: str = "runs") -> None:
    """Raise `ConfigError` naming the nearest valid counts if `num_devices` does not divide
    `count` (`what`: `"runs"`, the seeds x settings of a call, or `"envs"`, `num_envs`)."""
    if count < 1 or num_devices < 1:
        raise ConfigError(f"need >= 1 {what} and >= 1 device, got {count} {what}, {num_devices}")
    if count % num_devices:
        below, above = (count // num_devices) * num_devices, -(-count // num_devices) * num_devices
        choices = " or ".join(str(n) for n in (below, above) if n > 0)
        divisors = [d for d in range(1, num_devices + 1) if count % d == 0]
        hint = f"num_envs = {choices}" if what == "envs" else f"{choices} runs (settings x seeds)"
        pad = "" if what == "envs" else ", or pad=True (the CLI pads by default)"
        raise ConfigError(
            f"{count} {what} cannot be split evenly over {num_devices} devices. Use {hint}, or "
            f"{max(divisors)} device(s) (a device count dividing {count}: {divisors}){pad}."
        )


def pad_runs(tree: Any, num_runs: int) -> Any:
    """Pad every leaf's leading runs axis to `num_runs` with copies of its last entry."""

    def pad(x):
        x = np.asarray(x)
        extra = num_runs - x.shape[0]
        if extra < 0:
            raise ValueError(f"cannot pad {x.shape[0]} runs down to {num_runs}")
        return x if extra == 0 else np.concatenate([x, np.repeat(x[-1:], extra, axis=0)])

    return jax.tree.map(pad, tree)


def place(tree: Any, mesh: Mesh, spec: P) -> Any:
    """Host arrays as global arrays with `NamedSharding(mesh, spec)` (any number of processes:
    every process passes the same full host data and keeps its own devices' part)."""
    sharding = NamedSharding(mesh, spec)

    def put(x):
        x = np.asarray(x)
        if jax.process_count() == 1:
            return jax.device_put(x, sharding)
        return jax.make_array_from_callback(x.shape, sharding, lambda idx: x[idx])

    return jax.tree.map(put, tree)


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

    A thin wrapper of `jax.distributed.initialize` (with no arguments JAX detects SLURM, Open
    MPI, Cloud TPU or Kubernetes); afterwards `make_mesh()` spans every process's devices.
    `cpu_devices` sets `jax_num_cpu_devices` (testing multi-device code on one machine); CPU
    collectives use gloo.
    """
    if cpu_devices is not None:
        jax.config.update("jax_num_cpu_devices", int(cpu_devices))
    if os.environ.get("JAX_CPU_COLLECTIVES_IMPLEMENTATION") is None:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=coordinator_address,
        num_processes=num_processes,
        process_id=process_id,
        local_device_ids=local_device_ids,
    )


# ----------------------------------------------------------------------------- programs


@dataclasses.dataclass(frozen=True)
class Programs:
    """The jitted programs of a layout over `mesh` (their inputs are placed by `execute`).

    Attributes:
      init: `init(keys [R], hparams [R]) -> state`.
      run: `run(num_updates, masked=False)` -> jitted `fn(state, hparams [R]) -> (state,
        metrics [R, n])`; `masked`: `fn(state, hparams, live)` does only the first `live`
        updates (`Trainer.run`), so one program also runs a shorter last chunk. `fn` donates
        `state`: the call deletes it (pass a copy to keep it).
      train: `train(keys [R], hparams [R]) -> (state, metrics [R, U])`, the fused whole run.
      mesh: the mesh.
      layout: `"runs"` or `"envs"`.
    """

    init: Callable
    run: Callable[[int], Callable]
    train: Callable
    mesh: Mesh
    layout: str
    num_updates: int


def programs(
    trainer: Trainer, mesh: Mesh | None = None, layout: Layout = "runs", env_params: Any = None
) -> Programs:
    """Build the jitted init / chunk / fused programs of `trainer` for `layout` over `mesh`.

    `"runs"`: state leaves `[R, ...]` sharded over the mesh axis `"runs"`. `"envs"`: state
    leaves `[D, R, ...]` (device first; each device its own environments, the agent's
    parameters the same on every device), hparams and keys replicated, metrics `[R, n]` of the
    whole batch (episode averages over every device's episodes, env steps of every device).

    Raises:
      ConfigError: a mesh without the layout's axis; for `"envs"`, an agent without
        data-parallel support or a batch that does not divide over the devices.
    """
    mesh = make_mesh(layout) if mesh is None else mesh
    axis = RUNS_AXIS if layout == "runs" else ENVS_AXIS
    if layout not in LAYOUTS or axis not in mesh.shape:
        raise ConfigError(
            f"layout {layout!r} needs a mesh with an {axis!r} axis (see make_mesh), got "
            f"{dict(mesh.shape)}"
        )
    if layout == "runs":
        return _runs_programs(trainer, mesh, env_params)
    return _envs_programs(trainer, mesh, env_params)


#: The chunk programs donate their state argument: the new state is written into the old one's
#: buffers, so a call holds one copy of the runs' state (replay buffers included), not two, and
#: no copy of it is made. The state passed in is deleted by the call.
_DONATE_STATE = (0,)


def _runs_programs(trainer: Trainer, mesh: Mesh, env_params: Any) -> Programs:
    spec = P(RUNS_AXIS)
    init = jax.vmap(trainer.init, in_axes=(0, 0, None))
    train = jax.vmap(trainer.train, in_axes=(0, 0, None))

    def mapped(fn, n_in, donate=()):
        return _shard(fn, mesh, (spec,) * n_in, spec, donate)

    @functools.cache
    def run(num_updates: int, masked: bool = False):
        if masked:
            body = jax.vmap(trainer.run, in_axes=(0, 0, None, None, None))
            return _shard(
                lambda s, h, live: body(s, h, env_params, num_updates, live),
                mesh,
                (spec, spec, P()),
                spec,
                _DONATE_STATE,
            )
        body = jax.vmap(trainer.run, in_axes=(0, 0, None, None))
        return mapped(lambda s, h: body(s, h, env_params, num_updates), 2, _DONATE_STATE)

    return Programs(
        mapped(lambda k, h: init(k, h, env_params), 2),
        run,
        mapped(lambda k, h: train(k, h, env_params), 2),
        mesh,
        "runs",
        trainer.config.num_updates,
    )


def _envs_programs(trainer: Trainer, mesh: Mesh, env_params: Any) -> Programs:
    D = mesh.shape[ENVS_AXIS]
    config = trainer.config
    check_divisible(config.num_envs, D, what="envs")
    agent = trainer.agent
    if D > 1:
        agent = for_devices(agent, D)
        try:
            agent.check_batch(config.num_envs // D, config.rollout_len)
        except ValueError as err:
            raise ConfigError(
                f"with {D} devices each device steps num_envs / {D} = {config.num_envs // D} "
                f"environments: {err}"
            ) from None
    local = make_train(
        dataclasses.replace(
            config,
            num_envs=config.num_envs // D,
            total_env_steps=config.num_updates * config.steps_per_update // D,
        ),
        trainer.env,
        agent,
        trainer.env_params,
        axis_name=ENVS_AXIS if D > 1 else None,
    )

    def init_one(key, hparams):
        state = local.init(key, hparams, env_params)  # the agent's start: the same everywhere
        if D == 1:
            return state
        own = local.init(
            jax.random.fold_in(key, jax.lax.axis_index(ENVS_AXIS)), hparams, env_params
        )
        return own.replace(agent_state=state.agent_state)

    def run_one(state, hparams, num_updates, live=None):
        masked = () if live is None else (live,)
        state, metrics = local.run(state, hparams, env_params, num_updates, *masked)
        if D > 1:  # every device returns the whole batch's metrics
            metrics = combine_shard_metrics(metrics, ENVS_AXIS)
        return state, metrics

    def shard(fn, in_specs, out_specs, donate=()):
        return _shard(fn, mesh, in_specs, out_specs, donate)

    lead = lambda tree: jax.tree.map(lambda x: x[None], tree)  # noqa: E731
    drop = lambda tree: jax.tree.map(lambda x: x[0], tree)  # noqa: E731
    dev, rep = P(ENVS_AXIS), P()

    @functools.cache
    def run(num_updates: int, masked: bool = False):
        def body(state, hparams, live=None):
            s, m = jax.vmap(run_one, in_axes=(0, 0, None, None))(
                drop(state), hparams, num_updates, live
            )
            return lead(s), m

        if masked:
            return shard(body, (dev, rep, rep), (dev, rep), _DONATE_STATE)
        return shard(body, (dev, rep), (dev, rep), _DONATE_STATE)

    def train(keys, hparams):
        state = jax.vmap(init_one)(keys, hparams)
        s, m = jax.vmap(run_one, in_axes=(0, 0, None))(state, hparams, local.config.num_updates)
        return lead(s), m

    return Programs(
        shard(lambda k, h: lead(jax.vmap(init_one)(k, h)), (rep, rep), dev),
        run,
        shard(train, (rep, rep), (dev, rep)),
        mesh,
        "envs",
        local.config.num_updates,
    )


def for_devices(agent: Agent, num_devices: int) -> Agent:
    """`agent` as one of `num_devices` data-parallel learners: rebuilt from its config with
    `1 / num_devices` of every size declared `param(..., split=True)` (replay batch and
    capacity), unchanged when it declares none (e.g. PPO: each device steps its share of the
    environments). Its `update` must take `axis_name` (see `marljax.agents.base.UpdateFn`).

    Raises:
      ConfigError: the update takes no `axis_name`, the agent has sizes to split but no
        `config` / `rebuild`, or a size that does not divide by `num_devices`.
    """
    if "axis_name" not in inspect.signature(agent.update).parameters:
        raise ConfigError(
            "this agent does not support the 'envs' layout: its update takes no axis_name to "
            "average over the devices (marljax.agents.base.UpdateFn). Use the 'runs' layout."
        )
    if agent.config is None:
        return agent
    split = split_config(agent.config, num_devices)
    if split is agent.config:
        return agent
    if agent.rebuild is None:
        raise ConfigError(
            f"{type(agent.config).__name__} has sizes to divide over {num_devices} devices "
            "but the agent has no rebuild; use the 'runs' layout."
        )
    return agent.rebuild(split)


def _shard(
    fn: Callable, mesh: Mesh, in_specs: tuple, out_specs: Any, donate: tuple[int, ...] = ()
) -> Callable:
    """`jit(shard_map(fn))` with the inputs and outputs placed by their specs; the arguments
    `donate` are donated (XLA writes the outputs into their buffers, which are then deleted)."""
    named = lambda specs: jax.tree.map(  # noqa: E731
        lambda p: NamedSharding(mesh, p), specs, is_leaf=lambda x: isinstance(x, P)
    )
    mapped = jax.shard_map(
        fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False
    )  # runs never talk to each other; the envs layout's collectives are explicit
    return jax.jit(
        mapped, in_shardings=named(in_specs), out_shardings=named(out_specs), donate_argnums=donate
    )


# ----------------------------------------------------------------------------- memory


def default_memory_budget(mesh: Mesh | None = None) -> int:
    """Bytes one device may use: 80% of an accelerator's `bytes_limit`; on CPU half the
    available host memory shared by the local CPU devices."""
    local = _local_devices(mesh)
    if local[0].platform != "cpu":
        stats = local[0].memory_stats() or {}
        if "bytes_limit" in stats:
            return int(0.8 * stats["bytes_limit"])
    return int(0.5 * _host_available_bytes() / max(1, len(local)))


def _local_devices(mesh: Mesh | None) -> list:
    """This process's devices of `mesh` (default: of every device); all of them if none is."""
    devices = list(mesh.devices.flat) if mesh is not None else jax.devices()
    return [d for d in devices if d.process_index == jax.process_index()] or devices


def _on_cpu(mesh: Mesh) -> bool:
    """Whether `mesh`'s local devices are the host's CPU (their memory is the host's)."""
    return _local_devices(mesh)[0].platform == "cpu"


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


def parse_bytes(text: str | int) -> int:
    """A byte count from `"4GiB"`, `"512MB"`, `"2e9"` or an int (for `--max-memory`).

    Raises:
      ConfigError: an unparsable or non-positive size.
    """
    raw = str(text).strip().lower().replace(" ", "")
    units = {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "kb": 1e3, "mb": 1e6,
             "gb": 1e9, "tb": 1e12, "k": 2**10, "m": 2**20, "g": 2**30, "b": 1}  # fmt: skip
    scale = 1.0
    for suffix, factor in units.items():
        if raw.endswith(suffix):
            raw, scale = raw[: -len(suffix)], float(factor)
            break
    try:
        value = float(raw) * scale
    except ValueError:
        raise ConfigError(f"memory size must be like 4GiB, 512MB or 2e9, got {text!r}") from None
    if isinstance(text, bool) or not math.isfinite(value) or value < 1:
        raise ConfigError(f"memory size must be a positive number of bytes, got {text!r}")
    return int(value)


def fmt_bytes(n: float) -> str:
    """`1536` -> `"1.5 KiB"`."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


@dataclasses.dataclass
class MemoryEstimate:
    """XLA's memory analysis of one chunk call of `runs` runs on `devices` devices.

    Attributes:
      runs: runs in the call.
      devices: devices of the mesh.
      peak_bytes_per_device: arguments + outputs + temporaries - aliased, per device (None
        where the backend does not report it).
      compiled: the compiled chunk program (reused by `execute`).
    """

    runs: int
    devices: int
    peak_bytes_per_device: int | None
    compiled: Any = dataclasses.field(default=None, repr=False)
    runs_per_device: int = 0
    #: bytes of one run's training state (what a host buffer keeps per run between calls)
    state_bytes_per_run: int = 0

    @property
    def bytes_per_run(self) -> int | None:
        """Peak bytes per run on its device (None without an analysis)."""
        if self.peak_bytes_per_device is None:
            return None
        per_device = self.runs_per_device or max(1, self.runs // self.devices)
        return max(1, -(-self.peak_bytes_per_device // per_device))

    def __str__(self) -> str:
        if self.peak_bytes_per_device is None:
            return f"{self.runs} runs on {self.devices} device(s): no XLA memory analysis here"
        return (
            f"memory estimate: {self.runs} runs on {self.devices} device(s): XLA peak "
            f"{fmt_bytes(self.peak_bytes_per_device)} per device ({fmt_bytes(self.bytes_per_run)} "
            "per run)"
        )


def estimate_memory(
    progs: Programs,
    trainer: Trainer,
    num_runs: int,
    num_updates: int,
    hparams: Any = None,
    check: Check | None = None,
    masked: bool = False,
) -> MemoryEstimate:
    """Compile the chunk program of `num_updates` updates for `num_runs` runs from shapes alone
    and read XLA's memory analysis (nothing is allocated). `check` (see `execute`) is called
    between tracing and compiling; `masked`: the program with a live-update count
    (`Programs.run`)."""
    hparams = trainer.agent.default_hparams() if hparams is None else hparams
    keys = jax.ShapeDtypeStruct((num_runs, 2), jnp.uint32)
    hps = jax.tree.map(lambda _: jax.ShapeDtypeStruct((num_runs,), jnp.float32), hparams)
    state = jax.eval_shape(progs.init, keys, hps)
    live = (jax.ShapeDtypeStruct((), jnp.int32),) if masked else ()
    lowered = progs.run(num_updates, masked).lower(state, hps, *live)
    if check is not None:  # metrics [runs, updates, ...] -> one run's one update
        check(
            jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[2:], x.dtype), lowered.out_info[1])
        )
    compiled = lowered.compile()
    try:
        stats = compiled.memory_analysis()
    except (NotImplementedError, RuntimeError, AttributeError):
        stats = None
    peak = None
    if stats is not None:
        peak = int(
            stats.argument_size_in_bytes
            + stats.output_size_in_bytes
            + stats.temp_size_in_bytes
            - stats.alias_size_in_bytes
        )
    per_device = num_runs if progs.layout == "envs" else max(1, num_runs // progs.mesh.size)
    state_bytes = sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(state)) // num_runs
    return MemoryEstimate(num_runs, progs.mesh.size, peak, compiled, per_device, state_bytes)


# ----------------------------------------------------------------------------- execute


@dataclasses.dataclass
class Start:
    """Where to continue: a state with leading runs axis `[R, ...]` (host arrays, as `execute`
    returns and checkpoints store it), the updates it has done and the metrics `[R, done]`."""

    state: Any
    done: int
    metrics: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    #: `[R]` bool: the runs to continue (None: all); the others stay as they are, not computed
    #: (e.g. runs that successive halving stopped).
    active: Any = None


@dataclasses.dataclass
class Adaptation:
    """A change of the runs between two chunks, returned by `execute`'s `adapt` (population-based
    training, successive halving; `marljax.training.tune`). New hparams and copies keep the
    compiled program (hyperparameters are traced); stopping runs leaves fewer runs to compute,
    so the chunk program is compiled once more for the new count.

    Attributes:
      hparams: the hparams of every run from now on (leaves `[R]`; None: unchanged).
      source: `[R]` ints: run `r` continues from a copy of run `source[r]`'s whole training state
        (agent parameters, optimiser, replay buffer, environments), except its own PRNG key, so
        a copy and its donor go on differently (None: no copies).
      active: `[R]` bool: the runs that go on; a stopped run keeps its state, is not computed
        and reports NaN metrics (None: unchanged). At least one run must stay active.
    """

    hparams: Any = None
    source: Any = None
    active: Any = None


@dataclasses.dataclass
class Chunk:
    """What a callback sees after a chunk (every array has leading runs axis `[R]`).

    Attributes:
      done: updates done by every run so far; `total`: updates per run.
      first: updates done before this chunk.
      metrics: this chunk's metrics `[R, n]`; `history`: every metric so far `[R, done]`.
      seconds: wall time of this chunk; `env_steps_per_s`: env steps of all runs per second.
    """

    done: int
    total: int
    first: int
    metrics: dict[str, np.ndarray]
    history: dict[str, np.ndarray]
    seconds: float
    env_steps_per_s: float
    _state: Callable[[], Any] = dataclasses.field(repr=False, default=lambda: None)
    #: the hparams (leaves `[R]`, host) and the active runs `[R]` from now on (after `adapt`)
    hparams: Any = dataclasses.field(repr=False, default=None)
    active: Any = dataclasses.field(repr=False, default=None)

    def state(self) -> Any:
        """The runs' state after this chunk as host numpy arrays `[R, ...]` (fetched once)."""
        return self._state()


Callback = Callable[[Chunk], "bool | None"]
#: `check(metrics)`: the shapes of one run's metrics of one update (`jax.ShapeDtypeStruct`s by
#: name); raise to refuse the run.
Check = Callable[[dict], None]


@dataclasses.dataclass
class Execution:
    """The result of `execute`: host numpy `state` `[R, ...]` and `metrics` `[R, done]`."""

    state: Any
    metrics: dict[str, np.ndarray]
    done: int
    total: int
    hparams: Any = None
    active: Any = None

    @property
    def finished(self) -> bool:
        return self.done >= self.total


def execute(
    trainer: Trainer,
    keys: Any,
    hparams: Any,
    *,
    env_params: Any = None,
    mesh: Mesh | None = None,
    layout: Layout = "runs",
    pad: bool = False,
    chunk_updates: int = 0,
    start: Start | None = None,
    callbacks: Sequence[Callback] = (),
    max_memory_bytes: int | None = None,
    runs_per_call: int | None = None,
    say: Callable[[str], None] | None = None,
    prepared: Callable[[], None] | None = None,
    check: Check | None = None,
    adapt: Callable[[Chunk], Adaptation | None] | None = None,
) -> Execution:
    """Train `R` runs of `trainer` (see the module docstring).

    Args:
      trainer: from `make_train`.
      keys: `[R]` PRNG keys (`PRNGKey`-style `[R, 2]` uint32, or typed keys).
      hparams: hparams pytree with leaves `[R]` (scalars are broadcast to every run).
      env_params: env params shared by the runs (default: the trainer's).
      mesh: the device mesh (default: every device, `make_mesh(layout)`).
      layout: `"runs"` (runs sharded over devices) or `"envs"` (each run's envs and learner
        split over devices).
      pad: `"runs"` layout: fill the last devices with copies of the last run (dropped from the
        results) when the device count does not divide `R`; otherwise that is an error.
      chunk_updates: updates per chunk (0: the whole run in one chunk).
      start: continue from this state and metrics (`Start`).
      callbacks: called after every chunk with a `Chunk`; True stops after it.
      max_memory_bytes: device memory one call may use (default `default_memory_budget`).
      runs_per_call: force runs per call (`"runs"` layout; default: as many as fit).
      say: where to print notes (memory splits); default silent.
      prepared: called once the programs are compiled and the memory checked, before anything
        runs (e.g. to create a run directory only for a run that will start).
      check: called once the chunk program is traced, before it is compiled, with the shapes
        of one run's metrics of one update (`Check`); an exception it raises stops everything
        (e.g. an unknown metric, too little host memory).
      adapt: called after every chunk but the last, before the callbacks, with the `Chunk`;
        an `Adaptation` it returns changes the runs' hparams, copies states between runs or
        stops runs, without a new compile (the callbacks then see the state after it).

    Returns:
      An `Execution` (host numpy arrays, the same on every process).

    Raises:
      ConfigError: a mesh that does not divide the runs (without `pad`) or the envs, an agent
        without data-parallel support for `"envs"`, or one run over the memory budget: before
        anything is compiled or run.
    """
    say = say or (lambda _: None)
    if jax.dtypes.issubdtype(jnp.asarray(keys).dtype, jax.dtypes.prng_key):
        keys = jax.random.key_data(keys)
    keys = np.asarray(keys)
    R = int(keys.shape[0])
    hparams = jax.tree.map(
        lambda x: np.broadcast_to(np.asarray(x, np.float32), (R,)).copy(), hparams
    )
    mesh = make_mesh(layout) if mesh is None else mesh
    D = mesh.size
    total = trainer.config.num_updates
    chunk = total if chunk_updates <= 0 else min(int(chunk_updates), total)
    done = 0 if start is None else int(start.done)
    if layout == "runs":
        if R % D and not pad:
            check_divisible(R, D)
        per_call = -(-R // D) * D if runs_per_call is None else -(-int(runs_per_call) // D) * D
        per_call = max(D, min(per_call, -(-R // D) * D))
    else:
        per_call = R
    progs = programs(trainer, mesh, layout, env_params)
    # A shorter last chunk runs in the chunk program with its surplus updates masked: one
    # compile. Decided by the run alone (not by where it resumes), so a resumed run uses the
    # uninterrupted run's program.
    masked = total % chunk != 0
    first_n = chunk if masked else min(chunk, max(1, total - done))
    template = jax.tree.map(lambda x: x[0], hparams)
    estimate = estimate_memory(progs, trainer, per_call, first_n, template, check, masked)
    per_call = _calls_that_fit(
        estimate, trainer, mesh, layout, R, per_call, first_n, max_memory_bytes, runs_per_call, say
    )
    if per_call != estimate.runs:
        estimate = estimate_memory(progs, trainer, per_call, first_n, template, masked=masked)
    if prepared is not None:
        prepared()
    runs = _Runs(progs, mesh, layout, R, per_call, estimate.compiled, first_n, masked)
    active = None if start is None or start.active is None else np.asarray(start.active, bool)
    if start is None:
        runs.init(keys, hparams)
    else:
        runs.put(pad_runs(start.state, R) if start.state is not None else None, hparams, active)
        start.state = None  # placed: the caller's host copy is not kept for the whole run
    history = {k: np.asarray(v)[:R] for k, v in (start.metrics if start else {}).items()}
    info = None
    while done < total:
        n = min(chunk, total - done)
        t0 = time.perf_counter()
        metrics = runs.run(n)
        seconds = time.perf_counter() - t0
        history = {
            k: np.concatenate([history[k], v], axis=1) if k in history else v
            for k, v in metrics.items()
        }
        first, done = done, done + n
        steps = runs.num_active * trainer.config.steps_per_update * n
        info = Chunk(done, total, first, metrics, history, seconds, steps / max(seconds, 1e-9),
                     functools.cache(runs.host_state), runs.hparams, runs.active)  # fmt: skip
        change = adapt(info) if adapt is not None and done < total else None
        if change is not None:
            runs.adapt(change)
            info = dataclasses.replace(
                info, _state=functools.cache(runs.host_state), hparams=runs.hparams,
                active=runs.active,
            )  # fmt: skip
        stop = False
        for cb in callbacks:
            stop = bool(cb(info)) or stop
        if stop:
            break
    # The last chunk's state, fetched once (a checkpoint callback already did): no second copy.
    final = runs.host_state() if info is None else info.state()
    return Execution(final, history, done, total, runs.hparams, runs.active)


def _calls_that_fit(
    estimate: MemoryEstimate,
    trainer: Trainer,
    mesh: Mesh,
    layout: Layout,
    R: int,
    per_call: int,
    first_n: int,
    max_memory_bytes: int | None,
    runs_per_call: int | None,
    say: Callable[[str], None],
) -> int:
    """Runs per call within the memory budget: `per_call` when the estimated call fits, else
    as many whole device rows as fit (on a CPU beside the host buffer that then keeps every
    run's state between calls, and the padded host copy of a short last group when the runs
    do not divide into whole calls). Raises `ConfigError` when not even one run per device fits, or
    when a split is needed but not allowed (the `"envs"` layout, a forced `runs_per_call`)."""
    D = mesh.size
    budget = default_memory_budget(mesh) if max_memory_bytes is None else int(max_memory_bytes)
    per_run = estimate.bytes_per_run
    per_device = estimate.runs_per_device
    if per_run is None or per_run * per_device <= budget:
        return per_call
    fit = budget // per_run
    shape = f"{trainer.config.num_envs} envs, {first_n} updates per chunk"
    if fit < 1 or layout == "envs" or runs_per_call is not None:
        raise ConfigError(
            f"One run needs about {fmt_bytes(per_run)} of device memory per chunk "
            f"({per_device} run(s) per device: {fmt_bytes(per_run * per_device)}; {shape}; "
            "XLA's estimate of arguments + outputs + "
            f"temporaries), over the budget of {fmt_bytes(budget)} per device. Use fewer "
            "envs, a smaller model or chunk, or --max-memory to raise the budget. Nothing "
            "was run or written."
        )
    if max_memory_bytes is None and _on_cpu(mesh):  # the host buffer shares the memory
        host = R * estimate.state_bytes_per_run
        room = (int(0.8 * _host_available_bytes()) - host) // D
        fit = max(0, min(budget, room)) // per_run
        # A short last group (R not a multiple of the call) is padded on the host before it is
        # placed (`_Runs._group`): one more copy of a group's state beside the call's memory.
        while fit > 0 and R % (fit * D) and fit * (per_run + estimate.state_bytes_per_run) > room:
            fit -= 1
        if fit < 1:
            raise ConfigError(
                f"{R} runs do not fit in one call, and split over several they need a host "
                f"buffer of {fmt_bytes(host)} ({fmt_bytes(estimate.state_bytes_per_run)} "
                f"of training state per run) beside one call of at least "
                f"{fmt_bytes(per_run)}: more than 80% of the available host memory. Use "
                "fewer runs, envs, a smaller model, buffer or chunk, or --max-memory to set "
                "the budget of one call. Nothing was run or written."
            )
    per_call = int(fit) * D
    say(f"{R} runs do not fit in one call: {per_call} runs per call, one program")
    return per_call


def sweep(trainer: Trainer, keys: Array, hparams_grid: Any, env_params: EnvParams | None = None):
    """Train every (hparams setting, seed) pair as ONE program (`execute`).

    Args:
      trainer: from `make_train`.
      keys: `[S]` PRNG keys (one per seed).
      hparams_grid: hparams pytree with leaves `[G]` (see `hparam_grid`).
      env_params: optional env params shared by all runs.

    Returns:
      `(states, metrics)` as host arrays with leading axes `[G, S]`.
    """
    keys = (
        jax.random.key_data(keys)
        if jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key)
        else keys
    )
    S, G = int(keys.shape[0]), int(jax.tree.leaves(hparams_grid)[0].shape[0])
    run_keys = jnp.tile(jnp.asarray(keys), (G, 1))  # run r = g * S + s
    run_hp = jax.tree.map(
        lambda x: jnp.repeat(jnp.asarray(x, jnp.float32), S, axis=0), hparams_grid
    )
    out = execute(trainer, run_keys, run_hp, env_params=env_params, pad=True)
    unflat = lambda x: x.reshape(G, S, *x.shape[1:])  # noqa: E731
    return jax.tree.map(unflat, out.state), {k: unflat(v) for k, v in out.metrics.items()}


class _Runs:
    """The runs of one `execute` call: the active ones in groups of `per_call` (one program
    call each), the stopped ones frozen on the host.

    One group stays on the devices between chunks. Several groups (a `"runs"` layout that does
    not fit in one call) share one host buffer `[active runs, ...]` that each call reads its
    group from and writes its group back into, so the host holds one copy of the runs' state,
    however many groups and chunks there are.
    """

    def __init__(self, progs, mesh, layout, R, per_call, compiled, compiled_n, masked=False):
        self.progs, self.mesh, self.layout, self.R = progs, mesh, layout, R
        self.per_call, self.compiled, self.compiled_n = per_call, compiled, compiled_n
        self.masked = masked  # the chunk program takes a live-update count (`Programs.run`)
        self.active = np.ones(R, bool)
        self.frozen = None  # every run's host state while some are stopped
        self.hparams = None
        self.states: list = []  # one group: its state on the devices
        self.host = None  # several groups: every active run's state `[n, ...]` (host buffer)

    @property
    def num_active(self) -> int:
        return int(self.active.sum())

    @property
    def several(self) -> bool:
        return len(self.groups) > 1

    def _layout(self, hparams: Any) -> int:
        """Group the active runs; place their hparams; return the padded count."""
        n, D = self.num_active, self.mesh.size
        self.size = self.per_call if self.layout == "envs" else min(self.per_call, -(-n // D) * D)
        padded = -(-n // self.size) * self.size
        self.groups = [slice(lo, lo + self.size) for lo in range(0, padded, self.size)]
        hps = pad_runs(_rows(hparams, np.flatnonzero(self.active)), padded)
        spec = P(RUNS_AXIS) if self.layout == "runs" else P()
        self.hp_groups = [place(_rows(hps, g), self.mesh, spec) for g in self.groups]
        self.states, self.host = [], None
        return padded

    def _store(self, i: int, state: Any) -> None:
        """Keep group `i`'s new state: on the devices (one group) or in the host buffer."""
        if not self.several:
            self.states = [state]
            return
        lo = self.groups[i].start
        k = min(self.size, self.num_active - lo)  # the last group's padding is dropped
        part = gather(state)
        if self.host is None:  # the first group allocates the buffer of every active run
            n = self.num_active
            self.host = jax.tree.map(lambda x: np.empty((n, *x.shape[1:]), x.dtype), part)
        jax.tree.map(lambda h, x: np.copyto(h[lo : lo + k], x[:k]), self.host, part)

    def _group(self, i: int) -> Any:
        """Group `i`'s state placed for a program call (several groups)."""
        part = pad_runs(_rows(self.host, self.groups[i]), self.size)
        return _put_state(part, self.mesh, self.layout)

    def init(self, keys: np.ndarray, hparams: Any) -> None:
        self.hparams = hparams
        keys = pad_runs(keys, self._layout(hparams))
        spec = P(RUNS_AXIS) if self.layout == "runs" else P()
        for i, (g, hp) in enumerate(zip(self.groups, self.hp_groups)):
            self._store(i, self.progs.init(place(keys[g], self.mesh, spec), hp))

    def put(self, state: Any, hparams: Any, active: np.ndarray | None = None) -> None:
        """Place every run's host state `[R, ...]`; continue the `active` ones."""
        self.hparams = hparams
        self.active = np.ones(self.R, bool) if active is None else np.asarray(active, bool)
        if not self.active.any():
            raise ValueError("at least one run must stay active")
        self.frozen = None if self.active.all() else state
        idx = np.flatnonzero(self.active)
        self._layout(hparams)
        if self.several:  # the buffer: a copy of the active runs' rows
            self.host = jax.tree.map(lambda x: np.array(np.asarray(x)[idx]), state)
            return
        host = pad_runs(_rows(state, idx), self.size)
        self.states = [_put_state(host, self.mesh, self.layout)]

    def run(self, n: int) -> dict[str, np.ndarray]:
        """`n` updates of every active run; metrics `[R, n]` (NaN or 0 for stopped runs).

        With a masked chunk program, `n` up to its chunk size runs in that one program."""
        size = self.compiled_n if self.masked else n
        same = size == self.compiled_n and self.size == self.per_call
        fn = self.compiled if same else self.progs.run(size, self.masked)
        live = (place(np.int32(n), self.mesh, P()),) if self.masked else ()
        outs = []
        for i in range(len(self.groups)):
            state = self._group(i) if self.several else self.states[0]
            state, metrics = fn(state, self.hp_groups[i], *live)
            self._store(i, state)
            del state  # (several groups: the device copy goes before the next is placed)
            outs.append(jax.tree.map(lambda m: np.asarray(m)[:, :n], gather(metrics)))
        k = self.num_active
        metrics = {name: np.concatenate([o[name] for o in outs])[:k] for name in outs[0]}
        if k == self.R:
            return metrics
        idx = np.flatnonzero(self.active)
        return {name: _set_rows(_blank(v, self.R), idx, v) for name, v in metrics.items()}

    def host_state(self) -> Any:
        """Every run's state as host arrays `[R, ...]`.

        Several groups: read-only views of the host buffer, which the next chunk overwrites
        (copy to keep them); one group: the devices' arrays fetched to the host."""
        k = self.num_active
        if self.several:
            state = jax.tree.map(_read_only, self.host)
        else:
            state = _host_state(self.states[0], self.layout, k)
        if self.frozen is None:
            return state
        idx = np.flatnonzero(self.active)
        return jax.tree.map(lambda f, a: _set_rows(np.array(f), idx, a), self.frozen, state)

    def adapt(self, change: Adaptation) -> None:
        state = self.host_state()
        R = self.R
        hparams = self.hparams if change.hparams is None else jax.tree.map(
            lambda x: np.broadcast_to(np.asarray(x, np.float32), (R,)).copy(), change.hparams
        )  # fmt: skip
        active = self.active if change.active is None else np.asarray(change.active, bool)
        if active.shape != (R,):
            raise ValueError(f"Adaptation.active must have shape ({R},), got {active.shape}")
        if change.source is not None:
            source = np.asarray(change.source)
            if source.shape != (R,) or not np.issubdtype(source.dtype, np.integer):
                raise ValueError(f"Adaptation.source must be {R} run indices, got {source!r}")
            if source.min() < 0 or source.max() >= R:
                raise ValueError(f"Adaptation.source must be in [0, {R}), got {source!r}")
            copied = _rows(state, source)
            if hasattr(copied, "key"):  # each run keeps its own PRNG key
                copied = copied.replace(key=state.key)
            state = copied
        self.put(state, hparams, active)


def _rows(tree: Any, idx: Any) -> Any:
    """Rows `idx` (indices or a slice) of every leaf's leading axis."""
    return jax.tree.map(lambda x: np.asarray(x)[idx], tree)


def _set_rows(full: np.ndarray, idx: np.ndarray, rows: np.ndarray) -> np.ndarray:
    full[idx] = rows
    return full


def _blank(rows: np.ndarray, R: int) -> np.ndarray:
    """`[R, ...]` like `rows`: NaN for floats, 0 otherwise."""
    rows = np.asarray(rows)
    fill = np.nan if np.issubdtype(rows.dtype, np.inexact) else 0
    return np.full((R, *rows.shape[1:]), fill, rows.dtype)


def _put_state(host: Any, mesh: Mesh, layout: str, host_layout: bool = False) -> Any:
    """Place a state `[R, ...]` (runs first, as on the host) for `layout`'s programs."""
    if layout == "runs":
        return place(host, mesh, P(RUNS_AXIS))
    if not host_layout:  # runs-first host arrays -> device-first [D, R, ...]
        host = jax.tree.map(lambda x: np.moveaxis(np.asarray(x), 0, 1), host)
    return place(host, mesh, P(ENVS_AXIS))


def _host_state(state: Any, layout: str, R: int) -> Any:
    """One group's placed state as host arrays `[R, ...]` (no copy beyond the fetch)."""
    host = gather(state)
    if layout == "envs":  # [D, R, ...] -> [R, D, ...]
        host = jax.tree.map(lambda x: np.moveaxis(x, 0, 1), host)
    return jax.tree.map(lambda x: x[:R], host)


def _read_only(x: np.ndarray) -> np.ndarray:
    view = x.view()
    view.flags.writeable = False
    return view


def state_like(
    trainer: Trainer,
    keys: Any,
    hparams: Any,
    *,
    env_params: Any = None,
    mesh: Mesh | None = None,
    layout: Layout = "runs",
) -> Any:
    """Shapes and dtypes of the runs-first host state `execute` returns for these runs (a
    template to restore a checkpoint into)."""
    keys = np.asarray(keys)
    if layout == "runs":
        return jax.eval_shape(
            jax.vmap(trainer.init, in_axes=(0, 0, None)), keys, hparams, env_params
        )
    state = jax.eval_shape(programs(trainer, mesh, layout, env_params).init, keys, hparams)
    return jax.tree.map(
        lambda x: jax.ShapeDtypeStruct((x.shape[1], x.shape[0], *x.shape[2:]), x.dtype), state
    )


# ----------------------------------------------------------------------------- callbacks


def progress_bar(desc: str, total: int, initial: int = 0) -> Callback:
    """A callback driving a tqdm bar of updates with env steps/s, the latest mean return (and
    task score such as a win rate, `task/<name>`) and tqdm's ETA. Call `.close()` on the returned
    callback when done (or use it as a context).

    Until the first chunk ends the bar says "compiling"; its clock then starts at that chunk's
    own start, so the rate and the ETA count run time only, never the compile."""
    from tqdm.auto import tqdm

    bar = tqdm(total=total, initial=initial, desc=f"{desc} (compiling)", unit="update")
    started = []

    def update(info: Chunk) -> None:
        if not started:  # the compile is over: time from the first chunk's start
            started.append(True)
            bar.set_description_str(desc, refresh=False)
            bar.start_t = bar.last_print_t = time.time() - info.seconds
        bar.set_postfix_str(progress_postfix(info.metrics, info.env_steps_per_s), refresh=False)
        bar.update(info.done - info.first)

    update.close = bar.close  # type: ignore[attr-defined]
    update.bar = bar  # type: ignore[attr-defined]
    return update


def progress_postfix(metrics: dict[str, np.ndarray], env_steps_per_s: float) -> str:
    """The progress bar's text: the latest mean return over runs, each task score, env steps/s.

    Args:
      metrics: a chunk's metrics, `name -> [R, U]` (NaN where no episode ended).
      env_steps_per_s: the chunk's throughput.

    Returns:
      e.g. `"ret=1.277, win_rate=0.425, 13,051 env steps/s"` (`n/a` before any episode ended).
    """
    shown = []
    names = ["episode_return", *task_metric_names(metrics)]
    for name in (n for n in names if not n.startswith("eval/")):
        label = "ret" if name == "episode_return" else name.removeprefix(TASK_METRIC_PREFIX)
        last = np.asarray(metrics[name])[:, -1] if name in metrics else np.array([np.nan])
        ok = np.isfinite(last).any()
        shown.append(f"{label}={np.nanmean(last):.3f}" if ok else f"{label}=n/a")
    return f"{', '.join(shown)}, {env_steps_per_s:,.0f} env steps/s"


def checkpoint(ckpt: Any) -> Callback:
    """A callback saving the runs' state `[R, ...]` as checkpoint `done` after every chunk."""

    def save(info: Chunk) -> None:
        ckpt.save(info.done, info.state())

    return save


__all__ = [
    "ENVS_AXIS",
    "LAYOUTS",
    "RUNS_AXIS",
    "Adaptation",
    "Chunk",
    "Execution",
    "MemoryEstimate",
    "Programs",
    "Start",
    "check_divisible",
    "checkpoint",
    "default_memory_budget",
    "estimate_memory",
    "execute",
    "fmt_bytes",
    "for_devices",
    "gather",
    "initialize",
    "make_mesh",
    "pad_runs",
    "parse_bytes",
    "place",
    "programs",
    "progress_bar",
    "progress_postfix",
    "state_like",
    "sweep",
]
