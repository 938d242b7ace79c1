"""Property-based tests of every registered environment (hypothesis).

For each id of `marljax.registered_envs()` (read at collection time, so a new family is covered
as soon as it registers), hypothesis draws params inside the env's documented ranges
(`Environment.param_ranges`, plus small values of `max_steps`) and a seed for the random legal
actions, and checks one episode in each of a few environments:

- no NaN or inf in observations, rewards and global states;
- shapes and dtypes constant (the rollout traces once for all draws) and matching the declared
  spaces; observations and global states inside their spaces;
- masks respected: every agent always has a legal action, and actions sampled from the mask are
  legal;
- the episode ends by the time limit, and a truncation happens exactly at `max_steps`;
- `validate_params` accepts every drawn setting.

Each env compiles ONE rollout, with params as traced arguments, and replays it for every draw.
The number of env x params cases that ran is printed at the end of the module.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import marljax
from marljax.core import spaces
from marljax.testing import fast_jit

NUM_ENVS = 2  # E, environments vmapped over keys per draw
MAX_STEPS_CAP = 12  # max_steps is drawn in 1 .. min(default, MAX_STEPS_CAP)
NUM_STEPS = MAX_STEPS_CAP  # T, steps per rollout: every episode must end within it
EXAMPLES = 12  # hypothesis draws per env

ENV_IDS = marljax.registered_envs()

# These programs run a few steps: compile time is what counts (marljax.testing.fast_jit).
_jit = fast_jit


@pytest.fixture(scope="module")
def case_count(request):
    """Counts the env x params cases run; reports the total when the module ends."""
    counts: dict[str, int] = {}
    yield counts
    line = (
        f"test_properties: {sum(counts.values())} env x params cases over {len(counts)} envs "
        f"(each: {NUM_ENVS} episodes of random legal actions)"
    )
    plugins = request.config.pluginmanager
    reporter, capman = plugins.getplugin("terminalreporter"), plugins.getplugin("capturemanager")
    if reporter is None or capman is None:
        print(line)
        return
    with capman.global_and_fixture_disabled():  # shown even under `pytest -q`
        reporter.write_line(line)


# ------------------------------------------------------------------------------ params


def _host_params(params):
    """Every leaf as a numpy array with jax's dtype (no weak types: one trace for all draws)."""
    return jax.tree.map(lambda x: np.asarray(jnp.asarray(x)), params)


def _ranges(env, params) -> dict[str, tuple[float, float]]:
    """The documented ranges of `env` plus small values of `max_steps`."""
    ranges = dict(env.param_ranges())
    names = {f.name for f in dataclasses.fields(params)}
    unknown = sorted(set(ranges) - names)
    assert not unknown, f"param_ranges of {env.name} names unknown params fields {unknown}"
    default_steps = int(np.asarray(params.max_steps))
    lo, hi = ranges.get("max_steps", (1, default_steps))
    ranges["max_steps"] = (max(1, int(lo)), max(1, min(int(hi), default_steps, MAX_STEPS_CAP)))
    return ranges


def _field_strategy(default: np.ndarray, lo: float, hi: float):
    """Values of one params field: its default's shape and dtype, elements in `[lo, hi]`."""
    dtype = default.dtype
    lo, hi = _ends(dtype, lo, hi)
    if dtype == np.bool_:
        elements = st.integers(int(lo), int(hi)).map(bool)
    elif np.issubdtype(dtype, np.integer):
        elements = st.integers(int(lo), int(hi))
    else:
        elements = st.floats(float(lo), float(hi), allow_nan=False, allow_infinity=False, width=32)
    return hnp.arrays(dtype, default.shape, elements=elements)


def _ends(dtype: np.dtype, lo: float, hi: float) -> tuple[float, float]:
    """The smallest and largest values of `dtype` inside `[lo, hi]` (integers for int/bool)."""
    if dtype == np.bool_ or np.issubdtype(dtype, np.integer):
        return float(np.ceil(lo)), float(np.floor(hi))
    lo32, hi32 = np.float32(lo), np.float32(hi)
    if lo32 < lo:  # the range's ends as float32 values inside it
        lo32 = np.nextafter(lo32, np.float32(np.inf))
    if hi32 > hi:
        hi32 = np.nextafter(hi32, np.float32(-np.inf))
    return float(lo32), float(hi32)


def _corner(base, ranges, end: int):
    """`base` with every field of `ranges` at the low (`end=0`) or high (`end=1`) end."""
    values = {}
    for name, (lo, hi) in ranges.items():
        default = np.asarray(getattr(base, name))
        value = _ends(default.dtype, lo, hi)[end]
        values[name] = np.full(default.shape, value).astype(default.dtype)
    return base.replace(**values)


def _params_strategy(base, ranges):
    fields = {
        name: _field_strategy(np.asarray(getattr(base, name)), lo, hi)
        for name, (lo, hi) in sorted(ranges.items())
    }
    return st.fixed_dictionaries(fields).map(lambda values: base.replace(**values))


# ------------------------------------------------------------------------------ rollout


def _spaces(env, params):
    return env.observation_space(params), env.action_space(params), env.global_state_space(params)


def _in_space(space: spaces.Space, x: np.ndarray, lead: int) -> np.ndarray:
    """Host membership test of a batch `x [*lead_dims, *space.shape]`, reduced to lead dims."""
    axes = tuple(range(lead, x.ndim))
    if isinstance(space, spaces.Box):
        low = np.broadcast_to(np.asarray(space.low, np.float64), space.shape)
        high = np.broadcast_to(np.asarray(space.high, np.float64), space.shape)
        ok = (x >= low) & (x <= high) & ~np.isnan(x.astype(np.float64))
    elif isinstance(space, spaces.Discrete):
        ok = (x >= 0) & (x < space.n)
    elif isinstance(space, spaces.MultiDiscrete):
        ok = (x >= 0) & (x < space.nvec)
    else:
        raise TypeError(f"unknown space {space!r}")
    return np.all(ok, axis=axes) if axes else ok


def _make_rollout(env, act_space, traces):
    """`rollout(keys [E], params) -> (first, steps)`: one episode of random legal actions.

    `steps` holds `[E, T, ...]` arrays; the steps after the episode's end are ignored by the
    checks (a core env's behaviour after the end is unspecified, and skipping `AutoReset` keeps
    one copy of `reset` in the program: compile time is what this test pays for).
    """
    num_agents = env.num_agents

    def rollout(key, params):
        traces["n"] += 1
        key_reset, key_steps = jax.random.split(key)
        state, ts0 = env.reset(key_reset, params)

        def body(carry, keys_t):
            state, ts = carry
            actions = jax.vmap(act_space.sample)(keys_t[1:], ts.action_mask)
            state, ts_next = env.step(keys_t[0], state, actions, params)
            out = {
                "mask_before": ts.action_mask,
                "actions": actions,
                "obs": ts_next.obs,
                "reward": ts_next.reward,
                "terminated": ts_next.terminated,
                "truncated": ts_next.truncated,
                "global_state": ts_next.global_state,
            }
            return (state, ts_next), out

        step_keys = jax.random.split(key_steps, (NUM_STEPS, 1 + num_agents))
        _, steps = jax.lax.scan(body, (state, ts0), step_keys)
        first = {
            "obs": ts0.obs,
            "reward": ts0.reward,
            "global_state": ts0.global_state,
            "terminated": ts0.terminated,
            "truncated": ts0.truncated,
        }
        return first, steps

    return _jit(jax.vmap(rollout, in_axes=(0, None)))


def _check_rollout(env_id, env, params, first, steps, act_space):
    """Assert the properties of the module docstring on one rollout (numpy arrays)."""
    obs_space, _, gs_space = _spaces(env, params)
    max_steps = int(params.max_steps)
    where = f"{env_id} with params {_describe(params)}"
    A = env.num_agents

    # Episodes end by the time limit; a truncation happens exactly at it.
    term, trunc = steps["terminated"], steps["truncated"]
    done = term | trunc  # [E, T]
    assert not first["terminated"].any() and not first["truncated"].any(), (
        f"{where}: reset returned an ended episode"
    )
    assert done.any(axis=1).all(), (
        f"{where}: an episode ran {NUM_STEPS} steps without ending, max_steps={max_steps}"
    )
    length = done.argmax(axis=1) + 1  # [E] steps of the first episode
    assert (length <= max_steps).all(), (
        f"{where}: episodes of {length.tolist()} steps with max_steps={max_steps}"
    )
    end = (np.arange(done.shape[0]), length - 1)
    assert (term[end] | (length == max_steps)).all(), (
        f"{where}: truncated after {length.tolist()} steps but max_steps={max_steps}"
    )
    # Only the steps up to the episode's end are checked below.
    live = np.arange(done.shape[1])[None, :] < length[:, None]  # [E, T]
    steps = {k: v[live] for k, v in steps.items()}  # leading axis: live (env, step) pairs

    # Shapes and dtypes match the declared spaces.
    obs = steps["obs"]
    assert obs.shape[1:] == (A, *obs_space.shape), (
        f"{where}: obs shape {obs.shape[1:]} != [A, *observation_space.shape]"
    )
    assert obs.dtype == jnp.dtype(obs_space.dtype), f"{where}: obs dtype {obs.dtype}"
    gs = steps["global_state"]
    assert gs.shape[1:] == tuple(gs_space.shape), f"{where}: global_state shape {gs.shape[1:]}"
    assert gs.dtype == jnp.dtype(gs_space.dtype), f"{where}: global_state dtype {gs.dtype}"
    assert steps["reward"].shape[1:] == (A,) and np.issubdtype(steps["reward"].dtype, np.floating)
    assert term.dtype == np.bool_ and trunc.dtype == np.bool_
    mask = steps["mask_before"]
    assert mask.dtype == np.bool_ and mask.shape[1:] == (A, spaces.num_actions(act_space))

    # Finite values everywhere, at reset too.
    for name, x in [*steps.items(), *(("reset " + k, v) for k, v in first.items())]:
        if np.issubdtype(x.dtype, np.inexact):
            bad = np.argwhere(~np.isfinite(x))
            assert bad.size == 0, f"{where}: {name} is not finite at index {bad[0].tolist()}"
    assert not np.any(first["reward"]), f"{where}: reset returned a non-zero reward"

    # Inside the declared spaces.
    for name, x, space, lead in (
        ("obs", obs, obs_space, 2),
        ("reset obs", first["obs"], obs_space, 2),
        ("global_state", gs, gs_space, 1),
        ("reset global_state", first["global_state"], gs_space, 1),
    ):
        bad = np.argwhere(~_in_space(space, x, lead))
        assert bad.size == 0, f"{where}: {name} outside its space at {bad[0].tolist()}"

    # Masks (the one after reset and after every step but the last): every agent can always
    # act, and the actions sampled from the mask are legal.
    if isinstance(act_space, (spaces.Discrete, spaces.MultiDiscrete)):
        segments = _segments(act_space)
        for lo, hi in segments:
            stuck = np.argwhere(~mask[..., lo:hi].any(-1))
            assert stuck.size == 0, f"{where}: an agent has no legal action ({stuck[0]})"
        acts = steps["actions"].reshape(*steps["actions"].shape[:2], len(segments))
        for i, (lo, hi) in enumerate(segments):
            a = acts[..., i]
            assert ((a >= 0) & (a < hi - lo)).all(), f"{where}: sampled action out of range"
            legal = np.take_along_axis(mask[..., lo:hi], a[..., None].astype(np.int64), -1)
            assert legal.all(), f"{where}: a masked action was sampled"
    else:
        assert _in_space(act_space, steps["actions"], 2).all(), f"{where}: action outside space"


def _segments(space) -> list[tuple[int, int]]:
    if isinstance(space, spaces.Discrete):
        return [(0, space.n)]
    bounds = np.concatenate([[0], np.cumsum(space.nvec)]).tolist()
    return list(zip(bounds[:-1], bounds[1:]))


def _describe(params) -> str:
    out = []
    for f in dataclasses.fields(params):
        v = np.asarray(getattr(params, f.name))
        if v.size <= 4:
            out.append(f"{f.name}={v.tolist()}")
        else:
            out.append(f"{f.name}=<{v.dtype}{list(v.shape)}>")
    return ", ".join(out)


# ------------------------------------------------------------------------------ the test


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_validate_params_accepts_both_ends_of_every_documented_range(env_id):
    """`param_ranges` documents what may vary; `validate_params` (the only check) accepts it.

    Host-side and compile-free: every ranged field at its low end, then at its high end.
    """
    env, params = marljax.make(env_id)
    base = _host_params(params)
    ranges = _ranges(env, base)
    for end in (0, 1):
        env.validate_params(_corner(base, ranges, end))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_random_params_and_actions_keep_the_env_valid(env_id, case_count, make_for_checks):
    env, params = make_for_checks(env_id)
    base = _host_params(params)
    ranges = _ranges(env, base)
    # Spaces are read from the default params: their shapes and discrete sizes are static.
    act_space = env.action_space(base)
    traces = {"n": 0}
    rollout = _make_rollout(env, act_space, traces)
    case_count[env_id] = 0

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,  # the same draws on every run (deterministic tests)
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(params=_params_strategy(base, ranges), seed=st.integers(0, 2**31 - 1))
    def check(params, seed):
        env.validate_params(params)  # documented ranges must be accepted
        keys = jax.random.split(jax.random.PRNGKey(seed), NUM_ENVS)
        first, steps = jax.tree.map(np.asarray, rollout(keys, params))
        _check_rollout(env_id, env, params, first, steps, act_space)
        case_count[env_id] += 1

    check()
    assert traces["n"] == 1, (
        f"{env_id}: the rollout traced {traces['n']} times for params of the same shapes; "
        "shapes and dtypes must not depend on param values"
    )
    assert case_count[env_id] >= 1
