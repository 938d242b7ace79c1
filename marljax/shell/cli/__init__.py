"""The `marljax` command line: it only builds configs and calls library functions.

marljax train                                   # the default experiment
marljax train --algo mappo --env matrix/climbing-v0 --seeds 8 --set lr=3e-4
marljax train --grid lr=1e-3,3e-4 --grid ent_coef=0,0.01   # grid x seeds, one compile
marljax train --resume runs/<run>                # continue from the newest checkpoint
marljax train --check-finite                     # stop at the first NaN/inf, keep checkpoints
marljax train --algo qmix --env matrix/two_step-v0 --set recurrent=false --qtable
marljax sweep --algo ippo --sample lr=log:1e-4:1e-2 --num-samples 16 --seeds 4
marljax plot runs/<run> runs/<other run>         # PNG figures in plots/<run>_vs_<other run>
marljax export runs/<run> runs/<other> --to me/  # marl-eval JSON, one step grid for all runs
marljax psro --env matrix/rps-v0 --meta-solver nash --population 16   # population training
marljax render runs/<run>                        # one greedy episode as an animated GIF
marljax envs                                     # list registered environments
"""

from __future__ import annotations

import _thread
import contextlib
import os
import sys
import threading

from marljax.core import config as cfg
from marljax.shell.cli.commands import (
    cmd_bench,
    cmd_benchmark,
    cmd_check,
    cmd_envs,
    cmd_eval,
    cmd_export,
    cmd_plot,
    cmd_render,
)
from marljax.shell.cli.parser import build_parser
from marljax.shell.cli.train import (
    cmd_psro,
    cmd_sweep,
    cmd_train,
    experiment_from_args,
)


@contextlib.contextmanager
def interrupts_kept():
    """Ctrl-C is never lost inside a garbage-collector callback.

    A KeyboardInterrupt raised while a gc callback runs (jax registers one, and Ctrl-C during
    XLA compilation often lands there) is printed by Python as "Exception ignored" and
    dropped, and the process runs on. Inside this context it is raised again in the main
    thread a moment later (from a timer thread: raised at once, it would land in this hook and
    be dropped again), at the next line of Python the main thread runs.
    """
    before = sys.unraisablehook

    def hook(unraisable):
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            threading.Timer(0.05, _thread.interrupt_main).start()
        else:
            before(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        if sys.unraisablehook is hook:  # (a hook chained over this one keeps it)
            sys.unraisablehook = before


def main(argv: list[str] | None = None) -> int:
    with interrupts_kept():
        return _main(argv)


#: `main`'s exit status after Ctrl-C.
INTERRUPTED = 130


def entry(argv: list[str] | None = None) -> None:
    """The `marljax` process: `main`, then exit with its status.

    After Ctrl-C the process leaves at once (`os._exit`, streams flushed) instead of through
    the interpreter's shutdown: the interrupted program may still be running on XLA's threads,
    and its host callbacks (progress, metrics) calling into a finalising interpreter abort the
    process ("terminate called after throwing an instance of ''", status -6 instead of 130).
    Leaving at once is as safe as a kill, which every run directory survives (checkpoints and
    files are written whole or not at all; `tests/test_crash_safety.py`).
    """
    code = main(argv)
    if code == INTERRUPTED:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(INTERRUPTED)
    sys.exit(code)


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "bench":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.bench_args = extra
    if args.command is None:
        parser.print_help()
        return 0
    from marljax.shell.experiment import NonFiniteError

    try:
        if args.command == "train":
            return cmd_train(args)
        if args.command == "sweep":
            return cmd_sweep(args)
        if args.command == "plot":
            return cmd_plot(args)
        if args.command == "eval":
            return cmd_eval(args)
        if args.command == "export":
            return cmd_export(args)
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
    except KeyboardInterrupt:  # Ctrl-C: whatever was running has unwound (locks released)
        print(
            "marljax: interrupted; a run directory keeps its newest complete checkpoint "
            "(continue it with --resume RUN_DIR)",
            file=sys.stderr,
        )
        return INTERRUPTED
    return 0


__all__ = [
    "INTERRUPTED",
    "build_parser",
    "entry",
    "experiment_from_args",
    "interrupts_kept",
    "main",
]
