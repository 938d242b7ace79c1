"""MAPPO on the penalty game (k = 0): both agents learn to coordinate on an optimal joint action.

Reproduces the penalty game of C. Claus and C. Boutilier, "The dynamics of reinforcement learning
in cooperative multiagent systems", AAAI 1998 (common payoff; optimum 10 at two joint actions).

    python baselines/mappo_penalty_game.py [--seeds 4] [--out runs]
"""

import argparse

from marljax.experiment import Experiment, run_experiment
from marljax.train import TrainConfig

OPTIMUM = 10.0
TOLERANCE = 0.5  # a return within this of the optimum counts as reached (policies stay stochastic)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4, help="number of seeds")
    parser.add_argument("--out", default="runs", help="parent folder of the run directory")
    args = parser.parse_args(argv)
    exp = Experiment(
        algo="mappo",
        env="matrix/penalty_k0-v0",
        seeds=args.seeds,
        train=TrainConfig(num_envs=16, rollout_len=4, total_env_steps=16 * 4 * 60),
        agent={"hidden_sizes": (32,), "num_minibatches": 2},
        hparams={"lr": 3e-3},
        out_dir=args.out,
    )
    result = run_experiment(exp)
    for s, ret in enumerate(result.metrics["episode_return"][0, :, -1]):
        verdict = "reached" if ret >= OPTIMUM - TOLERANCE else "NOT reached"
        print(f"seed {exp.seed + s}: final return {ret:.2f}, optimum {OPTIMUM:g} {verdict}")
    print(f"run directory: {result.run_dir}")


if __name__ == "__main__":
    main()
