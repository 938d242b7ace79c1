"""QMIX training on MPE simple spread: marljax vs JaxMARL's recurrent QMIX, matched settings.

Task: cooperative navigation, 3 agents, 3 landmarks, discrete actions, 25-step episodes
(`particle/simple_spread-v0` here, `MPE_simple_spread_v3` in JaxMARL 0.2.0).

jaxmarl: `baselines/QLearning/qmix_rnn.py` from a JaxMARL source checkout, run unmodified with its
own configuration files (`config/config.yaml` + `config/alg/ql_rnn_mpe.yaml`): 8 envs, rollouts
of 26 steps from a fresh reset, a flashbax buffer of 5000 rollouts, batches of 32, one gradient
step per rollout, GRU agents (64) with agent ids, mixer 32 / hypernet 128 / init scale 0.001,
RAdam lr 0.005 decayed linearly, grad clip 25, gamma 0.9, target copied every 200 updates,
epsilon 1 -> 0.05 over 10% of the updates, learning from 10,000 steps. The checkout's path comes
from `--jaxmarl-src` or `$JAXMARL_SRC` (the scripts are not in JaxMARL's pip package; they are
imported from the checkout, never copied here).

marljax: `make_q_learner` with the `jaxmarl` preset (`marljax.agents.qlearning.PRESETS`) and the
same sizes: 8 envs, rollouts of 25 steps stored as one 25-step sequence (one episode), buffer
5000 sequences, batches of 32, one gradient step per rollout, lr decayed over the run, epsilon
annealed over 10% of the steps, team reward summed over agents like JaxMARL's rollout manager.
Differences we keep: our targets bootstrap at the time limit (JaxMARL treats it as terminal), and
our rollouts are 25 steps (JaxMARL's 26, so it does 4% fewer gradient steps per env step).

Timing: one fused training program per framework (compile apart from run), no evaluation inside.
Return: greedy evaluation after training, the episode return summed over agents, averaged over
512 episodes (JaxMARL: its own greedy test at the end of a second, identical run with
`TEST_DURING_TRAINING`; ours: `marljax.evaluation.rollout.evaluate_policy` with epsilon 0).

    python bench/bench_qmix.py --jaxmarl-src PATH [--steps 1000000] [--json PATH] [--quick]
"""

from __future__ import annotations

import jax
from harness import (
    TRAIN_SEEDS,
    Options,
    Result,
    TrainSteps,
    case,
    data_parallel_framework,
    data_parallel_train,
    in_subprocess,
    jaxmarl_training,
    main_with_steps,
    seeded,
    timed,
)

import marljax
from marljax.agents.qlearning import QConfig, make_q_learner, preset
from marljax.evaluation.rollout import evaluate_policy
from marljax.training.train import TrainConfig, make_train

NUM_ENVS, EPISODE = 8, 25
STEPS = TrainSteps(1_000_000, quick=8 * 26 * 60)


def _task(steps: int) -> str:
    return f"QMIX MPE simple spread (3 agents, E={NUM_ENVS}, {steps / 1e6:g}M env steps)"


def _trainer(steps: int):
    env, params = marljax.make("particle/simple_spread-v0")
    cfg_over, hp = preset("jaxmarl")
    config = TrainConfig(num_envs=NUM_ENVS, rollout_len=EPISODE, total_env_steps=steps)
    cfg = QConfig(
        **{**cfg_over, "sequence_len": EPISODE, "team_reward": "sum"},
        lr_decay_steps=config.num_updates,
    )
    hp = hp.replace(eps_anneal_steps=0.1 * steps)
    agent = make_q_learner(cfg, env, params)
    return make_train(config, env, agent, params), hp


def _run(steps: int, data_parallel: bool, framework: str) -> list[Result]:
    trainer, hp = _trainer(steps)
    fn = data_parallel_train(trainer) if data_parallel else trainer.train
    fn, key = seeded(fn, 1)
    t = timed(fn, key, hp, repeats=1, first_call=False)
    state, _ = t.output
    agent_state = state.agent_state
    if data_parallel or TRAIN_SEEDS["n"] > 1:  # evaluate device 0's / seed 0's parameters
        agent_state = jax.tree.map(lambda x: x[0], agent_state)
    greedy = hp.replace(eps_start=0.0, eps_finish=0.0)
    env, params, agent = trainer.env, trainer.env_params, trainer.agent
    ev = jax.jit(evaluate_policy, static_argnums=(0, 2, 6, 7))(
        env, params, agent, agent_state, greedy, jax.random.PRNGKey(1), 512, EPISODE
    )
    ret = float(ev["episode_return"]) * env.num_agents
    config = trainer.config
    return [
        t.result(
            _task(steps),
            framework,
            TRAIN_SEEDS["n"] * config.num_updates * config.steps_per_update,
            notes={
                "greedy_return": ret,
                "num_updates": config.num_updates,
                "seeds": TRAIN_SEEDS["n"],
                "return_of": "seed 0",
            },
        )
    ]


@case("qmix_mpe/marljax")
def marljax_qmix(opts: Options) -> list[Result]:
    return _run(STEPS(opts), False, "marljax")


@case("qmix_mpe/marljax_dp")
def marljax_qmix_data_parallel(opts: Options) -> list[Result]:
    """The same run with envs, replay and learner split over every device."""
    return _run(STEPS(opts), True, data_parallel_framework())


@case("qmix_mpe/marljax_2dev")
def marljax_qmix_two_devices(opts: Options) -> list[Result]:
    """`qmix_mpe/marljax_dp` in a fresh process that sees the 2-core CPU as 2 host devices."""
    return in_subprocess(__file__, "qmix_mpe/marljax_dp", opts, 2, ["--steps", str(STEPS(opts))])


@case("qmix_mpe/jaxmarl")
def jaxmarl_qmix(opts: Options) -> list[Result]:
    steps = STEPS(opts)
    files = ["config/config.yaml", "config/alg/ql_rnn_mpe.yaml"]
    return jaxmarl_training(
        "qmix_rnn", files, steps, _task(steps), notes={"seeds": TRAIN_SEEDS["n"]}
    )


if __name__ == "__main__":
    main_with_steps(
        ["qmix_mpe/jaxmarl", "qmix_mpe/marljax", "qmix_mpe/marljax_2dev"],
        __doc__.splitlines()[0],
        STEPS,
        notes=("greedy_return", "greedy return (sum over agents, 512 episodes)"),
    )
