"""Shapley credit: axioms on constructed games, Monte Carlo vs exact, and the rollout helper."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from marljax.agents.base import Agent, AgentParams
from marljax.evaluation import shapley as SH
from marljax.testing import CountingEnv

KEY = jax.random.PRNGKey(0)


def additive(weights):
    w = jnp.asarray(weights, jnp.float32)
    return lambda mask, key: jnp.sum(jnp.where(mask, w, 0.0))


def glove_game(mask, key):
    """Agent 0 owns a left glove, agents 1 and 2 right gloves; a pair is worth 1."""
    del key
    return jnp.minimum(mask[0], mask[1] + mask[2]).astype(jnp.float32)


def brute_force(value, num_agents):
    """Shapley values by the permutation formula, in Python (A! orderings)."""
    phi = np.zeros(num_agents)
    perms = list(itertools.permutations(range(num_agents)))
    for perm in perms:
        mask = np.zeros(num_agents, bool)
        before = float(value(jnp.asarray(mask), KEY))
        for i in perm:
            mask[i] = True
            after = float(value(jnp.asarray(mask), KEY))
            phi[i] += after - before
            before = after
    return phi / len(perms)


def test_coalition_masks():
    m = np.asarray(SH.coalition_masks(3))
    assert m.shape == (8, 3)
    np.testing.assert_array_equal(m[5], [True, False, True])  # 5 = 0b101
    assert len({tuple(r) for r in m}) == 8


def test_glove_game_exact():
    # Known values: (2/3, 1/6, 1/6).
    phi = SH.exact_shapley(glove_game, 3, KEY)
    np.testing.assert_allclose(phi, [2 / 3, 1 / 6, 1 / 6], rtol=1e-6)
    # efficiency: v(all) - v(empty) = 1
    np.testing.assert_allclose(phi.sum(), 1.0, rtol=1e-6)
    # symmetry: agents 1 and 2 are interchangeable
    np.testing.assert_allclose(phi[1], phi[2])


def test_additive_game_and_null_player():
    w = [3.0, -1.0, 0.0, 2.5]  # agent 2 is a null player
    phi = jax.jit(lambda k: SH.exact_shapley(additive(w), 4, k))(KEY)
    np.testing.assert_allclose(phi, w, atol=1e-6)
    assert float(phi[2]) == 0.0


def test_exact_matches_permutation_formula_on_a_random_game():
    table = jax.random.normal(jax.random.PRNGKey(3), (2**4,))

    def value(mask, key):
        idx = jnp.sum(mask.astype(jnp.int32) * (1 << jnp.arange(4)))
        return table[idx] - table[0]  # v(empty) = 0

    phi = SH.exact_shapley(value, 4, KEY)
    np.testing.assert_allclose(phi, brute_force(value, 4), atol=1e-5)
    np.testing.assert_allclose(phi.sum(), table[-1] - table[0], atol=1e-5)
    weights = [math.factorial(s) * math.factorial(3 - s) / math.factorial(4) for s in range(4)]
    # each agent's weights over the 8 coalitions without it sum to 1
    assert math.isclose(sum(math.comb(3, s) * weights[s] for s in range(4)), 1.0)


def test_monte_carlo_close_to_exact_on_a_four_agent_game():
    # Weighted majority game with synergy: coalitions with weight >= 4 win 1, plus pair bonus.
    weights = jnp.array([3.0, 2.0, 1.0, 1.0])

    def value(mask, key):
        win = (jnp.sum(jnp.where(mask, weights, 0.0)) >= 4.0).astype(jnp.float32)
        return win + 0.5 * (mask[2] & mask[3]).astype(jnp.float32)

    exact = SH.exact_shapley(value, 4, KEY)
    est = SH.monte_carlo_shapley(value, 4, jax.random.PRNGKey(1), num_permutations=2000)
    # within 4 standard errors (and the standard errors are small)
    assert np.all(np.abs(est.values - exact) <= 4 * est.stderr + 1e-6), (est, exact)
    assert float(est.stderr.max()) < 0.03
    # efficiency holds exactly for every permutation sample
    np.testing.assert_allclose(est.values.sum(), value(jnp.ones(4, bool), KEY), rtol=1e-5)
    plain = SH.monte_carlo_shapley(value, 4, jax.random.PRNGKey(1), 2000, antithetic=False)
    np.testing.assert_allclose(plain.values, exact, atol=5 * float(plain.stderr.max()))
    auto = SH.shapley_values(value, 4, jax.random.PRNGKey(1), "monte_carlo", num_permutations=2000)
    np.testing.assert_allclose(auto, est.values)  # same program and key
    np.testing.assert_allclose(SH.shapley_values(value, 4, KEY), exact)  # "auto": exact
    with pytest.raises(ValueError, match="even"):
        SH.monte_carlo_shapley(value, 4, KEY, num_permutations=3)
    with pytest.raises(ValueError, match="method"):
        SH.shapley_values(value, 4, KEY, method="kernel")


def _constant_agent(action: int) -> Agent:
    """A stateless agent that always plays `action` (for CountingEnv: reward = action)."""

    def act(state, carry, obs, key, hparams, greedy=False):
        return jnp.full(obs.action_mask.shape[:2], action, jnp.int32), carry, {}

    return Agent(
        init=lambda key, params: (),
        initial_carry=lambda n: (),
        act=act,
        update=lambda *a: ((), {}),
        default_hparams=lambda: (),
        get_params=lambda s: AgentParams(policy=s),
    )


def test_rollout_value_fn_noop_and_random_baselines():
    env = CountingEnv(num_agents=3)
    params = env.default_params()
    goal = int(params.goal)  # the episode lasts `goal` steps
    agent = _constant_agent(1)
    noop = SH.rollout_value_fn(env, params, agent, (), (), num_episodes=4, baseline="noop")
    # reward = action: present agents earn 1 per step, absent (no-op) agents 0 -> additive game
    v_all = noop(jnp.ones(3, bool), KEY)
    np.testing.assert_allclose(v_all, 3 * goal)
    np.testing.assert_allclose(noop(jnp.array([True, False, False]), KEY), goal)
    phi = SH.exact_shapley(noop, 3, KEY)
    np.testing.assert_allclose(phi, [goal] * 3, rtol=1e-6)
    # a random baseline earns the mean legal action: agent 0 has actions {0, 1} (mean 0.5),
    # the others {0, 1, 2} (mean 1), so the policy's credit over random is (0.5, 0, 0) per step
    rnd = SH.rollout_value_fn(env, params, agent, (), (), num_episodes=256, baseline="random")
    phi_r = SH.exact_shapley(rnd, 3, KEY)
    np.testing.assert_allclose(phi_r / goal, [0.5, 0.0, 0.0], atol=0.1)
    empty = rnd(jnp.zeros(3, bool), KEY) / goal
    np.testing.assert_allclose(empty, 2.5, atol=0.1)
    with pytest.raises(ValueError, match="baseline"):
        SH.rollout_value_fn(env, params, agent, (), (), baseline="zero")
