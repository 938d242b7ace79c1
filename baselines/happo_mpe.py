"""HAPPO on simple spread: three heterogeneous actors updated one after another in a random order.

HAPPO (J. G. Kuba et al., "Trust Region Policy Optimisation in Multi-Agent Reinforcement
Learning", ICLR 2022) with one actor per agent and a centralised V(s), on cooperative navigation
(R. Lowe et al., NeurIPS 2017; `particle/simple_spread-v0`: 3 agents, 3 landmarks, 25-step
episodes). HARL's `happo.yaml` settings where they fit a CPU budget (5 epochs of 1 minibatch,
clip 0.2, entropy 0.01, ValueNorm, lr 5e-4; `--preset harl` in `marljax train` has all of them);
narrower networks and fewer steps. Use `--algo hatrpo` in `marljax train` for HATRPO.

    python baselines/happo_mpe.py [--seeds 2] [--out runs]
"""

from marljax.shell.baseline import baseline_main
from marljax.shell.experiment import Experiment
from marljax.training.train import TrainConfig

EXPERIMENT = Experiment(
    algo="happo",
    env="particle/simple_spread-v0",
    seeds=2,
    train=TrainConfig(num_envs=16, rollout_len=25, total_env_steps=16 * 25 * 50),
    agent={"hidden_sizes": (64, 64), "num_epochs": 5, "num_minibatches": 1, "value_norm": True},
    hparams={"lr": 5e-4, "ent_coef": 0.01, "vf_coef": 1.0, "max_grad_norm": 10.0},
)

if __name__ == "__main__":
    baseline_main(__doc__, EXPERIMENT)
