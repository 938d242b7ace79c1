"""Advantage Alignment (neural, PPO) vs IPPO on the Coin Game, seeds and beta in one program.

Duque et al., "Advantage Alignment Algorithms", ICLR 2025 (and the seed paper "Learning Robust
Social Strategies with Large Language Models", which trains with it) report that Advantage
Alignment agents on the Coin Game learn to take mostly their own coins, where naive learners
take every coin. Here both learners are `marljax.population.make_aa_ppo` on
`social/coin_game-v0` (2 players, 3x3 torus, 50-step episodes): `aa_beta = 0` is IPPO exactly
and `aa_beta > 0` Advantage Alignment, the two trained in ONE compiled program (a `vmap` over
beta and seeds). Measured after training with greedy-free (sampled) play over 16 episodes per
seed (`marljax.evaluation.social.evaluate_social`): the own-coin rate (own-colour pickups / all
pickups; 0.5 is colour-blind) and the efficiency, the reward of both agents together per step
(taking a coin of the other's colour earns 1 and costs the owner 2).

    python baselines/aa_coin_game.py                     # 8 seeds, 3M env steps per run
    python baselines/aa_coin_game.py --seeds 4 --steps 500000 --beta 0 0.5 2
    python baselines/aa_coin_game.py --seeds 8 --steps 320000 --results baselines/results/aa_coin_game.json

`--results` writes every learner's per-seed own-coin rate, efficiency and final training return.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import marljax
from marljax.evaluation.social import evaluate_social
from marljax.evaluation.stats import interval_estimate
from marljax.population import AAPPOHParams, make_aa_ppo
from marljax.shell.result_files import write_results
from marljax.training.train import TrainConfig, make_train


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=8)
    p.add_argument("--steps", type=int, default=3_000_000, help="env steps per run")
    p.add_argument("--beta", type=float, nargs="+", default=[0.0, 1.0], help="aa_beta values")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--results", help="write every learner's per-seed results (JSON)")
    args = p.parse_args()

    env, params = marljax.make("social/coin_game-v0")
    agent = make_aa_ppo(env, params)
    train = TrainConfig(num_envs=32, rollout_len=50, total_env_steps=args.steps)
    trainer = make_train(train, env, agent, params)
    betas = jnp.asarray(args.beta, jnp.float32)
    hp = AAPPOHParams(lr=args.lr, gamma=0.96, aa_beta=betas)
    axes = AAPPOHParams(*[None] * 9, aa_beta=0)  # vmap over beta only
    keys = jax.random.split(jax.random.PRNGKey(0), args.seeds)

    def train_and_evaluate(key, hparams):
        key_train, key_eval = jax.random.split(key)
        state, metrics = trainer.train(key_train, hparams)
        social = evaluate_social(env, params, agent, state.agent_state, hparams, key_eval, 16, 50)
        return social, metrics["episode_return"]

    run = jax.jit(jax.vmap(jax.vmap(train_and_evaluate, in_axes=(0, None)), in_axes=(None, axes)))
    start = time.perf_counter()
    social, curve = jax.block_until_ready(run(keys, hp))
    wall = time.perf_counter() - start
    print(
        f"Coin Game 3x3, {args.seeds} seeds x {len(args.beta)} betas, {train.num_updates} "
        f"updates = {train.num_updates * train.steps_per_update:,} env steps per run, one "
        f"program ({wall:.0f} s with compile)\n"
    )
    print("| learner | own-coin rate | efficiency (both agents, per step) | final train return |")
    print("|---|---:|---:|---:|")
    rows = []
    for i, beta in enumerate(args.beta):
        name = "IPPO (aa_beta=0)" if beta == 0 else f"Advantage Alignment (aa_beta={beta:g})"
        cells, per_seed = [], {}
        for metric in ("social/cooperation_rate", "social/efficiency"):
            values = np.asarray(social[metric][i], np.float64).reshape(args.seeds, -1).mean(-1)
            ci = interval_estimate(jax.random.PRNGKey(1), jnp.mean, jnp.asarray(values)[:, None])
            cells.append(f"{float(ci.point):.3f} [{float(ci.low):.3f}, {float(ci.high):.3f}]")
            per_seed[metric] = values
        seed_final = np.nanmean(np.asarray(curve[i])[:, -10:].reshape(args.seeds, -1), axis=-1)
        final = np.nanmean(np.asarray(curve[i])[:, -10:])
        print(f"| {name} | " + " | ".join(cells) + f" | {final:.2f} |")
        rows.append({"learner": name, "aa_beta": beta,
                     "per_seed": {**per_seed, "final_train_return": seed_final}})  # fmt: skip
    if args.results:
        config = {"env": "social/coin_game-v0", "algo": "aa_ppo (make_aa_ppo)",
                  "parameter_mode": "independent", "seeds": args.seeds,
                  "env_steps_per_seed": train.num_updates * train.steps_per_update,
                  "num_envs": train.num_envs, "rollout_len": train.rollout_len, "lr": args.lr,
                  "gamma": 0.96, "betas": args.beta, "eval_episodes": 16}  # fmt: skip
        write_results(args.results, "baselines/aa_coin_game.py", config, rows)


if __name__ == "__main__":
    main()
