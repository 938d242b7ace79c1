"""Recurrent IPPO against a population of RoShamBo bots, scored by population-based evaluation.

Lanctot et al. (2023) propose repeated Rock-Paper-Scissors against 43 tournament bots as a
benchmark, scoring an agent by its population return (mean return against a uniformly drawn
bot), its within-population exploitability (the best return any bot earns against it) and their
difference, the aggregate score. Here a GRU policy (IPPO, `recurrent=True`) trains against the
bots of `marljax.envs.matrix.rps_bots` (each episode draws one bot; the agent only sees the
previous joint move, so it must tell the bots apart from their play), then plays every bot
separately; the per-bot table and the three metrics are printed, next to those of a few bots
from the bot-vs-bot cross-table.

M. Lanctot et al., "Population-based Evaluation in Repeated Rock-Paper-Scissors as a Benchmark
for Multiagent Reinforcement Learning", TMLR 2023 (arXiv:2303.03196).

    python baselines/rps_population.py [--rounds 50] [--updates 400] [--seeds 1]
        [--train-bots rockbot,copybot,...] [--episodes 64]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import marljax
from marljax.agents import PPOHParams, ippo
from marljax.evaluation.population import (
    bot_crosstable,
    crosstable_metrics,
    evaluate_population,
    format_population_table,
)
from marljax.train import TrainConfig, make_train

REFERENCE_BOTS = ("randbot", "freqbot2", "markov2", "iocaine_lite")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=50, help="rounds per episode")
    parser.add_argument("--updates", type=int, default=400, help="PPO updates")
    parser.add_argument("--envs", type=int, default=32, help="parallel environments")
    parser.add_argument("--seeds", type=int, default=1, help="independent runs (one at a time)")
    parser.add_argument("--episodes", type=int, default=64, help="evaluation episodes per bot")
    parser.add_argument(
        "--train-bots", default="", help="comma-separated training bots (default: all of them)"
    )
    args = parser.parse_args()

    env, params = marljax.make("matrix/rrps_population-v0", num_rounds=args.rounds)
    train_bots = [b for b in args.train_bots.split(",") if b] or list(env.bots)
    weights = jnp.asarray([float(b in train_bots) for b in env.bots])
    train_params = params.replace(bot_weights=weights)
    agent = ippo(
        env,
        train_params,
        recurrent=True,
        hidden_sizes=(64,),
        gru_size=64,
        num_minibatches=4,
        num_epochs=4,
        parameter_mode="shared",
    )
    config = TrainConfig(
        num_envs=args.envs,
        rollout_len=args.rounds,
        total_env_steps=args.envs * args.rounds * args.updates,
    )
    hparams = PPOHParams(lr=1e-3, gamma=0.99, ent_coef=0.01)
    trainer = make_train(config, env, agent, train_params)
    train = jax.jit(trainer.train)
    print(
        f"recurrent IPPO vs {len(train_bots)} training bots, {args.rounds} rounds per episode, "
        f"{config.num_updates} updates x {config.steps_per_update} env steps"
    )

    for seed in range(args.seeds):
        t0 = time.perf_counter()
        state, metrics = train(jax.random.PRNGKey(seed), hparams)
        returns = np.asarray(metrics["episode_return"])
        t_train = time.perf_counter() - t0
        report = evaluate_population(
            env,
            agent,
            state.agent_state,
            hparams,
            jax.random.PRNGKey(1000 + seed),
            params,
            num_episodes=args.episodes,
        )
        print(
            f"\nseed {seed}: training return first/last update {returns[0]:.2f} / "
            f"{returns[-1]:.2f} ({t_train:.0f} s incl. compile)"
        )
        print(format_population_table(report, title=f"seed {seed}, trained recurrent IPPO"))

    table = np.asarray(
        bot_crosstable(
            jax.random.PRNGKey(7),
            env.bots,
            num_episodes=max(1, args.episodes // 4),
            num_rounds=args.rounds,
            row_names=REFERENCE_BOTS,
        )
    )
    ref = {k: np.asarray(v) for k, v in crosstable_metrics(table).items()}
    print(f"\nreference bots vs the same population ({args.rounds} rounds):")
    print(f"  {'bot':<14}{'PopReturn':>10}{'WithinExpl':>12}{'AggScore':>10}")
    for i, name in enumerate(REFERENCE_BOTS):
        print(
            f"  {name:<14}{ref['population_return'][i]:10.2f}"
            f"{ref['within_population_exploitability'][i]:12.2f}{ref['aggregate_score'][i]:10.2f}"
        )


if __name__ == "__main__":
    main()
