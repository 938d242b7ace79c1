"""Advantage Alignment vs naive policy gradient on the iterated Prisoner's Dilemma, seeds in one program.

Reproduces the direction of Duque et al., "Advantage Alignment Algorithms", ICLR 2025 (IPD
experiments): two Advantage Alignment learners reciprocate and cooperate (reward per round near
-1, mutual cooperation), two naive policy-gradient learners defect (near -2). Memory-one
policies (5 logits each), payoffs (CC, CD, DC, DD) -> (-1, -3, 0, -2), gamma = 0.96, sampled
episodes of 50 rounds, exact-critic advantages; naive PG is the same program with beta = 0.
Seeds in between mostly alternate (C, D), (D, C), -1.5 per round, another reciprocal
outcome. Each trained agent is also scored (exactly) against always-defect: a reciprocating agent is not
exploited (near -2), an unconditional cooperator is (-3).

    python baselines/advantage_alignment_ipd.py                   # 32 seeds, 300 updates
    python baselines/advantage_alignment_ipd.py --init-std 0.1    # near the uniform policy
    python baselines/advantage_alignment_ipd.py --init-std 1 0.1 \
        --results baselines/results/advantage_alignment_ipd.json   # per-seed outcomes (JSON)
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

from marljax.population.advantage_alignment import (
    AdvantageAlignmentConfig,
    AdvantageAlignmentHParams,
    make_advantage_alignment_ipd,
)
from marljax.population.lola import IPD_STATES, ipd_values, lola_ipd_payoffs
from marljax.shell.result_files import write_results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=32)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--episodes", type=int, default=32)
    p.add_argument("--rounds", type=int, default=50)
    p.add_argument("--lr", type=float, default=1.0)
    p.add_argument("--beta", type=float, default=1.0)
    p.add_argument("--init-std", type=float, nargs="+", default=[1.0])
    p.add_argument("--json", help="also write the summary as JSON to this path")
    p.add_argument("--results", help="write every seed's outcome here (JSON)")
    args = p.parse_args()

    config = AdvantageAlignmentConfig("aa", args.steps, args.episodes, args.rounds)
    seeds = jax.vmap(make_advantage_alignment_ipd(config), in_axes=(0, None))
    axes = AdvantageAlignmentHParams(None, 0, None, None)  # beta: [aa, naive]
    run = jax.jit(jax.vmap(seeds, in_axes=(None, axes)))
    keys = jax.random.split(jax.random.PRNGKey(0), args.seeds)
    summary, rows = {"args": vars(args)}, []
    for init_std in args.init_std:
        hp = AdvantageAlignmentHParams(args.lr, jnp.array([args.beta, 0.0]), 0.96, init_std)
        print(f"init std {init_std:g}:")
        run_rules(args, run, keys, hp, summary, rows)
    if args.results:
        config = {"seeds": args.seeds, "updates": args.steps, "episodes": args.episodes,
                  "rounds": args.rounds, "lr": args.lr, "beta": args.beta,
                  "init_std": args.init_std, "gamma": 0.96}  # fmt: skip
        write_results(args.results, "baselines/advantage_alignment_ipd.py", config, rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)


def run_rules(args, run, keys, hp, summary: dict, rows: list) -> None:
    """Both learning rules at one initialisation: print their rows, collect the results."""
    start = time.perf_counter()
    out = jax.block_until_ready(run(keys, hp))
    seconds = time.perf_counter() - start

    defector = jnp.full((5,), -20.0)  # always defect
    vs_defect = jax.vmap(jax.vmap(lambda t: ipd_values(t, defector, lola_ipd_payoffs(), 0.96)[0]))
    exploit = 0.04 * np.asarray(vs_defect(out.theta[:, :, 0]))  # [2, S] agent 1, per round
    print(
        f"| learners | reward / round (mean +- std, {args.seeds} seeds) | seeds in mutual "
        "cooperation (> -1.1) | seeds in mutual defection (< -1.9) | agent 1 vs always-defect | "
        + " | ".join(f"P(C \\| {s})" for s in IPD_STATES)
        + " |"
    )
    print("|---|---|---|---|---|" + "---|" * len(IPD_STATES))
    for i, (method, name) in enumerate((("aa", "advantage alignment"), ("naive", "naive PG"))):
        reward = np.asarray(out.average_reward[i, :, -1]).mean(-1)  # [S]
        per_agent = np.asarray(out.probabilities[i]).mean(1)  # [S, 5]: mean over agents
        probs = per_agent.mean(0)  # [5]
        coop, defect = float((reward > -1.1).mean()), float((reward < -1.9).mean())
        print(
            f"| {name} | {reward.mean():.3f} +- {reward.std():.3f} | {coop:.0%} | {defect:.0%} | "
            f"{exploit[i].mean():.3f} | " + " | ".join(f"{x:.2f}" for x in probs) + " |"
        )
        per_seed = {"reward": reward, "vs_always_defect": exploit[i],
                    **{f"p_c/{st}": per_agent[:, j] for j, st in enumerate(IPD_STATES)}}  # fmt: skip
        rows.append({"method": method, "init_std": hp.init_std, "per_seed": per_seed})
        summary[f"{name}@{hp.init_std:g}"] = {
            "avg_reward_mean": float(reward.mean()),
            "avg_reward_std": float(reward.std()),
            "mutual_cooperation_fraction": coop,
            "mutual_defection_fraction": defect,
            "vs_always_defect": float(exploit[i].mean()),
            "p_cooperate": dict(zip(IPD_STATES, map(float, probs))),
        }
    print(f"both learning rules, {args.seeds} seeds, one program: {seconds:.1f} s incl. compile")


if __name__ == "__main__":
    main()
