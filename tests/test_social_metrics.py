"""Social metrics (Perolat et al. 2017) on hand-computed episodes, and the SocialMetrics wrapper."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
import marljax.envs.social  # noqa: F401  (registers social/*)
from marljax.core.wrappers import AutoReset
from marljax.evaluation import social as S
from marljax.testing import CountingEnv

KEY = jax.random.PRNGKey(0)


@pytest.mark.parametrize("jit", [False, True])
def test_gini_known_vectors(jit):
    gini = jax.jit(S.gini) if jit else S.gini
    np.testing.assert_allclose(gini(jnp.array([1.0, 1.0, 1.0, 1.0])), 0.0)
    # |0-4| for 6 ordered pairs = 24; 2 * 4 * 4 = 32.
    np.testing.assert_allclose(gini(jnp.array([0.0, 0.0, 0.0, 4.0])), 0.75)
    # ordered pairs: 2 * (1 + 2 + 1) = 8; 2 * 3 * 6 = 36.
    np.testing.assert_allclose(gini(jnp.array([1.0, 2.0, 3.0])), 8 / 36, rtol=1e-6)
    np.testing.assert_allclose(gini(jnp.zeros(3)), 0.0)
    # batch axes are kept
    np.testing.assert_allclose(gini(jnp.array([[1.0, 1.0], [0.0, 2.0]])), [0.0, 0.5])
    np.testing.assert_allclose(S.equality(jnp.array([0.0, 0.0, 0.0, 4.0])), 0.25)


def test_episode_metrics_by_hand():
    # T = 4 steps, A = 2 agents.
    rewards = jnp.array([[1.0, 0.0], [0.0, 0.0], [1.0, 2.0], [0.0, -1.0]])
    tagged = jnp.array([[False, False], [True, False], [True, True], [False, False]])
    coop = jnp.array([[True, False], [False, False], [True, False], [False, False]])
    defect = jnp.array([[False, True], [False, False], [False, False], [False, True]])
    punished = jnp.array([[False, True], [False, False], [False, False], [False, False]])
    m = S.episode_social_metrics(rewards, tagged, coop, defect, punished)
    np.testing.assert_allclose(m["efficiency"], 3.0 / 4)  # returns (2, 1), sum 3 over 4 steps
    np.testing.assert_allclose(m["equality"], 1 - 2 / (2 * 2 * 3), rtol=1e-6)
    # agent 0 rewarded at t = 1, 3 -> 2; agent 1 at t = 3 -> 3; mean 2.5.
    np.testing.assert_allclose(m["sustainability"], 2.5)
    np.testing.assert_allclose(m["peace"], (2 * 4 - 3) / 4)
    np.testing.assert_allclose(m["cooperation_rate"], 2 / 4)  # 2 cooperative of 4 choices
    np.testing.assert_allclose(m["punishment_rate"], 1 / 8)
    # Without `defected`, every agent-step counts as a choice.
    np.testing.assert_allclose(S.cooperation_rate(coop), 2 / 8)
    # `valid` masks the padding after the episode's end (first 3 steps only).
    valid = jnp.array([True, True, True, False])
    np.testing.assert_allclose(S.utilitarian_efficiency(rewards, valid), 4.0 / 3)
    np.testing.assert_allclose(S.peace(None, 2), 2.0)
    np.testing.assert_allclose(S.sustainability(jnp.zeros((3, 2))), 0.0)
    jitted = jax.jit(S.episode_social_metrics)(rewards, tagged, coop, defect, punished)
    for k, v in m.items():
        np.testing.assert_allclose(jitted[k], v, rtol=1e-6)


def test_bootstrap_ci():
    mean, lo, hi = S.bootstrap_ci(KEY, jnp.array([0.5, 0.5, 0.5]))
    np.testing.assert_allclose([mean, lo, hi], [0.5, 0.5, 0.5])
    mean, lo, hi = S.bootstrap_ci(KEY, jnp.array([0.0, 1.0, 0.0, 1.0]), num_resamples=500)
    assert float(lo) < 0.5 < float(hi) and float(mean) == 0.5
    assert 0.0 <= float(lo) and float(hi) <= 1.0


@pytest.fixture(scope="module")
def counting_run():
    """SocialMetrics(AutoReset(CountingEnv)) (reward = action, episodes of 5 steps), jitted once."""
    env = S.SocialMetrics(AutoReset(CountingEnv(num_agents=2)))
    params = env.default_params()

    def run(actions):
        def body(state, a):
            state, ts = env.step(KEY, state, a, params)
            return state, ts

        state, ts0 = env.reset(KEY, params)
        return ts0, jax.lax.scan(body, state, actions)[1]

    return env, jax.jit(run)


def test_wrapper_matches_pure_functions(counting_run):
    env, run = counting_run
    assert env.metric_names == ("efficiency", "equality", "sustainability", "peace")
    actions = jnp.array([[1, 0], [0, 0], [1, 2], [0, 1], [1, 0], [1, 1], [0, 0]])
    ts0, ts = run(actions)
    assert float(ts0.extras["social/efficiency"]) == 0.0
    done = np.asarray(ts.done)
    np.testing.assert_array_equal(done, [False, False, False, False, True, False, False])
    expected = S.episode_social_metrics(actions[:5].astype(jnp.float32))
    for k, v in expected.items():
        got = np.asarray(ts.extras[f"social/{k}"])
        np.testing.assert_allclose(got[4:], float(v), rtol=1e-6)  # held after the episode ends
        np.testing.assert_allclose(got[:4], 0.0)  # nothing finished before


def test_wrapper_inside_autoreset_and_cooperation_on_public_goods():
    env, params = marljax.make("social/public_goods_punishment-v0", num_agents=2, num_rounds=2)
    wrapped = AutoReset(S.SocialMetrics(env))
    assert "cooperation_rate" in wrapped.metric_names and "punishment_rate" in wrapped.metric_names
    state, _ = wrapped.reset(KEY, params)
    K = 3
    # Round 1: 0 contributes all (coop) and punishes 1; 1 contributes nothing. Round 2: both 0.
    state, ts = wrapped.step(KEY, state, jnp.array([4 * K + 1, 0 * K + 2]), params)
    state, ts = wrapped.step(KEY, state, jnp.array([0 * K + 2, 0 * K + 2]), params)
    assert bool(ts.done)
    np.testing.assert_allclose(ts.extras["social/cooperation_rate"], 1 / 4)
    np.testing.assert_allclose(ts.extras["social/punishment_rate"], 1 / 4)
    # returns: round 1 (10-10+8-1, 10+8-3) = (7, 15); round 2 (10, 10) -> 17, 25 over 2 steps.
    np.testing.assert_allclose(ts.extras["social/efficiency"], 42 / 2, rtol=1e-6)
    np.testing.assert_allclose(ts.extras["social/peace"], 2.0)


def test_wrapper_passes_check_env():
    from marljax.envs.social import DirectPunishment, PublicGoods
    from marljax.testing import check_env

    env = S.SocialMetrics(DirectPunishment(PublicGoods(num_agents=2)))
    check_env(env, env.default_params().replace(num_rounds=3), num_steps=6, num_envs=2)
