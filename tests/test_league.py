"""Leagues on two-sided Markov games: the pool in jit, the rules, evaluation, CLI and resume.

One tiny league (repeated RPS, 3 rounds, 4 envs, IPPO with a GRU of 8; two scripted strategies
as fixed members, a quarter of the episodes) is trained once through `marljax train --league`
and shared by the tests that read it.
"""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from marljax.agents import algo_spec
from marljax.core.config import ConfigError
from marljax.core.registry import make
from marljax.population.league import (
    LeagueConfig,
    TeamView,
    league_populations,
    league_teams,
    make_league,
    pfsp_weights,
    win_rates,
)
from marljax.population.league_eval import (
    elo_ratings,
    exploitability_curve,
    generation_targets,
    league_report,
)
from marljax.shell import cli
from marljax.shell.experiment import Experiment, build, run_experiment
from marljax.training.train import TrainConfig

ROUNDS, ENVS, UPDATES, INTERVAL, CAPACITY = 3, 4, 8, 2, 3
ARGS = [
    "--algo", "ippo", "--env", "matrix/rrps-v0", "--set", f"env.num_rounds={ROUNDS}",
    "--league", "pfsp", "--set", f"league.capacity={CAPACITY}",
    "--set", f"league.snapshot_interval={INTERVAL}", "--set", f"num_envs={ENVS}",
    "--set", f"rollout_len={ROUNDS}", "--steps", str(ENVS * ROUNDS * UPDATES), "--seeds", "2",
    "--set", "gru_size=8", "--set", "hidden_sizes=8", "--set", "chunk_updates=4",
    "--opponents", "pool:cycle,random", "--set", "league.fixed_share=0.25",
    "--set", "league.exploit_updates=1", "--no-progress",
]  # fmt: skip


def _experiment(tmp, name, extra=()):
    args = cli.build_parser().parse_args(["train", *ARGS, *extra])
    return cli.experiment_from_args(args).replace(out_dir=str(tmp), name=name)


@pytest.fixture(scope="module")
def league_run(tmp_path_factory):
    exp = _experiment(tmp_path_factory.mktemp("league"), "full")
    return exp, run_experiment(exp, progress=False)


def test_the_cli_trains_a_league_with_a_pool_filled_on_schedule(league_run):
    exp, result = league_run
    with open(os.path.join(result.run_dir, "league.json")) as f:
        report = json.load(f)
    assert np.shape(report["win_rate"]) == (1, 2, CAPACITY, CAPACITY)
    assert np.shape(report["elo"]) == (1, 2, CAPACITY) and report["age"][0][0] == [6, 8, 4]
    assert os.path.exists(os.path.join(result.run_dir, "league_crossplay.png"))
    for kind in ("latest", "nash"):  # a best response per generation and run (exploit_updates)
        curve = np.asarray(report["exploitability"][kind])
        assert curve.shape == (1, 2, CAPACITY) and np.all(np.abs(curve) <= 0.5)
    assert os.path.exists(os.path.join(result.run_dir, "league_exploitability.png"))
    assert exp.league_config.rule == "pfsp" and exp.league_config.num_envs == ENVS
    state = result.state.agent_state
    # slot 0: the initial policy; then a snapshot every INTERVAL updates into a ring of 3
    np.testing.assert_array_equal(state.filled[0, 0], [True, True, True])
    np.testing.assert_array_equal(state.age[0, 0], [6, 8, 4])  # 2 -> slot 1, 4 -> 2, 6 -> 0, 8 -> 1
    np.testing.assert_array_equal(state.newest[0, 0], 1)
    learner = jax.tree.leaves(state.learner)
    newest = jax.tree.leaves(jax.tree.map(lambda x: x[:, :, 1], state.pool))
    for a, b in zip(learner, newest, strict=True):  # the last snapshot is the final learner
        np.testing.assert_array_equal(a, b)
    w = state.weights[0, 0]
    assert np.all(w >= 0) and np.isclose(w.sum(), 1.0)
    rate = result.metrics["league/win_rate"]
    assert rate.shape == (1, 2, UPDATES) and np.all((rate >= 0) & (rate <= 1))
    assert np.all(state.games[0, 0] >= 0) and np.all(state.wins <= state.games + 1e-6)
    # the fixed members (cycle, random) follow the snapshots in the counts, and were played
    assert state.games.shape[-1] == CAPACITY + 2 and np.all(state.games[..., CAPACITY:] > 0)
    fixed = result.metrics["league/fixed_win_rate"]
    assert fixed.shape == (1, 2, UPDATES) and np.all((fixed >= 0) & (fixed <= 1))


def test_a_killed_league_resumes_bitwise(tmp_path, league_run, capsys):
    _, full = league_run
    exp = _experiment(tmp_path, "cut")
    partial = run_experiment(exp, progress=False, stop_after_chunks=1)
    assert partial.metrics["league/win_rate"].shape[-1] == 4
    assert cli.main(["train", "--resume", partial.run_dir, "--no-progress"]) == 0
    resumed = np.load(os.path.join(partial.run_dir, "metrics.npz"))
    for k, v in full.metrics.items():
        np.testing.assert_array_equal(resumed[k], v, err_msg=f"metric {k}")


def test_crossplay_generations_and_exploitability_of_the_pools(league_run):
    """The run's league.json holds `league_crossplay` of both seeds' pools (one program)."""
    exp, result = league_run
    with open(os.path.join(result.run_dir, "league.json")) as f:
        report = json.load(f)
    win = np.asarray(report["win_rate"])[0]  # [S, K, K]
    assert np.all(np.asarray(report["finished"]) == 1.0) and np.all((win >= 0) & (win <= 1))
    nash = np.asarray(report["nash"])[0]
    np.testing.assert_allclose(nash.sum(-1), 1.0, atol=1e-5)
    state = jax.tree.map(lambda x: x[0, 0], result.state.agent_state)
    targets = generation_targets(win[0], state.age)
    np.testing.assert_array_equal(np.argmax(targets["latest"], 1), [2, 0, 1])  # ages 4, 6, 8
    np.testing.assert_allclose(targets["nash"].sum(1), 1.0, atol=1e-5)
    assert targets["nash"][0, 2] == pytest.approx(1.0)  # generation 0: the oldest alone
    built = build(exp)
    env, params = built.env, built.env_params
    learner = algo_spec("ippo").factory(built.agent_config, TeamView(env, (0,)), params)
    br = TrainConfig(num_envs=ENVS, rollout_len=ROUNDS, total_env_steps=ENVS * ROUNDS * 4)
    pools = jax.tree.map(lambda x: x[0], result.state.agent_state.pool)  # [S, K, ...]
    weights = jnp.tile(jnp.eye(CAPACITY)[None, :2], (2, 1, 1))  # per seed: its snapshots 0, 1
    curve = exploitability_curve(learner, env, params, pools, weights, br, jax.random.PRNGKey(1))
    assert curve.shape == (2, 1, 2) and np.all(np.abs(curve) <= 0.5)


def test_elo_recovers_known_ratings_and_nash_of_a_cycle_is_uniform():
    ratings = np.array([-200.0, 0.0, 300.0])
    d = ratings[:, None] - ratings[None, :]
    win = 1.0 / (1.0 + 10.0 ** (-d / 400.0))
    np.testing.assert_allclose(elo_ratings(win), ratings - ratings.mean(), atol=2.0)
    cycle = np.array([[0.5, 1.0, 0.0], [0.0, 0.5, 1.0], [1.0, 0.0, 0.5]])  # rock-paper-scissors
    report = league_report(cycle)
    np.testing.assert_allclose(report["nash"], [1 / 3] * 3, atol=0.02)
    assert float(report["nash_value"]) == pytest.approx(0.5, abs=0.02)
    masked = elo_ratings(win, np.array([True, True, False]))
    assert np.isnan(masked[2]) and masked[0] < masked[1]


def test_pfsp_weights_favour_the_opponents_the_learner_loses_to():
    filled = jnp.array([True, True, True, False])
    p = win_rates(jnp.array([9.0, 1.0, 5.0, 0.0]), jnp.array([10.0, 10.0, 10.0, 0.0]))
    w = pfsp_weights(p, filled, "hard", 2.0)
    assert float(w[3]) == 0.0 and np.isclose(float(w.sum()), 1.0)
    assert float(w[1]) > float(w[2]) > float(w[0])
    v = pfsp_weights(p, filled, "variance")
    assert float(v[2]) > float(v[0]) and float(v[2]) > float(v[1])  # even matches first
    assert np.isclose(float(win_rates(jnp.float32(0), jnp.float32(0))), 0.5)


@pytest.mark.parametrize(
    "league, match",
    [
        ({"rule": "fsp"}, "league rule must be one of"),
        ({"capacity": 0}, "league.capacity"),
        ({"pfsp_weighting": "soft"}, "pfsp_weighting must be one of"),
        ({"meta_solver": "nah"}, "league meta_solver"),
        ({"snapshot_interval": 0}, "league.snapshot_interval"),
    ],
)
def test_bad_league_settings_are_refused_before_anything_is_built(league, match):
    with pytest.raises(ConfigError, match=match):
        Experiment(algo="ippo", env="matrix/rrps-v0", league=league)


def test_an_env_that_is_not_two_sided_is_refused():
    env, params = make("particle/simple_spread-v0")  # 3 agents, no teams
    with pytest.raises(ConfigError, match="two-sided"):
        league_teams(env)
    with pytest.raises(ConfigError, match="same size"):
        league_teams(env, [[0], [1, 2]])
    tag, _ = make("particle/simple_tag-v0")  # 3 adversaries + 1 good agent: two populations
    with pytest.raises(ConfigError, match="populations=2"):
        league_teams(tag)
    assert league_teams(tag, [[0], [1]]) == ((0,), (1,))
    assert league_populations(tag, LeagueConfig()) == (2, ((0, 1, 2), (3,)))
    assert league_populations(tag, LeagueConfig(teams=((0,), (1,)))) == (1, ((0,), (1,)))
    with pytest.raises(ConfigError, match="same size"):
        league_populations(tag, LeagueConfig(populations=1))
    rps, _ = make("matrix/rrps-v0")
    assert league_populations(rps, LeagueConfig())[0] == 1
    with pytest.raises(ConfigError, match="distinct agents"):
        league_teams(env, [[0], [0]])
    with pytest.raises(ConfigError, match="two-sided"):
        build(Experiment(algo="ippo", env="particle/simple_spread-v0", league={"rule": "self"}))
    with pytest.raises(ConfigError, match="one-agent teams"):
        build(Experiment(algo="ippo", env="smax/3m-v0", env_kwargs={"enemy": "learned"},
                         league={}, opponents="pool:random"))  # fmt: skip


def test_a_league_built_for_other_num_envs_says_so():
    env, params = make("matrix/rrps-v0", num_rounds=ROUNDS)
    learner = algo_spec("ippo").factory(
        algo_spec("ippo").config_cls(recurrent=False, hidden_sizes=(8,)),
        TeamView(env, (0,)),
        params,
    )
    league = make_league(learner, env, LeagueConfig(num_envs=4))
    with pytest.raises(ConfigError, match="num_envs=4"):
        league.check_batch(8, ROUNDS)


def test_the_pool_memory_is_refused_before_compile_with_the_capacity_named(tmp_path):
    exp = _experiment(tmp_path, "big", ["--set", "league.capacity=4096", "--seeds", "2000"])
    with pytest.raises(ConfigError, match="league capacity"):
        run_experiment(exp, progress=False, max_memory_bytes=10**9)


def test_smax_with_a_learned_enemy_is_two_sided():
    pytest.importorskip("jaxmarl")
    env, params = make("smax/3m-v0", enemy="learned")
    assert env.num_agents == 6 and league_teams(env) == ((0, 1, 2), (3, 4, 5))
    state, ts = env.reset(jax.random.PRNGKey(0), params)
    assert ts.obs.shape[0] == 6 and ts.action_mask.shape[0] == 6
    state, ts = env.step(jax.random.PRNGKey(1), state, jnp.zeros((6,), jnp.int32), params)
    assert ts.reward.shape == (6,) and "task/win_rate" in ts.extras
    with pytest.raises(ValueError, match="enemy must be one of"):
        make("smax/3m-v0", enemy="scripted")
    with pytest.raises(ValueError, match="heuristic enemy"):
        make("smax/3m-v0", enemy="learned", attack_mode="random")


def test_the_learner_plays_both_sides_unless_told_first():
    env, params = make("matrix/rrps-v0", num_rounds=ROUNDS)
    spec = algo_spec("ippo")
    learner = spec.factory(spec.config_cls(recurrent=False, hidden_sizes=(8,)), TeamView(env, (0,)), params)  # fmt: skip
    from marljax.agents.base import Observation

    _, ts = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(jax.random.PRNGKey(0), 64), params
    )
    obs = Observation(ts.obs, ts.action_mask, ts.global_state, jnp.ones((64,), bool))
    for sides, expect in (("both", {0, 1}), ("first", {0})):
        league = make_league(learner, env, LeagueConfig(num_envs=64, sides=sides))
        state = league.init(jax.random.PRNGKey(1), learner.default_hparams())
        actions, carry, (_, opponent, side) = league.act(
            state, league.initial_carry(64), obs, jax.random.PRNGKey(2), learner.default_hparams()
        )
        assert set(np.asarray(side).tolist()) == expect and actions.shape == (64, 2)
        assert np.all(np.asarray(opponent) == 0)  # the initial policy is the only member
    with pytest.raises(ConfigError, match="league sides"):
        Experiment(algo="ippo", env="matrix/rrps-v0", league={"sides": "left"})


def test_fixed_strategies_play_their_share_of_the_episodes_from_the_last_joint_action():
    from marljax.agents.base import Observation
    from marljax.envs.matrix.strategies import get_strategy

    env, params = make("matrix/ipd-v0", num_rounds=4)
    spec = algo_spec("ippo")
    learner = spec.factory(spec.config_cls(recurrent=False, hidden_sizes=(8,)), TeamView(env, (0,)), params)  # fmt: skip
    hp = learner.default_hparams()
    config = LeagueConfig(rule="self", num_envs=256, fixed_share=0.5, sides="first", capacity=2)
    fixed = [get_strategy("always_defect"), get_strategy("tit_for_tat")]
    league = make_league(learner, env, config, fixed=fixed, fixed_weights=[1.0, 3.0])
    state = league.init(jax.random.PRNGKey(0), hp)
    keys = jax.random.split(jax.random.PRNGKey(1), 256)
    env_state, ts = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    carry, reset = league.initial_carry(256), jnp.ones((256,), bool)
    act = jax.jit(league.act)
    for t in range(3):
        obs = Observation(ts.obs, ts.action_mask, ts.global_state, reset)
        actions, carry, (_, opponent, _) = act(state, carry, obs, jax.random.PRNGKey(2 + t), hp)
        opp = np.asarray(opponent)
        if t == 0:
            prev = None
            share = np.mean(opp >= 2)
            assert 0.4 < share < 0.6  # fixed_share of the episodes
            assert 0.65 < np.mean(opp[opp >= 2] == 3) < 0.85  # tit-for-tat 3 times as often
            assert set(np.unique(opp)) <= {-1, 2, 3}
        a = np.asarray(actions)
        np.testing.assert_array_equal(a[opp == 2, 1], 1)  # always defect
        tft = opp == 3
        expect = np.zeros(tft.sum(), int) if prev is None else prev[tft, 0]
        np.testing.assert_array_equal(a[tft, 1], expect)  # cooperate first, then copy
        prev = a
        env_state, ts = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
            keys, env_state, actions, params
        )
        reset = jnp.zeros((256,), bool)
    with pytest.raises(ConfigError, match="fixed_weights"):
        make_league(learner, env, config, fixed=fixed, fixed_weights=[1.0])


def test_self_play_share_plays_the_learner_on_its_own_seat():
    """`self_play=1` under a pool rule acts exactly as rule `self` (the learner on both seats)."""
    from marljax.agents.base import Observation

    env, params = make("matrix/rrps-v0", num_rounds=ROUNDS)
    spec = algo_spec("ippo")
    learner = spec.factory(spec.config_cls(recurrent=False, hidden_sizes=(8,)), TeamView(env, (0,)), params)  # fmt: skip
    hp = learner.default_hparams()
    keys = jax.random.split(jax.random.PRNGKey(0), 32)
    state, _ = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    moves = jax.random.randint(jax.random.PRNGKey(1), (32, 2), 0, 3)
    _, ts = jax.vmap(env.step, in_axes=(0, 0, 0, None))(keys, state, moves, params)
    obs = Observation(ts.obs, ts.action_mask, ts.global_state, jnp.zeros((32,), bool))
    out = []
    for config in (LeagueConfig(rule="pfsp", self_play=1.0, num_envs=32, sides="first"),
                   LeagueConfig(rule="self", num_envs=32, sides="first")):  # fmt: skip
        league = make_league(learner, env, config)
        s = league.init(jax.random.PRNGKey(2), hp)
        carry = league.initial_carry(32)
        carry = (*carry[:2], jnp.full((32,), -1, jnp.int32), carry[3])
        actions, _, (_, opponent, _) = league.act(s, carry, obs, jax.random.PRNGKey(3), hp, True)
        assert np.all(np.asarray(opponent) == -1)
        out.append(np.asarray(actions))
    np.testing.assert_array_equal(out[0], out[1])
