"""Tests of marljax.core (spaces, registry, wrappers, TimeStep) and of the conformance kit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.core import registry, spaces
from marljax.core.types import TimeStep
from marljax.core.wrappers import (
    AutoReset,
    EpisodeStats,
    InvalidActionError,
    ObsHistory,
    ValidateActions,
)
from marljax.testing import CountingEnv, CountingState, check_env, fast_jit

TOY_ID = "testing/counting-v0"


def _run(env, params, key, actions_seq):
    """Reset, then step (jitted) through `actions_seq`; returns the list of timesteps."""
    state, ts = env.reset(key, params)
    step = jax.jit(env.step)
    out = [ts]
    for actions in actions_seq:
        state, ts = step(key, state, jnp.asarray(actions, jnp.int32), params)
        out.append(ts)
    return out


# ------------------------------------------------------------------------------------ spaces


def _samples(space, n=512, mask=None):
    """`n` samples drawn under `jit(vmap(...))` (cheap LLVM optimisation: compile is the cost)."""
    keys = jax.random.split(jax.random.PRNGKey(1), n)
    return fast_jit(jax.vmap(lambda k: space.sample(k, mask)))(keys)


@pytest.mark.parametrize(
    "space",
    [
        spaces.Discrete(5),
        spaces.MultiDiscrete([3, 1, 4]),
        spaces.Box(-2.0, 3.0, (2, 3)),
        spaces.Box(-jnp.inf, jnp.inf, (4,)),
        spaces.Box(0.0, jnp.inf, (4,)),
        spaces.Box(jnp.array([0.0, -1.0]), jnp.array([1.0, 0.0]), (2,)),
    ],
    ids=repr,
)
def test_sample_under_jit_lands_in_contains(space):
    xs = _samples(space)
    assert xs.shape == (512, *space.shape)
    assert xs.dtype == jnp.dtype(space.dtype)
    assert bool(jnp.all(jax.jit(jax.vmap(space.contains))(xs)))


def test_discrete_sample_never_returns_masked_value():
    mask = jnp.array([False, True, False, True, False])
    xs = np.asarray(_samples(spaces.Discrete(5), n=2000, mask=mask))
    assert set(np.unique(xs).tolist()) == {1, 3}  # only legal values, and both of them
    # a single legal value is always chosen
    one = jnp.array([False, False, False, False, True])
    assert set(np.unique(_samples(spaces.Discrete(5), n=200, mask=one)).tolist()) == {4}


def test_multidiscrete_sample_respects_mask_per_entry():
    space = spaces.MultiDiscrete([3, 2])
    mask = jnp.array([True, False, True, False, True])  # entry 0 in {0, 2}, entry 1 == 1
    xs = np.asarray(_samples(space, n=1000, mask=mask))
    assert set(np.unique(xs[:, 0]).tolist()) == {0, 2}
    assert set(np.unique(xs[:, 1]).tolist()) == {1}


def test_discrete_contains():
    d = spaces.Discrete(3)
    for ok in (0, 2, jnp.int32(1), np.int64(2), 2.0):
        assert bool(d.contains(ok)), ok
    for bad in (-1, 3, 1.5, jnp.nan, jnp.inf, jnp.array([1]), jnp.zeros((2, 2), jnp.int32)):
        assert not bool(d.contains(bad)), bad
    assert not bool(jax.jit(d.contains)(jnp.int32(7)))
    assert bool(jax.jit(d.contains)(jnp.int32(2)))


def test_multidiscrete_contains():
    m = spaces.MultiDiscrete([2, 5])
    assert bool(m.contains(jnp.array([1, 4])))
    assert not bool(m.contains(jnp.array([2, 0])))  # entry 0 out of range
    assert not bool(m.contains(jnp.array([0, 5])))  # entry 1 out of range
    assert not bool(m.contains(jnp.array([0, -1])))
    assert not bool(m.contains(jnp.array([1, 2, 0])))  # wrong shape
    assert not bool(m.contains(jnp.array([0.5, 1.0])))  # not integral
    assert not bool(m.contains(jnp.array([jnp.nan, 1.0])))


def test_box_contains():
    b = spaces.Box(-1.0, 1.0, (2,))
    assert bool(b.contains(jnp.array([-1.0, 1.0])))
    assert not bool(b.contains(jnp.array([0.0, 1.01])))
    assert not bool(b.contains(jnp.array([0.0, jnp.nan])))
    assert not bool(b.contains(jnp.zeros((3,))))
    assert not bool(b.contains(jnp.zeros((2, 1))))
    unbounded = spaces.Box(-jnp.inf, jnp.inf, (2,))
    assert bool(unbounded.contains(jnp.array([1e30, -1e30])))
    assert not bool(unbounded.contains(jnp.array([0.0, jnp.nan])))
    assert bool(jax.jit(b.contains)(jnp.array([0.5, 0.5])))


def test_space_constructors_and_num_actions():
    with pytest.raises(ValueError):
        spaces.Discrete(0)
    with pytest.raises(ValueError):
        spaces.MultiDiscrete([2, 0])
    assert spaces.num_actions(spaces.Discrete(4)) == 4
    assert spaces.num_actions(spaces.MultiDiscrete([2, 3])) == 5
    assert spaces.num_actions(spaces.Box(0.0, 1.0, (3,))) == 0
    assert spaces.Box(0.0, 1.0, (2, 3)).flat_dim == 6


# ---------------------------------------------------------------------------------- registry


def test_make_toy_env_and_registered():
    assert TOY_ID in marljax.registered_envs()
    env, params = marljax.make(TOY_ID)
    assert isinstance(env, CountingEnv) and env.num_agents == 2
    assert params == env.default_params()


def test_unknown_id_lists_close_matches():
    with pytest.raises(KeyError, match=TOY_ID):
        marljax.make("testing/countng-v0")
    with pytest.raises(KeyError, match=TOY_ID):
        marljax.make("testing/counting-v1")


def test_unknown_override_names_it_and_suggests_close_match():
    with pytest.raises(TypeError, match=r"'gaol'.*did you mean 'goal'"):
        marljax.make(TOY_ID, gaol=3)
    with pytest.raises(TypeError, match=r"'num_agent'.*did you mean 'num_agents'"):
        marljax.make(TOY_ID, num_agent=3)
    with pytest.raises(TypeError, match=r"'zzz'"):
        marljax.make(TOY_ID, zzz=1)


def test_override_shape_and_type_errors():
    with pytest.raises(ValueError, match=r"'goal'.*shape"):
        marljax.make(TOY_ID, goal=[1, 2])
    with pytest.raises(TypeError, match=r"'goal'.*integer"):
        marljax.make(TOY_ID, goal=2.5)
    with pytest.raises(TypeError, match=r"'max_steps'"):
        marljax.make(TOY_ID, max_steps="ten")


def test_static_and_params_overrides():
    env, params = marljax.make(TOY_ID, num_agents=3)
    assert env.num_agents == 3 and params == env.default_params()
    env, params = marljax.make(TOY_ID, goal=4, max_steps=jnp.array(7), num_agents=1)
    assert env.num_agents == 1
    assert int(params.goal) == 4 and int(params.max_steps) == 7
    _, params = marljax.make(TOY_ID, goal=3.0)  # an integral float is accepted as the int
    assert int(params.goal) == 3
    state, ts = env.reset(jax.random.PRNGKey(0), params)
    assert ts.obs.shape == (1, 2)


def test_make_validates_the_overridden_params_once(monkeypatch):
    seen = []

    def validate(self, params):
        seen.append(int(params.goal))
        if int(params.goal) < 0:
            raise ValueError(f"goal must be >= 0, got {int(params.goal)}")

    monkeypatch.setattr(CountingEnv, "validate_params", validate)
    marljax.make(TOY_ID, goal=4)
    assert seen == [4]  # once, after the overrides were applied
    with pytest.raises(ValueError, match="goal must be >= 0"):
        marljax.make(TOY_ID, goal=-1)


def test_register_family_resolves_unregistered_ids(monkeypatch):
    monkeypatch.setattr(registry, "_FAMILIES", dict(registry._FAMILIES))  # restored after

    def resolve(name):
        if name != "two":
            raise KeyError(f"no toy {name!r}")
        return registry.EnvSpec(f"toy/{name}", CountingEnv, {"num_agents": 2}, {"goal": 5})

    registry.register_family("toy", resolve)
    env, params = marljax.make("toy/two", max_steps=3)
    assert env.num_agents == 2 and int(params.goal) == 5 and int(params.max_steps) == 3
    assert "toy/two" not in marljax.registered_envs()
    with pytest.raises(KeyError, match="no toy 'three'"):
        marljax.make("toy/three")
    with pytest.raises(KeyError, match="Unknown environment id 'toys/two'"):
        marljax.make("toys/two")  # no resolver for that family


@pytest.mark.parametrize(
    "bad_id",
    ["counting-v0", "testing/counting", "Testing/counting-v0", "testing/counting-v", "a/b/c-v0"],
)
def test_register_rejects_malformed_ids(bad_id):
    with pytest.raises(ValueError, match="family/name-v0"):
        registry.register(bad_id, CountingEnv)
    assert bad_id not in registry._REGISTRY


def test_register_rejects_duplicates():
    with pytest.raises(ValueError, match="already registered"):
        registry.register(TOY_ID, CountingEnv)


# ----------------------------------------------------------------------- TimeStep and toy env


def test_discount_is_zero_only_at_termination():
    def ts(terminated, truncated):
        z = jnp.zeros((1,))
        return TimeStep(z, z, jnp.array(terminated), jnp.array(truncated), z, z)

    assert float(ts(False, False).discount) == 1.0
    assert float(ts(False, True).discount) == 1.0  # truncation bootstraps
    assert float(ts(True, False).discount) == 0.0
    assert float(ts(True, True).discount) == 0.0
    assert bool(ts(False, True).done) and not bool(ts(False, False).done)


def test_counting_env_truncation_and_termination(counting, key):
    params = counting.default_params().replace(goal=5, max_steps=2)
    tss = _run(counting, params, key, [[0, 1], [1, 2]])
    assert [bool(t.truncated) for t in tss] == [False, False, True]
    assert not any(bool(t.terminated) for t in tss)
    assert float(tss[-1].discount) == 1.0
    np.testing.assert_array_equal(tss[-1].reward, [1.0, 2.0])
    np.testing.assert_array_equal(tss[-1].obs, [[2, 1], [2, 2]])

    params = params.replace(goal=2, max_steps=2)  # both at once: termination wins
    last = _run(counting, params, key, [[0, 0], [0, 0]])[-1]
    assert bool(last.terminated) and not bool(last.truncated)
    assert float(last.discount) == 0.0
    np.testing.assert_array_equal(last.action_mask, [[True, True, False], [True, True, True]])


# ---------------------------------------------------------------------------------- wrappers


def test_autoreset_keeps_final_obs_and_starts_new_episode(counting, key):
    env = AutoReset(counting)
    params = counting.default_params().replace(goal=2, max_steps=10)
    step = jax.jit(env.step)
    state, ts = env.reset(key, params)
    np.testing.assert_array_equal(ts.extras["final_obs"], ts.obs)
    state, ts = step(key, state, jnp.array([1, 1]), params)
    assert not bool(ts.done)
    np.testing.assert_array_equal(ts.obs, [[1, 1], [1, 1]])
    np.testing.assert_array_equal(ts.extras["final_obs"], ts.obs)

    state, ts = step(key, state, jnp.array([0, 2]), params)  # count reaches goal
    assert bool(ts.terminated)
    np.testing.assert_array_equal(ts.reward, [0.0, 2.0])  # reward of the final transition
    np.testing.assert_array_equal(ts.extras["final_obs"], [[2, 0], [2, 2]])
    np.testing.assert_array_equal(ts.obs, [[0, -1], [0, -1]])  # the new episode's first obs
    np.testing.assert_array_equal(
        ts.extras["final_global_state"], np.asarray([[2, 0], [2, 2]]).reshape(-1)
    )

    state, ts = step(key, state, jnp.array([1, 0]), params)
    assert not bool(ts.done)
    np.testing.assert_array_equal(ts.obs, [[1, 1], [1, 0]])  # counter restarted


def test_episode_stats_across_autoreset(counting, key):
    env = EpisodeStats(AutoReset(counting))
    params = counting.default_params().replace(goal=3, max_steps=10)
    actions = [[1, 2], [0, 1], [1, 0], [1, 1], [0, 2], [1, 1], [2, 0]]
    tss = _run(env, params, key, actions)
    returns = np.stack([np.asarray(t.extras["episode_return"]) for t in tss])
    lengths = [int(t.extras["episode_length"]) for t in tss]
    done = [bool(t.done) for t in tss]
    assert done == [False, False, False, True, False, False, True, False]
    # the finished episode's totals at the step it ends, zeros at every other step
    np.testing.assert_array_equal(
        returns,
        [[0, 0], [0, 0], [0, 0], [2, 3], [0, 0], [0, 0], [2, 4], [0, 0]],
    )
    assert lengths == [0, 0, 0, 3, 0, 0, 3, 0]


def test_episode_stats_on_truncated_episodes(counting, key):
    env = EpisodeStats(AutoReset(counting))
    params = counting.default_params().replace(goal=100, max_steps=2)
    tss = _run(env, params, key, [[1, 1], [1, 2], [0, 0], [2, 2]])
    assert [bool(t.truncated) for t in tss] == [False, False, True, False, True]
    np.testing.assert_array_equal(tss[2].extras["episode_return"], [2, 3])
    np.testing.assert_array_equal(tss[4].extras["episode_return"], [2, 2])
    assert int(tss[4].extras["episode_length"]) == 2


def test_obs_history_window(counting, key):
    env = ObsHistory(counting, 3)
    params = counting.default_params().replace(goal=10, max_steps=10)
    assert env.observation_space(params).shape == (6,)
    tss = _run(env, params, key, [[1, 2], [0, 0], [1, 1]])
    # agent 1's window of [count, last_action], oldest first, zeros before the start
    np.testing.assert_array_equal(tss[0].obs[1], [0, 0, 0, 0, 0, -1])
    np.testing.assert_array_equal(tss[1].obs[1], [0, 0, 0, -1, 1, 2])
    np.testing.assert_array_equal(tss[2].obs[1], [0, -1, 1, 2, 2, 0])
    np.testing.assert_array_equal(tss[3].obs[1], [1, 2, 2, 0, 3, 1])
    np.testing.assert_array_equal(tss[3].obs[0], [1, 1, 2, 0, 3, 1])
    # the global state stays the inner env's
    np.testing.assert_array_equal(tss[3].global_state, [3, 1, 3, 1])


def test_obs_history_restarts_inside_autoreset(counting, key):
    env = AutoReset(ObsHistory(counting, 3))
    params = counting.default_params().replace(goal=2, max_steps=10)
    tss = _run(env, params, key, [[1, 2], [0, 0], [1, 1]])
    assert bool(tss[2].terminated)
    np.testing.assert_array_equal(tss[2].extras["final_obs"][1], [0, -1, 1, 2, 2, 0])
    np.testing.assert_array_equal(tss[2].obs[1], [0, 0, 0, 0, 0, -1])  # fresh window
    np.testing.assert_array_equal(tss[3].obs[1], [0, 0, 0, -1, 1, 1])


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_validate_actions_names_the_agent(jit, key):
    env, params = marljax.make(TOY_ID, debug=True, num_agents=3)
    assert isinstance(env, ValidateActions)
    step = jax.jit(env.step) if jit else env.step
    error = Exception if jit else InvalidActionError  # under jit: a runtime error, same text
    state, _ = env.reset(key, params)

    with pytest.raises(error, match=r"agent 2: action 5 is outside the action space"):
        jax.block_until_ready(step(key, state, jnp.array([0, 1, 5]), params))
    with pytest.raises(error, match=r"agent 1: action -1 is outside the action space"):
        jax.block_until_ready(step(key, state, jnp.array([0, -1, 0]), params))
    with pytest.raises(error, match=r"agent 0: action 2 is masked"):
        jax.block_until_ready(step(key, state, jnp.array([2, 0, 0]), params))
    _, ts = step(key, state, jnp.array([1, 2, 2]), params)  # legal: no error
    np.testing.assert_array_equal(ts.reward, [1.0, 2.0, 2.0])


def test_validate_actions_under_vmap_names_the_agent(key):
    env = ValidateActions(CountingEnv(2))
    params = env.default_params()
    keys = jax.random.split(key, 2)
    state, _ = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    with pytest.raises(Exception, match=r"agent 1: action 3 is outside"):
        jax.block_until_ready(step(keys, state, jnp.array([[0, 0], [0, 3]]), params))


def test_fast_path_clips_and_does_not_raise(key):
    env, params = marljax.make(TOY_ID)
    state, _ = env.reset(key, params)
    _, ts = jax.jit(env.step)(key, state, jnp.array([7, -3]), params)
    np.testing.assert_array_equal(ts.obs[:, 1], [2, 0])  # clipped into 0..2
    _, ts = jax.jit(env.step)(key, state, jnp.array([2, 0]), params)  # masked: executed as given
    np.testing.assert_array_equal(ts.reward, [2.0, 0.0])


# -------------------------------------------------------------------------------- check_env


def test_check_env_passes_on_toy_env():
    env, params = marljax.make(TOY_ID, num_agents=3)
    check_env(env, params)


def test_check_env_passes_on_wrapped_toy_env_in_debug_mode():
    # debug=True adds ValidateActions: the kit's actions are legal, so it must not raise.
    # Long episodes (max_steps > num_steps) exercise the kit's short-horizon rollout too.
    inner, params = marljax.make(TOY_ID, debug=True, goal=1000, max_steps=100)
    env = EpisodeStats(ObsHistory(inner, 3))
    check_env(env, params, num_steps=32)


class WrongRewardShape(CountingEnv):
    def step(self, key, state, actions, params):
        state, ts = super().step(key, state, actions, params)
        return state, ts.replace(reward=ts.reward.sum())


class ObsOutsideSpace(CountingEnv):
    def observation_space(self, params):
        return spaces.Box(0.0, 10.0, (2,))  # but last_action is -1 right after reset


class IntObsForFloatSpace(CountingEnv):
    def _timestep(self, state, reward, terminated, truncated):
        ts = super()._timestep(state, reward, terminated, truncated)
        return ts.replace(obs=ts.obs.astype(jnp.int32))


class NeverTruncates(CountingEnv):
    def step(self, key, state, actions, params):
        state, ts = super().step(key, state, actions, params)
        return state, ts.replace(truncated=jnp.array(False))


class TruncatesLate(CountingEnv):
    def step(self, key, state, actions, params):
        state, ts = super().step(key, state, actions, params)
        late = jnp.logical_and(state.count > params.max_steps, ~ts.terminated)
        return state, ts.replace(truncated=late)


class TruncatesEarly(CountingEnv):
    def step(self, key, state, actions, params):
        state, ts = super().step(key, state, actions, params)
        early = jnp.logical_and(state.count >= params.max_steps - 1, ~ts.terminated)
        return state, ts.replace(truncated=early)


class NoLegalAction(CountingEnv):
    def action_mask(self):
        return super().action_mask().at[1].set(False)


class LateNoLegalAction(CountingEnv):
    def step(self, key, state, actions, params):
        state, ts = super().step(key, state, actions, params)
        mask = ts.action_mask.at[1].set(state.count < 3)
        return state, ts.replace(action_mask=mask)


class RewardAtReset(CountingEnv):
    def reset(self, key, params):
        state, ts = super().reset(key, params)
        return state, ts.replace(reward=ts.reward + 1.0)


class NaNReward(CountingEnv):
    def step(self, key, state, actions, params):
        state, ts = super().step(key, state, actions, params)
        return state, ts.replace(reward=jnp.where(state.count == 3, jnp.nan, ts.reward))


class ExtrasOnlyAtStep(CountingEnv):
    def step(self, key, state, actions, params):
        state, ts = super().step(key, state, actions, params)
        return state, ts.replace(extras={"hits": jnp.zeros(())})


class WeakTypedCounter(CountingEnv):
    """reset stores a Python 0 (weak type), step a strong int32: jit(step) retraces."""

    def reset(self, key, params):
        state, ts = super().reset(key, params)
        return state.replace(count=0), ts

    def step(self, key, state, actions, params):
        state, ts = super().step(key, state, actions, params)
        return state.replace(count=state.count.astype(jnp.int32) + jnp.int32(0)), ts


class TraceTimeRandomness(CountingEnv):
    """A Python-side counter baked in at trace time: not a function of the key."""

    def __init__(self, num_agents: int = 2):
        super().__init__(num_agents)
        self._traces = 0

    def reset(self, key, params):
        self._traces += 1
        state, ts = super().reset(key, params)
        return state, ts.replace(global_state=ts.global_state + self._traces)


class TraceTimeRandomStep(CountingEnv):
    """Like `TraceTimeRandomness`, in `step`: the kit must run both traces to see it."""

    def __init__(self, num_agents: int = 2):
        super().__init__(num_agents)
        self._traces = 0

    def step(self, key, state, actions, params):
        self._traces += 1
        state, ts = super().step(key, state, actions, params)
        return state, ts.replace(global_state=ts.global_state + self._traces)


class ShapeFromParams(CountingEnv):
    def reset(self, key, params):
        state, ts = super().reset(key, params)
        return state, ts.replace(extras={"pad": jnp.zeros((int(params.goal),))})


class StateChangesShape(CountingEnv):
    def step(self, key, state, actions, params):
        state, ts = super().step(key, state, actions, params)
        return CountingState(state.count, state.last_action[None]), ts


@pytest.mark.parametrize(
    "env_cls, prop",
    [
        (WrongRewardShape, "reward shape/dtype"),
        (ObsOutsideSpace, "observation space"),
        (IntObsForFloatSpace, "obs shape/dtype"),
        (TruncatesLate, "episode ends"),
        (TruncatesEarly, "episode ends"),
        (NoLegalAction, "masks"),
        (LateNoLegalAction, "masks"),
        (RewardAtReset, "reset"),
        (NaNReward, "finite values"),
        (ExtrasOnlyAtStep, "extras"),
        (WeakTypedCounter, "jit traces once"),
        (TraceTimeRandomness, "determinism"),
        (TraceTimeRandomStep, "determinism"),
        (ShapeFromParams, "signatures"),
        (StateChangesShape, "state constant over steps"),
    ],
    ids=lambda x: x.__name__ if isinstance(x, type) else None,
)
def test_check_env_catches_broken_env(env_cls, prop):
    env = env_cls(2)
    params = env.default_params().replace(goal=1000, max_steps=6)
    with pytest.raises(AssertionError, match=rf"check_env\({env_cls.__name__}\) failed \[{prop}"):
        check_env(env, params, num_steps=16, num_envs=2)


def test_check_env_catches_ignored_max_steps_on_long_episodes():
    # max_steps larger than the rollout: the kit's short-horizon rollout must still catch it
    env = NeverTruncates(2)
    params = env.default_params().replace(goal=1000, max_steps=500)
    with pytest.raises(AssertionError, match=r"\[episode ends\].*max_steps = 4"):
        check_env(env, params, num_steps=16, num_envs=2)
