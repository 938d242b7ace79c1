"""Mean-field swarms (`marljax.envs.swarm`): dynamics on hand-built states, neighbour search,
mean-field features, metrics and parameter validation."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
import marljax.envs.swarm  # noqa: F401  (registers swarm/*)
from marljax.envs.swarm import (
    Aggregation,
    Kuramoto,
    Vicsek,
    assert_no_overflow,
    brute_force_neighbours,
    circular_histogram,
    circular_kernel_embedding,
    hashed_neighbours,
    torus_histogram,
    torus_kernel_embedding,
)
from marljax.envs.swarm.aggregation import PLUS_X, STAY, circular_centre
from marljax.envs.swarm.base import bin_counts, centred_bins, direction_bins, polarisation
from marljax.envs.swarm.neighbours import NeighbourSearch, wrap
from marljax.testing import check_env, fast_jit

# These programs run a few steps: compile time is what counts (marljax.testing.fast_jit).
jit = fast_jit


def rollout(env, params, state, actions, num_steps, key=None):
    """Jitted `num_steps` steps with the same joint actions; returns the final state and the
    stacked timesteps (leading axis `[T]`)."""
    key = jax.random.PRNGKey(0) if key is None else key

    @jit
    def run(state, params, key):
        def body(state, k):
            state, ts = env.step(k, state, actions, params)
            return state, ts

        return jax.lax.scan(body, state, jax.random.split(key, num_steps))

    return run(state, params, key)


_brute = jit(brute_force_neighbours)
_hashed = jit(hashed_neighbours, static_argnums=(3, 4))


def neighbour_sets(nb) -> list[set[int]]:
    idx, mask = np.asarray(nb.index), np.asarray(nb.mask)
    return [set(idx[i][mask[i]].tolist()) for i in range(idx.shape[0])]


# ------------------------------------------------------------------------------ Vicsek


def test_vicsek_aligned_without_noise_stays_aligned():
    env, params = marljax.make("swarm/vicsek-v0", noise=0.0)
    state, _ = jit(env.reset)(jax.random.PRNGKey(1), params)
    state = state.replace(heading=jnp.full((env.num_agents,), 0.7, jnp.float32))
    straight = jnp.full((env.num_agents,), env.num_turns // 2, jnp.int32)
    final, ts = rollout(env, params, state, straight, 30)
    np.testing.assert_allclose(np.asarray(final.heading), 0.7, atol=1e-6)
    np.testing.assert_allclose(np.asarray(ts.reward), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.asarray(ts.extras["swarm/polarisation_final"]), 1.0, atol=1e-5)
    # Every agent's neighbours all share its heading: relative-heading arc 0 holds them all.
    obs = np.asarray(ts.obs[-1])
    has = np.asarray(ts.obs[-1][:, -1]) > 0
    np.testing.assert_allclose(obs[has, 0], 1.0, atol=1e-6)
    np.testing.assert_allclose(obs[has, 1 : env.heading_bins], 0.0)


def test_vicsek_turns_and_torus_wrap():
    env, params = marljax.make("swarm/vicsek-v0", num_agents=2, noise=0.0, speed=0.1)
    L = float(params.size)
    state, _ = jit(env.reset)(jax.random.PRNGKey(0), params)
    pos = jnp.array([[L - 0.05, 1.0], [1.0, 0.02]], jnp.float32)
    heading = jnp.array([0.0, 1.5 * math.pi + float(params.max_turn)], jnp.float32)
    state = state.replace(pos=pos, heading=heading)
    # Agent 0 goes straight through x = L; agent 1 turns hard right (-max_turn), then heads
    # straight down (-y) through y = 0.
    state, ts = jit(env.step)(jax.random.PRNGKey(0), state, jnp.array([2, 0]), params)
    np.testing.assert_allclose(np.asarray(state.pos[0]), [0.05, 1.0], atol=1e-5)
    np.testing.assert_allclose(float(state.heading[1]), 1.5 * math.pi, atol=1e-5)
    np.testing.assert_allclose(np.asarray(state.pos[1]), [1.0, L - 0.08], atol=1e-5)
    assert np.all(np.asarray(state.pos) >= 0) and np.all(np.asarray(state.pos) < L)


def test_neighbours_through_the_wrap():
    L = 4.0
    pos = jnp.array([[0.1, 2.0], [3.9, 2.0], [2.0, 2.0]], jnp.float32)
    nb = brute_force_neighbours(pos, jnp.float32(0.5), jnp.float32(L))
    assert neighbour_sets(nb) == [{1}, {0}, set()]
    j = int(np.argmax(np.asarray(nb.mask[0])))
    np.testing.assert_allclose(float(nb.dx[0, j]), -0.2, atol=1e-5)
    np.testing.assert_allclose(
        np.asarray(wrap(jnp.array([3.9, -3.9, 1.0]), L)), [-0.1, 0.1, 1.0], atol=1e-6
    )


# ------------------------------------------------------------------------------ Kuramoto


def test_kuramoto_identical_frequencies_strong_coupling_synchronise():
    env, params = marljax.make(
        "swarm/kuramoto-v0", omega_std=0.0, coupling=5.0, noise=0.0, radius=1.4, dt=0.1
    )
    state, ts0 = jit(env.reset)(jax.random.PRNGKey(3), params)
    none = jnp.full((env.num_agents,), env.num_offsets // 2, jnp.int32)
    _, ts = rollout(env, params, state, none, 150)
    R = np.asarray(ts.extras["swarm/synchronisation_final"])
    R0 = float(polarisation(state.phase))
    assert R0 < 0.6
    assert R[-1] > 0.99 and R[-1] > R0 + 0.3
    np.testing.assert_allclose(np.asarray(ts.reward[-1]), R[-1], rtol=1e-5)


def test_kuramoto_without_coupling_rotates_at_natural_frequency_plus_offset():
    env, params = marljax.make("swarm/kuramoto-v0", coupling=0.0, noise=0.0, max_offset=0.5)
    state, _ = jit(env.reset)(jax.random.PRNGKey(0), params)
    top = jnp.full((env.num_agents,), env.num_offsets - 1, jnp.int32)  # offset +max_offset
    new, _ = jit(env.step)(jax.random.PRNGKey(1), state, top, params)
    expect = np.mod(np.asarray(state.phase) + 0.1 * (np.asarray(state.omega) + 0.5), 2 * np.pi)
    np.testing.assert_allclose(np.asarray(new.phase), expect, atol=1e-5)


# ------------------------------------------------------------------------------ aggregation


@pytest.mark.parametrize("gap, collisions", [(0.05, 1.0), (0.5, 0.0)])
def test_aggregation_collision_penalty_on_a_pair(gap, collisions):
    env, params = marljax.make(
        "swarm/aggregation-v0",
        num_agents=2,
        noise=0.0,
        attraction=0.0,
        collision_radius=0.1,
        collision_penalty=2.0,
    )
    state, _ = jit(env.reset)(jax.random.PRNGKey(0), params)
    state = state.replace(pos=jnp.array([[1.0, 1.0], [1.0 + gap, 1.0]], jnp.float32))
    state, ts = jit(env.step)(jax.random.PRNGKey(0), state, jnp.array([STAY, STAY]), params)
    np.testing.assert_allclose(np.asarray(ts.reward), [-2.0 * collisions] * 2, atol=1e-6)
    np.testing.assert_allclose(float(ts.extras["swarm/collisions_final"]), collisions)
    assert np.asarray(ts.obs)[:, -1].tolist() == [collisions] * 2


def test_aggregation_centre_cohesion_and_moves():
    env, params = marljax.make("swarm/aggregation-v0", num_agents=3, noise=0.0, speed=0.25)
    L = float(params.size)
    # Agents straddling the wrap: the circular centre is at x = 0, not L / 2.
    pos = jnp.array([[L - 0.1, 1.0], [0.1, 1.0], [0.0, 1.0]], jnp.float32)
    centre, cohesion = circular_centre(pos, params.size)
    assert min(float(centre[0]), L - float(centre[0])) < 1e-4
    np.testing.assert_allclose(float(centre[1]), 1.0, atol=1e-5)
    assert float(cohesion) > 0.98
    state, _ = jit(env.reset)(jax.random.PRNGKey(0), params)
    state = state.replace(pos=pos)
    state, _ = jit(env.step)(jax.random.PRNGKey(0), state, jnp.array([PLUS_X, STAY, STAY]), params)
    np.testing.assert_allclose(np.asarray(state.pos[0]), [0.15, 1.0], atol=1e-5)


# ------------------------------------------------------------------------------ neighbours


@pytest.mark.parametrize(
    "num_agents, size, radius, cells, cap",
    [
        (40, 4.0, 1.0, 4, 16),
        (300, 10.0, 0.7, 14, 16),
        (200, 6.0, 2.0, 3, 64),
    ],
)
def test_spatial_hash_equals_brute_force(num_agents, size, radius, cells, cap):
    for seed in range(2):
        key_u, key_c = jax.random.split(jax.random.PRNGKey(seed))
        uniform = jax.random.uniform(key_u, (num_agents, 2)) * size
        # Clustered: Gaussian blobs around 3 centres (wrapped).
        centres = jax.random.uniform(key_c, (3, 2)) * size
        blobs = centres[jnp.arange(num_agents) % 3] + 0.6 * jax.random.normal(
            key_c, (num_agents, 2)
        )
        for pos in (uniform, jnp.mod(blobs, size)):
            brute = _brute(pos, radius, size)
            hashed = _hashed(pos, radius, size, cells, cap)
            if int(hashed.overflow_cells) == 0:
                assert neighbour_sets(hashed) == neighbour_sets(brute)
                np.testing.assert_array_equal(np.asarray(hashed.count), np.asarray(brute.count))
            else:  # every reported pair is still a true neighbour
                for h, b in zip(neighbour_sets(hashed), neighbour_sets(brute), strict=True):
                    assert h <= b
    assert int(_hashed(uniform, radius, size, cells, cap).overflow_cells) == 0


def test_hashed_env_matches_brute_force_env():
    kw = dict(num_agents=100, noise=0.3)
    hashed, params = marljax.make("swarm/vicsek-v0", brute_force_threshold=0, **kw)
    brute, _ = marljax.make("swarm/vicsek-v0", brute_force_threshold=10_000, **kw)
    assert hashed.neighbours.hashed and not brute.neighbours.hashed
    key = jax.random.PRNGKey(5)
    state, _ = jit(brute.reset)(key, params)  # the same state for both (reset needs no search)
    actions = jax.random.randint(key, (100,), 0, hashed.num_turns)
    _, ts_h = rollout(hashed, params, state, actions, 5)
    _, ts_b = rollout(brute, params, state, actions, 5)
    assert float(ts_h.extras["swarm/neighbour_overflow"][-1]) == 0.0
    np.testing.assert_allclose(np.asarray(ts_h.obs), np.asarray(ts_b.obs), atol=1e-5)
    np.testing.assert_allclose(np.asarray(ts_h.reward), np.asarray(ts_b.reward), atol=1e-6)


def test_overflow_is_detected_and_reported():
    pos = jnp.concatenate(
        [jnp.full((20, 2), 0.5), jax.random.uniform(jax.random.PRNGKey(0), (80, 2)) * 9]
    )
    nb = _hashed(pos, 1.0, 9.0, 9, 4)
    assert int(nb.overflow_cells) >= 1 and int(nb.dropped) >= 16
    with pytest.raises(RuntimeError, match="overflow"):
        assert_no_overflow(nb)
    # The env reports it per episode, and raises with check_overflow=True.
    kw = dict(num_agents=64, brute_force_threshold=0, cell_capacity=3)
    env, params = marljax.make("swarm/vicsek-v0", **kw)
    state, _ = jit(env.reset)(jax.random.PRNGKey(0), params)
    state = state.replace(pos=state.pos.at[:20].set(0.3))
    actions = jnp.zeros((64,), jnp.int32)
    _, ts = jit(env.step)(jax.random.PRNGKey(1), state, actions, params)
    assert (
        float(ts.extras["swarm/neighbour_overflow"]) >= 1
        and int(ts.extras["neighbour_dropped"]) > 0
    )
    strict, _ = marljax.make("swarm/vicsek-v0", check_overflow=True, **kw)
    with pytest.raises(Exception, match="overflow"):
        jax.block_until_ready(jit(strict.step)(jax.random.PRNGKey(1), state, actions, params))


# ------------------------------------------------------------------------------ mean field


@jit
def _features(pos, angle, weights, point, arc_point):
    """Every mean-field feature the test below checks, in one compiled program."""
    return {
        "hist": torus_histogram(pos, 7.0, 5),
        "arcs": circular_histogram(angle, 12),
        "soft": torus_kernel_embedding(pos, 7.0, 5, 1.0, normalize=True),
        "soft_arcs": circular_kernel_embedding(angle, 12, 0.7, normalize=True),
        "weighted": torus_histogram(pos, 7.0, 5, weights=weights),
        "point": torus_kernel_embedding(point, 7.0, 5, 1.0).reshape(5, 5),
        "point_arcs": circular_kernel_embedding(arc_point, 12, 1.0),
        "centred": centred_bins(jnp.array([0.0, -0.1, 2 * math.pi - 0.1, math.pi]), 8),
        "by_angle": centred_bins(angle, 12),
        "by_direction": direction_bins(3.0 * jnp.cos(angle), 3.0 * jnp.sin(angle), 12),
    }


def test_histograms_and_kernel_embeddings_normalise():
    key_p, key_a = jax.random.split(jax.random.PRNGKey(0))
    pos = jax.random.uniform(key_p, (500, 2)) * 7.0
    angle = jax.random.uniform(key_a, (500,)) * 20.0 - 10.0
    weights = jnp.zeros(500).at[0].set(1.0)  # only agent 0 counts
    point = jnp.full((4, 2), 0.7)  # all at the centre of bin (0, 0) of a 5x5 grid of side 7
    f = jax.tree.map(np.asarray, _features(pos, angle, weights, point, jnp.full((3,), 0.25)))
    f["arc_point"] = f.pop("point_arcs")
    h = f["hist"]
    assert h.shape == (25,) and h.min() >= 0
    np.testing.assert_allclose(h.sum(), 1.0, rtol=1e-5)
    np.testing.assert_allclose(f["arcs"].sum(), 1.0, rtol=1e-5)
    np.testing.assert_allclose(f["soft"].sum(), 1.0, rtol=1e-4)
    np.testing.assert_allclose(f["soft_arcs"].sum(), 1.0, rtol=1e-4)
    cx, cy = np.floor(np.asarray(pos[0]) / 7.0 * 5).astype(int)
    assert f["weighted"][cx * 5 + cy] == pytest.approx(1.0)
    assert f["weighted"].sum() == pytest.approx(1.0)
    # Kernel embedding of a point mass at a centre: 1 there, exp(-1/2) one bandwidth away,
    # symmetric through the wrap.
    k = f["point"]
    assert k[0, 0] == pytest.approx(1.0) and k.max() == k[0, 0]
    np.testing.assert_allclose(k[1, 0], k[4, 0], rtol=1e-5)
    np.testing.assert_allclose(k[1, 0], math.exp(-0.5), rtol=1e-5)
    arcs = f["arc_point"]  # angle 0.25 is near the centre pi / 12 = 0.26 of arc 0
    assert arcs.argmax() == 0 and arcs[0] > 0.99 and arcs[1] == pytest.approx(arcs[11], rel=0.2)
    # Relative angles near 0 fall in arc 0 of the centred arcs.
    assert f["centred"].tolist() == [0, 0, 0, 4]
    # The trigonometry-free binning of directions agrees with binning the angles.
    assert np.mean(f["by_angle"] == f["by_direction"]) > 0.995
    assert f["by_direction"].min() >= 0 and f["by_direction"].max() < 12


@pytest.mark.parametrize("slots, bins", [(144, 8), (300, 7), (5, 3)])
def test_packed_bin_counts_equal_one_hot_counts(slots, bins):
    key_k, key_m = jax.random.split(jax.random.PRNGKey(slots))
    k = jax.random.randint(key_k, (50, slots), 0, bins)
    mask = jax.random.uniform(key_m, (50, slots)) < 0.7
    expect = np.stack([np.sum(np.asarray(mask & (k == b)), axis=-1) for b in range(bins)], -1)
    np.testing.assert_array_equal(
        np.asarray(jit(bin_counts, static_argnums=2)(k, mask, bins)), expect
    )
    all_in_one = jnp.zeros((1, slots), jnp.int32)  # every slot in bin 0: the largest count
    counts = bin_counts(all_in_one, jnp.ones((1, slots), bool), bins)
    assert np.asarray(counts).tolist() == [[slots] + [0] * (bins - 1)]


@pytest.mark.parametrize("kind", ["histogram", "kernel"])
def test_global_state_is_the_mean_field(kind):
    env, params = marljax.make("swarm/vicsek-v0", mean_field=kind, position_bins=4, angle_bins=6)
    state, ts = jit(env.reset)(jax.random.PRNGKey(0), params)
    assert ts.global_state.shape == env.global_state_space(params).shape == (16 + 6,)
    gs = np.asarray(ts.global_state)
    assert gs.min() >= 0 and gs.max() <= 1
    if kind == "histogram":
        np.testing.assert_allclose([gs[:16].sum(), gs[16:].sum()], [1.0, 1.0], rtol=1e-5)
        np.testing.assert_allclose(gs[:16], np.asarray(torus_histogram(state.pos, params.size, 4)))


# ------------------------------------------------------------------------------ metrics


def test_episode_metrics_are_means_over_the_episode():
    env, params = marljax.make("swarm/vicsek-v0", max_steps=10)
    state, _ = jit(env.reset)(jax.random.PRNGKey(0), params)
    actions = jax.random.randint(jax.random.PRNGKey(1), (16,), 0, 5)
    _, ts = rollout(env, params, state, actions, 10)
    per_step = np.asarray(ts.extras["swarm/polarisation_final"])
    np.testing.assert_allclose(
        float(ts.extras["swarm/polarisation"][-1]), per_step.mean(), rtol=1e-5
    )
    assert bool(ts.truncated[-1]) and not bool(ts.truncated[-2])
    for name in ("swarm/polarisation", "swarm/polarisation_final", "swarm/neighbour_overflow"):
        assert ts.extras[name].shape == (10,)  # one scalar per step: a runner episode metric


# ------------------------------------------------------------------------------ conformance


def test_conformance_of_continuous_and_hashed_variants():
    env, params = marljax.make(
        "swarm/vicsek-v0", continuous=True, num_agents=64, brute_force_threshold=0
    )
    assert env.neighbours.hashed
    check_env(env, params, num_steps=6, num_envs=2)


# ------------------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    "env_id, overrides, match",
    [
        ("swarm/vicsek-v0", dict(radius=2.0), "half the torus"),
        ("swarm/vicsek-v0", dict(num_agents=0), "num_agents >= 1"),
        ("swarm/vicsek-v0", dict(noise=float("nan")), "noise must be finite"),
        ("swarm/kuramoto-v0", dict(noise=float("inf")), "noise must be finite"),
        ("swarm/vicsek-v0", dict(speed=-1.0), "speed must be >= 0"),
        ("swarm/vicsek-v0", dict(cell_capacity=0), "cell_capacity must be >= 1"),
        ("swarm/vicsek-v0", dict(num_agents=10_000, cell_capacity=1), "mean number of agents"),
        ("swarm/vicsek-v0", dict(num_agents=1000, radius=1.5), "cell side"),
        ("swarm/vicsek-v0", dict(mean_field="fourier"), "mean_field must be one of"),
        ("swarm/vicsek-v0", dict(num_turns=1), "num_turns >= 2"),
        ("swarm/aggregation-v0", dict(collision_radius=1.5), "collision_radius"),
        ("swarm/kuramoto-v0", dict(dt=0.0), "dt must be > 0"),
    ],
)
def test_bad_input_fails_clearly(env_id, overrides, match):
    with pytest.raises(ValueError, match=match):
        marljax.make(env_id, **overrides)


def test_large_swarm_uses_the_spatial_hash():
    env, params = marljax.make("swarm/vicsek-v0", num_agents=10_000)
    assert isinstance(env.neighbours, NeighbourSearch) and env.neighbours.hashed
    assert env.neighbours.num_slots == 9 * 16
    np.testing.assert_allclose(float(params.size), math.sqrt(10_000 / 2), rtol=1e-6)
    state, ts = jit(env.reset)(jax.random.PRNGKey(0), params)
    assert ts.obs.shape == (10_000, env.obs_dim)
    assert int(ts.extras["neighbour_dropped"]) == 0
    assert isinstance(env, Vicsek) and not isinstance(env, (Kuramoto, Aggregation))
