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

import numpy as np
from harness import (
    TRAIN_SEEDS,
    Options,
    Result,
    TrainSteps,
    case,
    jaxmarl_baseline,
    jaxmarl_seeds_in_turn,
    main_with_steps,
    marljax_cell_training,
)

NUM_ENVS, ROLLOUT = 128, 128
STEPS = TrainSteps(500_000, quick=NUM_ENVS * ROLLOUT * 2)


def _task(steps: int) -> str:
    return f"recurrent IPPO, SMAX 3m (E={NUM_ENVS}, T={ROLLOUT}, {steps / 1e6:g}M steps)"


@case("smax_ippo/marljax")
def marljax_smax(opts: Options) -> list[Result]:
    steps = STEPS(opts)
    return marljax_cell_training(
        "smax/3m:ippo",
        steps,
        _task(steps),
        metric="task/win_rate",
        score="final_win_rate",
        notes={"seeds": TRAIN_SEEDS["n"]},
    )


@case("smax_ippo/jaxmarl")
def jaxmarl_smax(opts: Options) -> list[Result]:
    """JaxMARL's script, one seed at a time: vmapped over seeds it deadlocks on jax 0.10.2 with
    2 CPU cores (batched QR of its orthogonal initialiser: both XLA threads wait on each other),
    so its seeds run as separate calls of one compiled program and their run times add up."""
    steps = STEPS(opts)
    module, base = jaxmarl_baseline(
        "baselines/IPPO", "ippo_rnn_smax", ["config/ippo_rnn_smax.yaml"]
    )
    config = {**base, "MAP_NAME": "3m", "TOTAL_TIMESTEPS": steps, "ANNEAL_LR": False}
    logged: list[dict] = []
    module.wandb.log = lambda d, *a, **k: logged.append(
        {k2: float(np.asarray(v)) for k2, v in d.items() if np.size(v) == 1}
    )

    def win_rates(_) -> list[float]:  # this seed's logged rows, then a clean log for the next
        wins = [row["win_rate"] for row in logged]
        logged.clear()
        return wins

    train = module.make_train(dict(config))
    return jaxmarl_seeds_in_turn(
        train,
        win_rates,
        steps,
        ROLLOUT * NUM_ENVS,
        _task(steps),
        score="final_win_rate",
        notes={"seeds": TRAIN_SEEDS["n"]},
    )


if __name__ == "__main__":
    main_with_steps(
        ["smax_ippo/jaxmarl", "smax_ippo/marljax"],
        __doc__.splitlines()[0],
        STEPS,
        notes=("final_win_rate", "win rate, IQM over seeds of the last tenth of training"),
    )
