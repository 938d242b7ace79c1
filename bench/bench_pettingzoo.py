"""MPE simple spread: marljax (jitted, batched) vs a PettingZoo Python loop (the mpe2 package).

The workload most MARL code runs today: a PettingZoo `ParallelEnv` stepped in a Python loop,
one environment at a time, numpy in and numpy out.

- pettingzoo: `mpe2.simple_spread_v3.parallel_env(N=3, local_ratio=0.5, max_cycles=25,
  continuous_actions=False)` (mpe2 1.1, the maintained successor of PettingZoo's MPE), random
  discrete actions from a seeded numpy generator, `reset` whenever the episode ends. One env
  step = one `step(actions)` call.
- marljax via its PettingZoo adapter: `to_pettingzoo(particle/simple_spread-v0)`, the same
  Python loop (each call runs one jitted step and copies to numpy), to separate the cost of the
  loop from the cost of the simulator.
- marljax: `particle/simple_spread-v0` (same semantics; parity with JaxMARL is tested in
  `tests/test_particle.py`), `E` envs vmapped under the runner's batched auto-reset, random
  actions, one jitted `lax.scan` over `T` steps; every output folded into a checksum so no
  work is dropped. One env step = one joint step of one env.

The ratio headline is marljax's batched env steps/s over the PettingZoo loop's.

    pip install mpe2          # optional; the case is skipped without it
    python bench/bench_pettingzoo.py [--json PATH] [--quick]
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
from harness import Options, Result, case, main, requires, timed

import marljax
from marljax.core.wrappers import BatchedAutoReset, EpisodeStats

ENV_ID = "particle/simple_spread-v0"
NUM_ENVS = (1, 64, 1024, 4096)
TASK = "MPE simple spread (3 agents), random actions"


def _loop_steps(opts: Options) -> int:
    return 200 if opts.quick else 5000


def _python_loop(env, num_steps: int, seed: int = 0) -> tuple[float, int]:
    """Seconds for `num_steps` steps of a PettingZoo ParallelEnv in a Python loop."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    spaces = {a: env.action_space(a) for a in env.possible_agents}
    start = time.perf_counter()
    for _ in range(num_steps):
        if not env.agents:
            env.reset()
        actions = {a: int(rng.integers(spaces[a].n)) for a in env.agents}
        env.step(actions)
    return time.perf_counter() - start, num_steps


def _loop_result(framework: str, seconds: float, steps: int) -> Result:
    return Result(
        task=f"{TASK}, E=1 Python loop",
        framework=framework,
        compile_s=float("nan"),
        run_s=seconds,
        env_steps=steps,
        run_min_s=seconds,
        run_max_s=seconds,
        repeats=1,
        notes={"loop_steps": steps},
    )


@case("pettingzoo_mpe/pettingzoo")
def pettingzoo_loop(opts: Options) -> list[Result]:
    mpe2 = requires("mpe2")
    from mpe2 import simple_spread_v3

    env = simple_spread_v3.parallel_env(
        N=3, local_ratio=0.5, max_cycles=25, continuous_actions=False
    )
    _python_loop(env, 50)  # warm-up
    seconds, steps = _python_loop(env, _loop_steps(opts))
    del mpe2
    return [_loop_result("pettingzoo", seconds, steps)]


@case("pettingzoo_mpe/marljax_adapter")
def marljax_adapter_loop(opts: Options) -> list[Result]:
    from marljax.envs.adapters import to_pettingzoo

    env = to_pettingzoo(ENV_ID)
    _python_loop(env, 50)  # warm-up (compiles the jitted step)
    seconds, steps = _python_loop(env, _loop_steps(opts))
    return [_loop_result("marljax (PettingZoo adapter)", seconds, steps)]


def _scan_rollout(num_envs: int, num_steps: int):
    env, params = marljax.make(ENV_ID)
    wrapped = BatchedAutoReset(EpisodeStats(env))

    def rollout(state, key):
        def body(carry, key_t):
            state, total = carry
            key_act, key_env = jax.random.split(key_t)
            actions = jax.random.randint(
                key_act, (num_envs, env.num_agents), 0, env.action_space(params).n
            )
            state, ts = wrapped.step(jax.random.split(key_env, num_envs), state, actions, params)
            total = total + sum(jnp.sum(x.astype(jnp.float32)) for x in jax.tree.leaves(ts))
            return (state, total), None

        (state, total), _ = jax.lax.scan(
            body, (state, jnp.float32(0)), jax.random.split(key, num_steps)
        )
        return state, total

    state, _ = jax.jit(lambda k: wrapped.reset(jax.random.split(k, num_envs), params))(
        jax.random.key(0)
    )
    return state, rollout


@case("pettingzoo_mpe/marljax")
def marljax_batched(opts: Options) -> list[Result]:
    results = []
    for num_envs in (1, 64) if opts.quick else NUM_ENVS:
        num_steps = 20 if opts.quick else {1: 2000, 64: 500}.get(num_envs, 100)
        state, rollout = _scan_rollout(num_envs, num_steps)
        t = timed(rollout, state, jax.random.key(1), repeats=opts.repeats, first_call=False)
        r = t.result(
            f"{TASK}, E={num_envs} jitted",
            "marljax",
            num_envs * num_steps,
            notes={"num_envs": num_envs, "num_steps": num_steps},
        )
        results.append(r)
    return results


def speedups(results: list[Result]) -> str:
    """marljax's env steps/s at each batch size over the PettingZoo loop's."""
    loop = next((r for r in results if r.framework == "pettingzoo"), None)
    if loop is None:
        return ""
    lines = ["", "| marljax program | env steps/s | x PettingZoo loop |", "|---|---:|---:|"]
    for r in results:
        if r.framework == "pettingzoo":
            continue
        lines.append(
            f"| {r.framework}, {r.task.split(', ')[-1]} | {r.steps_per_s:,.0f} | "
            f"{r.steps_per_s / loop.steps_per_s:,.1f}x |"
        )
    return "\n".join(lines)


report = speedups  # run_all.py prints every module's `report(results)`


if __name__ == "__main__":
    main(
        ["pettingzoo_mpe/pettingzoo", "pettingzoo_mpe/marljax_adapter", "pettingzoo_mpe/marljax"],
        description=__doc__.splitlines()[0],
        after=speedups,
        repeats=3,
        first_call=False,
    )
