"""Exact normal-form tools: hand-computed values and a brute-force check for 3 players."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from marljax.envs.matrix import payoffs as P
from marljax.evaluation import normal_form as nf

UNIFORM2 = jnp.full((2, 2), 0.5)
UNIFORM3 = jnp.full((2, 3), 1.0 / 3.0)


def pure(*actions, n=2):
    return nf.pure_strategies(jnp.array(actions), n)


# Each function runs un-jitted and jitted (rlax/chex style).
@pytest.fixture(params=["eager", "jit"])
def fns(request):
    names = [
        "expected_payoffs",
        "deviation_payoffs",
        "best_response",
        "nash_conv",
        "exploitability",
    ]
    wrap = jax.jit if request.param == "jit" else (lambda f: f)
    return {n: wrap(getattr(nf, n)) for n in names}


def test_rps_uniform_is_an_equilibrium(fns):
    rps = P.rock_paper_scissors()
    np.testing.assert_allclose(fns["expected_payoffs"](rps, UNIFORM3), [0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(fns["deviation_payoffs"](rps, UNIFORM3), np.zeros((2, 3)), atol=1e-6)
    assert abs(float(fns["exploitability"](rps, UNIFORM3))) < 1e-6


def test_rps_pure_rock_is_exploited_by_paper(fns):
    rps = P.rock_paper_scissors()
    values, actions = fns["best_response"](rps, pure(0, 0, n=3))
    np.testing.assert_array_equal(actions, [1, 1])  # paper beats rock
    np.testing.assert_allclose(values, [1.0, 1.0])
    # Each agent gains 1 over the draw: NashConv 2, exploitability 1.
    np.testing.assert_allclose(fns["nash_conv"](rps, pure(0, 0, n=3)), 2.0)
    np.testing.assert_allclose(fns["exploitability"](rps, pure(0, 0, n=3)), 1.0)


def test_prisoners_dilemma(fns):
    pd = P.prisoners_dilemma()
    # (C, C): each gets R=3 and would get T=5 by defecting -> NashConv = 2 + 2 = 4.
    np.testing.assert_allclose(fns["expected_payoffs"](pd, pure(0, 0)), [3.0, 3.0])
    np.testing.assert_allclose(fns["nash_conv"](pd, pure(0, 0)), 4.0)
    np.testing.assert_allclose(fns["exploitability"](pd, pure(0, 0)), 2.0)
    # (D, D) is the unique equilibrium.
    np.testing.assert_allclose(fns["nash_conv"](pd, pure(1, 1)), 0.0)
    # (C, D): the sucker gains P - S = 1 by defecting, the defector nothing.
    np.testing.assert_allclose(fns["expected_payoffs"](pd, pure(0, 1)), [0.0, 5.0])
    np.testing.assert_allclose(fns["nash_conv"](pd, pure(0, 1)), 1.0)
    values, actions = fns["best_response"](pd, UNIFORM2)
    np.testing.assert_array_equal(actions, [1, 1])
    np.testing.assert_allclose(values, [3.0, 3.0])  # (5 + 1) / 2


def test_matching_pennies_pure_strategy_exploitability(fns):
    mp = P.matching_pennies()
    # (H, H): the matcher already wins (+1); the mismatcher gets -1 and +1 by switching.
    np.testing.assert_allclose(fns["expected_payoffs"](mp, pure(0, 0)), [1.0, -1.0])
    np.testing.assert_allclose(fns["nash_conv"](mp, pure(0, 0)), 2.0)
    np.testing.assert_allclose(fns["exploitability"](mp, pure(0, 0)), 1.0)
    np.testing.assert_allclose(fns["exploitability"](mp, UNIFORM2), 0.0, atol=1e-6)


def test_stag_hunt_mixed_equilibrium(fns):
    # Stag pays 2p against a partner hunting stag w.p. p, hare pays 1: indifferent at p = 1/2.
    sh = P.stag_hunt()
    np.testing.assert_allclose(fns["nash_conv"](sh, UNIFORM2), 0.0, atol=1e-6)
    np.testing.assert_allclose(fns["nash_conv"](sh, pure(0, 0)), 0.0)
    np.testing.assert_allclose(fns["nash_conv"](sh, pure(1, 1)), 0.0)
    np.testing.assert_allclose(fns["nash_conv"](sh, pure(0, 1)), 1.0 + 1.0)


def test_climbing_best_response_to_uniform(fns):
    values, actions = fns["best_response"](P.climbing_game(), UNIFORM3)
    # Row means (agent 0): [-19/3, -23/3, 11/3]; column means (agent 1): [-19/3, -17/3, 5/3].
    np.testing.assert_array_equal(actions, [2, 2])
    np.testing.assert_allclose(values, [11.0 / 3.0, 5.0 / 3.0], rtol=1e-6)


def _brute_force(payoffs: np.ndarray, strategies: np.ndarray):
    """Enumerate every joint action in numpy."""
    num_agents, num_actions = strategies.shape
    value = np.zeros(num_agents)
    dev = np.zeros((num_agents, num_actions))
    for joint in itertools.product(range(num_actions), repeat=num_agents):
        prob = np.prod([strategies[j, joint[j]] for j in range(num_agents)])
        value += prob * payoffs[(slice(None),) + joint]
        for i in range(num_agents):
            p_others = np.prod([strategies[j, joint[j]] for j in range(num_agents) if j != i])
            dev[i, joint[i]] += p_others * payoffs[(i,) + joint]
    return value, dev, np.sum(dev.max(-1) - value)


def test_three_players_match_brute_force(fns):
    rng = np.random.default_rng(0)
    payoffs = rng.normal(size=(3, 3, 3, 3)).astype(np.float32)
    strategies = rng.dirichlet(np.ones(3), size=3).astype(np.float32)
    value, dev, conv = _brute_force(payoffs, strategies)
    np.testing.assert_allclose(
        fns["expected_payoffs"](payoffs, strategies), value, rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        fns["deviation_payoffs"](payoffs, strategies), dev, rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(fns["nash_conv"](payoffs, strategies), conv, rtol=1e-5)
    np.testing.assert_allclose(fns["exploitability"](payoffs, strategies), conv / 3, rtol=1e-5)
    values, actions = fns["best_response"](payoffs, strategies)
    np.testing.assert_array_equal(actions, dev.argmax(-1))
    np.testing.assert_allclose(values, dev.max(-1), rtol=1e-5)


def test_public_goods_full_contribution_nash_conv():
    # 3 players, multiplier 1.5: everyone contributing gets 1.5; keeping instead gives
    # 1 + 1.5 * 2/3 = 2, a gain of 0.5 each -> NashConv 1.5.
    pg = P.public_goods(3, 1.5)
    np.testing.assert_allclose(nf.expected_payoffs(pg, pure(0, 0, 0)), [1.5, 1.5, 1.5])
    np.testing.assert_allclose(nf.nash_conv(pg, pure(0, 0, 0)), 1.5, rtol=1e-6)
    np.testing.assert_allclose(nf.nash_conv(pg, pure(1, 1, 1)), 0.0)


def test_vmap_over_games_and_profiles():
    games = jnp.stack([P.prisoners_dilemma(), P.matching_pennies()])
    profiles = jnp.stack([pure(0, 0), pure(0, 0)])
    np.testing.assert_allclose(jax.vmap(nf.nash_conv)(games, profiles), [4.0, 2.0])


def test_shape_errors():
    with pytest.raises(ValueError):
        nf.expected_payoffs(jnp.zeros((2, 2, 2)), jnp.zeros((2, 3)))
    with pytest.raises(ValueError):
        nf.nash_conv(jnp.zeros((2, 2)), jnp.zeros((2, 2)))
