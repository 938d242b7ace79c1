"""Lifelong and one-shot multi-agent pathfinding: hand-built states, collision rule, metrics."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
import marljax.envs.grid.pathfinding  # noqa: F401  (registers the grid/*mapf* ids)
from marljax.envs.grid import maps
from marljax.envs.grid.pathfinding import Pathfinding, resolve_moves
from marljax.testing import check_env

STAY, UP, DOWN, LEFT, RIGHT = range(5)
MOVES = [(0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)]


def soft_reference(obstacles, positions, actions, active):
    """POGEMA 1.4's `move_agents` for collision_system="soft", transcribed line by line.

    Cells outside the grid count as obstacles (POGEMA pads the map with obstacles).
    """
    h, w = obstacles.shape
    positions = [tuple(int(v) for v in p) for p in positions]
    actions = [int(a) for a in actions]

    def has_obstacle(x, y):
        return not (0 <= x < h and 0 <= y < w) or bool(obstacles[x, y])

    def revert(agent_idx, used_cells, cell):
        actions[agent_idx] = 0
        used_cells[cell].remove(agent_idx)
        new_cell = positions[agent_idx]
        if new_cell in used_cells and len(used_cells[new_cell]) > 0:
            used_cells[new_cell].append(agent_idx)
            return revert(used_cells[new_cell][0], used_cells, new_cell)
        used_cells.setdefault(new_cell, []).append(agent_idx)
        return used_cells

    used_cells, used_edges = {}, {}
    for i, (x, y) in enumerate(positions):
        if active[i]:
            dx, dy = MOVES[actions[i]]
            used_cells.setdefault((x + dx, y + dy), []).append(i)
            used_edges[x, y, x + dx, y + dy] = [i]
            if dx != 0 or dy != 0:
                used_edges.setdefault((x + dx, y + dy, x, y), []).append(i)
    for i, (x, y) in enumerate(positions):
        if active[i]:
            dx, dy = MOVES[actions[i]]
            if len(used_edges[x, y, x + dx, y + dy]) > 1:
                used_cells[x + dx, y + dy].remove(i)
                used_cells.setdefault((x, y), []).append(i)
                actions[i] = 0
    for i in reversed(range(len(positions))):
        x, y = positions[i]
        if active[i]:
            dx, dy = MOVES[actions[i]]
            if len(used_cells[x + dx, y + dy]) > 1 or has_obstacle(x + dx, y + dy):
                used_cells = revert(i, used_cells, (x + dx, y + dy))
    out = []
    for i, (x, y) in enumerate(positions):
        dx, dy = MOVES[actions[i]] if active[i] else (0, 0)
        out.append((x + dx, y + dy))
    return np.array(out)


@pytest.fixture(scope="module")
def resolve():
    return jax.jit(resolve_moves)


def _move(resolve, text, positions, actions, active=None):
    obstacles = maps.parse_map(text)
    positions = jnp.asarray(positions, jnp.int32)
    active = jnp.ones(len(actions), bool) if active is None else jnp.asarray(active)
    return np.asarray(resolve(obstacles, positions, jnp.asarray(actions, jnp.int32), active))


# --------------------------------------------------------------------------------------------
# Collision rule on hand-built states.
# --------------------------------------------------------------------------------------------

ROOM = """
.....
.....
..#..
.....
"""


def test_vertex_conflict_smallest_index_moves(resolve):
    out = _move(resolve, ROOM, [[0, 0], [0, 2], [3, 3]], [RIGHT, LEFT, STAY])
    np.testing.assert_array_equal(out, [[0, 1], [0, 2], [3, 3]])


def test_swap_is_blocked_both_stay(resolve):
    out = _move(resolve, ROOM, [[1, 0], [1, 1], [3, 0]], [RIGHT, LEFT, UP])
    np.testing.assert_array_equal(out, [[1, 0], [1, 1], [2, 0]])


def test_train_follows_and_cycle_rotates(resolve):
    # 0 -> 1's cell, 1 -> 2's cell, 2 -> free: the whole train moves.
    out = _move(resolve, ROOM, [[0, 0], [0, 1], [0, 2]], [RIGHT, RIGHT, RIGHT])
    np.testing.assert_array_equal(out, [[0, 1], [0, 2], [0, 3]])
    # Four agents rotating around a 2x2 block: allowed (no swap, no shared cell).
    out = _move(resolve, ROOM, [[0, 0], [0, 1], [1, 1], [1, 0]], [RIGHT, DOWN, LEFT, UP])
    np.testing.assert_array_equal(out, [[0, 1], [1, 1], [1, 0], [0, 0]])


def test_blocked_move_cascades_down_a_chain(resolve):
    # Agent 2 walks into the obstacle at (2, 2) and stays; 1 wanted its cell, 0 wanted 1's cell.
    out = _move(resolve, ROOM, [[0, 2], [1, 2], [3, 4]], [DOWN, DOWN, STAY])
    np.testing.assert_array_equal(out, [[0, 2], [1, 2], [3, 4]])
    out = _move(resolve, ROOM, [[1, 0], [1, 1], [1, 2]], [RIGHT, RIGHT, DOWN])
    np.testing.assert_array_equal(out, [[1, 0], [1, 1], [1, 2]])


def test_walls_and_grid_edges_block(resolve):
    out = _move(resolve, ROOM, [[0, 0], [3, 4], [1, 2]], [UP, RIGHT, DOWN])
    np.testing.assert_array_equal(out, [[0, 0], [3, 4], [1, 2]])


def test_inactive_agents_neither_move_nor_block(resolve):
    out = _move(resolve, ROOM, [[0, 0], [0, 1]], [RIGHT, RIGHT], active=[True, False])
    np.testing.assert_array_equal(out, [[0, 1], [0, 1]])


def test_random_joint_moves_match_pogema_soft_rule_and_never_collide(resolve):
    rng = np.random.default_rng(0)
    h, w, num_agents, cases = 5, 5, 8, 300
    batched = jax.jit(jax.vmap(resolve_moves))
    obstacles = rng.uniform(size=(cases, h, w)) < 0.2
    positions = np.zeros((cases, num_agents, 2), np.int32)
    for c in range(cases):
        cells = rng.choice(h * w, num_agents, replace=False)
        positions[c] = np.stack([cells // w, cells % w], -1)
        obstacles[c][positions[c, :, 0], positions[c, :, 1]] = False
    actions = rng.integers(0, 5, (cases, num_agents)).astype(np.int32)
    active = rng.uniform(size=(cases, num_agents)) < 0.85
    out = np.asarray(batched(obstacles, positions, actions, active))
    for c in range(cases):
        expected = soft_reference(obstacles[c], positions[c], actions[c], active[c])
        np.testing.assert_array_equal(out[c], expected, err_msg=f"case {c}")
        act = out[c][active[c]]
        assert len({tuple(p) for p in act}) == len(act), "two active agents share a cell"
        before = positions[c][active[c]]
        for i in range(len(act)):
            for j in range(len(act)):
                swapped = tuple(act[i]) == tuple(before[j]) and tuple(act[j]) == tuple(before[i])
                assert i == j or not swapped, "two agents swapped cells"
        assert not obstacles[c][act[:, 0], act[:, 1]].any()


# --------------------------------------------------------------------------------------------
# The "priority" and "block_both" rules (POGEMA 1.4's other collision systems).
# --------------------------------------------------------------------------------------------


def priority_reference(obstacles, positions, actions, active):
    """POGEMA's "priority" rule as its documented sequential loop: agents move one at a time in
    index order, each only into a cell that holds no obstacle and no agent at its turn."""
    h, w = obstacles.shape
    pos = [tuple(int(v) for v in p) for p in positions]
    taken = {pos[i] for i in range(len(pos)) if active[i]}
    for i in range(len(pos)):
        if not active[i]:
            continue
        dr, dc = MOVES[int(actions[i])]
        r, c = pos[i][0] + dr, pos[i][1] + dc
        if 0 <= r < h and 0 <= c < w and not obstacles[r, c] and (r, c) not in taken:
            taken.remove(pos[i])
            taken.add((r, c))
            pos[i] = (r, c)
    return np.array(pos)


def block_both_reference(obstacles, positions, actions, active):
    """POGEMA's "block_both" rule: a marking pass (start cells and doubly targeted cells are
    blocked), then agents move in index order into unblocked free cells."""
    h, w = obstacles.shape
    pos = [tuple(int(v) for v in p) for p in positions]
    marks = {}
    for i in range(len(pos)):
        if active[i]:
            dr, dc = MOVES[int(actions[i])]
            t = (pos[i][0] + dr, pos[i][1] + dc)
            marks[t] = "blocked" if t in marks else "visited"
            marks[pos[i]] = "blocked"
    taken = {pos[i] for i in range(len(pos)) if active[i]}
    out = list(pos)
    for i in range(len(pos)):
        if not active[i]:
            continue
        dr, dc = MOVES[int(actions[i])]
        r, c = pos[i][0] + dr, pos[i][1] + dc
        free = 0 <= r < h and 0 <= c < w and not obstacles[r, c] and (r, c) not in taken
        if marks.get((r, c)) != "blocked" and free:
            taken.remove(pos[i])
            taken.add((r, c))
            out[i] = (r, c)
    return np.array(out)


@pytest.fixture(scope="module")
def resolve_rule():
    return {
        rule: jax.jit(lambda o, p, a, m, rule=rule: resolve_moves(o, p, a, m, rule))
        for rule in ("priority", "block_both")
    }


def test_priority_lower_index_wins_and_followers_only_behind_lower_indices(resolve_rule):
    resolve = resolve_rule["priority"]
    # Vertex conflict on (0, 1): agent 0 moves first and takes it; agent 1 stays.
    out = _move(resolve, ROOM, [[0, 2], [0, 0]], [LEFT, RIGHT])
    np.testing.assert_array_equal(out, [[0, 1], [0, 0]])
    # A train led by the lowest index moves as a whole (each follower enters a vacated cell)...
    out = _move(resolve, ROOM, [[0, 2], [0, 1], [0, 0]], [RIGHT, RIGHT, RIGHT])
    np.testing.assert_array_equal(out, [[0, 3], [0, 2], [0, 1]])
    # ...led by the highest index, only the leader moves (its followers move before it).
    out = _move(resolve, ROOM, [[0, 0], [0, 1], [0, 2]], [RIGHT, RIGHT, RIGHT])
    np.testing.assert_array_equal(out, [[0, 0], [0, 1], [0, 3]])


def test_priority_blocks_swaps_cycles_walls_and_ignores_inactive(resolve_rule):
    resolve = resolve_rule["priority"]
    out = _move(resolve, ROOM, [[1, 0], [1, 1], [3, 0]], [RIGHT, LEFT, UP])
    np.testing.assert_array_equal(out, [[1, 0], [1, 1], [2, 0]])
    out = _move(resolve, ROOM, [[0, 0], [0, 1], [1, 1], [1, 0]], [RIGHT, DOWN, LEFT, UP])
    np.testing.assert_array_equal(out, [[0, 0], [0, 1], [1, 1], [1, 0]])
    out = _move(resolve, ROOM, [[0, 0], [3, 4], [1, 2]], [UP, RIGHT, DOWN])
    np.testing.assert_array_equal(out, [[0, 0], [3, 4], [1, 2]])
    out = _move(resolve, ROOM, [[0, 0], [0, 1]], [RIGHT, RIGHT], active=[True, False])
    np.testing.assert_array_equal(out, [[0, 1], [0, 1]])


def test_block_both_nobody_follows_and_every_contender_stays(resolve_rule):
    resolve = resolve_rule["block_both"]
    out = _move(resolve, ROOM, [[0, 0], [0, 2], [3, 3]], [RIGHT, LEFT, STAY])
    np.testing.assert_array_equal(out, [[0, 0], [0, 2], [3, 3]])
    out = _move(resolve, ROOM, [[0, 2], [0, 1], [0, 0]], [RIGHT, RIGHT, RIGHT])
    np.testing.assert_array_equal(out, [[0, 3], [0, 1], [0, 0]])
    out = _move(resolve, ROOM, [[1, 0], [1, 1], [3, 0]], [RIGHT, LEFT, UP])
    np.testing.assert_array_equal(out, [[1, 0], [1, 1], [2, 0]])
    # A move into the obstacle still claims nothing: agent 1 moves into the free (1, 3).
    out = _move(resolve, ROOM, [[1, 2], [0, 3]], [DOWN, DOWN])
    np.testing.assert_array_equal(out, [[1, 2], [1, 3]])
    out = _move(resolve, ROOM, [[0, 0], [0, 1]], [RIGHT, RIGHT], active=[True, False])
    np.testing.assert_array_equal(out, [[0, 1], [0, 1]])


@pytest.mark.parametrize(
    "rule,reference", [("priority", priority_reference), ("block_both", block_both_reference)]
)
def test_random_joint_moves_match_reference_and_never_collide(rule, reference):
    rng = np.random.default_rng(1)
    h, w, num_agents, cases = 5, 5, 10, 300
    batched = jax.jit(jax.vmap(lambda o, p, a, m: resolve_moves(o, p, a, m, rule)))
    obstacles = rng.uniform(size=(cases, h, w)) < 0.15
    positions = np.zeros((cases, num_agents, 2), np.int32)
    for c in range(cases):
        cells = rng.choice(h * w, num_agents, replace=False)
        positions[c] = np.stack([cells // w, cells % w], -1)
        obstacles[c][positions[c, :, 0], positions[c, :, 1]] = False
    actions = rng.integers(0, 5, (cases, num_agents)).astype(np.int32)
    active = rng.uniform(size=(cases, num_agents)) < 0.85
    out = np.asarray(batched(obstacles, positions, actions, active))
    moved = 0
    for c in range(cases):
        expected = reference(obstacles[c], positions[c], actions[c], active[c])
        np.testing.assert_array_equal(out[c], expected, err_msg=f"{rule} case {c}")
        act, before = out[c][active[c]], positions[c][active[c]]
        assert len({tuple(p) for p in act}) == len(act), "two active agents share a cell"
        for i in range(len(act)):
            for j in range(i + 1, len(act)):
                assert not (
                    tuple(act[i]) == tuple(before[j]) and tuple(act[j]) == tuple(before[i])
                ), "two agents swapped cells"
        assert not obstacles[c][act[:, 0], act[:, 1]].any()
        moved += int(np.any(act != before, axis=-1).sum())
    assert moved > cases, "the random cases exercise moves, not only blocked agents"


def test_env_step_uses_the_static_collision_rule(lifelong):
    # Two-agent trains on the corridor's free top row, led by agent 1 and then by agent 0:
    # soft moves both every time, priority lets a follower enter only behind a lower index,
    # block_both never lets anyone follow.
    base, params, init, soft_step = lifelong
    obstacles = maps.parse_map(CORRIDOR)
    steps = {"soft": soft_step}
    for rule in ("priority", "block_both"):
        env = Pathfinding(height=3, width=5, num_agents=2, obs_radius=2, collision=rule)
        steps[rule] = jax.jit(env.step)
    goals = jnp.array([[2, 0], [2, 4]])
    moved = {}
    for rule, step in steps.items():
        cols = []
        for starts in ([[0, 0], [0, 1]], [[0, 1], [0, 0]]):
            state, _ = init(obstacles, jnp.array(starts), goals, params)
            state, _ = step(jax.random.PRNGKey(0), state, jnp.array([RIGHT, RIGHT]), params)
            cols.append(np.asarray(state.positions)[:, 1].tolist())
        moved[rule] = cols
    assert moved == {
        "soft": [[1, 2], [2, 1]],
        "priority": [[0, 2], [2, 1]],
        "block_both": [[0, 2], [2, 0]],
    }


# --------------------------------------------------------------------------------------------
# Episodes: goal re-assignment, one-shot arrival, observations, metrics.
# --------------------------------------------------------------------------------------------

CORRIDOR = """
.....
.###.
.....
"""


@pytest.fixture(scope="module")
def lifelong():
    env = Pathfinding(height=3, width=5, num_agents=2, obs_radius=2, lifelong=True)
    params = env.default_params().replace(max_steps=10)
    return env, params, jax.jit(env.init_state), jax.jit(env.step)


@pytest.fixture(scope="module")
def oneshot():
    env = Pathfinding(height=3, width=5, num_agents=2, obs_radius=2, lifelong=False)
    params = env.default_params().replace(max_steps=10)
    return env, params, jax.jit(env.init_state), jax.jit(env.step)


def test_lifelong_goal_reassignment_on_arrival(lifelong):
    env, params, init, step = lifelong
    obstacles = maps.parse_map(CORRIDOR)
    state, ts = init(obstacles, jnp.array([[0, 0], [2, 4]]), jnp.array([[0, 1], [0, 4]]), params)
    assert float(ts.extras["throughput"]) == 0.0
    for i in range(20):
        key = jax.random.PRNGKey(i)
        s1, ts1 = step(key, state, jnp.array([RIGHT, STAY]), params)
        np.testing.assert_array_equal(s1.positions, [[0, 1], [2, 4]])
        np.testing.assert_array_equal(ts1.reward, [1.0, 0.0])
        new_goal = tuple(np.asarray(s1.goals[0]))
        assert new_goal != (0, 1) and not bool(obstacles[new_goal]), "a new free goal elsewhere"
        np.testing.assert_array_equal(s1.goals[1], [0, 4])  # agent 1 keeps its goal
    assert int(ts1.extras["goals_reached"]) == 1 and int(s1.goals_reached) == 1
    assert float(ts1.extras["throughput"]) == 1.0
    assert not bool(ts1.terminated) and not bool(ts1.truncated)
    # Walk agent 1 up the right column to (0, 4): its second step reaches the goal.
    s2, ts2 = step(key, s1, jnp.array([STAY, UP]), params)
    s3, ts3 = step(key, s2, jnp.array([STAY, UP]), params)
    assert float(ts2.reward[1]) == 0.0 and float(ts3.reward[1]) == 1.0
    assert int(s3.goals_reached) >= 2
    assert float(ts3.extras["throughput"]) == pytest.approx(int(s3.goals_reached) / 3)


def test_lifelong_new_goals_stay_in_the_agents_component(lifelong):
    env, params, init, step = lifelong
    # Column 2 is a wall: the left 3x2 block and the right 3x2 block are separate components.
    obstacles = maps.parse_map("..#..\n..#..\n..#..")
    state, _ = init(obstacles, jnp.array([[0, 0], [0, 4]]), jnp.array([[0, 1], [1, 4]]), params)
    keys = jax.random.split(jax.random.PRNGKey(0), 1000)
    s1, ts1 = jax.vmap(step, in_axes=(0, None, None, None))(
        keys, state, jnp.array([RIGHT, DOWN]), params
    )
    assert np.all(np.asarray(ts1.reward) == 1.0)
    goals = np.asarray(s1.goals)
    assert np.all(goals[:, 0, 1] < 2) and np.all(goals[:, 1, 1] > 2)
    # Uniform over the 5 other cells of agent 0's 6-cell component, never its own cell (0, 1).
    flat = goals[:, 0, 0] * 5 + goals[:, 0, 1]
    counts = np.bincount(flat, minlength=15)
    assert counts[1] == 0
    others = counts[[0, 5, 6, 10, 11]]
    assert others.sum() == 1000 and others.min() > 150 and others.max() < 250, counts


def test_oneshot_agents_disappear_and_episode_terminates(oneshot):
    env, params, init, step = oneshot
    obstacles = maps.parse_map(CORRIDOR)
    # Agent 0 arrives at (0, 1) in one step; agent 1 then walks through that cell to (0, 0).
    state, _ = init(obstacles, jnp.array([[0, 0], [0, 3]]), jnp.array([[0, 1], [0, 0]]), params)
    state, ts = step(jax.random.PRNGKey(0), state, jnp.array([RIGHT, LEFT]), params)
    np.testing.assert_array_equal(ts.reward, [1.0, 0.0])
    np.testing.assert_array_equal(state.active, [False, True])
    assert float(ts.extras["isr"]) == 0.5 and float(ts.extras["csr"]) == 0.0
    assert float(ts.obs[1, 1].sum()) == 1.0, "the arrived agent is gone from others' view"
    state, ts = step(jax.random.PRNGKey(1), state, jnp.array([DOWN, LEFT]), params)
    np.testing.assert_array_equal(state.positions, [[0, 1], [0, 1]])  # 1 walks into 0's cell
    np.testing.assert_array_equal(ts.reward, [0.0, 0.0])  # an arrived agent earns nothing
    assert not bool(ts.terminated)
    state, ts = step(jax.random.PRNGKey(2), state, jnp.array([STAY, LEFT]), params)
    np.testing.assert_array_equal(ts.reward, [0.0, 1.0])
    assert bool(ts.terminated) and not bool(ts.truncated)
    assert float(ts.extras["isr"]) == 1.0 and float(ts.extras["csr"]) == 1.0
    assert int(ts.extras["sum_of_costs"]) == 1 + 3 and int(ts.extras["makespan"]) == 3


def test_oneshot_truncation_and_costs_of_unfinished_agents(oneshot):
    env, _, init, step = oneshot
    params = env.default_params().replace(max_steps=2)
    obstacles = maps.parse_map(CORRIDOR)
    state, _ = init(obstacles, jnp.array([[0, 0], [2, 0]]), jnp.array([[0, 1], [2, 4]]), params)
    state, ts = step(jax.random.PRNGKey(0), state, jnp.array([RIGHT, STAY]), params)
    assert not bool(ts.truncated)
    state, ts = step(jax.random.PRNGKey(0), state, jnp.array([STAY, STAY]), params)
    assert bool(ts.truncated) and not bool(ts.terminated)
    assert int(ts.extras["sum_of_costs"]) == 1 + 2  # unfinished agent costs the episode length
    assert float(ts.extras["isr"]) == 0.5 and float(ts.extras["csr"]) == 0.0


def test_observation_channels_hand_computed(lifelong):
    env, params, init, _ = lifelong
    obstacles = maps.parse_map(CORRIDOR)
    _, ts = init(obstacles, jnp.array([[0, 0], [0, 2]]), jnp.array([[2, 4], [0, 1]]), params)
    obs = np.asarray(ts.obs)
    assert obs.shape == (2, 3, 5, 5) and obs.dtype == np.float32
    # Agent 0 at (0, 0), radius 2: rows -2..2, cols -2..2. As in POGEMA, the ring just outside
    # the grid reads as obstacles and cells further out read 0.
    np.testing.assert_array_equal(
        obs[0, 0],
        [[0, 0, 0, 0, 0], [0, 1, 1, 1, 1], [0, 1, 0, 0, 0], [0, 1, 0, 1, 1], [0, 1, 0, 0, 0]],
    )
    expected_agents = np.zeros((5, 5))
    expected_agents[2, 2] = expected_agents[2, 4] = 1  # itself and agent 1 two cells right
    np.testing.assert_array_equal(obs[0, 1], expected_agents)
    # Goal (2, 4) is offset (+2, +4): projected to (+2, +2), the window's corner.
    expected_goal = np.zeros((5, 5))
    expected_goal[4, 4] = 1
    np.testing.assert_array_equal(obs[0, 2], expected_goal)
    expected_goal = np.zeros((5, 5))
    expected_goal[2, 1] = 1  # agent 1's goal is one cell left
    np.testing.assert_array_equal(obs[1, 2], expected_goal)
    gs = np.asarray(ts.global_state).reshape(3, 3, 5)
    np.testing.assert_array_equal(gs[0], np.asarray(obstacles, np.float32))
    assert gs[1].sum() == 2 and gs[1][0, 0] == 1 and gs[2][2, 4] == 1


def test_distance_channel():
    env = Pathfinding(height=3, width=5, num_agents=1, obs_radius=1, distance_obs=True)
    params = env.default_params()
    _, ts = env.init_state(
        maps.parse_map(CORRIDOR), jnp.array([[2, 0]]), jnp.array([[0, 0]]), params
    )
    obs = np.asarray(ts.obs)
    assert obs.shape == (1, 4, 3, 3)
    cells = 15
    # Centre (2, 0) is 2 moves from the goal; (1, 0) is 1; outside and walls read 1.
    np.testing.assert_allclose(
        obs[0, 3], [[1, 1 / cells, 1], [1, 2 / cells, 3 / cells], [1, 1, 1]], rtol=1e-6
    )


# --------------------------------------------------------------------------------------------
# Registry, conformance and bad input.
# --------------------------------------------------------------------------------------------


def test_registered_ids():
    ids = set(marljax.registered_envs())
    assert {"grid/lmapf-v0", "grid/lmapf_maze-v0", "grid/mapf-v0"} <= ids


def test_check_env():
    # One small lifelong maze here (the cross-family test in test_conformance.py runs every
    # registered id, one-shot included, once `marljax.envs` imports the grid family).
    env, params = marljax.make("grid/lmapf_maze-v0", height=9, width=9, num_agents=3, obs_radius=2)
    check_env(env, params, num_steps=6, num_envs=2)


def test_reset_is_a_fresh_valid_map_per_key():
    env, params = marljax.make("grid/lmapf-v0", height=8, width=8, num_agents=4)
    states, _ = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(
        jax.random.split(jax.random.PRNGKey(0), 8), params
    )
    obst = np.asarray(states.obstacles)
    assert len({o.tobytes() for o in obst}) == 8
    pos = np.asarray(states.positions)
    assert not obst[np.arange(8)[:, None], pos[..., 0], pos[..., 1]].any()


@pytest.mark.parametrize(
    "overrides,match",
    [
        ({"density": 1.0}, "leaves no free cells"),
        ({"density": 0.97}, "free cells"),
        ({"num_agents": 200}, "distinct free cells"),
        ({"obs_radius": 16}, "larger than the 16x16 grid"),
        ({"map_type": "caves"}, "unknown map_type"),
        ({"collision": "hard"}, "unknown collision rule"),
        ({"max_steps": 0}, "max_steps"),
    ],
)
def test_bad_input_fails_at_make(overrides, match):
    with pytest.raises(ValueError, match=match):
        marljax.make("grid/lmapf-v0", **overrides)
