"""RPS bot population and population-based evaluation (Lanctot et al. 2023): each bot on
hand-built histories, determinism, the per-bot return table of known policies, the paper's
metrics on constructed tables, and a tiny trained recurrent IPPO evaluated against the bots."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.agents import PPOHParams, ippo
from marljax.envs.matrix import MatrixGame, ScriptedCoPlayers, payoffs
from marljax.envs.matrix import rps_bots as B
from marljax.evaluation import population as pop
from marljax.training.train import TrainConfig, make_train

R, P, S = B.ROCK, B.PAPER, B.SCISSORS
KEY = jax.random.PRNGKey(0)


PAD = 40  # histories are padded to one length, so every bot and history shares one compile


@jax.jit
def _moves_after(params, mine, theirs, length, keys):
    state = B.replay_history(params, mine, theirs, length)
    return jax.vmap(B.bot_act, in_axes=(None, None, 0))(params, state, keys)


def next_moves(name, mine, theirs, n=256):
    """The named bot's move after the history (its own moves `mine`, the opponent's `theirs`)
    under `n` different keys (`[n]`; several keys for the random bots)."""
    assert len(mine) == len(theirs) <= PAD
    pad = [0] * (PAD - len(mine))
    keys = jax.random.split(KEY, n)
    return np.asarray(
        _moves_after(
            B.bot_params(name),
            jnp.asarray(list(mine) + pad, jnp.int32),
            jnp.asarray(list(theirs) + pad, jnp.int32),
            len(mine),
            keys,
        )
    )


def next_move(name, mine, theirs):
    return int(next_moves(name, mine, theirs)[0])


_replay = jax.jit(B.replay_history)


def _match(a, b, key, n):
    return B.play_match(a, b, key, n)


# ----------------------------------------------------------------------------- bots


def test_payoff_convention_matches_the_catalogue():
    table = np.asarray(payoffs.rock_paper_scissors()[0])
    mine, theirs = np.meshgrid(np.arange(3), np.arange(3), indexing="ij")
    np.testing.assert_array_equal(np.asarray(B.rps_payoff(mine, theirs)), table)
    assert int(B.beats(R)) == P and int(B.beats(P)) == S and int(B.beats(S)) == R


@pytest.mark.parametrize("name,move", [("paperbot", P), ("scissorsbot", S)])
def test_constant_bots(name, move):
    assert next_move(name, [], []) == move
    assert next_move(name, [move, move, move], [P, S, R]) == move


def test_reactive_bots():
    assert next_move("mirrorbot", [R, S], [P, S]) == S
    assert next_move("mirrorbot", [R], [P]) == P
    # beatcopybot: expects the opponent to beat its last move, and beats that.
    assert next_move("beatcopybot", [R], [S]) == S  # opponent would play paper
    assert next_move("beatcopybot", [P], [S]) == R


def test_win_stay_lose_shift():
    assert next_move("wsls", [P], [R]) == P  # win: stay
    assert next_move("wsls", [R], [P]) == S  # loss: beat their last move (paper)
    assert next_move("wsls", [R], [R]) == P  # draw counts as not winning
    assert next_move("wsls", [S, S], [P, P]) == S


def test_windowed_frequency_bot():
    # 20 rocks then 15 papers: over the last 20, paper leads, so play scissors.
    opp = [R] * 20 + [P] * 15
    assert next_move("freqbot_w20", [0] * 35, opp) == S


def test_window_counts_only_reads_recent_moves():
    params = B.bot_params("freqbot_w20")
    opp = jnp.asarray([R] * 20 + [P] * 15 + [S] * 3 + [0, 0])  # padded to PAD = 40
    state = _replay(params, jnp.zeros_like(opp), opp, 38)
    np.testing.assert_array_equal(np.asarray(B.window_counts(state, jnp.int32(20))), [2, 15, 3])
    np.testing.assert_array_equal(np.asarray(B.window_counts(state, jnp.int32(5))), [0, 2, 3])
    np.testing.assert_array_equal(np.asarray(B.window_counts(state, jnp.int32(0))), [20, 15, 3])


def test_pattern_matchers_predict_from_joint_history():
    # An opponent that beats our last move: after the joint move (rock, paper) comes paper.
    assert next_move("markov1", [R] * 5, [S, P, P, P, P]) == S
    # A bot that always plays the same move after a given context is beaten.
    assert next_move("markov1", [R] * 6, [R, P, S, R, P, S]) == P  # after (R, S) came R
    assert next_move("markov2", [R] * 6, [R, P, S, R, P, S]) == P


@pytest.mark.parametrize(
    "hunter,prey",
    [
        ("markov1", "rotatebot"),
        ("iocaine_lite", "rotatebot"),
        ("iocaine_lite", "copybot"),
        ("iocainebot", "rotatebot"),
        ("iocainebot", "copybot"),
    ],
)
def test_adaptive_bots_exploit_predictable_ones(hunter, prey):
    total, moves = _match(hunter, prey, KEY, 100)
    assert moves.shape == (100, 2)
    assert float(total) > 70.0


def test_bots_are_deterministic_given_a_key():
    m1, m2 = (
        _match("randbot", "switchalot", KEY, 100)[1],
        _match("randbot", "switchalot", KEY, 100)[1],
    )
    np.testing.assert_array_equal(np.asarray(m1), np.asarray(m2))
    m3 = _match("randbot", "switchalot", jax.random.PRNGKey(1), 100)[1]
    assert not np.array_equal(np.asarray(m1), np.asarray(m3))


def test_bad_input_is_refused_before_compiling():
    with pytest.raises(KeyError, match="copybot"):
        B.get_bot("copybott")
    with pytest.raises(KeyError, match="iocaine_lite"):
        B.get_bot("iocaine_lit")
    with pytest.raises(ValueError, match="at least one bot"):
        B.make_rps_population(bots=())
    with pytest.raises(ValueError, match="at least 1 throw"):
        B.make_rps_population(num_throws=0)
    with pytest.raises(ValueError, match="at least 1 throw"):
        B.play_match("rockbot", "copybot", KEY, 0)
    env, params = marljax.make("matrix/rrps_population-v0", bots=("rockbot",), num_rounds=10)
    with pytest.raises(ValueError, match="num_rounds"):
        env.validate_params(params.replace(num_rounds=jnp.int32(1001)))


def test_default_population_is_the_ported_competition_bots_in_1000_throw_matches():
    env, params = marljax.make("matrix/rrps_population-v0")
    assert env.bots == B.BOT_NAMES and all(B.get_bot(n).competition for n in env.bots)
    assert int(params.num_rounds) == 1000 and env.num_throws == 1000
    assert not any(B.get_bot(n).competition for n in B.EXTRA_NAMES)


# ----------------------------------------------------------------------------- metrics


def test_population_metrics_on_constructed_tables():
    returns = jnp.asarray([3.0, -1.0, 2.0])
    assert float(pop.population_return(returns)) == pytest.approx(4.0 / 3.0)
    assert float(pop.within_population_exploitability(returns)) == pytest.approx(1.0)
    assert float(pop.aggregate_score(returns)) == pytest.approx(4.0 / 3.0 - 1.0)
    # Nobody beats the agent: exploitability is minus its smallest win (not clipped).
    assert float(pop.within_population_exploitability(jnp.asarray([2.0, 5.0]))) == -2.0
    # General-sum: the bots' own returns decide.
    opp = jnp.asarray([0.5, 4.0, 1.0])
    assert float(pop.within_population_exploitability(returns, opp)) == 4.0
    # Batched over leading axes (e.g. seeds).
    batch = jnp.stack([returns, -returns])
    np.testing.assert_allclose(np.asarray(pop.within_population_exploitability(batch)), [1, 3])


def test_crosstable_of_constant_bots_is_exact():
    T = 10
    names = ("rockbot", "paperbot", "scissorsbot")
    table = np.asarray(pop.bot_crosstable(KEY, names, num_episodes=2, num_rounds=T))
    expected = T * np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]])
    np.testing.assert_allclose(table, expected)
    m = pop.crosstable_metrics(table)
    np.testing.assert_allclose(np.asarray(m["population_return"]), 0.0, atol=1e-6)
    np.testing.assert_allclose(np.asarray(m["within_population_exploitability"]), T)
    np.testing.assert_allclose(np.asarray(m["aggregate_score"]), -T)


# ----------------------------------------------------------------------------- env + agent


def test_per_bot_table_of_always_paper():
    T = 12
    bots = ("rockbot", "paperbot", "scissorsbot", "copybot", "freqbot2")
    env, params = marljax.make("matrix/rrps_population-v0", bots=bots, num_rounds=T)
    always_paper = jnp.asarray([0.0, 1.0, 0.0])  # fixed_policy_agent's state is its strategy
    agent = pop.fixed_policy_agent(3)
    report = pop.evaluate_population(env, agent, always_paper, (), KEY, params, num_episodes=3)
    # Paper beats rock every round; copybot draws once (its first move is paper), then plays
    # scissors; freqbot2 plays rock first (no counts yet), then scissors.
    np.testing.assert_allclose(report.mean, [T, 0, -T, -(T - 1), 1 - (T - 1)])
    np.testing.assert_allclose(report.stderr, 0.0)
    assert report.population_return == pytest.approx(np.mean([T, 0, -T, -(T - 1), 2 - T]))
    assert report.within_population_exploitability == pytest.approx(T)
    text = pop.format_population_table(report)
    assert all(b in text for b in bots) and "aggregate score" in text
    # Acting greedily, a mixed strategy whose mode is paper plays paper every round.
    mostly_paper = jnp.asarray([0.2, 0.5, 0.3])
    greedy = pop.evaluate_population(
        env, agent, mostly_paper, (), KEY, params, num_episodes=3, greedy=True
    )
    np.testing.assert_allclose(greedy.mean, report.mean)
    assert agent.get_params(mostly_paper).policy is mostly_paper


def _coplayer_moves(env, params, learner):
    """`[T]` the scripted co-player's moves against the learner's fixed moves `[T]`."""

    def body(state, inputs):
        t, action = inputs
        state, ts = env.step(jax.random.fold_in(KEY, t), state, action[None], params)
        return state, ts.extras["coplayer_actions"][0]

    state, _ = env.reset(KEY, params)
    steps = jnp.arange(learner.shape[0])
    return jax.lax.scan(body, state, (steps, learner))[1]


def _freqbot2_reference(opp_moves):
    """freqbot2 in plain Python, from the rsb-ts1.c description."""
    out, counts = [], [0, 0, 0]
    for move in opp_moves:
        r, p, s = counts
        out.append(P if (r > p and r > s) else (S if p > s else R))
        counts[move] += 1
    return out


def test_population_env_matches_bots_and_scripted_coplayers():
    T = 10
    learner = jnp.asarray([R, R, P, S, S, R, P, P, P, S])
    bots = ("freqbot2", "copybot", "rotatebot", "wsls")
    env, params = marljax.make("matrix/rrps_population-v0", bots=bots, num_rounds=T)
    moves = jax.jit(jax.vmap(lambda p: _coplayer_moves(env, p, learner)))(
        env.one_hot_params(params)
    )
    moves = np.asarray(moves)  # [bots, T]
    ours = learner.tolist()
    assert moves[0].tolist() == _freqbot2_reference(ours)
    assert moves[1].tolist() == [P] + [(a + 1) % 3 for a in ours[:-1]]
    assert moves[2].tolist() == [t % 3 for t in range(T)]
    for t in range(1, T):  # wsls: after a win it stays, else it beats our last move
        mine, theirs = int(moves[3, t - 1]), ours[t - 1]
        assert moves[3, t] == (mine if (mine - theirs) % 3 == 1 else (theirs + 1) % 3)
    # `bot_strategy` plugs the same bot into the existing ScriptedCoPlayers mechanism.
    game = MatrixGame(payoffs.rock_paper_scissors(), num_rounds=T)
    scripted = ScriptedCoPlayers(game, {1: B.bot_strategy("copybot")})
    got = jax.jit(lambda p: _coplayer_moves(scripted, p, learner))(game.default_params())
    np.testing.assert_array_equal(np.asarray(got), moves[1])


def test_bot_weights_select_the_bot():
    env, params = marljax.make("matrix/rrps_population-v0")
    per_bot = env.one_hot_params(params)
    keys = jax.random.split(KEY, env.num_bots)
    state, ts = jax.jit(jax.vmap(env.reset))(keys, per_bot)
    np.testing.assert_array_equal(np.asarray(ts.extras["bot_id"]), np.arange(env.num_bots))
    assert ts.obs.shape == (env.num_bots, 1, 7)
    # every one of the 43 bots steps inside one program (the registry-wide checks use 3 bots)
    rock = jnp.zeros((env.num_bots, 1), jnp.int32)
    _, ts = jax.jit(jax.vmap(env.step))(keys, state, rock, per_bot)
    assert np.all(np.isin(np.asarray(ts.reward), [-1.0, 0.0, 1.0]))
    with pytest.raises(ValueError, match="bot_weights"):
        env.validate_params(params.replace(bot_weights=jnp.zeros((env.num_bots,))))


def test_tiny_recurrent_ippo_evaluated_against_the_population():
    T = 8
    train_bots = ("rockbot", "rotatebot", "copybot")
    bots = (
        *train_bots,
        "randbot",
        "freqbot2",
    )  # held-out bots too; a small population compiles fast
    env, params = marljax.make("matrix/rrps_population-v0", bots=bots, num_rounds=T, num_throws=T)
    weights = jnp.asarray([float(b in train_bots) for b in env.bots])
    train_params = params.replace(bot_weights=weights)
    agent = ippo(
        env,
        train_params,
        recurrent=True,
        hidden_sizes=(16,),
        gru_size=16,
        num_minibatches=2,
        num_epochs=1,
        parameter_mode="shared",
    )
    trainer = make_train(
        TrainConfig(num_envs=4, rollout_len=T, total_env_steps=4 * T * 2), env, agent, train_params
    )
    state, metrics = jax.jit(trainer.train)(KEY, PPOHParams())
    assert np.isfinite(np.asarray(metrics["episode_return"])).all()
    returns = pop.population_returns(
        env, agent, state.agent_state, PPOHParams(), KEY, params, num_episodes=2
    )
    assert returns.shape == (env.num_bots, 2)
    assert np.all(np.abs(np.asarray(returns)) <= T)
    report = pop.report_from_returns(env.bots, returns, T)
    assert report.mean.shape == (env.num_bots,) and np.isfinite(report.aggregate_score)
    assert report.aggregate_score == pytest.approx(
        report.population_return - report.within_population_exploitability
    )


def test_fixed_policies_over_seeds_in_one_program():
    T = 6
    env, params = marljax.make(
        "matrix/rrps_population-v0", bots=("rockbot", "copybot"), num_rounds=T, num_throws=T
    )
    agent = pop.fixed_policy_agent(3)
    states = jnp.asarray([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])  # two "seeds": paper, rock
    r = np.asarray(pop.population_returns_over_seeds(env, agent, states, (), KEY, params, 2))
    assert r.shape == (2, 2, 2)
    np.testing.assert_allclose(r[0, 0], T)  # paper beats rockbot every throw
    np.testing.assert_allclose(r[1, 0], 0)  # rock draws rockbot
    np.testing.assert_allclose(r[0, 1], -(T - 1))  # copybot: paper (draw), then scissors
    with pytest.raises(ValueError, match="num_rounds"):
        pop.population_returns(env, agent, states[0], (), KEY, params, 2, num_rounds=T + 1)
    with pytest.raises(ValueError, match="num_episodes"):
        pop.population_returns(env, agent, states[0], (), KEY, params, 0)
