"""IPPO on Harvest (small map), all seeds in one program, with the social metrics of the commons.

Social metrics of Perolat et al., "A multi-agent reinforcement learning model of common-pool
resource appropriation", NeurIPS 2017 (efficiency, equality, sustainability, peace), measured with
`marljax.evaluation.social.evaluate_social` for the untrained and the trained policy of every seed
and plotted to `<run dir>/social_metrics.png`.

    python baselines/ippo_harvest_social.py [--seeds 4] [--out runs]
"""

import argparse
import os

import jax
import matplotlib.pyplot as plt
import numpy as np

import marljax.envs.social.dilemma_grid  # noqa: F401  (registers social/harvest_small-v0)
from marljax.evaluation.social import evaluate_social
from marljax.experiment import Experiment, build, run_experiment
from marljax.train import TrainConfig

METRICS = ("efficiency", "equality", "sustainability", "peace")

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--seeds", type=int, default=4)
parser.add_argument("--out", default="runs")
args = parser.parse_args()
exp = Experiment(algo="ippo", env="social/harvest_small-v0", seeds=args.seeds, out_dir=args.out,
                 train=TrainConfig(num_envs=16, rollout_len=50, total_env_steps=16 * 50 * 1200))  # fmt: skip
built = build(exp)
result = run_experiment(built)
keys = jax.vmap(jax.random.PRNGKey)(np.arange(exp.seed, exp.seed + exp.seeds))
first_grid_point = lambda tree: jax.tree.map(lambda x: x[0], tree)  # noqa: E731
init = jax.vmap(built.trainer.init, in_axes=(0, None, None))
untrained = init(keys, first_grid_point(built.hparams), built.env_params).agent_state
states = {"untrained": jax.tree.map(lambda x: x[None], untrained),  # [1 setting, seeds, ...]
          "trained": result.state.agent_state}  # fmt: skip
evaluate = jax.jit(jax.vmap(lambda s, k: evaluate_social(
    built.env, built.env_params, built.agent, s, first_grid_point(built.hparams), k, 8, 400)))  # fmt: skip
table = {name: evaluate(first_grid_point(s), keys) for name, s in states.items()}
fig, axes = plt.subplots(1, len(METRICS), figsize=(4 * len(METRICS), 3.2))
for ax, m in zip(axes, METRICS):
    for x, (name, out) in enumerate(table.items()):
        v = np.asarray(out[f"social/{m}"])
        ax.scatter(np.full(v.shape, x), v)
        print(f"{name:9s} {m:14s} mean {np.nanmean(v):8.3f}  per seed {np.round(v, 3).tolist()}")
    ax.set(title=m, xticks=range(len(table)), xticklabels=list(table))
fig.tight_layout()
fig.savefig(os.path.join(result.run_dir, "social_metrics.png"))
final = np.nanmean(result.metrics["episode_return"][0, :, -20:], axis=-1)
print(f"training return, mean of the last 20 updates, per seed: {np.round(final, 2).tolist()}")
print(f"run directory: {result.run_dir}")
