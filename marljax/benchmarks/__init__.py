"""The benchmarks papers report on, with published configurations, reference bands and checks.

    from marljax.benchmarks import run_benchmark, check_run
    run_benchmark(["smax/3m"], ["ippo", "mappo"], "benchmarks/smax", seeds=5, budget="cpu")
    print(check_run("benchmarks/smax/smax_3m__mappo"))   # inside the reference band?

`suite` defines the tasks and cells (a published configuration per algorithm and task),
`runner` runs a benchmark directory (`marljax benchmark`), `scores` holds its statistics and
`bands` the versioned reference bands and `marljax check`. See docs/benchmarks.md.
"""

from marljax.benchmarks.bands import CheckReport, check_run, load_bands, make_band, write_bands
from marljax.benchmarks.runner import published, results_table, run_benchmark
from marljax.benchmarks.suite import ALGOS, CELLS, TASKS, Cell, Task, cell, task

__all__ = [
    "ALGOS",
    "CELLS",
    "TASKS",
    "Cell",
    "CheckReport",
    "Task",
    "cell",
    "check_run",
    "load_bands",
    "make_band",
    "published",
    "results_table",
    "run_benchmark",
    "task",
    "write_bands",
]
