"""Matrix and repeated games: payoff catalogue, MatrixGame, two-step game, strategies, co-players."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.core import AutoReset, EpisodeStats, registered_envs
from marljax.envs.matrix import (
    MatrixGame,
    ScriptedCoPlayers,
    TwoStepGame,
    make_matrix_game,
)
from marljax.envs.matrix import payoffs as P
from marljax.envs.matrix import strategies as S

KEY = jax.random.key(0)
MATRIX_IDS = [i for i in registered_envs() if i.startswith("matrix/")]


# --------------------------------------------------------------------------------------------
# Conformance
# --------------------------------------------------------------------------------------------


def test_all_ids_registered():
    expected = {
        "prisoners_dilemma",
        "ipd",
        "ipd_tft",
        "stag_hunt",
        "chicken",
        "battle_of_sexes",
        "matching_pennies",
        "rps",
        "rrps",
        "climbing",
        "nonmonotonic",
        "two_step",
        "penalty_k0",
        "penalty_k25",
        "penalty_k50",
        "penalty_k75",
        "penalty_k100",
    }
    assert {f"matrix/{name}-v0" for name in expected} <= set(MATRIX_IDS)


# --------------------------------------------------------------------------------------------
# Payoff catalogue: the published tables, typed out literally
# --------------------------------------------------------------------------------------------


def _rows(payoffs):
    """(row player's table, column player's table) of a two-player tensor."""
    return np.asarray(payoffs[0]), np.asarray(payoffs[1])


def test_prisoners_dilemma_axelrod():
    # Axelrod (1984): R=3, S=0, T=5, P=1; action 0 = cooperate.
    row, col = _rows(P.prisoners_dilemma())
    np.testing.assert_array_equal(row, [[3, 0], [5, 1]])
    np.testing.assert_array_equal(col, [[3, 5], [0, 1]])
    assert P.prisoners_dilemma().dtype == jnp.float32


def test_two_player_general_sum_tables():
    # Stag hunt (OpenSpiel matrix_sh; Skyrms 2004): stag=0, hare=1.
    np.testing.assert_array_equal(_rows(P.stag_hunt()), [[[2, 0], [1, 1]], [[2, 1], [0, 1]]])
    # Chicken (OpenSpiel matrix_cd, actions reordered swerve=0, dare=1).
    np.testing.assert_array_equal(_rows(P.chicken()), [[[3, 1], [4, 0]], [[3, 4], [1, 0]]])
    # Battle of the sexes (Luce & Raiffa 1957; OpenSpiel matrix_bos).
    np.testing.assert_array_equal(
        _rows(P.battle_of_the_sexes()), [[[3, 0], [0, 2]], [[2, 0], [0, 3]]]
    )


def test_zero_sum_tables():
    # Matching pennies: agent 0 wins on a match (OpenSpiel matrix_mp).
    np.testing.assert_array_equal(
        _rows(P.matching_pennies()), [[[1, -1], [-1, 1]], [[-1, 1], [1, -1]]]
    )
    # RPS (OpenSpiel matrix_rps): rock=0, paper=1, scissors=2; win +1, loss -1.
    row, col = _rows(P.rock_paper_scissors())
    np.testing.assert_array_equal(row, [[0, -1, 1], [1, 0, -1], [-1, 1, 0]])
    np.testing.assert_array_equal(col, -row)


def test_common_payoff_tables():
    # Climbing and penalty games: Claus & Boutilier (AAAI 1998).
    climbing = P.climbing_game()
    np.testing.assert_array_equal(climbing[0], [[11, -30, 0], [-30, 7, 0], [0, 6, 5]])
    np.testing.assert_array_equal(climbing[1], climbing[0])
    for k in (0, 25, 50, 75, 100):
        penalty = marljax.make(f"matrix/penalty_k{k}-v0")[1].payoffs
        np.testing.assert_array_equal(penalty[0], [[-k, 0, 10], [0, 2, 0], [10, 0, -k]])
        np.testing.assert_array_equal(penalty[1], penalty[0])
    # Non-monotonic game: Son et al. (QTRAN, ICML 2019); Rashid et al. (WQMIX, NeurIPS 2020).
    nonmono = P.nonmonotonic_game()
    np.testing.assert_array_equal(nonmono[0], [[8, -12, -12], [-12, 0, 0], [-12, 0, 0]])
    np.testing.assert_array_equal(nonmono[1], nonmono[0])


def test_builders():
    table = np.arange(8.0).reshape(2, 2, 2)
    common = P.common_payoff(table)
    assert common.shape == (3, 2, 2, 2)
    np.testing.assert_array_equal(common[2], table)
    # from_function reproduces a tensor from its entries.
    tensor = P.from_function(lambda a: jnp.stack([a.sum(), a[0] - a[1]]), 2, 3)
    assert tensor.shape == (2, 3, 3)
    assert float(tensor[0, 2, 1]) == 3.0 and float(tensor[1, 2, 1]) == 1.0
    # Public goods, 3 players, multiplier 1.5: (C, C, D) gives contributors 1.0, the keeper 2.0.
    np.testing.assert_allclose(P.public_goods(3, 1.5)[:, 0, 0, 1], [1.0, 1.0, 2.0])
    with pytest.raises(KeyError, match="prisoners_dilemma"):
        P.game_payoffs("prisoners_dilema")
    with pytest.raises(ValueError, match="two-player"):
        P.game_payoffs("climbing", num_agents=3)


# --------------------------------------------------------------------------------------------
# MatrixGame
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pd():
    env = make_matrix_game("prisoners_dilemma")
    return env, jax.jit(env.reset), jax.jit(env.step)


@pytest.mark.parametrize(
    "joint, expected", [((0, 0), (3, 3)), ((0, 1), (0, 5)), ((1, 0), (5, 0)), ((1, 1), (1, 1))]
)
def test_pd_rewards(pd, joint, expected):
    env, reset, step = pd
    params = env.default_params()
    state, ts = reset(KEY, params)
    np.testing.assert_array_equal(ts.reward, [0.0, 0.0])
    state, ts = step(KEY, state, jnp.array(joint), params)
    np.testing.assert_array_equal(ts.reward, expected)
    np.testing.assert_array_equal(state.last_actions, joint)
    np.testing.assert_array_equal(state.last_rewards, expected)
    assert bool(ts.terminated) and not bool(ts.truncated)  # one-shot by default
    assert ts.reward.dtype == jnp.float32


def test_out_of_range_actions_are_clipped(pd):
    env, reset, step = pd
    params = env.default_params()
    state, _ = reset(KEY, params)
    _, ts = step(KEY, state, jnp.array([-3, 7]), params)  # clipped to (C, D)
    np.testing.assert_array_equal(ts.reward, [0.0, 5.0])


def test_egocentric_observation_three_players():
    env = MatrixGame(np.zeros((3, 3, 3, 3), np.float32), num_rounds=4)
    params = env.default_params()
    state, ts = jax.jit(env.reset)(KEY, params)
    assert ts.obs.shape == (3, 3 * 3 + 1)
    np.testing.assert_array_equal(ts.obs[:, :-1], 0.0)  # no previous action yet
    np.testing.assert_array_equal(ts.obs[:, -1], 1.0)  # first-round flag
    np.testing.assert_array_equal(state.last_actions, [-1, -1, -1])
    state, ts = jax.jit(env.step)(KEY, state, jnp.array([0, 1, 2]), params)
    eye = np.eye(3)
    for i in range(3):
        order = [(i + j) % 3 for j in range(3)]  # me first, then i+1, i+2 (wrapping)
        np.testing.assert_array_equal(ts.obs[i], np.concatenate([eye[order].ravel(), [0.0]]))
    # Global state: non-egocentric joint one-hot, first-round flag, fraction of rounds played.
    np.testing.assert_allclose(ts.global_state, np.concatenate([eye.ravel(), [0.0, 0.25]]))
    assert env.observation_space(params).shape == (10,)
    assert env.global_state_space(params).shape == (11,)
    assert ts.action_mask.shape == (3, 3) and bool(ts.action_mask.all())


@pytest.mark.parametrize(
    "num_rounds, max_steps, end, terminated",
    [(3, 1000, 3, True), (10, 2, 2, False), (4, 4, 4, True)],
)
def test_termination_vs_truncation(pd, num_rounds, max_steps, end, terminated):
    env, reset, step = pd
    params = env.default_params().replace(num_rounds=num_rounds, max_steps=max_steps)
    state, ts = reset(KEY, params)
    for t in range(1, end + 1):
        assert not bool(ts.done)
        state, ts = step(KEY, state, jnp.array([0, 0]), params)
        assert int(state.t) == t
    assert bool(ts.terminated) == terminated
    assert bool(ts.truncated) == (not terminated)
    assert float(ts.discount) == (0.0 if terminated else 1.0)


def test_vmap_over_params_two_games(pd):
    env, _, _ = pd
    params = env.default_params()
    batch = jax.tree.map(
        lambda a, b: jnp.stack([jnp.asarray(a), jnp.asarray(b)]),
        params,
        params.replace(payoffs=P.stag_hunt(), num_rounds=2),
    )

    def play(p):
        state, _ = env.reset(KEY, p)
        return env.step(KEY, state, jnp.array([0, 1]), p)

    _, ts = jax.jit(jax.vmap(play))(batch)
    np.testing.assert_array_equal(ts.reward, [[0.0, 5.0], [0.0, 1.0]])  # PD (C,D); stag hunt (S,H)
    np.testing.assert_array_equal(ts.terminated, [True, False])


def test_make_overrides():
    env, params = marljax.make("matrix/ipd-v0", num_rounds=10)
    assert isinstance(env, MatrixGame) and int(params.num_rounds) == 10
    assert int(marljax.make("matrix/ipd-v0")[1].num_rounds) == 50
    env, params = marljax.make("matrix/ipd-v0", coplayer="grim_trigger")
    assert isinstance(env, ScriptedCoPlayers) and env.num_agents == 1
    env, _ = marljax.make("matrix/public_goods-v0", num_agents=4)
    assert env.num_agents == 4 and env.num_actions == 2
    with pytest.raises(KeyError, match="tit_for_tat"):
        marljax.make("matrix/ipd-v0", coplayer="tit_for_tap")
    with pytest.raises(TypeError, match="num_rounds"):
        marljax.make("matrix/ipd-v0", num_round=3)


# --------------------------------------------------------------------------------------------
# Two-step game
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_step():
    env, params = marljax.make("matrix/two_step-v0")
    return env, params, jax.jit(env.reset), jax.jit(env.step)


@pytest.mark.parametrize(
    "first, second, ret, stage",
    [
        (1, (1, 1), 8.0, 2),
        (1, (0, 0), 0.0, 2),
        (1, (0, 1), 1.0, 2),
        (0, (0, 1), 7.0, 1),
        (0, (1, 0), 7.0, 1),
    ],
)
def test_two_step_returns(two_step, first, second, ret, stage):
    env, params, reset, step = two_step
    assert isinstance(env, TwoStepGame)
    state, ts = reset(KEY, params)
    np.testing.assert_array_equal(ts.obs, [[1, 0, 0], [1, 0, 0]])
    # Agent 1's first action is irrelevant.
    state, ts = step(KEY, state, jnp.array([first, 1 - first]), params)
    np.testing.assert_array_equal(ts.reward, [0.0, 0.0])
    assert not bool(ts.done)
    np.testing.assert_array_equal(ts.global_state, np.eye(3)[stage])
    np.testing.assert_array_equal(ts.obs, np.stack([np.eye(3)[stage]] * 2))
    state, ts = step(KEY, state, jnp.array(second), params)
    np.testing.assert_array_equal(ts.reward, [ret, ret])
    assert bool(ts.terminated) and not bool(ts.truncated)


# --------------------------------------------------------------------------------------------
# Scripted strategies
# --------------------------------------------------------------------------------------------


def _play(strategy, history, me=0, rewards=None):
    """Feed a strategy a sequence of previous joint actions; return its actions."""
    state = jax.jit(strategy.init)(KEY)
    act = jax.jit(strategy.act, static_argnums=3)
    out = []
    for t, last in enumerate(history):
        r = jnp.zeros(len(last)) if rewards is None else jnp.asarray(rewards[t], jnp.float32)
        action, state = act(state, jnp.array(last, jnp.int32), r, me, jax.random.key(t))
        assert action.dtype == jnp.int32 and action.shape == ()
        out.append(int(action))
    return out


def test_tit_for_tat_copies():
    tft = S.tit_for_tat()
    history = [(-1, -1), (0, 1), (1, 1), (1, 0), (0, 0)]
    assert _play(tft, history, me=0) == [0, 1, 1, 0, 0]
    assert _play(tft, history, me=1) == [0, 0, 1, 1, 0]


def test_grim_trigger_never_forgives():
    history = [(-1, -1), (0, 0), (0, 1), (0, 0), (1, 0), (0, 0)]
    assert _play(S.grim_trigger(), history, me=0) == [0, 0, 1, 1, 1, 1]


def test_win_stay_lose_shift_on_all_pd_outcomes():
    wsls = S.win_stay_lose_shift()
    # Own action first: (C,C) -> C, (C,D) -> D, (D,C) -> D, (D,D) -> C; cooperate first.
    history = [(-1, -1), (0, 0), (0, 1), (1, 0), (1, 1)]
    assert _play(wsls, history, me=0) == [0, 0, 1, 1, 0]
    assert _play(wsls, [(h[1], h[0]) for h in history], me=1) == [0, 0, 1, 1, 0]
    # Same with an aspiration level on the PD payoffs (R=3, S=0, T=5, P=1).
    rewards = [(0, 0), (3, 3), (0, 5), (5, 0), (1, 1)]
    assert _play(S.win_stay_lose_shift(aspiration=3.0), history, 0, rewards) == [0, 0, 1, 1, 0]


def test_cycle_and_random_and_fixed():
    history = [(-1, -1)] * 5
    assert _play(S.cycle(3), history) == [0, 1, 2, 0, 1]
    assert _play(S.always_cooperate(), history[:2]) == [0, 0]
    assert _play(S.always_defect(), history[:2]) == [1, 1]
    draws = _play(S.uniform_random(3), [(-1, -1)] * 30)
    assert set(draws) == {0, 1, 2}
    assert set(S.STRATEGIES) >= {
        "always_cooperate",
        "always_defect",
        "tit_for_tat",
        "grim_trigger",
        "win_stay_lose_shift",
        "random",
        "cycle",
        "random_memory_one",
    }


def test_random_memory_one_plays_the_probabilities_drawn_for_its_history():
    strategy = S.random_memory_one()
    probs = strategy.init(jax.random.PRNGKey(0))
    assert probs.shape == (5,) and not np.allclose(probs, strategy.init(jax.random.PRNGKey(1)))
    keys = jax.random.split(jax.random.PRNGKey(2), 4000)
    play = jax.jit(jax.vmap(strategy.act, in_axes=(None, None, None, None, 0)))
    for index, last in enumerate([(-1, -1), (0, 0), (0, 1), (1, 0), (1, 1)]):  # own, other
        actions, state = play(probs, jnp.array(last), jnp.zeros(2), 0, keys)
        cooperate = float(np.mean(np.asarray(actions) == 0))
        assert abs(cooperate - float(probs[index])) < 0.03, (last, cooperate, probs[index])
    np.testing.assert_array_equal(state[0], probs)  # the drawn policy stays for the episode


# --------------------------------------------------------------------------------------------
# Scripted co-players
# --------------------------------------------------------------------------------------------


def _run(env, params, learner_action, num_steps):
    """Roll out a constant learner action under jit; return the stacked timesteps."""

    def body(carry, key):
        state = carry
        state, ts = env.step(key, state, jnp.full((env.num_agents,), learner_action), params)
        return state, ts

    @jax.jit
    def rollout(key):
        state, _ = env.reset(key, params)
        return jax.lax.scan(body, state, jax.random.split(key, num_steps))[1]

    return rollout(KEY)


@pytest.mark.parametrize("learner_action, expected", [(1, [5, 1, 1, 1]), (0, [3, 3, 3, 3])])
def test_ipd_vs_tit_for_tat(learner_action, expected):
    env, params = marljax.make("matrix/ipd_tft-v0", num_rounds=4)
    ts = _run(env, params, learner_action, 4)
    assert ts.obs.shape == (4, 1, 5) and ts.reward.shape == (4, 1)
    np.testing.assert_array_equal(ts.reward[:, 0], expected)
    np.testing.assert_array_equal(ts.terminated, [False, False, False, True])
    tft_plays = [0] + [learner_action] * 3
    np.testing.assert_array_equal(ts.extras["coplayer_actions"][:, 0], tft_plays)


def test_coplayer_strategy_resets_with_the_episode():
    # A learner that defects once, at the first round of every 3-round episode, against grim
    # trigger: grim punishes for the rest of that episode, then forgives at the next reset.
    env, params = marljax.make("matrix/ipd-v0", coplayer="grim_trigger", num_rounds=3)
    env = EpisodeStats(AutoReset(env))

    def body(state, inp):
        key, action = inp
        return env.step(key, state, action[None], params)

    @jax.jit
    def rollout(key):
        state, _ = env.reset(key, params)
        actions = jnp.array([1, 0, 0, 1, 0, 0])
        return jax.lax.scan(body, state, (jax.random.split(key, 6), actions))[1]

    ts = rollout(KEY)
    np.testing.assert_array_equal(ts.reward[:, 0], [5, 0, 0, 5, 0, 0])
    np.testing.assert_array_equal(ts.extras["coplayer_actions"][:, 0], [0, 1, 1, 0, 1, 1])
    np.testing.assert_array_equal(ts.extras["episode_return"][[2, 5], 0], [5, 5])


def test_coplayers_slice_and_validation():
    game = MatrixGame(P.public_goods(3, 1.5), num_rounds=2)
    env = ScriptedCoPlayers(game, {1: S.always_defect()})
    assert env.num_agents == 2 and env.learner_ids == (0, 2) and env.scripted_ids == (1,)
    params = env.default_params()
    state, ts = jax.jit(env.reset)(KEY, params)
    assert ts.obs.shape == (2, 7) and ts.action_mask.shape == (2, 2)
    assert ts.global_state.shape == game.global_state_space(params).shape
    state, ts = jax.jit(env.step)(KEY, state, jnp.array([0, 1]), params)
    # Joint action (C, D, D): contributor gets 1.5 / 3 = 0.5, keepers 1 + 0.5 = 1.5.
    np.testing.assert_allclose(ts.reward, [0.5, 1.5])
    np.testing.assert_array_equal(state.inner.last_actions, [0, 1, 1])
    with pytest.raises(ValueError):
        ScriptedCoPlayers(game, {3: S.always_defect()})
    with pytest.raises(ValueError):
        ScriptedCoPlayers(game, {i: S.always_defect() for i in range(3)})
