"""The jittable grid planner and map generation against pure-Python brute force."""

from __future__ import annotations

import collections

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from marljax.envs.grid import maps, planner

H, W, K = 7, 9, 3
NUM_GRIDS = 24


# --------------------------------------------------------------------------------------------
# Brute-force references (pure Python).
# --------------------------------------------------------------------------------------------


def bfs_reference(free: np.ndarray, source: tuple[int, int]) -> np.ndarray:
    """Textbook queue BFS; unreachable cells get H * W."""
    h, w = free.shape
    dist = np.full((h, w), h * w, np.int64)
    if not free[source]:
        return dist
    dist[source] = 0
    queue = collections.deque([source])
    while queue:
        r, c = queue.popleft()
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            nr, nc = r + dr, c + dc
            if 0 <= nr < h and 0 <= nc < w and free[nr, nc] and dist[nr, nc] == h * w:
                dist[nr, nc] = dist[r, c] + 1
                queue.append((nr, nc))
    return dist


def components_reference(free: np.ndarray) -> np.ndarray:
    """Flood fill; each component labelled by its smallest flat index, H * W on obstacles."""
    h, w = free.shape
    labels = np.full((h, w), h * w, np.int64)
    for start in range(h * w):
        r, c = divmod(start, w)
        if free[r, c] and labels[r, c] == h * w:
            labels[bfs_reference(free, (r, c)) < h * w] = start
    return labels


@pytest.fixture(scope="module")
def grids():
    rng = np.random.default_rng(0)
    density = rng.uniform(0.0, 0.5, size=(NUM_GRIDS, 1, 1))
    free = rng.uniform(size=(NUM_GRIDS, H, W)) >= density
    sources = np.stack([rng.integers(0, H, (NUM_GRIDS, K)), rng.integers(0, W, (NUM_GRIDS, K))], -1)
    return free, sources.astype(np.int32)


@pytest.fixture(scope="module")
def planned(grids):
    free, sources = grids
    fn = jax.jit(
        jax.vmap(lambda f, s: (planner.distance_maps(f, s), planner.connected_components(f)))
    )
    dist, labels = fn(jnp.asarray(free), jnp.asarray(sources))
    return np.asarray(dist), np.asarray(labels)


# --------------------------------------------------------------------------------------------
# Planner vs brute force.
# --------------------------------------------------------------------------------------------


def test_distance_maps_match_brute_force_bfs(grids, planned):
    free, sources = grids
    dist, _ = planned
    assert dist.shape == (NUM_GRIDS, K, H, W) and dist.dtype == np.int32
    for g in range(NUM_GRIDS):
        for k in range(K):
            expected = bfs_reference(free[g], tuple(sources[g, k]))
            np.testing.assert_array_equal(dist[g, k], expected, err_msg=f"grid {g} source {k}")


def test_connected_components_match_flood_fill(grids, planned):
    free, _ = grids
    _, labels = planned
    for g in range(NUM_GRIDS):
        np.testing.assert_array_equal(labels[g], components_reference(free[g]), err_msg=f"grid {g}")


def test_distance_maps_unjitted_hand_computed():
    free = np.array([[1, 1, 1], [0, 0, 1], [1, 1, 1]], bool)
    dist = planner.distance_maps(jnp.asarray(free), jnp.array([[0, 0], [1, 0]]))
    inf = planner.unreachable(3, 3)
    np.testing.assert_array_equal(dist[0], [[0, 1, 2], [inf, inf, 3], [6, 5, 4]])
    assert np.all(np.asarray(dist[1]) == inf)  # a source on an obstacle reaches nothing
    np.testing.assert_array_equal(
        planner.path_lengths(jnp.asarray(free), jnp.array([[2, 0]]), jnp.array([[0, 0]])), [6]
    )


def test_largest_component():
    free = np.array([[1, 0, 1, 1], [1, 0, 1, 1], [0, 0, 0, 1]], bool)
    mask, size = planner.largest_component(jnp.asarray(free))
    assert int(size) == 5
    np.testing.assert_array_equal(mask, [[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 1]])


def test_greedy_actions_follow_a_shortest_path(grids, planned):
    free, sources = grids
    dist, _ = planned
    step = jax.jit(lambda d, p, k: planner.greedy_actions(d, p, k))
    moves = planner.MOVES
    key = jax.random.PRNGKey(0)
    checked = 0
    for g in range(6):
        goal = tuple(sources[g, 0])
        reach = np.argwhere(dist[g, 0] < H * W)
        if len(reach) < 2:
            continue
        pos = reach[-1]
        length = int(dist[g, 0][tuple(pos)])
        for i in range(length):
            a = int(
                step(jnp.asarray(dist[g, :1]), jnp.asarray(pos[None]), jax.random.fold_in(key, i))[
                    0
                ]
            )
            pos = pos + moves[a]
            assert free[g][tuple(pos)]
        assert tuple(pos) == goal, f"grid {g}: greedy walk of {length} steps did not reach the goal"
        a = int(step(jnp.asarray(dist[g, :1]), jnp.asarray(pos[None]), key)[0])
        assert a == 0  # at the goal: stay
        checked += 1
    assert checked >= 3


def test_planner_policy_yields_to_stayers_swaps_and_lower_index():
    # Corridor: agents 0 and 1 both want cell (0, 2); agent 2 follows agent 0, who moves away.
    free = jnp.ones((1, 5), bool)
    positions = jnp.array([[0, 1], [0, 3], [0, 0]])
    goals = jnp.array([[0, 2], [0, 2], [0, 4]])
    policy = jax.jit(planner.planner_policy)
    key = jax.random.PRNGKey(0)
    acts = policy(free, positions, goals, key, jnp.ones(3, bool), 0.0)
    # 0 moves right (smallest index), 1 yields (0 claimed the cell), 2 follows 0.
    np.testing.assert_array_equal(acts, [4, 0, 4])
    acts = policy(free, positions, goals, key, jnp.array([False, True, True]), 0.0)
    np.testing.assert_array_equal(acts, [0, 3, 4])  # agent 0 is gone: nobody yields to it
    # Agent 1 sits on its goal (stays): agent 0 yields. Agents 1 and 2 would swap: both yield.
    positions = jnp.array([[0, 0], [0, 1], [0, 2]])
    acts = policy(free, positions, jnp.array([[0, 4], [0, 1], [0, 1]]), key, jnp.ones(3, bool), 0.0)
    np.testing.assert_array_equal(acts, [0, 0, 0])
    acts = policy(free, positions, jnp.array([[0, 0], [0, 2], [0, 1]]), key, jnp.ones(3, bool), 0.0)
    np.testing.assert_array_equal(acts, [0, 0, 0])


# --------------------------------------------------------------------------------------------
# Map generation: every goal reachable, cells distinct and free.
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("map_type,density", [("random", 0.35), ("maze", 0.8)])
def test_generated_maps_keep_every_goal_reachable(map_type, density):
    num_agents, num_maps, h, w = 6, 16, 9, 11
    gen = jax.jit(
        jax.vmap(lambda k: maps.generate(k, h, w, num_agents, jnp.float32(density), map_type))
    )
    layout = jax.tree.map(np.asarray, gen(jax.random.split(jax.random.PRNGKey(3), num_maps)))
    lengths = jax.jit(jax.vmap(planner.path_lengths))(
        ~layout.obstacles, layout.starts, layout.goals
    )
    assert np.all(np.asarray(lengths) < h * w), "the planner finds a path to every goal"
    assert not layout.fallback.any()
    for m in range(num_maps):
        free = ~layout.obstacles[m]
        cells = {tuple(c) for c in np.concatenate([layout.starts[m], layout.goals[m]])}
        assert len(cells) == 2 * num_agents, "starts and goals are 2A distinct cells"
        for a in range(num_agents):
            assert free[tuple(layout.starts[m, a])] and free[tuple(layout.goals[m, a])]
            ref = bfs_reference(free, tuple(layout.goals[m, a]))
            assert ref[tuple(layout.starts[m, a])] == lengths[m, a]  # brute force agrees
    if map_type == "maze":
        # Walls are only ever removed from a perfect maze: every free cell is connected.
        for m in range(num_maps):
            labels = components_reference(~layout.obstacles[m])
            assert len(np.unique(labels[~layout.obstacles[m]])) == 1


def test_random_density_is_respected_and_perfect_maze_is_a_tree():
    obst = maps.random_obstacles(jax.random.PRNGKey(0), 64, 64, 0.3)
    assert abs(float(obst.mean()) - 0.3) < 0.03
    maze = np.asarray(maps.maze_obstacles(jax.random.PRNGKey(1), 9, 9, 1.0))
    free = ~maze
    edges = np.sum(free[1:] & free[:-1]) + np.sum(free[:, 1:] & free[:, :-1])
    assert edges == free.sum() - 1  # connected (below) with |E| = |V| - 1: a tree
    assert len(np.unique(components_reference(free)[free])) == 1


def test_generate_falls_back_to_empty_map_when_there_is_no_room():
    layout = maps.generate(jax.random.PRNGKey(0), 4, 4, 4, jnp.float32(0.99), "random", max_tries=2)
    assert bool(layout.fallback) and not bool(layout.obstacles.any())
    cells = {tuple(c) for c in np.concatenate([layout.starts, layout.goals])}
    assert len(cells) == 8


def test_parse_map():
    obst = maps.parse_map("""
        .#.
        @..
    """)
    np.testing.assert_array_equal(obst, [[0, 1, 0], [1, 0, 0]])
    with pytest.raises(ValueError, match="different lengths"):
        maps.parse_map("..\n...")
    with pytest.raises(ValueError, match="unknown characters"):
        maps.parse_map(".x.")


def test_planner_agent_reaches_goals_in_lifelong_env():
    from marljax.envs.grid.pathfinding import Pathfinding, evaluate_policy, planner_agent

    env = Pathfinding(height=6, width=6, num_agents=2, obs_radius=2)
    params = env.default_params()
    key = jax.random.PRNGKey(0)
    planned = evaluate_policy(env, params, planner_agent(0.2), key, 4, 24)
    assert planned["throughput"].shape == (4,)
    # Two agents on a 6x6 grid in 24 steps: the planner reaches several goals in every env
    # (uniformly random actions reach about 0.02 goals per step on such maps).
    assert np.all(np.asarray(planned["total_goals_reached"]) >= 3)
    np.testing.assert_allclose(planned["throughput"], planned["total_goals_reached"] / 24)
