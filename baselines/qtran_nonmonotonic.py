"""QTRAN recovers the optimum 8 of the non-monotonic matrix game where QMIX and VDN do not.

Game `matrix/nonmonotonic-v0`, common payoff [[8, -12, -12], [-12, 0, 0], [-12, 0, 0]] (K. Son et
al., "QTRAN: Learning to Factorize with Transformation for Cooperative Multi-Agent Reinforcement
Learning", ICML 2019, section 4.1 and table 1: QTRAN's greedy joint action is the optimum (0, 0)
worth 8; VDN's and QMIX's additive / monotonic factorizations end in the zero block).

The three learners share everything but what defines them: feed-forward agents (hidden 32,
shared parameters with agent ids), 1-step double-Q targets, batch 32, buffer 500, target copy
every 50 gradient steps, Adam lr 5e-3, gamma 1, uniformly random data (epsilon = 1 throughout, as
in the paper's illustration); QTRAN's joint networks are 32x32. Each algorithm's seeds train in
one compiled program. The script prints seed 0's learned utilities and, per algorithm, how many
seeds' greedy joint action (each agent's argmax) is the optimum.

    python baselines/qtran_nonmonotonic.py [--seeds 16] [--updates 300] [--out runs]
        [--results baselines/results/qtran_nonmonotonic.json]
"""

import argparse
import collections

import jax
import numpy as np

from marljax.agents.qlearning import first_step_q_table, format_q_table
from marljax.shell.experiment import Experiment, build, run_experiment
from marljax.shell.result_files import write_results
from marljax.training.train import TrainConfig

ENV = "matrix/nonmonotonic-v0"
AGENT = {
    "recurrent": False,
    "hidden_sizes": (32,),
    "batch_size": 32,
    "buffer_size": 500,
    "sequence_len": 1,
    "target": "one_step",
    "target_update_interval": 50,
    "optimizer": "adam",
}
HPARAMS = {"lr": 5e-3, "gamma": 1.0, "eps_start": 1.0, "eps_finish": 1.0}


def run(algo: str, seeds: int, updates: int, out: str) -> dict:
    """Train `seeds` seeds of `algo` in one program; count their greedy joint actions. Returns
    the result row: per seed, the greedy joint action and its payoff."""
    agent = {**AGENT, "joint_hidden": (32, 32)} if algo == "qtran" else AGENT
    exp = Experiment(
        algo=algo,
        env=ENV,
        seeds=seeds,
        train=TrainConfig(num_envs=8, rollout_len=1, total_env_steps=8 * updates),
        agent=agent,
        hparams=HPARAMS,
        out_dir=out,
        checkpoint=False,
    )
    result = run_experiment(exp, progress=False)
    built = build(exp)
    payoff = np.asarray(built.env_params.payoffs[0])
    outcomes = collections.Counter()
    per_seed: dict[str, list] = {"action_0": [], "action_1": [], "payoff": []}
    for s in range(seeds):
        state = jax.tree.map(lambda x, s=s: x[0, s], result.state.agent_state)
        table = first_step_q_table(built.agent_config, built.env, state, built.env_params)
        greedy = tuple(int(a) for a in np.argmax(table["q"], axis=1))  # what the agents play
        if s == 0:
            print(f"\n=== {algo}, seed 0 ({result.run_dir})\n{format_q_table(table)}")
            seed0 = {"q_row_0": np.asarray(table["q"])[0].tolist()}
        outcomes[f"{greedy} worth {payoff[greedy]:g}"] += 1
        for i, a in enumerate(greedy):
            per_seed[f"action_{i}"].append(a)
        per_seed["payoff"].append(float(payoff[greedy]))
    optimum = sum(n for k, n in outcomes.items() if k.startswith("(0, 0)"))
    print(f"{algo}: {optimum}/{seeds} seeds play the optimum (0, 0); all: {dict(outcomes)}")
    mode = built.agent_config.parameter_mode
    return {"algo": algo, "parameter_mode": mode, "seed_0": seed0, "per_seed": per_seed}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=16, help="seeds per algorithm")
    parser.add_argument("--updates", type=int, default=300, help="updates (8 env steps each)")
    parser.add_argument("--out", default="runs", help="parent folder of the run directories")
    parser.add_argument("--results", default=None, help="write the per-seed outcomes here (JSON)")
    args = parser.parse_args(argv)
    rows = [run(algo, args.seeds, args.updates, args.out) for algo in ("qtran", "qmix", "vdn")]
    if args.results:
        config = {"env": ENV, "agent": AGENT, "qtran_joint_hidden": [32, 32], "hparams": HPARAMS,
                  "seeds": args.seeds, "updates": args.updates, "num_envs": 8,
                  "env_steps_per_seed": 8 * args.updates}  # fmt: skip
        write_results(args.results, "baselines/qtran_nonmonotonic.py", config, rows, argv)


if __name__ == "__main__":
    main()
