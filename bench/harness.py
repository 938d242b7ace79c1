"""A small benchmark harness: compile time apart from run time, machine line, side-by-side table.

A benchmark *case* is a function `case(opts) -> list[Result]` that measures one framework on one
or more tasks. Cases are registered by name in `CASES`; each `bench_*.py` script registers its
own and calls `main(...)`, and `run_all.py` runs every registered case. A side-by-side comparison
is two cases that report the same `Result.task` under different `Result.framework`s:
`print_table` then prints the ratio of every framework to the baseline framework, per task.

    @case("matrix_env/numpy")
    def numpy_matrix_env(opts: Options) -> list[Result]:
        ...
        return [Result(task="matrix/ipd-v0 E=64", framework="numpy", ...)]

Rules: speed is measured here, never in timed tests; every table names the
machine; compile time is reported apart from run time; comparisons are made in the same run.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

# ----------------------------------------------------------------------------- records


@dataclasses.dataclass
class Result:
    """One measurement of one framework on one task.

    Attributes:
      task: what was run, identical across frameworks for a side-by-side row
        (e.g. `"matrix/ipd-v0 random actions E=1024"`).
      framework: who ran it (`"marljax"`, `"numpy"`, `"jaxmarl"`, ...).
      compile_s: ahead-of-time `lower` + `compile` seconds (`nan` when nothing is compiled).
      run_s: median seconds of one steady-state call of the compiled program.
      env_steps: environment steps done by one call (one step = one joint step of one env).
      first_call_s: seconds of the first call of a fresh `jax.jit` including its compile
        (`nan` when not measured).
      run_min_s, run_max_s: fastest and slowest of the repeats.
      repeats: number of timed steady-state calls.
      variant: a short label telling rows of the same framework and task apart
        (e.g. `"1 run"`, `"4 seeds (vmap)"`).
      notes: anything else worth keeping in the JSON (configs, sizes).
    """

    task: str
    framework: str
    compile_s: float
    run_s: float
    env_steps: int
    first_call_s: float = float("nan")
    run_min_s: float = float("nan")
    run_max_s: float = float("nan")
    repeats: int = 0
    variant: str = ""
    notes: dict = dataclasses.field(default_factory=dict)

    @property
    def name(self) -> str:
        """`task [variant]`, the row label."""
        return f"{self.task} [{self.variant}]" if self.variant else self.task

    @property
    def steps_per_s(self) -> float:
        """Environment steps per second of steady-state run time (compile excluded)."""
        return self.env_steps / self.run_s if self.run_s > 0 else float("nan")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["name"] = self.name
        d["steps_per_s"] = self.steps_per_s
        return d


@dataclasses.dataclass
class Timing:
    """What `timed` measured (seconds)."""

    lower_s: float  # tracing + lowering to StableHLO
    compile_s: float  # XLA compile of the lowered program
    first_run_s: float  # first execution of the compiled program (not counted in run_s)
    run_times: list[float]  # steady-state executions
    first_call_s: float  # fresh `jax.jit(fn)(*args)` incl. compile; nan if not measured
    output: Any  # the output of the last call

    @property
    def aot_compile_s(self) -> float:
        """Lower + compile: the one-time cost before the first step runs."""
        return self.lower_s + self.compile_s

    @property
    def run_s(self) -> float:
        """Median steady-state run time."""
        return statistics.median(self.run_times)

    def result(self, task: str, framework: str, env_steps: int, **kw: Any) -> Result:
        return Result(
            task=task,
            framework=framework,
            compile_s=self.aot_compile_s,
            run_s=self.run_s,
            env_steps=int(env_steps),
            first_call_s=self.first_call_s,
            run_min_s=min(self.run_times),
            run_max_s=max(self.run_times),
            repeats=len(self.run_times),
            **kw,
        )


# ----------------------------------------------------------------------------- timing


def timed(
    fn: Callable,
    *args: Any,
    repeats: int = 5,
    first_call: bool = True,
    static_argnums: int | Sequence[int] = (),
) -> Timing:
    """Time a JAX function: compile once, then run the compiled program `repeats` times.

    1. `jax.jit(fn).lower(*args)` and `.compile()` are timed apart (ahead-of-time compile).
    2. The compiled program runs once untimed-for-throughput (`first_run_s`: allocations, lazy
       initialisation), then `repeats` times; every call ends with `jax.block_until_ready`.
    3. If `first_call`, JAX's in-memory caches are cleared and a fresh `jax.jit(fn)(*args)` is
       timed, which is what a user pays on the first call (compile + one run); this compiles a
       second time, so turn it off for very slow compiles.

    Args:
      fn: the function to benchmark (not yet jitted, or jitted: `jax.jit` of a jitted function
        is fine).
      *args: its arguments; the same arguments are used for every call.
      repeats: timed steady-state calls.
      first_call: also time a first call of a fresh `jax.jit` including compile.
      static_argnums: forwarded to `jax.jit`.

    Returns:
      A `Timing`.
    """
    jax.clear_caches()  # an earlier case must not hand us a cached executable
    jitted = jax.jit(fn, static_argnums=static_argnums)
    t0 = time.perf_counter()
    lowered = jitted.lower(*args)
    t1 = time.perf_counter()
    compiled = lowered.compile()
    t2 = time.perf_counter()
    dyn_args = [a for i, a in enumerate(args) if i not in _as_tuple(static_argnums)]

    out = jax.block_until_ready(compiled(*dyn_args))
    t3 = time.perf_counter()
    run_times = []
    for _ in range(max(1, repeats)):
        s = time.perf_counter()
        out = jax.block_until_ready(compiled(*dyn_args))
        run_times.append(time.perf_counter() - s)

    first_call_s = float("nan")
    if first_call:
        jax.clear_caches()
        fresh = jax.jit(fn, static_argnums=static_argnums)
        s = time.perf_counter()
        jax.block_until_ready(fresh(*args))
        first_call_s = time.perf_counter() - s
    return Timing(t1 - t0, t2 - t1, t3 - t2, run_times, first_call_s, out)


def timed_python(fn: Callable, *args: Any, repeats: int = 5) -> Timing:
    """Time a plain Python/NumPy function the same way (no compile: `compile_s` is nan)."""
    s = time.perf_counter()
    out = fn(*args)
    first = time.perf_counter() - s
    run_times = []
    for _ in range(max(1, repeats)):
        s = time.perf_counter()
        out = fn(*args)
        run_times.append(time.perf_counter() - s)
    return Timing(float("nan"), 0.0, first, run_times, float("nan"), out)


def _as_tuple(x: int | Sequence[int]) -> tuple[int, ...]:
    return (x,) if isinstance(x, int) else tuple(x)


# ----------------------------------------------------------------------------- machine


def machine_info() -> str:
    """One line naming the machine: CPU model, cores, JAX version, backend and devices."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    logical = os.cpu_count()
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = logical
    devices = jax.devices()
    kinds = sorted({d.device_kind for d in devices})
    jaxlib = getattr(getattr(jax, "lib", None), "__version__", None)
    try:
        import jaxlib as _jaxlib

        jaxlib = _jaxlib.__version__
    except ImportError:
        pass
    parts = [
        f"CPU: {cpu}, {logical} logical cores ({usable} usable)",
        f"jax {jax.__version__} / jaxlib {jaxlib}",
        f"backend {jax.default_backend()}: {len(devices)} x {', '.join(kinds)}",
        f"numpy {np.__version__}, Python {platform.python_version()}",
    ]
    if os.environ.get("XLA_FLAGS"):
        parts.append(f"XLA_FLAGS={os.environ['XLA_FLAGS']}")
    return "; ".join(parts)


# ----------------------------------------------------------------------------- cases


def is_out_of_memory(err: BaseException) -> bool:
    """True for XLA's out-of-memory errors (a size that does not fit is a result, not a crash)."""
    text = str(err)
    return "RESOURCE_EXHAUSTED" in text or "Out of memory" in text or "out of memory" in text


class SkipCase(Exception):
    """Raised by a case that cannot run here (e.g. an optional framework is not installed)."""


@dataclasses.dataclass(frozen=True)
class Options:
    """Options every case receives.

    Attributes:
      quick: a much smaller run (smoke test of the benchmark code, numbers not meaningful).
      repeats: timed steady-state calls per measurement.
      first_call: also time a fresh first call including compile (a second compile).
      num_envs: `--num-envs`: the env counts of an env benchmark instead of its defaults
        (e.g. 1k to 1M on a GPU).
      num_steps: `--num-steps`: the steps per timed call of an env benchmark.
      num_agents: `--num-agents`: the swarm sizes of the swarm benchmark.
      steps: `--steps`: the env steps of a training benchmark (`None`: its default, see
        `TrainSteps`).
    """

    quick: bool = False
    repeats: int = 5
    first_call: bool = True
    num_envs: tuple[int, ...] | None = None
    num_steps: int | None = None
    num_agents: tuple[int, ...] | None = None
    steps: int | None = None


def env_sizes(opts: Options, default: tuple[int, ...], quick: tuple[int, ...] = (1, 64)):
    """The env counts an env benchmark runs: `--num-envs`, else quick or default sizes."""
    if opts.num_envs:
        return opts.num_envs
    return quick if opts.quick else default


def env_steps(opts: Options, default: int, quick: int = 50) -> int:
    """The steps per timed call of an env benchmark: `--num-steps`, else quick or default."""
    if opts.num_steps:
        return opts.num_steps
    return quick if opts.quick else default


@dataclasses.dataclass(frozen=True)
class TrainSteps:
    """The env-step budget of a training benchmark: `STEPS(opts)` is `quick` under `--quick`
    (when given), else `--steps` (`Options.steps`), else `default`.

    `default` is also the default of the script's `--steps` (`main_with_steps`).
    """

    default: int
    quick: int | None = None

    def __call__(self, opts: Options) -> int:
        if opts.quick and self.quick is not None:
            return self.quick
        return self.default if opts.steps is None else opts.steps


def _int_list(text: str) -> tuple[int, ...]:
    return tuple(int(float(v)) for v in text.split(","))


CaseFn = Callable[[Options], list[Result]]
CASES: dict[str, CaseFn] = {}


def case(name: str) -> Callable[[CaseFn], CaseFn]:
    """Register a benchmark case under `name` (`"<benchmark>/<framework>"` by convention)."""

    def register(fn: CaseFn) -> CaseFn:
        if name in CASES and CASES[name] is not fn:
            raise ValueError(f"benchmark case {name!r} is already registered")
        CASES[name] = fn
        return fn

    return register


def requires(module: str, extra: str = "bench") -> Any:
    """Import an optional dependency or skip the case with the install command."""
    if importlib.util.find_spec(module) is None:
        raise SkipCase(f"{module} is not installed (pip install -e '.[{extra}]')")
    return importlib.import_module(module)


#: path of a JaxMARL source checkout (its training scripts are not in the pip package); set by
#: `--jaxmarl-src` of the scripts that use it, or `$JAXMARL_SRC`.
JAXMARL_SRC: dict[str, str | None] = {"path": os.environ.get("JAXMARL_SRC")}


def jaxmarl_baseline(folder: str, module: str, config_files: Sequence[str]) -> tuple[Any, dict]:
    """Import a training script of a JaxMARL source checkout, unmodified, with its own configs.

    Args:
      folder: the script's folder inside the checkout, e.g. `"baselines/IPPO"`.
      module: the script's module name, e.g. `"ippo_ff_mpe"`.
      config_files: YAML files relative to `folder`, merged in order (later ones win).

    Returns:
      `(module, config dict)`.

    Raises:
      SkipCase: no checkout given, the script is missing, or one of its imports is missing.
    """
    src = JAXMARL_SRC["path"]
    if not src:
        raise SkipCase("needs a JaxMARL source checkout: --jaxmarl-src PATH or $JAXMARL_SRC")
    path = os.path.join(src, folder)
    if not os.path.exists(os.path.join(path, f"{module}.py")):
        raise SkipCase(f"{path}/{module}.py not found")
    for dep in ("jaxmarl", "flashbax", "hydra", "omegaconf", "wandb", "yaml", "distrax"):
        if importlib.util.find_spec(dep) is None:
            raise SkipCase(f"JaxMARL's {module}.py needs {dep} (pip install it)")
    from omegaconf import OmegaConf  # the scripts load their YAML through hydra/OmegaConf

    if path not in sys.path:
        sys.path.insert(0, path)
    mod = importlib.import_module(module)
    import wandb

    if wandb.run is None:  # the scripts log through wandb; a disabled run makes logging a no-op
        wandb.init(mode="disabled")
    config: dict = {}
    for name in config_files:
        # OmegaConf, not plain PyYAML: it reads `2e-3` as a float (YAML 1.1 reads a string).
        config.update(OmegaConf.to_container(OmegaConf.load(os.path.join(path, name))))
    return mod, config


#: seeds per training program (`--seeds` of the training benchmarks): more than one trains them
#: as one program, `vmap`ped over the seed keys, in both frameworks (JaxMARL's `NUM_SEEDS`).
TRAIN_SEEDS: dict[str, int] = {"n": 1}


def seeded(fn: Callable, num_args: int = 0) -> tuple[Callable, jax.Array]:
    """`(fn, key)` to time a training function of `(key, *args)` over `TRAIN_SEEDS` seeds.

    One seed: `fn` itself and `PRNGKey(0)`. More: `fn` vmapped over the leading axis of the keys
    (other arguments shared) and `n` keys split from `PRNGKey(0)`; the outputs gain a leading
    seed axis.
    """
    n = TRAIN_SEEDS["n"]
    key = jax.random.PRNGKey(0)
    if n == 1:
        return fn, key
    return jax.vmap(fn, in_axes=(0, *([None] * num_args))), jax.random.split(key, n)


def marljax_training(
    trainer: Any, hparams: Any, task: str, fn: Callable | None = None, framework: str = "marljax"
) -> list[Result]:
    """Time marljax's fused training program (`trainer.train`, compile apart) as one `Result`.

    `fn(key, hparams) -> (state, metrics)` replaces `trainer.train` (e.g. the data-parallel
    the `"envs"` layout of `marljax.training.execute`), reported as `framework`. The final
    return noted is the last update's training-episode return summed over agents (the
    per-agent mean times the number of agents), as the JaxMARL training benchmarks report.
    """
    fn, key = seeded(trainer.train if fn is None else fn, 1)
    t = timed(fn, key, hparams, repeats=1, first_call=False)
    _, metrics = t.output
    last = np.asarray(metrics["episode_return"])[..., -1]  # [seeds] or []
    ret = float(np.mean(last)) * trainer.env.num_agents
    config = trainer.config
    n = TRAIN_SEEDS["n"]
    return [
        t.result(
            task,
            framework,
            n * config.num_updates * config.steps_per_update,
            notes={"final_return": ret, "num_updates": config.num_updates, "seeds": n},
        )
    ]


def marljax_greedy_training(
    trainer: Any, agent: Any, hparams: Any, task: str, episode_len: int, episodes: int = 512
) -> list[Result]:
    """Time marljax's fused training program (compile apart), then evaluate seed 0's greedy policy.

    The value-learner benchmarks compare greedy returns, as JaxMARL's Q-learning scripts report
    them: `episodes` fresh episodes of `episode_len` steps, the per-agent mean return times the
    number of agents.
    """
    from marljax.evaluation.rollout import evaluate_policy

    env, params, config = trainer.env, trainer.env_params, trainer.config
    fn, key = seeded(trainer.train, 1)
    t = timed(fn, key, hparams, repeats=1, first_call=False)
    state, _ = t.output
    agent_state = state.agent_state
    if TRAIN_SEEDS["n"] > 1:  # evaluate seed 0's parameters
        agent_state = jax.tree.map(lambda x: x[0], agent_state)
    ev = jax.jit(evaluate_policy, static_argnums=(0, 2, 6, 7))(
        env, params, agent, agent_state, hparams, jax.random.PRNGKey(1), episodes, episode_len
    )
    ret = float(ev["episode_return"]) * env.num_agents
    return [
        t.result(
            task,
            "marljax",
            TRAIN_SEEDS["n"] * config.num_updates * config.steps_per_update,
            notes={"greedy_return": ret, "num_updates": config.num_updates, "return_of": "seed 0"},
        )
    ]


def marljax_preset_training(
    algo: str,
    make_agent: Callable,
    agent_config: Any,
    agent_hparams: Any,
    steps: int,
    task: str,
    episode_len: int,
    hparams: dict | None = None,
    env_id: str = "particle/simple_spread-v0",
) -> list[Result]:
    """`marljax_greedy_training` of the `"jaxmarl"` preset of `algo` (`marljax.agents.preset`).

    The preset's train, agent and hyperparameter values replace (checked) those of
    `TrainConfig()`, `agent_config` and `agent_hparams`, with `total_env_steps = steps` and
    `hparams` on top; `make_agent(config, env, params)` builds the agent on `env_id`.
    """
    import marljax
    from marljax.agents import preset
    from marljax.core import config as cfg
    from marljax.training.train import TrainConfig, make_train

    env, params = marljax.make(env_id)
    p = preset(algo, "jaxmarl")
    config = cfg.replace_checked(TrainConfig(), {**p.train, "total_env_steps": steps}, "train")
    agent = make_agent(cfg.replace_checked(agent_config, p.config, "agent"), env, params)
    hp = cfg.replace_checked(agent_hparams, {**p.hparams, **(hparams or {})}, "hp")
    trainer = make_train(config, env, agent, params)
    return marljax_greedy_training(trainer, agent, hp, task, episode_len)


def jaxmarl_matched_ppo(
    num_envs: int,
    rollout: int,
    steps: int,
    lr: float,
    env_id: str = "particle/simple_spread-v0",
    **config: Any,
) -> tuple[Any, Any]:
    """`(trainer, hparams)` of marljax's PPO with the settings of JaxMARL's PPO baselines.

    Shared: one parameter set for every agent, tanh, 4 epochs x 4 minibatches, entropy 0.01,
    grad clip 0.5, Adam eps 1e-5, a constant learning rate `lr`. `config` adds to (or
    overrides) the `PPOConfig`; `num_envs` x `rollout` steps per update, `steps` env steps.
    """
    import marljax
    from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
    from marljax.training.train import TrainConfig, make_train

    env, params = marljax.make(env_id)
    run = TrainConfig(num_envs=num_envs, rollout_len=rollout, total_env_steps=steps)
    shared = dict(parameter_mode="shared", activation="tanh", num_epochs=4, num_minibatches=4)
    agent = make_ppo(PPOConfig(**{**shared, **config}), env, params)
    hp = PPOHParams(lr=lr, ent_coef=0.01, max_grad_norm=0.5, adam_eps=1e-5)
    return make_train(run, env, agent, params), hp


def jaxmarl_ppo_training(
    module: Any,
    base: dict,
    steps: int,
    steps_per_update: int,
    task: str,
    final_return: Callable[[Any], float],
) -> list[Result]:
    """Time a JaxMARL PPO script's fused `make_train(config)` over `TRAIN_SEEDS` seeds (`seeded`).

    `module, base` come from `jaxmarl_baseline`; the config is `base` with `TOTAL_TIMESTEPS =
    steps`, `ANNEAL_LR: False` (marljax's PPO keeps its learning rate) and `NUM_SEEDS: 1`.
    `final_return(output)` reads the last update's return from the program's output.

    Returns:
      One `Result` for `"jaxmarl"` with notes `final_return`, `num_updates` and `seeds`.
    """
    config = {**base, "TOTAL_TIMESTEPS": steps, "ANNEAL_LR": False, "NUM_SEEDS": 1}
    train, key = seeded(module.make_train(config))
    t = timed(train, key, repeats=1, first_call=False)
    n = TRAIN_SEEDS["n"]
    updates = steps // steps_per_update
    notes = {"final_return": final_return(t.output), "num_updates": updates, "seeds": n}
    return [t.result(task, "jaxmarl", n * updates * steps_per_update, notes=notes)]


def marljax_cell_training(
    cell: str, steps: int, task: str, metric: str, score: str, notes: dict | None = None
) -> list[Result]:
    """Time a benchmark cell's training program once (compile apart), every seed in one program.

    The cell (`marljax.benchmarks.CELLS[cell]`) runs `steps` env steps over `TRAIN_SEEDS` seeds
    (`seeded`); its per-update `metric` is scored by `final_score_notes` under the key `score`.

    Returns:
      One `Result` for `"marljax"` with those notes, `num_updates` and `notes`.
    """
    from marljax.benchmarks import CELLS
    from marljax.benchmarks.suite import experiment_kwargs
    from marljax.shell.experiment import Experiment, build

    n = TRAIN_SEEDS["n"]
    built = build(Experiment(seeds=1, **experiment_kwargs(CELLS[cell], steps)))
    hparams = jax.tree.map(lambda x: x[0], built.hparams)
    fn, key = seeded(built.trainer.train, 1)  # every seed in one program, as marljax runs them
    compile_s, run_s, out, _ = time_once(fn, key, hparams)
    curve = np.asarray(out[1][metric]).reshape(n, -1)
    config = built.trainer.config
    env_steps = n * config.num_updates * config.steps_per_update
    notes = {**final_score_notes(curve, score), "num_updates": config.num_updates, **(notes or {})}
    return [Result(task, "marljax", compile_s, run_s, env_steps, notes=notes)]


def jaxmarl_seeds_in_turn(
    train: Callable,
    read: Callable[[Any], Any],
    steps: int,
    steps_per_update: int,
    task: str,
    score: str,
    notes: dict | None = None,
) -> list[Result]:
    """Time a JaxMARL training program `train(key)` one seed at a time, the run times added up.

    Its `TRAIN_SEEDS` seeds run as calls of one compiled program (vmapped over seeds, JaxMARL's
    scripts deadlock on jax 0.10.2 with 2 CPU cores); `read(output)` gives a seed's per-update
    curve right after its run, scored by `final_score_notes` under the key `score`.

    Returns:
      One `Result` for `"jaxmarl"` with those notes, `num_updates`, `notes` and `seeds_run`.
    """
    n = TRAIN_SEEDS["n"]
    keys = jax.random.split(jax.random.PRNGKey(0), n)
    compile_s, run_s, out, compiled = time_once(train, keys[0])
    curves = [read(out)]
    for k in keys[1:]:
        t = time.perf_counter()
        out = jax.block_until_ready(compiled(k))
        run_s += time.perf_counter() - t
        curves.append(read(out))
    updates = steps // steps_per_update
    notes = {
        **final_score_notes(np.asarray(curves), score),
        "num_updates": updates,
        **(notes or {}),
        "seeds_run": "one after the other",
    }
    env_steps = n * updates * steps_per_update
    return [Result(task, "jaxmarl", compile_s, run_s, env_steps, notes=notes)]


def _final_test_return(out: Any) -> float:
    """The greedy return of a JaxMARL Q-learning run with `TEST_DURING_TRAINING` (its last test)."""
    return float(np.asarray(out["runner_state"][2]["returned_episode_returns"]))


def jaxmarl_training(
    module: str,
    config_files: Sequence[str],
    steps: int,
    task: str,
    *,
    timing: dict | None = None,
    test: dict | None = None,
    greedy_return: Callable[[Any], float] = _final_test_return,
    folder: str = "baselines/QLearning",
    notes: dict | None = None,
) -> list[Result]:
    """Time a JaxMARL training script's fused program (compile apart) and read its greedy return.

    The script runs unmodified with its own configs (`jaxmarl_baseline`), `TOTAL_TIMESTEPS =
    steps`, over `TRAIN_SEEDS` seeds (`seeded`). The timed run applies `timing` to the config
    (default: its greedy test switched off); a second run of seed 0 with `test` applied (default:
    the test switched on) gives the greedy return through `greedy_return(output)`.

    Returns:
      One `Result` for `"jaxmarl"` with notes `greedy_return`, `num_updates`, `return_of` and
      `notes`.
    """
    timing = {"TEST_DURING_TRAINING": False} if timing is None else timing
    test = {"TEST_DURING_TRAINING": True} if test is None else test
    mod, base = jaxmarl_baseline(folder, module, config_files)
    config = {**base, "TOTAL_TIMESTEPS": steps, "NUM_SEEDS": 1, "WANDB_MODE": "disabled"}
    env, _ = mod.env_from_config(dict(config))
    train, key = seeded(mod.make_train({**config, **timing}, env))
    t = timed(train, key, repeats=1, first_call=False)
    updates = steps // config["NUM_STEPS"] // config["NUM_ENVS"]
    out = jax.jit(mod.make_train({**config, **test}, env))(jax.random.PRNGKey(0))
    return [
        t.result(
            task,
            "jaxmarl",
            TRAIN_SEEDS["n"] * updates * config["NUM_STEPS"] * config["NUM_ENVS"],
            notes={
                "greedy_return": greedy_return(out),
                "num_updates": updates,
                "return_of": "seed 0",
                **(notes or {}),
            },
        )
    ]


def data_parallel_framework() -> str:
    """The framework label of a data-parallel marljax row; skips the case on one device."""
    n = jax.device_count()
    if n < 2:
        raise SkipCase("needs 2+ devices (run through in_subprocess)")
    return f"marljax ({n} devices)"


def in_subprocess(
    script: str, case_name: str, opts: Options, devices: int, argv: Sequence[str] = ()
) -> list[Result]:
    """Run one registered case of `script` in a fresh process that sees `devices` CPU devices.

    XLA fixes its device count when JAX starts, so a data-parallel case over the CPU's cores as
    host devices (`--xla_force_host_platform_device_count`) runs back to back in its own process
    instead of in this one (whose single-device programs keep one device). Its results come
    back through `--json`.
    """
    flags = os.environ.get("XLA_FLAGS", "")
    env = {
        **os.environ,
        "XLA_FLAGS": f"{flags} --xla_force_host_platform_device_count={devices}".strip(),
    }
    if JAXMARL_SRC["path"]:
        env["JAXMARL_SRC"] = JAXMARL_SRC["path"]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "results.json")
        cmd = [sys.executable, script, "--cases", case_name, "--json", out, *argv]
        cmd += ["--quick"] if opts.quick else []
        proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL)
        if proc.returncode != 0:
            raise RuntimeError(f"{case_name} in a {devices}-device process failed ({cmd})")
        with open(out) as f:
            data = json.load(f)
    fields = {f.name for f in dataclasses.fields(Result)}
    return [Result(**{k: v for k, v in r.items() if k in fields}) for r in data["results"]]


def data_parallel_train(trainer: Any) -> Callable:
    """`fn(key, hparams) -> (state [D, ...], metrics)`: one run with its envs and learner split
    over every device (`marljax.training.execute`'s "envs" layout)."""
    import jax.numpy as jnp

    from marljax.training.execute import make_mesh, programs

    progs = programs(trainer, make_mesh("envs"), "envs")

    def fn(key, hparams):
        rows = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32)[None], hparams)
        state, metrics = progs.train(key[None], rows)
        return jax.tree.map(lambda x: x[:, 0], state), jax.tree.map(lambda x: x[0], metrics)

    return fn


def marljax_training_cases(
    name: str,
    script: str,
    build: Callable[[Options], tuple[Any, Any, str]],
    steps: Callable[[Options], int],
) -> None:
    """Register `<name>/marljax`, `<name>/marljax_dp` and `<name>/marljax_2dev`, in that order.

    `build(opts) -> (trainer, hparams, task)` gives the single-device run, which `marljax` times
    (`marljax_training`). `marljax_dp` times the `"envs"` layout of `marljax.training.execute`
    over every device of this process (skipped on one device); `marljax_2dev` runs `marljax_dp`
    in a fresh process that sees the CPU as 2 host devices (`in_subprocess`), with the same
    `--steps`.
    """

    @case(f"{name}/marljax")
    def one_device(opts: Options) -> list[Result]:
        return marljax_training(*build(opts))

    @case(f"{name}/marljax_dp")
    def over_devices(opts: Options) -> list[Result]:
        framework = data_parallel_framework()
        trainer, hparams, task = build(opts)
        return marljax_training(trainer, hparams, task, data_parallel_train(trainer), framework)

    @case(f"{name}/marljax_2dev")
    def two_devices(opts: Options) -> list[Result]:
        return in_subprocess(script, f"{name}/marljax_dp", opts, 2, ["--steps", str(steps(opts))])


def parse_jaxmarl_src(argv: list[str]) -> list[str]:
    """Take `--jaxmarl-src PATH` out of `argv` (into `JAXMARL_SRC`); returns the rest."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--jaxmarl-src", default=JAXMARL_SRC["path"])
    known, rest = pre.parse_known_args(argv)
    JAXMARL_SRC["path"] = known.jaxmarl_src
    return rest


def notes_table(results: Sequence[Result], key: str, title: str) -> str:
    """A markdown table of one `Result.notes` entry per framework (e.g. a final return)."""
    lines = ["", f"| framework | {title} |", "|---|---:|"]
    for r in results:
        lines.append(f"| {r.framework} | {r.notes.get(key, float('nan')):.2f} |")
    return "\n".join(lines)


def main_with_steps(
    names: Sequence[str],
    description: str,
    steps: TrainSteps,
    notes: tuple[str, str] | None = None,
) -> list[Result]:
    """`main` for training benchmarks: also takes `--steps N` (default `steps.default`, handed to
    the cases as `Options.steps`), `--seeds N` and `--jaxmarl-src PATH`; one timed call per case,
    no extra first-call compile. `notes = (key, title)` prints `notes_table(results, key, title)`
    after the table."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--steps", type=int, default=steps.default)
    pre.add_argument("--seeds", type=int, default=1, help="seeds per program, vmapped")
    known, rest = pre.parse_known_args(parse_jaxmarl_src(sys.argv[1:]))
    TRAIN_SEEDS["n"] = max(1, known.seeds)
    sys.argv = [sys.argv[0], *rest]
    after = None if notes is None else (lambda results: notes_table(results, *notes))
    return main(
        names, description, "jaxmarl", after, repeats=1, first_call=False, steps=known.steps
    )


def run_cases(names: Sequence[str], opts: Options) -> tuple[list[Result], dict[str, str]]:
    """Run the named cases in order; returns the results and the skipped cases with reasons."""
    results: list[Result] = []
    skipped: dict[str, str] = {}
    for name in names:
        print(f"# running {name} ...", file=sys.stderr, flush=True)
        t = time.perf_counter()
        try:
            out = CASES[name](opts)
        except SkipCase as e:
            skipped[name] = str(e)
            print(f"# skipped {name}: {e}", file=sys.stderr, flush=True)
            continue
        except Exception as e:  # noqa: BLE001  (only out-of-memory is a result; re-raise the rest)
            if not is_out_of_memory(e):
                raise
            skipped[name] = f"out of device memory: {str(e).splitlines()[0][:200]}"
            print(f"# {name}: {skipped[name]}", file=sys.stderr, flush=True)
            continue
        print(f"# {name} took {time.perf_counter() - t:.1f}s", file=sys.stderr, flush=True)
        results.extend(out)
    return results, skipped


# ----------------------------------------------------------------------------- output


def _fmt_s(x: float) -> str:
    if x != x:  # nan
        return "-"
    return f"{x * 1e3:.2f} ms" if x < 1.0 else f"{x:.2f} s"


def _fmt_rate(x: float) -> str:
    if x != x:
        return "-"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.2f}{unit}"
    return f"{x:.0f}"


def compile_table(results: Sequence[Result], task_prefix: str, label: str) -> str:
    """Markdown of the compile-vs-agents rows (task starting with `task_prefix`, `notes` with
    `agents` and `stablehlo_chars`): each compile time and its ratio to the fewest agents."""
    rows = [r for r in results if r.task.startswith(task_prefix)]
    if not rows:
        return ""
    first = min(r.notes["agents"] for r in rows)
    base = {r.framework: r.compile_s for r in rows if r.notes["agents"] == first}
    lines = [
        "",
        f"| {label} | agents | lower + compile | vs A={first} | StableHLO chars |",
        "|---|---|---:|---:|---:|",
    ]
    for r in sorted(rows, key=lambda r: (r.framework, r.notes["agents"])):
        ratio = r.compile_s / base[r.framework] if r.framework in base else float("nan")
        lines.append(
            f"| {r.framework} | {r.variant} | {r.compile_s:.2f} s | {ratio:.2f}x | "
            f"{r.notes['stablehlo_chars']:,} |"
        )
    return "\n".join(lines)


def format_table(results: Sequence[Result], baseline: str | Sequence[str] | None = None) -> str:
    """A markdown table of `results`, then the ratios to the baseline framework per task.

    Args:
      results: the measurements.
      baseline: a framework name, or several in order of preference; for every task (and
        variant), the first of them that measured it is the baseline, and
        `steps/s(other) / steps/s(baseline)` is printed for every other framework that measured
        it (>1 means faster than the baseline).

    Returns:
      Markdown text.
    """
    lines = [
        "| task | variant | framework | compile (lower+compile) | first call incl. compile "
        "| run (median) | run (min / max) | env steps / run | env steps/s |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.task} | {r.variant} | {r.framework} | {_fmt_s(r.compile_s)} "
            f"| {_fmt_s(r.first_call_s)} | {_fmt_s(r.run_s)} "
            f"| {_fmt_s(r.run_min_s)} / {_fmt_s(r.run_max_s)} | {r.env_steps:,} "
            f"| {_fmt_rate(r.steps_per_s)} |"
        )
    ratios = format_ratios(results, baseline) if baseline else ""
    return "\n".join(lines) + ("\n\n" + ratios if ratios else "")


def format_ratios(results: Sequence[Result], baseline: str | Sequence[str]) -> str:
    """The markdown table of env-steps/s ratios to the baseline framework (see `format_table`)."""
    order = [baseline] if isinstance(baseline, str) else list(baseline)
    by_row: dict[tuple[str, str], dict[str, Result]] = {}
    for r in results:
        by_row.setdefault((r.task, r.variant), {})[r.framework] = r
    lines = []
    for row in by_row.values():
        base = next((row[f] for f in order if f in row), None)
        if base is None or not base.run_s > 0:  # nothing timed (e.g. a FLOP count)
            continue
        for r in row.values():
            if r is not base:
                ratio = r.steps_per_s / base.steps_per_s
                lines.append(f"| {r.name} | {r.framework} / {base.framework} | {ratio:.2f}x |")
    if not lines:
        return ""
    return "\n".join(["| task | ratio of env steps/s | value |", "|---|---|---:|", *lines])


def print_table(results: Sequence[Result], baseline: str | Sequence[str] | None = None) -> None:
    """Print the machine line and `format_table(results, baseline)`."""
    print(f"Machine: {machine_info()}\n")
    print(format_table(results, baseline))


def write_json(path: str, results: Sequence[Result], skipped: dict[str, str] | None = None) -> None:
    """Write the results with the machine line as JSON."""
    data = {
        "machine": machine_info(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "argv": sys.argv,
        "results": [r.to_dict() for r in results],
        "skipped": skipped or {},
    }
    with open(path, "w") as f:
        json.dump(data, f, indent=2, default=float)
    print(f"\nwrote {path}", file=sys.stderr)


# ----------------------------------------------------------------------------- entry point


def parser(description: str, repeats: int = 5, first_call: bool = True) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    p.add_argument("--quick", action="store_true", help="tiny sizes: smoke-test the benchmark")
    p.add_argument(
        "--repeats", type=int, default=repeats, help=f"timed steady-state calls (default {repeats})"
    )
    p.add_argument(
        "--first-call",
        action=argparse.BooleanOptionalAction,
        default=first_call,
        help="also time a fresh first call incl. compile (costs one more compile per row; "
        f"default {'on' if first_call else 'off'})",
    )
    p.add_argument("--cases", nargs="*", help="run only these registered cases (default: all)")
    p.add_argument(
        "--num-envs", type=_int_list, help="env benchmarks: env counts, e.g. 1024,16384,1048576"
    )
    p.add_argument("--num-steps", type=int, help="env benchmarks: steps per timed call")
    p.add_argument("--num-agents", type=_int_list, help="swarm benchmark: agents per env")
    return p


def main(
    names: Sequence[str],
    description: str,
    baseline: str | Sequence[str] | None = None,
    after: Callable[[list[Result]], str] | None = None,
    repeats: int = 5,
    first_call: bool = True,
    steps: int | None = None,
) -> list[Result]:
    """Command-line entry of a `bench_*.py` script: run its cases, print, optionally write JSON.

    Args:
      names: the cases this script runs by default.
      description: `--help` text.
      baseline: the framework(s) the ratios are taken against (see `format_table`).
      after: optional extra markdown given the results (e.g. scaling of a sweep).
      repeats: default of `--repeats`.
      first_call: default of `--first-call` / `--no-first-call`.
      steps: `Options.steps` (the `--steps` of `main_with_steps`).
    """
    args = parser(description, repeats, first_call).parse_args()
    names = args.cases or list(names)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        raise SystemExit(f"unknown case(s) {unknown}; registered: {sorted(CASES)}")
    opts = Options(
        quick=args.quick,
        repeats=args.repeats,
        first_call=args.first_call,
        num_envs=args.num_envs,
        num_steps=args.num_steps,
        num_agents=args.num_agents,
        steps=steps,
    )
    results, skipped = run_cases(names, opts)
    print_table(results, baseline)
    for name, why in skipped.items():
        print(f"\nskipped {name}: {why}")
    if after is not None:
        print(after(results))
    if args.json:
        write_json(args.json, results, skipped)
    return results


def time_once(fn: Callable, *args: Any) -> tuple[float, float, Any, Any]:
    """`(compile_s, run_s, output, compiled)`: lower + compile apart, then ONE timed run.

    For training programs that run for minutes, where `timed` (a first run, then the timed
    repeats) would run them twice.
    """
    jax.clear_caches()
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    t1 = time.perf_counter()
    out = jax.block_until_ready(compiled(*args))
    return t1 - t0, time.perf_counter() - t1, out, compiled


_HLO_OP = re.compile(r"= ([a-z0-9]+)\[([0-9,]*)\](?:\{[0-9,]*\})? ([a-z-]+)\(")
_BYTES = {"f32": 4, "s32": 4, "u32": 4, "f16": 2, "bf16": 2, "pred": 1, "s8": 1, "u8": 1}


def xla_flops(fn: Callable, *args: Any) -> float:
    """FLOPs of `jax.jit(fn)(*args)` by XLA's cost analysis (a loop body counted once)."""
    cost = jax.jit(fn).lower(*args).compile().cost_analysis()
    return float((cost[0] if isinstance(cost, list) else cost)["flops"])


def hlo_stats(compiled: Any) -> dict[str, int]:
    """Counts of a compiled program's optimised HLO (`compiled.as_text()`), to compare the work of
    two programs: instructions, fusions, while loops, dots, and the bytes written by layout copies
    and transposes (data movement that computes nothing).

    Loop bodies count once, whatever their trip count.
    """
    text = compiled.as_text()
    ops = _HLO_OP.findall(text)
    moved = 0
    for dtype, dims, op in ops:
        if op in ("copy", "transpose"):
            n = 1
            for d in filter(None, dims.split(",")):
                n *= int(d)
            moved += n * _BYTES.get(dtype, 4)
    count = lambda name: sum(op == name for _, _, op in ops)  # noqa: E731
    return {
        "instructions": len(ops),
        "fusions": count("fusion"),
        "while_loops": len(re.findall(r"\swhile\(", text)),
        "dots": count("dot"),
        "copy_transpose_bytes": moved,
    }


def final_score_notes(curve: Any, key: str = "final_score") -> dict:
    """`{key: IQM, key_ci: [low, high], per_seed}` of `[S, U]` per-update scores: each seed's
    mean over the last tenth of training (`marljax.benchmarks.scores`), as the benchmark suite
    scores its cells."""
    from marljax.benchmarks import scores

    curve = np.asarray(curve, np.float64)
    _, points = scores.curve_points(curve, np.arange(curve.shape[1]))
    iqm, low, high = scores.iqm_ci(points[:, -1])
    return {key: iqm, f"{key}_ci": [low, high], "per_seed": points[:, -1].tolist()}
