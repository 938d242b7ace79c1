"""The league view of the RoShamBo population (`matrix/rrps_league-v0`): slot `i` plays exactly
the match `RPSPopulation` plays against bot `i`, bad input is refused before compiling, and a
policy trained on the league plays the population env and its per-bot evaluation unchanged."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.agents import PPOHParams, ippo
from marljax.evaluation import population as pop
from marljax.training.train import TrainConfig, make_train

KEY = jax.random.PRNGKey(0)
#: bots whose moves do not depend on their random draws, so slot-by-slot equality is exact
DETERMINISTIC = ("rockbot", "rotatebot", "copybot", "freqbot2", "pibot", "debruijn81", "textbot")


def _league_match(env, params, learner):
    """`([T, P] rewards, [T, P] bot moves)` of the league for learner moves `[T, P]`."""

    def body(state, inputs):
        k, a = inputs
        state, ts = env.step(k, state, a, params)
        return state, (ts.reward, ts.extras["coplayer_actions"], ts.obs)

    state, ts0 = env.reset(KEY, params)
    keys = jax.random.split(jax.random.PRNGKey(1), learner.shape[0])
    _, out = jax.lax.scan(body, state, (keys, learner))
    return ts0.obs, out


def _population_match(env, params, learner):
    """The same for `RPSPopulation` with `fixed_bot` set: `[T]` rewards, moves, `[T, 7]` obs."""

    def body(state, inputs):
        k, a = inputs
        state, ts = env.step(k, state, a[None], params)
        return state, (ts.reward[0], ts.extras["coplayer_actions"][0], ts.obs[0])

    state, ts0 = env.reset(KEY, params)
    keys = jax.random.split(jax.random.PRNGKey(2), learner.shape[0])
    _, out = jax.lax.scan(body, state, (keys, learner))
    return ts0.obs[0], out


def test_each_slot_plays_what_the_population_env_plays_against_that_bot():
    T = 12
    league, params = marljax.make(
        "matrix/rrps_league-v0", bots=DETERMINISTIC, num_rounds=T, num_throws=T
    )
    popenv, pparams = marljax.make(
        "matrix/rrps_population-v0", bots=DETERMINISTIC, num_rounds=T, num_throws=T
    )
    P = len(DETERMINISTIC)
    assert league.num_agents == P and league.bots == popenv.bots
    learner = jax.random.randint(jax.random.PRNGKey(3), (T, P), 0, 3)
    obs0, (rew, moves, obs) = jax.jit(lambda a: _league_match(league, params, a))(learner)
    assert obs0.shape == (P, 7) and rew.shape == (T, P) and obs.shape == (T, P, 7)
    per_bot = jax.jit(jax.vmap(lambda p, a: _population_match(popenv, p, a), in_axes=(0, 1)))(
        popenv.one_hot_params(pparams), learner
    )
    p_obs0, (p_rew, p_moves, p_obs) = per_bot  # [P, ...]
    np.testing.assert_array_equal(np.asarray(moves).T, np.asarray(p_moves))
    np.testing.assert_array_equal(np.asarray(rew).T, np.asarray(p_rew))
    np.testing.assert_array_equal(np.asarray(obs).transpose(1, 0, 2), np.asarray(p_obs))
    np.testing.assert_array_equal(np.asarray(obs0), np.asarray(p_obs0))
    # a hand check on two slots: rockbot always rock; rotatebot plays 0, 1, 2, ...
    assert np.all(np.asarray(moves)[:, 0] == 0)
    assert np.asarray(moves)[:, 1].tolist() == [t % 3 for t in range(T)]


def test_slots_draw_their_own_randomness_and_end_together():
    T = 40
    env, params = marljax.make(
        "matrix/rrps_league-v0", bots=("randbot", "randbot"), num_rounds=T, num_throws=T
    )
    state, _ = env.reset(KEY, params)

    def body(state, k):
        state, ts = env.step(k, state, jnp.zeros((2,), jnp.int32), params)
        return state, (ts.extras["coplayer_actions"], ts.terminated)

    _, (moves, done) = jax.jit(lambda s: jax.lax.scan(body, s, jax.random.split(KEY, T)))(state)
    moves = np.asarray(moves)
    assert 0.1 < np.mean(moves[:, 0] != moves[:, 1]) < 0.9  # independent, not identical
    assert np.asarray(done).tolist() == [False] * (T - 1) + [True]


def test_bad_input_is_refused_before_compiling():
    with pytest.raises(KeyError, match="iocainebot"):
        marljax.make("matrix/rrps_league-v0", bots=("iocanebot",))
    with pytest.raises(ValueError, match="empty|at least"):
        marljax.make("matrix/rrps_league-v0", bots=())
    with pytest.raises(ValueError, match="at least 1 throw"):
        marljax.make("matrix/rrps_league-v0", bots=("rockbot",), num_throws=0)
    with pytest.raises(ValueError, match="num_rounds"):
        marljax.make("matrix/rrps_league-v0", bots=("rockbot",), num_throws=5, num_rounds=6)
    with pytest.raises(ValueError, match="num_rounds"):
        marljax.make("matrix/rrps_league-v0", bots=("rockbot",), num_rounds=0)


def test_a_policy_trained_on_the_league_plays_the_population_env():
    T = 6
    bots = ("rockbot", "copybot", "randbot")
    league, lparams = marljax.make("matrix/rrps_league-v0", bots=bots, num_rounds=T, num_throws=T)
    popenv, pparams = marljax.make(
        "matrix/rrps_population-v0", bots=bots, num_rounds=T, num_throws=T
    )
    options = dict(
        recurrent=True,
        hidden_sizes=(8,),
        gru_size=8,
        num_minibatches=1,
        num_epochs=1,
        parameter_mode="shared",
    )
    league_agent = ippo(league, lparams, **options)
    pop_agent = ippo(popenv, pparams, **options)
    trainer = make_train(
        TrainConfig(num_envs=2, rollout_len=T, total_env_steps=2 * T),  # one update
        league,
        league_agent,
        lparams,
    )
    # the state a league training run returns, traced (not compiled): its pytree is the one the
    # population env's agent builds (same structure, shapes and dtypes)
    trained, metrics = jax.eval_shape(trainer.train, KEY, PPOHParams())
    assert "episode_return" in metrics
    fresh = jax.eval_shape(pop_agent.init, KEY, PPOHParams())
    assert jax.tree.structure(trained.agent_state) == jax.tree.structure(fresh)
    leaves = zip(jax.tree.leaves(trained.agent_state), jax.tree.leaves(fresh), strict=True)
    for a, b in leaves:
        assert (a.shape, a.dtype) == (b.shape, b.dtype)
    # so a league agent's state plays the population env's per-bot evaluation as it is
    state = jax.jit(league_agent.init)(KEY, PPOHParams())
    returns = np.asarray(
        pop.population_returns(popenv, pop_agent, state, PPOHParams(), KEY, pparams, 2)
    )
    assert returns.shape == (3, 2) and np.all(np.abs(returns) <= T)
