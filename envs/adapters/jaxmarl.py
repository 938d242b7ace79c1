"""Import JaxMARL environments into the marljax contract: `from_jaxmarl(name_or_env) -> (env, params)`.

JaxMARL (Rutherford et al., "JaxMARL: Multi-Agent RL Environments and Algorithms in JAX",
NeurIPS 2024 Datasets and Benchmarks; https://github.com/FLAIROx/JaxMARL) exposes a dict-of-agents
API: `reset(key) -> (obs, state)`, `step(key, state, actions) -> (obs, state, rewards, dones,
infos)`, with dicts keyed by agent name, one `dones["__all__"]` flag and an auto-reset inside
`step`. `JaxMARLEnv` turns it into a marljax `Environment`:

- Agents are a leading axis in `jaxmarl_env.agents` order. Observations are float32. When every
  agent's observation is one array of the same shape, that shape is kept; otherwise (different
  sizes, as in MPE simple_tag, or dict observations, as in STORM) each agent's observation
  leaves are flattened, concatenated (dict keys sorted) and zero-padded to the largest size.
  `agent_types` comes from JaxMARL's `agent_classes` where defined, else from the distinct
  (observation, action space) signatures.
- Discrete actions are padded to the largest action count; `action_mask [A, N]` is JaxMARL's
  `get_avail_actions(state)` where implemented (all-true otherwise), and-ed with "action index <
  this agent's action count". Continuous (Box) actions have `N = 0`; different Box shapes are
  flattened and padded (the padding is ignored) and the declared box is the union of the agents'
  boxes. Actions are clipped into each agent's own range before they reach JaxMARL.
- `global_state` is JaxMARL's world state where it has one (`obs["world_state"]`, as SMAX returns
  it, else `get_world_state(state)`), else every agent's (padded) observation concatenated.
- Rewards `[A]` float32 in agent order (JaxMARL rewards keyed `"__all__"` are ignored).

Episode ends. JaxMARL's `step` auto-resets, so its returned observation after the last step is
already the next episode's, and its single `dones["__all__"]` mixes termination with its time
limit. The adapter therefore calls the transition function `step_env` directly (no auto-reset:
`timestep.obs` after the last step is the final observation; use `marljax.core.wrappers.AutoReset`
or the runner's batched auto-reset), and counts steps itself in `state.step`. Each JaxMARL env
ends episodes on its own after a *native episode length* `L` (`native_episode_len`): MPE and SMAX
check `state.step >= max_steps` before incrementing (`L = max_steps + 1`), the switch riddle
after (`L = max_steps`), coin game and STORM end after `num_inner_steps * num_outer_steps` steps;
other envs with a `max_steps` attribute are probed once at construction (the state's `step` field
is set just below the limit). Then, at step `t` of an episode:

    terminated = dones["__all__"] and t < L
    truncated  = not terminated and t >= min(params.max_steps, L)

Limits: (1) a genuine termination on exactly step `L` (e.g. a SMAX battle won on the last step)
is reported as truncation, since JaxMARL's one flag cannot tell; (2) coin game and STORM reset
their *inner* episodes inside `step_env` (every `num_inner_steps` steps), so there the observation
at an inner boundary, including the last step, is already the next inner episode's and its
reward is zero (JaxMARL's own behaviour); (3) `params.max_steps` can shorten episodes but not
lengthen them past `L` (a larger value fails in `validate_params`); construct the JaxMARL env
with a larger limit instead, e.g. `from_jaxmarl("MPE_simple_spread_v3", max_steps=50)`.

Params. JaxMARL envs keep their constants on `self`, so they are static here: the params pytree
(`JaxMARLParams`) holds only `max_steps` (traced; vmappable). Keys: `step(key, ...)` splits `key`
as JaxMARL's `MultiAgentEnv.step` does and passes the first half to `step_env`, so before an
episode ends the adapter reproduces `jaxmarl_env.step(key, state, actions)` exactly.
"""

from __future__ import annotations

import difflib
import inspect
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core import spaces
from marljax.core.registry import EnvSpec, import_optional
from marljax.core.types import Array, Environment, PRNGKey, TimeStep
from marljax.envs.adapters.common import (
    AdapterParams,
    AdapterState,
    canonical_state,
    truncation,
    validate_max_steps,
)

__all__ = [
    "JaxMARLEnv",
    "JaxMARLParams",
    "JaxMARLState",
    "from_jaxmarl",
    "jaxmarl_spec",
    "episode_bound",
    "native_episode_len",
    "register_jaxmarl_envs",
    "smax_scenario",
]

#: the pyproject extra that installs JaxMARL.
JAXMARL_EXTRA = "bench"
#: the JaxMARL release the adapter, the SMAX ids and the golden trajectories were checked against.
JAXMARL_VERSION = "0.2.0"


def import_jaxmarl(what: str) -> Any:
    """`import jaxmarl`, or a `MissingDependencyError` saying how to install it.

    Args:
      what: what needs JaxMARL, for the message (e.g. `"jaxmarl/MPE_simple_spread_v3"`).
    """
    return import_optional("jaxmarl", what, JAXMARL_EXTRA)


@struct.dataclass
class JaxMARLParams(AdapterParams):
    """Traced parameters of an adapted JaxMARL env (`max_steps`, see `AdapterParams`)."""

    max_steps: int = 100


@struct.dataclass
class JaxMARLState(AdapterState):
    """State of an adapted JaxMARL env (`inner` is the JaxMARL env's state; see `AdapterState`)."""


def _mro_names(obj: Any) -> set[str]:
    return {c.__name__ for c in type(obj).__mro__}


def _zero_actions(env: Any, agents: list) -> Any:
    acts = []
    for a in agents:
        sp = env.action_space(a)
        acts.append(jnp.zeros(tuple(getattr(sp, "shape", ())), getattr(sp, "dtype", jnp.int32)))
    return _pack(agents, acts)


def _pack(agents: list, values: list) -> Any:
    """JaxMARL's action container: a dict keyed by agent name, a tuple for integer agent ids.

    STORM envs name agents `0 .. A-1` and unpack actions positionally (`a0, a1 = actions`), so
    they get a tuple; every other env gets a dict in `agents` order.
    """
    if all(isinstance(a, (int, np.integer)) for a in agents):
        return tuple(values)
    return dict(zip(agents, values, strict=True))


def _per_agent(agents: list, x: Any) -> list:
    """Values of one JaxMARL output (dict keyed by agent, or tuple/list) in `agents` order."""
    if isinstance(x, dict):
        return [x[a] for a in agents]
    if isinstance(x, (tuple, list)) and len(x) == len(agents):
        return list(x)
    raise TypeError(f"cannot split a JaxMARL output of type {type(x).__name__} by agent")


def native_episode_len(jaxmarl_env: Any) -> int | None:
    """The number of steps after which a JaxMARL env ends an episode on its own (`L`).

    Args:
      jaxmarl_env: a JaxMARL `MultiAgentEnv`.

    Returns:
      `L`, or None when the env has no time limit we know of (then `params.max_steps` is the only
      time limit).

    Raises:
      ValueError: the env has a `max_steps` attribute but the probe did not find where it ends.
    """
    env = jaxmarl_env
    names = _mro_names(env)
    if hasattr(env, "num_inner_steps") and hasattr(env, "num_outer_steps"):
        return int(env.num_inner_steps) * int(env.num_outer_steps)  # coin game, STORM
    if names & {"SimpleMPE", "SMAX", "EnemySMAX"}:
        return int(env.max_steps) + 1  # `done = state.step >= max_steps` before the increment
    if "SwitchRiddle" in names:
        return int(env.max_steps)  # `done = state.step + 1 >= max_steps`
    if hasattr(env, "max_steps"):
        return _probe_episode_len(env)
    return None


_infer_episode_len = native_episode_len


def episode_bound(jaxmarl_env: Any) -> int | None:
    """An upper bound on the length of every episode of an env that ends its games by itself.

    Used as the default time limit of an env without a native one, so that the limit never
    cuts a game short. Hanabi: every play or discard removes one of the `deck_size` cards and
    every hint spends an information token; tokens come back one per discard and one per
    completed colour, so a game lasts at most `deck_size + max_info_tokens + deck_size +
    num_colors` turns (113 for the standard 50-card game).

    Args:
      jaxmarl_env: a JaxMARL `MultiAgentEnv`.

    Returns:
      The bound, or None when none is known.
    """
    env = jaxmarl_env
    if "HanabiEnv" in _mro_names(env) or "HanabiGame" in _mro_names(env):
        deck, tokens = int(env.deck_size), int(env.max_info_tokens)
        return 2 * deck + tokens + int(env.num_colors)
    return None


def _probe_episode_len(env: Any) -> int:
    """Find `L` by setting the state's step counter just below `max_steps` (runs the env once)."""
    max_steps = int(env.max_steps)
    key = jax.random.PRNGKey(0)
    _, state = env.reset(key)
    if not hasattr(state, "step") or not hasattr(state, "replace"):
        raise ValueError(
            f"cannot find where {type(env).__name__} ends its episodes; pass "
            "native_episode_len=... to from_jaxmarl"
        )
    actions = _zero_actions(env, list(env.agents))
    for start, length in ((max_steps - 1, max_steps), (max_steps, max_steps + 1)):
        probe = state.replace(step=jnp.asarray(start, jnp.asarray(state.step).dtype))
        done = env.step_env(key, probe, actions)[3]["__all__"]
        if bool(done):
            return length
    raise ValueError(
        f"{type(env).__name__} did not end its episode at max_steps={max_steps}; pass "
        "native_episode_len=... to from_jaxmarl"
    )


def _space_bounds(space: Any, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise float bounds of one observation leaf of `shape` (infinite if unknown)."""
    size = math.prod(shape)
    inf = (np.full(shape, -np.inf, np.float32), np.full(shape, np.inf, np.float32))
    name = type(space).__name__
    try:
        if name == "Box":
            lo, hi = np.asarray(space.low, np.float32), np.asarray(space.high, np.float32)
        elif name == "Discrete":
            lo, hi = np.float32(0), np.float32(space.n - 1)
        elif name == "MultiDiscrete":
            lo = np.float32(0)
            hi = np.asarray(space.num_categories, np.float32) - 1
        else:
            return inf
        out = []
        for b in (lo, hi):
            if b.size == 1:
                out.append(np.full(shape, b.reshape(()), np.float32))
            elif b.size == size:  # declared shapes can differ from the real one (Overcooked)
                out.append(b.reshape(shape))
            else:
                return inf
        return out[0], out[1]
    except Exception:  # noqa: BLE001  (an unusual space just gets no bounds)
        return inf


def _obs_leaf_spaces(space: Any, num_leaves: int) -> list:
    """The sub-spaces of one agent's observation space in `jax.tree.leaves` order."""
    subs = getattr(space, "spaces", space)
    if isinstance(subs, dict):
        leaves = [subs[k] for k in sorted(subs)]
    elif isinstance(subs, (tuple, list)):
        leaves = list(subs)
    else:
        leaves = [space]
    return leaves if len(leaves) == num_leaves else [None] * num_leaves


class JaxMARLEnv(Environment[JaxMARLState, JaxMARLParams]):
    """A JaxMARL environment behind the marljax contract (see the module docstring).

    Args:
      jaxmarl_env: a JaxMARL `MultiAgentEnv` instance.
      native_episode_len: JaxMARL's own episode length `L` ("auto": see `native_episode_len`;
        None: the env has no time limit, `params.max_steps` is the only one).
      max_steps: default `params.max_steps` (default `L`; required when `L` is None).
      keep_infos: copy JaxMARL's array-valued `infos` into `timestep.extras` under
        `"jaxmarl_info.<name>"` (zeros after reset).
      episode_metrics: optional `fn(inner_state) -> {"group/name": [] scalar}` evaluated on the
        JaxMARL state after every reset and step and put in `timestep.extras`; the runner
        averages each over the episodes that end (e.g. SMAX's `"task/win_rate"`, whose
        per-episode value is 1 for a won battle, so its average is the win rate).
    """

    def __init__(
        self,
        jaxmarl_env: Any,
        *,
        native_episode_len: int | str | None = "auto",
        max_steps: int | None = None,
        keep_infos: bool = False,
        episode_metrics: Any = None,
    ):
        self.jaxmarl_env = env = jaxmarl_env
        self.agents = list(env.agents)
        self.num_agents = len(self.agents)
        if native_episode_len == "auto":
            native_episode_len = _infer_episode_len(env)
        self.native_episode_len = None if native_episode_len is None else int(native_episode_len)
        default = self.native_episode_len if max_steps is None else int(max_steps)
        if default is None:
            default = episode_bound(env)
        if default is None:
            raise ValueError(
                f"{type(env).__name__} has no time limit we know of; pass max_steps=... "
                "(and native_episode_len=... if it ends episodes on its own)"
            )
        self._default_max_steps = default
        self.keep_infos = bool(keep_infos)
        self.episode_metrics = episode_metrics
        self._inspect()

    # ------------------------------------------------------------------ introspection

    def _inspect(self) -> None:
        """Shapes, spaces and masks from `jax.eval_shape` (nothing is compiled or run)."""
        env, agents = self.jaxmarl_env, self.agents
        key = jax.random.PRNGKey(0)
        obs, state = jax.eval_shape(env.reset, key)
        self._state_sig = state
        obs_list = _per_agent(agents, obs)

        # Observations.
        leaves = [jax.tree.leaves(o) for o in obs_list]
        shapes = [tuple(lv[0].shape) for lv in leaves]
        single = all(len(lv) == 1 for lv in leaves) and len(set(shapes)) == 1
        self._obs_flatten = not single
        dims = [sum(math.prod(x.shape) for x in lv) for lv in leaves]
        self.obs_dims = tuple(dims)  #: flat observation size of each agent (before padding)
        self._obs_shape = shapes[0] if single else (max(dims),)
        lows, highs = [], []
        for a, lv in zip(agents, leaves, strict=True):
            sub = _obs_leaf_spaces(env.observation_space(a), len(lv))
            bounds = [_space_bounds(s, tuple(x.shape)) for s, x in zip(sub, lv, strict=True)]
            lo = np.concatenate([b[0].reshape(-1) for b in bounds])
            hi = np.concatenate([b[1].reshape(-1) for b in bounds])
            pad = math.prod(self._obs_shape) - lo.size
            lows.append(np.pad(lo, (0, pad)))  # padding is zero
            highs.append(np.pad(hi, (0, pad)))
        self._obs_low = np.min(lows, axis=0).reshape(self._obs_shape)
        self._obs_high = np.max(highs, axis=0).reshape(self._obs_shape)

        # Actions.
        act_spaces = [env.action_space(a) for a in agents]
        kinds = {type(s).__name__ for s in act_spaces}
        if kinds == {"Discrete"}:
            self._act_kind = "discrete"
            self.action_counts = tuple(int(s.n) for s in act_spaces)  #: each agent's `n`
            self._act_space = spaces.Discrete(max(self.action_counts))
        elif kinds == {"MultiDiscrete"}:
            nvecs = {tuple(np.asarray(s.num_categories).tolist()) for s in act_spaces}
            if len(nvecs) != 1:
                raise NotImplementedError("agents with different MultiDiscrete action spaces")
            self._act_kind = "multidiscrete"
            self._act_space = spaces.MultiDiscrete(list(nvecs.pop()))
            self.action_counts = (int(self._act_space.nvec.sum()),) * self.num_agents
        elif kinds == {"Box"}:
            self._act_kind = "box"
            self._act_shapes = [tuple(s.shape) for s in act_spaces]
            same = len(set(self._act_shapes)) == 1
            self.action_counts = (0,) * self.num_agents
            shape = self._act_shapes[0] if same else (max(map(math.prod, self._act_shapes)),)
            bounds = [
                _space_bounds(s, shape if same else (math.prod(s.shape),)) for s in act_spaces
            ]
            # The union of the agents' boxes over the entries each agent has; every agent's
            # action is clipped into its own box before it reaches JaxMARL.
            size = math.prod(shape)
            lo = [
                np.pad(b[0].reshape(-1), (0, size - b[0].size), constant_values=np.inf)
                for b in bounds
            ]
            hi = [
                np.pad(b[1].reshape(-1), (0, size - b[1].size), constant_values=-np.inf)
                for b in bounds
            ]
            self._act_space = spaces.Box(
                np.min(lo, axis=0).reshape(shape), np.max(hi, axis=0).reshape(shape), shape
            )
            self._act_low_per_agent = [b[0] for b in bounds]
            self._act_high_per_agent = [b[1] for b in bounds]
        else:
            raise NotImplementedError(
                f"JaxMARL action spaces {sorted(kinds)} are not supported (Discrete, "
                "MultiDiscrete or Box, the same kind for every agent)"
            )
        self._num_mask = spaces.num_actions(self._act_space)
        counts = np.asarray(self.action_counts)[:, None]
        self._static_mask = np.arange(self._num_mask)[None, :] < counts  # [A, N]

        # Action masks from get_avail_actions, where implemented.
        self._has_avail = False
        if self._act_kind != "box" and hasattr(env, "get_avail_actions"):
            try:
                avail = jax.eval_shape(env.get_avail_actions, state)
                _per_agent(agents, avail)
                self._has_avail = True
            except NotImplementedError:
                pass

        # Global state.
        self._world_state = "concat"
        gs_dim = self.num_agents * math.prod(self._obs_shape)
        gs_shape: tuple[int, ...] = (gs_dim,)
        if isinstance(obs, dict) and "world_state" in obs:
            self._world_state = "obs"
            gs_shape = tuple(obs["world_state"].shape)
        elif hasattr(env, "get_world_state"):
            try:
                gs_shape = tuple(jax.eval_shape(env.get_world_state, state).shape)
                self._world_state = "method"
            except NotImplementedError:
                pass
        self._gs_shape = gs_shape

        # Agent types.
        classes = None
        try:
            ac = env.agent_classes
            classes = ac() if callable(ac) else ac
        except (NotImplementedError, AttributeError, TypeError):
            classes = None
        types = []
        if isinstance(classes, dict) and all(
            any(a in members for members in classes.values()) for a in agents
        ):
            names = list(classes)
            for a in agents:
                types.append(next(i for i, n in enumerate(names) if a in classes[n]))
        else:
            sigs: list = []
            for lv, sp in zip(leaves, act_spaces, strict=True):
                act_sig = (type(sp).__name__, getattr(sp, "n", None), getattr(sp, "shape", None))
                sig = (tuple((x.shape, str(x.dtype)) for x in lv), act_sig)
                if sig not in sigs:
                    sigs.append(sig)
                types.append(sigs.index(sig))
        self._agent_types = np.asarray(types, np.int32)

        # JaxMARL's array-valued infos, kept in extras (structure fixed from step's signature).
        self._extras_sig: dict[str, Any] = {}
        if self.keep_infos:
            out = jax.eval_shape(self._raw_step, key, state, self._null_actions())
            infos = out[4]
            if isinstance(infos, dict):
                self._extras_sig = {
                    f"jaxmarl_info.{k}": v
                    for k, v in infos.items()
                    if hasattr(v, "shape") and hasattr(v, "dtype")
                }

    def _null_actions(self) -> Array:
        return jnp.zeros((self.num_agents, *self._act_space.shape), self._act_space.dtype)

    # ------------------------------------------------------------------ contract

    @property
    def name(self) -> str:
        return f"JaxMARL<{self.jaxmarl_env.name}>"

    @property
    def agent_types(self) -> Array:
        return jnp.asarray(self._agent_types)

    def default_params(self) -> JaxMARLParams:
        return JaxMARLParams(max_steps=self._default_max_steps)

    def validate_params(self, params: JaxMARLParams) -> None:
        validate_max_steps(
            params.max_steps,
            self.native_episode_len,
            self.jaxmarl_env.name,
            "build the JaxMARL env with a longer limit instead",
        )

    def observation_space(self, params: JaxMARLParams) -> spaces.Box:
        return spaces.Box(self._obs_low, self._obs_high, self._obs_shape, jnp.float32)

    def action_space(self, params: JaxMARLParams) -> spaces.Space:
        return self._act_space

    def global_state_space(self, params: JaxMARLParams) -> spaces.Box:
        return spaces.Box(-jnp.inf, jnp.inf, self._gs_shape, jnp.float32)

    def reset(self, key: PRNGKey, params: JaxMARLParams) -> tuple[JaxMARLState, TimeStep]:
        del params
        obs, inner = self.jaxmarl_env.reset(key)
        inner = canonical_state(inner, self._state_sig)
        reward = jnp.zeros((self.num_agents,), jnp.float32)
        false = jnp.array(False)
        extras = {k: jnp.zeros(v.shape, v.dtype) for k, v in self._extras_sig.items()}
        ts = self._timestep(obs, inner, reward, false, false, extras)
        return JaxMARLState(inner=inner, step=jnp.int32(0)), ts

    def step(
        self, key: PRNGKey, state: JaxMARLState, actions: Array, params: JaxMARLParams
    ) -> tuple[JaxMARLState, TimeStep]:
        obs, inner, rewards, dones, infos = self._raw_step(key, state.inner, actions)
        inner = canonical_state(inner, self._state_sig)
        t = state.step + 1
        native_done = jnp.asarray(dones["__all__"]).astype(bool).reshape(())
        if self.native_episode_len is not None:
            at_native_limit = t >= self.native_episode_len
        else:
            at_native_limit = jnp.array(False)
        terminated = native_done & ~at_native_limit
        truncated = truncation(t, terminated, params.max_steps, self.native_episode_len)
        reward = jnp.stack(
            [jnp.asarray(r, jnp.float32).reshape(()) for r in _per_agent(self.agents, rewards)]
        )
        extras = {}
        for k, v in self._extras_sig.items():
            extras[k] = jnp.asarray(infos[k.split(".", 1)[1]], v.dtype).reshape(v.shape)
        ts = self._timestep(obs, inner, reward, terminated, truncated, extras)
        return JaxMARLState(inner=inner, step=t), ts

    # ------------------------------------------------------------------ helpers

    def _raw_step(self, key: PRNGKey, inner: Any, actions: Array) -> tuple:
        """JaxMARL's transition without its auto-reset, with `MultiAgentEnv.step`'s key split."""
        key_step, _ = jax.random.split(key)
        return self.jaxmarl_env.step_env(key_step, inner, self.to_jaxmarl_actions(actions))

    def to_jaxmarl_actions(self, actions: Array) -> Any:
        """`[A, *act_shape]` actions -> JaxMARL's dict (or tuple) of per-agent actions.

        Discrete actions are clipped into each agent's `0 .. n_i - 1`; padded Box actions are cut
        to each agent's shape and clipped into its bounds.
        """
        actions = jnp.asarray(actions)
        env, out = self.jaxmarl_env, []
        for i, a in enumerate(self.agents):
            sp = env.action_space(a)
            if self._act_kind == "discrete":
                x = jnp.clip(actions[i].astype(jnp.int32), 0, self.action_counts[i] - 1)
            elif self._act_kind == "multidiscrete":
                x = jnp.clip(actions[i].astype(jnp.int32), 0, jnp.asarray(self._act_space.nvec) - 1)
            else:
                shape = self._act_shapes[i]
                x = actions[i].reshape(-1)[: math.prod(shape)].reshape(shape)
                lo = self._act_low_per_agent[i].reshape(shape)
                hi = self._act_high_per_agent[i].reshape(shape)
                x = jnp.clip(x.astype(jnp.float32), lo, hi)
            out.append(x.astype(getattr(sp, "dtype", x.dtype)))
        return _pack(self.agents, out)

    def stack_obs(self, obs: Any) -> Array:
        """JaxMARL's per-agent observations -> `[A, *obs_shape]` float32 (padded if needed)."""
        per = _per_agent(self.agents, obs)
        if not self._obs_flatten:
            return jnp.stack([jnp.asarray(o, jnp.float32) for o in per])
        size = self._obs_shape[0]
        rows = []
        for o in per:
            flat = jnp.concatenate(
                [jnp.asarray(x, jnp.float32).reshape(-1) for x in jax.tree.leaves(o)]
            )
            rows.append(jnp.pad(flat, (0, size - flat.shape[0])))
        return jnp.stack(rows)

    def _mask(self, inner: Any) -> Array:
        mask = jnp.asarray(self._static_mask)
        if not self._has_avail:
            return mask
        avail = _per_agent(self.agents, self.jaxmarl_env.get_avail_actions(inner))
        rows = []
        for m in avail:
            m = jnp.asarray(m).astype(bool).reshape(-1)
            rows.append(jnp.pad(m, (0, self._num_mask - m.shape[0])))
        return jnp.stack(rows) & mask

    def _global_state(self, obs: Any, inner: Any, stacked: Array) -> Array:
        if self._world_state == "obs":
            return jnp.asarray(obs["world_state"], jnp.float32)
        if self._world_state == "method":
            return jnp.asarray(self.jaxmarl_env.get_world_state(inner), jnp.float32)
        return stacked.reshape(-1)

    def _timestep(self, obs, inner, reward, terminated, truncated, extras) -> TimeStep:
        stacked = self.stack_obs(obs)
        if self.episode_metrics is not None:
            metrics = self.episode_metrics(inner)
            extras = {**extras, **{k: jnp.asarray(v, jnp.float32) for k, v in metrics.items()}}
        return TimeStep(
            obs=stacked,
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            action_mask=self._mask(inner),
            global_state=self._global_state(obs, inner, stacked),
            extras=extras,
        )


def from_jaxmarl(
    jaxmarl_env_or_name: Any,
    *,
    native_episode_len: int | str | None = "auto",
    time_limit: int | None = None,
    keep_infos: bool = False,
    episode_metrics: Any = None,
    **kwargs: Any,
) -> tuple[JaxMARLEnv, JaxMARLParams]:
    """Wrap a JaxMARL environment (an instance or a registered name) as a marljax env.

    Example::

        env, params = from_jaxmarl("MPE_simple_spread_v3")
        state, ts = env.reset(key, params)               # ts.obs: [3, 18]

    Args:
      jaxmarl_env_or_name: a JaxMARL `MultiAgentEnv`, or a name for `jaxmarl.make`.
      native_episode_len: JaxMARL's own episode length ("auto" to infer, see
        `native_episode_len`; None for an env without time limit).
      time_limit: default `params.max_steps` (default: the native episode length).
      keep_infos: copy JaxMARL's array-valued infos into `timestep.extras`.
      episode_metrics: per-episode metrics from the JaxMARL state (see `JaxMARLEnv`).
      **kwargs: passed to `jaxmarl.make` with a name (e.g. `max_steps=50`, `scenario=...`;
        a SMAX `scenario` may be a map name such as `"3m"`).

    Returns:
      `(env, params)`.

    Reference:
      Rutherford et al., "JaxMARL: Multi-Agent RL Environments and Algorithms in JAX", 2024.
    """
    if isinstance(jaxmarl_env_or_name, str):
        jaxmarl = import_jaxmarl(f"from_jaxmarl({jaxmarl_env_or_name!r})")
        if isinstance(kwargs.get("scenario"), str):
            kwargs["scenario"] = smax_scenario(kwargs["scenario"])
        jm = jaxmarl.make(jaxmarl_env_or_name, **kwargs)
    else:
        if kwargs:
            raise TypeError(f"keyword arguments {sorted(kwargs)} need an env name, not an instance")
        jm = jaxmarl_env_or_name
    env = JaxMARLEnv(
        jm,
        native_episode_len=native_episode_len,
        max_steps=time_limit,
        keep_infos=keep_infos,
        episode_metrics=episode_metrics,
    )
    params = env.default_params()
    env.validate_params(params)
    return env, params


def smax_scenario(map_name: str) -> Any:
    """JaxMARL's SMAX `Scenario` of a map name (e.g. `"3m"`), or a `KeyError` with close matches.

    Args:
      map_name: a key of JaxMARL's `MAP_NAME_TO_SCENARIO` (`3m`, `2s3z`, `5m_vs_6m`, ...).
    """
    import_jaxmarl(f"SMAX map {map_name!r}")
    from jaxmarl.environments.smax import smax_env

    maps = list(smax_env.MAP_NAME_TO_SCENARIO)
    if map_name not in maps:
        close = difflib.get_close_matches(map_name, maps, n=5, cutoff=0.4)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise KeyError(f"Unknown SMAX map {map_name!r}.{hint} SMAX's maps: {', '.join(maps)}.")
    return smax_env.map_name_to_scenario(map_name)


# ---------------------------------------------------------------------------- registry


def _registry_id(name: str) -> str:
    clean = "".join(c if c.isalnum() or c in "_-." else "_" for c in name)
    return f"jaxmarl/{clean}-v0"


def register_jaxmarl_envs(names: list[str] | None = None) -> list[str]:
    """Register JaxMARL envs in the marljax registry as `jaxmarl/<Name>-v0` (explicit opt-in).

    Never called at import: JaxMARL is optional, and the conformance test runs `check_env` on
    every registered id. Not needed for `marljax.make("jaxmarl/<name>")`, which resolves any
    JaxMARL name without registering it (`jaxmarl_spec`); registering lists the ids in
    `marljax envs`. `marljax.make("jaxmarl/MPE_simple_spread_v3-v0", max_steps=10)` then
    works; constructor keywords of the JaxMARL class are static overrides, except `max_steps`,
    which sets the traced `params.max_steps` (it can only shorten episodes).

    Args:
      names: JaxMARL names (default: every name in `jaxmarl.registered_envs`).

    Returns:
      The ids newly registered (ids already present are skipped).
    """
    from marljax.core import registry

    jaxmarl = import_jaxmarl("register_jaxmarl_envs")
    names = list(jaxmarl.registered_envs) if names is None else list(names)
    new = []
    for name in names:
        env_id = _registry_id(name)
        if env_id in registry._REGISTRY:
            continue
        registry.register(
            env_id,
            _entry_point(name),
            description=f"JaxMARL {name} through from_jaxmarl (checked with JaxMARL {JAXMARL_VERSION})",
        )
        new.append(env_id)
    return new


def jaxmarl_spec(name: str) -> EnvSpec:
    """The spec of the id `jaxmarl/<name>`: JaxMARL's `<name>` through `from_jaxmarl`.

    `marljax.make("jaxmarl/MPE_simple_spread_v3", num_agents=4, max_steps=10)` resolves here
    (the registry's `jaxmarl` family; nothing is registered). Overrides are split as for
    `register_jaxmarl_envs`: the JaxMARL class's constructor keywords and `keep_infos` are
    static, `max_steps` sets the traced `params.max_steps` (it can only shorten episodes).

    Args:
      name: a name of `jaxmarl.registered_envs` (a trailing `-v0`, as in the ids of
        `register_jaxmarl_envs`, is accepted).

    Raises:
      MissingDependencyError: JaxMARL is not installed (names the extra to install).
      KeyError: JaxMARL has no env of that name (lists close matches).
    """
    env_id = f"jaxmarl/{name}"
    jaxmarl = import_jaxmarl(env_id)
    names = list(jaxmarl.registered_envs)
    if name not in names and name.endswith("-v0") and name[: -len("-v0")] in names:
        name = name[: -len("-v0")]
    if name not in names:
        lower = {n.lower(): n for n in names}
        close = [n for n in names if n.lower() == name.lower()]
        close += [
            lower[c]
            for c in difflib.get_close_matches(name.lower(), list(lower), n=5, cutoff=0.4)
            if lower[c] not in close
        ]
        hint = f" Did you mean: {', '.join(f'jaxmarl/{c}' for c in close)}?" if close else ""
        if "smax" in name.lower():
            hint += " SMAX maps with the heuristic enemy are ids smax/<map>-v0 (e.g. smax/3m-v0)."
        raise KeyError(
            f"Unknown environment id {env_id!r}: JaxMARL has no env {name!r}.{hint} "
            f"JaxMARL's envs: {', '.join(names)}."
        )
    return EnvSpec(
        env_id,
        _entry_point(name),
        description=f"JaxMARL {name} through from_jaxmarl (checked with JaxMARL {JAXMARL_VERSION})",
    )


def _entry_point(name: str):
    """A constructor whose signature is the JaxMARL class's (so `make` can split overrides)."""

    def build(**kwargs: Any) -> JaxMARLEnv:
        return from_jaxmarl(name, **kwargs)[0]

    adapter = inspect.Parameter("keep_infos", inspect.Parameter.KEYWORD_ONLY, default=False)
    params = []
    try:
        import jaxmarl.registration as reg

        cls = _jaxmarl_class(reg, name)
        sig = inspect.signature(cls.__init__) if cls is not None else None
        sigs = [sig] if sig is not None else []
        if cls is not None and "EnemySMAX" in {c.__name__ for c in cls.__mro__}:
            sigs.append(inspect.signature(reg.SMAX.__init__))  # its **env_kwargs go to SMAX
        for one in sigs:
            for p in list(one.parameters.values())[1:]:
                kinds = (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                if p.kind in kinds and p.name != "max_steps" and p.name not in _names(params):
                    params.append(p.replace(kind=p.KEYWORD_ONLY))
    except Exception:  # noqa: BLE001  (no signature: only params overrides are accepted)
        params = []
    params = [p for p in params if p.name != adapter.name] + [adapter]
    build.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    build.__name__ = f"jaxmarl_{name}"
    return build


def _names(params: list) -> set[str]:
    return {p.name for p in params}


def _jaxmarl_class(reg: Any, name: str) -> Any:
    """The JaxMARL class `jaxmarl.make(name)` builds, looked up without building it."""
    table = {
        "MPE_simple_v3": "SimpleMPE",
        "MPE_simple_tag_v3": "SimpleTagMPE",
        "MPE_simple_world_comm_v3": "SimpleWorldCommMPE",
        "MPE_simple_spread_v3": "SimpleSpreadMPE",
        "MPE_simple_crypto_v3": "SimpleCryptoMPE",
        "MPE_simple_speaker_listener_v4": "SimpleSpeakerListenerMPE",
        "MPE_simple_push_v3": "SimplePushMPE",
        "MPE_simple_adversary_v3": "SimpleAdversaryMPE",
        "MPE_simple_reference_v3": "SimpleReferenceMPE",
        "switch_riddle": "SwitchRiddle",
        "SMAX": "SMAX",
        "HeuristicEnemySMAX": "HeuristicEnemySMAX",
        "LearnedPolicyEnemySMAX": "LearnedPolicyEnemySMAX",
        "storm": "InTheGrid",
        "storm_2p": "InTheGrid_2p",
        "storm_np": "InTheMatrix",
        "hanabi": "Hanabi",
        "overcooked": "Overcooked",
        "overcooked_v2": "OvercookedV2",
        "coin_game": "CoinGame",
    }
    return getattr(reg, table.get(name, ""), None)
