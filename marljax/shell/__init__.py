"""marljax.shell: what a user runs, on top of the library.

- `experiment`: the typed `Experiment` spec, `build`, `run_experiment` (run directories,
  resume, loggers, finiteness checks) and `baseline.baseline_main` for `baselines/` scripts.
- `sweep`: `run_sweep` and the ranking of settings (the spaces: `marljax.training.space`).
- `tune`: `run_tune`, PBT and successive halving inside a sweep's one program (the policies:
  `marljax.training.tune`).
- `policy`: `load_policy` / `Policy` over a run directory, `evaluate_run`, cross-play of runs.
- `outputs`: what a run directory holds besides checkpoints (metrics in marl-eval JSON via
  `marljax.evaluation.results`, `learning_curve.png` via `marljax.evaluation.plots`).
- `rundir`: the run directory's format, hashing and lock; `loggers`: CSV, TensorBoard, W&B.
- `cli`: the `marljax` command.

Quick use::

    from marljax.shell import Experiment, run_experiment
    run = run_experiment(Experiment(algo="qmix", env="matrix/two_step-v0", seeds=8))
"""

from marljax.shell.experiment import Experiment, RunResult, build, run_experiment
from marljax.shell.policy import EvalReport, Policy, evaluate_run, load_policy
from marljax.shell.sweep import SweepResult, run_sweep
from marljax.shell.tune import TuneResult, run_tune

__all__ = [
    "EvalReport",
    "Experiment",
    "Policy",
    "RunResult",
    "SweepResult",
    "TuneResult",
    "build",
    "evaluate_run",
    "load_policy",
    "run_experiment",
    "run_sweep",
    "run_tune",
]
