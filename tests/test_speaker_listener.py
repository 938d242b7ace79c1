"""MPE simple speaker-listener: step-by-step parity with JaxMARL 0.2.0, roles, masks, bad input.

`check_env` runs on both registered ids in `tests/test_conformance.py`.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
import marljax.envs.particle  # noqa: F401  (registers the particle/* ids)
from marljax.envs.particle import LISTENER, SPEAKER, SimpleSpeakerListener
from marljax.envs.particle.world import UP
from marljax.testing import fast_jit

KEY = jax.random.PRNGKey(0)
# These programs run a few steps: compile time is what counts (marljax.testing.fast_jit).
_jit = fast_jit

E_PARITY, T_PARITY = 6, 50  # 300 random-action steps per action type


def _rollouts(continuous: bool):
    """Both implementations from the same reset keys with the same random actions, free-running.

    Nothing collides in this task, so the two rollouts stay at float rounding of each other
    without teacher forcing. Returns numpy `(ours, theirs)`, each a dict of `obs [E, T, A, D]`
    (JaxMARL's zero-padded to our width), `reward [E, T, A]`, `pos [E, T, A + L, 2]`,
    `vel [E, T, A, 2]`, `comm [E, T, 3]` and `goal [E]`.
    """
    jaxmarl = pytest.importorskip("jaxmarl")
    suffix = "_continuous" if continuous else ""
    env, params = marljax.make(f"particle/simple_speaker_listener{suffix}-v0")
    jm = jaxmarl.make(
        "MPE_simple_speaker_listener_v4", action_type="Continuous" if continuous else "Discrete"
    )
    assert jm.agents == ["speaker_0", "listener_0"]
    D = env.obs_dim
    keys = jax.random.split(jax.random.PRNGKey(1), E_PARITY)  # goals 0, 1, 1, 2, 1, 0
    k_speak, k_move = jax.random.split(jax.random.PRNGKey(2))
    if continuous:
        actions = jax.random.uniform(k_move, (E_PARITY, T_PARITY, 2, 5))
    else:
        actions = jnp.stack(
            [
                jax.random.randint(k_speak, (E_PARITY, T_PARITY), 0, 3),
                jax.random.randint(k_move, (E_PARITY, T_PARITY), 0, 5),
            ],
            axis=-1,
        )

    def ours(key, acts):
        state, _ = env.reset(key, params)

        def body(s, a):
            s, ts = env.step(KEY, s, a, params)
            pos = jnp.concatenate([s.agent_pos, s.landmark_pos])
            return s, dict(obs=ts.obs, reward=ts.reward, pos=pos, vel=s.agent_vel, comm=s.comm)

        out = jax.lax.scan(body, state, acts)[1]
        return {**out, "goal": state.goal}

    def theirs(key, acts):
        _, state = jm.reset(key)

        def body(s, a):
            speaker = a[0, :3] if continuous else a[0]
            obs, s, rew, _, _ = jm.step_env(KEY, s, {"speaker_0": speaker, "listener_0": a[1]})
            o = jnp.stack([jnp.pad(obs[n], (0, D - obs[n].shape[0])) for n in jm.agents])
            r = jnp.stack([rew[n] for n in jm.agents])
            return s, dict(obs=o, reward=r, pos=s.p_pos, vel=s.p_vel[:2], comm=s.c[0])

        out = jax.lax.scan(body, state, acts)[1]
        return {**out, "goal": state.goal}

    ours_out = _jit(jax.vmap(ours))(keys, actions)
    theirs_out = _jit(jax.vmap(theirs))(keys, actions)
    return jax.tree.map(np.asarray, (ours_out, theirs_out))


@pytest.fixture(scope="module")
def parity():
    return functools.cache(_rollouts)


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
def test_parity_with_jaxmarl(parity, continuous):
    ours, theirs = parity(continuous)
    np.testing.assert_array_equal(ours["goal"], theirs["goal"])
    for field in ("obs", "reward", "pos", "vel", "comm"):
        assert ours[field].shape == theirs[field].shape, field
        np.testing.assert_allclose(ours[field], theirs[field], atol=1e-4, rtol=1e-4, err_msg=field)


def test_parity_rollouts_exercise_the_rules(parity):
    """Every goal occurs, the listener moves, the speaker says different things."""
    ours, _ = parity(False)
    assert set(ours["goal"].tolist()) == {0, 1, 2}
    assert np.ptp(ours["pos"][:, :, 1], axis=1).max() > 0.5  # the listener travels
    np.testing.assert_array_equal(ours["pos"][:, :, 0], ours["pos"][:, :1, 0].repeat(T_PARITY, 1))
    assert len({tuple(c) for c in ours["comm"].reshape(-1, 3).tolist()}) == 3  # one-hot messages
    assert np.ptp(ours["reward"]) > 1.0


def test_roles_masks_and_padding():
    env = SimpleSpeakerListener()
    params = env.default_params()
    np.testing.assert_array_equal(env.agent_types, [SPEAKER, LISTENER])
    np.testing.assert_array_equal(env.obs_sizes, [3, 11])
    state, ts = _jit(env.reset)(KEY, params)
    np.testing.assert_array_equal(ts.action_mask, [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    assert ts.obs.shape == (2, 11) and ts.global_state.shape == (22,)
    goal = int(state.goal)
    np.testing.assert_allclose(ts.obs[0, :3], np.where(np.arange(3) == goal, 0.65, 0.15))
    np.testing.assert_array_equal(ts.obs[0, 3:], 0.0)  # the speaker's padding
    np.testing.assert_array_equal(ts.obs[1, 8:], 0.0)  # no message before the first step
    # A masked speaker action (4) is clipped to message 2; the listener moves up.
    state2, ts2 = _jit(env.step)(KEY, state, jnp.array([4, UP]), params)
    np.testing.assert_array_equal(ts2.obs[1, 8:], [0.0, 0.0, 1.0])
    np.testing.assert_allclose(state2.agent_vel[1], [0.0, 0.5], atol=1e-6)  # accel 5 * dt 0.1
    np.testing.assert_array_equal(state2.agent_pos[0], state.agent_pos[0])  # speaker static
    d = state2.agent_pos[1] - state2.landmark_pos[goal]
    np.testing.assert_allclose(ts2.reward, [-np.sum(d * d)] * 2, rtol=1e-6)


def test_continuous_roles_ignore_their_padding():
    env = SimpleSpeakerListener(continuous=True)
    params = env.default_params()
    state, ts = _jit(env.reset)(KEY, params)
    assert ts.action_mask.shape == (2, 0)
    a = jnp.array([[0.1, 0.2, 0.3, 0.9, 0.9], [0.7, 1.0, 0.0, 0.0, 0.0]])  # listener: left
    state2, ts2 = _jit(env.step)(KEY, state, a, params)
    np.testing.assert_allclose(ts2.obs[1, 8:], [0.1, 0.2, 0.3])  # entries 3, 4 unused
    np.testing.assert_allclose(state2.agent_vel[1], [-0.5, 0.0], atol=1e-6)  # entry 0 unused
    b = a.at[0, 3:].set(0.0).at[1, 0].set(0.0)
    state3, ts3 = _jit(env.step)(KEY, state, b, params)
    np.testing.assert_array_equal(ts3.obs, ts2.obs)


def test_truncation_and_ids():
    env, params = marljax.make("particle/simple_speaker_listener-v0", max_steps=2)
    state, ts = _jit(env.reset)(KEY, params)
    step = _jit(env.step)
    flags = []
    for _ in range(2):
        state, ts = step(KEY, state, jnp.zeros(2, jnp.int32), params)
        flags.append((bool(ts.terminated), bool(ts.truncated)))
    assert flags == [(False, False), (False, True)]
    cont, _ = marljax.make("particle/simple_speaker_listener-v0", continuous=True)
    assert cont.continuous and cont.action_space(params).shape == (5,)


@pytest.mark.parametrize(
    "override, match",
    [({"accel": -1.0}, "accel"), ({"dt": 0.0}, "dt"), ({"max_speed": float("nan")}, "max_speed")],
)
def test_bad_settings_fail_at_make(override, match):
    with pytest.raises(ValueError, match=match):
        marljax.make("particle/simple_speaker_listener-v0", **override)


def test_unknown_option_lists_close_matches():
    with pytest.raises(TypeError, match="num_agents|continuous"):
        marljax.make("particle/simple_speaker_listener-v0", num_agents=3)
