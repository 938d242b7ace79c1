"""MAPPO on MPE simple spread (3 agents, 3 landmarks): learning curve with IQM over seeds.

Cooperative navigation of R. Lowe et al., "Multi-Agent Actor-Critic for Mixed
Cooperative-Competitive Environments", NeurIPS 2017, with the semantics of JaxMARL's
`MPE_simple_spread_v3` (`particle/simple_spread-v0`: discrete actions, 25-step episodes), trained
with MAPPO (C. Yu et al., "The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games",
NeurIPS 2022 Datasets and Benchmarks: shared actor with agent ids, centralised critic on the
global state). All seeds train in one program. The mean per-agent return of the training
episodes is aggregated over seeds at every update as the interquartile mean with 95 %
stratified-bootstrap confidence intervals (R. Agarwal et al., "Deep Reinforcement Learning at the
Edge of the Statistical Precipice", NeurIPS 2021; `marljax.evaluation.stats`), printed at ten
points and plotted to `<out>/spread_mappo_curve.png`.

    python baselines/spread_mappo_curve.py [--seeds 4] [--steps 400000] [--out runs]
        [--results baselines/results/spread_mappo_curve.json]  (per-seed returns at the ten points)
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import numpy as np

import marljax.envs.particle  # noqa: F401  (registers particle/*)
from marljax.evaluation import plots, stats
from marljax.shell.experiment import Experiment, build, run_experiment
from marljax.shell.result_files import write_results
from marljax.training.train import TrainConfig


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4, help="number of seeds")
    parser.add_argument("--steps", type=int, default=400_000, help="env steps per seed")
    parser.add_argument("--out", default="runs", help="parent folder of the run directory")
    parser.add_argument("--results", help="write the per-seed returns at the ten points (JSON)")
    args = parser.parse_args(argv)
    exp = Experiment(
        algo="mappo",
        env="particle/simple_spread-v0",
        seeds=args.seeds,
        train=TrainConfig(num_envs=64, rollout_len=25, total_env_steps=args.steps),
        agent={"hidden_sizes": (64, 64), "num_epochs": 4, "num_minibatches": 4},
        hparams={"lr": 1e-3},
        out_dir=args.out,
        checkpoint=False,
    )
    t0 = time.time()
    result = run_experiment(exp, progress=False)
    print(f"trained {args.seeds} seeds in {time.time() - t0:.0f} s ({result.run_dir})")
    returns = result.metrics["episode_return"][0]  # [S, U]: every update ends 64 episodes
    steps = result.metrics["env_steps"][0, 0]
    curves = stats.sample_efficiency_curves(
        jax.random.PRNGKey(0), {"mappo": returns[:, None, :]}, statistic="iqm"
    )
    iv = curves["mappo"]
    U = returns.shape[1]
    print(f"IQM over {args.seeds} seeds of the mean per-agent return [95% CI]:")
    points = sorted({0, *np.linspace(0, U - 1, 10).astype(int).tolist()})
    for u in points:
        print(
            f"  {int(steps[u]):>9d} env steps: {float(iv.point[u]):8.2f} "
            f"[{float(iv.low[u]):.2f}, {float(iv.high[u]):.2f}]"
        )
    final = returns[:, -10:].mean(axis=1)
    print("final (mean of the last 10 updates) per seed: " + ", ".join(f"{r:.2f}" for r in final))
    path = os.path.join(args.out, "spread_mappo_curve.png")
    plots.plot_sample_efficiency(
        curves, steps, path, ylabel="IQM mean return per agent", title="MAPPO on simple spread"
    )
    print(f"learning curve: {path}")
    if args.results:
        per_seed = {f"return@{int(steps[u])}": returns[:, u] for u in points}
        row = {"algo": "mappo", "parameter_mode": build(exp).agent_config.parameter_mode,
               "points": [int(steps[u]) for u in points],
               "per_seed": {**per_seed, "final_last10": final}}  # fmt: skip
        config = {**exp.to_dict(), "score": "mean per-agent return of the training episodes"}
        write_results(args.results, "baselines/spread_mappo_curve.py", config, [row])


if __name__ == "__main__":
    main()
