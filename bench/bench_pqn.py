"""PQN-VDN training on MPE simple spread: marljax vs JaxMARL's `pqn_vdn_ff.py`, matched settings.

Task: cooperative navigation, 3 agents, 3 landmarks, discrete actions, 25-step episodes
(`particle/simple_spread-v0` here, `MPE_simple_spread_v3` in JaxMARL 0.2.0).

jaxmarl: `baselines/QLearning/pqn_vdn_ff.py` from a JaxMARL source checkout, run unmodified with
its own configuration files (`config/config.yaml` + `config/alg/pqn_vdn_ff_mpe.yaml`): 256 envs x
16 steps per update, 2x256 layer-normalised ReLU Q-network with agent ids, RAdam lr 5e-4, grad
clip 1, gamma 0.9, Q(lambda = 0.3) targets of the VDN sum, 4 epochs of 16 minibatches, epsilon
1 -> 0.1 over 10% of the updates, no replay buffer, no target network. The checkout's path comes
from `--jaxmarl-src` or `$JAXMARL_SRC` (imported from the checkout, never copied here).

marljax: `make_pqn_vdn` with the `jaxmarl` preset (`marljax.agents.pqn.PRESETS`): the same sizes,
team reward summed over agents like JaxMARL's rollout manager. Difference we keep: our targets
bootstrap at the time limit (JaxMARL treats it as terminal).

Timing: one fused training program per framework (compile apart from run), no evaluation inside.
Return: greedy evaluation after training, the episode return summed over agents, averaged over
512 episodes (JaxMARL: its own greedy test at the end of a second, identical run with
`TEST_DURING_TRAINING`; ours: `marljax.evaluation.rollout.evaluate_policy`).

    python bench/bench_pqn.py --jaxmarl-src PATH [--steps 2000000] [--json PATH] [--quick]
"""

from __future__ import annotations

from harness import (
    Options,
    Result,
    TrainSteps,
    case,
    jaxmarl_training,
    main_with_steps,
    marljax_preset_training,
)

from marljax.agents.pqn import PQNConfig, PQNHParams, make_pqn_vdn

EPISODE = 25
STEPS = TrainSteps(2_000_000, quick=256 * 16 * 10)


def _task(steps: int) -> str:
    return f"PQN-VDN MPE simple spread (3 agents, E=256, T=16, {steps / 1e6:g}M env steps)"


@case("pqn_mpe/marljax")
def marljax_pqn(opts: Options) -> list[Result]:
    steps = STEPS(opts)
    defaults = PQNConfig(), PQNHParams()
    hparams = {"eps_anneal_steps": 0.1 * steps}
    return marljax_preset_training(
        "pqn_vdn", make_pqn_vdn, *defaults, steps, _task(steps), EPISODE, hparams=hparams
    )


@case("pqn_mpe/jaxmarl")
def jaxmarl_pqn(opts: Options) -> list[Result]:
    steps = STEPS(opts)
    files = ["config/config.yaml", "config/alg/pqn_vdn_ff_mpe.yaml"]
    return jaxmarl_training("pqn_vdn_ff", files, steps, _task(steps))


if __name__ == "__main__":
    main_with_steps(
        ["pqn_mpe/jaxmarl", "pqn_mpe/marljax"],
        __doc__.splitlines()[0],
        STEPS,
        notes=("greedy_return", "greedy return (sum over agents, 512 episodes)"),
    )
