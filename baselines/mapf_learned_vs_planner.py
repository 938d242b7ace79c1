"""Lifelong MAPF: IPPO and MAPPO (small budget) against the planner-based heuristic agent.

Throughput = goals reached per step (all agents) on `grid/lmapf-v0` at 8x8, 4 agents, obstacle
density 0.3, 7x7 windows (obs_radius 3), episodes of 128 steps, a fresh map every episode. The
learned policies see only their local window; the heuristic (`planner_agent`: BFS shortest paths
with conflict avoidance) knows the whole map. Seed task: Skrynnik et al., "Learn to Follow", 2024.

    python baselines/mapf_learned_vs_planner.py [--steps 300000] [--seeds 2] [--out runs]
        [--results baselines/results/mapf_learned_vs_planner.json]  (per-seed throughput, JSON)
"""

import argparse

import jax
import numpy as np

import marljax
from marljax.envs.grid.pathfinding import evaluate_policy, planner_agent, random_agent
from marljax.shell.experiment import Experiment, run_experiment
from marljax.shell.result_files import write_results
from marljax.training.train import TrainConfig

ENV, ENV_KW = "grid/lmapf-v0", {"height": 8, "width": 8, "num_agents": 4, "obs_radius": 3}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300_000, help="env steps per training run")
    parser.add_argument("--seeds", type=int, default=2, help="number of seeds")
    parser.add_argument("--out", default="runs", help="parent folder of the run directories")
    parser.add_argument("--results", help="write every policy's throughput here (JSON)")
    args = parser.parse_args(argv)
    agent, train = {"hidden_sizes": (128, 128), "parameter_mode": "shared"}, (32, 32)
    rows = []
    env, params = marljax.make(ENV, **ENV_KW)
    horizon, num_agents = int(params.max_steps), env.num_agents
    for algo in ("ippo", "mappo"):
        exp = Experiment(
            algo=algo, env=ENV, env_kwargs=ENV_KW, seeds=args.seeds, out_dir=args.out,
            train=TrainConfig(num_envs=train[0], rollout_len=train[1], total_env_steps=args.steps),
            agent=agent, checkpoint=False,
        )  # fmt: skip
        result = run_experiment(exp)
        returns = result.metrics["episode_return"][0]  # [S, U] mean per-agent episode return
        first = np.nanmean(returns[:, :8], axis=1) * num_agents / horizon
        last = np.nanmean(returns[:, -8:], axis=1) * num_agents / horizon
        rows.append({"policy": algo, "parameter_mode": agent["parameter_mode"],
                     "per_seed": {"throughput_first8": first, "throughput_last8": last}})  # fmt: skip
        first, last = ([round(float(x), 3) for x in v] for v in (first, last))
        print(f"{algo}: throughput first 8 updates {first}, last 8 updates {last} (per seed); "
              f"run dir {result.run_dir}")  # fmt: skip
    for name, policy in (("planner heuristic", planner_agent()), ("uniform random", random_agent)):
        m = evaluate_policy(env, params, policy, jax.random.PRNGKey(1), 256, horizon)
        tp = np.asarray(m["throughput"])
        print(f"{name}: throughput {tp.mean():.3f} +- {tp.std() / np.sqrt(tp.size):.3f} (256 eps)")
        rows.append({"policy": name, "per_seed": {}, "per_episode": {"throughput": tp}})
    if args.results:
        config = {"env": ENV, "env_kwargs": ENV_KW, "seeds": args.seeds,
                  "total_env_steps": args.steps, "num_envs": train[0], "rollout_len": train[1],
                  "agent": agent, "heuristic_episodes": 256,
                  "score": "goals reached per step by all agents (training episodes for the "
                           "learners)"}  # fmt: skip
        write_results(args.results, "baselines/mapf_learned_vs_planner.py", config, rows)


if __name__ == "__main__":
    main()
