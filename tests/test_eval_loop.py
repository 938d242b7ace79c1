"""The researcher's loop: greedy evaluation during training, loggers, policies from run
directories (`load_policy`, `evaluate_run`, `marljax eval`), cross-play of two runs."""

from __future__ import annotations

import importlib.util
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from support import assert_same_results

import marljax
from marljax.agents.base import Observation
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.shell import loggers
from marljax.shell.experiment import Experiment, run_experiment
from marljax.training.execute import Chunk
from marljax.training.train import TrainConfig, make_evaluate, make_train

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


# ----------------------------------------------------------------------------- evaluation


def test_greedy_evaluation_of_a_fixed_policy_equals_a_hand_rollout():
    """IPD against tit-for-tat with an untrained PPO agent's greedy policy: the in-program
    evaluation equals the return of a Python loop over the same policy; with a budget of two
    episodes only each env's first counts."""
    env, params = marljax.make("matrix/ipd-v0")
    agent = make_ppo(PPOConfig(hidden_sizes=(8,)), env, params)
    hp = PPOHParams()
    state = agent.init(jax.random.PRNGKey(3), hp)
    T = int(params.num_rounds)  # the episode length; max_steps is only a cap
    out = jax.jit(make_evaluate(env, agent, 4, 2 * T))(state, hp, params, jax.random.PRNGKey(0))
    assert float(out["eval/num_episodes"]) == 4  # not 8: a second episode does not count
    assert float(out["eval/episode_length"]) == T

    env_state, ts = env.reset(jax.random.PRNGKey(1), params)
    carry, total = agent.initial_carry(1), np.zeros(env.num_agents)
    act = jax.jit(lambda c, o, k: agent.act(state, c, o, k, hp, greedy=True))
    step = jax.jit(env.step)
    for t in range(T):
        obs = Observation(ts.obs[None], ts.action_mask[None], ts.global_state[None],
                          jnp.array([t == 0]))  # fmt: skip
        actions, carry, _ = act(carry, obs, jax.random.PRNGKey(t))
        env_state, ts = step(jax.random.PRNGKey(100 + t), env_state, actions[0], params)
        total += np.asarray(ts.reward)
    assert bool(ts.done)
    np.testing.assert_allclose(out["eval/episode_return_per_agent"], total, rtol=1e-6)
    np.testing.assert_allclose(out["eval/episode_return"], total.mean(), rtol=1e-6)


def test_evaluation_during_training_leaves_training_unchanged():
    """The same runs with and without `eval_interval`: identical bits; evaluations on every 2nd
    update and the last, NaN elsewhere."""
    env, params = marljax.make("matrix/climbing-v0")
    agent = make_ppo(PPOConfig(hidden_sizes=(8,), num_minibatches=1, num_epochs=1), env, params)
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    outs = {}
    for interval in (0, 2):
        config = TrainConfig(num_envs=4, rollout_len=2, total_env_steps=4 * 2 * 5,
                             eval_interval=interval, eval_episodes=3)  # fmt: skip
        trainer = make_train(config, env, agent, params)
        outs[interval] = jax.jit(jax.vmap(trainer.train, in_axes=(0, None)))(keys, PPOHParams())
    (s0, m0), (s2, m2) = outs[0], outs[2]
    assert_same_results(s0, s2, "state")
    for name in m0:
        assert_same_results(m0[name], m2[name], name)
    done = np.isfinite(np.asarray(m2["eval/episode_return"]))
    np.testing.assert_array_equal(done, [[False, True, False, True, True]] * 2)
    assert np.all(np.asarray(m2["eval/num_episodes"])[done] == 3)


def test_auto_eval_interval_and_bad_budget():
    env, params = marljax.make("matrix/climbing-v0")
    agent = make_ppo(PPOConfig(hidden_sizes=(8,)), env, params)
    trainer = make_train(
        TrainConfig(num_envs=4, rollout_len=1, total_env_steps=4 * 40, eval_interval=-1),
        env, agent, params,
    )  # fmt: skip
    assert trainer.config.eval_interval == 4  # 40 updates // 10
    with pytest.raises(ValueError, match="eval_interval must be >= -1"):
        TrainConfig(eval_interval=-2)


def test_updates_without_an_evaluation_are_not_non_finite():
    """`eval/` metrics are NaN at updates without a greedy evaluation, also when training
    episodes ended there; a NaN inside an evaluation still counts."""
    from marljax.shell.experiment import finite_runs

    nan = np.nan
    metrics = {
        "episode_return": np.array([[[1.0, 2.0, 3.0]]]),  # [G, S, U]: episodes end every update
        "num_episodes": np.array([[[4, 4, 4]]]),
        "eval/num_episodes": np.array([[[nan, nan, 16.0]]]),
        "eval/episode_return": np.array([[[nan, nan, 5.0]]]),
    }
    params = {"w": np.zeros((1, 1, 2))}
    assert finite_runs(metrics, params).all()
    metrics["eval/episode_return"] = np.array([[[nan, nan, nan]]])  # evaluated, got NaN
    assert not finite_runs(metrics, params).any()


# ----------------------------------------------------------------------------- loggers


def _chunk(first: int, n: int, runs: int = 2) -> Chunk:
    updates = np.arange(first + 1, first + n + 1, dtype=np.float32)
    ret = np.tile(updates, (runs, 1))
    ret[0, 0] = np.nan  # run 0 finished no episode in the chunk's first update
    metrics = {
        "episode_return": ret,
        "env_steps": np.tile(updates.astype(np.int32) * 8, (runs, 1)),
        "eval/episode_return": np.full((runs, n), np.nan, np.float32),
        "episode_return_per_agent": np.stack([ret, ret], -1),
    }
    return Chunk(first + n, 10, first, metrics, metrics, 0.5, 32.0)


def test_csv_logger_writes_a_line_per_chunk_and_cuts_on_resume(tmp_path):
    path = tmp_path / "progress.csv"
    log = loggers.CSVLogger(path)
    for first in (0, 2, 4):
        log(_chunk(first, 2))
    data = loggers.read_csv(path)
    np.testing.assert_array_equal(data["update"], [2, 4, 6])
    np.testing.assert_array_equal(data["env_steps"], [16, 32, 48])
    np.testing.assert_allclose(data["episode_return"], [1.5, 3.5, 5.5])  # updates, then runs
    assert np.isnan(data["eval/episode_return"]).all()  # no evaluation: empty cells
    resumed = loggers.CSVLogger(path)  # a resume from update 4: the line of update 6 goes
    resumed(_chunk(4, 3))
    np.testing.assert_array_equal(loggers.read_csv(path)["update"], [2, 4, 7])


def test_update_means_skip_updates_without_values():
    rows = list(loggers.update_means(_chunk(0, 2)))
    assert [(u, s) for u, s, _ in rows] == [(1, 8), (2, 16)]
    assert rows[0][2]["episode_return"] == 1.0  # run 0 has none: the mean of run 1 only
    assert "eval/episode_return" not in rows[0][2]


def test_tensorboard_logger_writes_event_files(tmp_path):
    pytest.importorskip("tensorboardX")  # in the test extra; optional for users
    log = loggers.TensorBoardLogger(tmp_path / "tb")
    log(_chunk(0, 2))
    log.close()
    files = os.listdir(tmp_path / "tb")
    assert any(f.startswith("events.out.tfevents") for f in files)
    assert os.path.getsize(tmp_path / "tb" / files[0]) > 0


def test_wandb_logger_offline(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    log = loggers.WandbLogger(project="marljax-test", dir=str(tmp_path))
    log(_chunk(0, 2))
    log.close()
    runs = [d for d in os.listdir(tmp_path / "wandb") if d.startswith("offline-run")]
    assert runs, os.listdir(tmp_path / "wandb")


def test_missing_logger_package_names_the_fix(monkeypatch):
    from marljax.core import config as cfg
    from marljax.shell import experiment as xp

    monkeypatch.setitem(xp.LOGGERS, "tensorboard", "no_such_module_marljax")
    exp = Experiment(algo="ippo", seeds=1, log=["tensorboard"], train={"total_env_steps": 16})
    with pytest.raises(cfg.ConfigError, match=r'pip install "marljax\[log\]"'):
        run_experiment(exp, progress=False, write=False)
    with pytest.raises(cfg.ConfigError, match="log must be a list"):
        Experiment(log=["csv2"])


# ----------------------------------------------------------------------------- run directories


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    """A 2-setting x 2-seed IPPO sweep on simple spread (random resets), evaluated in-program."""
    from marljax.shell.sweep import run_sweep

    out = tmp_path_factory.mktemp("runs")
    exp = Experiment(
        algo="ippo", env="particle/simple_spread-v0", seeds=2, out_dir=str(out), name="sw",
        train={"num_envs": 4, "rollout_len": 5, "total_env_steps": 4 * 5 * 3, "eval_interval": 3,
               "eval_episodes": 3},
        agent={"hidden_sizes": (8,), "num_minibatches": 1, "num_epochs": 1},
        grid={"lr": [1e-3, 3e-2]}, log=["tensorboard"],
    )  # fmt: skip
    result = run_sweep(exp, verbose=False)
    return result


def test_evaluate_run_repeats_the_final_in_program_evaluation(sweep_dir):
    from marljax.shell.policy import evaluate_run

    result = sweep_dir
    final = result.metrics["eval/episode_return"][:, :, -1]  # [G, S]
    assert np.isfinite(final).all()
    for g in range(2):
        report = evaluate_run(result.run_dir, setting=g)
        np.testing.assert_array_equal(report.returns, final[g].astype(np.float64))
    assert os.path.isfile(os.path.join(result.run_dir, "eval.json"))
    assert os.listdir(os.path.join(result.run_dir, "tensorboard"))
    csv = loggers.read_csv(os.path.join(result.run_dir, "progress.csv"))
    np.testing.assert_array_equal(csv["update"], [1, 2, 3])  # a line per chunk


def test_eval_of_a_social_dilemma_reports_its_social_metrics(tmp_path, capsys):
    """`marljax eval` on a run of the repeated PD: cooperation rate with IQM and CI per seed,
    in the printout and eval.json, and the returns of the plain evaluation unchanged."""
    from marljax.shell.policy import evaluate_run

    exp = Experiment(algo="ippo", env="social/ipd-v0", seeds=2, out_dir=str(tmp_path),
                     name="pd", train={"num_envs": 4, "rollout_len": 20, "total_env_steps": 160,
                                       "eval_episodes": 2})  # fmt: skip
    result = run_experiment(exp, progress=False)
    report = evaluate_run(result.run_dir)
    np.testing.assert_array_equal(
        report.returns, result.metrics["eval/episode_return"][0, :, -1].astype(np.float64)
    )
    coop = report.scores["social/cooperation_rate"]["per_seed"]
    assert coop.shape == (2,) and ((0 <= coop) & (coop <= 1)).all()
    assert "social/cooperation rate: IQM" in str(report)
    with open(os.path.join(result.run_dir, "eval.json")) as f:
        assert set(json.load(f)["social/cooperation_rate"]["per_seed"]) == {"seed_0", "seed_1"}


def test_load_policy_acts_like_the_agent(sweep_dir):
    result = sweep_dir
    policy = marljax.load_policy(result.run_dir, setting="lr=0.03", seed=1)
    assert policy.setting == {"lr": pytest.approx(0.03)} and policy.seed == 1
    _, ts = jax.vmap(policy.env.reset, in_axes=(0, None))(
        jax.random.split(jax.random.PRNGKey(0), 3), policy.env_params
    )
    actions, _ = jax.jit(policy)(ts, policy.initial_carry(3), jax.random.PRNGKey(1))
    agent_state = jax.tree.map(lambda x: x[1, 1], result.states.agent_state)
    obs = Observation(ts.obs, ts.action_mask, ts.global_state, jnp.zeros(3, bool))
    expected, _, _ = policy.agent.act(agent_state, policy.initial_carry(3), obs,
                                      jax.random.PRNGKey(1), policy.hparams, greedy=True)  # fmt: skip
    np.testing.assert_allclose(actions, expected, rtol=1e-6)
    assert actions.shape[:2] == (3, policy.env.num_agents)


def test_bad_settings_seeds_and_runs_without_checkpoints(sweep_dir, tmp_path):
    from marljax.shell.cli import main

    run_dir = sweep_dir.run_dir
    with pytest.raises(ValueError, match="lr=0.001"):  # lists the settings it has
        marljax.load_policy(run_dir, setting="lr=0.5")
    with pytest.raises(ValueError, match="seeds are 0...1"):
        marljax.load_policy(run_dir, seed=7)
    assert main(["eval", run_dir, "--setting", "9"]) == 2
    exp = Experiment(algo="ippo", seeds=1, out_dir=str(tmp_path), name="nock", checkpoint=False,
                     train={"num_envs": 2, "rollout_len": 1, "total_env_steps": 2},
                     agent={"hidden_sizes": (8,), "num_minibatches": 1})  # fmt: skip
    run_experiment(exp, progress=False)
    with pytest.raises(FileNotFoundError, match="checkpoints on"):
        marljax.load_policy(tmp_path / "nock")


def test_crossplay_of_two_runs_has_self_play_on_the_diagonal(sweep_dir):
    from marljax.shell.crossplay import crossplay_runs

    run_dir = sweep_dir.run_dir
    out = crossplay_runs(run_dir, run_dir, roles_a=(0,), episodes=2, setting_a=0, setting_b=0)
    assert out["return"].shape == (2, 2) and out["per_agent"].shape == (2, 2, 3)
    assert np.isfinite(out["return"]).all()
    with pytest.raises(ValueError, match="some but not all"):
        crossplay_runs(run_dir, run_dir, roles_a=(0, 1, 2), setting_a=0, setting_b=0)


def test_marljax_eval_cli_prints_iqm(sweep_dir, capsys):
    from marljax.shell.cli import main

    assert main(["eval", sweep_dir.run_dir, "--episodes", "2"]) == 0
    out = capsys.readouterr().out
    assert "IQM over 2 seeds" in out and "seed 1:" in out
    assert "under 5 seeds a bootstrap interval is about the seeds' range" in out


def test_schedules_longer_than_the_run_are_named():
    """QMIX's default epsilon schedule (100k steps) outlasts the default 40,960-step run: the
    note names the epsilon it ends at and the setting to change; a fitting schedule is quiet."""
    from marljax.shell.experiment import build, schedule_notes

    exp = Experiment(
        algo="qmix",
        env="matrix/two_step-v0",
        agent={"recurrent": False},
        train={"num_envs": 16, "rollout_len": 8, "total_env_steps": 40_960},
    )
    (note,) = schedule_notes(build(exp))
    assert "ends at epsilon 0.61" in note and "eps_anneal_steps=20480" in note
    assert schedule_notes(build(exp.replace(hparams={"eps_anneal_steps": 20_000}))) == []
    constant = exp.replace(hparams={"eps_start": 1.0, "eps_finish": 1.0})  # nothing to anneal
    assert schedule_notes(build(constant)) == []


@pytest.mark.parametrize(
    ("algo", "name"),
    [("hasac", "warmup_steps"), ("maddpg", "warmup_steps"), ("qmix", "learning_starts")],
)
def test_a_warmup_longer_than_the_run_is_named(algo, name):
    """HASAC/MADDPG's uniform-action warmup and the Q-learners' learning start, at or past the
    budget, mean no gradient step at all: a note says so and names the setting."""
    from marljax.shell.experiment import build, schedule_notes

    env = "particle/simple_spread_continuous-v0" if algo != "qmix" else "matrix/two_step-v0"
    exp = Experiment(
        algo=algo, env=env, train={"num_envs": 4, "rollout_len": 8, "total_env_steps": 2048}
    )
    over = (
        exp.replace(agent={name: 4096})
        if hasattr(exp.agent_config, name)
        else exp.replace(hparams={name: 4096})
    )
    notes = [n for n in schedule_notes(build(over)) if n.startswith(name)]
    assert (
        len(notes) == 1 and "never takes a gradient step" in notes[0] and f"{name}=204" in notes[0]
    )
    under = (
        exp.replace(agent={name: 512})
        if hasattr(exp.agent_config, name)
        else exp.replace(hparams={name: 512})
    )
    assert not [n for n in schedule_notes(build(under)) if n.startswith(name)]


def test_a_sweep_logs_one_series_per_setting(tmp_path):
    """TensorBoard/W&B in a sweep: each setting its own series `<label>/<metric>` (the mean over
    its seeds), or per seed when asked; one unlabelled series for a single run."""
    metrics = {
        "episode_return": np.array([[1.0, 2.0], [3.0, 4.0], [10.0, 20.0], [30.0, np.nan]]),
        "env_steps": np.array([[8, 16]] * 4),
    }
    info = Chunk(2, 2, 0, metrics, metrics, 1.0, 1.0)
    series = loggers.sweep_series(["lr=0.001", "lr=0.01"], seeds=2)
    rows = dict(loggers.tagged_updates(info, series))
    assert rows[8] == {"lr=0.001/episode_return": 2.0, "lr=0.01/episode_return": 20.0}
    assert rows[16] == {"lr=0.001/episode_return": 3.0, "lr=0.01/episode_return": 20.0}
    per_seed = dict(loggers.tagged_updates(info, loggers.sweep_series(["a", "b"], 2, True)))
    assert per_seed[16] == {"a/seed_0/episode_return": 2.0, "a/seed_1/episode_return": 4.0,
                            "b/seed_0/episode_return": 20.0}  # fmt: skip
    assert loggers.sweep_series([""], seeds=2) is None
    assert dict(loggers.tagged_updates(info, None))[8] == {"episode_return": 11.0}


def test_wandb_without_a_login_is_refused_before_compile(tmp_path, monkeypatch):
    from marljax.core import config as cfg

    for name in ("WANDB_MODE", "WANDB_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc
    monkeypatch.setenv("NETRC", str(tmp_path / "none"))
    exp = Experiment(algo="ippo", seeds=1, log=["wandb"], train={"total_env_steps": 16},
                     out_dir=str(tmp_path / "runs"))  # fmt: skip
    if importlib.util.find_spec("wandb") is None:
        pytest.skip("wandb is not installed (the missing package is its own message)")
    with pytest.raises(cfg.ConfigError, match="wandb login"):
        run_experiment(exp, progress=False)
    assert not os.path.exists(tmp_path / "runs")
    monkeypatch.setenv("WANDB_MODE", "offline")
    assert loggers.wandb_ready()
