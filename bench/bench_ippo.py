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
    case,
    data_parallel_cases,
    jaxmarl_baseline,
    main_with_steps,
    marljax_training,
    notes_table,
    seeded,
    timed,
)

import marljax
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.train import TrainConfig, make_train

NUM_ENVS, ROLLOUT = 16, 128
_ARGS = {"steps": 1_000_000}


def _steps(opts: Options) -> int:
    return NUM_ENVS * ROLLOUT * 4 if opts.quick else int(_ARGS["steps"])


def _task(steps: int) -> str:
    return f"IPPO MPE simple spread (3 agents, E={NUM_ENVS}, T={ROLLOUT}, {steps / 1e6:g}M steps)"


def _build(opts: Options):
    steps = _steps(opts)
    env, params = marljax.make("particle/simple_spread-v0")
    config = TrainConfig(num_envs=NUM_ENVS, rollout_len=ROLLOUT, total_env_steps=steps)
    agent = make_ppo(
        PPOConfig(
            critic_input="local",
            parameter_mode="shared",
            hidden_sizes=(64, 64),
            activation="tanh",
            num_epochs=4,
            num_minibatches=4,
        ),
        env,
        params,
    )
    hp = PPOHParams(lr=2.5e-4, ent_coef=0.01, max_grad_norm=0.5, adam_eps=1e-5)
    return make_train(config, env, agent, params), hp, _task(steps)


@case("ippo_mpe/marljax")
def marljax_ippo(opts: Options) -> list[Result]:
    return marljax_training(*_build(opts))


# The same run data-parallel over every device, and over the CPU as 2 host devices.
data_parallel_cases("ippo_mpe", __file__, _build, _steps)


@case("ippo_mpe/jaxmarl")
def jaxmarl_ippo(opts: Options) -> list[Result]:
    steps = _steps(opts)
    module, base = jaxmarl_baseline("baselines/IPPO", "ippo_ff_mpe", ["config/ippo_ff_mpe.yaml"])
    config = {**base, "TOTAL_TIMESTEPS": steps, "ANNEAL_LR": False, "NUM_SEEDS": 1}
    train, key = seeded(module.make_train(dict(config)))
    t = timed(train, key, repeats=1, first_call=False)
    info = t.output["metrics"]
    n = TRAIN_SEEDS["n"]
    # the last update [(seeds,) T, actors]; with seeds the update axis is the second
    last = jax.tree.map(lambda x: np.asarray(x)[:, -1] if n > 1 else np.asarray(x)[-1], info)
    done = last["returned_episode"].astype(bool)
    ret = float(last["returned_episode_returns"][done].mean()) if done.any() else float("nan")
    updates = steps // ROLLOUT // NUM_ENVS
    return [
        t.result(
            _task(steps),
            "jaxmarl",
            n * updates * ROLLOUT * NUM_ENVS,
            notes={"final_return": ret, "num_updates": updates, "seeds": n},
        )
    ]


if __name__ == "__main__":
    main_with_steps(
        ["ippo_mpe/jaxmarl", "ippo_mpe/marljax", "ippo_mpe/marljax_2dev"],
        __doc__.splitlines()[0],
        _ARGS,
        after=lambda results: notes_table(
            results, "final_return", "return, last update (sum over agents)"
        ),
    )
