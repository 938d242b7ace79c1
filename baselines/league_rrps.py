"""Naive self-play against leagues (PFSP, PSRO) on repeated rock-paper-scissors: exploitability.

Repeated RPS (`matrix/rrps-v0`, `--rounds` rounds, default 10, each player sees the last joint move; `--rounds 1` is one-shot RPS) is a
non-transitive Markov game whose only equilibrium plays uniformly at random. One recurrent IPPO
learner (shared across envs, GRU 64) trains per rule and seed with `marljax train --league RULE`
(`marljax.population.league`); a snapshot every `--interval` updates gives the generations.
After training, every pair of snapshots plays (`league_crossplay`), and for each generation `g`
a fresh learner is trained as a best response against (a) generation `g`'s newest snapshot,
what naive self-play outputs, and (b) the Nash mixture over the snapshots up to `g`, what PSRO
outputs (`generation_targets`, `exploitability_curve`). Approximate exploitability is the best
response's win rate minus 1/2 over its last tenth of training (0: unexploitable).

The claim (Lanctot et al. 2017; Vinyals et al. 2019): naive self-play cycles, so its policy
stays exploitable from generation to generation, while a league (PFSP, PSRO) lowers the
exploitability of its meta-strategy across generations.

    python baselines/league_rrps.py [--rules self,pfsp,psro] [--seeds 5] [--rounds 10] [--updates 300]
        [--interval 30] [--br-updates 100] [--results baselines/results/league_rrps.json]
"""

import argparse

import jax
import jax.numpy as jnp
import numpy as np

from marljax.agents import algo_spec
from marljax.population.league import TeamView, league_teams
from marljax.population.league_eval import (
    exploitability_curve,
    generation_targets,
    league_crossplay,
)
from marljax.shell.experiment import Experiment, build, run_experiment
from marljax.shell.result_files import iqm, mean_ci, write_results
from marljax.training.train import TrainConfig

ENV, NUM_ENVS = "matrix/rrps-v0", 16
AGENT = {"gru_size": 64, "hidden_sizes": (64,)}


def run_rule(rule: str, args) -> dict:
    """Train `args.seeds` leagues of `rule`, then measure every generation's exploitability."""
    capacity, rounds = args.updates // args.interval + 1, args.rounds
    exp = Experiment(
        algo="ippo", env=ENV, env_kwargs={"num_rounds": rounds}, seeds=args.seeds,
        train=TrainConfig(num_envs=NUM_ENVS, rollout_len=rounds,
                          total_env_steps=NUM_ENVS * rounds * args.updates),
        agent=AGENT, league={"rule": rule, "capacity": capacity,
                             "snapshot_interval": args.interval},
        out_dir=args.out, name=f"league_rrps{rounds}_{rule}", checkpoint=False,
    )  # fmt: skip
    result = run_experiment(exp, progress=False)
    built = build(exp)
    env, params = built.env, built.env_params
    teams = league_teams(env)
    fresh = algo_spec("ippo").factory(built.agent_config, TeamView(env, teams[0]), params)
    br_train = TrainConfig(num_envs=NUM_ENVS, rollout_len=rounds,
                           total_env_steps=NUM_ENVS * rounds * args.br_updates)  # fmt: skip
    states = jax.tree.map(lambda x: x[0], result.state.agent_state)  # [S, ...] (one setting)
    table = league_crossplay(fresh, states, env, params, jax.random.PRNGKey(1000), teams,
                             num_envs=64, num_steps=rounds)["win_rate"]  # fmt: skip
    targets = jax.vmap(generation_targets)(table, states.age)
    weights = jnp.concatenate([targets["latest"], targets["nash"]], axis=1)  # [S, 2K, K]
    exploit = exploitability_curve(fresh, env, params, states.pool, weights, br_train,
                                   jax.random.PRNGKey(2000))[:, 0]  # fmt: skip
    per_seed = {"latest": exploit[:, :capacity], "nash": exploit[:, capacity:], "cycle": []}
    for s in range(args.seeds):
        # cycling: how often a newer snapshot loses to an older one (0 for a transitive chain)
        order = np.argsort(np.asarray(states.age[s]))
        w = np.asarray(table[s])[np.ix_(order, order)]
        later = np.triu(np.ones_like(w, bool), 1)  # [i, j]: j newer than i
        per_seed["cycle"].append(float(np.mean((w.T < 0.5)[later])))
    return {k: np.asarray(v) for k, v in per_seed.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", default="self,pfsp,psro")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=10, help="rounds per episode (1: one-shot)")
    parser.add_argument("--updates", type=int, default=300)
    parser.add_argument("--interval", type=int, default=30)
    parser.add_argument("--br-updates", type=int, default=100)
    parser.add_argument("--out", default="runs")
    parser.add_argument("--results", default=None, help="write the per-seed outcomes here (JSON)")
    args = parser.parse_args(argv)
    rows = []
    for rule in args.rules.split(","):
        out = run_rule(rule, args)
        per_seed = {"cycling": out["cycle"]}
        for kind in ("latest", "nash"):
            for g in range(out[kind].shape[1]):
                per_seed[f"exploitability_{kind}/{g}"] = out[kind][:, g]
        rows.append({"rule": rule, "per_seed": per_seed})
        for kind in ("latest", "nash"):
            first, last = out[kind][:, 1], out[kind][:, -1]
            print(f"{rule:>6} {kind:>6}: exploitability gen 1 IQM {iqm(first):.3f} "
                  f"{mean_ci(first)[1:]} -> gen {out[kind].shape[1] - 1} IQM {iqm(last):.3f} "
                  f"{mean_ci(last)[1:]}; newer-loses-to-older share {out['cycle'].mean():.2f}")  # fmt: skip
    if args.results:
        config = {"env": ENV, "num_rounds": args.rounds, "algo": "ippo", "agent": AGENT,
                  "num_envs": NUM_ENVS, "updates": args.updates, "interval": args.interval,
                  "br_updates": args.br_updates, "seeds": args.seeds,
                  "parameter_mode": "shared_id"}  # fmt: skip
        write_results(args.results, "baselines/league_rrps.py", config, rows, argv)


if __name__ == "__main__":
    main()
