"""`marljax benchmark` on the MPE simple spread cells shrunk to test size (crash-safety tests).

The cells keep their algorithms and published hyperparameters; only the networks (8 units), the
batch (4 envs x 4 steps) and the checkpoint interval (every update: one chunk) are made small, so a process
can be killed many times inside a few seconds of training. The command line is that of
`marljax benchmark` (the caller passes `--tasks mpe/simple_spread ...`).
"""

from __future__ import annotations

import sys

from marljax.benchmarks import runner, suite
from marljax.shell import cli

SMALL_TRAIN = {"num_envs": 4, "rollout_len": 4, "eval_interval": 0}
for name, c in list(suite.CELLS.items()):
    if c.task == "mpe/simple_spread":
        agent = {**c.agent, "hidden_sizes": (8,), "num_minibatches": 2}
        suite.CELLS[name] = type(c)(
            **{**c.__dict__, "agent": agent, "train": {**c.train, **SMALL_TRAIN}}
        )


def _one_update_chunks(c, steps):
    return {**suite.experiment_kwargs(c, steps), "chunk_updates": 1}


runner.experiment_kwargs = _one_update_chunks


if __name__ == "__main__":
    cli.entry(["benchmark", *sys.argv[1:]])
