"""MAPPO and IPPO on Level-Based Foraging 8x8, 2 agents, 2 food, force_coop: curves and IQM.

The LBF task `Foraging-8x8-2p-2f-coop` of Papoudakis et al., "Benchmarking Multi-Agent Deep
Reinforcement Learning Algorithms in Cooperative Tasks", NeurIPS Datasets and Benchmarks 2021
(`grid/lbf-8x8-2p-2f-coop-v0`: full sight, 50 steps; the team return, summed over agents, is 1
when all food is collected). Both algorithms train all seeds in one program each; the team return
is reported per seed and as the interquartile mean (IQM, Agarwal et al. 2021) over seeds, of the
mean of the last 10 updates, with the first env step at which the IQM curve (as in
`lbf_qmix_iql.py`) reaches 0.5 and 0.9; both IQM learning curves go to
`<out>/lbf_mappo_ippo.png`.

    python baselines/lbf_mappo_ippo.py [--seeds 4] [--steps 2000000] [--out runs]
        [--results baselines/results/lbf_mappo_ippo.json]  (per-seed returns, JSON)
"""

import argparse
import os

import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import trim_mean

import marljax.envs.grid  # noqa: F401  (registers grid/*)
from marljax.shell.experiment import Experiment, build, run_experiment
from marljax.shell.result_files import iqm, write_results
from marljax.training.train import TrainConfig

ENV = "grid/lbf-8x8-2p-2f-coop-v0"
TRAIN = {"num_envs": 32, "rollout_len": 50}
AGENT, HPARAMS = {"hidden_sizes": (64, 64)}, {"lr": 1e-3}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=2_000_000, help="env steps per run")
    parser.add_argument("--out", default="runs")
    parser.add_argument("--results", help="write both algorithms' per-seed returns here (JSON)")
    args = parser.parse_args(argv)
    fig, ax = plt.subplots(figsize=(6, 4))
    rows = []
    for algo in ("mappo", "ippo"):
        exp = Experiment(algo=algo, env=ENV, seeds=args.seeds, out_dir=args.out,
                         train=TrainConfig(total_env_steps=args.steps, **TRAIN), agent=AGENT,
                         hparams=HPARAMS, checkpoint=False)  # fmt: skip
        result = run_experiment(exp, progress=False)
        team = result.metrics["episode_return_per_agent"][0].sum(axis=-1)  # [S, U]
        length = result.metrics["episode_length"][0]  # [S, U]
        final = np.nanmean(team[:, -10:], axis=-1)
        curve = trim_mean(np.nan_to_num(team), 0.25, axis=0)
        steps = result.metrics["env_steps"][0, 0]
        first = [
            int(steps[np.argmax(curve >= x)]) if (curve >= x).any() else None for x in (0.5, 0.9)
        ]
        ax.plot(steps, curve, label=f"{algo} (IQM of {args.seeds} seeds)")
        print(f"{algo}: final team return per seed {np.round(final, 3).tolist()}, "
              f"IQM {iqm(final):.3f}  ({result.run_dir})")  # fmt: skip
        mode = build(exp).agent_config.parameter_mode
        rows.append({"algo": algo, "parameter_mode": mode, "first_step_iqm_0.5": first[0],
                     "first_step_iqm_0.9": first[1],
                     "per_seed": {"final_team_return": final,
                                  "episode_length": np.nanmean(length[:, -10:], axis=-1)}})  # fmt: skip
    ax.set(xlabel="env steps", ylabel="team return (1 = all food)", title="LBF 8x8-2p-2f-coop")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "lbf_mappo_ippo.png"))
    print(f"learning curves: {os.path.join(args.out, 'lbf_mappo_ippo.png')}")
    if args.results:
        config = {"env": ENV, "seeds": args.seeds, "total_env_steps": args.steps, **TRAIN,
                  "agent": AGENT, "hparams": HPARAMS,
                  "score": "team return, mean of the last 10 updates (training episodes)"}  # fmt: skip
        write_results(args.results, "baselines/lbf_mappo_ippo.py", config, rows)


if __name__ == "__main__":
    main()
