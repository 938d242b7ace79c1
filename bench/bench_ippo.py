"""IPPO training on MPE simple spread: marljax vs JaxMARL's feed-forward IPPO, matched settings.

Task: cooperative navigation, 3 agents, 3 landmarks, discrete actions, 25-step episodes
(`particle/simple_spread-v0` here, `MPE_simple_spread_v3` in JaxMARL 0.2.0).

jaxmarl: `baselines/IPPO/ippo_ff_mpe.py` from a JaxMARL source checkout, run unmodified with its
own configuration (`config/ippo_ff_mpe.yaml`) except `ANNEAL_LR: False` (marljax's PPO has a
constant learning rate) and the number of steps: 16 envs x 128 steps per update, 4 epochs x 4
minibatches, one shared 64x64 tanh actor and critic on each agent's observation, lr 2.5e-4,
gamma 0.99, GAE lambda 0.95, clip 0.2, entropy 0.01, grad clip 0.5. The checkout's path comes from
`--jaxmarl-src` or `$JAXMARL_SRC`.

marljax: `make_ppo(PPOConfig(critic_input="local", parameter_mode="shared"))` with the same sizes
and hyperparameters. Differences we keep: our GAE bootstraps at the time limit (JaxMARL's treats
it as terminal), and our actor and critic are two networks updated by one optimiser, as in
JaxMARL's script.

Timing: one fused training program per framework (compile apart from run). Return: the training
episodes of the last update, the episode return summed over agents (JaxMARL's `MPELogWrapper`
multiplies the per-agent reward by the number of agents and averages over agents: the same
number).

    python bench/bench_ippo.py --jaxmarl-src PATH [--steps 1000000] [--json PATH] [--quick]
"""

from __future__ import annotations

import jax
import numpy as np
from harness import (
    TRAIN_SEEDS,
    Options,
    Result,
    TrainSteps,
    case,
    jaxmarl_baseline,
    jaxmarl_matched_ppo,
    jaxmarl_ppo_training,
    main_with_steps,
    marljax_training_cases,
)

NUM_ENVS, ROLLOUT = 16, 128
STEPS = TrainSteps(1_000_000, quick=NUM_ENVS * ROLLOUT * 4)


def _task(steps: int) -> str:
    return f"IPPO MPE simple spread (3 agents, E={NUM_ENVS}, T={ROLLOUT}, {steps / 1e6:g}M steps)"


def _build(opts: Options):
    steps = STEPS(opts)
    trainer, hp = jaxmarl_matched_ppo(
        NUM_ENVS, ROLLOUT, steps, lr=2.5e-4, critic_input="local", hidden_sizes=(64, 64)
    )
    return trainer, hp, _task(steps)


# One device, data-parallel over every device, and over the CPU as 2 host devices.
marljax_training_cases("ippo_mpe", __file__, _build, STEPS)


def _last_update_return(out) -> float:
    """The mean return of the episodes finished in the last update (summed over agents)."""
    # the last update [(seeds,) T, actors]; with seeds the update axis is the second
    n, metrics = TRAIN_SEEDS["n"], out["metrics"]
    last = jax.tree.map(lambda x: np.asarray(x)[:, -1] if n > 1 else np.asarray(x)[-1], metrics)
    done = last["returned_episode"].astype(bool)
    return float(last["returned_episode_returns"][done].mean()) if done.any() else float("nan")


@case("ippo_mpe/jaxmarl")
def jaxmarl_ippo(opts: Options) -> list[Result]:
    steps = STEPS(opts)
    module, base = jaxmarl_baseline("baselines/IPPO", "ippo_ff_mpe", ["config/ippo_ff_mpe.yaml"])
    per_update = ROLLOUT * NUM_ENVS
    return jaxmarl_ppo_training(module, base, steps, per_update, _task(steps), _last_update_return)


if __name__ == "__main__":
    main_with_steps(
        ["ippo_mpe/jaxmarl", "ippo_mpe/marljax", "ippo_mpe/marljax_2dev"],
        __doc__.splitlines()[0],
        STEPS,
        notes=("final_return", "return, last update (sum over agents)"),
    )
