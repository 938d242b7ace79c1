"""The `marljax` command line: it only builds configs and calls library functions.

marljax train                                   # the default experiment
marljax train --algo mappo --env matrix/climbing-v0 --seeds 8 --set lr=3e-4
marljax train --grid lr=1e-3,3e-4 --grid ent_coef=0,0.01   # grid x seeds, one compile
marljax train --resume runs/<run>                # continue from the newest checkpoint
marljax train --check-finite                     # stop at the first NaN/inf, keep checkpoints
marljax train --algo qmix --env matrix/two_step-v0 --set recurrent=false --qtable
marljax sweep --algo ippo --sample lr=log:1e-4:1e-2 --num-samples 16 --seeds 4
marljax plot runs/<run> runs/<other run>         # PNG figures in plots/<run>_vs_<other run>
marljax psro --env matrix/rps-v0 --meta-solver nash --population 16   # population training
marljax render runs/<run>                        # one greedy episode as an animated GIF
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
        "  run:      seeds, seed, chunk_updates, out_dir, name, checkpoint "
        f"(seeds={exp.seeds}, chunk_updates=auto)",
        f"  train:    {_field_help(exp.train)}",
    ]
    for name, spec in ALGORITHMS.items():
        lines.append(f"  {name} agent:   {_field_help(spec.config_cls(**spec.config_defaults))}")
        lines.append(f"  {name} hparams: {_field_help(spec.hparams_cls())}")
        if spec.presets:
            lines.append(f"  {name} presets (--preset): {', '.join(sorted(spec.presets))}")
    lines += [
        "  env:      env.KEY=VALUE for any env option (see `marljax envs --options ID`)",
        "",
        "--algo psro (population training) runs `marljax psro` with --env, --seeds, --seed "
        "and --set keys of PSROConfig / PSROHParams / MetaSolverHParams (e.g. "
        "--set meta_solver=rae --set population_size=8).",
        "",
        "Hyperparameters (hparams) are traced: --grid sweeps them inside one compiled program.",
        "Unknown keys and values of the wrong type fail before anything is compiled.",
    ]
    return "\n".join(lines)


def _add_experiment_args(p: argparse.ArgumentParser) -> None:
    """The options that describe an experiment (shared by `train` and `sweep`)."""
    from marljax.experiment import DEFAULT_ENV

    p.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="an experiment as YAML/JSON, or a run directory's config.json (reproduces the "
        "run); the other options apply on top",
    )
    p.add_argument(
        "--algo",
        default=None,
        help="algorithm (see the keys below); default mappo; train --algo psro runs marljax psro",
    )
    p.add_argument(
        "--preset", default=None, help="a published configuration of the algorithm (see below)"
    )
    p.add_argument("--env", default=None, help=f"environment id; default {DEFAULT_ENV}")
    p.add_argument("--seeds", type=int, default=None, help="number of seeds (default 4)")
    p.add_argument("--seed", type=int, default=None, help="base seed (default 0)")
    p.add_argument(
        "--opponents",
        default=None,
        metavar="pool:NAME[=W],...",
        help="train agent 0 of a two-player repeated matrix game against scripted co-players, "
        "one drawn per episode with relative weight W (default 1), e.g. "
        "pool:tit_for_tat,always_defect=0.5 (names: marljax.envs.matrix.strategies)",
    )
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
    p.add_argument(
        "--devices",
        type=int,
        default=None,
        help="devices to use (default: every device; the runs are padded to fill them)",
    )
    p.add_argument(
        "--layout",
        default=None,
        choices=("runs", "envs"),
        help="runs: seeds x settings sharded over the devices (default); envs: every run's "
        "envs and learner split over them",
    )
    p.add_argument(
        "--max-memory",
        default=None,
        help="device memory one call may use, e.g. 4GiB (default: 80%% of an accelerator's "
        "memory, half the free host memory on a CPU); checked before anything is allocated",
    )
    p.add_argument(
        "--resume",
        default=None,
        metavar="RUN_DIR",
        help="continue a run from its newest complete checkpoint, with the run's own config; "
        "other options given with it are applied on top (--steps N extends a finished run), "
        "and a change of the static configuration is refused",
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument(
        "--log",
        action="append",
        default=None,
        choices=["tensorboard", "wandb"],
        help="also log to TensorBoard (RUN_DIR/tensorboard) or Weights & Biases (WANDB_MODE="
        "offline works without an account); repeatable; progress.csv is always written",
    )


def _add_train_parser(sub) -> None:
    """The `train` subcommand's options."""
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
    train.add_argument(
        "--allow-hparam-change",
        action="store_true",
        help="with --resume: continue with changed hyperparameters (--set lr=...), e.g. from the "
        "last good checkpoint of a diverged run; config.json records the change in its history",
    )


def _add_sweep_parser(sub) -> None:
    """The `sweep` subcommand's options."""
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
    sweep.add_argument(
        "--num-samples", type=int, default=None, help="random draws (per grid point)"
    )
    sweep.add_argument("--sample-seed", type=int, default=None, help="seed of the random search")
    sweep.add_argument("--metric", default=None, help="metric to rank settings by")
    sweep.add_argument("--mode", default=None, choices=("max", "min"), help="best = max or min")
    sweep.add_argument(
        "--window", type=int, default=None, help="a run's final value: mean of its last N values"
    )
    sweep.add_argument(
        "--distributed",
        action="store_true",
        help="call jax.distributed.initialize() first (multi-host; SLURM is detected)",
    )


def _add_plot_parser(sub) -> None:
    """The `plot` subcommand's options."""
    plot = sub.add_parser(
        "plot",
        help="write PNG figures for run directories",
        description="Learning curves (mean over seeds with a 95%% bootstrap CI band, the env's "
        "reference returns as dashed lines); with several seeds, aggregate metrics (IQM etc.) "
        "and performance profiles; with several settings, probability of improvement. Every "
        "setting of every run is its own curve and row, labelled by what differs between the "
        "configs (e.g. 'mappo lr=3e-4'). The figures go to a new folder, never into a run "
        "directory.",
    )
    plot.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories")
    plot.add_argument(
        "--out",
        default=None,
        help="output folder (default: plots/<RUN>_vs_<RUN> in the current directory, named "
        "after the run directories)",
    )
    plot.add_argument(
        "--top",
        type=int,
        default=None,
        metavar="K",
        help="show the best K settings by mean final return (default 8); 0 shows all",
    )


def _add_eval_parser(sub) -> None:
    """The `eval` subcommand's options."""
    ev = sub.add_parser(
        "eval",
        help="evaluate the trained greedy policies of a run directory",
        description="Evaluates every seed's greedy policy (newest checkpoint) of one setting in "
        "one compiled program, prints the returns with their IQM and 95%% bootstrap CI, and "
        "writes eval.json into the run directory. With the defaults it repeats the run's own "
        "final evaluation. --crossplay RUN_B pairs every seed of RUN_DIR with every seed of "
        "RUN_B.",
    )
    ev.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (train or sweep)")
    ev.add_argument("--episodes", type=int, default=None,
                    help="episodes per seed (default: the run's eval_episodes)")  # fmt: skip
    ev.add_argument("--env", default=None,
                    help="evaluate on another env id with the same spaces")  # fmt: skip
    ev.add_argument("--setting", default=None,
                    help="a sweep's setting, as an index or lr=3e-4,... (default: the best)")  # fmt: skip
    ev.add_argument("--max-steps", type=int, default=None,
                    help="step budget of one evaluation (default: the env's max_steps)")  # fmt: skip
    ev.add_argument("--crossplay", default=None, metavar="RUN_B",
                    help="cross-play with another run directory's seeds")  # fmt: skip
    ev.add_argument("--roles", default="0",
                    help="with --crossplay: the agents RUN_DIR controls, e.g. 0 or 0,2")  # fmt: skip


def _add_render_parser(sub) -> None:
    """The `render` subcommand's options."""
    rd = sub.add_parser(
        "render",
        help="draw one episode of a run's greedy policy as an animated GIF",
        description="Plays one episode with the greedy policy of the first seed (newest "
        "checkpoint) and draws it frame by frame (the step and the return so far in the "
        "title) into RUN_DIR/episode_seed<SEED>.gif, and an MP4 beside it when an ffmpeg "
        "executable is on PATH. Draws grid worlds (LBF, predator-prey, pathfinding), particle "
        "worlds, Coin Game, Harvest, Cleanup, swarms and JaxMARL's SMAX.",
    )
    rd.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (train or sweep)")
    rd.add_argument("--seed", type=int, default=0,
                    help="PRNG seed of the episode (reset and sampling; default 0)")  # fmt: skip
    rd.add_argument("--max-steps", type=int, default=None,
                    help="step budget of the episode (default: the env's max_steps)")  # fmt: skip
    rd.add_argument("--fps", type=float, default=5, help="frames per second (default 5)")
    rd.add_argument("--out", default=None, metavar="PATH",
                    help="the GIF to write (default: in the run directory)")  # fmt: skip
    rd.add_argument("--setting", default=None,
                    help="a sweep's setting, as an index or lr=3e-4,... (default: the best)")  # fmt: skip


def _add_benchmark_parser(sub) -> None:
    """The `benchmark` and `check` subcommands' options."""
    bm = sub.add_parser(
        "benchmark",
        help="run the benchmark suite: algorithms x tasks x seeds with published configurations",
        description="Trains every cell of --algos x --tasks (one compiled program of all seeds "
        "per cell) with its published configuration (JaxMARL's configs for SMAX, MPE, "
        "Overcooked and Hanabi; EPyMARL's for LBF and RWARE), writes a run directory per cell, "
        "benchmark.json, results.md (IQM and 95%% CI of each cell's score beside the published "
        "number) and performance_profile.png into --out. Run again with the same options to "
        "resume a killed benchmark: finished cells are not run again. --list shows the tasks "
        "and their cells.",
    )
    bm.add_argument("--tasks", default="smax/3m",
                    help="comma-separated tasks (default smax/3m; --list shows them)")  # fmt: skip
    bm.add_argument("--algos", default="ippo,mappo",
                    help="comma-separated algorithms (default ippo,mappo)")  # fmt: skip
    bm.add_argument("--seeds", type=int, default=5, help="seeds per cell (default 5)")
    bm.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    bm.add_argument("--budget", default="published",
                    help="'published' (each source's env steps), 'cpu' (each cell's stated "
                    "smaller budget) or env steps for every cell (default published)")  # fmt: skip
    bm.add_argument("--out", default=None, metavar="DIR",
                    help="the benchmark directory (default benchmarks/<tasks>_<budget>)")  # fmt: skip
    bm.add_argument("--write-bands", default=None, metavar="PATH",
                    help="after the run, write its cells as reference bands into PATH (a "
                    "bands JSON file, merged)")  # fmt: skip
    bm.add_argument("--list", action="store_true", help="list the tasks and cells, run nothing")
    bm.add_argument("--report", default=None, metavar="DIR",
                    help="rewrite DIR's results.md and performance_profile.png from its "
                    "benchmark.json (the stored results), run nothing")  # fmt: skip
    bm.add_argument("--no-progress", action="store_true", help="no progress bars")
    ck = sub.add_parser(
        "check",
        help="is a run inside the reference band of its benchmark cell?",
        description="Finds the reference band of RUN_DIR (same algorithm, env, env options "
        "and budget) among the versioned bands of the package (or --bands), computes the "
        "run's learning curve at the band's points and says where it leaves the band and which "
        "configuration keys differ from the band's. Exit status 0 inside, 1 outside.",
    )
    ck.add_argument("run_dir", metavar="RUN_DIR", help="a run directory")
    ck.add_argument("--bands", default=None, metavar="PATH",
                    help="a bands JSON file (default: the package's)")  # fmt: skip


def _add_psro_parser(sub) -> None:
    """The `psro` subcommand's options."""
    ps = sub.add_parser(
        "psro",
        help="PSRO / fictitious play / self-play on a two-player matrix game",
        description="Runs PSRO on a two-player matrix game (marljax.population.make_psro), every "
        "seed in one compiled program, and prints the NashConv of the meta-strategy as the "
        "population grows. Fictitious play is --meta-solver uniform, iterated best-response "
        "self-play --meta-solver last.",
    )
    ps.add_argument("--env", default="matrix/rps-v0",
                    help="a two-player matrix game (default matrix/rps-v0)")  # fmt: skip
    ps.add_argument("--meta-solver", default="nash",
                    help="uniform, last, nash, prd, alpharank or rae (default nash)")  # fmt: skip
    ps.add_argument("--population", type=int, default=16,
                    help="final policies per player K (default 16)")  # fmt: skip
    ps.add_argument("--best-response", default="exact",
                    help="exact, pg (softmax policy gradient) or agent (a registered algorithm)")  # fmt: skip
    ps.add_argument("--br-algo", default="ippo",
                    help="with --best-response agent: the registered algorithm (default ippo)")  # fmt: skip
    ps.add_argument("--seeds", type=int, default=8, help="seeds, vmapped (default 8)")
    ps.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    ps.add_argument("--symmetric", action="store_true",
                    help="one population shared by both players (symmetric games)")  # fmt: skip
    ps.add_argument("--json", default=None, metavar="PATH",
                    help="also write the NashConv curves and meta-strategies as JSON")  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    """The `marljax` argument parser: one subparser per command."""
    parser = argparse.ArgumentParser(
        prog="marljax",
        description="JAX-native multi-agent RL: train, sweep, plot, list environments, benchmark.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command")
    _add_train_parser(sub)
    _add_sweep_parser(sub)
    _add_plot_parser(sub)
    _add_eval_parser(sub)
    _add_render_parser(sub)
    _add_benchmark_parser(sub)
    _add_psro_parser(sub)

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


def experiment_from_args(args: argparse.Namespace, base: dict | None = None):
    """Build an `Experiment` from parsed `train`/`sweep` arguments, once (validates everything).

    Args:
      args: parsed arguments.
      base: the experiment mapping the options apply to (default: `--config`'s file, else the
        defaults; with `--resume`, the run's own experiment).
    """
    from marljax.agents import algo_spec
    from marljax.experiment import Experiment
    from marljax.train import TrainConfig

    if base is None:
        base = _read_experiment(args.config) if args.config else {}
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    for flag, key in (("algo", "algo"), ("env", "env"), ("preset", "preset"), ("seeds", "seeds"),
                      ("seed", "seed"), ("out", "out_dir"), ("name", "name"),
                      ("devices", "devices"), ("layout", "layout"), ("opponents", "opponents"),
                      ("num_samples", "num_samples"), ("sample_seed", "sample_seed"),
                      ("metric", "metric"), ("mode", "mode"), ("window", "window")):  # fmt: skip
        if getattr(args, flag, None) is not None:
            data[key] = getattr(args, flag)
    algo = data.get("algo", Experiment.algo)
    spec = algo_spec(algo)
    run_keys = {"seeds", "seed", "chunk_updates", "out_dir", "name", "checkpoint"}
    groups = {
        "train": set(cfg.field_names(TrainConfig)),
        "agent": set(cfg.field_names(spec.config_cls)),
        "hparams": set(cfg.field_names(spec.hparams_cls)),
    }
    for key, value in cfg.parse_assignments(args.set, "--set").items():
        if key.startswith("env."):
            if not key[4:]:
                raise cfg.ConfigError(f"--set expects env.KEY=VALUE, got {key}={value!r}")
            data.setdefault("env_kwargs", {})[key[4:]] = _env_value(value)
        elif key in run_keys:
            data[key] = value
        else:
            group = next((g for g, names in groups.items() if key in names), None)
            if group is None:
                valid = sorted(run_keys.union(*groups.values())) + ["env.<option>"]
                raise cfg.unknown_key_error(key, valid, f"--set (algo {algo})")
            data.setdefault(group, {})[key] = value
    if args.steps is not None:
        data.setdefault("train", {})["total_env_steps"] = args.steps
    grid = _assignments_once(args.grid, "--grid")
    if grid:
        data["grid"] = {k: [v for v in vals.split(",") if v.strip()] for k, vals in grid.items()}
    sample = _assignments_once(getattr(args, "sample", []), "--sample")
    if sample:
        data["sample"] = sample
    if getattr(args, "check_finite", None) is not None:
        data["check_finite"] = bool(args.check_finite)
    if getattr(args, "log", None):
        data["log"] = list(args.log)
    exp = Experiment.from_dict(data)
    _say_rounding(exp, args.steps)
    return exp


def _assignments_once(items: list[str], flag: str) -> dict[str, str]:
    """`parse_assignments`, refusing a key given twice (e.g. `--grid lr=1 --grid lr=2`)."""
    seen = [cfg.parse_assignments([item], flag) for item in items or []]
    keys = [k for d in seen for k in d]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise cfg.ConfigError(
            f"{flag} {', '.join(repeated)} given more than once; list every value in one "
            f"{flag} (e.g. {flag} {repeated[0]}=V1,V2)"
        )
    return {k: v for d in seen for k, v in d.items()}


def _say_rounding(exp, steps: int | None) -> None:
    """`--steps` that is not a whole number of updates: say what it rounds to."""
    t = exp.train
    done = t.num_updates * t.steps_per_update
    if steps is not None and done != steps:
        print(
            f"marljax: --steps {steps:,} is not a whole number of updates of num_envs "
            f"{t.num_envs} x rollout_len {t.rollout_len} = {t.steps_per_update:,} steps: "
            f"training {t.num_updates} updates = {done:,} env steps",
            file=sys.stderr,
        )


def _read_experiment(path: str) -> dict:
    """The experiment mapping of a YAML/JSON file (an experiment or a run's config.json)."""
    try:
        with open(path) as f:
            data = cfg.loads(f.read(), path)
    except FileNotFoundError:
        raise FileNotFoundError(f"--config {path}: no such file") from None
    except IsADirectoryError:
        raise IsADirectoryError(
            f"--config {path} is a directory; give a YAML/JSON file (for a run: "
            f"{path.rstrip('/')}/config.json, or --resume {path})"
        ) from None
    if "experiment" in data:
        from marljax.experiment import Experiment

        Experiment.from_dict(data)  # checks the format version
        data = data["experiment"]
    data = dict(data)
    data.pop("check_finite", None)  # a choice of each invocation, not of the run
    return data


def _env_value(raw: str) -> Any:
    """Env options: numbers, booleans, JSON lists (e.g. payoffs), or strings (e.g. coplayer)."""
    import json

    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def cmd_train(args: argparse.Namespace) -> int:
    import numpy as np

    from marljax.experiment import build, final_returns, run_experiment

    if args.algo == "psro":
        return _train_psro(args)
    # With --resume, the options apply on top of the run's own configuration; any change of
    # the static configuration is then refused by `run_experiment`, naming the difference.
    base = _read_experiment(_config_path(args.resume)) if args.resume else None
    built = build(experiment_from_args(args, base))  # once; fails fast before printing anything
    if args.qtable:
        from marljax.agents.qlearning import QConfig

        if not isinstance(built.agent_config, QConfig) or built.agent_config.recurrent:
            raise cfg.ConfigError(
                "--qtable needs a value learner (iql, vdn, qmix) with feed-forward agents "
                "(--set recurrent=false)"
            )
    if args.allow_hparam_change and not args.resume:
        raise cfg.ConfigError("--allow-hparam-change goes with --resume RUN_DIR")
    result = run_experiment(
        built,
        resume=args.resume,
        progress=not args.no_progress,
        max_memory_bytes=_budget(args),
        allow_hparam_change=args.allow_hparam_change,
    )
    if args.qtable:
        _print_q_tables(built, result)
    print(f"run directory: {result.run_dir}")
    from marljax.rollout import score_label, task_metric_names

    episodes = built.trainer.config.eval_episodes
    summaries = [("episode_return", "final return (training episodes, exploring policy)")]
    if "eval/episode_return" in result.metrics:
        summaries.append(
            ("eval/episode_return", f"final greedy evaluation ({episodes} episodes per seed)")
        )
    for name in task_metric_names(result.metrics):  # e.g. SMAX's win rate
        summaries.append((name, f"final {score_label(name)}"))
    from marljax.core import env_references

    refs = env_references(built.exp.env, built.exp.env_kwargs)
    if refs:
        print("reference returns of " + built.exp.env + ": "
              + ", ".join(f"{name} {value:g}" for name, value in refs.items()))  # fmt: skip
    for metric, title in summaries:
        final = final_returns(result.metrics, metric)
        print(f"{title}:")
        for g, setting in enumerate(result.settings):
            label = ",".join(f"{k}={v:g}" for k, v in setting.items()) or "all seeds"
            vals = final[g]
            mean = f"{np.mean(vals):.3f}" if np.isfinite(vals).all() else "n/a (no episode ended)"
            print(f"  {label}: mean {mean} over {len(vals)} seeds  {np.round(vals, 3).tolist()}")
    return 0


def _budget(args: argparse.Namespace) -> int | None:
    from marljax.execute import parse_bytes

    return None if args.max_memory is None else parse_bytes(args.max_memory)


def _config_path(run_dir: str) -> str:
    import os

    path = os.path.join(run_dir, "config.json")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{run_dir} is not a run directory (no config.json)")
    return path


def _print_q_tables(built, result) -> None:
    """`--qtable`: the learned Q tables of seed 0 of every setting."""
    import jax

    from marljax.agents.qlearning import first_step_q_table, format_q_table

    exp = built.exp
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

    if args.distributed:
        from marljax.execute import initialize

        initialize()
    base = _read_experiment(_config_path(args.resume)) if args.resume else None
    exp = experiment_from_args(args, base)
    if exp.sample and exp.num_samples < 1:
        raise cfg.ConfigError("--sample needs --num-samples N (random draws) with N >= 1")
    result = sweep.run_sweep(
        exp, max_memory_bytes=_budget(args), resume=args.resume, progress=not args.no_progress
    )
    if result.finite is not None and not result.finite[result.best_index].all():
        print(
            "marljax: error: no setting trained without NaN/inf in every seed; none is a result "
            "(see the ranking above and sweep.json's non_finite_seeds)",
            file=sys.stderr,
        )
        return 1
    tied = [g for g in (result.tied or []) if g != result.best_index]
    note = f" (tied with {len(tied)} other setting(s); see the ranking)" if tied else ""
    print(f"best setting: {result.best_setting}{note}")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from marljax.evaluation.plots import DEFAULT_TOP, plot_runs

    top = DEFAULT_TOP if args.top is None else args.top
    if top < 0:
        raise cfg.ConfigError(f"--top must be >= 0 (0 shows every setting), got {top}")
    out = args.out or default_plot_dir(args.run_dirs)
    for path in plot_runs(args.run_dirs, out, top=top or None):
        print(path)
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    import numpy as np

    from marljax.policy import crossplay_runs, evaluate_run

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

    from marljax.evaluation.render import render_episode

    setting = args.setting
    if setting is not None and setting.isdigit():
        setting = int(setting)
    path = render_episode(args.run_dir, args.out, args.seed, args.max_steps, args.fps, setting)
    print(path)
    if shutil.which("ffmpeg"):  # written beside the GIF
        print(path.with_suffix(".mp4"))
    return 0


#: `marljax train` options that `--algo psro` does not take (it runs `marljax psro`).
_NOT_PSRO = ("config", "preset", "steps", "grid", "out", "name", "devices", "layout",
             "max_memory", "resume", "log", "opponents", "qtable")  # fmt: skip


def _train_psro(args: argparse.Namespace) -> int:
    """`marljax train --algo psro`: `marljax psro` with `--set` keys of `PSROConfig`,
    `PSROHParams` and `MetaSolverHParams` (PSRO trains populations, not one agent, so it writes
    no run directory)."""
    from marljax.population import MetaSolverHParams, PSROConfig, PSROHParams

    given = [k for k in _NOT_PSRO if getattr(args, k, None) not in (None, False, [])]
    if args.allow_hparam_change:
        given.append("allow_hparam_change")
    if given:
        flags = ", ".join("--" + k.replace("_", "-") for k in given)
        raise cfg.ConfigError(
            f"--algo psro takes --env, --seeds, --seed and --set; not {flags} (PSRO grows "
            "populations and writes no run directory; see `marljax psro --help`)"
        )
    sets = cfg.parse_assignments(args.set, "--set")
    groups = {"config": PSROConfig(), "hparams": PSROHParams(), "meta": MetaSolverHParams()}
    split = {g: {} for g in groups}
    nested = ("meta", "br_agent", "br_agent_config", "br_train")  # not settable as text
    names = {g: [n for n in cfg.field_names(obj) if n not in nested] for g, obj in groups.items()}
    for key, value in sets.items():
        group = next((g for g, valid in names.items() if key in valid), None)
        if group is None:
            valid = [n for v in names.values() for n in v]
            raise cfg.unknown_key_error(key, valid, "--set (psro)")
        split[group][key] = value
    config = cfg.replace_checked(groups["config"], split["config"], "psro")
    meta = cfg.replace_checked(groups["meta"], split["meta"], "psro meta-solver")
    hparams = cfg.replace_checked(groups["hparams"], split["hparams"], "psro").replace(meta=meta)
    seeds = 8 if args.seeds is None else args.seeds
    seed = 0 if args.seed is None else args.seed
    return _run_psro(args.env or "matrix/rps-v0", config, hparams, seeds, seed)


def cmd_psro(args: argparse.Namespace) -> int:
    from marljax.population import PSROConfig, PSROHParams

    config = PSROConfig(
        population_size=args.population,
        meta_solver=args.meta_solver,
        best_response=args.best_response,
        br_algo=args.br_algo,
        symmetric=args.symmetric,
    )
    record = {k: v for k, v in vars(args).items() if k not in ("command",)}
    return _run_psro(args.env, config, PSROHParams(), args.seeds, args.seed, args.json, record)


def _run_psro(env_id, config, hparams, seeds, seed, json_path=None, record=None) -> int:
    """Run `make_psro` for `seeds` seeds in one program and print the NashConv curve."""
    import json

    import jax
    import numpy as np

    import marljax
    from marljax.population import make_psro

    if seeds < 1:
        raise cfg.ConfigError(f"--seeds must be >= 1, got {seeds}")
    env, params = marljax.make(env_id)
    run = jax.jit(jax.vmap(make_psro(config, env, params), in_axes=(0, None)))
    keys = jax.vmap(jax.random.PRNGKey)(np.arange(seed, seed + seeds))
    out = jax.device_get(run(keys, hparams))
    nash_conv = np.asarray(out.nash_conv)  # [S, K]
    print(f"PSRO on {env_id}: meta-solver {config.meta_solver}, {config.best_response} best "
          f"responses, {seeds} seeds; NashConv of the meta-strategy (mean [min, max])")  # fmt: skip
    for k in range(nash_conv.shape[1]):
        col = nash_conv[:, k]
        print(f"  K={k + 1:<4d} {col.mean():.4f} [{col.min():.4f}, {col.max():.4f}]")
    final = np.asarray(out.meta_strategy)[:, -1]  # [S, 2, K]
    mixture = np.einsum("sik,sikn->sin", final, np.asarray(out.policies))  # [S, 2, N]
    for i in range(2):
        print(f"  player {i} final mixture over actions (seed mean): "
              f"{np.round(mixture[:, i].mean(0).astype(float), 3).tolist()}")  # fmt: skip
    if json_path:
        with open(json_path, "w") as f:
            json.dump(
                {
                    "args": record,
                    "nash_conv": nash_conv.tolist(),
                    "meta_strategy": final.tolist(),
                    "mixture": mixture.tolist(),
                },
                f,
                indent=1,
                default=str,
            )
        print(f"wrote {json_path}")
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
    out = args.out or os.path.join(
        "benchmarks", "_".join(t.replace("/", "-") for t in tasks)[:80] + f"_{budget}"
    )
    state = run_benchmark(
        tasks, algos, out, seeds=args.seeds, seed=args.seed, budget=budget,
        progress=not args.no_progress,
    )  # fmt: skip
    with open(os.path.join(out, "results.md")) as f:
        print(f.read())
    if args.write_bands:
        bands = [
            make_band(os.path.join(out, s["run_dir"]), name, s["metric"],
                      TASKS[name.split(":")[0]].upstream)
            for name, s in state["cells"].items()
        ]  # fmt: skip
        print(f"bands written to {write_bands(bands, args.write_bands)}")
    print(f"benchmark directory: {out}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from marljax.benchmarks import check_run

    report = check_run(args.run_dir, args.bands)
    print(report)
    return 0 if report.inside else 1


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
    from marljax.core.registry import family_ids

    ids = marljax.registered_envs()
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
        if args.command == "eval":
            return cmd_eval(args)
        if args.command == "render":
            return cmd_render(args)
        if args.command == "envs":
            return cmd_envs(args)
        if args.command == "benchmark":
            return cmd_benchmark(args)
        if args.command == "check":
            return cmd_check(args)
        if args.command == "psro":
            return cmd_psro(args)
        if args.command == "bench":
            return cmd_bench(args)
    except (
        cfg.ConfigError,
        KeyError,
        TypeError,
        ValueError,
        OSError,  # permission, read-only, not a directory, no space: the message names the path
        OverflowError,  # a size beyond what the program's integers hold
        NonFiniteError,
    ) as err:
        msg = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
        print(f"marljax: error: {msg}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
