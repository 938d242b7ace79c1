"""MPE particle worlds: parity with JaxMARL 0.2.0, hand-built physics and rewards, bad input.

`check_env` runs on every registered `particle/*` id in `tests/test_conformance.py`.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
import marljax.envs.particle  # noqa: F401  (registers the particle/* ids)
from marljax.envs.particle import (
    ADVERSARY,
    GOOD,
    ParticleState,
    SimpleSpread,
    SimpleSpreadParams,
    SimpleTag,
    SimpleTagParams,
)
from marljax.envs.particle.world import DOWN, LEFT, NOOP, RIGHT, UP, bound_penalty
from marljax.testing import fast_jit

KEY = jax.random.PRNGKey(0)
# These programs run a few steps: compile time is what counts (marljax.testing.fast_jit).
_jit = fast_jit


@functools.cache
def _jitted(env, method: str):
    return _jit(getattr(env, method))


def step(env, state, actions, params):
    """`env.step`, jitted (one small compile per env instead of many eager op compiles)."""
    return _jitted(env, "step")(KEY, state, jnp.asarray(actions), params)


def rewards(env, state, params):
    return _jitted(env, "rewards")(state, params)


def observations(env, state, params):
    return _jitted(env, "observations")(state, params)


def make_state(pos, vel=None, landmarks=(), t=0) -> ParticleState:
    pos = jnp.asarray(pos, jnp.float32).reshape(-1, 2)
    return ParticleState(
        agent_pos=pos,
        agent_vel=jnp.zeros_like(pos) if vel is None else jnp.asarray(vel, jnp.float32),
        landmark_pos=jnp.asarray(landmarks, jnp.float32).reshape(-1, 2),
        t=jnp.int32(t),
    )


# ------------------------------------------------------------------------------ JaxMARL parity

T_PARITY = 50
E_PARITY = 6
# Half of the episodes start crowded (collisions, tags, contact forces), half spread out over
# the whole arena (arena penalty of simple tag).
SPAWN = np.array([0.3] * (E_PARITY // 2) + [1.0] * (E_PARITY - E_PARITY // 2), np.float32)

CASES = {
    "spread": ("particle/simple_spread-v0", "MPE_simple_spread_v3", False),
    "spread_continuous": ("particle/simple_spread_continuous-v0", "MPE_simple_spread_v3", True),
    "tag": ("particle/simple_tag-v0", "MPE_simple_tag_v3", False),
    "tag_continuous": ("particle/simple_tag_continuous-v0", "MPE_simple_tag_v3", True),
}


def _rollouts(name: str):
    """Both implementations on `E` episodes of `T` steps with the same random actions.

    Our episodes start from our reset (vmapped over keys and spawn ranges); JaxMARL steps from
    each of our states in turn. Returns numpy `(ours, theirs)`, each `(obs [E, T, A, D], reward
    [E, T, A])`, JaxMARL's observations zero-padded to our width.
    """
    jaxmarl = pytest.importorskip("jaxmarl")
    from jaxmarl.environments.mpe.simple import State as JaxMARLState

    env_id, jm_id, continuous = CASES[name]
    env, params = marljax.make(env_id)
    jm = jaxmarl.make(jm_id, action_type="Continuous" if continuous else "Discrete")
    A, D = env.num_agents, env.obs_dim
    assert len(jm.agents) == A  # same agent order (JaxMARL: adversaries first in simple tag)

    # Our reset, vmapped over keys and over params (spawn ranges), then our steps.
    batch = jax.tree.map(lambda x: jnp.broadcast_to(x, (E_PARITY, *jnp.shape(x))), params)
    batch = batch.replace(agent_spawn=jnp.asarray(SPAWN), landmark_spawn=jnp.asarray(SPAWN))
    keys = jax.random.split(KEY, E_PARITY)
    k_act = jax.random.PRNGKey(1)
    if continuous:
        actions = jax.random.uniform(k_act, (E_PARITY, T_PARITY, A, 5))
    else:
        actions = jax.random.randint(k_act, (E_PARITY, T_PARITY, A), 0, 5)

    def ours(key, p, acts):
        state, _ = env.reset(key, p)

        def body(s, a):
            s_next, ts = env.step(KEY, s, a, params)
            return s_next, (s, ts.obs, ts.reward)

        return jax.lax.scan(body, state, acts)[1]

    def theirs(states, acts):
        # Teacher forcing: every JaxMARL step starts from OUR state before that step. The
        # contact forces are stiff, so two free-running rollouts drift apart by float rounding
        # within 50 crowded steps; this keeps the comparison at float tolerance for every step.
        def body(_, x):
            state, a = x
            jm_state = JaxMARLState(
                p_pos=jnp.concatenate([state.agent_pos, state.landmark_pos]),
                p_vel=jnp.concatenate([state.agent_vel, jnp.zeros_like(state.landmark_pos)]),
                c=jnp.zeros((A, 2)),
                done=jnp.array(False),
                step=state.t,
            )
            obs, _, rew, _, _ = jm.step_env(
                KEY, jm_state, {n: a[i] for i, n in enumerate(jm.agents)}
            )
            o = jnp.stack([jnp.pad(obs[n], (0, D - obs[n].shape[0])) for n in jm.agents])
            return None, (o, jnp.stack([rew[n] for n in jm.agents]))

        return jax.lax.scan(body, None, (states, acts))[1]

    states, *out_ours = _jit(jax.vmap(ours))(keys, batch, actions)
    out_theirs = _jit(jax.vmap(theirs))(states, actions)
    return jax.tree.map(np.asarray, (tuple(out_ours), out_theirs))


@pytest.fixture(scope="module")
def parity():
    """Rollouts of every case, computed once per module (lazily, per case)."""
    return functools.cache(_rollouts)


@pytest.mark.parametrize("name", list(CASES))
def test_parity_with_jaxmarl(parity, name):
    (obs, rew), (obs_jm, rew_jm) = parity(name)
    assert obs.shape == obs_jm.shape and rew.shape == rew_jm.shape
    np.testing.assert_allclose(obs, obs_jm, atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(rew, rew_jm, atol=1e-4, rtol=1e-4)


def test_parity_rollouts_exercise_the_rules(parity):
    """The parity rollouts contain collisions, tags and arena penalties (else they prove little)."""
    _, rew = parity("spread")[0]
    coverage = rew.mean(-1, keepdims=True)  # shared part plus the mean collision penalty
    assert np.any(np.abs(rew - coverage) > 0.1), "no agent-agent collision in the spread rollouts"
    _, rew = parity("tag")[0]
    adversary, good = rew[..., 0], rew[..., -1]
    assert np.any(adversary >= 10.0), "no tag in the tag rollouts"
    assert np.any((good < 0) & (np.abs(good) % 10.0 > 1e-3)), "no arena penalty in the rollouts"


def test_reset_matches_jaxmarl():
    jaxmarl = pytest.importorskip("jaxmarl")
    env, params = marljax.make("particle/simple_tag-v0")
    state, ts = _jitted(env, "reset")(KEY, params)
    obs_jm, jm_state = jaxmarl.make("MPE_simple_tag_v3").reset(KEY)
    np.testing.assert_array_equal(
        np.concatenate([state.agent_pos, state.landmark_pos]), jm_state.p_pos
    )
    np.testing.assert_allclose(ts.obs[0], obs_jm["adversary_0"], atol=1e-6)


# ------------------------------------------------------------------------------ hand-built cases


def test_spread_collision_penalty_and_coverage():
    env = SimpleSpread(num_agents=3, num_landmarks=2)
    p = SimpleSpreadParams(local_ratio=jnp.float32(0.25))
    # Agents 0 and 1 overlap (distance 0.2 < 0.3), agent 2 is alone; landmarks on agents 0 and 2.
    state = make_state([[0.0, 0.0], [0.2, 0.0], [1.0, 1.0]], landmarks=[[0.0, 0.0], [1.0, 1.0]])
    reward = rewards(env, state, p)
    # coverage: both landmarks have an agent on them.
    np.testing.assert_allclose(reward, [-0.25, -0.25, 0.0], atol=1e-6)
    # Move landmark 1 to distance 0.5 from agent 2: coverage -0.5, shared with weight 0.75.
    state = state.replace(landmark_pos=jnp.asarray([[0.0, 0.0], [1.0, 1.5]], jnp.float32))
    np.testing.assert_allclose(
        rewards(env, state, p), [-0.25 - 0.375, -0.25 - 0.375, -0.375], atol=1e-6
    )


def test_contact_force_pushes_overlapping_agents_apart():
    env = SimpleSpread(num_agents=2, num_landmarks=0)
    p = env.default_params()
    state = make_state([[0.0, 0.0], [0.2, 0.0]])
    s, _ = step(env, state, jnp.array([NOOP, NOOP]), p)
    # Overlap 0.1: force ~ contact_force * 0.1 = 10 along x, velocity += 10 * dt = 1.
    np.testing.assert_allclose(s.agent_vel, [[-1.0, 0.0], [1.0, 0.0]], atol=1e-4)
    np.testing.assert_array_equal(s.agent_pos, state.agent_pos)  # positions use the old velocity
    # Far apart: no force at all.
    far = make_state([[0.0, 0.0], [0.5, 0.0]])
    s, _ = step(env, far, jnp.array([NOOP, NOOP]), p)
    np.testing.assert_array_equal(s.agent_vel, 0.0)


def test_damping_and_max_speed():
    env = SimpleSpread(num_agents=2, num_landmarks=1)
    p = env.default_params()
    state = make_state([[-0.5, 0.0], [0.5, 0.0]], vel=[[1.0, 0.0], [0.0, 2.0]], landmarks=[0, 0])
    s, ts = step(env, state, jnp.array([RIGHT, DOWN]), p)
    # v' = v (1 - 0.25) + accel dt u = 0.75 v + 0.5 u; p' = p + v dt (old velocity).
    np.testing.assert_allclose(s.agent_vel, [[1.25, 0.0], [0.0, 1.0]], atol=1e-6)
    np.testing.assert_allclose(s.agent_pos, [[-0.4, 0.0], [0.5, 0.2]], atol=1e-6)
    np.testing.assert_allclose(ts.obs[:, :4], [[1.25, 0, -0.4, 0], [0, 1.0, 0.5, 0.2]], atol=1e-6)
    # A speed limit rescales the velocity, keeping its direction.
    s, _ = step(env, state, jnp.array([RIGHT, DOWN]), p.replace(max_speed=jnp.float32(0.5)))
    np.testing.assert_allclose(s.agent_vel, [[0.5, 0.0], [0.0, 0.5]], atol=1e-6)
    # No damping, no action: constant velocity.
    s, _ = step(env, state, jnp.array([NOOP, NOOP]), p.replace(damping=jnp.float32(0.0)))
    np.testing.assert_allclose(s.agent_vel, state.agent_vel, atol=1e-6)


def test_discrete_and_continuous_directions():
    env = SimpleSpread(num_agents=5, num_landmarks=0)
    p = env.default_params().replace(damping=jnp.float32(1.0))  # velocity = accel dt u
    state = make_state(np.arange(10).reshape(5, 2))  # far apart
    s, _ = step(env, state, jnp.array([NOOP, LEFT, RIGHT, DOWN, UP]), p)
    np.testing.assert_allclose(s.agent_vel, [[0, 0], [-0.5, 0], [0.5, 0], [0, -0.5], [0, 0.5]])
    cont = SimpleSpread(num_agents=5, num_landmarks=0, continuous=True)
    a = jnp.eye(5, dtype=jnp.float32)  # agent i pushes only entry i
    s2, ts = step(cont, state, a, p)
    np.testing.assert_allclose(s2.agent_vel, s.agent_vel)
    assert ts.action_mask.shape == (5, 0)


def test_tag_capture_reward_and_types():
    env = SimpleTag(num_good_agents=2, num_adversaries=2, num_obstacles=1)
    p = SimpleTagParams()
    np.testing.assert_array_equal(env.agent_types, [ADVERSARY, ADVERSARY, GOOD, GOOD])
    # Adversary 0 touches good agent 2 (distance 0.1 < 0.125); adversary 1 and agent 3 are alone.
    state = make_state([[0.0, 0.0], [0.5, 0.5], [0.1, 0.0], [-0.5, -0.5]], landmarks=[[0.0, 0.6]])
    np.testing.assert_allclose(rewards(env, state, p), [10.0, 10.0, -10.0, 0.0])
    # Both adversaries on agent 2: 20 each, agent 2 loses 20.
    state = state.replace(agent_pos=state.agent_pos.at[1].set(jnp.array([0.2, 0.0])))
    np.testing.assert_allclose(rewards(env, state, p), [20.0, 20.0, -20.0, 0.0])
    # Observation layout: padded good agents, each good agent sees the other's velocity.
    state = state.replace(agent_vel=jnp.array([[0, 0], [0, 0], [1.0, 2.0], [3.0, 4.0]]))
    obs = observations(env, state, p)
    assert obs.shape == (4, env.obs_dim) == (4, 4 + 2 + 6 + 4)
    np.testing.assert_array_equal(env.obs_sizes, [16, 16, 14, 14])
    np.testing.assert_allclose(obs[0, -4:], [1, 2, 3, 4])  # adversaries: both good agents
    np.testing.assert_allclose(obs[2, -4:], [3, 4, 0, 0])  # good agent 2: agent 3, then padding
    np.testing.assert_allclose(obs[3, -4:], [1, 2, 0, 0])
    np.testing.assert_allclose(obs[2, 6:12], [-0.1, 0.0, 0.1, 0.0, -0.6, -0.5])  # others, in order


def test_tag_boundary_penalty():
    env = SimpleTag()
    p = SimpleTagParams()
    assert float(bound_penalty(jnp.float32(0.5))) == 0.0
    np.testing.assert_allclose(bound_penalty(jnp.float32(0.95)), 0.5, atol=1e-5)
    np.testing.assert_allclose(bound_penalty(jnp.float32(1.2)), np.exp(0.4), rtol=1e-5)
    assert float(bound_penalty(jnp.float32(5.0))) == 10.0
    far = [[-0.5, 0.5], [0.5, 0.5], [0.5, -0.5]]
    state = make_state([*far, [0.95, -1.2]], landmarks=[[0, 0], [0, 0.3]])
    reward = rewards(env, state, p)
    np.testing.assert_allclose(reward, [0, 0, 0, -(0.5 + np.exp(0.4))], rtol=1e-5)
    np.testing.assert_allclose(
        rewards(env, state, p.replace(boundary_penalty=jnp.float32(0.0))), 0.0
    )


def test_tag_obstacles_push_agents():
    env = SimpleTag(num_good_agents=1, num_adversaries=1, num_obstacles=1)
    p = env.default_params()
    # Good agent (radius 0.05) overlaps the obstacle (0.2) by 0.05 on its right.
    state = make_state([[-0.8, -0.8], [0.2, 0.0]], landmarks=[[0.0, 0.0]])
    s, _ = step(env, state, jnp.array([NOOP, NOOP]), p)
    np.testing.assert_allclose(s.agent_vel[1], [0.5, 0.0], atol=1e-3)  # 100 * 0.05 * dt
    np.testing.assert_array_equal(s.landmark_pos, state.landmark_pos)  # obstacles never move
    np.testing.assert_array_equal(s.agent_vel[0], 0.0)


def test_truncation_only():
    env, params = marljax.make("particle/simple_spread-v0", max_steps=3)
    state, ts = _jitted(env, "reset")(KEY, params)
    flags = []
    for _ in range(3):
        state, ts = step(env, state, jnp.zeros(3, jnp.int32), params)
        flags.append((bool(ts.terminated), bool(ts.truncated)))
    assert flags == [(False, False), (False, False), (False, True)]
    np.testing.assert_array_equal(ts.global_state, ts.obs.reshape(-1))


def test_single_agent_and_no_landmarks():
    for env in (SimpleSpread(1, 0), SimpleSpread(1, 2), SimpleTag(1, 1, 0)):
        p = env.default_params()
        state, ts = _jitted(env, "reset")(KEY, p)
        state, ts = step(env, state, jnp.ones(env.num_agents, jnp.int32), p)
        assert ts.obs.shape == (env.num_agents, env.obs_dim)
        assert np.all(np.isfinite(ts.obs)) and np.all(np.isfinite(ts.reward))


# ------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "env_id, override, match",
    [
        ("particle/simple_spread-v0", {"num_agents": 0}, "num_agents"),
        ("particle/simple_spread-v0", {"num_landmarks": -1}, "num_landmarks"),
        ("particle/simple_tag-v0", {"num_adversaries": 0}, "num_adversaries"),
        ("particle/simple_tag-v0", {"num_obstacles": -2}, "num_obstacles"),
        ("particle/simple_spread-v0", {"agent_size": -0.1}, "agent_size"),
        ("particle/simple_spread-v0", {"dt": 0.0}, "dt"),
        ("particle/simple_spread-v0", {"dt": -0.1}, "dt"),
        ("particle/simple_spread-v0", {"damping": 1.5}, "damping"),
        ("particle/simple_spread-v0", {"contact_margin": 0.0}, "contact_margin"),
        ("particle/simple_spread-v0", {"local_ratio": 2.0}, "local_ratio"),
        ("particle/simple_spread-v0", {"max_steps": 0}, "max_steps"),
        ("particle/simple_spread-v0", {"agent_mass": 0.0}, "agent_mass"),
        ("particle/simple_tag-v0", {"obstacle_size": -1.0}, "obstacle_size"),
        ("particle/simple_tag-v0", {"good_max_speed": float("nan")}, "good_max_speed"),
    ],
)
def test_bad_settings_fail_at_make(env_id, override, match):
    with pytest.raises(ValueError, match=match):
        marljax.make(env_id, **override)


def test_unknown_option_lists_close_matches():
    with pytest.raises(TypeError, match="local_ratio"):
        marljax.make("particle/simple_spread-v0", local_ratoi=0.3)


def test_continuous_ids_and_static_switch():
    env, _ = marljax.make("particle/simple_tag_continuous-v0")
    env2, _ = marljax.make("particle/simple_tag-v0", continuous=True)
    assert env.continuous and env2.continuous
    assert env.action_space(env.default_params()).shape == (5,)
    env3, params = marljax.make("particle/simple_spread-v0", num_agents=4, num_landmarks=5)
    assert env3.observation_space(params).shape == (4 + 10 + 12,)
