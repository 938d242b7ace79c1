"""Tabular Bayesian-network policy gradient on n-agent coordination games (exact gradients).

The tabular experiment of D. Chen et al., "Context-Aware Bayesian Network Actor-Critic Methods for
Cooperative Multi-Agent Reinforcement Learning", ICML 2023: softmax policies conditioned on the
parents' actions in a DAG (empty = independent, line = chain, full order), trained by exact
policy-gradient ascent from many random initialisations, scored by the Nash-equilibrium gap and
the price of anarchy (best joint payoff / payoff reached). Our game
(`marljax.agents.bn_tabular.coordination_game`): `N - 1` equal optima worth 1 when every agent
plays the same one, and a safe action paying `0.6 x (fraction of agents playing it)`; it is not
the paper's exact game, so compare the trend (denser graphs coordinate more often), not numbers.

    python baselines/bn_tabular_coordination.py [--seeds 64] [--steps 500] [--out runs]
        [--results baselines/results/bn_tabular_coordination.json]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import jax
import numpy as np

from marljax.agents import bn
from marljax.agents import bn_tabular as bt
from marljax.evaluation import stats
from marljax.shell.result_files import write_results

AGENTS = (2, 3, 5)
GRAPHS = ("empty", "line", "full")
NUM_ACTIONS = 3
SAFE_REWARD = 0.6
#: a seed is "at an optimum" when its payoff exceeds this
OPTIMUM = 0.95


def plot(results: dict, path: Path) -> Path:
    """Price of anarchy (mean and 95% CI over seeds) per number of agents and graph."""
    from marljax.evaluation.plots import _pyplot, _save

    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    width = 0.8 / len(GRAPHS)
    for g, graph in enumerate(GRAPHS):
        xs = np.arange(len(AGENTS)) + (g - (len(GRAPHS) - 1) / 2) * width
        for ax, name in zip(axes, ("price_of_anarchy", "frac_optimal"), strict=True):
            point = [results[(n, graph)][name][0] for n in AGENTS]
            low = [results[(n, graph)][name][1] for n in AGENTS]
            high = [results[(n, graph)][name][2] for n in AGENTS]
            err = np.abs(np.array([low, high]) - np.array(point))
            ax.bar(xs, point, width, yerr=err, capsize=3, label=graph)
    axes[0].axhline(1.0, color="black", lw=0.8)
    axes[0].set_ylabel("price of anarchy (mean, 95% CI)")
    axes[1].set_ylabel("fraction of seeds at an optimum")
    for ax in axes:
        ax.set_xticks(np.arange(len(AGENTS)), [f"n = {n}" for n in AGENTS])
    axes[0].legend(title="graph")
    fig.suptitle(f"Tabular BN policy gradient, coordination game (N = {NUM_ACTIONS})")
    return _save(fig, path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=64)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--lr", type=float, default=2.0)
    parser.add_argument("--out", default="runs")
    parser.add_argument("--results", default=None, help="write the per-seed results here (JSON)")
    args = parser.parse_args(argv)
    key = jax.random.PRNGKey(0)
    results, rows = {}, []
    print(
        f"{'n':>2} {'graph':>6} | payoff mean [95% CI]  | PoA mean [95% CI]   | PoA IQM | "
        "Nash gap mean (max) | at optimum"
    )
    for n in AGENTS:
        payoff = bt.coordination_game(n, NUM_ACTIONS, SAFE_REWARD)
        for graph in GRAPHS:
            res = bt.train_tabular(
                jax.random.fold_in(key, n),  # same initial tables for every graph
                bn.fixed_graph(graph, n),
                payoff,
                NUM_ACTIONS,
                num_seeds=args.seeds,
                num_steps=args.steps,
                lr=args.lr,
            )
            per_seed = {
                "payoff": np.asarray(res.payoff),
                "price_of_anarchy": np.asarray(res.price_of_anarchy),
                "nash_gap": np.asarray(res.nash_gap),
                "at_optimum": (np.asarray(res.payoff) > OPTIMUM).astype(np.float32),
            }
            rows.append({"agents": n, "graph": graph, "per_seed": per_seed})
            row = {}
            for name, fn, values in (
                ("payoff", stats.aggregate_mean, per_seed["payoff"]),
                ("price_of_anarchy", stats.aggregate_mean, per_seed["price_of_anarchy"]),
                ("poa_iqm", stats.aggregate_iqm, per_seed["price_of_anarchy"]),
                ("frac_optimal", stats.aggregate_mean, per_seed["at_optimum"]),
            ):
                est = stats.interval_estimate(
                    jax.random.PRNGKey(1), fn, values[:, None], num_resamples=1000
                )
                row[name] = (float(est.point), float(est.low), float(est.high))
            row["gap_mean"] = float(np.mean(res.nash_gap))
            row["gap_max"] = float(np.max(res.nash_gap))
            results[(n, graph)] = row
            p, po = row["payoff"], row["price_of_anarchy"]
            print(
                f"{n:>2} {graph:>6} | {p[0]:.3f} [{p[1]:.3f}, {p[2]:.3f}] | "
                f"{po[0]:.3f} [{po[1]:.3f}, {po[2]:.3f}] | {row['poa_iqm'][0]:.3f}   | "
                f"{row['gap_mean']:.4f} ({row['gap_max']:.4f})    | {row['frac_optimal'][0]:.2f}"
            )
    path = plot(results, Path(args.out) / "bn_tabular_coordination.png")
    print(f"plot: {path}")
    if args.results:
        config = {"game": "bn_tabular.coordination_game", "num_actions": NUM_ACTIONS,
                  "safe_reward": SAFE_REWARD, "agents": list(AGENTS), "graphs": list(GRAPHS),
                  "seeds": args.seeds, "steps": args.steps, "lr": args.lr,
                  "init": "tables N(0, 1), the same initialisations for every graph of one n",
                  "gradients": "exact", "parameter_mode": "tabular, one table per agent",
                  "optimum": f"payoff > {OPTIMUM}"}  # fmt: skip
        write_results(args.results, "baselines/bn_tabular_coordination.py", config, rows, argv)


if __name__ == "__main__":
    main()
