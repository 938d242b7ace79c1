"""The `marljax` argument parser: one subparser per command, options from the typed configs."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1 (0 or a negative count is refused, not ignored)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _field_help(obj: Any) -> str:
    return ", ".join(f"{f.name}={getattr(obj, f.name)!r}" for f in dataclasses.fields(obj))


def _train_epilog() -> str:
    from marljax.agents import ALGORITHMS
    from marljax.shell.experiment import Experiment

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
    from marljax.shell.experiment import DEFAULT_ENV

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
        "--league",
        default=None,
        metavar="RULE",
        help="train a league on a two-sided env: the algorithm learns team 0 against its own "
        "snapshots (when the teams differ, e.g. MPE simple tag, one learner per team against "
        "the other's), drawn per episode by RULE (self, latest, uniform, pfsp, psro); more with "
        "--set league.capacity=8 --set league.snapshot_interval=10 (marljax.population.league)",
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
    from marljax.shell.experiment import DEFAULT_ENV

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
    tune = sweep.add_argument_group(
        "tune while training (each seed one population of its own --num-samples draws)"
    )
    tune.add_argument(
        "--pbt", type=int, default=None, metavar="N",
        help="population-based training: every N updates the bottom runs copy the top ones and "
        "perturb their --sample hyperparameters",
    )  # fmt: skip
    tune.add_argument(
        "--halving", default=None, metavar="F1,F2,...",
        help="successive halving: after these fractions of the run the weaker half of each "
        "population stops (--tune-set keep=F)",
    )  # fmt: skip
    tune.add_argument(
        "--tune-random", action="store_true", default=None,
        help="the random-search baseline of the same draws (each seed its own), no tuning",
    )  # fmt: skip
    tune.add_argument(
        "--tune-set", action="append", default=[], metavar="KEY=VALUE",
        help="tuner options: fraction, resample, perturb=0.8/1.25, window, keep, metric",
    )  # fmt: skip
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
        description="Learning curves (mean over seeds with a 95% bootstrap CI band, the env's "
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


def _add_export_parser(sub) -> None:
    """The `export` subcommand's options."""
    ex = sub.add_parser(
        "export",
        help="write runs' metrics as marl-eval JSON, all on one step grid",
        description="One marl-eval JSON per run directory in a new folder (marl-eval's "
        "concatenate_json_files reads every .json under it), each metric cut into the same "
        "number of windows of the run's updates, so runs with different logging schedules "
        "merge: return, eval_return (greedy evaluations, when the runs have them) and the "
        "task's scores (e.g. win_rate).",
    )
    ex.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories")
    ex.add_argument("--to", required=True, metavar="DIR", help="a new or empty output folder")
    ex.add_argument(
        "--points", type=positive_int, default=20, help="steps per run in the file (default 20)"
    )


def _add_eval_parser(sub) -> None:
    """The `eval` subcommand's options."""
    ev = sub.add_parser(
        "eval",
        help="evaluate the trained greedy policies of a run directory",
        description="Evaluates every seed's greedy policy (newest checkpoint) of one setting in "
        "one compiled program, prints the returns with their IQM and 95% bootstrap CI, and "
        "writes eval.json into the run directory. With the defaults it repeats the run's own "
        "final evaluation. --crossplay RUN_B pairs every seed of RUN_DIR with every seed of "
        "RUN_B.",
    )
    ev.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (train or sweep)")
    ev.add_argument("--episodes", type=positive_int, default=None,
                    help="episodes per seed (default: the run's eval_episodes)")  # fmt: skip
    ev.add_argument("--env", default=None,
                    help="evaluate on another env id with the same spaces")  # fmt: skip
    ev.add_argument("--setting", default=None,
                    help="a sweep's setting, as an index or lr=3e-4,... (default: the best)")  # fmt: skip
    ev.add_argument("--max-steps", type=positive_int, default=None,
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
    rd.add_argument("--max-steps", type=positive_int, default=None,
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
        "benchmark.json, results.md (IQM and 95% CI of each cell's score beside the published "
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
    bm.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override an agent config value, hparam or train option of every "
                    "cell (an ablation, e.g. parameter_mode=independent); recorded in the "
                    "plan and the report; repeatable")  # fmt: skip
    bm.add_argument("--max-memory", default=None,
                    help="device memory one program call of a cell may use, e.g. 4GiB (default: "
                    "80%% of an accelerator's memory, half the free host memory on a CPU)")  # fmt: skip
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
    _add_export_parser(sub)
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
