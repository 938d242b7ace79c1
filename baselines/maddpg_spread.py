"""MADDPG vs MAPPO on continuous simple spread at equal environment steps: IQM over seeds.

Cooperative navigation (R. Lowe et al., "Multi-Agent Actor-Critic for Mixed Cooperative-
Competitive Environments", NeurIPS 2017, the paper that introduced both this task and MADDPG;
`particle/simple_spread_continuous-v0`: 3 agents, 3 landmarks, continuous `[0, 1]^5` actions,
25-step episodes). MADDPG with the paper's settings (`--preset maddpg_paper`: Adam 1e-2, gamma
0.95, tau 0.01, batch 1024, 2x64 ReLU MLPs, one actor and one critic per agent, critics on all
agents' observations and actions, gradient-norm clip 0.5, 25,600 warm-up steps), the buffer
scaled to 100k transitions for memory and `--utd` gradient steps per vectorised env step
(the official code: one per 100 env steps). MAPPO (Yu et al. 2022): shared actor with agent id,
tanh-squashed Gaussian, centralised critic on the same global state, marljax's PPO defaults
(as in `hasac_spread.py`). Both see the same number of environment steps with the same env batch
and rollout; every seed of one algorithm trains in one compiled program.

Scores per run (both algorithms):
- `train`: mean per-agent return of the training episodes that ended in the last 10% of updates;
- `greedy`: mean per-agent return of the final policies' deterministic actions
  (`act(..., greedy=True)`: MADDPG without noise, MAPPO's tanh of the Gaussian mean), 16 fresh
  envs x 100 steps.
Aggregates over seeds: IQM and mean with 95% stratified-bootstrap intervals and the probability
that MADDPG beats MAPPO (R. Agarwal et al., NeurIPS 2021; `marljax.evaluation.stats`). Training
speed: env steps/s of the compiled program (all seeds), compile time apart.

FACMAC (Peng et al. 2021, `--algos maddpg,facmac,mappo`) runs with its `facmac_pp` preset, the
same buffer and `--utd`: MADDPG's actors with a QMIX-mixed factored critic on the team reward.

    python baselines/maddpg_spread.py [--seeds 4] [--steps 200000] [--utd 1.0] [--algos ...]
        [--results baselines/results/maddpg_spread.json]  (per-seed scores, JSON)
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

import marljax
from marljax.agents.facmac import FACMACConfig, make_facmac
from marljax.agents.facmac import preset as facmac_preset
from marljax.agents.maddpg import MADDPGConfig, make_maddpg, preset
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.evaluation import stats
from marljax.evaluation.rollout import evaluate_policy
from marljax.shell.result_files import write_results
from marljax.training.train import TrainConfig, make_train

ENV = "particle/simple_spread_continuous-v0"
NUM_ENVS, ROLLOUT = 8, 25
MAPPO = PPOConfig(
    critic_input="global", parameter_mode="shared_id", hidden_sizes=(64, 64), tanh_squash=True
)


def train(name: str, seeds: int, steps: int, utd: float):
    """`([S] train scores, [S] greedy scores, compile s, run s, final metrics)`."""
    env, params = marljax.make(ENV)
    if name == "maddpg":
        overrides, hp = preset("maddpg_paper")
        overrides.update(buffer_size=100_000, utd_ratio=utd)
        agent = make_maddpg(MADDPGConfig(**overrides), env, params)
    elif name == "facmac":
        overrides, hp = facmac_preset("facmac_pp")
        overrides.update(buffer_size=100_000, utd_ratio=utd)
        agent = make_facmac(FACMACConfig(**overrides), env, params)
    else:
        agent, hp = make_ppo(MAPPO, env, params), PPOHParams()
    trainer = make_train(TrainConfig(NUM_ENVS, ROLLOUT, steps), env, agent, params)
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    t0 = time.perf_counter()
    program = jax.jit(jax.vmap(trainer.train, in_axes=(0, None))).lower(keys, hp).compile()
    t1 = time.perf_counter()
    states, metrics = jax.block_until_ready(program(keys, hp))
    t2 = time.perf_counter()
    evaluate = jax.vmap(lambda s, k: evaluate_policy(env, params, agent, s, hp, k))
    ev = jax.jit(evaluate)(states.agent_state, jax.random.split(jax.random.PRNGKey(123), seeds))
    ret = np.asarray(metrics["episode_return"])  # [S, U]
    tail = max(1, ret.shape[1] // 10)
    last = {k: np.asarray(v)[:, -tail:].mean() for k, v in metrics.items()
            if k in ("critic_loss", "q_mean", "entropy")}  # fmt: skip
    greedy = np.asarray(ev["episode_return"])
    return np.nanmean(ret[:, -tail:], axis=1), greedy, t1 - t0, t2 - t1, last


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4, help="seeds per algorithm")
    parser.add_argument("--steps", type=int, default=200_000, help="env steps per seed")
    parser.add_argument(
        "--utd", type=float, default=1.0, help="MADDPG gradient steps per vectorised env step"
    )
    parser.add_argument(
        "--algos", default="maddpg,mappo", help="comma-separated, from maddpg, facmac, mappo"
    )
    parser.add_argument("--results", help="write every algorithm's per-seed scores (JSON)")
    args = parser.parse_args(argv)
    train_scores, greedy_scores, rows = {}, {}, []
    for name in args.algos.split(","):
        tr, gr, compile_s, run_s, last = train(name, args.seeds, args.steps, args.utd)
        train_scores[name], greedy_scores[name] = tr, gr
        extra = "".join(f", final {k} {v:.3g}" for k, v in sorted(last.items()))
        rate = args.seeds * args.steps / run_s
        print(f"{name}: {args.steps} env steps x {args.seeds} seeds: compile {compile_s:.0f} s, "
              f"run {run_s:.0f} s = {rate:,.0f} env steps/s{extra}")  # fmt: skip
        print("  train  per seed: " + ", ".join(f"{s:.2f}" for s in tr))
        print("  greedy per seed: " + ", ".join(f"{s:.2f}" for s in gr))
        mode = {"maddpg": MADDPGConfig(**preset("maddpg_paper")[0]).parameter_mode,
                "facmac": FACMACConfig(**facmac_preset("facmac_pp")[0]).parameter_mode,
                "mappo": MAPPO.parameter_mode}[name]  # fmt: skip
        rows.append({"algo": name, "parameter_mode": mode, "compile_s": compile_s,
                     "run_s": run_s, "env_steps_per_s": rate,
                     "final": {k: float(v) for k, v in last.items()},
                     "per_seed": {"train": tr, "greedy": gr}})  # fmt: skip
    for label, scores in (("train", train_scores), ("greedy", greedy_scores)):
        print(stats.format_comparison(jax.random.PRNGKey(0), scores, label=f"{label:6s}"))
    if args.results:
        config = {"env": ENV, "seeds": args.seeds, "env_steps_per_seed": args.steps,
                  "utd": args.utd, "num_envs": NUM_ENVS, "rollout_len": ROLLOUT,
                  "maddpg_preset": "maddpg_paper", "facmac_preset": "facmac_pp",
                  "buffer_size": 100_000, "train_score": "mean per-agent return of the last "
                  "10% of updates' training episodes", "greedy_score": "16 envs x 100 steps, "
                  "greedy"}  # fmt: skip
        write_results(args.results, "baselines/maddpg_spread.py", config, rows)


if __name__ == "__main__":
    main()
