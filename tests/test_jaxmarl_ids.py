"""`marljax.make("jaxmarl/<name>")`: JaxMARL envs by id, tested against a fake `jaxmarl` module.

The fake stands in for JaxMARL (installed or not), so the id route (resolution, the split of
overrides between the JaxMARL constructor and the adapter's params, the errors) runs everywhere;
`tests/test_adapters.py` checks the adapter against the real JaxMARL.
"""

from __future__ import annotations

import sys
import types

import jax
import jax.numpy as jnp
import pytest
from flax import struct

import marljax
from marljax.core import registry
from marljax.shell import cli


class Box:
    """Named like JaxMARL's `Box` (the adapter reads spaces by class name)."""

    def __init__(self, shape):
        self.low, self.high, self.shape, self.dtype = -1.0, 1.0, shape, jnp.float32


class Discrete:
    def __init__(self, n):
        self.n, self.shape, self.dtype = n, (), jnp.int32


@struct.dataclass
class FakeState:
    step: jax.Array  # [] int32


class FakeSpread:
    """A JaxMARL-style env: dicts keyed by agent, `dones["__all__"]` after `max_steps` steps."""

    name = "FakeSpread"

    def __init__(self, num_agents: int = 2, max_steps: int = 6):
        self.agents = [f"agent_{i}" for i in range(num_agents)]
        self.max_steps = max_steps

    def observation_space(self, agent):
        return Box((3,))

    def action_space(self, agent):
        return Discrete(2)

    def _obs(self, state):
        return {a: jnp.full((3,), state.step, jnp.float32) / 10 for a in self.agents}

    def reset(self, key):
        state = FakeState(step=jnp.int32(0))
        return self._obs(state), state

    def step_env(self, key, state, actions):
        state = state.replace(step=state.step + 1)
        rewards = {a: jnp.float32(actions[a]) for a in self.agents}
        dones = {a: state.step >= self.max_steps for a in [*self.agents, "__all__"]}
        return self._obs(state), state, rewards, dones, {}


@pytest.fixture
def fake_jaxmarl(monkeypatch):
    """`jaxmarl` and `jaxmarl.registration` replaced by a module with one env."""
    fake = types.ModuleType("jaxmarl")
    reg = types.ModuleType("jaxmarl.registration")
    reg.SimpleSpreadMPE = FakeSpread  # the class the adapter reads constructor keywords from
    fake.registration = reg
    fake.registered_envs = ["MPE_simple_spread_v3", "coin_game"]
    fake.make = lambda name, **kwargs: FakeSpread(**kwargs)
    monkeypatch.setitem(sys.modules, "jaxmarl", fake)
    monkeypatch.setitem(sys.modules, "jaxmarl.registration", reg)
    return fake


def test_jaxmarl_id_splits_overrides_between_constructor_and_params(fake_jaxmarl):
    env, params = marljax.make("jaxmarl/MPE_simple_spread_v3", num_agents=3, max_steps=4)
    assert env.num_agents == 3  # a constructor keyword of the JaxMARL class
    assert int(params.max_steps) == 4  # the adapter's traced params
    assert env.native_episode_len == 6  # the JaxMARL env's own limit is unchanged
    state, ts = env.reset(jax.random.PRNGKey(0), params)
    assert ts.obs.shape == (3, 3) and ts.action_mask.shape == (3, 2)
    for _ in range(4):
        state, ts = env.step(jax.random.PRNGKey(1), state, jnp.ones(3, jnp.int32), params)
    assert bool(ts.truncated) and not bool(ts.terminated)  # cut at params.max_steps = 4
    assert ts.reward.tolist() == [1.0, 1.0, 1.0]
    same, _ = marljax.make("jaxmarl/MPE_simple_spread_v3-v0")  # the registered ids' spelling
    assert same.num_agents == 2
    assert not any(i.startswith("jaxmarl/") for i in marljax.registered_envs())


def test_jaxmarl_id_errors_name_the_problem(fake_jaxmarl):
    with pytest.raises(TypeError, match="'num_agent' .*did you mean 'num_agents'"):
        marljax.make("jaxmarl/MPE_simple_spread_v3", num_agent=3)
    with pytest.raises(ValueError, match="max_steps=9 exceeds the 6 steps"):
        marljax.make("jaxmarl/MPE_simple_spread_v3", max_steps=9)  # validate_params, in make
    with pytest.raises(KeyError, match="Did you mean: jaxmarl/MPE_simple_spread_v3"):
        registry.spec("jaxmarl/MPE_simple_sprad_v3")


def test_jaxmarl_id_without_jaxmarl_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "jaxmarl", None)  # `import jaxmarl` raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'marljax\[bench\]'") as info:
        marljax.make("jaxmarl/MPE_simple_spread_v3")
    assert isinstance(info.value, KeyError) and info.value.name == "jaxmarl"
    assert cli.main(["envs", "--options", "jaxmarl/MPE_simple_spread_v3"]) == 2  # no traceback
    err = capsys.readouterr().err
    assert "jaxmarl/MPE_simple_spread_v3 needs JaxMARL" in err and "marljax[bench]" in err
    assert "jaxmarl/" not in " ".join(marljax.registered_envs())  # listing is unaffected
