"""HASAC: training throughput against MAPPO on one env, and compile time vs number of agents.

1. Training env-steps/s of HASAC (`marljax.agents.sac`, sequential update) and MAPPO
   (`marljax.agents.ppo`, tanh-squashed Gaussian) on continuous simple spread
   (`particle/simple_spread_continuous-v0`, 3 agents), same env batch (8) and rollout (25),
   measured in one process as fused training programs, compile apart from run. HASAC starts
   learning at once (no warm-up) so every update pays its gradient steps: batch 256, one gradient
   step per vectorised env step (HARL's `update_per_train = 1`), MLP (64, 64) for both.
   Off-policy and on-policy learners do different amounts of work per env step by design; the
   ratio is what a user pays per env step with these settings, not an implementation-quality
   comparison.
2. Compile time (lower + XLA compile) of one HASAC training update on simple spread with
   A = 2, 4, 8, 16 agents (and as many landmarks): the sequential update is a `lax.scan` over
   the agent permutation, so the program (and its compile time) should stay roughly flat in A;
   the StableHLO size is printed as a machine-independent check.

    python bench/bench_hasac.py [--quick] [--json PATH]
"""

from __future__ import annotations

import jax
from harness import Options, Result, case, main, timed

import marljax
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.agents.sac import SACConfig, SACHParams, make_sac
from marljax.train import TrainConfig, make_train

ENV = "particle/simple_spread_continuous-v0"
NUM_ENVS, ROLLOUT = 8, 25
HASAC = SACConfig(hidden_sizes=(64, 64), batch_size=256, buffer_size=20_000, warmup_steps=0)
MAPPO = PPOConfig(critic_input="global", hidden_sizes=(64, 64), tanh_squash=True)
AGENT_COUNTS = (2, 4, 8, 16)
_HLO_CHARS: dict[int, int] = {}


def _task(updates: int) -> str:
    return f"train simple_spread_continuous (A=3, E={NUM_ENVS}, T={ROLLOUT}, {updates} updates)"


def _throughput(name: str, opts: Options) -> list[Result]:
    updates = 4 if opts.quick else 40
    env, params = marljax.make(ENV)
    if name == "hasac":
        agent, hp = make_sac(HASAC, env, params), SACHParams()
    else:
        agent, hp = make_ppo(MAPPO, env, params), PPOHParams()
    cfg = TrainConfig(NUM_ENVS, ROLLOUT, NUM_ENVS * ROLLOUT * updates)
    trainer = make_train(cfg, env, agent, params)
    t = timed(
        trainer.train, jax.random.PRNGKey(0), hp, repeats=opts.repeats, first_call=opts.first_call
    )
    return [t.result(_task(updates), name, cfg.num_updates * cfg.steps_per_update)]


@case("hasac_train/hasac")
def hasac_train(opts: Options) -> list[Result]:
    return _throughput("hasac", opts)


@case("hasac_train/mappo")
def mappo_train(opts: Options) -> list[Result]:
    return _throughput("mappo", opts)


@case("hasac_compile/agents")
def compile_vs_agents(opts: Options) -> list[Result]:
    out = []
    for A in AGENT_COUNTS[:2] if opts.quick else AGENT_COUNTS:
        env, params = marljax.make(ENV, num_agents=A, num_landmarks=A)
        cfg = SACConfig(hidden_sizes=(64, 64), batch_size=64, buffer_size=1000, warmup_steps=0)
        agent = make_sac(cfg, env, params)
        train_cfg = TrainConfig(NUM_ENVS, ROLLOUT, NUM_ENVS * ROLLOUT)
        trainer = make_train(train_cfg, env, agent, params)
        key, hp = jax.random.PRNGKey(0), SACHParams()
        _HLO_CHARS[A] = len(jax.jit(trainer.train).lower(key, hp).as_text())
        t = timed(trainer.train, key, hp, repeats=1, first_call=False)
        out.append(
            t.result(
                "HASAC one training update (compile vs agents)",
                "marljax",
                train_cfg.steps_per_update,
                variant=f"A={A}",
                notes={"stablehlo_chars": _HLO_CHARS[A]},
            )
        )
    return out


def _compile_table(results: list[Result]) -> str:
    rows = [r for r in results if r.task.startswith("HASAC one training update")]
    lines = ["", "| agents | lower + compile | StableHLO chars |", "|---|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.variant} | {r.compile_s:.2f} s | {r.notes['stablehlo_chars']:,} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main(
        ["hasac_train/mappo", "hasac_train/hasac", "hasac_compile/agents"],
        __doc__.splitlines()[0],
        baseline="mappo",
        after=_compile_table,
        repeats=3,
        first_call=False,
    )
