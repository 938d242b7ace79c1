"""Checkpointer: trees with empty leaves (continuous-action masks), and reading without a template."""

import jax.numpy as jnp
import numpy as np

from marljax.checkpoint import Checkpointer


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


def test_continuous_off_policy_run_checkpoints_and_resumes_bitwise(tmp_path):
    """HASAC with continuous actions: the env's `[E, A, 0]` action mask and the replay buffer's
    empty mask leaves are checkpointed; an interrupted run resumed through the CLI ends with the
    uninterrupted run's metrics, bit for bit."""
    from marljax import cli
    from marljax.experiment import run_experiment

    args = ["train", "--algo", "hasac", "--env", "particle/simple_spread-v0", "--seeds", "1"]
    args += ["--set", "env.continuous=true", "--steps", "512", "--set", "num_envs=4"]
    args += ["--set", "rollout_len=8", "--set", "chunk_updates=4", "--set", "warmup_steps=32"]
    args += ["--set", "batch_size=8", "--set", "buffer_size=256", "--set", "hidden_sizes=16"]
    exp = cli.experiment_from_args(cli.build_parser().parse_args(args))
    exp = exp.replace(out_dir=str(tmp_path))
    run_experiment(exp.replace(name="full"), progress=False)
    cut = run_experiment(exp.replace(name="cut"), progress=False, stop_after_chunks=2)
    assert cut.metrics["episode_return"].shape[-1] == 8
    assert cli.main(["train", "--resume", cut.run_dir, "--no-progress"]) == 0
    full, resumed = (
        np.load(tmp_path / "full" / "metrics.npz"),
        np.load(tmp_path / "cut" / "metrics.npz"),
    )
    for k in full.files:
        np.testing.assert_array_equal(resumed[k], full[k], err_msg=f"metric {k}")
