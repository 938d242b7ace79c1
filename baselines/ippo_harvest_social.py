"""IPPO on Harvest (small map), all seeds in one program, with the social metrics of the commons.

Social metrics of Perolat et al., "A multi-agent reinforcement learning model of common-pool
resource appropriation", NeurIPS 2017 (efficiency, equality, sustainability, peace), measured with
`marljax.evaluation.social.evaluate_social` for the untrained and the trained policy of every seed
and plotted to `<run dir>/social_metrics.png`.

`--punishment off` trains the same learners in the same game with the tagging beam disabled
(no cost, no penalty, no reach: the zap action does nothing), the no-mechanism control of the
gridworld punishment check (Dasgupta & Musolesi, "Investigating the Impact of Direct Punishment
on the Emergence of Cooperation in Multi-Agent Reinforcement Learning Systems", 2025).
`--punishment on off` runs both and prints each metric's bootstrap 95% CI and P(on > off) over
seeds. `--algo iql` trains feed-forward DQNs instead (the punishment paper's learner;
epsilon-greedy, evaluated greedily), with the settings of `social_mechanisms.py --algo iql`.
Both learners share one network with an agent id by default (`shared_id`);
`--parameter-mode independent` gives every agent its own network.

    python baselines/ippo_harvest_social.py [--algo ippo|iql] [--seeds 4] [--updates 1200]
        [--punishment on off] [--parameter-mode MODE] [--out runs]
        [--results baselines/results/harvest_social_<algo>.json]

`--results` writes every condition's per-seed social metrics (trained and untrained policies)
and training return, for the generated tables.
"""

import argparse
import os

import jax
import matplotlib.pyplot as plt
import numpy as np

import marljax.envs.social.dilemma_grid  # noqa: F401  (registers social/harvest_small-v0)
from marljax.evaluation.social import bootstrap_ci, evaluate_social
from marljax.evaluation.stats import probability_of_improvement_ci
from marljax.shell.experiment import Experiment, build, run_experiment
from marljax.shell.result_files import write_results
from marljax.training.train import TrainConfig

METRICS = ("efficiency", "equality", "sustainability", "peace")
NO_PUNISHMENT = {"zap_cost": 0.0, "hit_penalty": 0.0, "beam_length": 0}
#: per learner: (static agent settings, traced hparams); IQL as in social_mechanisms.py
SETTINGS = {
    "ippo": ({}, {}),
    "iql": (
        {"mixer": "none", "recurrent": False, "hidden_sizes": (64,), "sequence_len": 10,
         "batch_size": 64, "buffer_size": 5000, "target": "one_step", "target_update_interval": 100},
        {"lr": 1e-3, "eps_anneal_steps": 100_000.0, "eps_finish": 0.05},
    ),
}  # fmt: skip

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--algo", default="ippo", choices=sorted(SETTINGS), help="learner")
parser.add_argument("--seeds", type=int, default=4)
parser.add_argument("--updates", type=int, default=1200, help="updates of 16 envs x 50 steps")
parser.add_argument("--punishment", nargs="+", default=["on"], choices=["on", "off"])
parser.add_argument("--out", default="runs")
parser.add_argument("--parameter-mode", default="shared_id",
                    choices=["shared", "shared_id", "independent"], help="parameter sharing")  # fmt: skip
parser.add_argument("--results", help="write every condition's per-seed metrics (JSON)")
args = parser.parse_args()
ROWS = []


def run(condition: str) -> dict[str, np.ndarray]:
    """Train and evaluate every seed of one condition; the trained policies' metrics `[S]`."""
    agent, hparams = SETTINGS[args.algo]
    agent = {**agent, "parameter_mode": args.parameter_mode}
    exp = Experiment(algo=args.algo, env="social/harvest_small-v0", seeds=args.seeds, out_dir=args.out,
                     env_kwargs={} if condition == "on" else NO_PUNISHMENT, agent=agent, hparams=hparams,
                     train=TrainConfig(num_envs=16, rollout_len=50, total_env_steps=16 * 50 * args.updates))  # fmt: skip
    built = build(exp)
    result = run_experiment(built)
    keys = jax.vmap(jax.random.PRNGKey)(np.arange(exp.seed, exp.seed + exp.seeds))
    first_grid_point = lambda tree: jax.tree.map(lambda x: x[0], tree)  # noqa: E731
    init = jax.vmap(built.trainer.init, in_axes=(0, None, None))
    untrained = init(keys, first_grid_point(built.hparams), built.env_params).agent_state
    states = {"untrained": jax.tree.map(lambda x: x[None], untrained),  # [1 setting, seeds, ...]
              "trained": result.state.agent_state}  # fmt: skip
    evaluate = jax.jit(jax.vmap(lambda s, k: evaluate_social(
        built.env, built.env_params, built.agent, s, first_grid_point(built.hparams), k, 8, 400,
        greedy=args.algo == "iql")))  # fmt: skip
    table = {name: evaluate(first_grid_point(s), keys) for name, s in states.items()}
    print(f"--- {args.algo} ({args.parameter_mode}), punishment {condition} ---")
    fig, axes = plt.subplots(1, len(METRICS), figsize=(4 * len(METRICS), 3.2))
    for ax, m in zip(axes, METRICS):
        for x, (name, out) in enumerate(table.items()):
            v = np.asarray(out[f"social/{m}"])
            ax.scatter(np.full(v.shape, x), v)
            print(
                f"{name:9s} {m:14s} mean {np.nanmean(v):8.3f}  per seed {np.round(v, 3).tolist()}"
            )
        ax.set(title=m, xticks=range(len(table)), xticklabels=list(table))
    fig.tight_layout()
    fig.savefig(os.path.join(result.run_dir, "social_metrics.png"))
    final = np.nanmean(result.metrics["episode_return"][0, :, -20:], axis=-1)
    print(f"training return, mean of the last 20 updates, per seed: {np.round(final, 2).tolist()}")
    print(f"run directory: {result.run_dir}")
    for name, out in table.items():
        per_seed = {m: np.asarray(out[f"social/{m}"]) for m in METRICS}
        if name == "trained":
            per_seed["train_return_last20"] = final
        ROWS.append({"algo": args.algo, "parameter_mode": args.parameter_mode,
                     "punishment": condition, "policy": name, "per_seed": per_seed})  # fmt: skip
    return {m: np.asarray(table["trained"][f"social/{m}"]) for m in METRICS}


trained = {condition: run(condition) for condition in args.punishment}
if len(trained) == 2:
    key = jax.random.PRNGKey(0)
    print(f"\ntrained policies, {args.seeds} seeds each: mean [95% bootstrap CI], P(on > off) [CI]")
    for m in METRICS:
        on, off = (v[np.isfinite(v)] for v in (trained["on"][m], trained["off"][m]))
        ci = {c: np.asarray(bootstrap_ci(key, v)) for c, v in (("on", on), ("off", off))}
        p = probability_of_improvement_ci(key, on[:, None], off[:, None])
        print(f"  {m:14s} on {ci['on'][0]:7.3f} [{ci['on'][1]:.3f}, {ci['on'][2]:.3f}]"
              f"  off {ci['off'][0]:7.3f} [{ci['off'][1]:.3f}, {ci['off'][2]:.3f}]"
              f"  P(on > off) {float(p.point):.2f} [{float(p.low):.2f}, {float(p.high):.2f}]")  # fmt: skip
if args.results:
    config = {"algo": args.algo, "env": "social/harvest_small-v0", "seeds": args.seeds,
              "updates": args.updates, "env_steps_per_seed": 16 * 50 * args.updates,
              "parameter_mode": args.parameter_mode, "settings": SETTINGS[args.algo],
              "no_punishment": NO_PUNISHMENT, "evaluation": "8 envs x 400 steps"
              + (", greedy" if args.algo == "iql" else ", sampled")}  # fmt: skip
    write_results(args.results, "baselines/ippo_harvest_social.py", config, ROWS)
