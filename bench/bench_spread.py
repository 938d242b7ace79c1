"""IPPO on MPE simple spread: marljax's benchmark cell vs JaxMARL's own script, same budget and seeds.

jaxmarl: `baselines/IPPO/ippo_ff_mpe.py` from a JaxMARL source checkout, unmodified, with its
`config/ippo_ff_mpe.yaml` except `ANNEAL_LR: False` (marljax's PPO keeps its learning rate
constant) and the budget: 16 envs x 128 steps per update, 4 epochs x 4 minibatches, one shared
64x64 tanh actor and critic, lr 2.5e-4, clip 0.2, entropy 0.01, grad clip 0.5. Its per-update
return is the mean of `returned_episode_returns` its script returns, divided by the number of
agents (JaxMARL's `MPELogWrapper` sums the agents' rewards; marljax reports their mean).

marljax: the benchmark cell `mpe/simple_spread:ippo` (the `jaxmarl` preset on
`particle/simple_spread-v0`, parity-tested against JaxMARL's `MPE_simple_spread_v3`).

Both: each seed's return over the last tenth of training, the IQM over seeds with a 95% CI; env
steps/s of one timed run after the compile. JaxMARL's seeds run one after the other (vmapped
over seeds its scripts hang on jax 0.10.2 with 2 CPU cores); marljax runs its seeds as one
program.

    python bench/bench_spread.py --jaxmarl-src PATH --steps 2000000 --seeds 5 [--json PATH]
"""

from __future__ import annotations

import time

import jax
import numpy as np
from harness import (
    TRAIN_SEEDS,
    Options,
    Result,
    case,
    final_score_notes,
    jaxmarl_baseline,
    main_with_steps,
    notes_table,
    seeded,
    time_once,
)

from marljax.benchmarks import CELLS
from marljax.benchmarks.suite import experiment_kwargs
from marljax.experiment import Experiment, build

_ARGS = {"steps": 2_000_000}
NUM_ENVS, ROLLOUT, AGENTS = 16, 128, 3


def _steps(opts: Options) -> int:
    return NUM_ENVS * ROLLOUT * 4 if opts.quick else int(_ARGS["steps"])


def _task(steps: int) -> str:
    return f"IPPO MPE simple spread (E={NUM_ENVS}, T={ROLLOUT}, {steps / 1e6:g}M steps)"


@case("spread_ippo/marljax")
def marljax_spread(opts: Options) -> list[Result]:
    steps = _steps(opts)
    n = TRAIN_SEEDS["n"]
    built = build(Experiment(seeds=1, **experiment_kwargs(CELLS["mpe/simple_spread:ippo"], steps)))
    hparams = jax.tree.map(lambda x: x[0], built.hparams)
    fn, key = seeded(built.trainer.train, 1)
    compile_s, run_s, out, _ = time_once(fn, key, hparams)
    ret = np.asarray(out[1]["episode_return"]).reshape(n, -1)
    config = built.trainer.config
    env_steps = n * config.num_updates * config.steps_per_update
    notes = {**final_score_notes(ret, "final_return"), "num_updates": config.num_updates}
    return [Result(_task(steps), "marljax", compile_s, run_s, env_steps, notes=notes)]


@case("spread_ippo/jaxmarl")
def jaxmarl_spread(opts: Options) -> list[Result]:
    steps = _steps(opts)
    n = TRAIN_SEEDS["n"]
    module, base = jaxmarl_baseline("baselines/IPPO", "ippo_ff_mpe", ["config/ippo_ff_mpe.yaml"])
    module.wandb.log = lambda *a, **k: None  # its per-update io_callback
    config = {**base, "TOTAL_TIMESTEPS": steps, "ANNEAL_LR": False}
    train = module.make_train(dict(config))
    keys = jax.random.split(jax.random.PRNGKey(0), n)
    compile_s, run_s, out, compiled = time_once(train, keys[0])
    curves = [np.asarray(out["metrics"]["returned_episode_returns"]).reshape(-1) / AGENTS]
    for k in keys[1:]:
        t = time.perf_counter()
        out = jax.block_until_ready(compiled(k))
        run_s += time.perf_counter() - t
        curves.append(np.asarray(out["metrics"]["returned_episode_returns"]).reshape(-1) / AGENTS)
    updates = steps // ROLLOUT // NUM_ENVS
    notes = {**final_score_notes(np.stack(curves), "final_return"), "num_updates": updates,
             "seeds_run": "one after the other"}  # fmt: skip
    return [Result(_task(steps), "jaxmarl", compile_s, run_s, n * updates * ROLLOUT * NUM_ENVS,
                   notes=notes)]  # fmt: skip


if __name__ == "__main__":
    main_with_steps(
        ["spread_ippo/jaxmarl", "spread_ippo/marljax"],
        __doc__.splitlines()[0],
        _ARGS,
        after=lambda results: notes_table(
            results, "final_return", "return (mean over agents), IQM of the last tenth"
        ),
    )
