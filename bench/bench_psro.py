"""PSRO on Rock-Paper-Scissors: one compiled program vs OpenSpiel's Python PSRO, side by side.

The task: PSRO on RPS with exact best responses, grown to `K` policies per player (`K - 1`
iterations), for one meta-solver. Two ways to run it:

- `psro/marljax`: `marljax.population.make_psro`, the whole run (every iteration, meta-solve,
  best response, payoff-matrix extension, NashConv) as ONE compiled program; one seed, and
  `S` seeds vmapped in the same program;
- `psro/openspiel`: OpenSpiel's `psro_v2.PSROSolver` (Python loop, exact tree-walk best-response
  oracle `BestResponseOracle`, `sims_per_entry=1`) on `load_game_as_turn_based("matrix_rps")`;
  `S` seeds are `S` sequential runs. Skipped when OpenSpiel is not importable (it is not a
  dependency: `pip install open-spiel cvxpy networkx` for this bench only).

Meta-solvers compared (`ROWS`): `uniform` (both); `nash` (ours: regret matching+, 1000
iterations; OpenSpiel: its exact LP for two-player zero-sum games, via cvxpy); regret matching
(ours: `nash`; OpenSpiel: `rm`, 1000 iterations); projected replicator dynamics (both 1000 Euler
steps of 0.1, floor 1e-3: OpenSpiel's defaults, 1e5 steps of 1e-3, take seconds per call). Differences kept as they are: OpenSpiel starts from
the uniform random policy, ours from a random pure strategy per player; OpenSpiel estimates
payoff entries by sampling (1 episode per entry; exact for the pure best responses), ours are
exact expectations. Compile time is reported apart; "env steps" in the table are PSRO
iterations (`(K - 1) x S`), so "env steps/s" is iterations per second and the ratios are ratios
of iterations per second.

    python bench/bench_psro.py                      # K = 16, S = 32
    python bench/bench_psro.py --quick              # smoke test
"""

from __future__ import annotations

import os
import sys
import time

import jax
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Options, Result, SkipCase, case, main, timed  # noqa: E402

import marljax  # noqa: E402
import marljax.envs  # noqa: E402,F401
from marljax.population import PSROConfig, PSROHParams, make_psro  # noqa: E402

#: rows: (label, our meta-solver, OpenSpiel's meta-strategy method)
ROWS = (
    ("uniform", "uniform", "uniform"),
    ("nash (ours RM+ 1000 it, OpenSpiel LP)", "nash", "nash"),
    ("regret matching 1000 it", "nash", "rm"),
    ("prd 1000 steps dt 0.1", "prd", "prd"),
)
#: OpenSpiel's solver settings matched to ours (its defaults: 1e5 steps of dt 1e-3)
OPENSPIEL_KWARGS = {"prd_iterations": 1000, "prd_dt": 0.1, "prd_gamma": 1e-3, "iterations": 1000}


def _sizes(opts: Options) -> tuple[int, int]:
    """(K policies per player, S seeds)."""
    return (6, 4) if opts.quick else (16, 32)


def _task(solver: str, k: int) -> str:
    return f"RPS PSRO {solver}, exact BR, K={k}"


@case("psro/marljax")
def marljax_psro(opts: Options) -> list[Result]:
    k, seeds = _sizes(opts)
    env, _ = marljax.make("matrix/rps-v0")
    out = []
    for label, solver, _ in ROWS:
        run = make_psro(PSROConfig(population_size=k, meta_solver=solver), env)
        hp = PSROHParams()
        for s in (1, seeds):
            keys = jax.random.split(jax.random.PRNGKey(0), s)
            fn = jax.vmap(run, in_axes=(0, None))
            t = timed(fn, keys, hp, repeats=opts.repeats, first_call=opts.first_call)
            nash_conv = np.asarray(t.output.nash_conv)[:, -1]
            out.append(
                t.result(
                    _task(label, k),
                    "marljax",
                    (k - 1) * s,
                    variant=f"{s} seed{'s' if s > 1 else ''}",
                    notes={"final_nash_conv_mean": float(nash_conv.mean())},
                )
            )
    return out


def _openspiel_run(game, solver: str, k: int, seed: int) -> float:
    from open_spiel.python.algorithms import exploitability, policy_aggregator
    from open_spiel.python.algorithms.psro_v2 import (
        best_response_oracle,
        psro_v2,
        strategy_selectors,
    )

    np.random.seed(seed)
    oracle = best_response_oracle.BestResponseOracle(game=game, best_response_backend="py")
    psro = psro_v2.PSROSolver(
        game,
        oracle,
        sims_per_entry=1,
        meta_strategy_method=solver,
        training_strategy_selector=strategy_selectors.probabilistic,
        sample_from_marginals=True,
        symmetric_game=False,
        **OPENSPIEL_KWARGS,
    )
    for _ in range(k - 1):
        psro.iteration(seed=seed)
    aggregate = policy_aggregator.PolicyAggregator(game).aggregate(
        range(2), psro.get_policies(), psro.get_meta_strategies()
    )
    return float(exploitability.nash_conv(game, aggregate))


@case("psro/openspiel")
def openspiel_psro(opts: Options) -> list[Result]:
    try:
        import pyspiel
        from open_spiel.python.algorithms.psro_v2 import psro_v2  # noqa: F401
    except ImportError as e:
        raise SkipCase(f"OpenSpiel's PSRO is not importable ({e}); pip install open-spiel") from e
    import contextlib
    import io

    k, seeds = _sizes(opts)
    game = pyspiel.load_game_as_turn_based("matrix_rps")
    out = []
    for label, _, solver in ROWS:
        for s in (1, seeds):
            runs, nash_convs = [], []
            for rep in range(max(1, opts.repeats if s == 1 else 1)):
                start = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()):  # PSROSolver prints its setup
                    nash_convs = [_openspiel_run(game, solver, k, rep * s + i) for i in range(s)]
                runs.append(time.perf_counter() - start)
            out.append(
                Result(
                    task=_task(label, k),
                    framework="openspiel",
                    compile_s=float("nan"),
                    run_s=float(np.median(runs)),
                    env_steps=(k - 1) * s,
                    run_min_s=min(runs),
                    run_max_s=max(runs),
                    repeats=len(runs),
                    variant=f"{s} seed{'s' if s > 1 else ''}",
                    notes={
                        "final_nash_conv_mean": float(np.mean(nash_convs)),
                        "seeds": "sequential runs",
                    },
                )
            )
    return out


def _per_iteration(results: list[Result]) -> str:
    lines = [
        "| task | variant | framework | ms per PSRO iteration (per seed) | final NashConv (mean) |",
        "|---|---|---|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.task} | {r.variant} | {r.framework} | {1e3 * r.run_s / r.env_steps:.4f} "
            f"| {r.notes.get('final_nash_conv_mean', float('nan')):.4f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main(
        ["psro/marljax", "psro/openspiel"],
        __doc__.split("\n\n")[0],
        baseline="openspiel",
        after=_per_iteration,
        repeats=3,
        first_call=False,
    )
