"""Cleanup and Harvest: hand-built states with known next states and rewards.

One jitted `step` per game is shared by every test (module-scoped fixtures); states are built
by hand on tiny maps, so every expected value below can be checked with a pencil.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
import marljax.envs.social.dilemma_grid as dg
from marljax.envs.social import ssd_engine as eng
from marljax.envs.social.dilemma_grid import (
    Cleanup,
    DilemmaGridState,
    Harvest,
    cleanup_spawn_probabilities,
    harvest_regrowth_probability,
)
from marljax.testing import check_env

N, E, S, W = 0, 1, 2, 3  # orientations
FWD, BACK, LEFT, RIGHT, TURN_L, TURN_R, STAY, ZAP, CLEAN = range(9)

HARVEST_MAP = (
    "@@@@@@@@",
    "@P  A  @",
    "@      @",
    "@  P   @",
    "@      @",
    "@P    A@",
    "@@@@@@@@",
)
CLEANUP_MAP = (
    "@@@@@@@@",
    "@HR P B@",
    "@HR   B@",
    "@RR P B@",
    "@@@@@@@@",
)


@pytest.fixture(scope="module")
def harvest():
    env = Harvest(HARVEST_MAP, num_agents=3, view_radius=2)
    params = env.default_params().replace(regrowth_probs=jnp.zeros(4), tag_timeout=jnp.int32(3))
    return env, params, jax.jit(env.step)


@pytest.fixture(scope="module")
def cleanup():
    env = Cleanup(CLEANUP_MAP, num_agents=2, view_radius=2)
    params = env.default_params().replace(
        apple_respawn_prob=jnp.float32(1.0),
        waste_spawn_prob=jnp.float32(0.0),
        depletion_threshold=jnp.float32(0.3),
        restoration_threshold=jnp.float32(0.2),
    )
    return env, params, jax.jit(env.step)


def state_of(env, pos, orient, apples=(), waste=None, timeout=None):
    """A hand-built state: agents at `pos` facing `orient`, apples at the listed cells."""
    grid = np.zeros(env.grid_shape, bool)
    for r, c in apples:
        grid[r, c] = True
    return DilemmaGridState(
        pos=jnp.asarray(pos, jnp.int32),
        orient=jnp.asarray(orient, jnp.int32),
        timeout=jnp.asarray(timeout if timeout is not None else [0] * len(pos), jnp.int32),
        apples=jnp.asarray(grid),
        waste=jnp.zeros(env.grid_shape, bool) if waste is None else jnp.asarray(waste),
        t=jnp.int32(0),
        beams=jnp.zeros(env.grid_shape, bool),
    )


def step(fixture, state, actions, seed=0, params=None):
    env, default, step_fn = fixture
    return step_fn(
        jax.random.PRNGKey(seed), state, jnp.asarray(actions, jnp.int32), params or default
    )


PARK = (5, 6)  # the third Harvest agent waits here, out of the way


# ---------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("layout", "num_agents", "message"),
    [
        (["@@@", "@P@", "@@"], 1, "ragged rows"),
        (["@@@", "@P@", "@X@"], 1, "unknown character 'X' at row 2, column 1"),
        (["@@@", "@ @", "@@@"], 1, "no spawn point"),
        (["@@@@", "@PP@", "@@@@"], 3, "3 agents but only 2 spawn points"),
        ([], 1, "non-empty list"),
    ],
)
def test_bad_maps_fail_at_make_time(layout, num_agents, message):
    with pytest.raises(ValueError, match=message):
        marljax.make("social/harvest_small-v0", layout=layout, num_agents=num_agents)


def test_bad_static_options_fail_at_make_time():
    with pytest.raises(ValueError, match="unknown layout 'huge'"):
        marljax.make("social/cleanup-v0", layout="huge")
    with pytest.raises(ValueError, match="6 agents but only 3 spawn points"):
        marljax.make("social/cleanup_small-v0", num_agents=6)
    with pytest.raises(ValueError, match="unknown character 'A'"):  # apples are 'B' in Cleanup
        Cleanup(["@@@@", "@PA@", "@@@@"], num_agents=1)
    with pytest.raises(ValueError, match="view_radius must be an integer >= 1"):
        Harvest("small", num_agents=2, view_radius=0)


def test_registered_ids_and_defaults():
    env, params = marljax.make("social/harvest-v0")
    assert (env.num_agents, env.grid_shape, env.num_actions) == (5, (16, 38), 8)
    assert int(params.spawn.sum()) == 20 and int(params.apple_cells.sum()) == 155
    np.testing.assert_allclose(params.regrowth_probs, [0.0, 0.005, 0.02, 0.05])
    env, params = marljax.make("social/cleanup-v0")
    assert (env.num_agents, env.grid_shape, env.num_actions) == (5, (25, 18), 9)
    assert int(params.river.sum()) == 119 and int(params.initial_waste.sum()) == 56
    assert env.observation_space(params).shape == (15, 15, 7)
    for eid in ("social/harvest_small-v0", "social/cleanup_small-v0"):
        assert eid in marljax.registered_envs()
    # The storm_2p-sized layouts of the benchmark: 8 x 8 inside the walls, 4 spawn points.
    for eid, apples in (("social/harvest_small-v0", 20), ("social/cleanup_small-v0", 16)):
        env, params = marljax.make(eid, layout="tiny", num_agents=2, view_radius=2)
        assert env.grid_shape == (10, 10) and int((~params.walls).sum()) == 64
        assert int(params.spawn.sum()) == 4 and int(params.apple_cells.sum()) == apples
        assert env.observation_space(params).shape == (5, 5, 7)


# ---------------------------------------------------------------------------------- movement


def test_moves_are_relative_to_orientation(harvest):
    start = state_of(harvest[0], [(3, 3), (1, 1), PARK], [E, N, N])
    expected = {FWD: (3, 4), BACK: (3, 2), LEFT: (2, 3), RIGHT: (4, 3), STAY: (3, 3)}
    for action, cell in expected.items():
        s, _ = step(harvest, start, [action, STAY, STAY])
        assert tuple(np.asarray(s.pos[0])) == cell, action
    s, _ = step(harvest, start, [TURN_R, TURN_L, STAY])
    np.testing.assert_array_equal(s.orient, [S, W, N])
    np.testing.assert_array_equal(s.pos, start.pos)  # turning does not move


def test_walls_block_moves(harvest):
    s, _ = step(harvest, state_of(harvest[0], [(1, 1), (3, 3), PARK], [N, N, N]), [FWD, STAY, STAY])
    assert tuple(np.asarray(s.pos[0])) == (1, 1)
    s, _ = step(harvest, state_of(harvest[0], [(1, 1), (3, 3), PARK], [W, N, N]), [FWD, STAY, STAY])
    assert tuple(np.asarray(s.pos[0])) == (1, 1)


def test_two_agents_into_one_cell_one_wins_at_random(harvest):
    start = state_of(harvest[0], [(3, 2), (3, 4), PARK], [E, W, N])
    winners = set()
    for seed in range(8):
        s, _ = step(harvest, start, [FWD, FWD, STAY], seed=seed)
        moved = [tuple(np.asarray(s.pos[i])) != tuple(np.asarray(start.pos[i])) for i in (0, 1)]
        assert sum(moved) == 1
        assert (3, 3) in {tuple(p) for p in np.asarray(s.pos[:2]).tolist()}
        winners.add(moved.index(True))
    assert winners == {0, 1}


def test_swaps_are_blocked_chains_move_and_stayers_block(harvest):
    swap = state_of(harvest[0], [(3, 2), (3, 3), PARK], [E, W, N])
    s, _ = step(harvest, swap, [FWD, FWD, STAY])
    np.testing.assert_array_equal(s.pos, swap.pos)
    chain = state_of(harvest[0], [(3, 2), (3, 3), PARK], [E, E, N])
    s, _ = step(harvest, chain, [FWD, FWD, STAY])
    np.testing.assert_array_equal(s.pos[:2], [(3, 3), (3, 4)])
    s, _ = step(harvest, chain, [FWD, STAY, STAY])  # the occupant stays: blocked
    np.testing.assert_array_equal(s.pos, chain.pos)


def test_eating_an_apple(harvest):
    start = state_of(harvest[0], [(3, 2), (1, 1), PARK], [E, N, N], apples=[(3, 3), (1, 4)])
    s, ts = step(harvest, start, [FWD, STAY, STAY])
    np.testing.assert_array_equal(ts.reward, [1.0, 0.0, 0.0])
    assert not bool(s.apples[3, 3]) and bool(s.apples[1, 4])


# ---------------------------------------------------------------------------------- observations


def test_egocentric_view_rotates_with_the_agent(harvest):
    # Agent 0 at (3, 3); an apple two cells north, agent 1 one cell east.
    r = 2  # view radius: the agent is at the window centre (2, 2), looking up
    where_apple = {N: (0, 2), E: (2, 0), S: (4, 2), W: (2, 4)}  # ahead / left / behind / right
    where_other = {N: (2, 3), E: (1, 2), S: (2, 1), W: (3, 2)}
    for o in (N, E, S, W):
        start = state_of(harvest[0], [(3, 3), (3, 4), PARK], [o, N, N], apples=[(1, 3)])
        _, ts = step(harvest, start, [STAY, STAY, STAY])
        obs = np.asarray(ts.obs[0])
        assert obs.shape == (2 * r + 1, 2 * r + 1, 7) and obs.dtype == np.uint8
        assert list(zip(*np.nonzero(obs[..., dg.APPLE]))) == [where_apple[o]], o
        assert list(zip(*np.nonzero(obs[..., dg.OTHERS]))) == [where_other[o]], o
        assert list(zip(*np.nonzero(obs[..., dg.SELF]))) == [(r, r)]
        assert obs[..., dg.WALL].sum() == 0  # rows 1..5, cols 1..5: all inside the walls
    # At the north wall facing north: the two rows ahead are wall (the outer one is off the map).
    _, ts = step(harvest, state_of(harvest[0], [(1, 3), (3, 4), PARK], [N, N, N]), [STAY] * 3)
    np.testing.assert_array_equal(np.asarray(ts.obs[0, :, :, dg.WALL]).sum(axis=1), [5, 5, 0, 0, 0])


def test_global_state_and_reset_extras(harvest):
    env, params, _ = harvest
    state, ts = jax.jit(env.reset)(jax.random.PRNGKey(3), params)
    assert ts.extras["tagged_out"].shape == (3,) and not ts.extras["tagged_out"].any()
    pos = np.asarray(state.pos)
    assert (
        len({tuple(p) for p in pos}) == 3 and np.asarray(params.spawn)[pos[:, 0], pos[:, 1]].all()
    )
    gs = np.asarray(ts.global_state)
    assert gs.shape == (7, 8, 5 + 3)
    np.testing.assert_array_equal(gs[..., 0], np.asarray(params.walls))
    np.testing.assert_array_equal(gs[..., 1], np.asarray(params.initial_apples))
    for i, (r, c) in enumerate(pos):
        assert gs[r, c, 5 + i] == 1 and gs[..., 5 + i].sum() == 1
    assert gs[..., 4].sum() == 0  # no beam fired yet


# ---------------------------------------------------------------------------------- tagging


def test_zap_removes_the_hit_agent_for_exactly_tag_timeout_steps(harvest):
    # Agent 0 faces east with agent 1 two cells ahead; agent 2 is on a side lane's 6th cell
    # (beyond the 5-cell beam).
    s = state_of(harvest[0], [(2, 1), (2, 3), (1, 6)], [E, N, N])
    s, ts = step(harvest, s, [ZAP, STAY, STAY])
    np.testing.assert_array_equal(ts.reward, [-1.0, -50.0, 0.0])
    np.testing.assert_array_equal(ts.extras["tagged_out"], [False, True, False])
    out_steps = 0
    while bool(ts.extras["tagged_out"][1]):
        out_steps += 1
        assert not np.asarray(ts.obs[1]).any()  # a tagged-out agent sees nothing
        np.testing.assert_array_equal(ts.action_mask[1], np.arange(8) == STAY)
        assert ts.global_state[..., 5 + 1].sum() == 0  # and is not on the map
        s, ts = step(harvest, s, [STAY, ZAP, STAY], seed=out_steps)  # its zap is ignored
        np.testing.assert_array_equal(ts.reward, [0.0, 0.0, 0.0])
        assert out_steps <= 10
    assert out_steps == 3  # == params.tag_timeout
    back = tuple(np.asarray(s.pos[1]))
    assert np.asarray(harvest[1].spawn)[back] and back not in {(2, 1), (1, 6)}
    assert ts.action_mask[1].all() and ts.obs[1, 2, 2, dg.SELF] == 1


def test_beams_stop_at_walls_and_at_the_first_agent(harvest):
    # Agent 0 at (3, 1) faces east; agents 1 and 2 stand in the centre lane, 1 in front of 2.
    s = state_of(harvest[0], [(3, 1), (3, 3), (3, 4)], [E, N, N])
    _, ts = step(harvest, s, [ZAP, STAY, STAY])
    np.testing.assert_array_equal(ts.extras["tagged_out"], [False, True, False])
    # Facing the west wall: nothing is hit, the cost is still paid.
    _, ts = step(
        harvest, state_of(harvest[0], [(3, 1), (3, 3), PARK], [W, N, N]), [ZAP, STAY, STAY]
    )
    np.testing.assert_array_equal(ts.reward, [-1.0, 0.0, 0.0])
    assert not ts.extras["tagged_out"].any()


def test_beams_are_drawn_in_the_next_observation_for_one_step(harvest):
    # Agent 0 at (3, 1) faces east and zaps with nobody in its lanes. The centre lane covers
    # (3, 2..6), stopped by the east wall; the side lanes start beside the agent: (2, 1..5) and
    # (4, 1..5). Agent 1 at (5, 3) faces north.
    s = state_of(harvest[0], [(3, 1), (5, 3), (1, 1)], [E, N, N])
    s, ts = step(harvest, s, [ZAP, STAY, STAY])
    covered = np.zeros((7, 8), bool)
    covered[3, 2:7] = covered[2, 1:6] = covered[4, 1:6] = True
    np.testing.assert_array_equal(np.asarray(s.beams), covered)
    np.testing.assert_array_equal(np.asarray(ts.global_state[..., 4]), covered)
    # Agent 1's window (radius 2, facing north): row i is map row 3 + i, column j map column
    # 1 + j. Row 3 holds beam cells 2..5 of it, row 4 cells 1..5, row 5 none.
    expected = np.zeros((5, 5), np.uint8)
    expected[0, 1:] = expected[1, :] = 1
    np.testing.assert_array_equal(np.asarray(ts.obs[1, :, :, dg.BEAM]), expected)
    # The beam lasts one step: after a step without beams the channel is empty again.
    s, ts = step(harvest, s, [STAY, STAY, STAY])
    assert not np.asarray(s.beams).any() and not np.asarray(ts.obs[..., dg.BEAM]).any()


# ---------------------------------------------------------------------------------- Harvest


def test_harvest_regrowth_probability_is_zero_without_nearby_apples(harvest):
    params = harvest[1].replace(regrowth_probs=jnp.array([0.0, 0.005, 0.02, 0.05]))
    none = jnp.zeros((7, 8), bool)
    assert float(jnp.max(harvest_regrowth_probability(none, params))) == 0.0
    one = none.at[3, 3].set(True)
    p = np.asarray(harvest_regrowth_probability(one, params))
    expected = np.zeros((7, 8), np.float32)
    expected[2:5, 2:5] = 0.005  # the 3x3 square: dr^2 + dc^2 <= 2
    np.testing.assert_allclose(p, expected)
    crowd = one.at[3, 4].set(True).at[3, 2].set(True).at[2, 3].set(True)
    assert float(harvest_regrowth_probability(crowd, params)[4, 3]) == pytest.approx(0.05)
    assert float(harvest_regrowth_probability(crowd, params)[1, 3]) == pytest.approx(0.005)


def test_harvest_apples_regrow_only_next_to_apples(harvest):
    env, params, _ = harvest
    interior = np.zeros(env.grid_shape, bool)
    interior[1:6, 1:7] = True
    certain = params.replace(
        regrowth_probs=jnp.array([0.0, 1.0, 1.0, 1.0]), apple_cells=jnp.asarray(interior)
    )
    agents = [(5, 1), (5, 6), (1, 6)]
    s, _ = step(harvest, state_of(env, agents, [N, N, N]), [STAY] * 3, params=certain)
    assert not s.apples.any()  # no apples: nothing ever regrows
    s, _ = step(
        harvest, state_of(env, agents, [N, N, N], apples=[(2, 2)]), [STAY] * 3, params=certain
    )
    expected = np.zeros(env.grid_shape, bool)
    expected[1:4, 1:4] = True
    np.testing.assert_array_equal(s.apples, expected)


# ---------------------------------------------------------------------------------- Cleanup


def test_cleanup_spawn_probabilities_fall_linearly_with_pollution(cleanup):
    params = cleanup[1].replace(
        apple_respawn_prob=jnp.float32(0.05), depletion_threshold=jnp.float32(0.4),
        restoration_threshold=jnp.float32(0.0), waste_spawn_prob=jnp.float32(0.5),
    )  # fmt: skip
    river = np.asarray(params.river)  # 6 river cells
    cells = list(zip(*np.nonzero(river)))
    for num_waste, apple, waste in (
        (0, 0.05, 0.5),
        (1, 0.05 * (0.4 - 1 / 6) / 0.4, 0.5),
        (3, 0.0, 0.0),
    ):
        grid = np.zeros_like(river)
        for r, c in cells[:num_waste]:
            grid[r, c] = True
        a, w = cleanup_spawn_probabilities(jnp.asarray(grid), params)
        assert float(a) == pytest.approx(apple, abs=1e-6) and float(w) == pytest.approx(waste)


def test_cleaning_the_river_restores_apple_growth(cleanup):
    env, params, _ = cleanup
    waste = np.asarray(params.initial_waste)  # (1, 1) and (2, 1): density 2/6 >= 0.3
    start = state_of(env, [(1, 4), (3, 4)], [W, N], waste=waste)
    s, ts = step(cleanup, start, [STAY, STAY])
    assert not s.apples.any()  # polluted: nothing grows
    np.testing.assert_array_equal(s.waste, waste)
    # Agent 0 cleans westwards: its centre lane reaches (1, 1), its left-side lane (2, 1).
    s, ts = step(cleanup, start, [CLEAN, STAY])
    assert not s.waste.any()
    assert s.beams[1, 1] and s.beams[2, 1]  # the cleaning beam is drawn too
    np.testing.assert_array_equal(s.apples, np.asarray(params.apple_cells))  # density 0 <= 0.2
    np.testing.assert_array_equal(ts.reward, [0.0, 0.0])  # cleaning is free (SSD)
    np.testing.assert_array_equal(ts.obs[0, :, :, dg.WASTE], 0)


def test_cleaning_beam_is_absorbed_by_the_first_waste_cell(cleanup):
    env, params, _ = cleanup
    waste = np.zeros(env.grid_shape, bool)
    waste[1, 1] = waste[1, 2] = True
    s, _ = step(cleanup, state_of(env, [(1, 4), (3, 4)], [W, N], waste=waste), [CLEAN, STAY])
    np.testing.assert_array_equal(np.argwhere(np.asarray(s.waste)), [(1, 1)])


def test_waste_appears_one_cell_per_step(cleanup):
    env, params, _ = cleanup
    always = params.replace(waste_spawn_prob=jnp.float32(1.0), depletion_threshold=jnp.float32(0.9))
    s = state_of(env, [(1, 4), (3, 4)], [N, N])
    for t in range(1, 4):
        s, _ = step(cleanup, s, [STAY, STAY], seed=t, params=always)
        assert (
            int(s.waste.sum()) == t and not (np.asarray(s.waste) & ~np.asarray(params.river)).any()
        )


def test_engine_move_conflicts_never_stack_agents():
    """Random joint moves of 5 agents in a small room never put two agents on one cell."""
    walls = np.ones((5, 5), bool)
    walls[1:4, 1:4] = False
    keys = jax.random.split(jax.random.PRNGKey(0), 64)

    def one(key):
        k_pos, k_or, k_act, k_move = jax.random.split(key, 4)
        cells = jax.random.permutation(k_pos, 9)[:5]
        pos = jnp.stack([1 + cells // 3, 1 + cells % 3], axis=-1).astype(jnp.int32)
        orient = jax.random.randint(k_or, (5,), 0, 4)
        actions = jax.random.randint(k_act, (5,), 0, 4)
        return eng.move_agents(k_move, pos, orient, jnp.ones(5, bool), actions, jnp.asarray(walls))

    new = np.asarray(jax.jit(jax.vmap(one))(keys))
    for p in new:
        assert len({tuple(x) for x in p}) == 5 and not walls[p[:, 0], p[:, 1]].any()
    # A cycle of four agents, each moving into the next one's cell, turns as a whole.
    pos = jnp.array([(1, 1), (1, 2), (2, 2), (2, 1)], jnp.int32)
    orient = jnp.array([E, S, W, N], jnp.int32)
    moved = eng.move_agents(
        jax.random.PRNGKey(0), pos, orient, jnp.ones(4, bool), jnp.zeros(4, jnp.int32),
        jnp.asarray(walls),
    )  # fmt: skip
    np.testing.assert_array_equal(moved, [(1, 2), (2, 2), (2, 1), (1, 1)])


def test_check_env_cleanup_small():
    """The conformance kit on the id that uses every part of the engine (Harvest has no cleaning).

    `tests/test_conformance.py` runs it on every registered id once `marljax.envs` imports the
    social family.
    """
    env, params = marljax.make("social/cleanup_small-v0")
    check_env(env, params, num_steps=6, num_envs=2)


def test_validate_params_names_impossible_values():
    env, params = marljax.make("social/cleanup_small-v0")
    env.validate_params(params)  # the defaults are fine
    for override, message in (
        ({"beam_length": 9}, "beam_length must lie in"),
        ({"waste_spawn_prob": 1.5}, "waste_spawn_prob must lie in"),
        ({"restoration_threshold": 0.5}, "restoration_threshold must be below"),
        ({"tag_timeout": -1}, "tag_timeout must be >= 0"),
    ):
        with pytest.raises(ValueError, match=message):
            env.validate_params(marljax.make("social/cleanup_small-v0", **override)[1])
    env, params = marljax.make("social/harvest_small-v0")
    with pytest.raises(ValueError, match="regrowth_probs must lie in"):
        env.validate_params(params.replace(regrowth_probs=jnp.array([0.0, 0.1, 0.2, 2.0])))
    with pytest.raises(ValueError, match="spawn has 0 cells for 3 agents"):
        env.validate_params(params.replace(spawn=jnp.zeros_like(params.spawn)))


# ---------------------------------------------------------------------------- fast engine parts


def test_packed_windows_equal_the_gathered_views():
    """`egocentric_windows` on bit-packed planes = `egocentric_views` on the stacked planes."""
    rng = np.random.default_rng(0)
    planes = rng.random((7, 6, 9)) < 0.4  # 7 random channels on a 6 x 9 map
    pos = jnp.asarray([(0, 0), (5, 8), (2, 4), (3, 1), (1, 7), (4, 4), (0, 5), (5, 0)], jnp.int32)
    orient = jnp.asarray([N, E, S, W, N, E, S, W], jnp.int32)  # every orientation, map corners
    outside = np.array([1, 0, 0, 0, 0, 0, 1], np.uint8)
    gathered = eng.egocentric_views(
        jnp.asarray(planes.transpose(1, 2, 0), jnp.uint8), pos, orient, eng.view_offsets(3),
        jnp.asarray(outside),
    )  # fmt: skip
    codes = eng.pack_planes([jnp.asarray(p) for p in planes])
    windows = eng.egocentric_windows(codes, pos, orient, 3, outside=0b1000001)
    np.testing.assert_array_equal(eng.unpack_bits(windows, 7), gathered)
    with pytest.raises(ValueError, match="1 to 8 planes"):
        eng.pack_planes([jnp.zeros((2, 2), bool)] * 9)


def test_cell_uniform_is_uniform_independent_and_keyed():
    keys = jax.random.split(jax.random.PRNGKey(0), 256)
    u = np.asarray(jax.vmap(lambda k: eng.cell_uniform(k, (16, 38)))(keys))  # 155,648 draws
    assert u.dtype == np.float32 and u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.003 and abs(u.var() - 1 / 12) < 0.002
    for p in (0.005, 0.05):  # the regrowth-sized Bernoulli rates come out right (~6 sigma)
        assert abs((u < p).mean() - p) < 6 * np.sqrt(p * (1 - p) / u.size)
    flat = u.reshape(256, -1)
    for a, b in ((flat[:, :-1], flat[:, 1:]), (flat[:-1], flat[1:])):  # neighbours, keys
        assert abs(np.corrcoef(a.ravel(), b.ravel())[0, 1]) < 0.01
    again = eng.cell_uniform(keys[3], (16, 38))
    np.testing.assert_array_equal(again, u[3])
    assert len(np.unique(flat, axis=0)) == 256


def test_first_argmax_matches_argmax_with_ties():
    x = jnp.asarray([0.3, 0.9, -1.0, 0.9, 0.1])
    assert int(eng.first_argmax(x)) == int(jnp.argmax(x)) == 1
    assert int(eng.first_argmax(jnp.full((4,), -1.0))) == 0
