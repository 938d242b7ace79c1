"""COMA on the penalty game (k = 0): both agents learn to coordinate on an optimal joint action.

COMA (J. Foerster et al., "Counterfactual Multi-Agent Policy Gradients", AAAI 2018): decentralised
actors trained with the counterfactual advantage of a centralised critic over the joint action.
The game is the penalty game of C. Claus and C. Boutilier, "The dynamics of reinforcement learning
in cooperative multiagent systems", AAAI 1998 (common payoff; optimum 10 at two joint actions,
(0, 2) and (2, 0), which the agents must agree on), as in `mappo_penalty_game.py`.

    python baselines/coma_penalty_game.py [--seeds 4] [--out runs]
"""

from marljax.shell.baseline import baseline_main
from marljax.shell.experiment import Experiment
from marljax.training.train import TrainConfig

EXPERIMENT = Experiment(
    algo="coma",
    env="matrix/penalty_k0-v0",
    train=TrainConfig(num_envs=16, rollout_len=4, total_env_steps=16 * 4 * 200),
    agent={"hidden_sizes": (32,), "critic_hidden": (32, 32)},
    hparams={"lr": 1e-2, "critic_lr": 1e-2},
)

if __name__ == "__main__":
    # Within 0.5 of the optimum counts as reached (the policies stay slightly stochastic).
    baseline_main(
        __doc__, EXPERIMENT, lambda r: "optimum reached" if r >= 9.5 else "optimum NOT reached"
    )
