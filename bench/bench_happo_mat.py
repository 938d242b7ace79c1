"""HAPPO, HATRPO and MAT: training throughput against MAPPO, and compile time vs number of agents.

1. Training env-steps/s on MPE simple spread (`particle/simple_spread-v0`, 3 agents, discrete)
   of MAPPO (`marljax.agents.ppo`, global-state critic), HAPPO and HATRPO
   (`marljax.agents.happo`: one actor per agent, updated one after another) and MAT
   (`marljax.agents.mat`: encoder + autoregressive decoder), each with its own defaults, at the
   same env batch (16) and rollout (25), measured in one process as fused training programs,
   compile apart from run. Each learner's default epochs differ (MAPPO 4, HAPPO 4 per agent,
   HATRPO one natural-gradient step per agent, MAT 15, the authors'); `mat_4_epochs` is MAT at
   MAPPO's epochs, for the cost of the architecture alone. `mappo_paper_mpe` and `mat_paper_mpe`
   are both at the papers' shared MPE setting (128 envs x 25 steps, 10 epochs of one minibatch;
   MAT's `mat` preset sizes), compared with each other. Targets: HAPPO >= 0.5x MAPPO, MAT >= 0.3x.
   Each row also records the arithmetic of one update: XLA's FLOP count of the same training
   program cut to one update of one epoch of one minibatch (loops of one trip are inlined, so
   the count is one rollout step, GAE and one epoch's forward and backward), times the epochs,
   and the rate that gives over the measured time per update (`flops` table): a learner that
   does k times MAPPO's arithmetic per update at the same rate runs at 1/k of its speed.
2. Compile time (lower + XLA compile, wall seconds) of the whole training program (2 updates of
   4 envs x 8 steps) on simple spread with A = 3, 8, 32 agents (and as many landmarks), for MAPPO,
   HAPPO, HATRPO and MAT. The sequential updates (HAPPO, HATRPO) and MAT's decoding are
   `lax.scan`s over agents, so compile time should stay roughly flat in A; the table prints
   each compile time relative to A = 3 and the StableHLO size.

    python bench/bench_happo_mat.py [--quick] [--json PATH]
"""

from __future__ import annotations

import dataclasses
import functools

import jax
from harness import Options, Result, case, compile_table, main, timed, xla_flops

import marljax
from marljax.agents.happo import HAPPOConfig, HAPPOHParams, make_happo
from marljax.agents.mat import MATConfig, MATHParams, make_mat
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.training.train import TrainConfig, make_train

ENV = "particle/simple_spread-v0"
NUM_ENVS, ROLLOUT = 16, 25
AGENT_COUNTS = (3, 8, 32)

#: The papers' MPE setting, shared by MAPPO (Yu et al. 2022) and MAT (Wen et al. 2022, its `mat`
#: preset): 128 envs x 25 steps, 10 epochs of one minibatch.
PAPER_ENVS, PAPER_EPOCHS = 128, 10

#: name -> (factory, config, hparams, num_envs)
LEARNERS = {
    "mappo": (make_ppo, PPOConfig(critic_input="global"), PPOHParams(), NUM_ENVS),
    "happo": (make_happo, HAPPOConfig(), HAPPOHParams(), NUM_ENVS),
    "hatrpo": (make_happo, HAPPOConfig(actor_update="trpo"), HAPPOHParams(), NUM_ENVS),
    "mat": (make_mat, MATConfig(), MATHParams(), NUM_ENVS),
    "mat_4_epochs": (make_mat, MATConfig(num_epochs=4), MATHParams(), NUM_ENVS),
    "mappo_paper_mpe": (
        make_ppo,
        PPOConfig(critic_input="global", num_epochs=PAPER_EPOCHS, num_minibatches=1),
        PPOHParams(),
        PAPER_ENVS,
    ),
    "mat_paper_mpe": (make_mat, MATConfig(num_epochs=PAPER_EPOCHS), MATHParams(), PAPER_ENVS),
}


#: The MAPPO each task's ratios are taken against.
BASELINES = ("mappo", "mappo_paper_mpe")


def _trainer(name: str, env, params, config: TrainConfig):
    factory, agent_config, hparams, _ = LEARNERS[name]
    return make_train(config, env, factory(agent_config, env, params), params), hparams


def _epoch_flops(name: str, env, params) -> float:
    """XLA's FLOP count of one update of one epoch of one minibatch of learner `name`."""
    factory, agent_config, hparams, num_envs = LEARNERS[name]
    fields = {f.name for f in dataclasses.fields(agent_config)}
    one = {k: 1 for k in ("num_epochs", "num_minibatches") if k in fields}
    agent = factory(dataclasses.replace(agent_config, **one), env, params)
    config = TrainConfig(num_envs, ROLLOUT, num_envs * ROLLOUT)
    trainer = make_train(config, env, agent, params)
    return xla_flops(trainer.train, jax.random.PRNGKey(0), hparams)


def _throughput(name: str, opts: Options) -> list[Result]:
    num_envs = LEARNERS[name][3]
    updates = 4 if opts.quick else max(4, 20 * NUM_ENVS // num_envs)
    env, params = marljax.make(ENV)
    config = TrainConfig(num_envs, ROLLOUT, num_envs * ROLLOUT * updates)
    trainer, hparams = _trainer(name, env, params, config)
    t = timed(
        trainer.train,
        jax.random.PRNGKey(0),
        hparams,
        repeats=opts.repeats,
        first_call=opts.first_call,
    )
    task = f"train simple_spread (A=3, E={num_envs}, T={ROLLOUT}, {updates} updates)"
    epochs = getattr(LEARNERS[name][1], "num_epochs", 1)
    flops = _epoch_flops(name, env, params) * epochs
    notes = {"update_gflop": flops / 1e9, "epochs": epochs, "updates": updates, "envs": num_envs}
    return [t.result(task, name, config.num_updates * config.steps_per_update, notes=notes)]


def flops_table(results: list[Result]) -> str:
    """Markdown: each learner's arithmetic per update, relative to MAPPO's, and its rate."""
    rows = [r for r in results if "update_gflop" in r.notes]
    base = {r.task: r.notes["update_gflop"] for r in rows if r.framework in BASELINES}
    lines = [
        "",
        "| learner | envs | epochs | GFLOP per update (XLA count) | vs MAPPO | GFLOP/s when timed |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        gflop = r.notes["update_gflop"]
        rate = gflop * r.notes["updates"] / r.run_s
        ratio = gflop / base[r.task] if r.task in base else float("nan")
        lines.append(
            f"| {r.framework} | {r.notes['envs']} | {r.notes['epochs']} | {gflop:.2f} | "
            f"{ratio:.1f}x | {rate:.0f} |"
        )
    return "\n".join(lines)


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
        baseline=BASELINES,
        after=lambda results: (
            flops_table(results)
            + "\n"
            + compile_table(results, "training program compile", "learner")
        ),
        repeats=3,
        first_call=False,
    )
