"""HASAC vs MAPPO on continuous simple spread at equal environment steps: IQM over seeds.

Cooperative navigation (R. Lowe et al., NeurIPS 2017; `particle/simple_spread_continuous-v0`:
3 agents, 3 landmarks, continuous `[0, 1]^5` actions, 25-step episodes). HASAC (Liu et al. 2024,
ICLR) with the algorithm settings HARL tuned for this task (`--preset harl_mpe`, from HARL's
`tuned_configs/pettingzoo_mpe/simple_spread_v2-continuous/hasac/config.json`: learned
temperature starting at 1, MSE critic loss, no ValueNorm, 20-step returns, lr 5e-4, Polyak
0.005, one gradient step per vectorised env step) or the generic `hasac.yaml` defaults
(`--preset harl`: fixed temperature 1e-3, Huber loss, ValueNorm); the network width, batch,
buffer and warm-up are scaled down for a CPU budget. MAPPO (Yu et al. 2022): shared actor with
agent id, tanh-squashed Gaussian, centralised critic on the same global state, marljax's PPO
defaults. Both see the same number of environment steps with the same env batch and rollout.

Scores per run (both algorithms):
- `train`: mean per-agent return of the training episodes that ended in the last 10% of updates
  (stochastic policies; an entropy-regularised policy pays for its exploration here);
- `greedy`: mean per-agent return of the final policies' deterministic actions (the policies'
  modes, `act(..., greedy=True)`: the tanh of the Gaussian mean for both), 16 fresh envs x 100
  steps, as HARL evaluates.
Aggregates over seeds: interquartile mean (IQM) and mean with 95% stratified-bootstrap intervals,
and the probability that HASAC beats MAPPO (R. Agarwal et al., NeurIPS 2021;
`marljax.evaluation.stats`). Every seed of one algorithm trains in one compiled program.

    python baselines/hasac_spread.py [--seeds 4] [--steps 200000] [--utd 1.0] [--preset harl_mpe]
        [--algos hasac,mappo]  (masac: HASAC with the simultaneous update)
        [--results FILE]  (every algorithm's per-seed train and greedy scores, JSON)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import jax
import numpy as np

import marljax
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.agents.sac import SACConfig, make_sac, preset
from marljax.evaluation import stats
from marljax.evaluation.rollout import evaluate_policy
from marljax.shell.result_files import write_results
from marljax.training import TrainConfig, broadcast_hparams, make_train, sweep

ENV = "particle/simple_spread_continuous-v0"
NUM_ENVS, ROLLOUT = 8, 25
#: CPU-budget scaling of HARL's (256, 256) MLP, batch 1000, 1M buffer and 10k warm-up steps.
SCALED = dict(hidden_sizes=(64, 64), batch_size=256, buffer_size=100_000, warmup_steps=2000)
ALGOS = ("hasac", "masac", "mappo")
MAPPO = PPOConfig(
    critic_input="global", parameter_mode="shared_id", hidden_sizes=(64, 64), tanh_squash=True
)


def train(
    name: str,
    seeds: int,
    steps: int,
    utd: float,
    preset_name: str,
    env_id: str = ENV,
    used_entries_only: bool = False,
):
    """Train `name` (hasac, masac or mappo) on `env_id` for `seeds` seeds in one program
    (`used_entries_only`: `SACConfig.used_entries_only` for HASAC and MASAC).

    Returns `([S] train scores, [S] greedy scores, wall seconds incl. compile, final metrics)`.
    MASAC is HASAC's config and hyperparameters with the simultaneous update
    (`SACConfig.sequential=False`).
    """
    if name not in ALGOS:
        raise ValueError(f"unknown algorithm {name!r}; choose from {', '.join(ALGOS)}")
    env, params = marljax.make(env_id)
    if name in ("hasac", "masac"):
        overrides, hp = preset(preset_name)
        overrides.update(SCALED, utd_ratio=utd, sequential=name == "hasac")
        overrides.update(used_entries_only=used_entries_only)
        agent = make_sac(SACConfig(**overrides), env, params)
    else:
        agent, hp = make_ppo(MAPPO, env, params), PPOHParams()
    trainer = make_train(TrainConfig(NUM_ENVS, ROLLOUT, steps), env, agent, params)
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    t0 = time.perf_counter()
    states, metrics = sweep(trainer, keys, broadcast_hparams(hp, 1))
    ev = jax.jit(
        jax.vmap(lambda s, k: evaluate_policy(env, params, agent, s, hp, k)["episode_return"])
    )(
        jax.tree.map(lambda x: x[0], states.agent_state),
        jax.random.split(jax.random.PRNGKey(123), seeds),
    )
    elapsed = time.perf_counter() - t0
    ret = np.asarray(metrics["episode_return"])[0]  # [S, U]
    tail = max(1, ret.shape[1] // 10)
    last = {k: np.asarray(v)[0, :, -tail:].mean() for k, v in metrics.items() if k in
            ("alpha", "entropy", "critic_loss")}  # fmt: skip
    return np.nanmean(ret[:, -tail:], axis=1), np.asarray(ev), elapsed, last


def parse_args(
    argv: list[str] | None, doc: str, steps: int, utd: float, algos: str
) -> argparse.Namespace:
    """The command line of this script and of `hasac_speaker_listener.py` (their defaults)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4, help="seeds per algorithm")
    parser.add_argument("--steps", type=int, default=steps, help="env steps per seed")
    parser.add_argument(
        "--utd", type=float, default=utd, help="HASAC gradient steps per vectorised env step"
    )
    parser.add_argument("--preset", default="harl_mpe", help="HASAC preset (marljax.agents.sac)")
    parser.add_argument("--algos", default=algos, help="comma-separated, from " + ", ".join(ALGOS))
    parser.add_argument(
        "--used-entries-only",
        action="store_true",
        help="HASAC/MASAC: entropy over the action entries the env reads (SACConfig)",
    )
    parser.add_argument("--results", help="write every algorithm's per-seed scores (JSON)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    compare(ENV, parse_args(argv, __doc__, steps=200_000, utd=1.0, algos="hasac,mappo"))


def compare(env_id: str, args: argparse.Namespace) -> None:
    """Train every algorithm of `args.algos` on `env_id` and print per-seed and aggregate scores."""
    train_scores, greedy_scores, rows = {}, {}, []
    for name in args.algos.split(","):
        tr, gr, elapsed, last = train(
            name, args.seeds, args.steps, args.utd, args.preset, env_id, args.used_entries_only
        )
        train_scores[name], greedy_scores[name] = tr, gr
        extra = "".join(f", final {k} {v:.3g}" for k, v in sorted(last.items()))
        print(
            f"{name}: {args.steps} env steps x {args.seeds} seeds in {elapsed:.0f} s{extra}",
            flush=True,
        )
        print("  train  per seed: " + ", ".join(f"{s:.2f}" for s in tr))
        print("  greedy per seed: " + ", ".join(f"{s:.2f}" for s in gr), flush=True)
        mode = MAPPO.parameter_mode if name == "mappo" else SACConfig().parameter_mode
        rows.append({"algo": name, "parameter_mode": mode, "seconds": elapsed,
                     "final": {k: float(v) for k, v in last.items()},
                     "per_seed": {"train": tr, "greedy": gr}})  # fmt: skip
    for label, scores in (("train", train_scores), ("greedy", greedy_scores)):
        print(stats.format_comparison(jax.random.PRNGKey(0), scores, label=f"{label:6s}"))
    if args.results:
        config = {"env": env_id, "seeds": args.seeds, "env_steps_per_seed": args.steps,
                  "utd": args.utd, "preset": args.preset, "scaled": SCALED,
                  "used_entries_only": args.used_entries_only, "num_envs": NUM_ENVS,
                  "rollout_len": ROLLOUT, "train_score": "mean return of the last 10% of "
                  "updates' training episodes", "greedy_score": "evaluate_policy, greedy"}  # fmt: skip
        script = "baselines/" + os.path.basename(sys.argv[0])
        write_results(args.results, script, config, rows)


if __name__ == "__main__":
    main()
