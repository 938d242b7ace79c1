"""Runs sharded over devices and hosts give the single-device results.

JAX fixes its device count when it is first imported, and this pytest process already has one
CPU device, so every multi-device check runs in a subprocess started with
`XLA_FLAGS=--xla_force_host_platform_device_count=N` (this file is also that subprocess's
script: `python tests/test_distributed.py <mode> <out.npz> ...`).

Equality: 4 devices with 1 run each vs 1 device with 4 runs is checked with
`assert_allclose(rtol=1e-6, atol=1e-6)`, not bitwise. The runs are independent and the sharded
program is the same per-run computation, but XLA's CPU code generator vectorises a vmapped
batch of 4 differently from a batch of 1, so reductions (minibatch means, gradient norms) can
differ in the last float32 bit (measured: <= 5e-7 absolute on the gradient norm; sampled
actions and returns identical). Where the per-device batch is the same - one process with 4
devices vs two processes with 2 devices each - the results are checked bitwise.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _sweep_experiment():
    from marljax.shell.experiment import Experiment
    from marljax.training.train import TrainConfig

    return Experiment(
        algo="ippo",
        env="matrix/climbing-v0",
        seeds=2,
        train=TrainConfig(num_envs=4, rollout_len=4, total_env_steps=4 * 4 * 3),
        agent={"hidden_sizes": (8,), "num_minibatches": 1, "num_epochs": 1},
        grid={"lr": [1e-3, 3e-2]},
    )


def _flat(result_metrics, states) -> dict[str, np.ndarray]:
    import jax

    out = {f"m/{k}": np.asarray(v) for k, v in result_metrics.items()}
    leaves = jax.tree_util.tree_flatten_with_path(states.agent_state)[0]
    for path, leaf in leaves:
        out[f"p/{jax.tree_util.keystr(path)}"] = np.asarray(leaf)
    return out


def _worker(mode: str, out_path: str, *args: str) -> None:
    """Subprocess body: `single` (one process, forced devices) or `host <id> <port>`."""
    if mode == "host":
        from marljax.training.execute import initialize

        process_id, port = int(args[0]), int(args[1])
        initialize(f"localhost:{port}", num_processes=2, process_id=process_id, cpu_devices=2)
    import jax

    from marljax.shell import sweep as sw

    exp = _sweep_experiment()
    res = sw.run_sweep(exp, write=False, verbose=False)  # sharded over every (global) device
    out = {f"sharded/{k}": v for k, v in _flat(res.metrics, res.states).items()}
    out["devices"] = np.array([jax.device_count(), jax.process_count()])
    if mode == "single":
        # The reference: the same 4 runs on ONE device, one vmapped program.
        ref = sw.run_sweep(exp.replace(devices=1), write=False, verbose=False)
        out.update({f"ref/{k}": v for k, v in _flat(ref.metrics, ref.states).items()})
        out.update(_data_parallel_outputs())
        out.update(_train_cli_outputs(out_path))
    if jax.process_index() == 0:
        np.savez(out_path, **out)


def _data_parallel_outputs() -> dict[str, np.ndarray]:
    """One MAPPO, QMIX, COMA and PQN-VDN run each with 8 envs split over the 4 devices ("envs"
    layout)."""
    import jax

    from marljax.shell.experiment import Experiment, run_experiment
    from marljax.training.train import TrainConfig

    agents = {
        "mappo": {"hidden_sizes": (8,), "num_minibatches": 2, "num_epochs": 2},
        "qmix": {"buffer_size": 64, "batch_size": 4, "learning_starts": 8, "sequence_len": 4},
        "coma": {"hidden_sizes": (8,), "critic_hidden": (8,)},
        "pqn_vdn": {"hidden_sizes": (8,), "num_minibatches": 2, "num_epochs": 2},
    }
    out = {}
    for algo, agent in agents.items():
        exp = Experiment(
            algo=algo,
            env="matrix/climbing-v0",
            seeds=1,
            seed=3,
            train=TrainConfig(num_envs=8, rollout_len=4, total_env_steps=8 * 4 * 3),
            agent=agent,
            layout="envs",
            chunk_updates=2,
        )
        runs = [run_experiment(exp, progress=False, write=False) for _ in range(2)]
        again = all(
            np.array_equal(runs[0].metrics[k], runs[1].metrics[k], equal_nan=True)
            for k in runs[0].metrics
        )
        out[f"anakin_{algo}/again"] = np.array(again)  # the same key: the same run, bitwise
        for k, v in runs[0].metrics.items():
            out[f"anakin_{algo}/m/{k}"] = v[0, 0]
        leaves = jax.tree_util.tree_flatten_with_path(runs[0].state.agent_state)[0]
        for path, leaf in leaves:
            out[f"anakin_{algo}/p/{jax.tree_util.keystr(path)}"] = leaf[0, 0]  # [4 devices, ...]
    return out


def _train_cli_outputs(out_path: str) -> dict[str, np.ndarray]:
    """`marljax train` of 4 seeds on the 4 devices and on 1 (`--devices 1`)."""
    from marljax.shell.cli import main

    root = os.path.dirname(out_path)
    out = {}
    for tag, extra in (("four", []), ("one", ["--devices", "1"])):
        args = ["train", "--algo", "ippo", "--seeds", "4", "--steps", "192", "--no-progress",
                "--set", "hidden_sizes=8", "--set", "num_envs=4", "--set", "rollout_len=8",
                "--out", root, "--name", f"cli_{tag}", *extra]  # fmt: skip
        assert main(args) == 0
        with np.load(os.path.join(root, f"cli_{tag}", "metrics.npz")) as data:
            out.update({f"cli_{tag}/{k}": data[k] for k in data.files})
    return out


def _env(devices: int | None) -> dict[str, str]:
    env = dict(os.environ)
    flags = [os.environ.get("XLA_FLAGS", "")]  # the run's compile-speed flags (tests/conftest.py)
    if devices is not None:
        flags.append(f"--xla_force_host_platform_device_count={devices}")
    env["XLA_FLAGS"] = " ".join(flags).strip()
    env["PYTHONPATH"] = os.pathsep.join([ROOT, HERE, env.get("PYTHONPATH", "")])
    env.setdefault("JAX_PLATFORMS", "cpu")
    return env


@pytest.fixture(scope="module")
def single_process(tmp_path_factory):
    """One process, 4 forced CPU devices: the sharded sweep and the 1-device reference."""
    out = tmp_path_factory.mktemp("dist") / "single.npz"
    proc = subprocess.run(
        [sys.executable, __file__, "single", str(out)],
        env=_env(4),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"worker failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    with np.load(out) as data:
        return dict(data)


def test_four_devices_match_one_device(single_process):
    data = single_process
    assert data["devices"].tolist() == [4, 1], "the worker did not get 4 devices"
    names = sorted(k[len("ref/") :] for k in data if k.startswith("ref/"))
    assert any(n.startswith("p/") for n in names) and "m/episode_return" in names
    for name in names:
        ref, got = data[f"ref/{name}"], data[f"sharded/{name}"]
        assert ref.shape == got.shape, name
        if name in ("m/episode_return", "m/episode_length", "m/num_episodes", "m/env_steps"):
            np.testing.assert_array_equal(got, ref, err_msg=name)  # sampled play is identical
        else:
            np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6, err_msg=name)
    # Not trivially equal: seeds and learning rates differ.
    pl = data["ref/m/policy_loss"]
    assert not np.array_equal(pl[0, 0], pl[0, 1]) and not np.array_equal(pl[0, 0], pl[1, 0])


def test_train_cli_on_four_devices_matches_one_device(single_process):
    """`marljax train`: 4 seeds sharded over 4 devices = the same 4 seeds on 1 device."""
    data = single_process
    names = sorted(k[len("cli_one/") :] for k in data if k.startswith("cli_one/"))
    assert "episode_return" in names and "policy_loss" in names
    for name in names:
        ref, got = data[f"cli_one/{name}"], data[f"cli_four/{name}"]
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6, err_msg=name)
    pl = data["cli_one/policy_loss"]
    assert not np.array_equal(pl[0, 0], pl[0, 1])  # seeds differ


@pytest.mark.parametrize("algo", ["mappo", "qmix", "coma", "pqn_vdn"])
def test_data_parallel_learners_stay_in_step(single_process, algo):
    """The "envs" layout on 4 devices: every device ends with the same learner state (parameters,
    target network, optimiser: the all-reduced gradients), the metrics count every device's envs,
    and a second run with the same seed repeats the run bitwise. QMIX's replay buffer is per
    device (each device stores its own envs' transitions), so it differs between devices."""
    data = single_process
    prefix = f"anakin_{algo}/p/"
    leaves = {k[len(prefix) :]: v for k, v in sorted(data.items()) if k.startswith(prefix)}
    assert f"anakin_{algo}/again" in data
    learner = {k: v for k, v in leaves.items() if not k.startswith(".replay")}
    assert any("params" in k for k in learner), sorted(leaves)
    for name, leaf in learner.items():
        assert leaf.shape[0] == 4, name
        for d in range(1, 4):
            np.testing.assert_array_equal(leaf[d], leaf[0], err_msg=name)
    if algo == "qmix":  # the buffers hold different envs' transitions
        assert not np.array_equal(leaves[".replay.data['reward']"][0],
                                  leaves[".replay.data['reward']"][1])  # fmt: skip
    np.testing.assert_array_equal(data[f"anakin_{algo}/m/env_steps"], [32, 64, 96])
    assert bool(data[f"anakin_{algo}/again"]), "a second call with the same key differed"
    assert np.all(np.isfinite(data[f"anakin_{algo}/m/episode_return"]))
    name = {"mappo": "policy_loss", "coma": "actor_loss"}.get(algo, "loss")
    loss = data[f"anakin_{algo}/m/{name}"]
    assert np.all(np.isfinite(loss)) and np.any(loss != 0), "no update ran"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def test_two_processes_match_one_process(single_process, tmp_path):
    """jax.distributed on localhost: 2 processes x 2 CPU devices run one sharded sweep (gloo)."""
    out = tmp_path / "hosts.npz"
    port = _free_port()
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "host", str(out), str(i), str(port)],
            env=_env(None),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(2)
    ]
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=240)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for i, (p, log) in enumerate(zip(procs, logs)):
        assert p.returncode == 0, f"process {i} failed:\n{log[-4000:]}"
    with np.load(out) as data:
        data = dict(data)
    assert data["devices"].tolist() == [4, 2], "expected 4 global devices in 2 processes"
    names = sorted(k for k in single_process if k.startswith("sharded/"))
    assert names == sorted(k for k in data if k.startswith("sharded/"))
    for name in names:  # same per-device program (1 run per device): bitwise
        np.testing.assert_array_equal(data[name], single_process[name], err_msg=name)


def test_device_count_that_does_not_divide_names_valid_choices():
    from marljax.training import execute as ex

    with pytest.raises(ValueError) as err:
        ex.check_divisible(6, 4)
    msg = str(err.value)
    assert "Use 4 or 8 runs" in msg and "3 device(s)" in msg and "pad=True" in msg
    ex.check_divisible(8, 4)
    with pytest.raises(ValueError, match=r"num_envs = 8 or 12"):
        ex.check_divisible(10, 4, what="envs")
    padded = ex.pad_runs({"x": np.arange(6)}, 8)["x"]
    np.testing.assert_array_equal(padded, [0, 1, 2, 3, 4, 5, 5, 5])


if __name__ == "__main__":
    _worker(*sys.argv[1:])
