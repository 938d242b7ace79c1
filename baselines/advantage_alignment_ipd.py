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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=32)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--episodes", type=int, default=32)
    p.add_argument("--rounds", type=int, default=50)
    p.add_argument("--lr", type=float, default=1.0)
    p.add_argument("--beta", type=float, default=1.0)
    p.add_argument("--init-std", type=float, default=1.0)
    p.add_argument("--json", help="also write the summary as JSON to this path")
    args = p.parse_args()

    config = AdvantageAlignmentConfig("aa", args.steps, args.episodes, args.rounds)
    seeds = jax.vmap(make_advantage_alignment_ipd(config), in_axes=(0, None))
    axes = AdvantageAlignmentHParams(None, 0, None, None)  # beta: [aa, naive]
    run = jax.jit(jax.vmap(seeds, in_axes=(None, axes)))
    hp = AdvantageAlignmentHParams(args.lr, jnp.array([args.beta, 0.0]), 0.96, args.init_std)
    keys = jax.random.split(jax.random.PRNGKey(0), args.seeds)
    start = time.perf_counter()
    out = jax.block_until_ready(run(keys, hp))
    seconds = time.perf_counter() - start

    defector = jnp.full((5,), -20.0)  # always defect
    vs_defect = jax.vmap(jax.vmap(lambda t: ipd_values(t, defector, lola_ipd_payoffs(), 0.96)[0]))
    exploit = 0.04 * np.asarray(vs_defect(out.theta[:, :, 0]))  # [2, S] agent 1, per round

    summary = {"args": vars(args), "seconds_incl_compile": seconds}
    print(
        f"| learners | reward / round (mean +- std, {args.seeds} seeds) | seeds in mutual "
        "cooperation (> -1.1) | seeds in mutual defection (< -1.9) | agent 1 vs always-defect | "
        + " | ".join(f"P(C \\| {s})" for s in IPD_STATES)
        + " |"
    )
    print("|---|---|---|---|---|" + "---|" * len(IPD_STATES))
    for i, name in enumerate(("advantage alignment", "naive PG")):
        reward = np.asarray(out.average_reward[i, :, -1]).mean(-1)  # [S]
        probs = np.asarray(out.probabilities[i]).mean((0, 1))  # [5]
        coop, defect = float((reward > -1.1).mean()), float((reward < -1.9).mean())
        print(
            f"| {name} | {reward.mean():.3f} +- {reward.std():.3f} | {coop:.0%} | {defect:.0%} | "
            f"{exploit[i].mean():.3f} | " + " | ".join(f"{x:.2f}" for x in probs) + " |"
        )
        summary[name] = {
            "avg_reward_mean": float(reward.mean()),
            "avg_reward_std": float(reward.std()),
            "mutual_cooperation_fraction": coop,
            "mutual_defection_fraction": defect,
            "vs_always_defect": float(exploit[i].mean()),
            "p_cooperate": dict(zip(IPD_STATES, map(float, probs))),
        }
    print(f"both learning rules, {args.seeds} seeds, one program: {seconds:.1f} s incl. compile")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
