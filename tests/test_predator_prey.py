"""Predator-prey: hand-built captures, punishment, removal, movement conflicts, bad input."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
import marljax.envs.grid  # noqa: F401  (registers the grid/* ids)
from marljax.envs.grid.predator_prey import (
    CATCH,
    DOWN,
    LEFT,
    RIGHT,
    STAY,
    UP,
    PredatorPrey,
    PredatorPreyParams,
    PredatorPreyState,
)
from marljax.testing import check_env

ENV = PredatorPrey(6, num_agents=4, num_prey=2, obs_radius=1)
STEP = jax.jit(ENV.step)
P = PredatorPreyParams(capture_reward=jnp.float32(10.0))
KEY = jax.random.PRNGKey(0)


def make_state(preds, prey, active=None, alive=None, t=0) -> PredatorPreyState:
    return PredatorPreyState(
        pred_pos=jnp.asarray(preds, jnp.int32),
        pred_active=jnp.asarray([True] * len(preds) if active is None else active, bool),
        prey_pos=jnp.asarray(prey, jnp.int32),
        prey_alive=jnp.asarray([True] * len(prey) if alive is None else alive, bool),
        t=jnp.int32(t),
    )


def step(state, actions, params=P, key=KEY):
    return STEP(key, state, jnp.asarray(actions, jnp.int32), params)


# Prey 0 at (2, 2) with predators 0 (north) and 1 (west) next to it; prey 1 at (5, 5) in the
# corner, predators 2 and 3 far from both.
BASE = make_state([[1, 2], [2, 1], [0, 5], [4, 0]], [[2, 2], [5, 5]])


def test_capture_needs_k_adjacent_catchers():
    s, ts = step(BASE, [CATCH, CATCH, STAY, STAY])
    assert not bool(s.prey_alive[0]) and bool(s.prey_alive[1])
    np.testing.assert_allclose(ts.reward, [10.0] * 4)  # team reward
    np.testing.assert_array_equal(s.pred_active, [False, False, True, True])  # captors removed
    assert not bool(ts.terminated)
    # k = 3: the same two catchers fail, which is a punished miss.
    k3 = P.replace(capture_agents=jnp.int32(3), punishment=jnp.float32(-1.5))
    s, ts = step(BASE, [CATCH, CATCH, STAY, STAY], k3)
    assert bool(s.prey_alive[0]) and bool(jnp.all(s.pred_active))
    np.testing.assert_allclose(ts.reward, [-1.5] * 4)


def test_lone_catch_is_punished_once_per_prey():
    punish = P.replace(punishment=jnp.float32(-1.0))
    s, ts = step(BASE, [CATCH, STAY, STAY, STAY], punish)
    assert bool(s.prey_alive[0])
    np.testing.assert_allclose(ts.reward, [-1.0] * 4)
    _, ts = step(BASE, [CATCH, STAY, STAY, STAY])  # punishment 0 by default
    np.testing.assert_allclose(ts.reward, [0.0] * 4)
    # Two lone attempts on two prey: two punishments.
    two = make_state([[1, 2], [2, 0], [4, 5], [4, 0]], [[2, 2], [5, 5]])
    _, ts = step(two, [CATCH, STAY, CATCH, STAY], punish)
    np.testing.assert_allclose(ts.reward, [-2.0] * 4)
    # A predator next to the prey that does not play CATCH does not count.
    _, ts = step(BASE, [CATCH, STAY, STAY, STAY], punish.replace(capture_agents=jnp.int32(1)))
    np.testing.assert_allclose(ts.reward, [10.0] * 4)


def test_captors_stay_without_removal_and_termination():
    keep = P.replace(remove_captors=jnp.bool_(False))
    s, _ = step(BASE, [CATCH, CATCH, STAY, STAY], keep)
    assert bool(jnp.all(s.pred_active))
    # Last prey caught: terminated.
    last = make_state([[1, 2], [2, 1], [0, 5], [4, 0]], [[2, 2], [5, 5]], alive=[True, False])
    s, ts = step(last, [CATCH, CATCH, STAY, STAY], keep)
    assert bool(ts.terminated) and not bool(ts.truncated)
    # All predators removed: terminated.
    two_left = make_state(
        [[1, 2], [2, 1], [0, 5], [4, 0]], [[2, 2], [5, 5]], active=[True, True, False, False]
    )
    _, ts = step(two_left, [CATCH, CATCH, STAY, STAY])
    assert bool(ts.terminated)
    # Truncation at max_steps.
    _, ts = step(BASE.replace(t=jnp.int32(199)), [STAY] * 4)
    assert bool(ts.truncated) and not bool(ts.terminated)


def test_removed_predators_are_gone():
    s = make_state(
        [[1, 2], [2, 1], [0, 5], [4, 0]], [[2, 2], [5, 5]], active=[False, True, True, True]
    )
    mask = np.asarray(ENV.action_mask(s))
    np.testing.assert_array_equal(mask[0], [1, 0, 0, 0, 0, 0])  # only STAY
    _, ts = step(s, [RIGHT, STAY, STAY, STAY])
    np.testing.assert_array_equal(ts.obs[0], np.zeros((3, 3, 3)))  # observes nothing
    # It does not count for a catch and is not visible to others.
    _, ts = step(s, [CATCH, CATCH, STAY, STAY], P.replace(capture_agents=jnp.int32(2)))
    assert float(ts.reward[0]) == 0.0
    assert float(ts.obs[1][:, :, 0].sum()) == 1.0  # predator 1 sees only itself


def test_action_mask_and_illegal_moves():
    mask = np.asarray(ENV.action_mask(BASE))
    # Predator 0 at (1, 2): down is the prey; up, left, right free; catch legal.
    np.testing.assert_array_equal(mask[0], [1, 1, 0, 1, 1, 1])
    # Predator 2 at (0, 5): up and right leave the grid; no prey adjacent.
    np.testing.assert_array_equal(mask[2], [1, 0, 1, 1, 0, 0])
    s, _ = step(BASE, [DOWN, RIGHT, UP, LEFT])  # 0: into prey (illegal), 1: into prey (illegal)
    np.testing.assert_array_equal(s.pred_pos, [[1, 2], [2, 1], [0, 5], [4, 0]])
    s, _ = step(BASE, [UP, DOWN, DOWN, 17])  # 17 clips to CATCH, illegal there: STAY
    np.testing.assert_array_equal(s.pred_pos, [[0, 2], [3, 1], [1, 5], [4, 0]])


def test_move_conflicts_have_one_random_winner():
    # Predators 0 and 1 both move to (1, 1); one of them gets it, chosen at random.
    s = make_state([[0, 1], [1, 0], [5, 0], [5, 2]], [[4, 4], [5, 5]])
    winners = set()
    for seed in range(8):
        s1, _ = step(s, [DOWN, RIGHT, STAY, STAY], key=jax.random.PRNGKey(seed))
        pos = np.asarray(s1.pred_pos)
        moved = [bool((pos[i] == [1, 1]).all()) for i in (0, 1)]
        assert sum(moved) == 1  # never two predators in one cell
        winners.add(moved.index(True))
        # The loser stayed.
        assert (pos[1 - moved.index(True)] == np.asarray(s.pred_pos)[1 - moved.index(True)]).all()
    assert winners == {0, 1}


def test_prey_moves_to_a_free_neighbour_or_stays():
    # Prey 1 in the corner (5, 5) with predators on both neighbours: it cannot move.
    s = make_state([[4, 5], [5, 4], [0, 0], [0, 2]], [[2, 2], [5, 5]])
    for seed in range(4):
        s1, _ = step(s, [STAY] * 4, key=jax.random.PRNGKey(seed))
        np.testing.assert_array_equal(s1.prey_pos[1], [5, 5])
        d = np.abs(np.asarray(s1.prey_pos[0]) - [2, 2]).sum()
        assert d == 1  # prey 0 always moves (rest probability 0)
    s1, _ = step(s, [STAY] * 4, P.replace(prey_rest_prob=jnp.float32(1.0)))
    np.testing.assert_array_equal(s1.prey_pos, s.prey_pos)
    # A prey does not move into a cell a predator just entered: prey 0 at (1, 0) has (0, 0)
    # taken, (2, 0) entered by predator 3 this step, so (1, 1) is its only way out.
    s = make_state([[0, 0], [5, 0], [0, 5], [2, 1]], [[1, 0], [5, 5]])
    for seed in range(4):
        s1, _ = step(s, [STAY, STAY, STAY, LEFT], key=jax.random.PRNGKey(seed))
        np.testing.assert_array_equal(s1.pred_pos[3], [2, 0])
        np.testing.assert_array_equal(s1.prey_pos[0], [1, 1])


def test_observation_window():
    obs = np.asarray(jax.jit(ENV.observations)(BASE))
    assert obs.shape == (4, 3, 3, 3)
    # Predator 2 at (0, 5), top-right corner: the row above and the column right are outside.
    np.testing.assert_array_equal(obs[2, :, :, 2], [[1, 1, 1], [0, 0, 1], [0, 0, 1]])
    # Predator 0 at (1, 2): prey below it, itself in the centre, predator 1 down-left.
    np.testing.assert_array_equal(obs[0, :, :, 1], [[0, 0, 0], [0, 0, 0], [0, 1, 0]])
    np.testing.assert_array_equal(obs[0, :, :, 0], [[0, 0, 0], [0, 1, 0], [1, 0, 0]])
    # Predator 1 at (2, 1): predator 0 at (1, 2) is up-right, prey to the right.
    np.testing.assert_array_equal(obs[1, :, :, 0], [[0, 0, 1], [0, 1, 0], [0, 0, 0]])
    np.testing.assert_array_equal(obs[1, :, :, 1], [[0, 0, 0], [0, 0, 1], [0, 0, 0]])


def test_reset_places_everyone_apart_and_check_env():
    env, params = marljax.make(
        "grid/predator_prey_punish-v0", grid_size=5, num_agents=3, num_prey=2, max_steps=20
    )
    assert float(params.punishment) == -1.0
    check_env(env, params, num_steps=6, num_envs=2)
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    state, ts = reset(jax.random.split(KEY, 128), params)
    pos = np.concatenate([np.asarray(state.pred_pos), np.asarray(state.prey_pos)], axis=1)
    codes = pos[..., 0] * 5 + pos[..., 1]
    assert all(len(set(c)) == 5 for c in codes)  # distinct cells
    assert len({tuple(c) for c in codes}) > 100  # fresh layouts
    np.testing.assert_array_equal(ts.reward, 0.0)


@pytest.mark.parametrize(
    "overrides, match",
    [
        ({"grid_size": 3, "num_agents": 6, "num_prey": 4}, "do not fit on a 3x3 grid"),
        ({"grid_size": 5, "obs_radius": 6}, "obs_radius must be in 0 .. 5"),
        ({"num_prey": 0}, "num_prey >= 1"),
        ({"grid_size": 1}, "at least 2x2"),
        ({"capture_agents": 5}, "capture_agents must be in 1 .. 4"),
        ({"num_agents": 2, "capture_agents": 3}, "capture_agents must be in 1 .. 2"),
        ({"capture_agents": 0}, "no prey could ever be caught"),
        ({"prey_rest_prob": 1.5}, "prey_rest_prob"),
        ({"max_steps": 0}, "max_steps"),
    ],
)
def test_bad_input_fails_at_make(overrides, match):
    with pytest.raises(ValueError, match=match):
        marljax.make("grid/predator_prey-v0", **overrides)
