"""The Jumanji adapter: parity with Jumanji's own steps, a golden trajectory, ids and errors.

`tests/data/jumanji_golden.json` holds 10 steps of each benchmark id from a fixed key and fixed
actions (rewards, weighted sums of observations and global states, mask sums, ends), recorded
with jumanji 1.1.2; a change of Jumanji's dynamics fails `test_golden_trajectories`. Regenerate
it (after checking why it changed) with `python tests/test_jumanji_adapter.py`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.core import registry
from marljax.testing import check_env, fast_jit

jumanji = pytest.importorskip("jumanji")

from marljax.envs.adapters import JumanjiEnv, from_jumanji  # noqa: E402
from marljax.envs.adapters.jumanji import JUMANJI_TASKS  # noqa: E402

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "jumanji_golden.json")
TIME_LIMIT = 20  # T of the parity runs: Jumanji's own time limit, so its ends are exercised
GOLDEN_STEPS = 10
#: the benchmark ids of the golden trajectories (and of most parity runs), with Jumanji's time
#: limit cut to TIME_LIMIT (a static override: the first steps are those of the registered id)
CASES = ("rware/tiny-4ag-v0", "connector/10x10-10ag-v0", "cleaner/10x10-3ag-v0")
#: static overrides of the parity runs beyond the ids (a small Connector whose agents get stuck)
OVERRIDES = {"jumanji/Connector-v3": {"grid_size": 5, "num_agents": 3}}


class Case:
    """One id's adapter and its Jumanji env, each with jitted reset and step (built once)."""

    def __init__(self, env_id: str):
        self.env_id = env_id
        overrides = OVERRIDES.get(env_id, {})
        self.env, self.params = marljax.make(env_id, time_limit=TIME_LIMIT, **overrides)
        jenv = self.env.jumanji_env
        self.reset = fast_jit(self.env.reset)
        self.step = fast_jit(self.env.step)  # params are traced: one program for every max_steps
        self.j_reset = fast_jit(jenv.reset)
        self.j_step = fast_jit(jenv.step)


@pytest.fixture(scope="module")
def cases() -> dict[str, Case]:
    """`Case`s built on first use and shared by the tests of this module."""
    return {}


def _case(cases: dict[str, Case], env_id: str) -> Case:
    if env_id not in cases:
        cases[env_id] = Case(env_id)
    return cases[env_id]


def _legal_actions(mask: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """A fixed action per agent: its `draw`-th legal action (mod the number of legal ones)."""
    out = []
    for m, d in zip(np.asarray(mask), draws, strict=True):
        legal = np.flatnonzero(m)
        out.append(legal[d % len(legal)])
    return np.asarray(out, np.int32)


# ------------------------------------------------------------------------- reference views


def _connector_views(grid: np.ndarray, num_agents: int) -> np.ndarray:
    """Agent-centric one-hot layers, written independently of the adapter (numpy)."""
    grid = np.asarray(grid)
    views = np.zeros((num_agents, *grid.shape, 6), np.float32)
    for i in range(num_agents):
        for k in range(3):  # 0 path, 1 head, 2 target: codes 1 + k + 3 j
            own = grid == 1 + k + 3 * i
            other = (grid > 0) & ((grid - 1) % 3 == k) & ~own
            views[i, ..., k] = own
            views[i, ..., 3 + k] = other
    return views


def _cleaner_views(grid: np.ndarray, locations: np.ndarray) -> np.ndarray:
    grid, locations = np.asarray(grid), np.asarray(locations)
    views = np.zeros((len(locations), *grid.shape, 4), np.float32)
    views[..., 0] = grid == 0  # dirty
    views[..., 1] = grid == 2  # wall
    for i, (r, c) in enumerate(locations):
        views[i, r, c, 2] = 1
        for j, (r2, c2) in enumerate(locations):
            if j != i:
                views[i, r2, c2, 3] += 1
    return views


def _expected_obs(kind: str, observation, num_agents: int) -> np.ndarray:
    """What the adapter should observe, by Jumanji class (`JumanjiEnv.jumanji_class`)."""
    if kind == "RobotWarehouse":
        return np.asarray(observation.agents_view, np.float32)
    if kind == "Connector":
        return _connector_views(observation.grid, num_agents)
    return _cleaner_views(observation.grid, observation.agents_locations)


def _expected_ends(kind: str, j_ts, j_state, time_limit: int) -> tuple[bool, bool]:
    """(terminated, truncated) as the adapter's docstring defines them from Jumanji's timestep."""
    last = bool(j_ts.last())
    if kind == "Connector":  # Jumanji reports its time limit as a truncation
        terminated = last and bool(np.all(np.asarray(j_ts.discount) == 0))
    else:  # RWARE and Cleaner end with discount 0 at the time limit too
        terminated = last and int(j_state.step_count) < time_limit
    return terminated, last and not terminated


# ------------------------------------------------------------------------- tests


def test_importing_marljax_does_not_import_jumanji():
    code = (
        "import sys, marljax, marljax.envs, marljax.envs.adapters as a; "
        "ids = marljax.registered_envs(); "
        "assert {'rware/tiny-2ag-v0', 'rware/tiny-4ag-v0', 'cleaner/10x10-3ag-v0'} <= set(ids); "
        "assert callable(a.from_jumanji) and 'jumanji' not in sys.modules; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr


@pytest.mark.parametrize(
    "env_id, seed, end",
    [
        ("rware/tiny-4ag-v0", 5, (3, True)),  # two robots collide on step 3
        ("rware/tiny-4ag-v0", 0, (TIME_LIMIT, False)),  # Jumanji's time limit (discount 0)
        ("jumanji/Connector-v3", 0, (12, True)),  # every agent connected or blocked
        ("connector/10x10-10ag-v0", 0, (17, True)),
        ("cleaner/10x10-3ag-v0", 0, (TIME_LIMIT, False)),  # a masked action: see below
    ],
)
def test_parity_with_jumanji_step_by_step(cases, env_id, seed, end):
    """Observations, masks, rewards, extras and ends equal Jumanji's own `step`, each step."""
    case = _case(cases, env_id)
    env, params, kind = case.env, case.params, case.env.jumanji_class
    key = jax.random.PRNGKey(seed)
    state, ts = case.reset(key, params)
    j_state, j_ts = case.j_reset(key)
    draws = np.random.default_rng(seed).integers(0, 60, size=(TIME_LIMIT, env.num_agents))
    ends = []
    for t in range(TIME_LIMIT):
        np.testing.assert_array_equal(ts.obs, _expected_obs(kind, j_ts.observation, env.num_agents))
        np.testing.assert_array_equal(ts.action_mask, j_ts.observation.action_mask)
        actions = _legal_actions(j_ts.observation.action_mask, draws[t])
        state, ts = case.step(jax.random.PRNGKey(t), state, jnp.asarray(actions), params)
        j_state, j_ts = case.j_step(j_state, jnp.asarray(actions))
        reward = np.broadcast_to(np.asarray(j_ts.reward, np.float32), (env.num_agents,))
        np.testing.assert_array_equal(ts.reward, reward)
        assert int(state.step) == int(j_state.step_count) == t + 1
        assert (bool(ts.terminated), bool(ts.truncated)) == _expected_ends(
            kind, j_ts, j_state, TIME_LIMIT
        ), f"{env_id} step {t + 1}"
        for name, value in (j_ts.extras or {}).items():
            np.testing.assert_allclose(ts.extras[f"jumanji/{name}"], value, rtol=1e-6)
        if bool(j_ts.last()):
            ends.append((t + 1, bool(ts.terminated)))
            break
    np.testing.assert_array_equal(ts.obs, _expected_obs(kind, j_ts.observation, env.num_agents))
    assert ends == [end], f"{env_id}: the episode ended at (step, terminated) {ends}"


def test_episode_ends_are_classified(cases):
    # Cleaner: a masked action ends the episode (Jumanji's rule) -> terminated.
    case = _case(cases, "cleaner/10x10-3ag-v0")
    state, ts = case.reset(jax.random.PRNGKey(0), case.params)
    assert not bool(ts.action_mask[0, 0])  # "up" from the top-left cell
    state, ts = case.step(jax.random.PRNGKey(1), state, jnp.zeros(3, jnp.int32), case.params)
    assert bool(ts.terminated) and not bool(ts.truncated)

    # RWARE: noops never collide; Jumanji's time limit (discount 0 there) -> truncated, and
    # params.max_steps (traced, the same program) cuts earlier.
    case = _case(cases, "rware/tiny-4ag-v0")
    for max_steps in (3, TIME_LIMIT):
        params = case.params.replace(max_steps=jnp.int32(max_steps))
        state, ts = case.reset(jax.random.PRNGKey(0), params)
        for t in range(1, max_steps + 1):
            state, ts = case.step(jax.random.PRNGKey(t), state, jnp.zeros(4, jnp.int32), params)
            assert not bool(ts.terminated)
            assert bool(ts.truncated) == (t == max_steps)
        assert float(ts.discount) == 1.0  # truncation bootstraps


def _weighted_sum(x: jax.Array) -> float:
    """A sum that also sees where the values are (weights 1 .. 101 cycling over the entries)."""
    x = np.asarray(x, np.float64).reshape(-1)
    return float(np.sum(x * (np.arange(x.size) % 101 + 1)))


def _golden(case: Case, steps: int = GOLDEN_STEPS) -> dict:
    """Rewards, weighted sums of observations and global states, mask sums and ends of a fixed
    trajectory."""
    env, params = case.env, case.params
    state, ts = case.reset(jax.random.PRNGKey(42), params)
    draws = np.random.default_rng(1).integers(0, 60, size=(steps, env.num_agents))
    out: dict[str, list] = {"reward": [], "obs_sum": [], "state_sum": [], "mask_sum": [], "end": []}
    out["obs_sum"].append(_weighted_sum(ts.obs))
    for t in range(steps):
        actions = _legal_actions(ts.action_mask, draws[t])
        state, ts = case.step(jax.random.PRNGKey(t), state, jnp.asarray(actions), params)
        out["reward"].append([round(float(r), 6) for r in np.asarray(ts.reward)])
        out["obs_sum"].append(_weighted_sum(ts.obs))
        out["state_sum"].append(_weighted_sum(ts.global_state))
        out["mask_sum"].append(int(np.asarray(ts.action_mask).sum()))
        out["end"].append([bool(ts.terminated), bool(ts.truncated)])
        if bool(ts.done):
            break
    return out


@pytest.mark.parametrize("env_id", CASES)
def test_golden_trajectories(cases, env_id):
    with open(GOLDEN) as f:
        golden = json.load(f)
    got, want = _golden(_case(cases, env_id)), golden["trajectories"][env_id]
    assert got["end"] == want["end"], f"{env_id}: episode ends differ from {GOLDEN}"
    np.testing.assert_allclose(got["reward"], want["reward"], atol=1e-6)
    for name in ("obs_sum", "state_sum", "mask_sum"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, err_msg=f"{env_id} {name}")


def test_registered_tasks_follow_the_published_layouts():
    for env_id, _, _, description in JUMANJI_TASKS:
        assert env_id in marljax.registered_envs()
        assert "jumanji 1.1.2" in description
    env, params = marljax.make("rware/tiny-4ag-v0")
    gen = env.jumanji_env._generator
    # rware's tiny layout: 1 x 3 blocks of 8 shelves (11 x 10 cells), one request per agent.
    assert (gen.shelf_rows, gen.shelf_columns, gen.column_height) == (1, 3, 8)
    assert (gen.num_agents, gen.request_queue_size, gen.sensor_range) == (4, 4, 1)
    assert tuple(env.jumanji_env.grid_size) == (11, 10) and int(params.max_steps) == 500
    assert env.observation_space(params).shape == (66,)
    assert env.global_state_space(params).shape == (4 * 66,)
    small, _ = marljax.make("rware/small-4ag-v0")
    assert tuple(small.jumanji_env.grid_size) == (20, 10)
    conn, p = marljax.make("connector/10x10-10ag-v0")
    assert conn.observation_space(p).shape == (10, 10, 6) and int(p.max_steps) == 50
    assert conn.observation_space(p).layout == "hwc" and conn.action_space(p).n == 5
    clean, p = marljax.make("cleaner/10x10-3ag-v0")
    assert clean.observation_space(p).shape == (10, 10, 4) and int(p.max_steps) == 100
    assert clean.action_space(p).n == 4 and clean.global_state_space(p).shape == (10 * 10 * 5,)


def test_jumanji_ids_split_overrides_and_pass_check_env():
    env, params = marljax.make("jumanji/Connector-v3", grid_size=5, num_agents=3, max_steps=12)
    assert isinstance(env, JumanjiEnv) and env.num_agents == 3
    assert int(params.max_steps) == 12 and env.native_episode_len == 50  # Connector-v3's limit
    assert env.observation_space(params).shape == (5, 5, 6)
    check_env(env, params, num_steps=8, num_envs=2)

    # Size keywords not given keep the Jumanji id's generator (RobotWarehouse-v0: 2 x 3 blocks,
    # a queue of 8); Jumanji's constructor keywords are static too.
    env, params = marljax.make("jumanji/RobotWarehouse-v0", num_agents=2, time_limit=50)
    gen = env.jumanji_env._generator
    assert (gen.num_agents, gen.shelf_rows, gen.request_queue_size) == (2, 2, 8)
    assert int(params.max_steps) == 50
    env, _ = from_jumanji(jumanji.make("Cleaner-v0"), keep_extras=False)
    _, ts = jax.eval_shape(env.reset, jax.random.PRNGKey(0), env.default_params())
    assert ts.extras == {} and ts.obs.shape == (3, 10, 10, 4)


def test_errors_name_the_problem(monkeypatch):
    with pytest.raises(KeyError, match="Did you mean: jumanji/RobotWarehouse-v0"):
        registry.spec("jumanji/RobotWarehous-v0")
    with pytest.raises(KeyError, match="converts the multi-agent routing envs .*not 'Tetris-v0'"):
        registry.spec("jumanji/Tetris-v0")
    with pytest.raises(KeyError, match="Did you mean: Cleaner-v0"):
        from_jumanji("Cleaner-v1")
    with pytest.raises(KeyError, match="Did you mean: rware/tiny-2ag-v0"):
        marljax.make("rware/tiny-2ag-v1")
    with pytest.raises(TypeError, match="'num_agent' .*did you mean 'num_agents'"):
        marljax.make("rware/tiny-2ag-v0", num_agent=3)
    with pytest.raises(ValueError, match="max_steps=600 exceeds the 500 steps"):
        marljax.make("rware/tiny-2ag-v0", max_steps=600)
    with pytest.raises(TypeError, match="need a Jumanji id"):
        from_jumanji(jumanji.make("Cleaner-v0"), num_agents=2)
    with pytest.raises(NotImplementedError, match="converts Cleaner, Connector, RobotWarehouse"):
        from_jumanji(jumanji.make("Snake-v1"))

    monkeypatch.setitem(sys.modules, "jumanji", None)  # `import jumanji` raises ImportError
    for env_id in ("rware/tiny-2ag-v0", "jumanji/RobotWarehouse-v0"):
        with pytest.raises(ImportError, match=r"pip install 'marljax\[bench\]'") as info:
            marljax.make(env_id)
        assert isinstance(info.value, KeyError) and info.value.name == "jumanji"
        assert "needs Jumanji" in str(info.value)


def _write_golden() -> None:
    """Record `GOLDEN` from the installed Jumanji (run this file as a script)."""
    data = {
        "jumanji": jumanji.__version__,
        "key": 42,
        "steps": GOLDEN_STEPS,
        "trajectories": {env_id: _golden(Case(env_id)) for env_id in CASES},
    }
    lines = [f'"jumanji": {json.dumps(data["jumanji"])}', '"key": 42', f'"steps": {GOLDEN_STEPS}']
    trajectories = []
    for env_id, series in data["trajectories"].items():  # one line per recorded series
        body = ",\n".join(f"   {json.dumps(k)}: {json.dumps(v)}" for k, v in series.items())
        trajectories.append(f"  {json.dumps(env_id)}: {{\n{body}\n  }}")
    lines.append('"trajectories": {\n' + ",\n".join(trajectories) + "\n }")
    text = "{\n " + ",\n ".join(lines) + "\n}\n"
    assert json.loads(text) == data
    with open(GOLDEN, "w") as f:
        f.write(text)
    print(f"wrote {GOLDEN}")


if __name__ == "__main__":
    _write_golden()
