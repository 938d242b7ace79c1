"""HAPPO, HATRPO and MAT: training throughput against MAPPO, and compile time vs number of agents.

1. Training env-steps/s on MPE simple spread (`particle/simple_spread-v0`, 3 agents, discrete)
   of MAPPO (`marljax.agents.ppo`, global-state critic), HAPPO and HATRPO
   (`marljax.agents.happo`: one actor per agent, updated one after another) and MAT
   (`marljax.agents.mat`: encoder + autoregressive decoder), each with its own defaults, at the
   same env batch (16) and rollout (25), measured in one process as fused training programs,
   compile apart from run. Each learner's default epochs differ (MAPPO 4, HAPPO 4 per agent,
   HATRPO one natural-gradient step per agent, MAT 15, the authors'); `mat_4_epochs` is MAT at
   MAPPO's epochs, for the cost of the architecture alone. Issue targets: HAPPO >= 0.5x MAPPO,
   MAT >= 0.3x.
2. Compile time (lower + XLA compile, wall seconds) of the whole training program (2 updates of
   4 envs x 8 steps) on simple spread with A = 3, 8, 32 agents (and as many landmarks), for MAPPO,
   HAPPO, HATRPO and MAT. The sequential updates (HAPPO, HATRPO) and MAT's decoding are
   `lax.scan`s over agents, so compile time should stay roughly flat in A; the table prints
   each compile time relative to A = 3 and the StableHLO size.

    python bench/bench_happo_mat.py [--quick] [--json PATH]
"""

from __future__ import annotations

import functools

import jax
from harness import Options, Result, case, compile_table, main, timed

import marljax
from marljax.agents.happo import HAPPOConfig, HAPPOHParams, make_happo
from marljax.agents.mat import MATConfig, MATHParams, make_mat
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.training.train import TrainConfig, make_train

ENV = "particle/simple_spread-v0"
NUM_ENVS, ROLLOUT = 16, 25
AGENT_COUNTS = (3, 8, 32)

#: name -> (factory, config, hparams)
LEARNERS = {
    "mappo": (make_ppo, PPOConfig(critic_input="global"), PPOHParams()),
    "happo": (make_happo, HAPPOConfig(), HAPPOHParams()),
    "hatrpo": (make_happo, HAPPOConfig(actor_update="trpo"), HAPPOHParams()),
    "mat": (make_mat, MATConfig(), MATHParams()),
    "mat_4_epochs": (make_mat, MATConfig(num_epochs=4), MATHParams()),
}


def _trainer(name: str, env, params, config: TrainConfig):
    factory, agent_config, hparams = LEARNERS[name]
    return make_train(config, env, factory(agent_config, env, params), params), hparams


def _throughput(name: str, opts: Options) -> list[Result]:
    updates = 4 if opts.quick else 20
    env, params = marljax.make(ENV)
    config = TrainConfig(NUM_ENVS, ROLLOUT, NUM_ENVS * ROLLOUT * updates)
    trainer, hparams = _trainer(name, env, params, config)
    t = timed(
        trainer.train,
        jax.random.PRNGKey(0),
        hparams,
        repeats=opts.repeats,
        first_call=opts.first_call,
    )
    task = f"train simple_spread (A=3, E={NUM_ENVS}, T={ROLLOUT}, {updates} updates)"
    return [t.result(task, name, config.num_updates * config.steps_per_update)]


for _name in LEARNERS:
    case(f"ha_train/{_name}")(functools.partial(_throughput, _name))


@case("ha_compile/agents")
def compile_vs_agents(opts: Options) -> list[Result]:
    """Lower + compile of the whole training program per number of agents A."""
    out = []
    for A in AGENT_COUNTS[:2] if opts.quick else AGENT_COUNTS:
        env, params = marljax.make(ENV, num_agents=A, num_landmarks=A)
        config = TrainConfig(4, 8, 4 * 8 * 2)
        for name in ("mappo", "happo", "hatrpo", "mat"):
            trainer, hparams = _trainer(name, env, params, config)
            key = jax.random.PRNGKey(0)
            chars = len(jax.jit(trainer.train).lower(key, hparams).as_text())
            t = timed(trainer.train, key, hparams, repeats=1, first_call=False)
            out.append(
                t.result(
                    "training program compile vs agents",
                    name,
                    config.num_updates * config.steps_per_update,
                    variant=f"A={A}",
                    notes={"stablehlo_chars": chars, "agents": A},
                )
            )
    return out


if __name__ == "__main__":
    main(
        [*(f"ha_train/{n}" for n in LEARNERS), "ha_compile/agents"],
        __doc__.splitlines()[0],
        baseline="mappo",
        after=lambda results: compile_table(results, "training program compile", "learner"),
        repeats=3,
        first_call=False,
    )
