"""Two-population leagues (one learner per team of an asymmetric game): MPE simple tag's
adversaries and good agent each learn against the other's snapshots, in one program.

One tiny league (IPPO, 8-unit networks, 4 envs, 4 updates) is trained once through
`marljax train --league` and shared by the tests that read it.
"""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from marljax.core.config import ConfigError
from marljax.population.league import LeagueConfig, LeagueState, make_league
from marljax.population.league_two import record_pair
from marljax.shell import cli
from marljax.shell.experiment import build, run_experiment

ENVS, STEPS, UPDATES, CAPACITY = 4, 25, 4, 2
ARGS = [
    "--algo", "ippo", "--env", "particle/simple_tag-v0", "--league", "pfsp",
    "--set", f"league.capacity={CAPACITY}", "--set", "league.snapshot_interval=1",
    "--set", f"num_envs={ENVS}", "--set", f"rollout_len={STEPS}",
    "--steps", str(ENVS * STEPS * UPDATES), "--seeds", "2", "--set", "recurrent=false",
    "--set", "hidden_sizes=8", "--set", "chunk_updates=2", "--set", "num_minibatches=2",
    "--set", "league.exploit_updates=1", "--no-progress",
]  # fmt: skip


def _experiment(tmp, name, extra=()):
    args = cli.build_parser().parse_args(["train", *ARGS, *extra])
    return cli.experiment_from_args(args).replace(out_dir=str(tmp), name=name)


@pytest.fixture(scope="module")
def tag_league(tmp_path_factory):
    exp = _experiment(tmp_path_factory.mktemp("league2"), "full")
    return exp, run_experiment(exp, progress=False)


def test_both_teams_learn_against_the_other_populations_snapshots(tag_league):
    _, result = tag_league
    s0, s1 = result.state.agent_state.sides
    for side in (s0, s1):  # a snapshot every update into a ring of 2: updates 3 and 4 remain
        np.testing.assert_array_equal(side.age[0, 0], [4, 3])
        np.testing.assert_array_equal(side.newest[0, 0], 0)
        w = np.asarray(side.weights[0, 0])
        assert np.all(w >= 0) and np.isclose(w.sum(), 1.0)
    for side in (s0, s1):  # each learner trained: its final state is its newest snapshot and
        learner = jax.tree.leaves(side.learner)  # differs from the one taken an update earlier
        newest = jax.tree.leaves(jax.tree.map(lambda x: x[:, :, 0], side.pool))
        older = jax.tree.leaves(jax.tree.map(lambda x: x[:, :, 1], side.pool))
        for a, b in zip(learner, newest, strict=True):
            np.testing.assert_array_equal(a, b)
        assert any(not np.array_equal(a, b) for a, b in zip(learner, older, strict=True))
    np.testing.assert_array_equal(s1.payoffs, 1.0 - np.swapaxes(s0.payoffs, -1, -2))
    m = result.metrics
    for name in ("league/win_rate", "league/team1_win_rate", "team1/approx_kl"):
        assert name in m and m[name].shape == (1, 2, UPDATES), name
    win, lose = m["league/win_rate"], m["league/team1_win_rate"]
    assert np.all((win >= 0) & (win <= 1)) and np.all((lose >= 0) & (lose <= 1))


def test_the_run_directory_holds_the_bimatrix_between_the_populations(tag_league):
    _, result = tag_league
    with open(os.path.join(result.run_dir, "league.json")) as f:
        report = json.load(f)
    win = np.asarray(report["win_rate"])
    assert win.shape == (1, 2, CAPACITY, CAPACITY) and np.all((win >= 0) & (win <= 1))
    assert np.all(np.asarray(report["finished"]) == 1.0)
    for p in ("0", "1"):
        np.testing.assert_allclose(np.asarray(report[f"nash_{p}"]).sum(-1), 1.0, atol=1e-5)
    # team 0's guaranteed win rate is at most its best row against the worst column
    assert np.all(np.asarray(report["value_0"]) <= win.max(axis=(-1, -2)) + 1e-6)
    assert report["age"][0][0] == [4, 3] and report["age_1"][0][0] == [4, 3]
    assert os.path.exists(os.path.join(result.run_dir, "league_crossplay.png"))
    # each population's generations against a best response of the other team: the
    # adversaries (population 0) never lose, so the good agent's responder scores <= 0
    ex0, ex1 = (np.asarray(report[f"exploitability_{p}"]["nash"]) for p in (0, 1))
    assert ex0.shape == ex1.shape == (1, 2, CAPACITY)
    assert np.all(ex0 <= 0) and np.all(ex1 >= 0)
    assert os.path.exists(os.path.join(result.run_dir, "league_exploitability.png"))


def test_a_killed_two_population_league_resumes_bitwise(tmp_path, tag_league):
    _, full = tag_league
    partial = run_experiment(_experiment(tmp_path, "cut"), progress=False, stop_after_chunks=1)
    assert partial.metrics["league/win_rate"].shape[-1] == 2
    assert cli.main(["train", "--resume", partial.run_dir, "--no-progress"]) == 0
    resumed = np.load(os.path.join(partial.run_dir, "metrics.npz"))
    for k, v in full.metrics.items():
        np.testing.assert_array_equal(resumed[k], v, err_msg=f"metric {k}")


def test_the_bimatrix_rows_and_columns_come_from_each_learners_win_rates():
    K = 3
    config = LeagueConfig(capacity=K, snapshot_interval=1, rule="pfsp", win_decay=1.0)

    def side(filled):
        filled = jnp.asarray(filled)
        return LeagueState(
            learner=jnp.float32(0), pool=jnp.zeros((K,)), filled=filled, newest=jnp.int32(0),
            age=jnp.where(filled, 0, -1), wins=jnp.zeros((K,)), games=jnp.zeros((K,)),
            payoffs=jnp.full((K, K), 0.5), weights=filled / filled.sum(), running=jnp.zeros(2),
            updates=jnp.int32(0),
        )  # fmt: skip

    sides = (side([True, False, False]), side([True, False, False]))
    new_wins = (jnp.array([9.0, 0.0, 0.0]), jnp.array([1.0, 0.0, 0.0]))
    games = (jnp.array([9.0, 0.0, 0.0]), jnp.array([9.0, 0.0, 0.0]))
    s0, s1 = record_pair(config, sides, (jnp.float32(1), jnp.float32(2)), (jnp.zeros(2),) * 2,
                         new_wins, games)  # fmt: skip
    # learner 0 won 9 of 9 against population 1's slot 0: its snapshot (slot 1) gets row 0.95
    assert float(s0.payoffs[1, 0]) == pytest.approx(9.5 / 10)
    # learner 1 won 1 of 9 against population 0's slot 0: column 1 of team 0's view is 1 - 0.15
    assert float(s0.payoffs[0, 1]) == pytest.approx(1.0 - 1.5 / 10)
    assert float(s0.payoffs[1, 1]) == 0.5  # two new snapshots: not played yet
    np.testing.assert_allclose(s1.payoffs, 1.0 - s0.payoffs.T)
    for s, value in ((s0, 1.0), (s1, 2.0)):
        assert float(s.pool[1]) == value and bool(s.filled[1]) and int(s.newest) == 1
        assert float(s.games[1]) == 0.0  # the other population's new snapshot: no games yet
    # PFSP: learner 0 beats population 1's slot 0, so it mostly meets the new snapshot
    assert float(s0.weights[1]) > float(s0.weights[0]) and float(s0.weights[2]) == 0.0


def test_bad_two_population_settings_are_refused_before_compile(tmp_path, tag_league):
    exp, _ = tag_league
    built = build(exp)
    with pytest.raises(ConfigError, match="num_envs must be even"):
        build(_experiment(tmp_path, "odd", ["--set", "num_envs=3"]))
    with pytest.raises(ConfigError, match="same size"):
        build(_experiment(tmp_path, "one", ["--set", "league.populations=1"]))
    from marljax.shell.build import league_learners

    pair = league_learners(exp, built.env, built.env_params)
    with pytest.raises(ConfigError, match="pass make_league a pair"):
        make_league(pair[0], built.env, LeagueConfig(populations=2, num_envs=ENVS))
    with pytest.raises(ConfigError, match="half of the num_envs=4"):
        build(_experiment(tmp_path, "batch", ["--set", "num_minibatches=4"]))
    with pytest.raises(ConfigError, match="league.capacity"):
        build(_experiment(tmp_path, "cap", ["--set", "league.capacity=0"]))


def test_each_population_is_exploited_by_a_best_response_of_the_other_team(tag_league):
    from marljax.population.league_eval import exploitability_curve, generation_targets
    from marljax.shell.build import league_learners
    from marljax.training.train import TrainConfig

    exp, result = tag_league
    built = build(exp)
    env, params = built.env, built.env_params
    learners = league_learners(exp, env, params)
    s0, s1 = jax.tree.map(lambda x: x[0, 0], result.state.agent_state).sides
    win = np.full((CAPACITY, CAPACITY), 0.5)
    win[0, 1] = 1.0  # population 0's slot 0 beats population 1's slot 1
    targets = generation_targets(win, s0.age, age_1=s1.age)
    assert set(targets) == {"latest_0", "nash_0", "latest_1", "nash_1", "filled"}
    np.testing.assert_array_equal(np.argmax(targets["latest_0"], 1), [1, 0])  # ages [4, 3]
    np.testing.assert_allclose(targets["nash_1"].sum(1), 1.0, atol=1e-5)
    br = TrainConfig(num_envs=ENVS, rollout_len=STEPS, total_env_steps=ENVS * STEPS * 2)
    for p in (0, 1):  # a fresh learner of the other team against population p's snapshots
        curve = exploitability_curve(
            learners[1 - p], env, params, (s0, s1)[p].pool, jnp.eye(CAPACITY), br,
            jax.random.PRNGKey(p), opponent=learners[p], side=1 - p,
        )  # fmt: skip
        assert curve.shape == (1, CAPACITY) and np.all(np.abs(curve) <= 0.5)
        # simple tag: the adversaries win (a tag) or draw, never lose
        assert np.all(curve >= 0) if p == 1 else np.all(curve <= 0)


def test_eval_plays_the_two_final_learners_against_each_other(tag_league, capsys):
    _, result = tag_league
    assert cli.main(["eval", result.run_dir, "--episodes", "2"]) == 0
    out = capsys.readouterr().out
    assert "seed 0: return" in out and "seed 1: return" in out
