"""TransfQMIX vs QMIX on MPE simple spread at equal environment steps: IQM over seeds.

Cooperative navigation (`particle/simple_spread-v0`: 3 agents, 3 landmarks, discrete actions,
25-step episodes). TransfQMIX (M. Gallici, M. Martin and I. Masmitja, "TransfQMix: Transformers
for Leveraging the Graph Structure of Multi-Agent Reinforcement Learning Problems", AAMAS 2023)
with JaxMARL's `transf_qmix_mpe.yaml` settings (the `jaxmarl` preset: transformer agents over
entity tokens, transformer mixer, width 32, Adam 1e-3, TD(lambda = 0.6), gamma 0.9); QMIX with
JaxMARL's `ql_rnn_mpe.yaml` settings (the QMIX `jaxmarl` preset: GRU agents with ids, RAdam
5e-3, 1-step targets, learning from 10k steps). Both: 8 envs x 25 steps per update, one gradient
step per update, team reward summed over agents, epsilon 1 -> 0.05 over half the run (both
presets anneal over more steps than this small budget has), every seed of one algorithm in one
compiled program.

Scores per run: the greedy team return (sum over agents) of the final policy, 512 episodes
(`evaluate_policy`). Aggregates over seeds: IQM and mean with 95% stratified-bootstrap intervals
and the probability that TransfQMIX beats QMIX (Agarwal et al., NeurIPS 2021;
`marljax.evaluation.stats`).

    python baselines/transf_qmix_spread.py [--seeds 3] [--steps 100000]

`--results` writes every algorithm's per-seed greedy team return (and its compile and run
seconds) for the generated tables:

    python baselines/transf_qmix_spread.py --seeds 4 --steps 40000 \\
        --results baselines/results/transf_qmix_spread.json
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

import marljax
from marljax.agents import algo_spec, preset
from marljax.core import config as cfg
from marljax.evaluation import stats
from marljax.evaluation.rollout import evaluate_policy
from marljax.shell.result_files import write_results
from marljax.training.train import TrainConfig, make_train

ENV = "particle/simple_spread-v0"
EPISODE = 25


def train(algo: str, seeds: int, steps: int):
    """`([S] greedy team returns, compile s, run s)` of `algo`'s `jaxmarl` preset."""
    env, params = marljax.make(ENV)
    spec, p = algo_spec(algo), preset(algo, "jaxmarl")
    config = cfg.replace_checked(spec.config_cls(**spec.config_defaults), p.config, "agent")
    config = cfg.replace_checked(config, {"team_reward": "sum", "sequence_len": EPISODE}, "agent")
    hp = cfg.replace_checked(
        spec.hparams_cls(), {**p.hparams, "eps_anneal_steps": 0.5 * steps}, "hparams"
    )
    agent = spec.factory(config, env, params)
    trainer = make_train(TrainConfig(8, EPISODE, steps), env, agent, params)
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    t0 = time.perf_counter()
    program = jax.jit(jax.vmap(trainer.train, in_axes=(0, None))).lower(keys, hp).compile()
    t1 = time.perf_counter()
    states, _ = jax.block_until_ready(program(keys, hp))
    t2 = time.perf_counter()
    evaluate = jax.vmap(lambda s, k: evaluate_policy(env, params, agent, s, hp, k, 512, EPISODE))
    ev = jax.jit(evaluate)(states.agent_state, jax.random.split(jax.random.PRNGKey(123), seeds))
    return np.asarray(ev["episode_return"]) * env.num_agents, t1 - t0, t2 - t1


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds per algorithm")
    parser.add_argument("--steps", type=int, default=100_000, help="env steps per seed")
    parser.add_argument("--results", help="write every algorithm's per-seed results (JSON)")
    args = parser.parse_args(argv)
    scores, rows = {}, []
    for algo in ("transf_qmix", "qmix"):
        greedy, compile_s, run_s = train(algo, args.seeds, args.steps)
        scores[algo] = greedy
        rate = args.seeds * args.steps / run_s
        print(f"{algo}: {args.steps} env steps x {args.seeds} seeds: compile {compile_s:.0f} s, "
              f"run {run_s:.0f} s = {rate:,.0f} env steps/s")  # fmt: skip
        print("  greedy team return per seed: " + ", ".join(f"{s:.2f}" for s in greedy))
        mode = preset(algo, "jaxmarl").config.get("parameter_mode", "shared_id")
        rows.append({"algo": algo, "preset": "jaxmarl", "parameter_mode": mode,
                     "compile_s": compile_s, "run_s": run_s,
                     "per_seed": {"greedy_team_return": greedy}})  # fmt: skip
    agg = stats.aggregate_metrics(
        jax.random.PRNGKey(0), {k: v[:, None] for k, v in scores.items()}, ("iqm", "mean")
    )
    for name, res in agg.items():
        for metric, iv in res.items():
            print(f"{name:11s} {metric:4s} {float(iv.point):8.2f}  95% CI "
                  f"[{float(iv.low):.2f}, {float(iv.high):.2f}]")  # fmt: skip
    poi = stats.probability_of_improvement_ci(
        jax.random.PRNGKey(1), scores["transf_qmix"][:, None], scores["qmix"][:, None]
    )
    print(f"P(TransfQMIX > QMIX) = {float(poi.point):.2f}  95% CI "
          f"[{float(poi.low):.2f}, {float(poi.high):.2f}]")  # fmt: skip
    if args.results:
        config = {"env": ENV, "seeds": args.seeds, "env_steps_per_seed": args.steps,
                  "num_envs": 8, "rollout_len": EPISODE, "team_reward": "sum",
                  "eps_anneal_steps": 0.5 * args.steps, "eval_episodes": 512, "greedy": True}  # fmt: skip
        write_results(args.results, "baselines/transf_qmix_spread.py", config, rows)


if __name__ == "__main__":
    main()
