"""MAPPO on the climbing game: policy gradient typically settles on the 7 equilibrium, not 11.

Reproduces the climbing game of C. Claus and C. Boutilier, "The dynamics of reinforcement learning
in cooperative multiagent systems", AAAI 1998: payoffs [[11, -30, 0], [-30, 7, 0], [0, 6, 5]].
The optimum 11 is surrounded by -30 penalties, so while the partner explores, the safer actions
look better on average (relative overgeneralisation): learners settle on the (1, 1) = 7 equilibrium.

    python baselines/mappo_climbing.py [--seeds 4] [--out runs]
"""

from marljax.shell.baseline import baseline_main
from marljax.shell.experiment import Experiment
from marljax.training.train import TrainConfig

OUTCOMES = {11.0: "optimum (0, 0) = 11", 7.0: "equilibrium (1, 1) = 7", 5.0: "(2, 2) = 5"}

EXPERIMENT = Experiment(
    algo="mappo",
    env="matrix/climbing-v0",
    train=TrainConfig(num_envs=16, rollout_len=4, total_env_steps=16 * 4 * 60),
    agent={"hidden_sizes": (32,), "num_minibatches": 2},
    hparams={"lr": 3e-3},
)

if __name__ == "__main__":
    baseline_main(
        __doc__,
        EXPERIMENT,
        lambda r: "nearest " + OUTCOMES[min(OUTCOMES, key=lambda v: abs(v - r))],
    )
