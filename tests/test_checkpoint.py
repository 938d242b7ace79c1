"""Checkpointer: trees with empty leaves (continuous-action masks), and reading without a template."""

import jax.numpy as jnp
import numpy as np

from marljax.training.checkpoint import Checkpointer


def _state():
    return {
        "params": jnp.arange(6.0).reshape(2, 3),
        "mask": jnp.zeros((4, 2, 0), bool),  # [E, A, 0]: a continuous-action env's action mask
        "replay": {"mask": jnp.zeros((8, 0), bool), "count": jnp.int32(3)},
    }


def test_empty_leaves_save_and_restore(tmp_path):
    state = _state()
    with Checkpointer(tmp_path / "c") as ckpt:
        ckpt.save(1, state)
        back = ckpt.restore(state)
        raw = ckpt.restore_numpy()
    assert back["mask"].shape == (4, 2, 0) and back["mask"].dtype == jnp.bool_
    assert back["replay"]["mask"].shape == (8, 0)
    np.testing.assert_array_equal(back["params"], state["params"])
    assert int(back["replay"]["count"]) == 3
    # without a template: host arrays; the empty leaves are their 0-d placeholders
    assert isinstance(raw["params"], np.ndarray)
    np.testing.assert_array_equal(raw["params"], np.arange(6.0).reshape(2, 3))
    assert raw["mask"].shape == ()


# A continuous-action HASAC run (empty action-mask and replay-mask leaves) killed, resumed and
# compared bit for bit with an uninterrupted run: tests/test_crash_safety.py's hasac-continuous.


def test_a_reader_never_removes_a_writers_save_in_progress(tmp_path):
    """`load_policy` / `marljax eval` open checkpoints read-only: the temporary folder of a save
    the run's writer has in progress survives them (a writer's own manager cleans stale ones)."""
    import os

    import pytest

    from marljax.training.checkpoint import CheckpointError

    state = {"w": jnp.arange(6.0).reshape(2, 3)}
    with Checkpointer(tmp_path / "ckpt") as writer:
        writer.save(1, state)
    in_progress = tmp_path / "ckpt" / "2.orbax-checkpoint-tmp-1234567890"
    in_progress.mkdir()
    (in_progress / "part").write_text("being written")
    with Checkpointer(tmp_path / "ckpt", read_only=True) as reader:
        assert reader.all_steps() == [1]
        np.testing.assert_array_equal(reader.restore(state)["w"], state["w"])
        with pytest.raises(CheckpointError, match="read-only"):
            reader.save(3, state)
    assert in_progress.is_dir() and (in_progress / "part").read_text() == "being written"
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["1", in_progress.name]
    assert Checkpointer(tmp_path / "none", read_only=True).all_steps() == []
    assert not (tmp_path / "none").exists()  # a reader creates no folder


def test_save_writes_host_arrays_without_copying_them(tmp_path, monkeypatch):
    """Orbax deep-copies numpy leaves before writing them unless told not to: a save of a run's
    host buffer (e.g. five runs' replay) would need its size again in memory. `save` writes them
    as they are, puts orbax's handler back after, and the checkpoint reads back the same."""
    import copy

    import orbax.checkpoint as ocp

    big = np.arange(4096, dtype=np.float32).reshape(64, 64)
    copied = []
    deepcopy = copy.deepcopy

    def spy(x, *args, **kwargs):
        if isinstance(x, np.ndarray) and x.size >= big.size:
            copied.append(x.shape)
        return deepcopy(x, *args, **kwargs)

    monkeypatch.setattr(copy, "deepcopy", spy)
    before = ocp.type_handlers.get_type_handler(np.ndarray)
    with Checkpointer(tmp_path / "c") as ckpt:
        ckpt.save(1, {"replay": big, "count": np.int32(3)})
        raw = ckpt.restore_numpy()
    assert copied == []
    assert ocp.type_handlers.get_type_handler(np.ndarray) is before
    np.testing.assert_array_equal(raw["replay"], big)
    # the spy does see orbax's copy when the save keeps orbax's default handler
    import contextlib

    from marljax.training import checkpoint

    monkeypatch.setattr(checkpoint, "_host_arrays_uncopied", contextlib.nullcontext)
    with Checkpointer(tmp_path / "d") as ckpt:
        ckpt.save(1, {"replay": big, "count": np.int32(3)})
    assert copied == [big.shape]
