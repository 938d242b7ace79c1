"""Small envs used only by the tests (continuous actions), and one comparison of two programs."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core import spaces
from marljax.core.types import Environment, EnvParams, TimeStep


@struct.dataclass
class TargetParams(EnvParams):
    max_steps: int = 1
    target: float = 0.5


class TargetEnv(Environment):
    """One-step continuous task: each agent's reward is `-(a - target)^2`; actions in [-1, 1]."""

    def __init__(self, num_agents: int = 2):
        self.num_agents = num_agents

    def default_params(self) -> TargetParams:
        return TargetParams()

    def _ts(self, reward, done):
        obs = jnp.ones((self.num_agents, 1), jnp.float32)
        return TimeStep(
            obs,
            reward,
            done,
            jnp.array(False),
            jnp.zeros((self.num_agents, 0), bool),
            obs.reshape(-1),
            {},
        )

    def reset(self, key, params):
        return jnp.int32(0), self._ts(jnp.zeros((self.num_agents,)), jnp.array(False))

    def step(self, key, state, actions, params):
        a = jnp.clip(actions[:, 0], -1.0, 1.0)
        return state + 1, self._ts(-((a - params.target) ** 2), jnp.array(True))

    def observation_space(self, params):
        return spaces.Box(0.0, 1.0, (1,))

    def action_space(self, params):
        return spaces.Box(-1.0, 1.0, (1,))


def assert_same_results(a, b, what: str = "results") -> None:
    """Two programs that must compute the same thing gave the same leaves: bit for bit with
    XLA's default flags. Under the suite's compile-speed flags (LLVM -O0 with the older loop
    emitters, tests/conftest.py) a side computation (a progress callback, an evaluation under
    `cond`) moves fusion boundaries, which reorders float sums: floats then agree to float32
    rounding, everything else exactly."""
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(la) == len(lb), f"{what}: different structures"
    loose = "--xla_backend_optimization_level=0" in os.environ.get("XLA_FLAGS", "")
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        if loose and np.issubdtype(x.dtype, np.floating):
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-7, err_msg=what)
        else:
            np.testing.assert_array_equal(x, y, err_msg=what)
