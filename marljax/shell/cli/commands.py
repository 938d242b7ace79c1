"""`marljax plot`, `eval`, `export`, `render`, `benchmark`, `check`, `envs` and `bench`."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from marljax.core import config as cfg


def cmd_plot(args: argparse.Namespace) -> int:
    from marljax.evaluation.plots import DEFAULT_TOP, plot_runs

    top = DEFAULT_TOP if args.top is None else args.top
    if top < 0:
        raise cfg.ConfigError(f"--top must be >= 0 (0 shows every setting), got {top}")
    out = args.out or default_plot_dir(args.run_dirs)
    for path in plot_runs(args.run_dirs, out, top=top or None):
        print(path)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from marljax.shell.outputs import export_marl_eval

    for path in export_marl_eval(args.run_dirs, args.to, args.points):
        print(path)
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    import numpy as np

    from marljax.shell.crossplay import crossplay_runs
    from marljax.shell.policy import evaluate_run

    setting = args.setting
    if setting is not None and setting.isdigit():
        setting = int(setting)
    if args.crossplay is None:
        print(evaluate_run(args.run_dir, args.episodes, args.env, setting, None, args.max_steps))
        return 0
    roles = [int(r) for r in args.roles.split(",") if r.strip()]
    out = crossplay_runs(args.run_dir, args.crossplay, roles, args.episodes or 16, setting)
    table = out["return"]
    print(f"cross-play: rows = seeds of {args.run_dir} (agents {roles}), columns = seeds of "
          f"{args.crossplay}; mean episode return")  # fmt: skip
    for i, row in enumerate(table):
        print(f"  {i:>3}  " + "  ".join(f"{v:8.3f}" for v in row))
    print(f"  mean {np.mean(table):.3f}")
    return 0


def cmd_render(args: argparse.Namespace) -> int:
    import shutil

    from marljax.shell.policy import load_policy

    setting = args.setting
    if setting is not None and setting.isdigit():
        setting = int(setting)
    policy = load_policy(args.run_dir, setting=setting)
    path = policy.render(args.out, seed=args.seed, max_steps=args.max_steps, fps=args.fps)
    print(path)
    if shutil.which("ffmpeg"):  # written beside the GIF
        print(path.with_suffix(".mp4"))
    return 0


def default_plot_dir(run_dirs: list[str]) -> str:
    """`plots/<A>` or `plots/<A>_vs_<B>[_vs_...]` (at most three names, then `_and_<n>_more`)
    in the current directory: a folder of its own, named after the run directories."""
    import os

    names = list(dict.fromkeys(os.path.basename(os.path.normpath(d)) for d in run_dirs))
    name = "_vs_".join(names[:3]) + (f"_and_{len(names) - 3}_more" if len(names) > 3 else "")
    return os.path.join("plots", name[:120] or "runs")


def cmd_benchmark(args: argparse.Namespace) -> int:
    import os

    from marljax.benchmarks import CELLS, TASKS, make_band, run_benchmark, write_bands
    from marljax.benchmarks.runner import parse_budget
    from marljax.training.execute import parse_bytes

    if args.list:
        for name, t in TASKS.items():
            algos = [c.algo for c in CELLS.values() if c.task == name]
            print(f"{name:<28} {t.env:<28} {t.label:<9} {', '.join(algos)}")
        return 0
    if args.report:
        from marljax.benchmarks.runner import read_state, write_report

        write_report(args.report, read_state(args.report))
        with open(os.path.join(args.report, "results.md")) as f:
            print(f.read())
        return 0
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    if not tasks or not algos:
        raise cfg.ConfigError("--tasks and --algos need at least one name each")
    budget = parse_budget(args.budget)
    overrides = cfg.parse_assignments(args.set, "--set")
    if overrides and args.write_bands:
        raise cfg.ConfigError(
            "--write-bands with --set: reference bands are those of the published "
            "configurations; run the ablation without --write-bands"
        )
    sets = "".join(f"_{k}-{v}".replace("/", "-") for k, v in sorted(overrides.items()))
    out = args.out or os.path.join(
        "benchmarks", "_".join(t.replace("/", "-") for t in tasks)[:80] + f"_{budget}{sets}"
    )
    state = run_benchmark(
        tasks, algos, out, seeds=args.seeds, seed=args.seed, budget=budget,
        progress=not args.no_progress, overrides=overrides,
        max_memory_bytes=None if args.max_memory is None else parse_bytes(args.max_memory),
    )  # fmt: skip
    with open(os.path.join(out, "results.md")) as f:
        print(f.read())
    if args.write_bands:
        bands = []
        for name, s in state["cells"].items():
            run_dir = os.path.join(out, s["run_dir"])
            if not os.path.exists(os.path.join(run_dir, "config.json")):  # moved or deleted
                print(f"no band for {name}: its run directory {run_dir} is gone", file=sys.stderr)
                continue
            bands.append(make_band(run_dir, name, s["metric"], TASKS[name.split(":")[0]].upstream))
        print(f"bands written to {write_bands(bands, args.write_bands)}")
    print(f"benchmark directory: {out}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from marljax.benchmarks import check_run

    report = check_run(args.run_dir, args.bands)
    print(report)
    return 0 if report.inside else 1


def cmd_envs(args: argparse.Namespace) -> int:
    from marljax import core
    from marljax.core.registry import spec

    if args.options:
        s = spec(args.options)
        env, params = core.make(args.options)
        print(f"{args.options}: {s.description}")
        print(
            f"  agents: {env.num_agents}, observation {env.observation_space(params)}, action {env.action_space(params)}"
        )
        print(f"  static options: {s.kwargs}")
        print("  params:")
        for f in dataclasses.fields(params):
            print(f"    {f.name} = {cfg.to_dict(getattr(params, f.name))}")
        return 0
    from marljax.core.registry import family_ids

    ids = core.registered_envs()
    more = family_ids()  # e.g. smax/<map>-v0, built through an optional package
    width = max(len(i) for i in ids + more)
    for env_id in ids:
        print(f"{env_id:<{width}}  {spec(env_id).description}")
    for env_id in more:
        print(f"{env_id:<{width}}  {spec(env_id).description}")
    print(f"\n{len(ids) + len(more)} environments ({len(more)} of them need an optional package)")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    import os
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = os.path.join(root, "bench", "run_all.py")
    if not os.path.exists(script):
        raise FileNotFoundError(
            "The benchmarks live in the bench/ folder of a source checkout "
            "(install with `pip install -e .` from a clone to use `marljax bench`)."
        )
    return subprocess.call([sys.executable, script, *args.bench_args])
