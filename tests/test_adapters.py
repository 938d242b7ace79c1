"""Adapters: JaxMARL envs imported into the marljax contract, marljax envs exported to PettingZoo."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.core import registry, spaces
from marljax.testing import check_env, fast_jit

jaxmarl = pytest.importorskip("jaxmarl")
pytest.importorskip("pettingzoo")

from marljax.envs.adapters import from_jaxmarl, to_gymnasium_space, to_pettingzoo  # noqa: E402
from marljax.envs.adapters.jaxmarl import _probe_episode_len  # noqa: E402

# These programs run a few steps: compile time is what counts (marljax.testing.fast_jit).
jit = fast_jit


def smax_3m():
    from jaxmarl.environments.smax import map_name_to_scenario

    return from_jaxmarl("HeuristicEnemySMAX", scenario=map_name_to_scenario("3m"))


def test_importing_adapters_imports_neither_jaxmarl_nor_pettingzoo():
    code = (
        "import sys, marljax.envs, marljax.envs.adapters as a; "
        "assert 'jaxmarl' not in sys.modules and 'pettingzoo' not in sys.modules; "
        "assert callable(a.from_jaxmarl) and callable(a.to_pettingzoo); "
        "assert 'jaxmarl' not in sys.modules and 'pettingzoo' not in sys.modules; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr


# ------------------------------------------------------------------------- JaxMARL -> marljax


# check_env compiles its rollout and traces reset/step per env (STORM's and SMAX's take long on a
# 2-core CPU), so the default run checks two envs that cover the adapter's paths (padded heterogeneous
# observations and agent types; int8 observations and an inner/outer episode clock); set
# MARLJAX_SLOW_TESTS=1 to check all five (all pass).
SLOW = pytest.mark.skipif(
    not os.environ.get("MARLJAX_SLOW_TESTS"), reason="slow; set MARLJAX_SLOW_TESTS=1"
)


@pytest.mark.parametrize(
    "name",
    [
        "MPE_simple_tag_v3",
        "coin_game",
        pytest.param("MPE_simple_spread_v3", marks=SLOW),
        pytest.param("storm_2p", marks=SLOW),
        pytest.param("smax_3m", marks=SLOW),
    ],
)
def test_jaxmarl_envs_pass_check_env(name):
    if name == "smax_3m":
        env, params = smax_3m()
    else:  # coin game: also JaxMARL's infos in extras, which must keep one structure
        env, params = from_jaxmarl(name, keep_infos=name == "coin_game")
    check_env(env, params, num_steps=32, num_envs=2)


def test_declarations_follow_jaxmarl():
    tag, p = from_jaxmarl("MPE_simple_tag_v3")
    # 3 adversaries observe 16 numbers, the good agent 14: padded to 16, two agent types.
    assert tag.agents == ["adversary_0", "adversary_1", "adversary_2", "agent_0"]
    assert tag.obs_dims == (16, 16, 16, 14)
    assert tag.observation_space(p).shape == (16,)
    assert tag.agent_types.tolist() == [0, 0, 0, 1]
    assert int(p.max_steps) == 26  # MPE ends when step >= 25 *before* incrementing
    assert tag.global_state_space(p).shape == (4 * 16,)

    storm, p = from_jaxmarl("storm_2p")
    # dict observations {"inventory": [6], "observation": [5, 5, 10]} are flattened.
    assert storm.observation_space(p).shape == (6 + 250,)
    assert int(p.max_steps) == 152

    coin, p = from_jaxmarl("coin_game", num_inner_steps=4, num_outer_steps=3, keep_infos=True)
    assert int(p.max_steps) == 12
    assert coin.agent_types.tolist() == [0, 0]
    _, ts = jax.eval_shape(coin.reset, jax.random.PRNGKey(0), p)
    assert ts.extras["jaxmarl_info.inner_episode_done"].dtype == jnp.bool_

    # The table of native episode lengths agrees with the probe used for unknown envs (MPE's
    # length, 26, is checked by stepping in the truncation test).
    riddle, p = from_jaxmarl("switch_riddle")
    assert _probe_episode_len(riddle.jaxmarl_env) == int(p.max_steps) == 6
    with pytest.raises(ValueError, match="no time limit"):
        from_jaxmarl(riddle.jaxmarl_env, native_episode_len=None)
    _, p = from_jaxmarl(riddle.jaxmarl_env, native_episode_len=None, time_limit=3)
    assert int(p.max_steps) == 3

    smax, p = smax_3m()
    assert smax.action_space(p).n == 8 and smax._has_avail
    assert smax.global_state_space(p).shape == (72,)  # SMAX's own world state
    assert int(p.max_steps) == 101

    cont, p = from_jaxmarl("MPE_simple_spread_v3", action_type="Continuous")
    assert isinstance(cont.action_space(p), spaces.Box) and cont.action_space(p).shape == (5,)
    state, ts = jit(cont.reset)(jax.random.PRNGKey(0), p)
    assert ts.action_mask.shape == (3, 0)
    state, ts = jit(cont.step)(jax.random.PRNGKey(1), state, jnp.full((3, 5), 0.5), p)
    assert ts.obs.shape == (3, 18) and np.all(np.isfinite(np.asarray(ts.reward)))


class _TwoArms:
    """A tiny env in JaxMARL's API with continuous actions of different shapes per agent.

    Agent "a" acts in `Box(-1, 1, (2,))` and observes `[t, t, t]`; agent "b" acts in
    `Box(0, 1, (1,))` and observes `[-t]`. Rewards are the sums of the agents' actions. JaxMARL
    ends the episode when `t >= max_steps` after the increment, and this env is not in the
    adapter's table, so its episode length is probed.
    """

    def __init__(self, max_steps: int = 4):
        from jaxmarl.environments import spaces as jspaces

        self.agents = ["a", "b"]
        self.num_agents = 2
        self.max_steps = max_steps
        self.name = "TwoArms"
        self.action_spaces = {"a": jspaces.Box(-1.0, 1.0, (2,)), "b": jspaces.Box(0.0, 1.0, (1,))}
        self.observation_spaces = {"a": jspaces.Box(-9, 9, (3,)), "b": jspaces.Box(-9, 9, (1,))}

    def action_space(self, agent):
        return self.action_spaces[agent]

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def get_obs(self, state):
        t = state.step.astype(jnp.float32)
        return {"a": jnp.full((3,), t), "b": -t[None]}

    def reset(self, key):
        from jaxmarl.environments.multi_agent_env import State

        state = State(done=jnp.array(False), step=jnp.array(0))
        return self.get_obs(state), state

    def step_env(self, key, state, actions):
        from jaxmarl.environments.multi_agent_env import State

        step = state.step + 1
        done = step >= self.max_steps
        state = State(done=done, step=step)
        rewards = {a: jnp.sum(actions[a]) for a in self.agents}
        return self.get_obs(state), state, rewards, {"a": done, "b": done, "__all__": done}, {}


def test_heterogeneous_continuous_actions_and_probed_episode_length():
    env, params = from_jaxmarl(_TwoArms())
    assert env.native_episode_len == int(params.max_steps) == 4  # found by the probe
    space = env.action_space(params)
    assert isinstance(space, spaces.Box) and space.shape == (2,)
    np.testing.assert_array_equal(space.low, [-1.0, -1.0])  # the union of the agents' boxes
    np.testing.assert_array_equal(space.high, [1.0, 1.0])
    assert env.observation_space(params).shape == (3,) and env.obs_dims == (3, 1)
    assert env.agent_types.tolist() == [0, 1]
    state, ts = env.reset(jax.random.PRNGKey(0), params)
    assert ts.action_mask.shape == (2, 0)
    actions = jnp.array([[5.0, -0.25], [0.5, 9.0]])  # clipped per agent; b's 2nd entry unused
    for t in range(1, 5):
        state, ts = env.step(jax.random.PRNGKey(t), state, actions, params)
        np.testing.assert_allclose(ts.reward, [0.75, 0.5])
        np.testing.assert_array_equal(ts.obs, [[t, t, t], [-t, 0, 0]])
        assert (bool(ts.terminated), bool(ts.truncated)) == (False, t == 4)
    check_env(env, params, num_steps=16, num_envs=2)


def _jaxmarl_dict_rollout(env, jm_actions, keys):
    """JaxMARL's own `step` (with its auto-reset), jitted."""
    jm = env.jaxmarl_env
    obs, state = jit(jm.reset)(keys[0])
    step = jit(jm.step)
    out = []
    for k, acts in zip(keys[1:], jm_actions, strict=True):
        obs, state, rew, dones, _ = step(k, state, acts)
        out.append((obs, rew, dones["__all__"]))
    return out


def test_stacking_matches_jaxmarl_dicts_step_by_step():
    env, params = from_jaxmarl("MPE_simple_tag_v3")
    keys = jax.random.split(jax.random.PRNGKey(3), 6)
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 5, size=(5, env.num_agents)).astype(np.int32)
    jm_actions = [{a: jnp.int32(row[i]) for i, a in enumerate(env.agents)} for row in actions]
    expected = _jaxmarl_dict_rollout(env, jm_actions, keys)

    state, ts = jit(env.reset)(keys[0], params)
    step = jit(env.step)
    for t in range(5):
        state, ts = step(keys[t + 1], state, actions[t], params)
        obs, rew, done = expected[t]
        for i, a in enumerate(env.agents):
            d = obs[a].shape[0]
            # Same numbers up to XLA's fusion choices in two different programs.
            np.testing.assert_allclose(ts.obs[i, :d], obs[a], rtol=1e-6, atol=1e-6)
            assert not np.any(np.asarray(ts.obs[i, d:]))  # zero padding
            np.testing.assert_allclose(ts.reward[i], rew[a], rtol=1e-6, atol=1e-6)
        assert not bool(done) and not bool(ts.done)
        assert int(state.step) == t + 1
    np.testing.assert_array_equal(np.asarray(ts.global_state), np.asarray(ts.obs).reshape(-1))


def test_smax_masks_and_world_state_match_jaxmarl():
    env, params = smax_3m()
    jm = env.jaxmarl_env
    key = jax.random.PRNGKey(1)
    state, ts = jit(env.reset)(key, params)
    avail = jm.get_avail_actions(state.inner)
    for i, a in enumerate(env.agents):
        np.testing.assert_array_equal(np.asarray(ts.action_mask[i]), np.asarray(avail[a], bool))
    np.testing.assert_array_equal(
        np.asarray(ts.global_state), np.asarray(jm.get_world_state(state.inner))
    )


def test_truncation_at_the_time_limit_keeps_the_final_observation():
    env, params = from_jaxmarl("MPE_simple_spread_v3")
    jm = env.jaxmarl_env
    key = jax.random.PRNGKey(0)
    reset, step = jit(env.reset), jit(env.step)
    jm_step = jit(jm.step_env)
    state, ts = reset(key, params)
    actions = jnp.zeros((3,), jnp.int32)
    length = int(params.max_steps)
    for t in range(1, length + 1):
        key, k = jax.random.split(key)
        prev = state
        state, ts = step(k, state, actions, params)
        assert not bool(ts.terminated)
        assert bool(ts.truncated) == (t == length), t
    # The final observation is the last step's, not JaxMARL's auto-reset one.
    obs, _, _, dones, _ = jm_step(
        jax.random.split(k)[0], prev.inner, env.to_jaxmarl_actions(actions)
    )
    assert bool(dones["__all__"])
    np.testing.assert_array_equal(np.asarray(ts.obs), np.asarray(env.stack_obs(obs)))

    # A shorter traced limit truncates earlier (same compiled step: params are traced).
    short = params.replace(max_steps=3)
    state, ts = reset(key, short)
    flags = []
    for _ in range(3):
        key, k = jax.random.split(key)
        state, ts = step(k, state, actions, short)
        flags.append((bool(ts.terminated), bool(ts.truncated)))
    assert flags == [(False, False), (False, False), (False, True)]

    with pytest.raises(ValueError, match="exceeds"):
        env.validate_params(params.replace(max_steps=length + 1))


def test_termination_before_the_time_limit():
    # Switch riddle: the episode ends when an agent in the room plays TELL (a termination);
    # otherwise JaxMARL ends it after max_steps = 6 steps (a truncation here).
    env, params = from_jaxmarl("switch_riddle")
    tell = env.jaxmarl_env.game_actions["TELL"]
    reset, step = jit(env.reset), jit(env.step)
    key = jax.random.PRNGKey(0)
    state, ts = reset(key, params)
    state, ts = step(key, state, jnp.full((3,), tell, jnp.int32), params)
    assert bool(ts.terminated) and not bool(ts.truncated)
    assert float(ts.discount) == 0.0

    state, ts = reset(key, params)
    flags = []
    for _ in range(int(params.max_steps)):
        key, k = jax.random.split(key)
        state, ts = step(k, state, jnp.zeros((3,), jnp.int32), params)
        flags.append((bool(ts.terminated), bool(ts.truncated)))
    assert flags == [(False, False)] * 5 + [(False, True)]
    assert float(ts.discount) == 1.0


def test_ippo_trains_on_an_adapted_jaxmarl_env():
    from marljax.agents.ppo import PPOHParams, ippo
    from marljax.training.train import TrainConfig, make_train

    env, params = from_jaxmarl("MPE_simple_spread_v3")
    params = params.replace(max_steps=8)
    agent = ippo(env, params, hidden_sizes=(16,), num_epochs=1, num_minibatches=1)
    trainer = make_train(
        TrainConfig(num_envs=2, rollout_len=8, total_env_steps=3 * 16), env, agent, params
    )
    state, metrics = jit(trainer.train)(jax.random.PRNGKey(0), PPOHParams())
    assert int(state.update_idx) == 3
    assert metrics["episode_return"].shape == (3,)
    assert np.all(np.isfinite(np.asarray(metrics["episode_return"])))
    assert np.all(np.asarray(metrics["num_episodes"]) == 2)  # one 8-step episode per env


def test_register_jaxmarl_envs_is_explicit(monkeypatch):
    from marljax.envs.adapters import register_jaxmarl_envs

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))  # restored after
    assert not any(i.startswith("jaxmarl/") for i in marljax.registered_envs())
    new = register_jaxmarl_envs(["MPE_simple_spread_v3"])
    assert new == ["jaxmarl/MPE_simple_spread_v3-v0"]
    env, params = marljax.make("jaxmarl/MPE_simple_spread_v3-v0", num_agents=4, max_steps=10)
    assert env.num_agents == 4 and int(params.max_steps) == 10
    with pytest.raises(TypeError, match="Unknown option"):
        marljax.make("jaxmarl/MPE_simple_spread_v3-v0", num_agent=4)
    assert register_jaxmarl_envs(["MPE_simple_spread_v3"]) == []


def test_jaxmarl_ids_resolve_without_registering():
    env, params = marljax.make("jaxmarl/MPE_simple_spread_v3", num_agents=4, max_steps=10)
    assert env.num_agents == 4 and int(params.max_steps) == 10
    assert env.native_episode_len == 26  # JaxMARL's own limit: max_steps=25, plus one
    assert registry.spec("jaxmarl/MPE_simple_spread_v3").env_id == "jaxmarl/MPE_simple_spread_v3"
    assert not any(i.startswith("jaxmarl/") for i in marljax.registered_envs())


# ------------------------------------------------------------------------- marljax -> PettingZoo

PZ_ENVS = [
    ("matrix/prisoners_dilemma-v0", dict(max_steps=20)),
    ("social/coin_game-v0", dict(max_steps=20)),
    ("grid/lbf-v0", dict(max_steps=20)),
    ("grid/predator_prey-v0", dict(max_steps=20)),
    ("social/public_goods_continuous-v0", dict(max_steps=5)),
]


@pytest.mark.parametrize("env_id,overrides", PZ_ENVS)
def test_parallel_api_test(env_id, overrides):
    from pettingzoo import ParallelEnv
    from pettingzoo.test import parallel_api_test

    pz = to_pettingzoo(env_id, **overrides)
    assert isinstance(pz, ParallelEnv)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the API test reports problems as warnings
        parallel_api_test(pz, num_cycles=50)
    assert pz.agents == []  # the episode ended within 50 cycles and emptied the agents
    obs, infos = pz.reset(seed=1)
    env, params = marljax.make(env_id, **overrides)
    for a in pz.possible_agents:
        assert pz.observation_space(a).contains(obs[a])
        if spaces.num_actions(env.action_space(params)):
            assert infos[a]["action_mask"].dtype == bool
    assert pz.state().shape == env.global_state_space(params).shape


def test_round_trip_matches_stepping_the_env_directly():
    env, params = marljax.make("social/coin_game-v0", max_steps=12)
    pz = to_pettingzoo(env, params, seed=5)
    rng = np.random.default_rng(0)
    reset, step = jit(env.reset), jit(env.step)

    obs, infos = pz.reset(seed=7)
    key = jax.random.PRNGKey(7)
    key, k = jax.random.split(key)
    state, ts = reset(k, params)
    for i, a in enumerate(pz.possible_agents):
        np.testing.assert_array_equal(obs[a], np.asarray(ts.obs[i]))
        np.testing.assert_array_equal(infos[a]["action_mask"], np.asarray(ts.action_mask[i]))
    steps = 0
    while pz.agents:
        actions = {a: int(rng.integers(0, 5)) for a in pz.agents}
        obs, rew, term, trunc, infos = pz.step(actions)
        key, k = jax.random.split(key)
        joint = jnp.asarray([actions[a] for a in pz.possible_agents], jnp.int32)
        state, ts = step(k, state, joint, params)
        steps += 1
        for i, a in enumerate(pz.possible_agents):
            np.testing.assert_array_equal(obs[a], np.asarray(ts.obs[i]))
            assert rew[a] == float(ts.reward[i])
            assert term[a] == bool(ts.terminated) and trunc[a] == bool(ts.truncated)
        np.testing.assert_array_equal(pz.state(), np.asarray(ts.global_state))
    assert bool(ts.done) and steps <= 12
    with pytest.raises(RuntimeError, match="reset"):
        pz.step({})
    pz.reset()
    pz.step(dict.fromkeys(pz.agents, 1))
    assert pz._reset_fn._cache_size() == 1 and pz._step_fn._cache_size() == 1  # compiled once


def test_gymnasium_spaces():
    from gymnasium import spaces as gs

    assert to_gymnasium_space(spaces.Discrete(4)) == gs.Discrete(4)
    md = to_gymnasium_space(spaces.MultiDiscrete([2, 3]))
    assert isinstance(md, gs.MultiDiscrete) and md.nvec.tolist() == [2, 3]
    box = to_gymnasium_space(spaces.Box(-jnp.inf, 1.0, (2, 3)))
    assert box.shape == (2, 3) and box.dtype == np.float32 and np.all(box.high == 1.0)
    u8 = to_gymnasium_space(spaces.Box(0, 1, (3,), jnp.uint8))
    assert u8.dtype == np.uint8 and u8.contains(np.array([0, 1, 1], np.uint8))
    with pytest.raises(ValueError, match="render_mode"):
        to_pettingzoo("matrix/ipd-v0", render_mode="human")
