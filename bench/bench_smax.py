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
speed is env steps/s of one fused program over all seeds, compile time apart.

    python bench/bench_smax.py --jaxmarl-src PATH [--steps 500000] [--seeds 5] [--json PATH]
"""

from __future__ import annotations

import jax
import numpy as np
from harness import (
    TRAIN_SEEDS,
    Options,
    Result,
    case,
    jaxmarl_baseline,
    main_with_steps,
    notes_table,
    seeded,
    timed,
)

from marljax.benchmarks import CELLS, scores
from marljax.benchmarks.suite import experiment_kwargs
from marljax.experiment import Experiment, build

_ARGS = {"steps": 500_000}
NUM_ENVS, ROLLOUT = 128, 128


def _steps(opts: Options) -> int:
    return NUM_ENVS * ROLLOUT * 2 if opts.quick else int(_ARGS["steps"])


def _task(steps: int) -> str:
    return f"recurrent IPPO, SMAX 3m (E={NUM_ENVS}, T={ROLLOUT}, {steps / 1e6:g}M steps)"


def _win_rate_notes(curve: np.ndarray) -> dict:
    """IQM [CI] over seeds of the last-tenth win rate of `[S, U]` per-update win rates."""
    _, points = scores.curve_points(curve, np.arange(curve.shape[1]))
    iqm, low, high = scores.iqm_ci(points[:, -1])
    return {"final_win_rate": iqm, "win_rate_ci": [low, high], "per_seed": points[:, -1].tolist()}


@case("smax_ippo/marljax")
def marljax_smax(opts: Options) -> list[Result]:
    steps = _steps(opts)
    exp = Experiment(seeds=1, **experiment_kwargs(CELLS["smax/3m:ippo"], steps))
    built = build(exp)
    hparams = jax.tree.map(lambda x: x[0], built.hparams)
    fn, key = seeded(built.trainer.train, 1)
    t = timed(fn, key, hparams, repeats=1, first_call=False)
    win = np.asarray(t.output[1]["task/win_rate"]).reshape(TRAIN_SEEDS["n"], -1)
    config = built.trainer.config
    return [
        t.result(
            _task(steps),
            "marljax",
            TRAIN_SEEDS["n"] * config.num_updates * config.steps_per_update,
            notes={**_win_rate_notes(win), "num_updates": config.num_updates},
        )
    ]


@case("smax_ippo/jaxmarl")
def jaxmarl_smax(opts: Options) -> list[Result]:
    steps = _steps(opts)
    module, base = jaxmarl_baseline("baselines/IPPO", "ippo_rnn_smax", ["config/ippo_rnn_smax.yaml"])
    config = {**base, "MAP_NAME": "3m", "TOTAL_TIMESTEPS": steps, "ANNEAL_LR": False}
    logged: list[dict] = []
    module.wandb.log = lambda d, *a, **k: logged.append(
        {k2: float(np.asarray(v)) for k2, v in d.items() if np.size(v) == 1}
    )
    train, key = seeded(module.make_train(dict(config)))
    t = timed(train, key, repeats=1, first_call=False)
    n = TRAIN_SEEDS["n"]
    updates = steps // ROLLOUT // NUM_ENVS
    # the script logs once per update and seed (seeds interleaved within an update)
    by_step: dict[float, list[float]] = {}
    for row in logged[-updates * n :]:
        by_step.setdefault(row["env_step"], []).append(row["win_rate"])
    win = np.array([by_step[s] for s in sorted(by_step)]).T  # [S, U]
    return [
        t.result(
            _task(steps),
            "jaxmarl",
            n * updates * ROLLOUT * NUM_ENVS,
            notes={**_win_rate_notes(win), "num_updates": updates},
        )
    ]


if __name__ == "__main__":
    main_with_steps(
        ["smax_ippo/jaxmarl", "smax_ippo/marljax"],
        __doc__.splitlines()[0],
        _ARGS,
        after=lambda results: notes_table(
            results, "final_win_rate", "win rate, IQM over seeds of the last tenth of training"
        ),
    )
