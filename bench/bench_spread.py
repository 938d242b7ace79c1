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

import numpy as np
from harness import (
    Options,
    Result,
    TrainSteps,
    case,
    jaxmarl_baseline,
    jaxmarl_seeds_in_turn,
    main_with_steps,
    marljax_cell_training,
)

NUM_ENVS, ROLLOUT, AGENTS = 16, 128, 3
STEPS = TrainSteps(2_000_000, quick=NUM_ENVS * ROLLOUT * 4)


def _task(steps: int) -> str:
    return f"IPPO MPE simple spread (E={NUM_ENVS}, T={ROLLOUT}, {steps / 1e6:g}M steps)"


@case("spread_ippo/marljax")
def marljax_spread(opts: Options) -> list[Result]:
    steps = STEPS(opts)
    return marljax_cell_training(
        "mpe/simple_spread:ippo",
        steps,
        _task(steps),
        metric="episode_return",
        score="final_return",
    )


@case("spread_ippo/jaxmarl")
def jaxmarl_spread(opts: Options) -> list[Result]:
    steps = STEPS(opts)
    module, base = jaxmarl_baseline("baselines/IPPO", "ippo_ff_mpe", ["config/ippo_ff_mpe.yaml"])
    module.wandb.log = lambda *a, **k: None  # its per-update io_callback
    config = {**base, "TOTAL_TIMESTEPS": steps, "ANNEAL_LR": False}
    train = module.make_train(dict(config))

    def returns(out) -> np.ndarray:  # per update, mean over agents
        return np.asarray(out["metrics"]["returned_episode_returns"]).reshape(-1) / AGENTS

    return jaxmarl_seeds_in_turn(
        train, returns, steps, ROLLOUT * NUM_ENVS, _task(steps), score="final_return"
    )


if __name__ == "__main__":
    main_with_steps(
        ["spread_ippo/jaxmarl", "spread_ippo/marljax"],
        __doc__.splitlines()[0],
        STEPS,
        notes=("final_return", "return (mean over agents), IQM of the last tenth"),
    )
