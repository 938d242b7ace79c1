"""Cost of BN-MAPPO relative to MAPPO per env step, for 2, 4, 8 and 16 agents (MPE simple spread).

Each row is one compiled program: the fused `train(key, hparams)` of `marljax.training.train.make_train`
on `particle/simple_spread-v0` with `num_agents = A` (A landmarks, discrete actions), with the
MAPPO agent (`PPOConfig(critic_input="global")`) or BN-MAPPO with the same networks plus a
Bayesian-network joint policy (`graph="learned"`: a context-aware DAG sampled from the global
state every step, and the agents' actions sampled by a `lax.scan` over its topological order;
`VARIANTS` also accepts a fixed graph such as "full"). Compile time is reported apart from run
time; env steps/s counts every env step of the run (acting AND the PPO update). The frameworks of
one agent count run one right after the other so that load changes on a shared machine hit both.
BN cost model: acting adds A sequential steps per env step (each one small network call), the
update evaluates every agent's conditional in parallel (one extra network call per agent) plus
the graph network; see D. Chen et al., ICML 2023, for the algorithm.

Timing: for each agent count the programs are compiled first (lower + compile timed apart), then
their steady-state runs are interleaved (mappo, bn, mappo, bn, ...; `--repeats` rounds) so that
load changes on a shared machine hit every framework alike; the table shows the median and the
min / max of the rounds.

    python bench/bench_bn.py [--json PATH] [--quick] [--repeats N]
"""

from __future__ import annotations

import statistics
import time

import jax
from harness import Options, Result, case, main

import marljax
import marljax.envs.particle  # noqa: F401  (registers particle/*)
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.training.train import TrainConfig, make_train

AGENTS = (2, 4, 8, 16)
NUM_ENVS, ROLLOUT_LEN, NUM_UPDATES = 16, 25, 4
VARIANTS = {"mappo": "none", "bn_mappo (learned)": "learned"}


def _interleaved(fns: dict, args: tuple, repeats: int) -> dict:
    """Compile every `fns[name](*args)`, then run them in interleaved rounds.

    Returns `{name: (compile_s, run_times)}`.
    """
    compiled, compile_s = {}, {}
    for name, fn in fns.items():
        jax.clear_caches()
        t0 = time.perf_counter()
        compiled[name] = jax.jit(fn).lower(*args).compile()
        compile_s[name] = time.perf_counter() - t0
        jax.block_until_ready(compiled[name](*args))  # first run: allocations, untimed
    runs = {name: [] for name in fns}
    for _ in range(max(1, repeats)):
        for name, c in compiled.items():
            t0 = time.perf_counter()
            jax.block_until_ready(c(*args))
            runs[name].append(time.perf_counter() - t0)
    return {name: (compile_s[name], runs[name]) for name in fns}


@case("bn_mappo/cost_vs_mappo")
def bn_cost(opts: Options) -> list[Result]:
    agents = (2, 4) if opts.quick else AGENTS
    updates = 1 if opts.quick else NUM_UPDATES
    config = TrainConfig(
        num_envs=NUM_ENVS,
        rollout_len=ROLLOUT_LEN,
        total_env_steps=NUM_ENVS * ROLLOUT_LEN * updates,
    )
    results = []
    for A in agents:
        env, params = marljax.make("particle/simple_spread-v0", num_agents=A)
        task = f"simple_spread A={A} (E={NUM_ENVS}, T={ROLLOUT_LEN}, {updates} updates)"
        fns = {}
        for framework, graph in VARIANTS.items():
            agent = make_ppo(
                PPOConfig(critic_input="global", graph=graph, num_minibatches=2), env, params
            )
            fns[framework] = make_train(config, env, agent, params).train
        timings = _interleaved(fns, (jax.random.key(0), PPOHParams()), opts.repeats)
        for framework, (compile_s, runs) in timings.items():
            results.append(
                Result(
                    task=task,
                    framework=framework,
                    compile_s=compile_s,
                    run_s=statistics.median(runs),
                    env_steps=config.num_updates * config.steps_per_update,
                    run_min_s=min(runs),
                    run_max_s=max(runs),
                    repeats=len(runs),
                    notes={"num_agents": A, "graph": VARIANTS[framework]},
                )
            )
    return results


if __name__ == "__main__":
    main(
        ["bn_mappo/cost_vs_mappo"],
        description=__doc__.splitlines()[0],
        baseline="mappo",
        repeats=9,
        first_call=False,
    )
