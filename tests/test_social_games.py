"""Coin Game, repeated public goods and the mechanism wrappers: hand-built states, known outcomes.

Most checks run the pure functions eagerly (no whole-program compile); a few run them jitted to
check that they trace. `check_env` runs on every registered id in tests/test_conformance.py.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
import marljax.envs.social  # noqa: F401  (registers social/*)
from marljax.envs.matrix import MatrixGame
from marljax.envs.matrix.payoffs import prisoners_dilemma
from marljax.envs.social import (
    CoinDraws,
    CoinGame,
    CoinGameJaxMARLState,
    CoinGameState,
    DirectPunishment,
    MarkCooperation,
    PairedGames,
    PartnerSelection,
    PublicGoods,
    Reputation,
    ThirdPartyPunishment,
    public_goods_payoff,
)

KEY = jax.random.PRNGKey(0)
UP, DOWN, LEFT, RIGHT, STAY = range(5)

MY_IDS = [
    "social/coin_game-v0",
    "social/coin_game_jaxmarl-v0",
    "social/public_goods-v0",
    "social/public_goods_continuous-v0",
    "social/public_goods_punishment-v0",
    "social/public_goods_punishment_2stage-v0",
    "social/public_goods_third_party_2stage-v0",
    "social/public_goods_third_party-v0",
    "social/public_goods_reputation-v0",
    "social/ipd_partner_selection-v0",
    "social/ipd_partner_reputation-v0",
    "social/ipd_staged-v0",
    "social/ipd_staged_punishment-v0",
    "social/coin_game_partner_selection-v0",
    "social/coin_game_partner_reputation-v0",
    "social/coin_game_punishment-v0",
    "social/coin_game_third_party-v0",
    "social/coin_game_reputation-v0",
    "social/stag_hunt-v0",
    "social/ipd-v0",
    "social/ipd_punishment_2stage-v0",
]


def test_ids_registered():
    assert set(MY_IDS) <= set(marljax.registered_envs())


# --------------------------------------------------------------------------------------------
# Coin Game
# --------------------------------------------------------------------------------------------


def _coin_state(agents, coin, owner, t=0):
    return CoinGameState(
        agent_pos=jnp.asarray(agents, jnp.int32),
        coin_pos=jnp.asarray(coin, jnp.int32),
        coin_owner=jnp.int32(owner),
        t=jnp.int32(t),
    )


@pytest.fixture(scope="module")
def coin():
    env, params = marljax.make("social/coin_game-v0")
    return env, params, jax.jit(env.step)


def test_coin_own_pickup(coin):
    env, params, step = coin
    state = _coin_state([[0, 0], [2, 2]], [0, 1], owner=0)
    new, ts = step(KEY, state, jnp.array([RIGHT, STAY]), params)
    np.testing.assert_array_equal(new.agent_pos, [[0, 1], [2, 2]])
    np.testing.assert_allclose(ts.reward, [1.0, 0.0])
    np.testing.assert_array_equal(ts.extras["cooperated"], [True, False])
    np.testing.assert_array_equal(ts.extras["defected"], [False, False])
    # A new coin appears on a cell free of agents.
    cell = tuple(np.asarray(new.coin_pos))
    assert cell not in {(0, 1), (2, 2)}


def test_coin_other_pickup_costs_owner_two(coin):
    env, params, step = coin
    state = _coin_state([[0, 0], [2, 2]], [0, 1], owner=1)
    _, ts = step(KEY, state, jnp.array([RIGHT, STAY]), params)
    np.testing.assert_allclose(ts.reward, [1.0, -2.0])
    np.testing.assert_array_equal(ts.extras["defected"], [True, False])
    np.testing.assert_array_equal(ts.extras["cooperated"], [False, False])


def test_coin_simultaneous_pickup(coin):
    env, params, step = coin
    # Both step onto the coin of agent 0: both earn +1, agent 0 also pays -2 for agent 1.
    state = _coin_state([[0, 0], [1, 1]], [0, 1], owner=0)
    _, ts = step(KEY, state, jnp.array([RIGHT, UP]), params)
    np.testing.assert_allclose(ts.reward, [-1.0, 1.0])


def test_coin_no_pickup_keeps_coin_and_wraps_torus(coin):
    env, params, step = coin
    state = _coin_state([[0, 0], [2, 2]], [1, 1], owner=0)
    new, ts = step(KEY, state, jnp.array([UP, DOWN]), params)
    np.testing.assert_array_equal(new.agent_pos, [[2, 0], [0, 2]])
    new, _ = step(KEY, state, jnp.array([LEFT, RIGHT]), params)
    np.testing.assert_array_equal(new.agent_pos, [[0, 2], [2, 0]])
    np.testing.assert_array_equal(new.coin_pos, [1, 1])
    assert int(new.coin_owner) == 0
    np.testing.assert_allclose(ts.reward, [0.0, 0.0])
    # Out-of-range actions are clipped (99 -> stay, -3 -> up).
    new, _ = step(KEY, state, jnp.array([99, -3]), params)
    np.testing.assert_array_equal(new.agent_pos, [[0, 0], [1, 2]])


def test_coin_respawn_never_on_agents(coin):
    env, params, step = coin
    state = _coin_state([[0, 0], [2, 2]], [0, 1], owner=0)
    keys = jax.random.split(KEY, 64)
    new, _ = jax.vmap(step, in_axes=(0, None, None, None))(
        keys, state, jnp.array([RIGHT, STAY]), params
    )
    cells = {tuple(c) for c in np.asarray(new.coin_pos)}
    assert not cells & {(0, 1), (2, 2)}
    assert len(cells) > 3  # uniform over the 7 free cells
    assert set(np.asarray(new.coin_owner).tolist()) == {0, 1}


def test_coin_observation_channels():
    env = CoinGame()
    state = _coin_state([[0, 0], [2, 1]], [1, 2], owner=1)
    ts = env._timestep(
        state, env.default_params(), jnp.zeros(2), jnp.zeros(2, bool), jnp.zeros(2, bool)
    )
    obs = np.asarray(ts.obs)
    assert obs.shape == (2, 3, 3, 4)
    # Agent 0: own at (0,0), other at (2,1), coin of the other's colour at (1,2).
    assert obs[0, 0, 0, 0] == 1 and obs[0, 2, 1, 1] == 1 and obs[0, 1, 2, 3] == 1
    assert obs[0, ..., 2].sum() == 0
    # Agent 1 sees itself in channel 0 and its own coin in channel 2.
    assert obs[1, 2, 1, 0] == 1 and obs[1, 0, 0, 1] == 1 and obs[1, 1, 2, 2] == 1
    assert obs.sum() == 2 * 3

    ego = CoinGame(egocentric=True)
    obs = np.asarray(
        ego._timestep(
            state, ego.default_params(), jnp.zeros(2), jnp.zeros(2, bool), jnp.zeros(2, bool)
        ).obs
    )
    # Each agent at the centre; agent 0 (at (0,0)) sees the coin (1,2) shifted by (+1,+1) -> (2,0).
    assert obs[0, 1, 1, 0] == 1 and obs[1, 1, 1, 0] == 1
    assert obs[0, 2, 0, 3] == 1
    # agent 1 at (2,1): shift (-1, 0): other agent (0,0) -> (2,0); its own coin (1,2) -> (0,2).
    assert obs[1, 2, 0, 1] == 1 and obs[1, 0, 2, 2] == 1


def test_coin_params_override_and_vmap(coin):
    env, _, _ = coin
    _, params = marljax.make("social/coin_game-v0", pickup_reward=2.0, owner_penalty=-5.0)
    state = _coin_state([[0, 0], [2, 2]], [0, 1], owner=1)
    _, ts = env.step(KEY, state, jnp.array([RIGHT, STAY]), params)
    np.testing.assert_allclose(ts.reward, [2.0, -5.0])
    stacked = jax.tree.map(
        lambda *x: jnp.stack([jnp.asarray(v) for v in x]),
        params,
        params.replace(owner_penalty=-1.0),
    )
    _, ts = jax.vmap(env.step, in_axes=(None, None, None, 0))(
        KEY, state, jnp.array([RIGHT, STAY]), stacked
    )
    np.testing.assert_allclose(ts.reward, [[2.0, -5.0], [2.0, -1.0]])


def test_coin_reset_distinct_and_truncation():
    env, params = marljax.make("social/coin_game-v0", num_agents=3, grid_size=2, max_steps=2)
    for k in jax.random.split(KEY, 8):
        state, ts = env.reset(k, params)
        cells = {
            tuple(c) for c in np.asarray(jnp.concatenate([state.agent_pos, state.coin_pos[None]]))
        }
        assert len(cells) == 4
    state, ts = env.step(KEY, state, jnp.array([STAY] * 3), params)
    assert not bool(ts.truncated)
    state, ts = env.step(KEY, state, jnp.array([STAY] * 3), params)
    assert bool(ts.truncated) and not bool(ts.terminated)


def test_coin_bad_input_fails_at_make():
    with pytest.raises(ValueError, match="too small"):
        marljax.make("social/coin_game-v0", grid_size=2, num_agents=4)
    with pytest.raises(ValueError, match="too small"):
        marljax.make("social/coin_game-v0", grid_size=1)
    with pytest.raises(ValueError, match="max_steps"):
        marljax.make("social/coin_game-v0", max_steps=0)


# --------------------------------------------------------------------------------------------
# Coin Game with JaxMARL's rules (parity with JaxMARL itself: tests/test_coin_game_parity.py)
# --------------------------------------------------------------------------------------------

J_RIGHT, J_LEFT, J_ROW_UP, J_ROW_DOWN, J_STAY = range(5)  # JaxMARL's action order


def _two_coin_state(agents, coins, t=0):
    return CoinGameJaxMARLState(
        agent_pos=jnp.asarray(agents, jnp.int32),
        coin_pos=jnp.asarray(coins, jnp.int32),
        t=jnp.int32(t),
    )


#: respawn at (2, 0); on a restart, agents to (1, 1) and (1, 2), coins to (1, 1) and (0, 0).
DRAWS = CoinDraws(
    respawn_pos=jnp.array([[2, 0], [2, 0]], jnp.int32),
    restart_agent_pos=jnp.array([[1, 1], [1, 2]], jnp.int32),
    restart_coin_pos=jnp.array([[1, 1], [0, 0]], jnp.int32),
)


@pytest.fixture(scope="module")
def two_coin():
    env, params = marljax.make("social/coin_game_jaxmarl-v0")
    return env, params, jax.jit(env.transition)


def test_two_coin_action_order_and_torus(two_coin):
    env, params, transition = two_coin
    state = _two_coin_state([[0, 0], [2, 2]], [[1, 1], [1, 1]])
    for actions, expected in [
        ([J_RIGHT, J_LEFT], [[0, 1], [2, 1]]),
        ([J_ROW_UP, J_ROW_DOWN], [[1, 0], [1, 2]]),
        ([J_LEFT, J_ROW_UP], [[0, 2], [0, 2]]),  # wraps; agents may share a cell
        ([J_STAY, 99], [[0, 0], [2, 2]]),  # out of range is clipped to stay
    ]:
        new, ts = transition(state, jnp.array(actions), DRAWS, params)
        np.testing.assert_array_equal(new.agent_pos, expected)
        np.testing.assert_array_equal(new.coin_pos, [[1, 1], [1, 1]])  # nobody picked up
        np.testing.assert_allclose(ts.reward, [0.0, 0.0])


def test_two_coin_pickups_and_respawn(two_coin):
    env, params, transition = two_coin
    # Agent 0 takes its own coin: +1, the coin respawns at the drawn cell, the other stays.
    state = _two_coin_state([[0, 0], [2, 2]], [[0, 1], [1, 1]])
    new, ts = transition(state, jnp.array([J_RIGHT, J_STAY]), DRAWS, params)
    np.testing.assert_allclose(ts.reward, [1.0, 0.0])
    np.testing.assert_array_equal(new.coin_pos, [[2, 0], [1, 1]])
    np.testing.assert_array_equal(ts.extras["cooperated"], [True, False])
    # Agent 1 takes agent 0's coin: +1 for it, -2 for the owner.
    state = _two_coin_state([[0, 0], [0, 2]], [[0, 1], [1, 1]])
    _, ts = transition(state, jnp.array([J_STAY, J_LEFT]), DRAWS, params)
    np.testing.assert_allclose(ts.reward, [-2.0, 1.0])
    np.testing.assert_array_equal(ts.extras["defected"], [False, True])
    # Both coins on one cell, agent 0 takes both: +1 +1, and agent 1 pays -2.
    state = _two_coin_state([[0, 0], [2, 2]], [[0, 1], [0, 1]])
    new, ts = transition(state, jnp.array([J_RIGHT, J_STAY]), DRAWS, params)
    np.testing.assert_allclose(ts.reward, [2.0, -2.0])
    np.testing.assert_array_equal(new.coin_pos, [[2, 0], [2, 0]])
    # Both step onto agent 0's coin: 0 gets +1 - 2, 1 gets +1.
    state = _two_coin_state([[0, 0], [1, 1]], [[0, 1], [2, 2]])
    _, ts = transition(state, jnp.array([J_RIGHT, J_ROW_DOWN]), DRAWS, params)
    np.testing.assert_allclose(ts.reward, [-1.0, 1.0])
    # Shared rewards: everyone gets the sum.
    _, ts = transition(
        state, jnp.array([J_RIGHT, J_ROW_DOWN]), DRAWS, params.replace(shared_rewards=True)
    )
    np.testing.assert_allclose(ts.reward, [0.0, 0.0])


def test_two_coin_restart_every_inner_episode_and_truncation(two_coin):
    env, params, transition = two_coin
    # The 10th step restarts the board from the draws and zeroes the step's rewards.
    state = _two_coin_state([[0, 0], [2, 2]], [[0, 1], [1, 1]], t=9)
    new, ts = transition(state, jnp.array([J_RIGHT, J_STAY]), DRAWS, params)
    np.testing.assert_allclose(ts.reward, [0.0, 0.0])
    np.testing.assert_array_equal(new.agent_pos, [[1, 1], [1, 2]])
    np.testing.assert_array_equal(new.coin_pos, [[1, 1], [0, 0]])  # a coin under an agent
    assert bool(ts.extras["inner_episode_done"]) and not bool(ts.done)
    assert not ts.extras["cooperated"].any()
    # The coin under agent 0 is not picked up until agent 0 steps onto its cell again.
    new, ts = transition(new, jnp.array([J_STAY, J_STAY]), DRAWS, params)
    np.testing.assert_allclose(ts.reward, [1.0, 0.0])
    assert not bool(ts.extras["inner_episode_done"])
    # The 100th step ends the episode (truncation).
    state = _two_coin_state([[0, 0], [2, 2]], [[0, 1], [1, 1]], t=99)
    _, ts = transition(state, jnp.array([J_STAY, J_STAY]), DRAWS, params)
    assert bool(ts.truncated) and not bool(ts.terminated)


def test_two_coin_reset_lets_agents_and_coins_share_cells():
    env, params = marljax.make("social/coin_game_jaxmarl-v0")
    states = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(jax.random.split(KEY, 256), params)[0]
    shared = np.all(np.asarray(states.agent_pos[:, 0]) == np.asarray(states.coin_pos[:, 0]), -1)
    assert 0 < shared.sum() < 256  # about 1 in 9
    with pytest.raises(ValueError, match="inner_steps"):
        marljax.make("social/coin_game_jaxmarl-v0", inner_steps=0)


# --------------------------------------------------------------------------------------------
# Public goods
# --------------------------------------------------------------------------------------------


def test_public_goods_payoff_function():
    c = jnp.array([10.0, 5.0, 0.0, 2.5])
    expected = 10.0 - np.asarray(c) + 1.6 * 17.5 / 4  # endowment - c_i + r * sum / N
    np.testing.assert_allclose(public_goods_payoff(c, 10.0, 1.6), expected, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(public_goods_payoff)(c, 10.0, 1.6), expected, rtol=1e-6)


def test_public_goods_discrete_round():
    env, params = marljax.make("social/public_goods-v0", num_rounds=2)
    state, ts = env.reset(KEY, params)
    state, ts = env.step(KEY, state, jnp.array([4, 2, 0, 1]), params)  # fractions 1, .5, 0, .25
    np.testing.assert_allclose(ts.reward, [7.0, 12.0, 17.0, 14.5], rtol=1e-6)
    np.testing.assert_array_equal(ts.extras["cooperated"], [True, True, False, False])
    np.testing.assert_array_equal(ts.extras["defected"], [False, False, True, True])
    # Egocentric observation of the last contributions, then first-round flag and progress.
    np.testing.assert_allclose(ts.obs[1], [0.5, 0.0, 0.25, 1.0, 0.0, 0.5])
    assert not bool(ts.terminated)
    state, ts = env.step(KEY, state, jnp.array([0, 0, 0, 0]), params)
    assert bool(ts.terminated) and not bool(ts.truncated)
    np.testing.assert_allclose(ts.reward, [10.0] * 4)


def test_public_goods_continuous_and_multiplier():
    env, params = marljax.make(
        "social/public_goods_continuous-v0", num_agents=2, multiplier=2.0, endowment=4.0
    )
    state, _ = env.reset(KEY, params)
    # 1.5 is clipped to 1: contributions 4 and 1; pot 5 -> 2 * 5 / 2 = 5 each.
    _, ts = env.step(KEY, state, jnp.array([[1.5], [0.25]]), params)
    np.testing.assert_allclose(ts.reward, [0.0 + 5.0, 3.0 + 5.0], rtol=1e-6)


def test_public_goods_bad_input_fails_at_make():
    with pytest.raises(ValueError, match="multiplier"):
        marljax.make("social/public_goods-v0", multiplier=-1.0)
    with pytest.raises(ValueError, match="endowment"):
        marljax.make("social/public_goods-v0", endowment=0.0)
    with pytest.raises(ValueError, match="num_agents"):
        marljax.make("social/public_goods-v0", num_agents=1)
    with pytest.raises(ValueError, match="multiplier"):
        marljax.make("social/public_goods_punishment-v0", multiplier=-0.5)


# --------------------------------------------------------------------------------------------
# Mechanisms
# --------------------------------------------------------------------------------------------


def test_direct_punishment():
    env, params = marljax.make("social/public_goods_punishment-v0", num_agents=3)
    K = 4  # A + 1 choices: punish 0, 1, 2 or nobody (3)
    state, ts = env.reset(KEY, params)
    mask = np.asarray(ts.action_mask).reshape(3, 5, K)
    assert not mask[0, :, 0].any() and not mask[1, :, 1].any() and mask[0, :, 1].all()
    # All contribute 0 (payoff 10 each); agents 0 and 2 punish agent 1.
    actions = jnp.array([0 * K + 1, 0 * K + 3, 0 * K + 1])
    state, ts = env.step(KEY, state, actions, params)
    np.testing.assert_allclose(ts.reward, [10.0 - 1.0, 10.0 - 6.0, 10.0 - 1.0])
    np.testing.assert_array_equal(ts.extras["punished"], [False, True, False])
    np.testing.assert_array_equal(ts.extras["punishing"], [True, False, True])
    # Observations end with the punishments received / given (egocentric, scaled by 1/(A-1)).
    np.testing.assert_allclose(ts.obs[1, -6:], [1.0, 0.0, 0.0, 0.0, 0.5, 0.5])
    # Traced params: a different fine, same program shape.
    _, ts = env.step(KEY, state, actions, params.replace(punish_fine=0.5, punish_cost=0.0))
    np.testing.assert_allclose(ts.reward, [10.0, 9.0, 10.0])
    with pytest.raises(ValueError, match="punish_cost must be finite"):
        marljax.make("social/public_goods_punishment-v0", punish_cost=float("nan"))
    with pytest.raises(ValueError, match="punish_fine must be >= 0"):
        marljax.make("social/public_goods_punishment-v0", punish_fine=-1.0)
    _, paid = marljax.make("social/public_goods_punishment-v0", punish_cost=-1.0)  # a reward
    assert float(paid.punish_cost) == -1.0


def test_direct_punishment_on_coin_game():
    env = DirectPunishment(CoinGame())
    params = env.default_params()
    state, ts = env.reset(KEY, params)
    assert ts.obs.shape == (2, 36 + 4) and ts.action_mask.shape == (2, 15)
    inner = _coin_state([[0, 0], [2, 2]], [0, 1], owner=1)
    state = state.replace(inner=inner)
    # Agent 0 grabs agent 1's coin; agent 1 punishes agent 0 (target 0) while staying.
    state, ts = env.step(KEY, state, jnp.array([RIGHT * 3 + 2, STAY * 3 + 0]), params)
    np.testing.assert_allclose(ts.reward, [1.0 - 3.0, -2.0 - 1.0])


def test_third_party_punishment():
    env, params = marljax.make("social/public_goods_third_party-v0", num_agents=2)
    assert env.num_agents == 3
    np.testing.assert_array_equal(env.agent_types, [0, 0, 1])
    K = 3  # punish player 0, player 1, or nobody (2)
    state, ts = env.reset(KEY, params)
    mask = np.asarray(ts.action_mask).reshape(3, 5, K)
    assert mask[0, :, 2].all() and not mask[0, :, :2].any()  # players cannot punish
    assert mask[2, 0].all() and not mask[2, 1:].any()  # observer: inner action 0 only
    # Player 0 contributes all (4 levels -> 1.0), player 1 nothing; observer punishes player 1.
    state, ts = env.step(KEY, state, jnp.array([4 * K + 2, 0 * K + 2, 0 * K + 1]), params)
    base = 10.0 - np.array([10.0, 0.0]) + 1.6 * 10.0 / 2
    np.testing.assert_allclose(ts.reward, [base[0], base[1] - 3.0, -1.0], rtol=1e-6)
    np.testing.assert_array_equal(ts.extras["punished"], [False, True, False])
    np.testing.assert_array_equal(ts.extras["cooperated"], [True, False, False])
    # The observer sees the global state; players see their own observation.
    assert float(ts.obs[2, 4:8].sum()) > 0 and float(ts.obs[0, 4:8].sum()) == 0


def test_direct_punishment_two_stage():
    """Fehr & Gaechter rounds: contribute (targets masked), see the round, punish (inner masked)."""
    env, params = marljax.make(
        "social/public_goods_punishment_2stage-v0", num_agents=3, num_rounds=2
    )
    N, K = 5, 4  # 5 contribution levels; punish 0, 1, 2 or nobody (3)
    step = jax.jit(env.step)
    state, ts = env.reset(KEY, params)
    mask = np.asarray(ts.action_mask).reshape(3, N, K)
    assert mask[:, :, 3].all() and not mask[:, :, :3].any()  # contribution step: nobody only
    D = PublicGoods(3).observation_space(params).flat_dim  # the inner observation
    assert ts.obs.shape == (3, D + 2 * 3 + 3 * N + 1) and float(ts.obs[:, -1].sum()) == 0.0
    # Contribution step: agent 0 gives everything (level 4), 1 and 2 nothing; agent 2's target
    # (agent 1) is not executed on this step.
    state, ts = step(KEY, state, jnp.array([4 * K + 3, 0 * K + 3, 0 * K + 1]), params)
    share = 1.6 * 10.0 / 3
    np.testing.assert_allclose(ts.reward, [share, 10.0 + share, 10.0 + share], rtol=1e-6)
    assert not ts.extras["punished"].any() and not bool(ts.terminated | ts.truncated)
    np.testing.assert_array_equal(ts.extras["cooperated"], [True, False, False])
    # The punishment step's observation shows this round's contributions (egocentric) + flag.
    np.testing.assert_allclose(ts.obs[:, -1], 1.0)
    tail = np.asarray(ts.obs[1, -(3 * N + 1) : -1]).reshape(3, N)  # agents 1, 2, 0
    np.testing.assert_array_equal(tail.argmax(-1), [0, 0, 4])
    mask = np.asarray(ts.action_mask).reshape(3, N, K)
    assert mask[:, 0].sum() == 3 * 3 and not mask[:, 1:].any()  # inner action 0 only
    assert not mask[0, 0, 0] and not mask[1, 0, 1] and mask[1, 0, 0] and mask[1, 0, 3]
    # Punishment step: agents 0 and 2 punish agent 1; the inner parts (levels 4, 4, 2) are
    # ignored and the inner game does not move.
    inner_before = state.inner
    state, ts = step(KEY, state, jnp.array([4 * K + 1, 4 * K + 3, 2 * K + 1]), params)
    np.testing.assert_allclose(ts.reward, [-1.0, -6.0, -1.0])
    np.testing.assert_array_equal(ts.extras["punished"], [False, True, False])
    np.testing.assert_array_equal(ts.extras["punishing"], [True, False, True])
    assert not ts.extras["cooperated"].any()  # no inner choice on a punishment step
    assert int(state.inner.t) == int(inner_before.t) == 1
    assert float(ts.obs[1, D]) == 1.0 and float(ts.obs[:, -1].sum()) == 0.0
    assert not bool(ts.terminated)
    # Round 2: the episode (2 rounds) ends on its punishment step, not on the contribution.
    state, ts = step(KEY, state, jnp.array([3, 3, 3]), params)
    assert not bool(ts.terminated) and not bool(ts.truncated)
    state, ts = step(KEY, state, jnp.array([3, 3, 3]), params)
    assert bool(ts.terminated) and float(jnp.abs(ts.reward).sum()) == 0.0
    # max_steps counts env steps: a limit of 3 cuts round 2 after its contribution step.
    p3 = params.replace(max_steps=3, num_rounds=10)
    s, _ = env.reset(KEY, p3)
    flags = []
    for _ in range(3):
        s, t = step(KEY, s, jnp.array([3, 3, 3]), p3)
        flags.append(bool(t.truncated))
    assert flags == [False, False, True]


def test_repeated_pd_with_direct_punishment():
    """The paper's game: a PD move step, then a punishment step that sees both moves."""
    env, params = marljax.make("social/ipd_punishment_2stage-v0", num_rounds=1)
    K = 3  # punish 0, 1 or nobody (2)
    assert env.action_space(params).n == 2 * K
    state, ts = env.reset(KEY, params)
    # Move step: agent 0 defects (1), agent 1 cooperates (0): T = 5, S = 0, labelled.
    state, ts = env.step(KEY, state, jnp.array([1 * K + 2, 0 * K + 2]), params)
    np.testing.assert_allclose(ts.reward, [5.0, 0.0])
    np.testing.assert_array_equal(ts.extras["cooperated"], [False, True])
    assert not bool(ts.terminated)
    # Punishment step: the cooperator fines the defector (cost 1, fine 3); the round ends it.
    state, ts = env.step(KEY, state, jnp.array([2, 0 * K + 0]), params)
    np.testing.assert_allclose(ts.reward, [-3.0, -1.0])
    np.testing.assert_array_equal(ts.extras["punishing"], [False, True])
    assert bool(ts.terminated)
    control, cparams = marljax.make("social/ipd-v0")
    assert control.action_space(cparams).n == 2 and int(cparams.num_rounds) == 20


def test_pd_population_in_stages_choose_play_punish():
    """Dasgupta & Musolesi's round: name a partner, play the PD with it, then punish it or not."""
    env, params = marljax.make("social/ipd_staged_punishment-v0", selection_rounds=1)
    A, K = 4, 3  # inner action = move * K + punish target (seat 0, seat 1, nobody = 2)

    def act(ts, inner, partner=None):
        """Each agent's legal flat action with inner action `inner[i]` (and partner, if named)."""
        mask = np.asarray(ts.action_mask).reshape(A, -1, A)  # [agent, inner, partner]
        out = []
        for i in range(A):
            legal = np.argwhere(mask[i, inner[i]])[:, 0]
            p = partner[i] if partner is not None else legal[0]
            assert p in legal, (i, inner[i], p, legal)
            out.append(inner[i] * A + p)
        return jnp.array(out)

    state, ts = env.reset(KEY, params)
    state, ts = env.step(KEY, state, act(ts, [0] * A, [1, 0, 3, 2]), params)  # choice step
    np.testing.assert_array_equal(ts.extras["partner"], [1, 0, 3, 2])
    np.testing.assert_allclose(ts.reward, 0.0)
    assert not ts.extras["punished"].any()
    # Play: agent 0 defects against the cooperating agent 1; agents 2 and 3 cooperate.
    state, ts = env.step(KEY, state, act(ts, [1 * K + 2, 2, 2, 2]), params)
    np.testing.assert_allclose(ts.reward, [5.0, 0.0, 3.0, 3.0])
    np.testing.assert_array_equal(ts.extras["cooperated"], [False, True, True, True])
    assert not bool(ts.terminated)
    # Punish: agent 1 fines its partner (cost 1, fine 3), whichever seat agent 0 sits in.
    seat_of_0 = int(state.seat[0])
    state, ts = env.step(KEY, state, act(ts, [2, seat_of_0, 2, 2]), params)
    np.testing.assert_allclose(ts.reward, [-3.0, -1.0, 0.0, 0.0])
    np.testing.assert_array_equal(ts.extras["punished"], [True, False, False, False])
    assert bool(ts.terminated)  # one round of three stages
    control, cparams = marljax.make("social/ipd_staged-v0")
    assert int(cparams.round_len) == 1 and int(params.round_len) == 2
    assert "punished" not in control.reset(KEY, cparams)[1].extras


@pytest.mark.parametrize(
    "incentives, rewards",
    # agent 0 defected and fines the cooperator, agent 1 fines the defector; both are fined 3
    [("dasgupta", [-(-2 + 12) - 3, 2 - 3]), ("dasgupta_costly", [-(3 + 7) - 3, -3 - 3])],
)
def test_punishment_with_the_papers_incentives(incentives, rewards):
    """The released code's payoffs: T = 4; a just fine pays +2 (or costs 3), an unjust one 10."""
    env, params = marljax.make("social/ipd_punishment_2stage-v0", num_rounds=1,
                               incentives=incentives)  # fmt: skip
    K = 3
    state, ts = env.reset(KEY, params)
    state, ts = env.step(KEY, state, jnp.array([1 * K + 2, 0 * K + 2]), params)
    np.testing.assert_allclose(ts.reward, [4.0, 0.0])  # T = 4
    state, ts = env.step(KEY, state, jnp.array([1, 0]), params)  # each fines the other
    np.testing.assert_allclose(ts.reward, rewards)
    # no fines: nothing paid; the control game without punishment keeps T = 4
    state, ts = env.reset(KEY, params)
    state, ts = env.step(KEY, state, jnp.array([1 * K + 2, 1 * K + 2]), params)
    state, ts = env.step(KEY, state, jnp.array([2, 2]), params)
    np.testing.assert_allclose(ts.reward, [0.0, 0.0])
    pd, pd_params = marljax.make("social/ipd-v0", incentives=incentives)
    _, ts = pd.step(KEY, pd.reset(KEY, pd_params)[0], jnp.array([1, 0]), pd_params)
    np.testing.assert_allclose(ts.reward, [4.0, 0.0])
    staged, staged_params = marljax.make("social/ipd_staged_punishment-v0", incentives=incentives)
    assert float(staged_params.unjust_cost) == float(params.unjust_cost) > 0
    with pytest.raises(ValueError, match="incentives must be one of"):
        marljax.make("social/ipd-v0", incentives="kind")


def test_unjust_cost_needs_cooperation_labels():
    """A one-step fine of a cooperator costs extra; an env without labels refuses the param."""
    env = DirectPunishment(MarkCooperation(MatrixGame(prisoners_dilemma(), num_rounds=5)))
    params = env.default_params().replace(unjust_cost=10.0)
    K = 3
    _, ts = env.step(KEY, env.reset(KEY, params)[0], jnp.array([0 * K + 1, 1 * K + 0]), params)
    # agent 0 cooperates and fines the defector (cost 1); agent 1 defects and fines it (1 + 10)
    np.testing.assert_allclose(ts.reward, [0.0 - 1.0 - 3.0, 5.0 - 11.0 - 3.0])
    bare = DirectPunishment(MatrixGame(prisoners_dilemma(), num_rounds=5))
    bare.validate_params(bare.default_params())
    with pytest.raises(ValueError, match="unjust_cost must be 0"):
        bare.validate_params(bare.default_params().replace(unjust_cost=1.0))
    with pytest.raises(ValueError, match="punish_fine must be >= 0"):
        env.validate_params(params.replace(punish_fine=-1.0))
    with pytest.raises(ValueError, match="unknown params"):
        DirectPunishment(bare.unwrapped, defaults={"cost": 1.0})


def test_pd_population_in_stages_masks_as_the_pair_game():
    """Play steps allow only the pair game's legal actions: a move (fining nobody), then a
    choice between fining the partner and nobody, so random exploration fines half the time."""
    env, params = marljax.make("social/ipd_staged_punishment-v0", selection_rounds=1)
    A, K = 4, 3
    state, ts = env.reset(KEY, params)
    state, ts = env.step(KEY, state, jnp.array([1, 0, 3, 2]), params)  # choice step
    mask = np.asarray(ts.action_mask).reshape(A, -1, A)  # [agent, inner, partner part]
    for i in range(A):
        np.testing.assert_array_equal(np.flatnonzero(mask[i].any(-1)), [0 * K + 2, 1 * K + 2])
    state, ts = env.step(KEY, state, jnp.array([2 * A, 2 * A, 2 * A, 2 * A]), params)  # play
    mask = np.asarray(ts.action_mask).reshape(A, -1, A)
    for i in range(A):
        other_seat = 1 - int(state.seat[i])
        np.testing.assert_array_equal(np.flatnonzero(mask[i].any(-1)), sorted([other_seat, 2]))


def test_third_party_punishment_two_stage():
    env, params = marljax.make("social/public_goods_third_party_2stage-v0", num_agents=2)
    N, K = 5, 3  # punish player 0, player 1, or nobody (2)
    state, ts = env.reset(KEY, params)
    mask = np.asarray(ts.action_mask).reshape(3, N, K)
    assert mask[:2, :, 2].all() and not mask[:, :, :2].any()  # play step: nobody punishes
    assert mask[2, 0, 2] and not mask[2, 1:].any()  # the observer waits (inner 0, nobody)
    # Play step: player 0 gives everything, player 1 nothing; the observer's target is ignored.
    state, ts = env.step(KEY, state, jnp.array([4 * K + 2, 0 * K + 2, 0 * K + 1]), params)
    np.testing.assert_allclose(ts.reward, [8.0, 18.0, 0.0], rtol=1e-6)
    assert not ts.extras["punished"].any()
    # The observer now sees both players' contributions, and may punish.
    seen = np.asarray(ts.obs[2, -(2 * N + 1) : -1]).reshape(2, N)
    np.testing.assert_array_equal(seen.argmax(-1), [4, 0])
    mask = np.asarray(ts.action_mask).reshape(3, N, K)
    assert mask[2, 0].all() and not mask[2, 1:].any()
    assert mask[:2, 0, 2].all() and not mask[:2, 0, :2].any() and not mask[:2, 1:].any()
    state, ts = env.step(KEY, state, jnp.array([4 * K + 2, 2, 0 * K + 1]), params)
    np.testing.assert_allclose(ts.reward, [0.0, -3.0, -1.0])
    np.testing.assert_array_equal(ts.extras["punished"], [False, True, False])
    np.testing.assert_array_equal(ts.extras["punishing"], [False, False, True])
    assert int(state.inner.t) == 1


def test_partner_selection_prisoners_dilemma():
    env = PartnerSelection(MatrixGame(prisoners_dilemma()), num_agents=3, num_rounds=2)
    params = env.default_params()
    state, ts = env.reset(KEY, params)
    C, D, A = 0, 1, 3
    # 0 cooperates with 1; 1 defects with 0; 2 cooperates with 0.
    state, ts = env.step(KEY, state, jnp.array([C * A + 1, D * A + 0, C * A + 0]), params)
    # Games (0,1): 0 gets S=0, 1 gets T=5; (1,0): 1 gets T=5, 0 gets S=0; (2,0): R=3 each.
    np.testing.assert_allclose(ts.reward, [3.0, 10.0, 3.0])
    np.testing.assert_array_equal(ts.extras["partner"], [1, 0, 0])
    np.testing.assert_array_equal(ts.extras["cooperated"], [True, False, True])
    assert not bool(ts.terminated)
    # Choosing oneself is masked.
    mask = np.asarray(ts.action_mask).reshape(3, 2, 3)
    assert not mask[1, :, 1].any() and mask[1, :, 0].all()
    _, ts = env.step(KEY, state, jnp.array([C * A + 1, C * A + 0, C * A + 0]), params)
    assert bool(ts.terminated)


def test_partner_selection_random_partners_control():
    env = PartnerSelection(MatrixGame(prisoners_dilemma()), num_agents=4, random_partners=True)
    params = env.default_params()
    state, ts = env.reset(KEY, params)
    mask = np.asarray(ts.action_mask).reshape(4, 2, 4)
    for i in range(4):  # the partner part has one legal value, i + 1, for each game action
        assert mask[i, :, (i + 1) % 4].all() and mask[i].sum() == 2
    step = jax.jit(jax.vmap(env.step, in_axes=(0, None, None, None)))
    keys = jax.random.split(KEY, 600)
    _, ts = step(keys, state, jnp.array([1, 2, 3, 0]), params)  # everyone cooperates
    partners = np.asarray(ts.extras["partner"])  # [600, 4]
    assert (partners != np.arange(4)).all()
    for i in range(4):  # drawn uniformly from the 3 others, whatever the action said
        counts = np.bincount(partners[:, i], minlength=4)
        assert counts[i] == 0 and (np.abs(counts / 600 - 1 / 3)[np.arange(4) != i] < 0.07).all()
    # everyone cooperates: 3 from the own game plus 3 per game the agent was chosen for
    chosen = np.stack([np.bincount(p, minlength=4) for p in partners])
    np.testing.assert_allclose(ts.reward, 3.0 + 3.0 * chosen)
    assert "random_partners=True" in repr(env)


def test_paired_games_matching_honours_free_choices():
    env = PairedGames(CoinGame(2), num_agents=6)
    match = jax.jit(jax.vmap(env.match, in_axes=(0, None)))
    keys = jax.random.split(KEY, 200)
    # 0 <-> 1 name each other; 2, 3, 4 all name 5; 5 names 0
    pairs = np.asarray(match(keys, jnp.array([1, 0, 5, 5, 5, 0])))  # [200, 3, 2]
    assert (np.sort(pairs.reshape(200, -1), -1) == np.arange(6)).all()  # a perfect matching
    partner = np.zeros((200, 6), int)
    for k, p in enumerate(pairs):
        partner[k, p[:, 0]], partner[k, p[:, 1]] = p[:, 1], p[:, 0]
    assert (partner[:, 0] == 1).all()  # a mutual choice is always honoured
    # 0 is taken, so 5 goes to whichever of 2, 3, 4 is visited first (uniform), or it is
    # visited first itself and takes a uniform free agent
    counts = np.bincount(partner[:, 5], minlength=6)
    assert counts[:2].sum() == 0 and (np.abs(counts[2:5] / 200 - 1 / 3) < 0.1).all()
    # the agent that chose sits in seat 0; when 5 is visited before 2, 3 and 4 it chooses
    seat_of_5 = (pairs == 5).argmax(-1).max(-1)  # [200]
    assert 0.7 < seat_of_5.mean() < 0.9  # 5 is first of the four a quarter of the time


def test_paired_coin_games_pay_each_seat_its_own_game():
    env, params = marljax.make(
        "social/coin_game_partner_selection-v0", round_len=3, selection_rounds=2
    )
    A = 4
    step = jax.jit(env.step)
    state, ts = env.reset(KEY, params)
    assert ts.obs.shape == (A, 9 * 4 + 3 * A + 2) and env.action_space(params).n == 5 * A
    mask = np.asarray(ts.action_mask).reshape(A, 5, A)
    assert mask[:, 1:].sum() == 0 and (mask[np.arange(A), 0, np.arange(A)] == 0).all()
    keys = jax.random.split(jax.random.PRNGKey(3), 8)
    for t in range(8):
        if t % 4 == 0:  # choice step: 0 <-> 2 and 1 <-> 3
            state, ts = step(keys[t], state, jnp.array([2, 3, 0, 1]), params)
            np.testing.assert_array_equal(ts.reward, 0.0)
            np.testing.assert_array_equal(ts.extras["partner"], [2, 3, 0, 1])
            np.testing.assert_array_equal(ts.obs[:, -2], 0.0)  # a play step comes next
            mask = np.asarray(ts.action_mask).reshape(A, 5, A)
            assert mask[:, :, 0].sum() == 5 and mask.sum() == 5 * A  # only inner actions act
            continue
        moves = jax.random.randint(keys[t], (A,), 0, 5)
        state, ts = step(keys[t], state, moves * A + (jnp.arange(A) + 1) % A, params)
        coop, defect = np.asarray(ts.extras["cooperated"]), np.asarray(ts.extras["defected"])
        partner = np.array([2, 3, 0, 1])
        # one coin per pair game: +1 for a pickup, -2 when the partner took my coin
        np.testing.assert_allclose(ts.reward, (coop | defect) - 2.0 * defect[partner])
        assert bool(ts.terminated) == (t == 7)
        if t % 4 == 3:  # the round's last play step shows the next choice step
            assert float(ts.obs[0, -2]) == 1.0
    np.testing.assert_array_equal(state.rounds, 2)


def test_paired_games_random_partners_and_reputation():
    env, params = marljax.make(
        "social/coin_game_partner_selection-v0", random_partners=True, round_len=1
    )
    state, ts = env.reset(KEY, params)
    mask = np.asarray(ts.action_mask).reshape(4, 5, 4)
    assert mask.sum() == 4 and all(mask[i, 0, (i + 1) % 4] for i in range(4))
    step = jax.jit(jax.vmap(env.step, in_axes=(0, None, None, None)))
    _, ts = step(jax.random.split(KEY, 300), state, jnp.array([1, 2, 3, 0]), params)
    partners = np.asarray(ts.extras["partner"])  # [300, 4]: a uniform matching, not the choices
    assert (partners[np.arange(300)[:, None], partners] == np.arange(4)).all()
    assert np.abs(np.bincount(partners[:, 0], minlength=4)[1:] / 300 - 1 / 3).max() < 0.1
    rep, rp = marljax.make("social/coin_game_partner_reputation-v0")
    assert rep.observation_space(rp).shape == (env.observation_space(params).shape[0] + 4,)
    with pytest.raises(ValueError, match="mechanism"):
        marljax.make("social/coin_game_punishment-v0", mechanism="shaming")
    with pytest.raises(ValueError, match="even"):
        PairedGames(CoinGame(2), num_agents=5)
    with pytest.raises(ValueError, match="cooperated"):
        PairedGames(MatrixGame(prisoners_dilemma()))


def test_reputation_updates_and_is_observed():
    env = Reputation(PublicGoods(num_agents=2))
    params = env.default_params().replace(reputation_decay=0.5, reputation_init=0.5)
    state, ts = env.reset(KEY, params)
    np.testing.assert_allclose(ts.obs[:, -2:], [[0.5, 0.5], [0.5, 0.5]])
    state, ts = env.step(KEY, state, jnp.array([4, 0]), params)
    np.testing.assert_allclose(ts.extras["reputation"], [0.75, 0.25])
    np.testing.assert_allclose(ts.obs[:, -2:], [[0.75, 0.25], [0.25, 0.75]])  # egocentric
    with pytest.raises(ValueError, match="cooperated"):
        Reputation(MatrixGame(prisoners_dilemma()))
    with pytest.raises(ValueError, match="reputation_decay"):
        marljax.make("social/public_goods_reputation-v0", reputation_decay=1.5)


def test_mark_cooperation_and_composition():
    env = MarkCooperation(MatrixGame(prisoners_dilemma(), num_rounds=3))
    params = env.default_params()
    state, ts = env.reset(KEY, params)
    _, ts = env.step(KEY, state, jnp.array([0, 1]), params)
    np.testing.assert_array_equal(ts.extras["cooperated"], [True, False])
    np.testing.assert_array_equal(ts.extras["defected"], [False, True])
    # Mechanisms stack: reputation on top of punishment on top of public goods.
    stacked = Reputation(DirectPunishment(PublicGoods(num_agents=2)))
    p = stacked.default_params()
    assert {"punish_fine", "reputation_decay", "multiplier"} <= set(vars(p))
    state, ts = stacked.reset(KEY, p)
    _, ts = jax.jit(stacked.step)(KEY, state, jnp.array([4 * 3 + 2, 0 * 3 + 0]), p)
    np.testing.assert_allclose(ts.extras["reputation"], [0.5 * 0.8 + 0.2, 0.4])
    np.testing.assert_array_equal(ts.extras["punished"], [True, False])
    with pytest.raises(ValueError, match="already have"):
        DirectPunishment(DirectPunishment(PublicGoods(num_agents=2)))
    with pytest.raises(TypeError, match="Discrete"):
        DirectPunishment(PublicGoods(continuous=True))
    with pytest.raises(ValueError, match="two-player"):
        PartnerSelection(PublicGoods(num_agents=3))
    assert isinstance(ThirdPartyPunishment(PublicGoods(2)).action_space(p), marljax.spaces.Discrete)


def test_validate_params_hook():
    # `marljax.make` calls `env.validate_params(params)`, the only check: `replace` is flax's own.
    for env_id, field, bad in [
        ("social/coin_game-v0", "max_steps", 0),
        ("social/public_goods-v0", "multiplier", -2.0),
        ("social/public_goods_punishment-v0", "punish_fine", -1.0),
        ("social/public_goods_punishment-v0", "multiplier", -1.0),
        ("social/ipd_partner_selection-v0", "selection_rounds", 0),
        ("social/coin_game_partner_selection-v0", "round_len", 0),
    ]:
        env, params = marljax.make(env_id)
        env.validate_params(params)
        with pytest.raises(ValueError, match=field):
            env.validate_params(type(params)(**{**vars(params), field: bad}))
        replaced = params.replace(**{field: bad})  # no hidden validation in `replace`
        with pytest.raises(ValueError, match=field):
            env.validate_params(replaced)
        with pytest.raises(ValueError, match=field):
            marljax.make(env_id, **{field: bad})
