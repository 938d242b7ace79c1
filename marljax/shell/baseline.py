"""The command-line front end shared by the `baselines/` scripts (`baseline_main`)."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable

from marljax.shell.experiment import Experiment, RunResult, final_returns, run_experiment


def baseline_main(
    doc: str,
    exp: Experiment,
    verdict: Callable[[float], str] | None = None,
    argv: list[str] | None = None,
) -> RunResult:
    """Command-line front end shared by the `baselines/` scripts.

    Parses `--seeds`, `--out` (defaults from `exp`) and `--results FILE`, runs the experiment
    and prints each seed's final return, with `verdict(return)` (e.g. "optimum reached") when
    given. `--results` writes each setting's per-seed final training return, final greedy
    return and verdict with the experiment (`marljax.shell.result_files.write_results`), for the
    generated README tables.

    Args:
      doc: the script's docstring (its first line is the `--help` description).
      exp: the experiment the script reproduces.
      verdict: optional function turning a final return into a short verdict.
      argv: arguments (default: `sys.argv[1:]`).
    """
    import argparse

    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument("--seeds", type=int, default=exp.seeds, help="number of seeds")
    parser.add_argument("--out", default=exp.out_dir, help="parent folder of the run directory")
    parser.add_argument("--results", default=None, help="write the per-seed results here (JSON)")
    args = parser.parse_args(argv)
    exp = dataclasses.replace(exp, seeds=args.seeds, out_dir=args.out)
    result = run_experiment(exp)
    final = final_returns(result.metrics)
    if args.results:
        from marljax.shell.result_files import write_results

        per_seed = {"final_return": final}
        if "eval/episode_return" in result.metrics:  # the final greedy evaluation
            per_seed["greedy_return"] = final_returns(result.metrics, "eval/episode_return")
        rows = [{"algo": exp.algo, "env": exp.env, "setting": setting,
                 "parameter_mode": getattr(exp.agent_config, "parameter_mode", None),
                 "verdict": [verdict(float(r)) for r in final[g]] if verdict else None,
                 "per_seed": {k: v[g] for k, v in per_seed.items()}}
                for g, setting in enumerate(result.settings)]  # fmt: skip
        script = os.path.relpath(os.path.abspath(sys.argv[0]), os.getcwd())
        write_results(args.results, script, exp.to_dict(), rows, argv)
    for g, setting in enumerate(result.settings):
        label = ",".join(f"{k}={v:g}" for k, v in setting.items())
        for s, ret in enumerate(final[g]):
            extra = f" {verdict(float(ret))}" if verdict is not None else ""
            print(
                f"{label + ' ' if label else ''}seed {exp.seed + s}: final return {ret:.2f}{extra}"
            )
    print(f"run directory: {result.run_dir}")
    return result


__all__ = ["baseline_main"]
