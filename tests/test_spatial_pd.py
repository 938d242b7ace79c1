"""The spatial Prisoner's Dilemma (`social/spatial_pd-v0`): torus, payoffs, observations."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
import marljax.envs.social  # noqa: F401  (registers social/*)
from marljax.envs.social import SpatialPD, spatial_pd_payoff, torus_neighbours


@pytest.fixture(scope="module")
def small():
    """A 3x3 torus with every agent starting as a cooperator, and jitted reset/step."""
    env, params = marljax.make("social/spatial_pd-v0", side=3, init_cooperation=1.0, num_rounds=2)
    return env, params, jax.jit(env.reset), jax.jit(env.step)


def test_torus_neighbours_wrap():
    nb = torus_neighbours(3)  # rows: up, down, left, right
    np.testing.assert_array_equal(nb[0], [6, 3, 2, 1])  # corner: wraps up and left
    np.testing.assert_array_equal(nb[4], [1, 7, 3, 5])  # centre: no wrap
    np.testing.assert_array_equal(nb[8], [5, 2, 7, 6])  # corner: wraps down and right
    nb4 = torus_neighbours(4)
    # every agent is the neighbour of exactly four agents (a regular graph)
    np.testing.assert_array_equal(np.bincount(nb4.ravel(), minlength=16), np.full(16, 4))


def test_rewards_by_hand_one_defector(small):
    env, params, reset, step = small
    state, ts = reset(jax.random.PRNGKey(0), params)
    actions = jnp.zeros((9,), jnp.int32).at[4].set(1)  # the centre defects, the rest cooperate
    state, ts = step(jax.random.PRNGKey(1), state, actions, params)
    T, S, R = params.temptation, params.sucker, params.reward
    expected = np.full(9, 4 * R)  # corners: four cooperating neighbours
    expected[4] = 4 * T  # the defector exploits its four neighbours
    expected[[1, 3, 5, 7]] = 3 * R + S  # each of them meets the defector once
    np.testing.assert_allclose(ts.reward, expected, rtol=1e-6)
    np.testing.assert_array_equal(ts.extras["cooperated"], np.arange(9) != 4)
    np.testing.assert_array_equal(ts.extras["defected"], np.arange(9) == 4)


def test_payoff_all_four_outcomes():
    """A 2-agent ring (each the other's only neighbour) gives the 2x2 table entries."""

    class P:  # any object with the four payoff fields
        reward, temptation, sucker, punishment = 3.0, 5.0, -1.0, 0.5

    nb = jnp.array([[1], [0]])
    for a, b, ra, rb in [(1, 1, 3.0, 3.0), (1, 0, -1.0, 5.0), (0, 0, 0.5, 0.5)]:
        r = spatial_pd_payoff(jnp.array([a, b], bool), nb, P)
        np.testing.assert_allclose(r, [ra, rb])


def test_observations_are_local(small):
    env, params, reset, step = small
    state, ts = reset(jax.random.PRNGKey(0), params)
    assert ts.obs.shape == (9, 6)
    np.testing.assert_array_equal(ts.obs[:, :5], 1.0)  # init_cooperation = 1
    np.testing.assert_array_equal(ts.obs[:, 5], 1.0)  # first-step flag
    actions = jnp.zeros((9,), jnp.int32).at[4].set(1)
    state, ts = step(jax.random.PRNGKey(1), state, actions, params)
    # agent 1: self C, up = 7 (wraps) C, down = 4 D, left = 0 C, right = 2 C, not first
    np.testing.assert_array_equal(ts.obs[1], [1, 1, 0, 1, 1, 0])
    np.testing.assert_array_equal(ts.obs[4], [0, 1, 1, 1, 1, 0])  # the defector itself
    np.testing.assert_array_equal(ts.global_state, [1, 1, 1, 1, 0, 1, 1, 1, 1, 0])
    assert not bool(ts.terminated)
    state, ts = step(jax.random.PRNGKey(2), state, actions, params)
    assert bool(ts.terminated) and not bool(ts.truncated)  # num_rounds = 2


def test_random_initial_lattice_and_vmap_over_temptation(small):
    env, params, reset, _ = small
    p = params.replace(init_cooperation=0.5)
    lat = [np.asarray(reset(jax.random.PRNGKey(k), p)[0].cooperated) for k in range(2)]
    assert not np.array_equal(lat[0], lat[1])  # the reset key draws the lattice
    temptations = jnp.array([1.1, 1.9])
    batch = jax.tree.map(lambda x: jnp.broadcast_to(x, (2,)), params).replace(
        temptation=temptations
    )

    def defector_reward(p):
        state, _ = env.reset(jax.random.PRNGKey(0), p)
        _, ts = env.step(jax.random.PRNGKey(1), state, jnp.zeros(9, int).at[4].set(1), p)
        return ts.reward[4]

    np.testing.assert_allclose(
        jax.jit(jax.vmap(defector_reward))(batch), 4 * temptations, rtol=1e-6
    )


def test_registration_and_bad_values():
    env, params = marljax.make("social/spatial_pd-v0")
    assert isinstance(env, SpatialPD) and env.num_agents == 36
    assert "social/spatial_pd-v0" in marljax.registered_envs()
    with pytest.raises(ValueError, match="side >= 3"):
        marljax.make("social/spatial_pd-v0", side=2)
    with pytest.raises(ValueError, match="init_cooperation"):
        marljax.make("social/spatial_pd-v0", init_cooperation=1.5)
    with pytest.raises(ValueError, match="num_rounds"):
        marljax.make("social/spatial_pd-v0", num_rounds=0)
