"""Recurrent MAPPO training on MPE simple spread: marljax vs JaxMARL's MAPPO, matched settings.

Task: cooperative navigation, 3 agents, 3 landmarks, discrete actions, 25-step episodes
(`particle/simple_spread-v0` here, `MPE_simple_spread_v3` in JaxMARL 0.2.0).

jaxmarl: `baselines/MAPPO/mappo_rnn_mpe.py` from a JaxMARL source checkout, run unmodified with
its own configuration (`config/mappo_homogenous_rnn_mpe.yaml`) except `ANNEAL_LR: False`
(marljax's PPO has a constant learning rate), `NUM_SEEDS: 1` and the number of steps: 16 envs x
128 steps per update, 4 epochs x 4 minibatches, a shared GRU actor (128-wide) on each agent's
observation and a GRU critic on the world state (every agent's observation concatenated),
lr 2e-3, gamma 0.99, GAE lambda 0.95, clip 0.2, entropy 0.01, grad clip 0.5. The checkout's path
comes from `--jaxmarl-src` or `$JAXMARL_SRC`.

marljax: `make_ppo(PPOConfig(critic_input="global", parameter_mode="shared", recurrent=True,
gru_size=128, hidden_sizes=(128,)))` with the same hyperparameters; our `global_state` for simple
spread is the same concatenation of observations. Differences we keep: JaxMARL embeds the input
with a 128-wide dense layer before its GRU, ours feeds the GRU directly and puts the dense layer
after it; JaxMARL's actor and critic have separate Adam optimisers, ours share one (same
learning rate); JaxMARL minibatches over agent sequences, ours over environments (12 agent
sequences per minibatch in both); our GAE bootstraps at the time limit.

Timing: one fused training program per framework (compile apart from run). JaxMARL's script logs
through an `io_callback` every update; that is part of its program and timed with it (its
`wandb.log` sink is replaced by an in-memory list, which is how we read its returns). Return:
the last update's finished training episodes, summed over agents (as in `bench_ippo.py`).

    python bench/bench_mappo_mpe.py --jaxmarl-src PATH [--steps 1000000] [--json PATH] [--quick]
"""

from __future__ import annotations

from types import SimpleNamespace

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
    return (
        f"recurrent MAPPO MPE simple spread (3 agents, E={NUM_ENVS}, T={ROLLOUT}, "
        f"{steps / 1e6:g}M steps)"
    )


def _build(opts: Options):
    steps = STEPS(opts)
    trainer, hp = jaxmarl_matched_ppo(
        NUM_ENVS,
        ROLLOUT,
        steps,
        lr=2e-3,
        critic_input="global",
        recurrent=True,
        gru_size=128,
        hidden_sizes=(128,),
    )
    return trainer, hp, _task(steps)


# One device, data-parallel over every device, and over the CPU as 2 host devices.
marljax_training_cases("mappo_mpe", __file__, _build, STEPS)


@case("mappo_mpe/jaxmarl")
def jaxmarl_mappo(opts: Options) -> list[Result]:
    steps = STEPS(opts)
    module, base = jaxmarl_baseline(
        "baselines/MAPPO", "mappo_rnn_mpe", ["config/mappo_homogenous_rnn_mpe.yaml"]
    )
    # The script returns only its runner state; its returns reach the host through the
    # `wandb.log` in its per-update `io_callback`. Point that module's `wandb` at a recorder.
    logged: list[dict] = []
    module.wandb = SimpleNamespace(log=lambda row: logged.append(row))

    def last_logged_return(_) -> float:
        # The last logged row of each seed: mean over agents of the last finished episode's
        # return (the MPELogWrapper return, summed over agents as in bench_ippo.py).
        n = TRAIN_SEEDS["n"]
        if not logged:
            return float("nan")
        if np.ndim(logged[-1]["returns"]):  # the callback ran batched: one row holds every seed
            return float(np.mean(np.asarray(logged[-1]["returns"])))
        # one row per seed and update: the last n rows
        return float(np.mean([float(np.asarray(r["returns"])) for r in logged[-n:]]))

    per_update = ROLLOUT * NUM_ENVS
    return jaxmarl_ppo_training(module, base, steps, per_update, _task(steps), last_logged_return)


if __name__ == "__main__":
    main_with_steps(
        ["mappo_mpe/jaxmarl", "mappo_mpe/marljax", "mappo_mpe/marljax_2dev"],
        __doc__.splitlines()[0],
        STEPS,
        notes=("final_return", "return, last update (sum over agents)"),
    )
