"""Determinism on CPU: the same config and seed give bit-identical metrics and parameters.

Each case builds the experiment twice: the two builds must trace to the same program (no
randomness or mutable state at trace time) and the same initial state; the program, run twice
from a fresh initial state, must give bit-identical metrics and parameters; and the two seeds
run side by side in it must differ. Adding an agent is one entry of `CASES`. (Identical
processes giving identical bits is checked end to end by tests/test_crash_safety.py.)
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from marljax.shell.experiment import Experiment, build
from marljax.training.execute import make_mesh, programs
from marljax.training.train import TrainConfig

TINY_TRAIN = TrainConfig(num_envs=4, rollout_len=5, total_env_steps=4 * 5 * 3)
PPO_SMALL = {"hidden_sizes": [8], "gru_size": 8, "num_epochs": 2, "num_minibatches": 2}
Q_SMALL = {"hidden_sizes": [8], "gru_size": 8, "mixer_embed_dim": 8, "hypernet_hidden": 8,
           "buffer_size": 64, "batch_size": 4, "sequence_len": 5}  # fmt: skip

# (id, algo, agent overrides, env id): one entry per agent configuration.
CASES = [
    ("ippo", "ippo", PPO_SMALL, "matrix/ipd-v0"),
    ("mappo", "mappo", PPO_SMALL, "matrix/ipd-v0"),
    ("mappo-gru", "mappo", {**PPO_SMALL, "recurrent": True}, "matrix/ipd-v0"),
    ("qmix-gru", "qmix", Q_SMALL, "matrix/ipd-v0"),
]


def start(exp: Experiment):
    """A fresh build: its `init` and chunk `run` programs (`marljax.training.execute.programs`, one
    device) and their arguments (one hparams setting x the seeds)."""
    built = build(exp)
    progs = programs(built.trainer, make_mesh("runs", 1), env_params=built.env_params)
    keys = jax.vmap(jax.random.PRNGKey)(jnp.arange(exp.seed, exp.seed + exp.seeds))
    hp = jax.tree.map(lambda x: jnp.repeat(x, exp.seeds), built.hparams)
    return progs.init, progs.run, (keys, hp)


def to_host(tree):
    return jax.tree.map(np.asarray, tree)


def first_difference(a, b) -> str | None:
    leaves_a, _ = jax.tree_util.tree_flatten_with_path(a)
    leaves_b = jax.tree.leaves(b)
    assert len(leaves_a) == len(leaves_b)
    for (path, x), y in zip(leaves_a, leaves_b):
        if x.shape != y.shape or x.tobytes() != y.tobytes():
            return jax.tree_util.keystr(path)
    return None


@pytest.mark.parametrize("algo,agent,env", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_same_seed_is_bit_identical_and_seeds_differ(algo, agent, env):
    exp = Experiment(algo=algo, env=env, agent=agent, seeds=2, seed=11, train=TINY_TRAIN)
    n = exp.train.num_updates
    init_a, run_a, (keys, hp) = start(exp)
    init_b, run_b, args_b = start(dataclasses.replace(exp))
    state0 = init_a(keys, hp)
    # The second build traces to the same programs; compiling them again would test XLA.
    assert init_a.lower(keys, hp).as_text() == init_b.lower(*args_b).as_text(), (
        f"{algo}: two builds traced different init programs"
    )
    hlo_a = run_a(n).lower(state0, hp).as_text()
    hlo_b = run_b(n).lower(state0, args_b[1]).as_text()
    assert hlo_a == hlo_b, f"{algo}: two builds traced different training programs"

    state_a, metrics_a = to_host(run_a(n)(state0, hp))
    state0_again = init_a(keys, hp)  # a fresh initial state, same seeds
    state_b, metrics_b = to_host(run_a(n)(state0_again, hp))
    params_a, params_b = state_a.agent_state, state_b.agent_state
    diff = first_difference(metrics_a, metrics_b)
    assert diff is None, f"{algo}: metric {diff} differs between two runs with the same seed"
    diff = first_difference(params_a, params_b)
    assert diff is None, f"{algo}: parameter {diff} differs between two runs with the same seed"

    # Seeds 11 and 12 (runs 0 and 1) must differ.
    seed_a = jax.tree.map(lambda x: x[0], params_a)
    seed_b = jax.tree.map(lambda x: x[1], params_a)
    leaves = [
        (x, y)
        for x, y in zip(jax.tree.leaves(seed_a), jax.tree.leaves(seed_b))
        if np.issubdtype(x.dtype, np.floating) and x.size > 1
    ]
    assert leaves and any(not np.array_equal(x, y) for x, y in leaves), (
        f"{algo}: two seeds gave identical parameters"
    )
    losses = [k for k in metrics_a if "loss" in k]
    assert losses, f"{algo}: no loss metric to compare"
    assert any(not np.array_equal(metrics_a[k][0], metrics_a[k][1]) for k in losses), (
        f"{algo}: two seeds gave identical losses"
    )
    for k in losses:
        assert np.isfinite(metrics_a[k]).all(), f"{algo}: {k} is not finite"
