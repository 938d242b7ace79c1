"""Sweeps: validation of what can be swept, search spaces, memory chunking, best setting, outputs."""

from __future__ import annotations

import dataclasses
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

import marljax
from marljax.agents.base import Agent
from marljax.core import config as cfg
from marljax.evaluation import results
from marljax.shell import sweep as sw
from marljax.shell.experiment import Experiment
from marljax.training import execute as ex
from marljax.training import space as sp
from marljax.training.train import TrainConfig, make_train

#: the results and plotting code must not warn (an empty slice is handled, not averaged)
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

TINY = TrainConfig(num_envs=4, rollout_len=4, total_env_steps=4 * 4 * 3)
TINY_PPO = {"hidden_sizes": (8,), "num_minibatches": 1, "num_epochs": 1}

# ----------------------------------------------------------------------------- validation


def test_static_settings_are_refused_with_the_sweepable_list():
    with pytest.raises(cfg.ConfigError) as err:
        sp.check_sweepable("ippo", ["lr", "hidden_sizes"])
    msg = str(err.value)
    assert "'hidden_sizes'" in msg and "static setting of PPOConfig" in msg
    for name in ("lr", "ent_coef", "clip_eps", "gae_lambda"):
        assert name in msg, f"the sweepable {name} is not listed: {msg}"
    with pytest.raises(cfg.ConfigError, match="static setting of TrainConfig"):
        sp.check_sweepable("qmix", ["num_envs"])
    with pytest.raises(cfg.ConfigError, match="Did you mean 'ent_coef'"):
        sp.check_sweepable("mappo", ["ent_coeff"])
    with pytest.raises(cfg.ConfigError, match="seeds are the other sweep axis"):
        sp.check_sweepable("ippo", ["seed"])
    sp.check_sweepable("qmix", ["lr", "td_lambda", "eps_finish"])  # traced: accepted


def test_run_sweep_refuses_before_compiling(tmp_path):
    with pytest.raises(cfg.ConfigError, match="static setting"):
        Experiment(algo="ippo", grid={"hidden_sizes": [(8,), (16,)]}, out_dir=str(tmp_path))
    with pytest.raises(cfg.ConfigError, match="static setting of TrainConfig"):
        Experiment(
            algo="ippo",
            sample={"rollout_len": sp.Uniform(4, 8)},
            num_samples=2,
            out_dir=str(tmp_path),
        )
    with pytest.raises(cfg.ConfigError, match="lr must be > 0"):  # range-checked per setting
        Experiment(algo="ippo", grid={"lr": [1e-3, -1.0]}, out_dir=str(tmp_path))
    assert os.listdir(tmp_path) == [], "nothing is written for an invalid sweep"


# ----------------------------------------------------------------------------- search spaces


def test_random_settings_are_seeded_in_range_and_log_spread():
    space = {
        "lr": sp.LogUniform(1e-5, 1e-1),
        "ent_coef": sp.Uniform(0.0, 0.1),
        "clip_eps": [0.1, 0.3],
    }
    a = sp.random_settings(200, seed=3, **space)
    assert a == sp.random_settings(200, seed=3, **space)
    assert a != sp.random_settings(200, seed=4, **space)
    lr = np.array([s["lr"] for s in a])
    assert ((lr >= 1e-5) & (lr <= 1e-1)).all()
    # Log-uniform: about a quarter of the draws per decade; uniform would put ~90% in the top one.
    assert 0.1 < np.mean(lr < 1e-3) < 0.4 + 0.2
    assert {s["clip_eps"] for s in a} == {float(np.float32(0.1)), float(np.float32(0.3))}
    assert all(0.0 <= s["ent_coef"] <= 0.1 for s in a)
    # Grid x samples: every grid point with the same draws.
    settings = sp.make_settings({"gamma": [0.9, 0.99]}, {"lr": sp.LogUniform(1e-4, 1e-2)}, 3)
    assert len(settings) == 6 and [s["lr"] for s in settings[:3]] == [s["lr"] for s in settings[3:]]
    assert sp.make_settings({"lr": [1, 2], "gamma": [0.5, 0.9]})[1] == {"lr": 1, "gamma": 0.9}


def test_parse_distribution():
    assert sp.parse_distribution("log:1e-4:1e-2") == sp.LogUniform(1e-4, 1e-2)
    assert sp.parse_distribution("uniform:0:0.5") == sp.Uniform(0.0, 0.5)
    assert sp.parse_distribution("choice:1,2") == sp.Choice((1.0, 2.0))
    for bad, match in [
        ("log:0:1", "0 < low"),
        ("uniform:2:1", "low <= high"),
        ("gauss:0:1", "unknown distribution"),
        ("log:1e-4", "cannot parse"),
    ]:
        with pytest.raises(cfg.ConfigError, match=match):
            sp.parse_distribution(bad, "lr")


def test_parse_bytes():
    assert ex.parse_bytes("4GiB") == 4 * 2**30
    assert ex.parse_bytes("512MB") == 512 * 10**6
    assert ex.parse_bytes("2e9") == 2 * 10**9 and ex.parse_bytes(1024) == 1024
    for bad in ("lots", "-1GB", "0"):
        with pytest.raises(cfg.ConfigError, match="memory size"):
            ex.parse_bytes(bad)


def test_scores_skip_nan_updates_and_pick_the_best():
    values = np.array([[[1.0, np.nan, 3.0, np.nan]], [[5.0, 2.0, np.nan, np.nan]]])  # [G=2,S=1,U]
    np.testing.assert_array_equal(sw.score_runs(values), [[3.0], [2.0]])
    np.testing.assert_array_equal(sw.score_runs(values, window=2), [[2.0], [3.5]])
    assert sw.best_setting(np.array([1.0, np.nan, 3.0])) == 2
    assert sw.best_setting(np.array([1.0, np.nan, 3.0]), mode="min") == 0
    with pytest.raises(ValueError, match="mode"):
        sw.best_setting(np.array([1.0]), mode="best")


# ----------------------------------------------------------------------------- chunking


@struct.dataclass
class ToyHParams:
    lr: float = 0.1


def toy_agent(env, params) -> Agent:
    """A stateless softmax policy per agent, REINFORCE on the reward (cheap to compile)."""
    A, N = env.num_agents, env.action_space(params).n

    def init(key, hp):
        return jax.random.normal(key, (A, N)) * 0.1

    def act(logits, carry, obs, key, hp):
        E = obs.obs.shape[0]
        actions = jax.random.categorical(key, logits, shape=(E, A))
        return actions, carry, ()

    def update(logits, traj, hp, key):
        def loss(lg):
            logp = jax.nn.log_softmax(lg)[jnp.arange(A), traj.actions]  # [T, E, A]
            return -(logp * traj.reward).mean()

        g = jax.grad(loss)(logits)
        return logits - hp.lr * g, {"grad_norm": jnp.linalg.norm(g)}

    return Agent(init, lambda E: (), act, update, ToyHParams, lambda s: s)


def _runs(n):
    keys = np.asarray(jax.vmap(jax.random.PRNGKey)(jnp.arange(n)))
    return keys, ToyHParams(lr=np.linspace(0.01, 0.5, n).astype(np.float32))


def test_memory_estimate_chunks_runs_into_calls_of_one_program():
    env, params = marljax.make("matrix/climbing-v0")
    inner = toy_agent(env, params)
    traces = {"n": 0}

    def counted_update(*args):
        traces["n"] += 1
        return inner.update(*args)

    trainer = make_train(TINY, env, inner._replace(update=counted_update), params)
    keys, hp = _runs(5)
    progs = ex.programs(trainer, ex.make_mesh("runs", 1))
    est = ex.estimate_memory(progs, trainer, 5, TINY.num_updates, ToyHParams())
    assert est.runs == 5 and est.devices == 1 and est.peak_bytes_per_device is not None
    assert est.bytes_per_run > 0 and "memory estimate" in str(est)
    whole = ex.execute(trainer, keys, hp, mesh=ex.make_mesh("runs", 1)).metrics
    # A budget for two runs: 3 calls (2 + 2 + 1 padded to 2) of ONE compiled program.
    notes = []
    traces["n"] = 0
    budget = 2 * est.bytes_per_run + 1
    out = ex.execute(
        trainer, keys, hp, mesh=ex.make_mesh("runs", 1), max_memory_bytes=budget, say=notes.append
    )
    assert any("2 runs per call" in n for n in notes), notes
    # The 5-run estimate, then the 2-run program: traced twice, never per call.
    assert traces["n"] == 2, "chunked calls retraced the program"
    for k in whole:
        assert out.metrics[k].shape == whole[k].shape and whole[k].shape[:2] == (
            5,
            TINY.num_updates,
        )
        # Same runs in the same order; a different vmapped batch size may round differently.
        np.testing.assert_allclose(out.metrics[k], whole[k], rtol=1e-6, atol=1e-6, err_msg=k)
    assert not np.allclose(whole["grad_norm"][0], whole["grad_norm"][1])
    with pytest.raises(cfg.ConfigError, match="One run needs about"):
        ex.execute(trainer, keys, hp, mesh=ex.make_mesh("runs", 1), max_memory_bytes=10)


def test_cpu_budget_leaves_room_for_the_split_runs_host_buffer(monkeypatch):
    """On a CPU the split runs' host buffer shares the memory of the calls: a call may use half
    the available memory (the default budget) but never more than 80% of it less the buffer,
    counting, when the runs do not divide into whole calls, the padded host copy of the short
    last group's state; a split whose buffer leaves no room for one call is refused before
    anything runs."""
    env, params = marljax.make("matrix/climbing-v0")
    trainer = make_train(TINY, env, toy_agent(env, params), params)
    keys, hp = _runs(5)
    mesh = ex.make_mesh("runs", 1)
    est = ex.estimate_memory(ex.programs(trainer, mesh), trainer, 5, TINY.num_updates, hp)
    per_run, state = est.bytes_per_run, est.state_bytes_per_run
    host = 5 * state  # the buffer
    assert 0 < 2 * state < per_run

    def available(room: int) -> int:  # 80% of it less the buffer is `room`
        return -(-(host + room) * 5 // 4)

    # one byte short of one call (half of it would hold one): refused
    short = available(per_run - 1)
    assert int(0.8 * short) - host < per_run <= short // 2
    monkeypatch.setattr(ex, "_host_available_bytes", lambda: short)
    with pytest.raises(cfg.ConfigError, match="host buffer"):
        ex.execute(trainer, keys, hp, mesh=mesh)
    # room for 2 calls' memory, not for their padded copy too (5 runs = 2 + 2 + 1 padded): 1;
    # room for both: 2
    for room, calls in ((per_run, 1), (2 * per_run + state, 1), (2 * (per_run + state), 2)):
        avail = available(room)
        assert int(0.8 * avail) - host >= room and avail // 2 // per_run >= calls
        notes = []
        monkeypatch.setattr(ex, "_host_available_bytes", lambda a=avail: a)
        ex.execute(trainer, keys, hp, mesh=mesh, say=notes.append)
        assert any(f"{calls} runs per call" in n for n in notes), (room, notes)


def test_runs_split_over_calls_share_one_host_copy_and_resume_exactly():
    """5 runs in calls of 2: between chunks the host holds one buffer of their states, which
    every chunk's `state()` and the result are read-only views of (no copy per checkpoint or
    at the end); the results are the one-call run's, and a resume from a copied chunk state
    (released once placed) ends bitwise where the uninterrupted split run ends."""
    env, params = marljax.make("matrix/climbing-v0")
    config = TrainConfig(num_envs=4, rollout_len=4, total_env_steps=4 * 4 * 4)
    trainer = make_train(config, env, toy_agent(env, params), params)
    keys, hp = _runs(5)
    mesh = ex.make_mesh("runs", 1)
    whole = ex.execute(trainer, keys, hp, mesh=mesh, chunk_updates=2)
    views, copies = [], []

    def keep(c):
        views.append(c.state())
        copies.append(jax.tree.map(np.copy, c.state()))

    split = ex.execute(
        trainer, keys, hp, mesh=mesh, chunk_updates=2, runs_per_call=2, callbacks=[keep]
    )
    leaves = jax.tree.leaves(split.state)
    assert all(not x.flags.writeable for x in jax.tree.leaves(views[0]))
    assert all(np.shares_memory(a, b) for a, b in zip(jax.tree.leaves(views[-1]), leaves))
    assert all(np.shares_memory(a, b) for a, b in zip(jax.tree.leaves(views[0]), leaves))
    for a, b in zip(jax.tree.leaves(whole.state), leaves):
        assert a.shape == b.shape and a.shape[0] == 5
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    start = ex.Start(copies[0], 2, {k: v[:, :2] for k, v in split.metrics.items()})
    resumed = ex.execute(
        trainer, keys, hp, mesh=mesh, chunk_updates=2, runs_per_call=2, start=start
    )
    assert start.state is None
    for a, b in zip(jax.tree.leaves(resumed.state), leaves):
        np.testing.assert_array_equal(a, b)
    for k, v in split.metrics.items():
        np.testing.assert_array_equal(resumed.metrics[k], v, err_msg=k)


def test_a_shorter_last_chunk_runs_in_the_one_chunk_program(monkeypatch):
    """5 updates in chunks of 2 run as 2 + 2 + 1 updates of ONE compiled program (the third
    chunk's second update masked), with the fused run's results."""
    env, params = marljax.make("matrix/climbing-v0")
    config = TrainConfig(num_envs=4, rollout_len=4, total_env_steps=4 * 4 * 5)
    trainer = make_train(config, env, toy_agent(env, params), params)
    keys, hp = _runs(2)
    built, real = [], ex.programs

    def spy(*args, **kwargs):
        progs = real(*args, **kwargs)
        run = progs.run

        def counted(n, masked=False):
            built.append((n, masked))
            return run(n, masked)

        return dataclasses.replace(progs, run=counted)

    monkeypatch.setattr(ex, "programs", spy)
    chunks = []
    out = ex.execute(
        trainer, keys, hp, mesh=ex.make_mesh("runs", 1), chunk_updates=2,
        callbacks=[lambda c: chunks.append((c.first, c.done, c.metrics["env_steps"].shape))],
    )  # fmt: skip
    assert set(built) == {(2, True)}, f"programs built: {built}"
    assert chunks == [(0, 2, (2, 2)), (2, 4, (2, 2)), (4, 5, (2, 1))]
    state, whole = jax.jit(jax.vmap(trainer.train))(jnp.asarray(keys), hp)
    for k, v in whole.items():
        assert out.metrics[k].shape == v.shape and v.shape[:2] == (2, 5)
        np.testing.assert_allclose(out.metrics[k], v, rtol=1e-6, atol=1e-6, err_msg=k)
    assert int(out.state.update_idx[0]) == 5  # the masked update left the state as it was
    np.testing.assert_allclose(out.state.agent_state, state.agent_state, rtol=1e-6, atol=1e-6)


# ----------------------------------------------------------------------------- end to end


def test_ippo_sweep_writes_curves_and_best_setting(tmp_path):
    exp = Experiment(
        algo="ippo",
        env="matrix/climbing-v0",
        seeds=2,
        train=TINY,
        agent=TINY_PPO,
        grid={"lr": [1e-3, 3e-2]},
        out_dir=str(tmp_path),
        name="sweep",
    )
    res = sw.run_sweep(exp, verbose=False)
    assert res.settings == [{"lr": 1e-3}, {"lr": 3e-2}]
    assert res.metrics["episode_return"].shape == (2, 2, TINY.num_updates)
    # Seeds differ, learning rates reach the program.
    pl = res.metrics["policy_loss"]
    assert not np.array_equal(pl[0, 0], pl[0, 1]) and not np.array_equal(pl[0, 0], pl[1, 0])
    from marljax.shell.experiment import final_returns

    expected = np.nanmean(final_returns(res.metrics), axis=1)
    np.testing.assert_allclose(res.scores, expected)
    assert res.best_index == int(np.nanargmax(expected))
    assert res.best_hparams.lr == pytest.approx(res.best_setting["lr"], rel=1e-6)

    run_dir = tmp_path / "sweep"
    assert sorted(os.listdir(run_dir)) == [
        ".lock",
        "checkpoints",
        "config.json",
        "learning_curve.png",
        "manifest.json",
        "metrics.json",
        "metrics.npz",
        "progress.csv",
        "sweep.json",
    ]
    config = json.loads((run_dir / "config.json").read_text())
    assert config["experiment"]["grid"] == {"lr": [1e-3, 3e-2]} and config["kind"] == "sweep"
    assert config["resolved"]["grid_settings"] == res.settings
    summary = json.loads((run_dir / "sweep.json").read_text())
    assert summary["best"]["setting"] == res.best_setting
    assert [r["index"] for r in summary["ranking"]][0] == res.best_index
    scores = results.load_marl_eval(run_dir / "metrics.json", align="step_count")
    assert sorted(scores.final) == ["ippo[lr=0.001]", "ippo[lr=0.03]"]
    with np.load(run_dir / "metrics.npz") as saved:
        np.testing.assert_array_equal(saved["policy_loss"], pl)


def test_interrupted_sweep_resumes_to_the_uninterrupted_sweep_bitwise(tmp_path):
    """A sweep checkpoints between chunks: stopped after one chunk and resumed from its run
    directory, it ends with the uninterrupted sweep's metrics, parameters and ranking."""
    exp = Experiment(
        algo="ippo",
        env="matrix/climbing-v0",
        seeds=2,
        train=TrainConfig(num_envs=4, rollout_len=4, total_env_steps=4 * 4 * 4),
        agent={"hidden_sizes": (8,), "num_minibatches": 1, "num_epochs": 1},
        grid={"lr": [1e-3, 3e-2]},
        chunk_updates=2,
        out_dir=str(tmp_path),
    )
    full = sw.run_sweep(exp.replace(name="full"), verbose=False)
    cut = sw.run_sweep(exp.replace(name="cut"), verbose=False, stop_after_chunks=1)
    assert not cut.finished and (tmp_path / "cut" / "checkpoints" / "2").is_dir()
    resumed = sw.run_sweep(exp.replace(name="cut"), verbose=False, resume=str(tmp_path / "cut"))
    assert resumed.finished and resumed.best_setting == full.best_setting
    for k, v in full.metrics.items():
        np.testing.assert_array_equal(resumed.metrics[k], v, err_msg=k)
    for a, b in zip(jax.tree.leaves(full.states), jax.tree.leaves(resumed.states)):
        np.testing.assert_array_equal(a, b)
    assert (tmp_path / "cut" / "sweep.json").exists()


def test_a_tie_at_the_top_is_reported_as_a_tie(tmp_path):
    scores = np.array([7.0, 11.0, np.nan, 11.0 * (1 - 1e-8), 10.999])
    assert sw.tied_best(scores) == [1, 3]  # equal up to float rounding; 10.999 is not
    assert sw.tied_best(np.array([1.0, 2.0])) == [1]
    assert sw.tied_best(np.array([np.nan])) == []
    settings = [{"lr": float(g)} for g in range(5)]
    final = np.stack([scores, scores], axis=1)
    result = sw.SweepResult(
        str(tmp_path), settings, [0, 1], {}, None, final, scores, 1, settings[1], None,
        "episode_return", "max", np.ones((5, 2), bool), tied=sw.tied_best(scores),
    )  # fmt: skip
    text = sw._ranking_text(result)
    assert "tie: settings 1 (lr=1), 3 (lr=3) score 11.0000" in text, text
    assert text.count("(tied for best)") == 2
    sw._write_summary(str(tmp_path), result)
    best = json.loads((tmp_path / "sweep.json").read_text())["best"]
    assert best["index"] == 1 and best["tied_with"] == [3] and best["tie"].startswith("tie:")
