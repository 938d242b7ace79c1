"""MAPPO training throughput: one run vs 4 and 16 seeds (vmap) vs 2 lr x 4 seeds (sweep).

Envs: two matrix games and MPE simple spread (`particle/simple_spread-v0`). Each row is one
compiled program: the fused `train(key, hparams)` of `marljax.training.train.make_train` with the MAPPO
agent (`make_ppo(PPOConfig(critic_input="global"))`, default hyperparameters), alone,
`vmap`ped over 4 or 16 seeds, or the grid x seeds `marljax.training.sweep` over
`hparam_grid(PPOHParams(), lr=[5e-4, 1e-3])` x 4 seeds. Compile time (lower + compile of the whole
program) is reported apart from the run time of the compiled program; env steps/s counts every
environment step of every run in the program (one step = one joint step of one env).

    python bench/bench_mappo.py [--json PATH] [--quick] [--first-call]
"""

from __future__ import annotations

import functools
import math

import jax
import numpy as np
from harness import Options, Result, SkipCase, case, in_subprocess, main, timed

import marljax
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.training import TrainConfig, hparam_grid, make_train, sweep
from marljax.training.execute import make_mesh, place, programs

ENV_IDS = ("matrix/climbing-v0", "matrix/ipd-v0", "particle/simple_spread-v0")
NUM_ENVS, ROLLOUT_LEN, NUM_UPDATES = 64, 32, 8
NUM_SEEDS = 4
MANY_SEEDS = 16
LRS = (5e-4, 1e-3)


def _config(opts: Options) -> TrainConfig:
    updates = 2 if opts.quick else NUM_UPDATES
    return TrainConfig(
        num_envs=NUM_ENVS, rollout_len=ROLLOUT_LEN, total_env_steps=NUM_ENVS * ROLLOUT_LEN * updates
    )


def mappo_rows(env_id: str, opts: Options) -> list[Result]:
    """The three rows (1 run, seeds vmap, grid x seeds sweep) for one env."""
    env, params = marljax.make(env_id)
    config = _config(opts)
    trainer = make_train(
        config, env, make_ppo(PPOConfig(critic_input="global"), env, params), params
    )
    steps_per_run = config.num_updates * config.steps_per_update
    task = f"MAPPO {env_id} (E={config.num_envs}, T={config.rollout_len}, {config.num_updates} updates)"
    notes = {
        "num_envs": config.num_envs,
        "rollout_len": config.rollout_len,
        "num_updates": config.num_updates,
        "ppo": "PPOConfig(critic_input='global') defaults, PPOHParams() defaults",
    }
    hparams = PPOHParams()
    keys = jax.random.split(jax.random.key(0), NUM_SEEDS)
    grid, settings = hparam_grid(hparams, lr=list(LRS))
    seeds_fn = jax.vmap(trainer.train, in_axes=(0, None))
    sweep_fn = functools.partial(sweep, trainer)
    rows = [
        ("1 run", trainer.train, (jax.random.key(0), hparams), 1),
        (f"{NUM_SEEDS} seeds (vmap)", seeds_fn, (keys, hparams), NUM_SEEDS),
        (
            f"{MANY_SEEDS} seeds (vmap)",
            seeds_fn,
            (jax.random.split(jax.random.key(1), MANY_SEEDS), hparams),
            MANY_SEEDS,
        ),
        (
            f"{len(settings)} lr x {NUM_SEEDS} seeds (sweep)",
            sweep_fn,
            (keys, grid),
            len(settings) * NUM_SEEDS,
        ),
    ]
    results = []
    for variant, fn, args, runs in rows:
        t = timed(fn, *args, repeats=opts.repeats, first_call=opts.first_call)
        results.append(
            t.result(
                task,
                "marljax",
                runs * steps_per_run,
                variant=variant,
                notes={**notes, "runs": runs},
            )
        )
    return results


@case("mappo_matrix/marljax")
def mappo_matrix(opts: Options) -> list[Result]:
    return [r for env_id in ENV_IDS for r in mappo_rows(env_id, opts)]


@case("mappo_matrix/marljax_sharded")
def mappo_matrix_sharded(opts: Options) -> list[Result]:
    """16 seeds with the runs axis sharded over every device (`marljax.training.execute.programs`), per env."""
    devices = jax.device_count()
    if devices < 2:
        raise SkipCase("needs 2+ devices (run through in_subprocess)")
    mesh = make_mesh("runs")
    results = []
    for env_id in ENV_IDS:
        env, params = marljax.make(env_id)
        config = _config(opts)
        trainer = make_train(
            config, env, make_ppo(PPOConfig(critic_input="global"), env, params), params
        )
        task = f"MAPPO {env_id} (E={config.num_envs}, T={config.rollout_len}, {config.num_updates} updates)"
        spec = jax.sharding.PartitionSpec("runs")
        keys = place(jax.random.split(jax.random.PRNGKey(1), MANY_SEEDS), mesh, spec)
        rows = jax.tree.map(lambda x: np.full(MANY_SEEDS, x, np.float32), PPOHParams())
        train = programs(trainer, mesh, "runs").train
        t = timed(train, keys, place(rows, mesh, spec), repeats=opts.repeats, first_call=False)
        steps = MANY_SEEDS * config.num_updates * config.steps_per_update
        variant = f"{MANY_SEEDS} seeds ({devices} devices)"
        results.append(
            t.result(task, "marljax", steps, variant=variant, notes={"runs": MANY_SEEDS})
        )
    return results


@case("mappo_matrix/marljax_2dev")
def mappo_matrix_two_devices(opts: Options) -> list[Result]:
    """`mappo_matrix/marljax_sharded` in a fresh process that sees the CPU as 2 host devices."""
    argv = ["--repeats", str(opts.repeats), "--no-first-call"]
    return in_subprocess(__file__, "mappo_matrix/marljax_sharded", opts, 2, argv)


def format_scaling(results: list[Result]) -> str:
    """Per task: compile time and env steps/s of the many-run programs relative to one run."""
    lines = [
        "",
        "| task | program | compile / compile(1 run) | env steps/s / env steps/s(1 run) "
        "| wall time / wall time(1 run) |",
        "|---|---:|---:|---:|---:|",
    ]
    for task in dict.fromkeys(r.task for r in results if r.framework == "marljax"):
        rows = [r for r in results if r.task == task and r.framework == "marljax"]
        single = next((r for r in rows if r.notes.get("runs") == 1), None)
        if single is None:
            continue
        for r in rows:
            if r is single:
                continue
            c = r.compile_s / single.compile_s if single.compile_s > 0 else math.nan
            s = r.steps_per_s / single.steps_per_s
            w = r.run_s / single.run_s
            lines.append(f"| {task} | {r.variant} | {c:.2f}x | {s:.2f}x | {w:.2f}x |")
    return "\n".join(lines) if len(lines) > 3 else ""


report = format_scaling  # run_all.py prints every module's `report(results)`


if __name__ == "__main__":
    main(
        ["mappo_matrix/marljax", "mappo_matrix/marljax_2dev"],
        description=__doc__.splitlines()[0],
        after=format_scaling,
        repeats=2,
        first_call=False,
    )
