"""HAPPO and MAT against MAPPO at equal env steps: MPE simple spread, LBF 8x8 and the climbing game.

HAPPO (J. G. Kuba et al., "Trust Region Policy Optimisation in Multi-Agent Reinforcement
Learning", ICLR 2022: one actor per agent, updated one after another in a random order, each
step weighted by the product of the earlier agents' probability ratios) and MAT (M. Wen et al.,
"Multi-Agent Reinforcement Learning is a Sequence Modeling Problem", NeurIPS 2022: an encoder
over the agents and a decoder acting agent by agent) against MAPPO (C. Yu et al., NeurIPS 2022;
global-state critic), each with its marljax defaults (HAPPO: 4 epochs per agent; MAT: the
authors' 15 epochs, 64-wide tokens), all seeds of an algorithm in one program, on:

- `spread`: `particle/simple_spread-v0` (3 agents, 25-step episodes), 16 envs x 25 steps;
- `lbf`: `grid/lbf-8x8-2p-2f-coop-v0` (Papoudakis et al. 2021's `Foraging-8x8-2p-2f-coop`),
  32 envs x 50 steps;
- `climbing`: `matrix/climbing-v0` (Claus & Boutilier 1998), one-shot, 64 envs per update: the
  optimum (11) sits next to the -30 penalties, so agents that improve at the same time against
  each other's old policies drift to a safe equilibrium (7 or 5), the miscoordination the
  sequential update is argued to avoid (Kuba et al. 2022, section 3).

Score: the team return (training episodes, summed over agents; the climbing game's payoff is
counted once per agent, so its optimum is 22), mean of the last 10 updates, per seed; the
generated tables give IQM and mean with 95% CIs and P(algorithm > MAPPO).

    python baselines/happo_mat_vs_mappo.py [--tasks spread lbf climbing] [--seeds 5]
        [--steps N] [--out runs] [--results baselines/results/happo_mat_vs_mappo.json]
"""

import argparse

import numpy as np

import marljax.envs.grid  # noqa: F401  (registers grid/*)
from marljax.shell.experiment import Experiment, build, run_experiment
from marljax.shell.result_files import iqm, write_results
from marljax.training.train import TrainConfig

ALGOS = ("mappo", "happo", "mat")
#: task -> (env id, num_envs, rollout_len, default env steps per seed)
TASKS = {
    "spread": ("particle/simple_spread-v0", 16, 25, 400_000),
    "lbf": ("grid/lbf-8x8-2p-2f-coop-v0", 32, 50, 400_000),
    "climbing": ("matrix/climbing-v0", 64, 1, 64 * 300),
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--algos", nargs="+", default=list(ALGOS), choices=list(ALGOS))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, help="env steps per seed (default: per task)")
    parser.add_argument("--out", default="runs")
    parser.add_argument("--results", help="write every task's per-seed scores here (JSON)")
    args = parser.parse_args(argv)
    rows, config = [], {"seeds": args.seeds, "algos": args.algos, "tasks": {}}
    for task in args.tasks:
        env, num_envs, rollout, default_steps = TASKS[task]
        steps = args.steps or default_steps
        config["tasks"][task] = {"env": env, "num_envs": num_envs, "rollout_len": rollout,
                                 "env_steps_per_seed": steps}  # fmt: skip
        for algo in args.algos:
            exp = Experiment(algo=algo, env=env, seeds=args.seeds, out_dir=args.out,
                             train=TrainConfig(num_envs=num_envs, rollout_len=rollout,
                                               total_env_steps=steps),
                             checkpoint=False)  # fmt: skip
            result = run_experiment(exp, progress=False)
            team = result.metrics["episode_return_per_agent"][0].sum(axis=-1)  # [S, U]
            final = np.nanmean(team[:, -10:], axis=-1)
            mode = getattr(build(exp).agent_config, "parameter_mode", "shared")  # MAT: one net
            print(f"{task} {algo} ({mode}): final team return per seed "
                  f"{np.round(final, 3).tolist()}, IQM {iqm(final):.3f}  ({result.run_dir})")  # fmt: skip
            rows.append({"task": task, "algo": algo, "parameter_mode": mode,
                         "per_seed": {"team_return": final}})  # fmt: skip
    if args.results:
        config["score"] = "team return (sum over agents), mean of the last 10 updates"
        write_results(args.results, "baselines/happo_mat_vs_mappo.py", config, rows)


if __name__ == "__main__":
    main()
