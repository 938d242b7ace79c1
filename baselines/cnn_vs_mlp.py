"""IPPO with the CNN torso vs the flattened MLP on grid observations, at equal env steps.

The default PPO networks follow the observation space: a grid observation
(`spaces.Box(..., layout=...)`) gets `marljax.nn.networks.GridEncoder` (a small CNN) before the MLP;
`PPOConfig(torso="mlp")` flattens it into the MLP instead. This runs both on Harvest (small map,
7x7 egocentric windows, `social/harvest_small-v0`, episodes of 100 steps so that several end
during a short run) and on Level-Based Foraging with grid
observations (`grid/lbf-v0`, 5x5 windows), all seeds of one (task, torso) pair in one program, and
reports the interquartile mean (IQM, `marljax.evaluation.stats.aggregate_iqm`) over seeds of the
mean episode return over the last quarter of training. Kept small by default (a few minutes on
a laptop CPU); raise `--updates` for a real comparison.

    python baselines/cnn_vs_mlp.py [--seeds 4] [--updates 60] [--envs 8] [--rollout 32]
        [--tasks harvest_small lbf_grid_5x5] [--results baselines/results/cnn_vs_mlp_harvest.json]
"""

import argparse
import time

import jax
import numpy as np

import marljax
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.evaluation.stats import (
    aggregate_iqm,
    interval_estimate,
    probability_of_improvement_ci,
)
from marljax.shell.result_files import write_results
from marljax.training.train import TrainConfig, make_train

TASKS = {
    "harvest_small": ("social/harvest_small-v0", {"max_steps": 100}),
    "lbf_grid_5x5": ("grid/lbf-v0", {"grid_observation": True, "sight": 2}),
}

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--seeds", type=int, default=4)
parser.add_argument("--updates", type=int, default=60)
parser.add_argument("--envs", type=int, default=8)
parser.add_argument("--rollout", type=int, default=32)
parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
parser.add_argument("--results", help="write every (task, torso)'s per-seed scores here (JSON)")
CONFIG = {"critic_input": "local", "parameter_mode": "shared_id"}


def final_returns(env_id: str, overrides: dict, torso: str, args) -> np.ndarray:
    """`[seeds]` mean episode return over the last quarter of the updates of each seed."""
    env, params = marljax.make(env_id, **overrides)
    config = PPOConfig(torso=torso, **CONFIG)
    agent = make_ppo(config, env, params)
    steps = args.envs * args.rollout * args.updates
    run = TrainConfig(num_envs=args.envs, rollout_len=args.rollout, total_env_steps=steps)
    trainer = make_train(run, env, agent, params)
    keys = jax.vmap(jax.random.PRNGKey)(np.arange(args.seeds))
    _, metrics = jax.jit(jax.vmap(trainer.train, in_axes=(0, None)))(keys, PPOHParams())
    returns = np.asarray(metrics["episode_return"])  # [seeds, updates]
    tail = returns[:, -max(1, returns.shape[1] // 4) :]
    with np.errstate(all="ignore"):  # NaN: no episode ended in an update
        return np.nanmean(tail, axis=1)


def main() -> None:
    args = parser.parse_args()
    print(f"{args.seeds} seeds, {args.envs * args.rollout * args.updates} env steps per run")
    key, rows = jax.random.PRNGKey(0), []
    for task in args.tasks:
        env_id, overrides = TASKS[task]
        scores = {}
        for torso in ("cnn", "mlp"):
            start = time.perf_counter()
            scores[torso] = final_returns(env_id, overrides, torso, args)[:, None]  # [seeds, 1]
            seconds = time.perf_counter() - start
            rows.append({"task": task, "env": env_id, "env_kwargs": overrides, "torso": torso,
                         "seconds_incl_compile": seconds,
                         "per_seed": {"final_return": scores[torso][:, 0]}})  # fmt: skip
            iqm = interval_estimate(key, aggregate_iqm, scores[torso])
            print(
                f"{task:14s} {torso:4s} IQM {float(iqm.point):8.3f} "
                f"[{float(iqm.low):.3f}, {float(iqm.high):.3f}] (95% bootstrap CI)  per seed "
                f"{np.round(scores[torso][:, 0], 3).tolist()}"
                f"  ({seconds:.0f} s incl. compile)"
            )
        p = probability_of_improvement_ci(key, scores["cnn"], scores["mlp"])
        print(
            f"{task:14s} P(CNN > MLP) {float(p.point):.2f} [{float(p.low):.2f}, {float(p.high):.2f}]"
        )
    if args.results:
        config = {"seeds": args.seeds, "updates": args.updates, "num_envs": args.envs,
                  "rollout_len": args.rollout, "algo": "ippo", "agent": CONFIG,
                  "score": "mean episode return (per agent) over the last quarter of updates"}  # fmt: skip
        write_results(args.results, "baselines/cnn_vs_mlp.py", config, rows)


if __name__ == "__main__":
    main()
