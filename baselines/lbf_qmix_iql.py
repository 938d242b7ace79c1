"""QMIX vs VDN vs IQL on Level-Based Foraging 8x8, 2 agents, 2 food, force_coop: team return.

The LBF task `Foraging-8x8-2p-2f-coop` of Papoudakis et al., "Benchmarking Multi-Agent Deep
Reinforcement Learning Algorithms in Cooperative Tasks", NeurIPS Datasets and Benchmarks 2021
(`grid/lbf-8x8-2p-2f-coop-v0`: every food item needs both agents loading together; the team
return, summed over agents, is 1 when all food is collected in the 50 steps). Each algorithm is
the same value-based learner with a different mixer (feed-forward agents with shared parameters
and agent ids, 1-step double-Q targets, the training settings below), all seeds in one program.
Reported: the team return of the last 10 updates per seed (training episodes, epsilon-greedy), its
interquartile mean over seeds (IQM, `scipy.stats.trim_mean(x, 0.25)`, Agarwal et al. 2021) and
the first env step at which the IQM learning curve (per update) reaches 0.5 and 0.9.

    python baselines/lbf_qmix_iql.py [--seeds 4] [--steps 400000] [--out runs]
        [--algos shaq vdn qmix iql] [--results baselines/results/lbf_qmix_iql.json]

`--results` writes every algorithm's per-seed final team return and its IQM curve's first env
step at 0.5 and 0.9, for the generated tables.
"""

import argparse

import numpy as np
from scipy.stats import trim_mean

from marljax.shell.experiment import Experiment, build, run_experiment
from marljax.shell.result_files import write_results
from marljax.training.train import TrainConfig

AGENT = {"recurrent": False, "hidden_sizes": (64, 64), "sequence_len": 10, "batch_size": 64,
         "buffer_size": 5000, "target": "one_step", "target_update_interval": 200,
         "gradient_steps": 2}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=400_000, help="env steps per run")
    parser.add_argument("--out", default="runs")
    parser.add_argument("--algos", nargs="+", default=["qmix", "vdn", "iql"], help="which to run")
    parser.add_argument("--results", help="write every algorithm's per-seed results (JSON)")
    args = parser.parse_args(argv)
    hparams = {"lr": 5e-4, "eps_anneal_steps": 0.3 * args.steps, "gamma": 0.99}
    rows = []
    for algo in args.algos:
        exp = Experiment(algo=algo, env="grid/lbf-8x8-2p-2f-coop-v0", seeds=args.seeds,
                         train=TrainConfig(num_envs=16, rollout_len=10, total_env_steps=args.steps),
                         agent=AGENT, hparams=hparams, out_dir=args.out, checkpoint=False)  # fmt: skip
        result = run_experiment(exp, progress=False)
        team = result.metrics["episode_return_per_agent"][0].sum(axis=-1)  # [S, U]
        final = np.nanmean(team[:, -10:], axis=-1)
        curve = trim_mean(np.nan_to_num(team), 0.25, axis=0)
        steps = result.metrics["env_steps"][0, 0]
        first = [
            int(steps[np.argmax(curve >= x)]) if (curve >= x).any() else None for x in (0.5, 0.9)
        ]
        print(f"{algo:>4}: final team return per seed {np.round(final, 3).tolist()}, "
              f"IQM {trim_mean(final, 0.25):.3f}, first step with IQM >= 0.5 / 0.9: {first}"
              f"  ({result.run_dir})")  # fmt: skip
        mode = build(exp).agent_config.parameter_mode
        rows.append({"algo": algo, "parameter_mode": mode, "first_step_iqm_0.5": first[0],
                     "first_step_iqm_0.9": first[1], "per_seed": {"final_team_return": final}})  # fmt: skip
    if args.results:
        config = {"env": "grid/lbf-8x8-2p-2f-coop-v0", "seeds": args.seeds,
                  "env_steps_per_seed": args.steps, "num_envs": 16, "rollout_len": 10,
                  "agent": AGENT, "hparams": hparams,
                  "score": "team return (sum over agents) of the last 10 updates' training "
                           "episodes"}  # fmt: skip
        write_results(args.results, "baselines/lbf_qmix_iql.py", config, rows)


if __name__ == "__main__":
    main()
