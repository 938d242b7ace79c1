"""Tuning while training: a PBT (and a halving) sweep's env steps/s against the same plain sweep.

The same 16 runs of MAPPO on MPE simple spread (`particle/simple_spread-v0`, 16 envs x 32 steps
per update, 8 populations of 2 draws of `lr` and `ent_coef`), trained through the one engine
(`marljax.training.execute.execute`) in chunks of 10 updates:

- `plain`: no tuner (a plain sweep);
- `pbt`: `marljax.training.tune.PBT(interval=10)`: after every chunk the runs are ranked, the
  bottom copies the top (state gathered to the host, copied, placed again) and explores;
- `halving`: `Halving(rungs=(0.25, 0.5))`: the weaker half stops twice (fewer runs computed:
  its env steps count only the runs that ran).

Compile (trace, XLA compile, memory check) is timed apart from the run: from the first chunk's
start to the end, the tuner's work between chunks included (halving's compiles for its smaller
run counts too); the init program before the first chunk is in neither. Each variant is measured `--repeats` times,
interleaved; the table prints the median and each variant's ratio to `plain`. Issue target:
PBT >= 0.9x.

    python bench/bench_tune.py [--quick] [--repeats 3] [--json PATH]
"""

from __future__ import annotations

import statistics
import time

import jax
import numpy as np
from harness import Options, Result, case, main

import marljax
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.training import execute as ex
from marljax.training import tune
from marljax.training.space import LogUniform, random_settings, stack_settings
from marljax.training.train import TrainConfig, make_train

ENV = "particle/simple_spread-v0"
RUNS, CHUNK = 16, 10
SPACE = {"lr": LogUniform(1e-4, 3e-3), "ent_coef": LogUniform(1e-4, 0.1)}
VARIANTS = ("plain", "pbt", "halving")


def _setup(updates: int):
    env, params = marljax.make(ENV)
    config = TrainConfig(16, 32, 16 * 32 * updates)
    trainer = make_train(config, env, make_ppo(PPOConfig(critic_input="global"), env, params))
    hparams = stack_settings(PPOHParams(), random_settings(RUNS, 0, **SPACE))
    keys = np.asarray(jax.vmap(jax.random.PRNGKey)(np.arange(RUNS)))
    return trainer, keys, hparams


def _tuner(variant: str, trainer, hparams):
    if variant == "plain":
        return None
    method = tune.PBT(CHUNK) if variant == "pbt" else tune.Halving((0.25, 0.5))
    pops = [[2 * p, 2 * p + 1] for p in range(RUNS // 2)]
    total = trainer.config.num_updates
    return tune.Tuner(method, SPACE, "episode_return", pops, hparams, total)


def _once(variant: str, trainer, keys, hparams) -> tuple[float, float, int]:
    """(compile_s, run_s, env steps of the runs that ran)."""
    marks = {}

    def first_chunk(info) -> None:  # the run starts where the first chunk started
        marks.setdefault("start", time.perf_counter() - info.seconds)

    adapt = _tuner(variant, trainer, hparams)
    jax.clear_caches()
    t0 = time.perf_counter()
    out = ex.execute(
        trainer, keys, hparams, chunk_updates=CHUNK, adapt=adapt, callbacks=[first_chunk],
        prepared=lambda: marks.setdefault("ready", time.perf_counter()),
    )  # fmt: skip
    end = time.perf_counter()
    steps = int(np.asarray(out.metrics["env_steps"], np.int64).max(axis=-1).sum())
    return marks["ready"] - t0, end - marks["start"], steps


@case("tune/sweep")
def tune_sweep(opts: Options) -> list[Result]:
    updates = 20 if opts.quick else 200
    trainer, keys, hparams = _setup(updates)
    times = {v: [] for v in VARIANTS}
    for _ in range(max(1, opts.repeats)):
        for v in VARIANTS:
            times[v].append(_once(v, trainer, keys, hparams))
    task = f"{RUNS} runs of MAPPO on simple_spread, {updates} updates in chunks of {CHUNK}"
    out = []
    for v, rows in times.items():
        runs = [r[1] for r in rows]
        out.append(
            Result(
                task,
                v,
                statistics.median(r[0] for r in rows),
                statistics.median(runs),
                rows[0][2],
                run_min_s=min(runs),
                run_max_s=max(runs),
                repeats=len(rows),
            )  # fmt: skip
        )
    return out


if __name__ == "__main__":
    main(["tune/sweep"], __doc__.splitlines()[0], baseline="plain", repeats=3, first_call=False)
