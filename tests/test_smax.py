"""SMAX by map name (`smax/<map>-v0`), the win rate as a task score, Hanabi and Overcooked-v2 by id.

The win-rate pipeline (progress, metrics, marl-eval JSON, eval, plots) is checked on a cheap matrix
game that reports a `task/win_rate`, so that no test here compiles a SMAX training program.
"""

from __future__ import annotations

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.core import registry
from marljax.core.wrappers import Wrapper
from marljax.testing import fast_jit

jaxmarl = pytest.importorskip("jaxmarl")

GOLDEN = os.path.join(os.path.dirname(__file__), "data", "jaxmarl_golden.json")


@pytest.fixture(scope="module")
def smax3m():
    env, params = marljax.make("smax/3m-v0")
    return env, params, fast_jit(env.reset), fast_jit(env.step)


def _random_episode(env, params, reset, step, key, num_steps):
    """Masked uniformly random actions from a fixed key; per-step numbers of the trajectory."""
    state, ts = reset(key, params)
    rows = []
    for _ in range(num_steps):
        key, k_act, k_step = jax.random.split(key, 3)
        logits = jnp.where(ts.action_mask, 0.0, -jnp.inf)
        actions = jax.random.categorical(k_act, logits)
        state, ts = step(k_step, state, actions, params)
        rows.append(
            {
                "actions": np.asarray(actions).tolist(),
                "reward": float(ts.reward[0]),
                "obs_sum": float(jnp.sum(ts.obs)),
                "state_sum": float(jnp.sum(ts.global_state)),
                "terminated": bool(ts.terminated),
                "truncated": bool(ts.truncated),
                "win": float(ts.extras.get("task/win_rate", -1.0)),
            }
        )
        if bool(ts.terminated | ts.truncated):
            break
    return rows


def test_smax_id_is_the_allied_team_against_the_heuristic_enemy(smax3m):
    env, params, reset, _ = smax3m
    assert type(env.jaxmarl_env).__name__ == "HeuristicEnemySMAX"
    assert env.num_agents == 3 and env.agents == ["ally_0", "ally_1", "ally_2"]
    state, ts = reset(jax.random.PRNGKey(0), params)
    assert ts.obs.shape[0] == 3 and ts.action_mask.shape == (3, 8)  # 5 moves + 3 targets
    np.testing.assert_array_equal(
        np.asarray(ts.global_state), np.asarray(env.jaxmarl_env.get_world_state(state.inner))
    )
    assert float(ts.extras["task/win_rate"]) == 0.0
    # the same env as JaxMARL's own constructor with the map's scenario
    other, _ = marljax.make("jaxmarl/HeuristicEnemySMAX", scenario="3m")
    assert other.num_agents == 3
    assert other.observation_space(params).shape == env.observation_space(params).shape


GOLDEN_IDS = {  # JaxMARL's benchmark envs by id: a fixed-key episode each
    "smax/3m-v0": {},
    "jaxmarl/hanabi": {},
    "jaxmarl/overcooked_v2": {"layout": "cramped_room"},
}


@pytest.mark.parametrize("env_id", list(GOLDEN_IDS))
def test_golden_trajectories(env_id, smax3m):
    """Fixed-key episodes of masked random actions; catch a change of JaxMARL's dynamics.

    Regenerate (after checking the change is upstream's) with MARLJAX_WRITE_GOLDEN=1.
    """
    if env_id == "smax/3m-v0":
        env, params, reset, step = smax3m
    else:
        env, params = marljax.make(env_id, **GOLDEN_IDS[env_id])
        reset, step = fast_jit(env.reset), fast_jit(env.step)
    rows = _random_episode(env, params, reset, step, jax.random.PRNGKey(3), 20)
    stored = {}
    if os.path.exists(GOLDEN):
        with open(GOLDEN) as f:
            stored = json.load(f)
    if os.environ.get("MARLJAX_WRITE_GOLDEN"):
        stored = {**stored, "jaxmarl": jaxmarl.__version__, env_id: rows}
        with open(GOLDEN, "w") as f:
            json.dump(stored, f, indent=1)
    golden = stored[env_id]
    assert len(rows) == len(golden)
    for t, (got, want) in enumerate(zip(rows, golden)):
        assert got["actions"] == want["actions"], t
        assert (got["terminated"], got["truncated"], got["win"]) == (
            want["terminated"],
            want["truncated"],
            want["win"],
        ), t
        np.testing.assert_allclose(
            [got["reward"], got["obs_sum"], got["state_sum"]],
            [want["reward"], want["obs_sum"], want["state_sum"]],
            rtol=1e-4,
            atol=1e-4,
            err_msg=f"step {t}",
        )


def test_smax_win_is_every_enemy_dead_with_an_ally_alive(smax3m):
    env, params, reset, step = smax3m
    state, ts = reset(jax.random.PRNGKey(0), params)
    inner = state.inner.state
    noop = jnp.full((3,), 4, jnp.int32)  # stop: always available to living units

    def with_alive(alive):
        health = jnp.where(alive, inner.unit_health, 0.0)
        s = inner.replace(unit_alive=alive, unit_health=health)
        return state.replace(inner=state.inner.replace(state=s))

    won = jnp.array([True, True, True, False, False, False])
    _, ts = step(jax.random.PRNGKey(1), with_alive(won), noop, params)
    assert bool(ts.terminated) and float(ts.extras["task/win_rate"]) == 1.0
    assert float(ts.reward[0]) >= 1.0  # JaxMARL's won-battle bonus

    lost = jnp.array([False, False, False, True, True, True])
    _, ts = step(jax.random.PRNGKey(1), with_alive(lost), noop, params)
    assert bool(ts.terminated) and float(ts.extras["task/win_rate"]) == 0.0


def test_bad_smax_ids_name_the_maps():
    with pytest.raises(KeyError, match=r"Did you mean: smax/3m-v0"):
        marljax.make("smax/3n-v0")
    with pytest.raises(KeyError, match="look like smax/3m-v0"):
        marljax.make("smax/3m")
    with pytest.raises(KeyError, match=r"jaxmarl/SMAX.*smax/<map>-v0"):
        marljax.make("jaxmarl/smax")
    with pytest.raises(KeyError, match="Unknown SMAX map 'mmm'"):
        marljax.make("jaxmarl/HeuristicEnemySMAX", scenario="mmm")
    with pytest.raises(TypeError, match="Unknown option"):
        marljax.make("smax/3m-v0", scenario="3m")


def test_hanabi_and_overcooked_v2_by_id():
    hanabi, params = marljax.make("jaxmarl/hanabi")
    # no native time limit: the default is a bound no game can reach (113 turns for 2 players)
    assert int(params.max_steps) == 113 and hanabi.num_agents == 2
    _, short = marljax.make("jaxmarl/hanabi", max_steps=100)
    assert int(short.max_steps) == 100
    cooked, params = marljax.make("jaxmarl/overcooked_v2", layout="cramped_room")
    assert cooked.num_agents == 2 and int(params.max_steps) == 400


# ------------------------------------------------------------------ the win rate as a task score


class _WinOnOptimum(Wrapper):
    """The climbing game with a `task/win_rate` of 1 for the optimal joint action (11)."""

    def reset(self, key, params):
        state, ts = self._env.reset(key, params)
        return state, ts.replace(extras={**ts.extras, "task/win_rate": jnp.float32(0.0)})

    def step(self, key, state, actions, params):
        state, ts = self._env.step(key, state, actions, params)
        win = (ts.reward[0] >= 11.0).astype(jnp.float32)
        return state, ts.replace(extras={**ts.extras, "task/win_rate": win})


WIN_ID = "testing/climbing_win-v0"
if WIN_ID not in registry._REGISTRY:
    registry.register(
        WIN_ID,
        lambda: _WinOnOptimum(marljax.make("matrix/climbing-v0")[0]),
        description="climbing game with a win rate (tests)",
    )


@pytest.fixture(scope="module")
def win_run(tmp_path_factory):
    from marljax.shell.experiment import Experiment, run_experiment

    out = tmp_path_factory.mktemp("runs")
    exp = Experiment(
        algo="ippo", env=WIN_ID, seeds=2, out_dir=str(out), name="win",
        train={"num_envs": 4, "rollout_len": 1, "total_env_steps": 4 * 6, "eval_interval": 3,
               "eval_episodes": 4},
        agent={"hidden_sizes": (8,), "num_minibatches": 1, "num_epochs": 1},
    )  # fmt: skip
    return run_experiment(exp, progress=False)


def test_win_rate_reaches_metrics_marl_eval_and_eval(win_run):
    from marljax.shell.policy import evaluate_run

    m = win_run.metrics
    assert {"task/win_rate", "eval/task/win_rate"} <= set(m)
    win = np.asarray(m["task/win_rate"])
    assert np.all((win >= 0) & (win <= 1)) and win.shape == np.shape(m["episode_return"])
    # the optimum (11) is the largest payoff: all of a window's episodes were won iff its mean
    # return is 11
    ret = np.asarray(m["episode_return"])
    assert np.array_equal(win == 1, ret == 11)
    with open(os.path.join(win_run.run_dir, "metrics.json")) as f:
        data = json.load(f)
    seed0 = data["testing"]["climbing_win-v0"]["ippo"]["seed_0"]
    assert {"win_rate", "eval_win_rate", "return"} <= set(seed0["absolute_metrics"])
    assert "win_rate" in seed0["step_0"]
    report = evaluate_run(win_run.run_dir, write=False)
    assert set(report.scores) == {"task/win_rate"}
    per_seed = report.scores["task/win_rate"]["per_seed"]
    np.testing.assert_allclose(per_seed, np.asarray(m["eval/task/win_rate"])[0, :, -1])
    assert "win rate: IQM" in str(report)
    assert "win_rate" in report.to_dict()


def test_progress_shows_the_win_rate():
    from marljax.training.execute import progress_postfix

    metrics = {
        "episode_return": np.array([[1.0, 2.0], [1.0, 3.0]]),
        "task/win_rate": np.array([[0.0, 0.5], [0.0, 1.0]]),
        "eval/task/win_rate": np.array([[0.0, 1.0], [0.0, 1.0]]),
    }
    assert progress_postfix(metrics, 1234.0) == "ret=2.500, win_rate=0.750, 1,234 env steps/s"
    metrics["task/win_rate"][:, -1] = np.nan
    assert "win_rate=n/a" in progress_postfix(metrics, 1.0)


def test_plots_draw_a_win_rate_panel(win_run, tmp_path):
    import jax

    from marljax.evaluation import plots

    run = plots.load_run(win_run.run_dir)
    assert set(run.scores) == {"task/win_rate"}
    entries = plots._entries([run])
    panels = plots._curve_panels(entries, [e.label for e in entries], jax.random.PRNGKey(0),
                                 200, 0.95)  # fmt: skip
    assert [p[0] for p in panels] == [WIN_ID, f"{WIN_ID}: win rate"]
    assert (tmp_path / "learning_curves.png") in plots.plot_runs([win_run.run_dir], tmp_path)
