"""Checkpoints of a run's carry with orbax, written atomically between chunks.

A checkpoint stores the whole `RunnerState` (agent state, envs, recurrent carry, PRNG key,
update counter) of every (hparams, seed) run, so resuming continues bit-exactly on CPU. Orbax
writes each step to a temporary directory and renames it when complete, so a half-written
checkpoint is never listed or restored.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

#: what an array without elements is stored as (see `Checkpointer.save`).
_EMPTY = np.zeros((), np.int8)


def _is_empty(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype") and 0 in tuple(x.shape)


def _asyncio_leftover(unraisable: Any) -> bool:
    """True for what an abandoned orbax read or write leaves to Python's unraisable hook: the
    storage library's late completions against orbax's closed event loop ("Event loop is
    closed", dozens after a checkpoint that fails to restore) and the `__del__` of an event
    loop that Ctrl-C cut off while it was being built."""
    err, obj = unraisable.exc_value, unraisable.object
    if obj is None:
        return isinstance(err, RuntimeError) and str(err) == "Event loop is closed"
    name = getattr(obj, "__qualname__", "")
    return name.endswith("__del__") and getattr(obj, "__module__", "").startswith("asyncio")


def _quiet_abandoned_io() -> None:
    """Drop `_asyncio_leftover` reports from then on (installed once, process-wide, at the first
    checkpoint read or written); every other report goes to the hook before."""
    global _QUIET
    if _QUIET:
        return
    _QUIET = True
    before = sys.unraisablehook

    def hook(unraisable):
        if not _asyncio_leftover(unraisable):
            before(unraisable)

    sys.unraisablehook = hook


_QUIET = False


@contextlib.contextmanager
def _host_arrays_uncopied():
    """Within: orbax writes host (numpy) arrays as they are instead of deep-copying them first.

    Orbax copies every numpy leaf before writing it, a guard against the array changing while
    an asynchronous save runs. `Checkpointer.save` is synchronous and nothing writes the state
    while it waits, so the copy only doubles the host memory of a save (a 10 GiB replay buffer
    of five runs needed 10 GiB more) and costs its time. The handler registered before is put
    back on exit; an orbax whose `NumpyHandler` has no such option copies as before.
    """
    handlers = ocp.type_handlers

    def register(handler: Any) -> None:  # orbax logs every override at WARNING
        log = logging.getLogger("absl")
        level = log.level
        log.setLevel(logging.ERROR)
        try:
            handlers.register_type_handler(np.ndarray, handler, override=True)
        finally:
            log.setLevel(level)

    try:
        before = handlers.get_type_handler(np.ndarray)
        register(handlers.NumpyHandler(deepcopy_host_arrays=False))
    except (AttributeError, TypeError, ValueError):
        yield
        return
    try:
        yield
    finally:
        register(before)


def _background_record(record: logging.LogRecord) -> bool:
    """False for a log record of an orbax background thread (see `_silence_abandoned_saves`)."""
    return record.threadName == "MainThread"


def _silence_abandoned_saves() -> None:
    """After Ctrl-C inside a save, the save's background threads (orbax writes metadata in
    one) fail against executors that are shut down and log tracebacks at ERROR; the save was
    abandoned on purpose (its temporary folder is never listed, and the next writer removes
    it), so their records are dropped from then on."""
    log = logging.getLogger("absl")
    if _background_record not in log.filters:
        log.addFilter(_background_record)


class CheckpointError(OSError):
    """A checkpoint could not be written (the message names the directory and the cause)."""


class Checkpointer:
    """Save and restore `RunnerState` pytrees under `directory/<update_idx>`.

    Args:
      directory: folder of the checkpoints (created if missing, unless `read_only`).
      max_to_keep: how many of the newest checkpoints to keep.
      read_only: a reader (`load_policy`, `marljax eval`): it creates, deletes and cleans
        nothing, so it never removes the temporary folder of a save that the run's writer
        has in progress.
    """

    def __init__(self, directory: str | os.PathLike, max_to_keep: int = 2, read_only: bool = False):
        self.directory = os.path.abspath(os.fspath(directory))
        self.read_only = bool(read_only)
        # Synchronous saves: `save` waits for every write anyway, and an error then surfaces in
        # this thread at once (no background thread left waiting on a failed write).
        options = dict(max_to_keep=None if read_only else max_to_keep, create=not read_only)
        # cleanup_tmp_directories: remove the temporary folders of saves that a killed process
        # left behind (an orbax without it ignores them: they are never listed). A reader
        # leaves them: one may be the writer's save in progress.
        cleanup = {"cleanup_tmp_directories": not read_only}
        reader = {"read_only": True} if read_only else {}
        quiet = logging.getLogger("absl")  # orbax notes each read-only adjustment at WARNING
        level = quiet.level
        if read_only:
            quiet.setLevel(logging.ERROR)
        try:
            for extra in (
                {"enable_async_checkpointing": False, **cleanup, **reader},
                {"enable_async_checkpointing": False, **cleanup},
                {"enable_async_checkpointing": False},
                {},
            ):
                try:
                    opts = ocp.CheckpointManagerOptions(**options, **extra)
                    break
                except TypeError:
                    continue
            self._manager = ocp.CheckpointManager(self.directory, options=opts)
        finally:
            quiet.setLevel(level)

    def save(self, step: int, state: Any) -> None:
        """Write `state` as checkpoint `step` and wait until it is complete on disk.

        Leaves with no elements (e.g. the `[E, A, 0]` action mask of a continuous-action env)
        are stored as a 0-d placeholder (orbax cannot write empty arrays); `restore` puts the
        empty arrays of its template back.
        """
        if self.read_only:
            raise CheckpointError(f"{self.directory} was opened read-only; nothing is saved")
        state = jax.tree.map(lambda x: _EMPTY if _is_empty(x) else x, state)
        _quiet_abandoned_io()
        try:
            with _host_arrays_uncopied():
                self._manager.save(int(step), args=ocp.args.StandardSave(state))
                self._manager.wait_until_finished()
        except KeyboardInterrupt:
            _silence_abandoned_saves()
            raise
        except Exception as err:  # noqa: BLE001  (orbax raises OS, value and runtime errors)
            self._remove_partial(int(step))
            kept = self._manager.latest_step()
            newest = "none" if kept is None else f"{kept}, which is intact"
            raise CheckpointError(
                f"Checkpoint {step} could not be written to {self.directory} "
                f"({type(err).__name__}: {err}); its partial files were removed, the newest "
                f"complete checkpoint is {newest}"
            ) from err

    def _remove_partial(self, step: int) -> None:
        """Delete the temporary folder a failed save of `step` left (never a complete step)."""
        import shutil

        try:
            names = os.listdir(self.directory)
        except OSError:
            return
        for name in names:
            if name.split(".")[0] == str(step) and "tmp" in name:  # never a finalised step
                shutil.rmtree(os.path.join(self.directory, name), ignore_errors=True)

    def latest_step(self) -> int | None:
        """The newest complete checkpoint's step, or None."""
        return self._manager.latest_step()

    def all_steps(self) -> list[int]:
        return list(self._manager.all_steps())

    def restore(self, like: Any, step: int | None = None) -> Any:
        """Restore checkpoint `step` (default: the newest) with the structure of `like`.

        Args:
          like: a pytree with the structure, shapes and dtypes of the saved state (e.g. a freshly
            initialised state, or `jax.eval_shape` of the init function).
          step: which checkpoint; None for the newest.

        Raises:
          FileNotFoundError: no checkpoint in the directory.
          ValueError: the saved state does not match `like` (different config); the message
            names the first mismatching entry.
        """
        step = self.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError(f"No complete checkpoint in {self.directory}")
        abstract = jax.tree.map(
            lambda x: ocp.utils.to_shape_dtype_struct(_EMPTY if _is_empty(x) else x), like
        )
        _quiet_abandoned_io()
        try:
            restored = self._manager.restore(step, args=ocp.args.StandardRestore(abstract))
            return jax.tree.map(
                lambda r, x: np.zeros(x.shape, x.dtype) if _is_empty(x) else r, restored, like
            )
        except Exception as err:  # orbax raises several types for structure/shape mismatches
            why = str(err).split(" [tensorstore_spec=")[0]  # (not the storage driver's spec)
            why = why if len(why) <= 400 else why[:400] + " ..."
            raise ValueError(
                f"Checkpoint {step} in {self.directory} does not match this run's state "
                f"(damaged, or written with a different config): {why}"
            ) from err

    def restore_numpy(self, step: int | None = None) -> Any:
        """Restore checkpoint `step` (default: the newest) as host NumPy arrays, no template.

        For reading a run's saved state for analysis, on any machine: the arrays are not placed
        on a device, so a checkpoint written on a CPU reads on a GPU host and the other way round
        (restoring onto devices, `restore`, takes their placement from `like`). Leaves saved
        without elements come back as their 0-d placeholder (`int8` zero).

        Raises:
          FileNotFoundError: no checkpoint in the directory.
        """
        step = self.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError(f"No complete checkpoint in {self.directory}")
        path = os.path.join(self.directory, str(step), "default")
        checkpointer = ocp.PyTreeCheckpointer()
        meta = checkpointer.metadata(path)
        tree = getattr(meta, "item_metadata", None) or getattr(meta, "tree", None) or meta
        args = jax.tree.map(lambda _: ocp.RestoreArgs(restore_type=np.ndarray), tree)
        return checkpointer.restore(path, args=ocp.args.PyTreeRestore(restore_args=args))

    def close(self) -> None:
        self._manager.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
