"""Export any marljax environment as a PettingZoo `ParallelEnv`: `to_pettingzoo(env_or_id)`.

PettingZoo (Terry et al., "PettingZoo: Gym for Multi-Agent Reinforcement Learning", NeurIPS 2021;
https://pettingzoo.farama.org) is the standard host-side multi-agent API. The exported env is
stateful and numpy-valued, as PettingZoo expects; underneath, the marljax env's `reset` and
`step` are jitted once each and hold the state and PRNG key between calls.

Mapping (marljax -> PettingZoo):

- agents: `"agent_0" .. "agent_{A-1}"` (index `i` of the leading agent axis);
  `possible_agents` never changes, `agents` is emptied once the episode ends (all agents end
  together, as in every marljax env).
- spaces: each agent gets the env's common (padded) space as a gymnasium space, `Discrete`,
  `MultiDiscrete` or `Box` (with the declared bounds and dtype); the same object on every call.
- `reset(seed, options) -> (obs, infos)`; `step(actions) -> (obs, rewards, terminations,
  truncations, infos)`: dicts keyed by agent name holding numpy values. `terminations[a]` is
  the marljax `terminated`, `truncations[a]` is `truncated` (time limit).
- infos: `{"action_mask": [N] bool}` for each agent when the action space is discrete; the
  agent type is in `infos[a]["agent_type"]` when the env has several.
- `state()`: the env's `global_state` as numpy.
- Randomness: `reset(seed=s)` restarts the key stream from `PRNGKey(s)`; `reset()` continues the
  stream. Each `reset` and `step` splits the held key as `key, sub = split(key)` and passes `sub`,
  so stepping the marljax env directly with the same keys reproduces the exported env.

Stepping after the episode ended (empty `agents`) raises an error; call `reset`. Only
`render_mode=None` is supported (marljax envs do not render).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marljax.core import spaces
from marljax.core.types import Environment, EnvParams

# `MarljaxParallelEnv` is also importable; the class is built on first use (module __getattr__).
__all__ = ["to_gymnasium_space", "to_pettingzoo"]


def to_gymnasium_space(space: spaces.Space) -> Any:
    """A marljax space as the gymnasium space of the same values.

    Args:
      space: `Discrete`, `MultiDiscrete` or `Box`.

    Returns:
      `gymnasium.spaces.Discrete`, `MultiDiscrete` or `Box` (bounds broadcast to the shape).
    """
    from gymnasium import spaces as gs

    if isinstance(space, spaces.Discrete):
        return gs.Discrete(space.n)
    if isinstance(space, spaces.MultiDiscrete):
        return gs.MultiDiscrete(np.asarray(space.nvec, np.int64))
    if isinstance(space, spaces.Box):
        dtype = np.dtype(jnp.dtype(space.dtype))
        low = np.broadcast_to(np.asarray(space.low, np.float64), space.shape)
        high = np.broadcast_to(np.asarray(space.high, np.float64), space.shape)
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            low = np.clip(np.nan_to_num(low, neginf=info.min), info.min, info.max)
            high = np.clip(np.nan_to_num(high, posinf=info.max), info.min, info.max)
        return gs.Box(low.astype(dtype), high.astype(dtype), space.shape, dtype)
    raise TypeError(f"no gymnasium equivalent for {space!r}")


def _parallel_env_base() -> type:
    from pettingzoo.utils.env import ParallelEnv

    return ParallelEnv


class _Exported:
    """The implementation of `MarljaxParallelEnv` (mixed into PettingZoo's `ParallelEnv`)."""

    def __init__(
        self,
        env: Environment,
        params: EnvParams | None = None,
        seed: int = 0,
        render_mode: str | None = None,
        name: str | None = None,
    ):
        if render_mode is not None:
            raise ValueError(f"render_mode {render_mode!r} is not supported (only None)")
        self.env = env
        self.params = env.default_params() if params is None else params
        self.render_mode = render_mode
        self.metadata = {"name": name or env.name, "render_modes": [], "is_parallelizable": True}
        self.possible_agents = [f"agent_{i}" for i in range(env.num_agents)]
        self.agents: list[str] = []
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        self._obs_space = to_gymnasium_space(env.observation_space(self.params))
        self._act_space_m = env.action_space(self.params)
        self._act_space = to_gymnasium_space(self._act_space_m)
        self._state_space = to_gymnasium_space(env.global_state_space(self.params))
        self._discrete = spaces.num_actions(self._act_space_m) > 0
        types = np.asarray(env.agent_types)
        self._types = types if len(set(types.tolist())) > 1 else None
        self._act_dtype = np.dtype(jnp.dtype(self._act_space_m.dtype))
        self._act_shape = tuple(self._act_space_m.shape)
        # One compile each; params are an argument so that they are not baked in as constants.
        self._reset_fn = jax.jit(env.reset)
        self._step_fn = jax.jit(env.step)
        self._key = jax.random.PRNGKey(seed)
        self._state: Any = None
        self._timestep: Any = None

    # ------------------------------------------------------------------ spaces

    def observation_space(self, agent: str) -> Any:
        """The gymnasium observation space of `agent` (the same object on every call)."""
        self._index[agent]  # KeyError for an unknown agent
        return self._obs_space

    def action_space(self, agent: str) -> Any:
        """The gymnasium action space of `agent` (the same object on every call)."""
        self._index[agent]
        return self._act_space

    @property
    def state_space(self) -> Any:
        return self._state_space

    # ------------------------------------------------------------------ API

    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start an episode. Returns `(observations, infos)`, dicts keyed by agent name."""
        del options
        if seed is not None:
            self._key = jax.random.PRNGKey(int(seed))
        self._key, key = jax.random.split(self._key)
        self._state, ts = self._reset_fn(key, self.params)
        self._host(ts)
        self.agents = list(self.possible_agents)
        return self._obs_dict(), self._infos()

    def step(self, actions: dict):
        """Advance one step with `actions` (one per live agent).

        Returns:
          `(observations, rewards, terminations, truncations, infos)`, dicts keyed by agent name.
        """
        if not self.agents:
            raise RuntimeError("the episode has ended (no agents left); call reset() first")
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise KeyError(f"no action for agent(s) {missing}")
        joint = np.stack(
            [np.asarray(actions[a], self._act_dtype).reshape(self._act_shape) for a in self.agents]
        )
        self._key, key = jax.random.split(self._key)
        self._state, ts = self._step_fn(key, self._state, joint, self.params)
        self._host(ts)
        live = list(self.agents)
        reward = self._ts["reward"]
        terminated, truncated = bool(self._ts["terminated"]), bool(self._ts["truncated"])
        obs = self._obs_dict()
        rewards = {a: float(reward[self._index[a]]) for a in live}
        terms = dict.fromkeys(live, terminated)
        truncs = dict.fromkeys(live, truncated)
        infos = self._infos()
        if terminated or truncated:
            self.agents = []
        return obs, rewards, terms, truncs, infos

    def state(self) -> np.ndarray:
        """The global state (the marljax `timestep.global_state`) as numpy."""
        if self._ts is None:
            raise RuntimeError("call reset() first")
        return self._ts["global_state"]

    def render(self) -> None:
        return None

    def close(self) -> None:
        pass

    # ------------------------------------------------------------------ helpers

    _ts: dict | None = None

    def _host(self, ts: Any) -> None:
        """Copy the fields of a timestep to numpy once (one device-to-host transfer)."""
        fields = (ts.obs, ts.reward, ts.terminated, ts.truncated, ts.action_mask, ts.global_state)
        obs, reward, term, trunc, mask, gs = jax.device_get(fields)
        self._ts = {
            "obs": np.asarray(obs),
            "reward": np.asarray(reward),
            "terminated": term,
            "truncated": trunc,
            "action_mask": np.asarray(mask, bool),
            "global_state": np.asarray(gs),
        }
        self._timestep = ts

    def _obs_dict(self) -> dict[str, np.ndarray]:
        obs = self._ts["obs"]
        return {a: obs[self._index[a]] for a in self.possible_agents}

    def _infos(self) -> dict[str, dict]:
        infos: dict[str, dict] = {}
        for a in self.possible_agents:
            i = self._index[a]
            info: dict[str, Any] = {}
            if self._discrete:
                info["action_mask"] = self._ts["action_mask"][i]
            if self._types is not None:
                info["agent_type"] = int(self._types[i])
            infos[a] = info
        return infos


@functools.lru_cache(maxsize=1)
def _exported_class() -> type:
    base = _parallel_env_base()
    return type("MarljaxParallelEnv", (_Exported, base), {"__doc__": _Exported.__doc__})


def __getattr__(name: str) -> Any:
    if name == "MarljaxParallelEnv":  # built on first use: pettingzoo is imported lazily
        return _exported_class()
    raise AttributeError(name)


def to_pettingzoo(
    env_or_id: Environment | str,
    params: EnvParams | None = None,
    seed: int = 0,
    render_mode: str | None = None,
    **overrides: Any,
) -> Any:
    """Export a marljax environment as a PettingZoo `ParallelEnv` (numpy in, numpy out).

    Example::

        pz = to_pettingzoo("grid/lbf-v0", max_steps=20)
        obs, infos = pz.reset(seed=0)
        while pz.agents:
            acts = {a: pz.action_space(a).sample(infos[a]["action_mask"].astype("int8"))
                    for a in pz.agents}
            obs, rew, term, trunc, infos = pz.step(acts)

    Args:
      env_or_id: a marljax `Environment` or a registered id for `marljax.make`.
      params: env params (default: the env's, or `make`'s with `overrides`).
      seed: seed of the held PRNG key (reset with `seed=` to restart it).
      render_mode: only None.
      **overrides: options for `marljax.make` when `env_or_id` is an id.

    Returns:
      A `pettingzoo.ParallelEnv` (the class `MarljaxParallelEnv`).

    Reference:
      Terry et al., "PettingZoo: Gym for Multi-Agent Reinforcement Learning", NeurIPS 2021.
    """
    name = None
    if isinstance(env_or_id, str):
        from marljax.core import make

        name = env_or_id
        env, made = make(env_or_id, **overrides)
        params = made if params is None else params
    else:
        if overrides:
            raise TypeError(f"options {sorted(overrides)} need an env id, not an env instance")
        env = env_or_id
    return _exported_class()(env, params, seed=seed, render_mode=render_mode, name=name)
