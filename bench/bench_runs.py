"""The cost of runs in one program: 1 to 1024 MAPPO runs (seeds x settings), and memory vs estimate.

For `R` runs, the fused program of `marljax.training.execute.programs` (the runs layout `marljax sweep`
and `marljax train` run) is compiled for `R` runs and XLA's memory analysis of it read;
the same compiled program then runs `R` runs of MAPPO on `particle/simple_spread-v0` (E = 64 envs
x T = 32 steps per update, 16 updates per run, `PPOConfig(critic_input="global")` defaults,
one learning rate per run drawn from 1e-4..1e-3, so seeds and settings are mixed as in a sweep).
Reported per `R`: compile time (inside the estimate), run time (median of `--repeats`), wall time
relative to one run, env steps/s, the estimate, and the device's measured peak memory
(`memory_stats()["peak_bytes_in_use"]`, a running maximum: rows run in increasing `R`, so each
row's peak is its own up to the smaller rows' residue; CPU backends report no peak).

    python bench/bench_runs.py [--runs 1,16,256,1024] [--repeats N] [--json PATH] [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import jax
import numpy as np
from harness import machine_info

import marljax
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.training.execute import make_mesh, place, programs
from marljax.training.train import TrainConfig, make_train

ENV_ID = "particle/simple_spread-v0"
NUM_ENVS, ROLLOUT_LEN, NUM_UPDATES = 64, 32, 16


def _peak_bytes() -> int | None:
    stats = jax.devices()[0].memory_stats() or {}
    return stats.get("peak_bytes_in_use")


def run(runs: tuple[int, ...], repeats: int, updates: int) -> list[dict]:
    env, params = marljax.make(ENV_ID)
    config = TrainConfig(
        num_envs=NUM_ENVS, rollout_len=ROLLOUT_LEN, total_env_steps=NUM_ENVS * ROLLOUT_LEN * updates
    )
    trainer = make_train(config, env, make_ppo(PPOConfig(critic_input="global"), env, params))
    steps_per_run = config.num_updates * config.steps_per_update
    rows = []
    for R in runs:
        mesh = make_mesh("runs")
        R = -(-R // mesh.size) * mesh.size
        spec = jax.sharding.PartitionSpec("runs")
        keys = place(jax.random.split(jax.random.PRNGKey(0), R), mesh, spec)
        hps = jax.tree.map(lambda x, n=R: np.full(n, x, np.float32), PPOHParams())
        hps = place(hps.replace(lr=np.geomspace(1e-4, 1e-3, R).astype(np.float32)), mesh, spec)
        t0 = time.perf_counter()
        compiled = programs(trainer, mesh, "runs").train.lower(keys, hps).compile()
        compile_s = time.perf_counter() - t0
        stats = compiled.memory_analysis()
        estimate = None if stats is None else int(
            stats.argument_size_in_bytes + stats.output_size_in_bytes
            + stats.temp_size_in_bytes - stats.alias_size_in_bytes
        )  # fmt: skip
        jax.block_until_ready(compiled(keys, hps))  # first run: allocations, not timed
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            jax.block_until_ready(compiled(keys, hps))
            times.append(time.perf_counter() - t)
        run_s = statistics.median(times)
        rows.append(
            {
                "runs": R,
                "compile_s": compile_s,
                "run_s": run_s,
                "env_steps_per_s": R * steps_per_run / run_s,
                "estimate_bytes": estimate,
                "measured_peak_bytes": _peak_bytes(),
            }
        )
        r = rows[-1]
        print(
            f"R={r['runs']:5d} compile {compile_s:6.1f} s  run {run_s * 1e3:9.1f} ms  "
            f"wall/1 run {run_s / rows[0]['run_s']:6.2f}x  {r['env_steps_per_s'] / 1e6:8.2f}M "
            f"env steps/s  estimate {_mib(r['estimate_bytes'])}  peak {_mib(r['measured_peak_bytes'])}",
            flush=True,
        )
    return rows


def _mib(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 2**20:9.1f} MiB"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", default="1,16,256,1024", help="run counts, comma-separated")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--quick", action="store_true", help="2 updates, runs 1,4")
    args = p.parse_args()
    runs = (1, 4) if args.quick else tuple(int(v) for v in args.runs.split(","))
    updates = 2 if args.quick else NUM_UPDATES
    print(f"Machine: {machine_info()}\n")
    rows = run(runs, args.repeats, updates)
    if args.json:
        task = f"MAPPO {ENV_ID} E={NUM_ENVS} T={ROLLOUT_LEN} {updates} updates per run"
        with open(args.json, "w") as f:
            json.dump({"machine": machine_info(), "task": task, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
