"""HASAC vs MAPPO on continuous simple spread at equal environment steps: IQM over seeds.

Cooperative navigation (R. Lowe et al., NeurIPS 2017; `particle/simple_spread_continuous-v0`:
3 agents, 3 landmarks, continuous `[0, 1]^5` actions, 25-step episodes). HASAC (Liu et al. 2024,
ICLR) with the HARL `hasac.yaml` settings except the network width, batch, buffer and warm-up
(scaled down for a CPU budget); MAPPO (Yu et al. 2022) with tanh-squashed Gaussian actions, a
centralised critic and marljax's PPO defaults. Both see the same number of environment steps
with the same env batch and rollout length.

Score of a run: mean per-agent return of the training episodes that ended in the last 10% of its
updates. Aggregates over seeds: interquartile mean (IQM) and mean with 95% stratified-bootstrap
intervals, and the probability that HASAC beats MAPPO (R. Agarwal et al., NeurIPS 2021;
`marljax.evaluation.stats`). Every seed of one algorithm trains in one compiled program.

    python baselines/hasac_spread.py [--seeds 4] [--steps 60000] [--utd 1.0]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import jax
import numpy as np

import marljax
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.agents.sac import SACConfig, SACHParams, make_sac
from marljax.evaluation import stats
from marljax.train import TrainConfig, broadcast_hparams, make_train, sweep

ENV = "particle/simple_spread_continuous-v0"
NUM_ENVS, ROLLOUT = 8, 25
HASAC = SACConfig(
    hidden_sizes=(64, 64), batch_size=256, buffer_size=50_000, warmup_steps=2000, utd_ratio=1.0
)
MAPPO = PPOConfig(
    critic_input="global", parameter_mode="shared_id", hidden_sizes=(64, 64), tanh_squash=True
)


def train(name: str, seeds: int, steps: int, utd: float) -> tuple[np.ndarray, float]:
    """`[S]` final scores of `name` and the wall-clock seconds (compile included)."""
    env, params = marljax.make(ENV)
    if name == "hasac":
        cfg = dataclasses.replace(HASAC, utd_ratio=utd)
        agent, hp = make_sac(cfg, env, params), SACHParams()
    else:
        agent, hp = make_ppo(MAPPO, env, params), PPOHParams()
    trainer = make_train(TrainConfig(NUM_ENVS, ROLLOUT, steps), env, agent, params)
    t0 = time.perf_counter()
    _, metrics = sweep(trainer, jax.random.split(jax.random.PRNGKey(0), seeds),
                       broadcast_hparams(hp, 1))  # fmt: skip
    ret = np.asarray(metrics["episode_return"])[0]  # [S, U]
    elapsed = time.perf_counter() - t0
    tail = max(1, ret.shape[1] // 10)
    return np.nanmean(ret[:, -tail:], axis=1), elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4, help="seeds per algorithm")
    parser.add_argument("--steps", type=int, default=60_000, help="env steps per seed")
    parser.add_argument(
        "--utd", type=float, default=HASAC.utd_ratio, help="HASAC gradient steps per env step"
    )
    args = parser.parse_args(argv)
    scores = {}
    for name in ("hasac", "mappo"):
        scores[name], elapsed = train(name, args.seeds, args.steps, args.utd)
        print(f"{name}: {args.steps} env steps x {args.seeds} seeds in {elapsed:.0f} s; final "
              "per-seed scores " + ", ".join(f"{s:.2f}" for s in scores[name]))  # fmt: skip
    agg = stats.aggregate_metrics(
        jax.random.PRNGKey(0), {k: v[:, None] for k, v in scores.items()}, ("iqm", "mean")
    )
    for name, res in agg.items():
        for metric, iv in res.items():
            print(f"{name:6s} {metric:4s} {float(iv.point):8.2f}  95% CI "
                  f"[{float(iv.low):.2f}, {float(iv.high):.2f}]")  # fmt: skip
    poi = stats.probability_of_improvement_ci(
        jax.random.PRNGKey(1), scores["hasac"][:, None], scores["mappo"][:, None]
    )
    print(f"P(HASAC > MAPPO) = {float(poi.point):.2f}  95% CI "
          f"[{float(poi.low):.2f}, {float(poi.high):.2f}]")  # fmt: skip


if __name__ == "__main__":
    main()
