"""IPPO against tit-for-tat in the 10-round iterated Prisoner's Dilemma: the learner cooperates.

Against tit-for-tat the best response is to cooperate every round (return 3 * 10 = 30); always
defecting earns 5 + 1 * 9 = 14. R. Axelrod and W. D. Hamilton, "The evolution of cooperation",
Science 211, 1981 (payoffs R=3, S=0, T=5, P=1).

    python baselines/ippo_ipd_tit_for_tat.py [--seeds 4] [--out runs]
"""

from marljax.shell.baseline import baseline_main
from marljax.shell.experiment import Experiment
from marljax.training.train import TrainConfig

EXPERIMENT = Experiment(
    algo="ippo",
    env="matrix/ipd_tft-v0",
    env_kwargs={"num_rounds": 10},
    train=TrainConfig(num_envs=16, rollout_len=10, total_env_steps=16 * 10 * 60),
    agent={"hidden_sizes": (32,), "num_minibatches": 2},
    hparams={"lr": 3e-3},
)

if __name__ == "__main__":
    # Always-cooperate earns 30 against TFT, always-defect 14; within 1 of 30 counts as cooperating.
    baseline_main(
        __doc__, EXPERIMENT, lambda r: "cooperates" if r >= 29.0 else "does NOT cooperate"
    )
