"""TransfQMIX training on MPE simple spread: marljax vs JaxMARL's transf_qmix.py, same run.

Task: cooperative navigation, 3 agents, 3 landmarks, discrete actions, 25-step episodes
(`particle/simple_spread-v0` here, `MPE_simple_spread_v3` in JaxMARL 0.2.0), observations and
states as entity tokens (JaxMARL's `TransformersCTRolloutManager`; `SimpleSpread.entity_obs` /
`entity_state` here, the same features).

jaxmarl: `baselines/QLearning/transf_qmix.py` from a JaxMARL source checkout, run unmodified with
its own configuration files (`config/config.yaml` + `config/alg/transf_qmix_mpe.yaml`): 8 envs,
25-step rollouts from a fresh reset, a flashbax buffer of 5000 rollouts, batches of 32, one
gradient step per rollout, transformers of width 32, 2 layers x 8 heads, ff 128, Performer fast
attention, BatchNorm of inputs and embeddings, Adam lr 1e-3, TD(lambda=0.6), gamma 0.9, target
copied every 200 updates. Its online wandb report is switched off (`WANDB_ONLINE_REPORT`), and
its greedy test runs only at the end of the second (return) run. The checkout's path comes from
`--jaxmarl-src` or `$JAXMARL_SRC`. The script calls `jax.tree_leaves`, which jax 0.10 removed;
the benchmark points it at `jax.tree.leaves` before running it (the only change).

marljax: `make_transf_qmix` with the `jaxmarl` preset (`marljax.agents.transf_qmix.PRESETS`) and
the same sizes (8 envs, 25-step rollouts stored as one sequence, buffer 5000, batch 32). It
differs in: exact softmax attention (JaxMARL: Performer), LayerNorm of the embeddings (JaxMARL:
BatchNorm), and epsilon annealed over the same env steps.

Timing: one fused training program per framework (compile apart from run), no evaluation inside.
Return: greedy evaluation after training, the episode return summed over agents (JaxMARL: its own
greedy test of 32 episodes at the end; ours: `evaluate_policy` over 512 episodes).

    python bench/bench_transf_qmix.py --jaxmarl-src PATH [--steps 40000] [--json PATH] [--quick]
"""

from __future__ import annotations

import jax
import numpy as np
from harness import (
    Options,
    Result,
    TrainSteps,
    case,
    jaxmarl_training,
    main_with_steps,
    marljax_preset_training,
)

from marljax.agents.transf_qmix import TransfQMIXConfig, TransfQMIXHParams, make_transf_qmix

EPISODE = 25
STEPS = TrainSteps(40_000, quick=8 * 25 * 10)


def _task(steps: int) -> str:
    return f"TransfQMIX MPE spread, {steps:,} steps"


def _last_test_return(out) -> float:
    return float(np.asarray(out["metrics"]["test_metrics"]["test_returns"])[-1].mean())


@case("transf_qmix_mpe/marljax")
def marljax_transf_qmix(opts: Options) -> list[Result]:
    steps = STEPS(opts)
    defaults = TransfQMIXConfig(), TransfQMIXHParams()
    return marljax_preset_training(
        "transf_qmix", make_transf_qmix, *defaults, steps, _task(steps), EPISODE
    )


@case("transf_qmix_mpe/jaxmarl")
def jaxmarl_transf_qmix(opts: Options) -> list[Result]:
    steps = STEPS(opts)
    files = ["config/config.yaml", "config/alg/transf_qmix_mpe.yaml"]
    if not hasattr(jax, "tree_leaves"):  # the script calls jax.tree_leaves, gone in jax 0.10
        jax.tree_leaves = jax.tree.leaves
    quiet = {"WANDB_ONLINE_REPORT": False}
    return jaxmarl_training(
        "transf_qmix",
        files,
        steps,
        _task(steps),
        # its greedy test runs every TEST_INTERVAL steps: never while timed, at the end after
        timing={**quiet, "TEST_INTERVAL": 2**30},
        test={**quiet, "TEST_INTERVAL": steps},
        greedy_return=_last_test_return,
    )


if __name__ == "__main__":
    main_with_steps(
        ["transf_qmix_mpe/jaxmarl", "transf_qmix_mpe/marljax"],
        __doc__.splitlines()[0],
        STEPS,
        notes=("greedy_return", "greedy return (sum over agents, after training)"),
    )
