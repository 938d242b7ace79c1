"""LOLA vs naive learners on the iterated Prisoner's Dilemma, exact returns, seeds in one program.

Reproduces the qualitative result of Foerster et al., "Learning with Opponent-Learning
Awareness", AAMAS 2018 (Section 5, exact-gradient IPD): two LOLA agents learn tit-for-tat-like
reciprocity and mostly cooperate (average reward per round near -1, the payoff of mutual
cooperation), two naive learners learn to defect (near -2). Memory-one policies (5 logits each),
payoffs (CC, CD, DC, DD) -> (-1, -3, 0, -2), gamma = 0.96, both agents step delta = 1 and
LOLA's lookahead eta = 1.

    python baselines/lola_ipd.py                    # 32 seeds, 200 updates, init std 1
    python baselines/lola_ipd.py --init-std 0.1     # starts near the uniform random policy
    python baselines/lola_ipd.py --init-std 1 0.1 --results baselines/results/lola_ipd.json
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import numpy as np

from marljax.population import LOLAConfig, LOLAHParams, make_lola_ipd
from marljax.population.lola import IPD_STATES
from marljax.shell.result_files import write_results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=32)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--lr", type=float, default=1.0)
    p.add_argument("--lookahead", type=float, default=1.0)
    p.add_argument("--init-std", type=float, nargs="+", default=[1.0])
    p.add_argument("--json", help="also write the summary as JSON to this path")
    p.add_argument("--results", help="write every seed's outcome here (JSON)")
    args = p.parse_args()

    keys = jax.random.split(jax.random.PRNGKey(0), args.seeds)
    summary, rows = {"args": vars(args)}, []
    for init_std in args.init_std:
        hp = LOLAHParams(learning_rate=args.lr, lookahead=args.lookahead, init_std=init_std)
        print(f"init std {init_std:g}:")
        run_methods(args, keys, hp, summary, rows)
    if args.results:
        config = {"seeds": args.seeds, "updates": args.steps, "lr": args.lr,
                  "lookahead": args.lookahead, "init_std": args.init_std, "gamma": 0.96}  # fmt: skip
        write_results(args.results, "baselines/lola_ipd.py", config, rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)


def run_methods(args, keys, hp, summary: dict, rows: list) -> None:
    """LOLA and naive learners at one initialisation: print their row, collect the results."""
    print(
        f"| learners | avg reward / round (mean +- std over {args.seeds} seeds) | seeds "
        "cooperating (> -1.5) | " + " | ".join(f"P(C \\| {s})" for s in IPD_STATES) + " |"
    )
    print("|---|---|---|" + "---|" * len(IPD_STATES))
    for method in ("lola", "naive"):
        run = jax.jit(jax.vmap(make_lola_ipd(LOLAConfig(method, args.steps)), in_axes=(0, None)))
        start = time.perf_counter()
        out = jax.block_until_ready(run(keys, hp))
        seconds = time.perf_counter() - start
        reward = np.asarray(out.average_reward)[:, -1].mean(-1)  # [S], both agents' mean
        probs = np.asarray(out.probabilities).mean((0, 1))  # [5], seeds and agents
        coop = float((reward > -1.5).mean())
        print(
            f"| {method} | {reward.mean():.3f} +- {reward.std():.3f} | {coop:.0%} | "
            + " | ".join(f"{x:.2f}" for x in probs)
            + " |"
        )
        per_agent = np.asarray(out.probabilities).mean(1)  # [S, 5]: mean over agents
        per_seed = {"reward": reward, **{f"p_c/{st}": per_agent[:, i]
                                         for i, st in enumerate(IPD_STATES)}}  # fmt: skip
        rows.append({"method": method, "init_std": hp.init_std, "per_seed": per_seed})
        summary[f"{method}@{hp.init_std:g}"] = {
            "avg_reward_mean": float(reward.mean()),
            "avg_reward_std": float(reward.std()),
            "cooperating_fraction": coop,
            "p_cooperate": dict(zip(IPD_STATES, map(float, probs))),
            "seconds_incl_compile": seconds,
        }


if __name__ == "__main__":
    main()
