"""MAT on MPE simple spread with the authors' MPE configuration (the `mat` preset), small budget.

MAT (M. Wen et al., "Multi-Agent Reinforcement Learning is a Sequence Modeling Problem", NeurIPS
2022): an encoder over the agents' observations gives per-agent values, a decoder generates the
joint action agent by agent, trained with PPO's clipped objective. The preset is the authors'
`mat/scripts/train_mpe.sh` (1 block, 64-wide tokens, 10 epochs, clip 0.05, Adam 7e-4, 128 envs x
25 steps); the budget here is 40 updates (128,000 env steps) of its 2e7.

    python baselines/mat_mpe.py [--seeds 2] [--out runs]
"""

from marljax.shell.baseline import baseline_main
from marljax.shell.experiment import Experiment

EXPERIMENT = Experiment(
    algo="mat",
    preset="mat",
    env="particle/simple_spread-v0",
    seeds=2,
    train={"total_env_steps": 128 * 25 * 40},
)

if __name__ == "__main__":
    baseline_main(__doc__, EXPERIMENT)
