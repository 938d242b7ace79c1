"""IPPO against tit-for-tat in the 10-round iterated Prisoner's Dilemma: the learner cooperates.

Against tit-for-tat the best response is to cooperate every round (return 3 * 10 = 30); always
defecting earns 5 + 1 * 9 = 14. R. Axelrod and W. D. Hamilton, "The evolution of cooperation",
Science 211, 1981 (payoffs R=3, S=0, T=5, P=1).

    python baselines/ippo_ipd_tit_for_tat.py [--seeds 4] [--out runs]
"""

import argparse

from marljax.experiment import Experiment, run_experiment
from marljax.train import TrainConfig

COOPERATE, DEFECT = 30.0, 14.0  # returns of always-cooperate / always-defect against TFT
TOLERANCE = 1.0  # a return within this of 30 counts as cooperation (policies stay stochastic)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4, help="number of seeds")
    parser.add_argument("--out", default="runs", help="parent folder of the run directory")
    args = parser.parse_args(argv)
    exp = Experiment(
        algo="ippo",
        env="matrix/ipd_tft-v0",
        env_kwargs={"num_rounds": 10},
        seeds=args.seeds,
        train=TrainConfig(num_envs=16, rollout_len=10, total_env_steps=16 * 10 * 60),
        agent={"hidden_sizes": (32,), "num_minibatches": 2},
        hparams={"lr": 3e-3},
        out_dir=args.out,
    )
    result = run_experiment(exp)
    for s, ret in enumerate(result.metrics["episode_return"][0, :, -1]):
        verdict = "cooperates" if ret >= COOPERATE - TOLERANCE else "does NOT cooperate"
        print(f"seed {exp.seed + s}: final return {ret:.2f} of {COOPERATE:g}: {verdict}")
    print(f"run directory: {result.run_dir}")


if __name__ == "__main__":
    main()
