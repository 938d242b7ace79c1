"""Crash probability of PSRO with the risk-averse equilibrium meta-solver vs the others.

Slumbers et al., "A Game-Theoretic Framework for Managing Risk in Multi-Agent Systems", ICML 2023,
report that PSRO with the risk-averse equilibrium (RAE) meta-solver "reduces instances of
crashing by 7x in an autonomous driving setting versus the best performing baseline". Their
driving environment is not available here; this script measures the same quantity in the
closest setting we can build exactly: two-player driving games in which one joint action is a
crash, PSRO with learned (softmax policy-gradient) best responses, every meta-solver, 64 seeds
per program, the RAE's risk aversion `lambda` a traced hyperparameter vmapped in the same program.

Games (row player's payoff, symmetric):

- `chicken`: swerve / straight, `[[3, 1], [4, -10]]`: both straight is a crash.
- `crossing`: speed stop / slow / fast at an unsignalled crossing, `[[0, 0, 0], [2, 2, 1],
  [4, 4, -20]]`: progress 0 / 2 / 4, a slow car brakes for a fast one (1), both fast crash.

For each seed the final meta-strategies' mixtures over actions `x, y` give the crash
probability `P(crash) = x[crash] * y[crash]` and the expected payoff (mean of both players) in
the true game. The ratio `P_baseline / P_rae` (best baseline: the non-RAE solver with the lowest
mean crash probability) has a stratified-bootstrap 95% CI over seeds.

    python baselines/rae_crash.py --results baselines/results/rae_crash.json
    python baselines/rae_crash.py --symmetric --results baselines/results/rae_crash_symmetric.json
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np

import marljax.envs  # noqa: F401
from marljax.envs.matrix import MatrixGame, symmetric
from marljax.evaluation.stats import interval_estimate
from marljax.population import META_SOLVERS, MetaSolverHParams, PSROConfig, PSROHParams, make_psro
from marljax.shell.result_files import write_results

#: name -> (row player's payoff table, the action whose joint play is a crash)
GAMES = {
    "chicken": ([[3.0, 1.0], [4.0, -10.0]], 1),
    "crossing": ([[0.0, 0.0, 0.0], [2.0, 2.0, 1.0], [4.0, 4.0, -20.0]], 2),
}
RISK_AVERSION = (0.1, 1.0)  # lambda of the RAE, vmapped in one program


def final_mixtures(out) -> np.ndarray:
    """`[..., 2, N]` each player's final meta-mixture over actions."""
    sigma = np.asarray(out.meta_strategy)[..., -1, :, :]  # [..., 2, K]
    return np.einsum("...ik,...ikn->...in", sigma, np.asarray(out.policies))


def ratio(base: jax.Array, rae: jax.Array) -> jax.Array:
    """Mean crash probability of the baseline over that of the RAE (scores `[S, 1]`)."""
    return jnp.mean(base) / jnp.maximum(jnp.mean(rae), 1e-12)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=64)
    p.add_argument("--population", type=int, default=8, help="final policies per player K")
    p.add_argument(
        "--symmetric",
        action="store_true",
        help="one population shared by both drivers (PSROConfig.symmetric)",
    )
    p.add_argument("--results", help="write every seed's crash probability and payoff (JSON)")
    args = p.parse_args()

    keys = jax.random.split(jax.random.PRNGKey(0), args.seeds)
    rows = []
    for game, (row, crash) in GAMES.items():
        payoffs = symmetric(row)
        env = MatrixGame(payoffs, name=game)
        params = env.default_params()
        results = {}
        for solver in sorted(META_SOLVERS):
            config = PSROConfig(
                population_size=args.population,
                meta_solver=solver,
                best_response="pg",
                meta_iterations=30 if solver == "alpharank" else 1000,
                symmetric=args.symmetric,
            )
            run = make_psro(config, env, params)
            if solver == "rae":  # lambda is traced: every value in one program
                lam = jnp.asarray(RISK_AVERSION)
                hp = PSROHParams(meta=MetaSolverHParams(risk_aversion=lam))
                axes = jax.tree.map(lambda _: None, PSROHParams())
                axes = axes.replace(meta=axes.meta.replace(risk_aversion=0))
                seeds_run = jax.vmap(run, in_axes=(0, None))
                out = jax.jit(jax.vmap(seeds_run, in_axes=(None, axes)))(keys, hp)
                mixtures = final_mixtures(out)  # [L, S, 2, N]
                for i, value in enumerate(RISK_AVERSION):
                    results[f"rae lambda={value:g}"] = mixtures[i]
            else:
                out = jax.jit(jax.vmap(run, in_axes=(0, None)))(keys, PSROHParams())
                results[solver] = final_mixtures(out)  # [S, 2, N]
        table = np.asarray(payoffs)
        print(
            f"\n{game} ({args.seeds} seeds, K={args.population}, pg best responses"
            f"{', one shared population' if args.symmetric else ''}): crash "
            "probability and expected payoff of the final meta-mixtures (mean [95% CI])\n"
        )
        print("| meta-solver | P(crash) | payoff (mean of players) |")
        print("|---|---:|---:|")
        crash_prob, payoff = {}, {}
        for name, mix in results.items():
            crash_prob[name] = mix[:, 0, crash] * mix[:, 1, crash]  # [S]
            payoff[name] = np.einsum("sa,iab,sb->si", mix[:, 0], table, mix[:, 1]).mean(1)
            cells = []
            for values, fmt in ((crash_prob[name], ".2e"), (payoff[name], ".4f")):
                ci = interval_estimate(
                    jax.random.PRNGKey(1), jnp.mean, jnp.asarray(values)[:, None]
                )
                cells.append(
                    f"{float(ci.point):{fmt}} [{float(ci.low):{fmt}}, {float(ci.high):{fmt}}]"
                )
            print(f"| {name} | " + " | ".join(cells) + " |")
        baselines = [n for n in results if not n.startswith("rae")]
        best = min(baselines, key=lambda n: crash_prob[n].mean())
        ratios = {}
        for name in (n for n in results if n.startswith("rae")):
            ci = interval_estimate(
                jax.random.PRNGKey(2),
                ratio,
                jnp.asarray(crash_prob[best])[:, None],
                jnp.asarray(crash_prob[name])[:, None],
            )
            ratios[name] = [float(ci.point), float(ci.low), float(ci.high)]
            given_up = payoff[best].mean() - payoff[name].mean()
            print(
                f"  {name}: P(crash) of the best baseline ({best}) / P(crash) of {name} = "
                f"{float(ci.point):.2f} [95% CI {float(ci.low):.2f}, {float(ci.high):.2f}]; "
                f"payoff given up {given_up:.3f}"
            )
        for name in results:  # the ratio's CI is a two-sample bootstrap, kept with the rows
            rows.append({"game": game, "solver": name, "best_baseline": best,
                         "ratio_to_best_baseline": ratios.get(name),
                         "per_seed": {"crash": crash_prob[name], "payoff": payoff[name]}})  # fmt: skip
    if args.results:
        config = {"games": {g: {"row_payoffs": r, "crash_action": c} for g, (r, c) in GAMES.items()},
                  "seeds": args.seeds, "population": args.population, "best_response": "pg",
                  "meta_solvers": sorted(META_SOLVERS), "risk_aversion": list(RISK_AVERSION),
                  "populations": "one shared" if args.symmetric else "one per driver",
                  "parameter_mode": "one shared population" if args.symmetric
                  else "one population per driver"}  # fmt: skip
        write_results(args.results, "baselines/rae_crash.py", config, rows)


if __name__ == "__main__":
    main()
