"""Peak host memory of replay-heavy runs split over several program calls.

Five seeds of a benchmark cell (default the RWARE tiny-2ag IQL cell: EPyMARL's configuration,
its replay capped at what `--steps` collect) run in calls of `--runs-per-call` runs (default 2,
`execute(..., runs_per_call=)`), in 4 chunks (`--stop-after N`: only the first N), with a
callback fetching every chunk's state as the checkpoint callback of `marljax train` does and,
with `--checkpoint`, writing it as that callback does (`marljax.training.checkpoint`).
Each source tree runs in its own fresh process, one after the other, so that two versions of
the library can be compared side by side in one run (e.g. a worktree of an older commit); the
peak resident set size of each process is reported beside the runs' state size.

    python bench/bench_host_memory.py [--steps 100000] [--checkpoint] [--src PATH ...] [--json PATH]
    python bench/bench_host_memory.py --cell rware/tiny-4ag:qmix --steps 250000 --runs-per-call 1 \
        --stop-after 1 --checkpoint --src OLD_TREE .
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from harness import machine_info

_CHILD = r"""
import contextlib, json, resource, sys, tempfile, time
import jax, numpy as np
from marljax.benchmarks import CELLS
from marljax.benchmarks.suite import experiment_kwargs
from marljax.shell.build import build
from marljax.shell.experiment import Experiment
from marljax.training import execute as ex
from marljax.training.checkpoint import Checkpointer

opts = json.loads(sys.argv[1])
built = build(Experiment(seeds=5, **experiment_kwargs(CELLS[opts["cell"]], opts["steps"])))
keys = np.asarray(jax.vmap(jax.random.PRNGKey)(np.arange(5)))
sizes = []
t = time.perf_counter()
with contextlib.ExitStack() as stack:
    ckpt = None
    if opts["checkpoint"]:
        ckpt = stack.enter_context(Checkpointer(stack.enter_context(tempfile.TemporaryDirectory())))
    def callback(c):
        sizes.append(sum(x.nbytes for x in jax.tree.leaves(c.state())))
        if ckpt is not None:
            ckpt.save(c.done, c.state())
        return len(sizes) >= opts["stop_after"]
    ex.execute(built.trainer, keys, built.trainer.agent.default_hparams(),
               mesh=ex.make_mesh("runs", 1), runs_per_call=opts["runs_per_call"],
               chunk_updates=max(1, built.trainer.config.num_updates // 4), callbacks=[callback])
print(json.dumps({"state_gib": sizes[-1] / 2**30, "chunks": len(sizes),
                  "wall_s": time.perf_counter() - t,
                  "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}))
"""


def measure(src: str, opts: dict) -> dict:
    src = os.path.abspath(src)
    env = {**os.environ, "PYTHONPATH": src}
    argv = [sys.executable, "-c", _CHILD, json.dumps(opts)]
    # run inside `src`: `python -c` puts its working directory first on the path
    out = subprocess.run(argv, env=env, cwd=src, check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--checkpoint", action="store_true",
                    help="also write every chunk's state as a checkpoint")  # fmt: skip
    ap.add_argument("--cell", default="rware/tiny-2ag:iql", help="a benchmark cell")
    ap.add_argument("--runs-per-call", type=int, default=2)
    ap.add_argument("--stop-after", type=int, default=4, help="chunks to run (of 4)")
    ap.add_argument("--src", nargs="+", default=[os.path.join(os.path.dirname(__file__), "..")])
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    opts = {"cell": args.cell, "steps": args.steps, "checkpoint": args.checkpoint,
            "runs_per_call": args.runs_per_call, "stop_after": args.stop_after}  # fmt: skip
    rows = []
    for src in args.src:
        commit = subprocess.run(["git", "-C", src, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()  # fmt: skip
        row = {"src": src, "commit": commit, **measure(src, opts)}
        rows.append(row)
        print(f"{src}: state {row['state_gib']:.2f} GiB of 5 runs, peak RSS "
              f"{row['peak_rss_gib']:.2f} GiB ({row['chunks']} chunks, {row['wall_s']:.0f} s)")  # fmt: skip
    for row in rows[1:]:
        print(f"peak RSS {row['src']} / {rows[0]['src']}: "
              f"{row['peak_rss_gib'] / rows[0]['peak_rss_gib']:.2f}x")  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine_info(), **opts, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
