"""Peak host memory of replay-heavy runs split over several program calls.

Five seeds of the RWARE tiny-2ag IQL benchmark cell (EPyMARL's configuration, its replay capped
at what `--steps` collect) run in calls of 2 runs (`execute(..., runs_per_call=2)`), in 4 chunks,
with a callback fetching every chunk's state as the checkpoint callback of `marljax train` does
and, with `--checkpoint`, writing it as that callback does (`marljax.training.checkpoint`).
Each source tree runs in its own fresh process, one after the other, so that two versions of
`marljax.training.execute` can be compared side by side in one run (e.g. a worktree of an older
commit); the peak resident set size of each process is reported beside the runs' state size.

    python bench/bench_host_memory.py [--steps 100000] [--checkpoint] [--src PATH ...] [--json PATH]
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

built = build(Experiment(seeds=5, **experiment_kwargs(CELLS["rware/tiny-2ag:iql"], int(sys.argv[1]))))
keys = np.asarray(jax.vmap(jax.random.PRNGKey)(np.arange(5)))
sizes = []
t = time.perf_counter()
with contextlib.ExitStack() as stack:
    ckpt = None
    if sys.argv[2] == "1":
        ckpt = stack.enter_context(Checkpointer(stack.enter_context(tempfile.TemporaryDirectory())))
    def callback(c):
        sizes.append(sum(x.nbytes for x in jax.tree.leaves(c.state())))
        if ckpt is not None:
            ckpt.save(c.done, c.state())
    ex.execute(built.trainer, keys, built.trainer.agent.default_hparams(),
               mesh=ex.make_mesh("runs", 1), runs_per_call=2,
               chunk_updates=max(1, built.trainer.config.num_updates // 4), callbacks=[callback])
print(json.dumps({"state_gib": sizes[-1] / 2**30, "chunks": len(sizes),
                  "wall_s": time.perf_counter() - t,
                  "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}))
"""


def measure(src: str, steps: int, checkpoint: bool = False) -> dict:
    env = {**os.environ, "PYTHONPATH": os.path.abspath(src)}
    argv = [sys.executable, "-c", _CHILD, str(steps), str(int(checkpoint))]
    out = subprocess.run(argv, env=env, check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--checkpoint", action="store_true",
                    help="also write every chunk's state as a checkpoint")  # fmt: skip
    ap.add_argument("--src", nargs="+", default=[os.path.join(os.path.dirname(__file__), "..")])
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = []
    for src in args.src:
        commit = subprocess.run(["git", "-C", src, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()  # fmt: skip
        row = {"src": src, "commit": commit, **measure(src, args.steps, args.checkpoint)}
        rows.append(row)
        print(f"{src}: state {row['state_gib']:.2f} GiB of 5 runs, peak RSS "
              f"{row['peak_rss_gib']:.2f} GiB ({row['chunks']} chunks, {row['wall_s']:.0f} s)")  # fmt: skip
    for row in rows[1:]:
        print(f"peak RSS {row['src']} / {rows[0]['src']}: "
              f"{row['peak_rss_gib'] / rows[0]['peak_rss_gib']:.2f}x")  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            out = {"machine": machine_info(), "steps": args.steps, "checkpoint": args.checkpoint}
            json.dump({**out, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
