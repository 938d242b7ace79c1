"""marljax.training: the runner, one compiled program over runs x updates.

- `rollout`: the one rollout over a batched env, episode statistics and task scores.
- `train`: `TrainConfig`, `make_train` (one run's `init` / `train_chunk` / `train`),
  hyperparameter grids.
- `execute`: the engine: chunks, device layouts, memory estimates, progress, and `sweep`
  (every (setting, seed) pair as one program).
- `checkpoint`: the orbax checkpointer of the engine's chunks.
- `space`: search spaces of sweeps; `tune`: PBT and successive halving between chunks.

(The engine's `execute` function is `marljax.training.execute.execute`; the package attribute
`execute` is the module.)

Quick use::

    from marljax.training import TrainConfig, make_train, hparam_grid, sweep
"""

from marljax.training.execute import Chunk, Execution, sweep
from marljax.training.train import (
    RunnerState,
    TrainConfig,
    Trainer,
    broadcast_hparams,
    combine_shard_metrics,
    eval_budget,
    hparam_grid,
    make_evaluate,
    make_train,
    num_chunks,
    progress_callback,
    tqdm_progress,
)

__all__ = [
    "Chunk",
    "Execution",
    "RunnerState",
    "TrainConfig",
    "Trainer",
    "broadcast_hparams",
    "combine_shard_metrics",
    "eval_budget",
    "hparam_grid",
    "make_evaluate",
    "make_train",
    "num_chunks",
    "progress_callback",
    "sweep",
    "tqdm_progress",
]
