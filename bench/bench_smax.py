"""Recurrent IPPO on SMAX 3m: marljax's benchmark cell vs JaxMARL's own script, same budget and seeds.

Task: SMAX 3m against JaxMARL's heuristic enemy (`smax/3m-v0` here, `HeuristicEnemySMAX` with
`map_name_to_scenario("3m")` in JaxMARL 0.2.0), the learners the three allied marines.

jaxmarl: `baselines/IPPO/ippo_rnn_smax.py` from a JaxMARL source checkout, unmodified, with its
`config/ippo_rnn_smax.yaml` except `MAP_NAME: 3m`, `ANNEAL_LR: False` (marljax's PPO keeps its
learning rate constant) and the budget: 128 envs x 128 steps per update, 4 epochs x 4
minibatches, GRU 128 after a 128 ReLU layer, one torso for actor and critic, lr 0.004, clip 0.05,
grad clip 0.25, entropy 0.01. Its win rate is read from the per-update `wandb.log` calls of the
script (the mean of `returned_won_episode` over the update's finished episodes).

marljax: the benchmark cell `smax/3m:ippo` (`marljax benchmark --tasks smax/3m --algos ippo`):
the same sizes and hyperparameters on separate actor and critic networks, the GRU first.

Both: the final win rate of every seed is its mean over the last tenth of training
(`marljax.benchmarks.scores`), reported as the IQM over seeds with a 95% bootstrap CI; the
speed is env steps/s of run time (compile apart, one run). marljax trains every seed in one
program; JaxMARL's script runs its seeds one after the other (vmapped over seeds it deadlocks
on jax 0.10.2 on a 2-core CPU), so the ratio is that of the two as they can be run here.

    python bench/bench_smax.py --jaxmarl-src PATH [--steps 500000] [--seeds 5] [--json PATH]
"""

from __future__ import annotations

import time

import jax
import numpy as np
from harness import (
    TRAIN_SEEDS,
    Options,
    Result,
    case,
    final_score_notes,
    jaxmarl_baseline,
    main_with_steps,
    notes_table,
    seeded,
    time_once,
)

from marljax.benchmarks import CELLS
from marljax.benchmarks.suite import experiment_kwargs
from marljax.experiment import Experiment, build

_ARGS = {"steps": 500_000}
NUM_ENVS, ROLLOUT = 128, 128


def _steps(opts: Options) -> int:
    return NUM_ENVS * ROLLOUT * 2 if opts.quick else int(_ARGS["steps"])


def _task(steps: int) -> str:
    return f"recurrent IPPO, SMAX 3m (E={NUM_ENVS}, T={ROLLOUT}, {steps / 1e6:g}M steps)"


@case("smax_ippo/marljax")
def marljax_smax(opts: Options) -> list[Result]:
    steps = _steps(opts)
    n = TRAIN_SEEDS["n"]
    exp = Experiment(seeds=1, **experiment_kwargs(CELLS["smax/3m:ippo"], steps))
    built = build(exp)
    hparams = jax.tree.map(lambda x: x[0], built.hparams)
    fn, key = seeded(built.trainer.train, 1)  # every seed in one program, as marljax runs them
    compile_s, run_s, out, _ = time_once(fn, key, hparams)
    win = np.asarray(out[1]["task/win_rate"]).reshape(n, -1)
    config = built.trainer.config
    env_steps = n * config.num_updates * config.steps_per_update
    notes = {
        **final_score_notes(win, "final_win_rate"),
        "num_updates": config.num_updates,
        "seeds": n,
    }
    return [Result(_task(steps), "marljax", compile_s, run_s, env_steps, notes=notes)]


@case("smax_ippo/jaxmarl")
def jaxmarl_smax(opts: Options) -> list[Result]:
    """JaxMARL's script, one seed at a time: vmapped over seeds it deadlocks on jax 0.10.2 with
    2 CPU cores (batched QR of its orthogonal initialiser: both XLA threads wait on each other),
    so its seeds run as separate calls of one compiled program and their run times add up."""
    steps = _steps(opts)
    n = TRAIN_SEEDS["n"]
    module, base = jaxmarl_baseline(
        "baselines/IPPO", "ippo_rnn_smax", ["config/ippo_rnn_smax.yaml"]
    )
    config = {**base, "MAP_NAME": "3m", "TOTAL_TIMESTEPS": steps, "ANNEAL_LR": False}
    logged: list[dict] = []
    module.wandb.log = lambda d, *a, **k: logged.append(
        {k2: float(np.asarray(v)) for k2, v in d.items() if np.size(v) == 1}
    )
    train = module.make_train(dict(config))
    keys = jax.random.split(jax.random.PRNGKey(0), n)
    compile_s, run_s, _, compiled = time_once(train, keys[0])
    wins = [[row["win_rate"] for row in logged]]
    for k in keys[1:]:
        logged.clear()
        t = time.perf_counter()
        jax.block_until_ready(compiled(k))
        run_s += time.perf_counter() - t
        wins.append([row["win_rate"] for row in logged])
    updates = steps // ROLLOUT // NUM_ENVS
    notes = {**final_score_notes(np.array(wins), "final_win_rate"), "num_updates": updates, "seeds": n,
             "seeds_run": "one after the other"}  # fmt: skip
    return [Result(_task(steps), "jaxmarl", compile_s, run_s, n * updates * ROLLOUT * NUM_ENVS,
                   notes=notes)]  # fmt: skip


if __name__ == "__main__":
    main_with_steps(
        ["smax_ippo/jaxmarl", "smax_ippo/marljax"],
        __doc__.splitlines()[0],
        _ARGS,
        after=lambda results: notes_table(
            results, "final_win_rate", "win rate, IQM over seeds of the last tenth of training"
        ),
    )
