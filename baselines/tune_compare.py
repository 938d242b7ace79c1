"""PBT and successive halving against random search at equal total env steps.

Each seed is one repetition of a whole tuning procedure over `lr` and `ent_coef` (its own draws):

- random search: 8 draws, each trained for the budget `T`; the best by its final greedy return;
- PBT (Jaderberg et al. 2017): the same 8 draws, every 10% of `T` the bottom quarter copies the
  top quarter and perturbs (x0.8 / x1.25, redrawn with probability 0.25);
- successive halving (Li et al. 2020): 16 draws; after 25% and 50% of `T` the weaker half
  stops: 16 x 0.25 + 8 x 0.25 + 4 x 0.5 = 8 runs' worth of env steps, as random search.

The outcome of a repetition is its best run's final greedy evaluation return; the script prints
the IQM with a 95% stratified-bootstrap CI per procedure and the probability of improvement of
PBT and halving over random search, and writes them with every repetition's score to `--json`.

    python baselines/tune_compare.py --task spread [--reps 8] [--steps 327680] [--json F]
    python baselines/tune_compare.py --task speaker_listener --steps 163840
    python baselines/tune_compare.py --task climbing --steps 81920   # every run ends at 7
"""

import argparse
import json
import time

import jax
import numpy as np

from marljax.evaluation import stats
from marljax.shell.experiment import Experiment
from marljax.shell.tune import run_tune

TASKS = {
    # MAPPO's defaults (16 envs x 32 steps), greedy evaluation 20 times per run
    "spread": dict(algo="mappo", env="particle/simple_spread-v0"),
    # IPPO on LBF 8x8, 2 players, 2 food, cooperative (about 5k env steps/s for 64 runs on a
    # 2-core CPU: the 8 repetitions take hours there)
    "lbf": dict(algo="ippo", env="grid/lbf-8x8-2p-2f-coop-v0"),
    # MAPPO on MPE speaker-listener (Lowe et al. 2017): a speaker that sees the goal colour and
    # a listener that moves, communication to be learned
    "speaker_listener": dict(algo="mappo", env="particle/simple_speaker_listener-v0"),
    # IPPO on the climbing game (Claus and Boutilier 1998): 11 at (a, a) next to -30 penalties,
    # the safe 7 elsewhere; whether a run finds 11 hinges on the learning rate and entropy
    "climbing": dict(algo="ippo", env="matrix/climbing-v0"),
}
SPACE = {"lr": "log:1e-4:3e-3", "ent_coef": "log:1e-4:0.1"}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=sorted(TASKS), default="spread")
    parser.add_argument("--reps", type=int, default=8, help="repetitions of each procedure")
    parser.add_argument("--steps", type=int, default=327_680, help="env steps per full run T")
    parser.add_argument("--json", default=None, help="write the results here")
    parser.add_argument("--out", default="runs", help="parent folder of the run directories")
    args = parser.parse_args(argv)
    updates = args.steps // (16 * 32)
    tenth = max(1, updates // 10)
    base = dict(
        **TASKS[args.task], seeds=args.reps, sample=SPACE, out_dir=args.out, checkpoint=False,
        train={"total_env_steps": args.steps, "eval_interval": tenth // 2 or 1},
    )  # fmt: skip
    procedures = {
        "random": dict(num_samples=8, tune={"method": "random"}),
        "pbt": dict(num_samples=8, tune={"method": "pbt", "interval": tenth}),
        "halving": dict(num_samples=16, tune={"method": "halving", "rungs": [0.25, 0.5]}),
    }
    out: dict = {"task": args.task, **TASKS[args.task], "steps_per_run": args.steps,
                 "reps": args.reps, "space": SPACE, "procedures": {}}  # fmt: skip
    for name, extra in procedures.items():
        t0 = time.perf_counter()
        result = run_tune(Experiment(**base, **extra), progress=False)
        env_steps = _env_steps(result)
        out["procedures"][name] = {
            "scores": [float(x) for x in result.population_scores],
            "env_steps": env_steps,
            "seconds": time.perf_counter() - t0,
            "run_dir": result.run_dir,
        }
        print(f"{name}: {np.round(result.population_scores, 3)} ({env_steps:,} env steps)")
    scores = {k: np.asarray(v["scores"])[:, None] for k, v in out["procedures"].items()}
    key = jax.random.PRNGKey(0)
    agg = stats.aggregate_metrics(key, scores, metrics=("iqm",))
    for name, v in agg.items():
        iqm = v["iqm"]
        out["procedures"][name]["iqm"] = [float(iqm.point), float(iqm.low), float(iqm.high)]
        print(
            f"{name:>8}: IQM {float(iqm.point):.3f} [{float(iqm.low):.3f}, {float(iqm.high):.3f}]"
        )
    for name in ("pbt", "halving"):
        poi = stats.probability_of_improvement_ci(key, scores[name], scores["random"])
        out[f"p_improve_{name}_vs_random"] = [float(poi.point), float(poi.low), float(poi.high)]
        print(f"P({name} > random) = {float(poi.point):.2f} "
              f"[{float(poi.low):.2f}, {float(poi.high):.2f}]")  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return out


def _env_steps(result) -> int:
    """Env steps of every run of the procedure: each run's step counter at its last update
    (a run that halving stopped reports 0 afterwards)."""
    return int(np.asarray(result.metrics["env_steps"], np.int64).max(axis=-1).sum())


if __name__ == "__main__":
    main()
