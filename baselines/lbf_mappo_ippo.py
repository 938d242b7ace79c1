"""MAPPO and IPPO on Level-Based Foraging 8x8, 2 agents, 2 food, force_coop: curves and IQM.

The LBF task `Foraging-8x8-2p-2f-coop` of Papoudakis et al., "Benchmarking Multi-Agent Deep
Reinforcement Learning Algorithms in Cooperative Tasks", NeurIPS Datasets and Benchmarks 2021
(`grid/lbf-8x8-2p-2f-coop-v0`: full sight, 50 steps; the team return, summed over agents, is 1
when all food is collected). Both algorithms train all seeds in one program each; the team return
is reported per seed and as the interquartile mean (IQM, `scipy.stats.trim_mean(x, 0.25)`, the
definition of Agarwal et al. 2021; `marljax.evaluation` has no IQM yet) over seeds, of the mean
of the last 10 updates, and both IQM learning curves go to `<out>/lbf_mappo_ippo.png`.

    python baselines/lbf_mappo_ippo.py [--seeds 4] [--steps 2000000] [--out runs]
"""

import argparse
import os

import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import trim_mean

import marljax.envs.grid  # noqa: F401  (registers grid/*)
from marljax.shell.experiment import Experiment, run_experiment
from marljax.training.train import TrainConfig

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--seeds", type=int, default=4)
parser.add_argument("--steps", type=int, default=2_000_000, help="env steps per run")
parser.add_argument("--out", default="runs")
args = parser.parse_args()
fig, ax = plt.subplots(figsize=(6, 4))
for algo in ("mappo", "ippo"):
    exp = Experiment(algo=algo, env="grid/lbf-8x8-2p-2f-coop-v0", seeds=args.seeds, out_dir=args.out,
                     train=TrainConfig(num_envs=32, rollout_len=50, total_env_steps=args.steps),
                     agent={"hidden_sizes": (64, 64)}, hparams={"lr": 1e-3}, checkpoint=False)  # fmt: skip
    result = run_experiment(exp, progress=False)
    team = result.metrics["episode_return_per_agent"][0].sum(axis=-1)  # [S, U]
    final = np.nanmean(team[:, -10:], axis=-1)
    iqm = trim_mean(team, 0.25, axis=0)
    ax.plot(result.metrics["env_steps"][0, 0], iqm, label=f"{algo} (IQM of {args.seeds} seeds)")
    print(f"{algo}: final team return per seed {np.round(final, 3).tolist()}, "
          f"IQM {trim_mean(final, 0.25):.3f}  ({result.run_dir})")  # fmt: skip
ax.set(xlabel="env steps", ylabel="team return (1 = all food)", title="LBF 8x8-2p-2f-coop")
ax.legend()
fig.tight_layout()
fig.savefig(os.path.join(args.out, "lbf_mappo_ippo.png"))
print(f"learning curves: {os.path.join(args.out, 'lbf_mappo_ippo.png')}")
