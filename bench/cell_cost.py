"""What a benchmark cell costs on this machine, before running it: one seed's update timed.

For each cell (`marljax.benchmarks.CELLS`, e.g. `smax/3m:qmix`) the cell's own training program
(its published configuration, at its CPU budget, without evaluation) is compiled for `--updates`
updates and timed (the fastest of `--repeats` calls, after a warm-up call that also carries a
Q-learner past its `learning_starts`). A Q-learner's learning phase is timed apart: the same
program with `learning_starts` out of reach gives the rest (acting, env steps, replay insertion).
The projection multiplies by the cell's updates and seeds: on a CPU, seeds in one program share
the cores, so five seeds take about five times one (SMAX 3m QMIX, two updates: 5.0x).

    python bench/cell_cost.py smax/3m:qmix [more cells] [--updates 4] [--seeds 5] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import jax
from harness import machine_info

NEVER = 2**30  # a learning start no run reaches (an int32)


def _built(name: str, steps: int, agent: dict | None = None) -> Any:
    """Cell `name`'s one-seed experiment at `steps` env steps, without evaluation, built."""
    from marljax.benchmarks import CELLS
    from marljax.benchmarks.suite import experiment_kwargs
    from marljax.shell.build import build
    from marljax.shell.experiment import Experiment

    kw = experiment_kwargs(CELLS[name], steps)
    kw["agent"] = {**kw["agent"], **(agent or {})}
    kw["train"] = {**kw["train"], "eval_interval": 0}
    return build(Experiment(seeds=1, **kw))


def update_seconds(built: Any, updates: int, repeats: int) -> float:
    """Seconds per update of one seed of a `_built` cell (the fastest of `repeats` calls)."""
    trainer = built.trainer
    hparams = jax.tree.map(lambda x: x[0], built.hparams)
    state = trainer.init(jax.random.PRNGKey(0), hparams)
    run = jax.jit(lambda s, h: trainer.run(s, h, trainer.env_params, updates))
    run = run.lower(state, hparams).compile()
    starts = int(getattr(trainer.agent.config, "learning_starts", 0) or 0)
    span = trainer.config.steps_per_update * updates
    for _ in range(1 + (starts // span if starts < NEVER else 0)):  # warm, past learning_starts
        state, _ = run(state, hparams)
        jax.block_until_ready(state)
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        state, _ = run(state, hparams)
        jax.block_until_ready(state)
        best = min(best, time.perf_counter() - t)
    return best / updates


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cells", nargs="+")
    ap.add_argument("--updates", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    from marljax.benchmarks import CELLS

    rows = []
    for name in args.cells:
        c = CELLS[name]
        built = _built(name, c.cpu_budget)
        config = built.trainer.config
        total = update_seconds(built, args.updates, args.repeats)
        rest = None
        if hasattr(built.trainer.agent.config, "learning_starts"):
            never = _built(name, c.cpu_budget, {"learning_starts": NEVER})
            rest = update_seconds(never, args.updates, args.repeats)
        row = {
            "cell": name,
            "env_steps_per_update": config.steps_per_update,
            "update_s": total,
            "learn_s": None if rest is None else total - rest,
            "rest_s": rest,
            "env_steps_per_s_one_seed": config.steps_per_update / total,
            "cpu_budget": c.cpu_budget,
            "cpu_budget_hours": config.num_updates * total * args.seeds / 3600,
            "published_budget": c.budget,
            "published_budget_hours": c.budget / config.steps_per_update * total * args.seeds
            / 3600,
            "seeds": args.seeds,
        }  # fmt: skip
        rows.append(row)
        learn = "" if rest is None else f" (learning {row['learn_s']:.2f} s, the rest {rest:.2f})"
        print(
            f"{name}: {total:.2f} s per update of {config.steps_per_update} env steps{learn}; "
            f"{args.seeds} seeds at the CPU budget ({c.cpu_budget:,}): "
            f"{row['cpu_budget_hours']:.1f} h; at the published ({c.budget:,}): "
            f"{row['published_budget_hours']:.0f} h"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine_info(), "argv": vars(args), "results": rows}, f, indent=1)


if __name__ == "__main__":
    main()
