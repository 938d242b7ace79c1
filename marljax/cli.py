"""The `marljax` command line: it only builds configs and calls library functions.

marljax train                                   # the default experiment
marljax train --algo mappo --env matrix/climbing-v0 --seeds 8 --set lr=3e-4
marljax train --grid lr=1e-3,3e-4 --grid ent_coef=0,0.01   # grid x seeds, one compile
marljax train --resume runs/<run>                # continue from the newest checkpoint
marljax train --check-finite                     # stop at the first NaN/inf, keep checkpoints
marljax train --algo qmix --env matrix/two_step-v0 --set recurrent=false --qtable
marljax sweep --algo ippo --sample lr=log:1e-4:1e-2 --num-samples 16 --seeds 4
marljax plot runs/<run> runs/<other run>         # PNG figures with CI bands
marljax envs                                     # list registered environments
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from marljax import config as cfg


def _field_help(obj: Any) -> str:
    return ", ".join(f"{f.name}={getattr(obj, f.name)!r}" for f in dataclasses.fields(obj))


def _train_epilog() -> str:
    from marljax.agents import ALGORITHMS
    from marljax.experiment import Experiment

    exp = Experiment()
    lines = [
        "--set KEY=VALUE keys (defaults shown):",
        f"  run:      seeds, seed, chunk_updates, out_dir, name, checkpoint (seeds={exp.seeds}, chunk_updates=auto)",
        f"  train:    {_field_help(exp.train)}",
    ]
    for name, spec in ALGORITHMS.items():
        lines.append(f"  {name} agent:   {_field_help(spec.config_cls(**spec.config_defaults))}")
        lines.append(f"  {name} hparams: {_field_help(spec.hparams_cls())}")
    lines += [
        "  env:      env.KEY=VALUE for any env option (see `marljax envs --options ID`)",
        "",
        "Hyperparameters (hparams) are traced: --grid sweeps them inside one compiled program.",
        "Unknown keys and values of the wrong type fail before anything is compiled.",
    ]
    return "\n".join(lines)


def _add_experiment_args(p: argparse.ArgumentParser) -> None:
    """The options that describe an experiment (shared by `train` and `sweep`)."""
    from marljax.experiment import DEFAULT_ENV

    p.add_argument("--algo", default=None, help="algorithm (see the keys below); default mappo")
    p.add_argument("--env", default=None, help=f"environment id; default {DEFAULT_ENV}")
    p.add_argument("--seeds", type=int, default=None, help="number of seeds (default 4)")
    p.add_argument("--seed", type=int, default=None, help="base seed (default 0)")
    p.add_argument(
        "--steps", type=int, default=None, help="env steps per run (train.total_env_steps)"
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value, hparam or env option (env.KEY=VALUE); repeatable",
    )
    p.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="HPARAM=V1,V2,...",
        help="sweep a hyperparameter over values; repeatable (Cartesian product)",
    )
    p.add_argument("--out", default=None, help="parent folder of run directories (default runs)")
    p.add_argument("--name", default=None, help="run directory name")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="marljax",
        description="JAX-native multi-agent RL: train, sweep, plot, list environments, benchmark.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command")

    from marljax.experiment import DEFAULT_ENV

    train = sub.add_parser(
        "train",
        help="train an algorithm on an environment (grid x seeds as one program)",
        description=(
            "Train ALGO on ENV for every seed and hparams setting at once, in chunks with "
            "checkpoints; writes a run directory with config.json, metrics.json (marl-eval), "
            "metrics.npz, learning_curve.png and checkpoints/. With no arguments: MAPPO on "
            f"{DEFAULT_ENV} with 4 seeds (about a minute or two on a laptop CPU)."
        ),
        epilog=_train_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_experiment_args(train)
    train.add_argument(
        "--resume",
        default=None,
        metavar="RUN_DIR",
        help="continue a run from its newest complete checkpoint, with the run's own config; "
        "other options given with it are applied on top, and a change of the static "
        "configuration (anything but the output location and --check-finite) is refused",
    )
    train.add_argument(
        "--check-finite",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="after every chunk, stop at the first NaN/inf metric or parameter (naming the "
        "update, metric, seed and hparams) before that chunk is checkpointed; on by default "
        "(a diverged policy can look perfect), --no-check-finite turns it off",
    )
    train.add_argument(
        "--qtable",
        action="store_true",
        help="value learners (iql, vdn, qmix) with feed-forward agents: after training, print "
        "the learned per-agent Q values and the joint Q_tot table at the first observation of "
        "an episode (seed 0 of each setting), e.g. for matrix games",
    )
    train.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    train.add_argument(
        "--allow-hparam-change",
        action="store_true",
        help="with --resume: continue with changed hyperparameters (--set lr=...), e.g. from the "
        "last good checkpoint of a diverged run; config.json records the change in its history",
    )
    train.add_argument(
        "--max-memory",
        default=None,
        help="device memory one chunk may use, e.g. 4GiB (default: 80%% of an accelerator's "
        "memory, half the free host memory on a CPU); checked before anything is allocated",
    )

    sweep = sub.add_parser(
        "sweep",
        help="search hyperparameters x seeds as one program and pick the best setting",
        description=(
            "A grid (--grid) and/or random sample (--sample) over the traced hyperparameters, "
            "times seeds, compiled once, sharded over every device, chunked when it would not "
            "fit in memory (the estimate is printed first). Writes a run directory with every "
            "curve and sweep.json (ranking and best setting)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_experiment_args(sweep)
    sweep.add_argument(
        "--sample",
        action="append",
        default=[],
        metavar="HPARAM=DIST",
        help="random search: log:LOW:HIGH, uniform:LOW:HIGH or choice:V1,V2,...; repeatable",
    )
    sweep.add_argument("--num-samples", type=int, default=0, help="random draws (per grid point)")
    sweep.add_argument("--sample-seed", type=int, default=0, help="seed of the random search")
    sweep.add_argument("--metric", default="episode_return", help="metric to rank settings by")
    sweep.add_argument("--mode", default="max", choices=("max", "min"), help="best = max or min")
    sweep.add_argument(
        "--window", type=int, default=1, help="a run's final value: mean of its last N values"
    )
    sweep.add_argument("--max-memory", default=None, help="per-device budget, e.g. 4GiB")
    sweep.add_argument("--runs-per-call", type=int, default=None, help="force runs per call")
    sweep.add_argument(
        "--distributed",
        action="store_true",
        help="call jax.distributed.initialize() first (multi-host; SLURM is detected)",
    )

    plot = sub.add_parser(
        "plot",
        help="write PNG figures for run directories",
        description="Learning curves with bootstrap CI bands; with several seeds, aggregate "
        "metrics (IQM etc.) and performance profiles; with several algorithms, probability of "
        "improvement.",
    )
    plot.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories")
    plot.add_argument("--out", default=None, help="output folder (default: the first RUN_DIR)")

    sub.add_parser(
        "bench",
        help="run the side-by-side benchmarks of bench/ (source checkout only)",
        description="Runs bench/run_all.py of the source checkout; extra arguments are passed on "
        "(e.g. --quick, --cases NAME, --markdown PATH, --json PATH).",
    )

    envs = sub.add_parser("envs", help="list registered environments")
    envs.add_argument(
        "--options", metavar="ENV_ID", default=None, help="show the options of one env"
    )
    return parser


def experiment_from_args(args: argparse.Namespace, base=None):
    """Build an `Experiment` from parsed `train` arguments (validates every key and value).

    Args:
      args: parsed `marljax train` arguments.
      base: the experiment the options apply to (default `Experiment()`; with `--resume`, the
        run's own experiment, so that only what the options change differs from it).
    """
    from marljax.agents import algo_spec
    from marljax.experiment import Experiment
    from marljax.train import TrainConfig

    base = Experiment() if base is None else base
    algo = args.algo if args.algo is not None else base.algo
    env = args.env if args.env is not None else base.env
    spec = algo_spec(algo)
    sets = cfg.parse_assignments(args.set, "--set")
    run_keys = {"seeds", "seed", "chunk_updates", "out_dir", "name", "checkpoint"}
    train_keys = set(cfg.field_names(TrainConfig))
    agent_keys = set(cfg.field_names(spec.config_cls))
    hp_keys = set(cfg.field_names(spec.hparams_cls))
    run_over, train_over, agent_over, hp_over, env_over = {}, {}, {}, {}, {}
    for key, value in sets.items():
        if key.startswith("env."):
            if not key[4:]:
                raise cfg.ConfigError(f"--set expects env.KEY=VALUE, got {key}={value!r}")
            env_over[key[4:]] = _env_value(value)
        elif key in run_keys:
            run_over[key] = value
        elif key in train_keys:
            train_over[key] = value
        elif key in agent_keys:
            agent_over[key] = value
        elif key in hp_keys:
            hp_over[key] = value
        else:
            valid = sorted(run_keys | train_keys | agent_keys | hp_keys) + ["env.<option>"]
            raise cfg.unknown_key_error(key, valid, f"--set (algo {algo})")
    if args.steps is not None:
        train_over["total_env_steps"] = args.steps
    for flag, key in (("seeds", "seeds"), ("seed", "seed"), ("out", "out_dir"), ("name", "name")):
        if getattr(args, flag) is not None:
            run_over[key] = getattr(args, flag)
    grid = {}
    grid_args = cfg.parse_assignments(args.grid, "--grid")
    if grid_args:
        from marljax.sweep import check_sweepable

        check_sweepable(algo, list(grid_args))  # names static settings as such
    for key, values in grid_args.items():
        if key not in hp_keys:
            raise cfg.unknown_key_error(
                key, sorted(hp_keys), "--grid (only traced hparams can be swept)"
            )
        grid[key] = [v for v in values.split(",") if v.strip()]
        if not grid[key]:
            raise cfg.ConfigError(f"--grid {key}= needs at least one value, e.g. {key}=1,2")
    train = cfg.replace_checked(base.train, train_over, "train")
    exp = cfg.replace_checked(base, run_over, "run")
    # agent/hparams values are validated against their classes in `build`.
    return dataclasses.replace(
        exp,
        algo=algo,
        env=env,
        env_kwargs={**base.env_kwargs, **env_over},
        train=train,
        agent={**base.agent, **agent_over},
        hparams={**base.hparams, **hp_over},
        grid=grid or base.grid,
        check_finite=base.check_finite
        if getattr(args, "check_finite", None) is None
        else bool(args.check_finite),
    )


def _env_value(raw: str) -> Any:
    """Env options: numbers, booleans, JSON lists (e.g. payoffs), or strings (e.g. coplayer)."""
    import json

    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def cmd_train(args: argparse.Namespace) -> int:
    from marljax.experiment import build, run_experiment

    base = _saved_experiment(args.resume) if args.resume else None
    # With --resume, the options apply on top of the run's own configuration; any change of
    # the static configuration is then refused by `run_experiment`, naming the difference.
    exp = experiment_from_args(args, base)
    built = build(exp)  # fail fast on bad configuration before printing anything
    if args.qtable:
        from marljax.agents.qlearning import QConfig

        if not isinstance(built.agent_config, QConfig) or built.agent_config.recurrent:
            raise cfg.ConfigError(
                "--qtable needs a value learner (iql, vdn, qmix) with feed-forward agents "
                "(--set recurrent=false)"
            )
    from marljax import sweep

    budget = None if args.max_memory is None else sweep.parse_bytes(args.max_memory)
    if args.allow_hparam_change and not args.resume:
        raise cfg.ConfigError("--allow-hparam-change goes with --resume RUN_DIR")
    result = run_experiment(
        exp,
        resume=args.resume,
        progress=not args.no_progress,
        max_memory_bytes=budget,
        allow_hparam_change=args.allow_hparam_change,
    )
    import numpy as np

    from marljax.experiment import final_returns

    final = final_returns(result.metrics)
    if args.qtable:
        _print_q_tables(exp, result)
    print(f"run directory: {result.run_dir}")
    for g, setting in enumerate(result.settings):
        label = ",".join(f"{k}={v:g}" for k, v in setting.items()) or "final return"
        vals = final[g]
        print(
            f"  {label}: mean {np.nanmean(vals):.3f} over {len(vals)} seeds  {np.round(vals, 3).tolist()}"
        )
    return 0


def _print_q_tables(exp, result) -> None:
    """`--qtable`: the learned Q tables of seed 0 of every setting."""
    import jax

    from marljax.agents.qlearning import first_step_q_table, format_q_table
    from marljax.experiment import build

    built = build(exp)
    for g, setting in enumerate(result.settings):
        state = jax.tree.map(lambda x, g=g: x[g, 0], result.state.agent_state)
        label = ",".join(f"{k}={v:g}" for k, v in setting.items()) or exp.algo
        print(f"learned Q values ({label}, seed {exp.seed}):")
        print(
            format_q_table(
                first_step_q_table(built.agent_config, built.env, state, built.env_params)
            )
        )


def cmd_sweep(args: argparse.Namespace) -> int:
    from marljax import sweep
    from marljax.experiment import build

    if args.distributed:
        from marljax import distributed

        distributed.initialize()
    exp = experiment_from_args(args)
    samples = cfg.parse_assignments(args.sample, "--sample")
    sweep.check_sweepable(exp.algo, [*exp.grid, *samples])
    sample = {k: sweep.parse_distribution(v, k) for k, v in samples.items()}
    if sample and args.num_samples < 1:
        raise cfg.ConfigError("--sample needs --num-samples N (random draws) with N >= 1")
    build(exp)
    result = sweep.run_sweep(
        exp,
        sample=sample,
        num_samples=args.num_samples,
        sample_seed=args.sample_seed,
        metric=args.metric,
        mode=args.mode,
        window=args.window,
        max_memory_bytes=None if args.max_memory is None else sweep.parse_bytes(args.max_memory),
        runs_per_call=args.runs_per_call,
    )
    if result.finite is not None and not result.finite[result.best_index].all():
        print(
            "marljax: error: no setting trained without NaN/inf in every seed; none is a result "
            "(see the ranking above and sweep.json's non_finite_seeds)",
            file=sys.stderr,
        )
        return 1
    print(f"best setting: {result.best_setting}")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from marljax.evaluation.plots import plot_runs

    out = args.out or args.run_dirs[0]
    for path in plot_runs(args.run_dirs, out):
        print(path)
    return 0


def _saved_experiment(run_dir: str):
    """The `Experiment` recorded in a run directory's `config.json`."""
    import json
    import os

    from marljax.experiment import Experiment

    path = os.path.join(run_dir, "config.json")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{run_dir} is not a run directory (no config.json)")
    with open(path) as f:
        try:
            saved = json.load(f)
        except json.JSONDecodeError as err:
            raise cfg.ConfigError(f"{path} is not valid JSON: {err}") from None
    if not isinstance(saved, dict) or "experiment" not in saved:
        raise cfg.ConfigError(f"{path} has no 'experiment' entry")
    saved = dict(saved["experiment"])
    saved.pop("check_finite", None)  # a choice of each invocation, not of the run
    return Experiment.from_dict(saved)


def cmd_envs(args: argparse.Namespace) -> int:
    import marljax
    from marljax.core.registry import spec

    if args.options:
        s = spec(args.options)
        env, params = marljax.make(args.options)
        print(f"{args.options}: {s.description}")
        print(
            f"  agents: {env.num_agents}, observation {env.observation_space(params)}, action {env.action_space(params)}"
        )
        print(f"  static options: {s.kwargs}")
        print("  params:")
        for f in dataclasses.fields(params):
            print(f"    {f.name} = {cfg.to_dict(getattr(params, f.name))}")
        return 0
    ids = marljax.registered_envs()
    width = max(len(i) for i in ids)
    for env_id in ids:
        print(f"{env_id:<{width}}  {spec(env_id).description}")
    print(f"\n{len(ids)} environments")
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "bench":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.bench_args = extra
    if args.command is None:
        parser.print_help()
        return 0
    from marljax.experiment import NonFiniteError

    try:
        if args.command == "train":
            return cmd_train(args)
        if args.command == "sweep":
            return cmd_sweep(args)
        if args.command == "plot":
            return cmd_plot(args)
        if args.command == "envs":
            return cmd_envs(args)
        if args.command == "bench":
            return cmd_bench(args)
    except (
        cfg.ConfigError,
        KeyError,
        TypeError,
        ValueError,
        OSError,  # permission, read-only, not a directory, no space: the message names the path
        NonFiniteError,
    ) as err:
        msg = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
        print(f"marljax: error: {msg}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
