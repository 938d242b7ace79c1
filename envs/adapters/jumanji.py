"""Import Jumanji's multi-agent routing environments into the marljax contract.

`from_jumanji(name_or_env, **kwargs) -> (env, params)` wraps three environments of Jumanji
(Bonnet et al., "Jumanji: a Diverse Suite of Scalable Reinforcement Learning Environments in
JAX", ICLR 2024; https://github.com/instadeepai/jumanji), checked against jumanji 1.1.2:
`RobotWarehouse-v0` (RWARE, Papoudakis et al. 2021), `Connector-v3` and `Cleaner-v0`. Jumanji's
API is single-env dm_env style: `reset(key) -> (state, timestep)`, `step(state, action) ->
(state, timestep)`, where the timestep carries a structured observation, a `step_type` (FIRST,
MID, LAST) and a `discount`. `JumanjiEnv` turns it into a marljax `Environment`:

- Observations `[A, *obs_shape]` float32, converted per agent from Jumanji's observation:

  - RWARE: Jumanji's `agents_view[i]`, the vector of the rware package (own position, carried
    shelf, direction one-hot, highway flag, then agents and shelves in the `sensor_range`
    window; 66 numbers at range 1), as floats.
  - Connector: Jumanji observes one shared `[G, G]` grid of codes (agent `j`'s path `1 + 3 j`,
    head `2 + 3 j`, target `3 + 3 j`). Agent `i` sees it as `[G, G, 6]` one-hot layers (`hwc`):
    its own path, head and target, then every other agent's paths, heads and targets (a
    policy shared by the agents must see which pair is its own).
  - Cleaner: Jumanji observes the shared maze (`0` dirty, `1` clean, `2` wall) and every
    agent's location. Agent `i` sees `[R, C, 4]` layers (`hwc`): dirty, wall, itself, and the
    number of other agents on the cell (agents may share cells).

  Jumanji's `step_count` is not observed.
- `action_mask [A, N]` is the observation's `action_mask` (RWARE and Connector `N = 5`, noop
  first; Cleaner `N = 4`, the four moves). Actions are clipped into `0 .. N - 1`. Masked
  actions are Jumanji's business: RWARE and Connector execute them as a noop, while Cleaner
  *ends the episode* on one (Jumanji's rule; a learner that samples from the mask never does).
- `global_state`: RWARE, every agent's view concatenated (`[A * D]`, EPyMARL's state for
  RWARE); Connector, the grid as `[G * G * 3 A]` one-hot layers (path, head, target of each
  agent, flattened `hwc`); Cleaner, `[R * C * (2 + A)]` layers (dirty, wall, each agent's
  location).
- Rewards `[A]` float32. RWARE's and Cleaner's rewards are one team reward (shape `[]`),
  given to every agent; Connector's are per agent (`[A]`: +1 when an agent connects, -0.03 per
  step while it has not). The `episode_return` metric (mean over agents) is thus the team
  return for RWARE and Cleaner.
- With `keep_extras` (the default), Jumanji's timestep extras (Connector: `num_connections`,
  `ratio_connections`, `total_path_length`; Cleaner: `ratio_dirty_tiles`, `num_dirty_tiles`;
  RWARE has none) are in `timestep.extras` as float32 scalars under `"jumanji/<name>"`: per-
  episode metrics at episode ends, which the runner reports.

Episode ends. Jumanji's LAST timestep carries one discount for two causes. Its native episode
length `L` is the env's `time_limit` (all three end when `step_count >= time_limit` after the
increment); the adapter counts steps itself in `state.step` and reports, at step `t`,

    terminated = the env's own terminal condition (below), recomputed exactly from the state
    truncated  = not terminated and t >= min(params.max_steps, L)

- RWARE: terminated when two agents collide (an agent's cell is occupied by another agent after
  the moves; Jumanji's rule, not the rware package's, which resolves collisions). Jumanji
  reports its time limit with discount 0 as well (`termination`); here it is a truncation.
- Connector: terminated when every agent is connected or blocked (Jumanji's `discount == 0`
  for every agent at LAST); its time limit is already a truncation in Jumanji.
- Cleaner: terminated when no tile is dirty or an agent took a masked action; Jumanji's time
  limit (default `num_rows * num_cols`) ends it with discount 0, here a truncation.

`step` does not auto-reset (`timestep.obs` after the last step is the final observation; use
`marljax.core.wrappers.AutoReset` or the runner's batched auto-reset).

Params and keys. Jumanji keeps its constants on `self` (generator, time limit, reward
function, Cleaner's penalty), so they are static here: the params pytree (`JumanjiParams`)
holds only `max_steps` (traced; it can shorten episodes, not lengthen them past `L`; pass
`time_limit=...` to the Jumanji constructor instead). Jumanji's `step` takes no key: its
randomness (RWARE's new shelf requests) comes from the key stored in its state at `reset`, so
`step`'s key is unused and the adapter reproduces `jumanji_env.step(state, actions)` exactly.

Registry. `marljax.make("jumanji/<JumanjiId>", **overrides)` builds one of the three by Jumanji
id (`jumanji/RobotWarehouse-v0`, `jumanji/Connector-v3`, `jumanji/Cleaner-v0`); static overrides
are the Jumanji constructor's keywords (`time_limit`, `reward_fn`, `penalty_per_timestep`, a
`generator`), the generator's size keywords (RWARE: `shelf_rows`, `shelf_columns`,
`column_height`, `num_agents`, `sensor_range`, `request_queue_size`; Connector: `grid_size`,
`num_agents`; Cleaner: `num_rows`, `num_cols`, `num_agents`; the others keep the Jumanji id's
values) and `keep_extras`; `max_steps` is the traced time limit. The benchmark tasks have
first-class ids (`rware/tiny-2ag-v0`, `connector/10x10-10ag-v0`, ...; `JUMANJI_TASKS`), which
register without importing Jumanji; any of these ids without Jumanji fails naming the extra to
install.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

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
    "JUMANJI_TASKS",
    "JumanjiEnv",
    "JumanjiParams",
    "JumanjiState",
    "from_jumanji",
    "jumanji_spec",
    "make_cleaner",
    "make_connector",
    "make_rware",
    "register_jumanji_tasks",
]

#: the pyproject extra that installs Jumanji.
JUMANJI_EXTRA = "bench"
#: the Jumanji release the conversions and the registered tasks were checked against.
JUMANJI_VERSION = "1.1.2"


def import_jumanji(what: str) -> Any:
    """`import jumanji`, or a `MissingDependencyError` saying how to install it.

    Args:
      what: what needs Jumanji, for the message (e.g. `"rware/tiny-2ag-v0"`).
    """
    return import_optional("jumanji", what, JUMANJI_EXTRA)


@struct.dataclass
class JumanjiParams(AdapterParams):
    """Traced parameters of an adapted Jumanji env (`max_steps`, see `AdapterParams`; `L` is the
    Jumanji env's `time_limit`)."""

    max_steps: int = 500


@struct.dataclass
class JumanjiState(AdapterState):
    """State of an adapted Jumanji env (`inner` is the Jumanji env's state; see `AdapterState`)."""


# ---------------------------------------------------------------------------- conversions


class _Conversion(NamedTuple):
    """How one Jumanji env class maps onto the contract (pure functions of the Jumanji env).

    Attributes:
      obs: `(jenv, observation) -> [A, *obs_shape]` float32.
      obs_space: `(jenv) -> spaces.Box` of one agent's observation.
      global_state: `(jenv, state, obs [A, ...]) -> [S]` float32.
      terminal: `(jenv, state_tm1, actions [A], state_t) -> []` bool, the env's own terminal
        condition (not its time limit).
      generator: `(module, class name, attribute of the env holding it, size keywords)`.
    """

    obs: Callable[[Any, Any], Array]
    obs_space: Callable[[Any], spaces.Box]
    global_state: Callable[[Any, Any, Array], Array]
    terminal: Callable[[Any, Any, Array, Any], Array]
    generator: tuple[str, str, str, tuple[str, ...]]


def _rware_obs(jenv: Any, observation: Any) -> Array:
    return jnp.asarray(observation.agents_view, jnp.float32)


def _rware_obs_space(jenv: Any) -> spaces.Box:
    rows, cols = jenv.grid_size
    high = np.ones((int(jenv.num_obs_features),), np.float32)
    high[:2] = (rows - 1, cols - 1)  # the agent's own (x, y) cell; every other feature is 0/1
    return spaces.Box(np.zeros_like(high), high, high.shape, jnp.float32)


def _rware_terminal(jenv: Any, state_tm1: Any, actions: Array, state: Any) -> Array:
    from jumanji.environments.routing.robot_warehouse import utils

    collisions = jax.vmap(functools.partial(utils.is_collision, state.grid))(
        state.agents, jenv.agent_ids
    )
    return jnp.any(collisions)


def _connector_layers(grid: Array) -> tuple[Array, Array, Array]:
    """`occupied [G, G]`, owner agent `[G, G]`, kind `[G, G]` (0 path, 1 head, 2 target)."""
    grid = jnp.asarray(grid, jnp.int32)
    occupied = grid > 0
    code = jnp.maximum(grid - 1, 0)
    return occupied, code // 3, code % 3


def _connector_obs(jenv: Any, observation: Any) -> Array:
    occupied, owner, kind = _connector_layers(observation.grid)
    kinds = jax.nn.one_hot(kind, 3, dtype=jnp.float32) * occupied[..., None]  # [G, G, 3]

    def view(i: Array) -> Array:
        own = (owner == i)[..., None]
        return jnp.concatenate([kinds * own, kinds * ~own], axis=-1)  # [G, G, 6]

    return jax.vmap(view)(jnp.arange(jenv.num_agents))


def _connector_obs_space(jenv: Any) -> spaces.Box:
    g = int(jenv.grid_size)
    return spaces.Box(0.0, 1.0, (g, g, 6), jnp.float32, layout="hwc")


def _connector_global_state(jenv: Any, state: Any, obs: Array) -> Array:
    occupied, owner, kind = _connector_layers(state.grid)
    layers = jax.nn.one_hot(3 * owner + kind, 3 * jenv.num_agents, dtype=jnp.float32)
    return (layers * occupied[..., None]).reshape(-1)


def _connector_terminal(jenv: Any, state_tm1: Any, actions: Array, state: Any) -> Array:
    from jumanji.environments.routing.connector.utils import connected_or_blocked

    return jnp.all(jax.vmap(connected_or_blocked)(state.agents, state.action_mask))


def _cleaner_layers(jenv: Any, grid: Array, locations: Array) -> tuple[Array, Array, Array]:
    """`dirty [R, C]`, `wall [R, C]`, each agent's location one-hot `[A, R, C]`."""
    from jumanji.environments.routing.cleaner.constants import DIRTY, WALL

    rows, cols = jenv.grid_shape
    cells = locations[:, 0] * cols + locations[:, 1]
    at = jax.nn.one_hot(cells, rows * cols, dtype=jnp.float32).reshape(-1, rows, cols)
    return (grid == DIRTY).astype(jnp.float32), (grid == WALL).astype(jnp.float32), at


def _cleaner_obs(jenv: Any, observation: Any) -> Array:
    dirty, wall, at = _cleaner_layers(jenv, observation.grid, observation.agents_locations)
    count = at.sum(axis=0)
    own = jnp.stack([dirty, wall], axis=-1)  # [R, C, 2]

    def view(at_i: Array) -> Array:
        return jnp.concatenate([own, at_i[..., None], (count - at_i)[..., None]], axis=-1)

    return jax.vmap(view)(at)


def _cleaner_obs_space(jenv: Any) -> spaces.Box:
    rows, cols = jenv.grid_shape
    high = np.ones((rows, cols, 4), np.float32)
    high[..., 3] = jenv.num_agents - 1  # other agents on the cell
    return spaces.Box(np.zeros_like(high), high, high.shape, jnp.float32, layout="hwc")


def _cleaner_global_state(jenv: Any, state: Any, obs: Array) -> Array:
    dirty, wall, at = _cleaner_layers(jenv, state.grid, state.agents_locations)
    layers = jnp.concatenate([dirty[..., None], wall[..., None], jnp.moveaxis(at, 0, -1)], -1)
    return layers.reshape(-1)


def _cleaner_terminal(jenv: Any, state_tm1: Any, actions: Array, state: Any) -> Array:
    from jumanji.environments.routing.cleaner.constants import DIRTY

    legal = state_tm1.action_mask[jnp.arange(jenv.num_agents), actions]
    return ~jnp.all(legal) | ~jnp.any(state.grid == DIRTY)


def _concat_views(jenv: Any, state: Any, obs: Array) -> Array:
    return obs.reshape(-1)


#: Jumanji env class name -> its conversion (the classes this adapter knows).
_CONVERSIONS: dict[str, _Conversion] = {
    "RobotWarehouse": _Conversion(
        _rware_obs,
        _rware_obs_space,
        _concat_views,
        _rware_terminal,
        (
            "jumanji.environments.routing.robot_warehouse.generator",
            "RandomGenerator",
            "_generator",
            (
                "shelf_rows",
                "shelf_columns",
                "column_height",
                "num_agents",
                "sensor_range",
                "request_queue_size",
            ),
        ),
    ),
    "Connector": _Conversion(
        _connector_obs,
        _connector_obs_space,
        _connector_global_state,
        _connector_terminal,
        (
            "jumanji.environments.routing.connector.generator",
            "RandomWalkGenerator",
            "_generator",
            ("grid_size", "num_agents"),
        ),
    ),
    "Cleaner": _Conversion(
        _cleaner_obs,
        _cleaner_obs_space,
        _cleaner_global_state,
        _cleaner_terminal,
        (
            "jumanji.environments.routing.cleaner.generator",
            "RandomGenerator",
            "generator",
            ("num_rows", "num_cols", "num_agents"),
        ),
    ),
}


def _conversion_of(jumanji_env: Any) -> tuple[str, _Conversion]:
    """The class name and conversion of a (possibly wrapped) Jumanji env."""
    inner = getattr(jumanji_env, "unwrapped", jumanji_env)
    for cls in type(inner).__mro__:
        if cls.__name__ in _CONVERSIONS:
            return cls.__name__, _CONVERSIONS[cls.__name__]
    raise NotImplementedError(
        f"the Jumanji adapter converts {', '.join(sorted(_CONVERSIONS))}, not "
        f"{type(inner).__name__}"
    )


# ---------------------------------------------------------------------------- the env


class JumanjiEnv(Environment[JumanjiState, JumanjiParams]):
    """A Jumanji multi-agent environment behind the marljax contract (see the module docstring).

    Args:
      jumanji_env: a Jumanji `RobotWarehouse`, `Connector` or `Cleaner` instance (Jumanji's
        wrappers are looked through with `unwrapped`; the adapter steps the bare env).
      keep_extras: copy Jumanji's timestep extras into `timestep.extras` as float32 scalars
        under `"jumanji/<name>"`.
    """

    def __init__(self, jumanji_env: Any, *, keep_extras: bool = True):
        self.jumanji_env = jenv = getattr(jumanji_env, "unwrapped", jumanji_env)
        self.jumanji_class, self._conv = _conversion_of(jenv)
        self.num_agents = int(jenv.num_agents)
        #: Jumanji's own episode length `L` (its `time_limit`).
        self.native_episode_len = int(jenv.time_limit)
        self.keep_extras = bool(keep_extras)
        self.num_actions = int(np.asarray(jenv.action_spec.num_values).reshape(-1)[0])
        # Shapes from `jax.eval_shape` (nothing is compiled or run).
        key = jax.random.PRNGKey(0)
        state, ts = jax.eval_shape(jenv.reset, key)
        self._state_sig = state
        self._obs_space = self._conv.obs_space(jenv)
        obs = jax.eval_shape(lambda o: self._conv.obs(jenv, o), ts.observation)
        if tuple(obs.shape) != (self.num_agents, *self._obs_space.shape):
            raise AssertionError(f"{self.jumanji_class}: observations {obs.shape} do not convert")
        gs = jax.eval_shape(lambda s, o: self._conv.global_state(jenv, s, o), state, obs)
        self._gs_shape = tuple(gs.shape)
        extras = ts.extras if (self.keep_extras and isinstance(ts.extras, dict)) else {}
        self._extra_names = tuple(sorted(extras))

    # ------------------------------------------------------------------ contract

    @property
    def name(self) -> str:
        return f"Jumanji<{self.jumanji_class}>"

    def __repr__(self) -> str:
        return f"{self.name}(num_agents={self.num_agents}, time_limit={self.native_episode_len})"

    def default_params(self) -> JumanjiParams:
        return JumanjiParams(max_steps=self.native_episode_len)

    def validate_params(self, params: JumanjiParams) -> None:
        validate_max_steps(
            params.max_steps,
            self.native_episode_len,
            f"Jumanji's {self.jumanji_class}",
            "pass time_limit=... to build it with a longer limit instead",
        )

    def observation_space(self, params: JumanjiParams) -> spaces.Box:
        return self._obs_space

    def action_space(self, params: JumanjiParams) -> spaces.Discrete:
        return spaces.Discrete(self.num_actions)

    def global_state_space(self, params: JumanjiParams) -> spaces.Box:
        return spaces.Box(0.0, np.inf, self._gs_shape, jnp.float32)

    def reset(self, key: PRNGKey, params: JumanjiParams) -> tuple[JumanjiState, TimeStep]:
        del params
        inner, ts = self.jumanji_env.reset(key)
        inner = canonical_state(inner, self._state_sig)
        reward = jnp.zeros((self.num_agents,), jnp.float32)
        false = jnp.array(False)
        out = self._timestep(inner, ts, reward, false, false)
        return JumanjiState(inner=inner, step=jnp.int32(0)), out

    def step(
        self, key: PRNGKey, state: JumanjiState, actions: Array, params: JumanjiParams
    ) -> tuple[JumanjiState, TimeStep]:
        del key  # Jumanji's randomness comes from the key in its state
        actions = self.to_jumanji_actions(actions)
        inner, ts = self.jumanji_env.step(state.inner, actions)
        inner = canonical_state(inner, self._state_sig)
        t = state.step + 1
        terminated = self._conv.terminal(self.jumanji_env, state.inner, actions, inner)
        terminated = jnp.asarray(terminated, bool).reshape(())
        truncated = truncation(t, terminated, params.max_steps, self.native_episode_len)
        reward = jnp.broadcast_to(jnp.asarray(ts.reward, jnp.float32), (self.num_agents,))
        out = self._timestep(inner, ts, reward, terminated, truncated)
        return JumanjiState(inner=inner, step=t), out

    # ------------------------------------------------------------------ helpers

    def to_jumanji_actions(self, actions: Array) -> Array:
        """`[A]` actions -> Jumanji's `[A]` int32 actions, clipped into `0 .. N - 1`."""
        actions = jnp.asarray(actions).reshape(self.num_agents)
        return jnp.clip(actions.astype(jnp.int32), 0, self.num_actions - 1)

    def convert_obs(self, observation: Any) -> Array:
        """Jumanji's observation -> `[A, *obs_shape]` float32 (see the module docstring)."""
        return self._conv.obs(self.jumanji_env, observation)

    def _timestep(self, inner, ts, reward, terminated, truncated) -> TimeStep:
        obs = self.convert_obs(ts.observation)
        extras = {
            f"jumanji/{k}": jnp.asarray(ts.extras[k], jnp.float32).reshape(())
            for k in self._extra_names
        }
        return TimeStep(
            obs=obs,
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            action_mask=jnp.asarray(ts.observation.action_mask, bool),
            global_state=self._conv.global_state(self.jumanji_env, inner, obs),
            extras=extras,
        )


# ---------------------------------------------------------------------------- construction


def _class_of(jumanji: Any, name: str) -> tuple[str, type]:
    """The class name and class that `jumanji.make(name)` builds (nothing is built)."""
    entry = str(jumanji.registration._REGISTRY[name].entry_point)
    return entry.rpartition(":")[2], jumanji.registration.load(entry)


def _supported_ids(jumanji: Any) -> list[str]:
    """Jumanji's registered ids whose class the adapter converts."""
    names = sorted(jumanji.registered_environments())
    return [n for n in names if _class_of(jumanji, n)[0] in _CONVERSIONS]


def _build_jumanji(jumanji: Any, name: str, **kwargs: Any) -> Any:
    """`jumanji.make(name, ...)`, where the generator's size keywords rebuild its generator.

    Size keywords not given keep the values of the id's default generator.
    """
    module, cls, attr, names = _CONVERSIONS[_class_of(jumanji, name)[0]].generator
    gen_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
    if not gen_kwargs:
        return jumanji.make(name, **kwargs)
    if "generator" in kwargs:
        raise TypeError(f"pass either generator=... or {sorted(gen_kwargs)}, not both")
    base = getattr(jumanji.make(name, **kwargs), attr)
    merged = {n: getattr(base, n) for n in names} | gen_kwargs
    generator = jumanji.registration.load(f"{module}:{cls}")(**merged)
    return jumanji.make(name, generator=generator, **kwargs)


def from_jumanji(
    jumanji_env_or_name: Any, *, keep_extras: bool = True, **kwargs: Any
) -> tuple[JumanjiEnv, JumanjiParams]:
    """Wrap a Jumanji multi-agent env (an instance or a Jumanji id) as a marljax env.

    Example::

        env, params = from_jumanji("RobotWarehouse-v0", num_agents=2, shelf_rows=1)
        state, ts = env.reset(key, params)               # ts.obs: [2, 66]

    Args:
      jumanji_env_or_name: a Jumanji `RobotWarehouse`, `Connector` or `Cleaner`, or a Jumanji id
        for `jumanji.make` (`"RobotWarehouse-v0"`, `"Connector-v3"`, `"Cleaner-v0"`).
      keep_extras: copy Jumanji's timestep extras into `timestep.extras` (`"jumanji/<name>"`).
      **kwargs: with an id, keywords of the Jumanji constructor (e.g. `time_limit=100`) and the
        size keywords of its default generator (e.g. `num_agents=2`; see the module docstring).

    Returns:
      `(env, params)`.

    Raises:
      MissingDependencyError: Jumanji is not installed (names the extra to install).
      KeyError: an id Jumanji lacks or the adapter does not convert (lists close matches).

    Reference:
      Bonnet et al., "Jumanji: a Diverse Suite of Scalable Reinforcement Learning Environments
      in JAX", ICLR 2024.
    """
    if isinstance(jumanji_env_or_name, str):
        name = jumanji_env_or_name
        jumanji = import_jumanji(f"from_jumanji({name!r})")
        _check_name(jumanji, name, prefix="")
        jenv = _build_jumanji(jumanji, name, **kwargs)
    else:
        if kwargs:
            raise TypeError(
                f"keyword arguments {sorted(kwargs)} need a Jumanji id, not an instance"
            )
        jenv = jumanji_env_or_name
    env = JumanjiEnv(jenv, keep_extras=keep_extras)
    params = env.default_params()
    env.validate_params(params)
    return env, params


def _check_name(jumanji: Any, name: str, prefix: str) -> None:
    supported = _supported_ids(jumanji)
    if name in supported:
        return
    others = sorted(jumanji.registered_environments())
    if name in others:
        raise KeyError(
            f"Unknown environment id {prefix + name!r}: the Jumanji adapter converts the "
            f"multi-agent routing envs {', '.join(prefix + s for s in supported)}, not {name!r}."
        )
    close = difflib.get_close_matches(name, supported, n=5, cutoff=0.4)
    hint = f" Did you mean: {', '.join(prefix + c for c in close)}?" if close else ""
    raise KeyError(
        f"Unknown environment id {prefix + name!r}: Jumanji {jumanji.__version__} has no env "
        f"{name!r} that the adapter converts.{hint} Converted: "
        f"{', '.join(prefix + s for s in supported)}."
    )


# ---------------------------------------------------------------------------- benchmark tasks


def make_rware(
    *,
    shelf_rows: int = 1,
    shelf_columns: int = 3,
    column_height: int = 8,
    num_agents: int = 2,
    sensor_range: int = 1,
    request_queue_size: int | None = None,
    time_limit: int = 500,
    keep_extras: bool = True,
) -> JumanjiEnv:
    """RWARE through Jumanji's `RobotWarehouse` with its `RandomGenerator` (Papoudakis et al.).

    The rware package's layouts are `shelf_rows x shelf_columns` blocks of `column_height`
    shelves (tiny 1 x 3, small 2 x 3, medium 2 x 5, large 3 x 5, all of height 8); its default
    request queue is one shelf per agent and its episodes last 500 steps.

    Args:
      shelf_rows: rows of shelf blocks.
      shelf_columns: columns of shelf blocks (odd).
      column_height: shelves per block column.
      num_agents: robots.
      sensor_range: radius of each robot's view.
      request_queue_size: shelves requested at any time (default `num_agents`).
      time_limit: Jumanji's episode length `L`.
      keep_extras: see `JumanjiEnv`.
    """
    import_jumanji("rware/*")
    from jumanji.environments import RobotWarehouse
    from jumanji.environments.routing.robot_warehouse.generator import RandomGenerator

    generator = RandomGenerator(
        shelf_rows=shelf_rows,
        shelf_columns=shelf_columns,
        column_height=column_height,
        num_agents=num_agents,
        sensor_range=sensor_range,
        request_queue_size=num_agents if request_queue_size is None else request_queue_size,
    )
    return JumanjiEnv(
        RobotWarehouse(generator=generator, time_limit=time_limit), keep_extras=keep_extras
    )


def make_connector(
    *, grid_size: int = 10, num_agents: int = 10, time_limit: int = 50, keep_extras: bool = True
) -> JumanjiEnv:
    """Jumanji's `Connector` with its `RandomWalkGenerator` and dense per-agent reward.

    Args:
      grid_size: side `G` of the square grid.
      num_agents: pairs of points to connect.
      time_limit: Jumanji's episode length `L`.
      keep_extras: see `JumanjiEnv`.
    """
    import_jumanji("connector/*")
    from jumanji.environments import Connector
    from jumanji.environments.routing.connector.generator import RandomWalkGenerator

    generator = RandomWalkGenerator(grid_size=grid_size, num_agents=num_agents)
    return JumanjiEnv(
        Connector(generator=generator, time_limit=time_limit), keep_extras=keep_extras
    )


def make_cleaner(
    *,
    num_rows: int = 10,
    num_cols: int = 10,
    num_agents: int = 3,
    time_limit: int | None = None,
    penalty_per_timestep: float = 0.5,
    keep_extras: bool = True,
) -> JumanjiEnv:
    """Jumanji's `Cleaner` with its `RandomGenerator` (random mazes).

    Args:
      num_rows: maze rows `R`.
      num_cols: maze columns `C`.
      num_agents: cleaning robots (all start in the top-left cell).
      time_limit: Jumanji's episode length `L` (default `num_rows * num_cols`).
      penalty_per_timestep: team reward subtracted at every step.
      keep_extras: see `JumanjiEnv`.
    """
    import_jumanji("cleaner/*")
    from jumanji.environments import Cleaner
    from jumanji.environments.routing.cleaner.generator import RandomGenerator

    generator = RandomGenerator(num_rows=num_rows, num_cols=num_cols, num_agents=num_agents)
    cleaner = Cleaner(
        generator=generator, time_limit=time_limit, penalty_per_timestep=penalty_per_timestep
    )
    return JumanjiEnv(cleaner, keep_extras=keep_extras)


_CHECKED = f"checked with jumanji {JUMANJI_VERSION}"

#: first-class ids of the benchmark tasks: `(id, entry point, kwargs, description)`.
JUMANJI_TASKS: tuple[tuple[str, Callable[..., JumanjiEnv], dict[str, Any], str], ...] = (
    (
        "rware/tiny-2ag-v0",
        make_rware,
        {"shelf_rows": 1, "num_agents": 2},
        "RWARE tiny (rware-tiny-2ag-v2 layout): 1x3 shelf blocks, 2 robots, 2 requests, 500 "
        f"steps, team reward, collisions end episodes (Jumanji RobotWarehouse, {_CHECKED})",
    ),
    (
        "rware/tiny-4ag-v0",
        make_rware,
        {"shelf_rows": 1, "num_agents": 4},
        "RWARE tiny (rware-tiny-4ag-v2 layout): 1x3 shelf blocks, 4 robots, 4 requests, 500 "
        f"steps, team reward, collisions end episodes (Jumanji RobotWarehouse, {_CHECKED})",
    ),
    (
        "rware/small-4ag-v0",
        make_rware,
        {"shelf_rows": 2, "num_agents": 4},
        "RWARE small (rware-small-4ag-v2 layout): 2x3 shelf blocks, 4 robots, 4 requests, 500 "
        f"steps, team reward, collisions end episodes (Jumanji RobotWarehouse, {_CHECKED})",
    ),
    (
        "connector/10x10-10ag-v0",
        make_connector,
        {},
        "Connector 10x10, 10 pairs to connect, 50 steps, per-agent dense reward (Jumanji "
        f"Connector-v3's defaults, {_CHECKED})",
    ),
    (
        "cleaner/10x10-3ag-v0",
        make_cleaner,
        {},
        "Cleaner 10x10 maze, 3 robots, 100 steps, team reward (Jumanji Cleaner-v0's defaults, "
        f"{_CHECKED})",
    ),
)


def register_jumanji_tasks() -> list[str]:
    """Register the benchmark ids of `JUMANJI_TASKS` (imports nothing of Jumanji).

    Called by `marljax.envs` on import; building one of the ids imports Jumanji (or fails with
    a `MissingDependencyError` naming the extra to install).

    Returns:
      The ids newly registered (ids already present are skipped).
    """
    from marljax.core import registry

    new = []
    for env_id, entry_point, kwargs, description in JUMANJI_TASKS:
        if env_id in registry._REGISTRY:
            continue
        registry.register(env_id, entry_point, kwargs=kwargs, description=description)
        new.append(env_id)
    return new


# ---------------------------------------------------------------------------- jumanji/<id>


def jumanji_spec(name: str) -> EnvSpec:
    """The spec of the id `jumanji/<name>`: Jumanji's `<name>` through `from_jumanji`.

    `marljax.make("jumanji/RobotWarehouse-v0", num_agents=2, max_steps=100)` resolves here (the
    registry's `jumanji` family; nothing is registered). Static overrides are the Jumanji
    constructor's keywords, its generator's size keywords and `keep_extras`; `max_steps` sets
    the traced `params.max_steps` (it can only shorten episodes).

    Args:
      name: a Jumanji id whose class the adapter converts.

    Raises:
      MissingDependencyError: Jumanji is not installed (names the extra to install).
      KeyError: unknown or unconverted id (lists close matches).
    """
    jumanji = import_jumanji(f"jumanji/{name}")
    _check_name(jumanji, name, prefix="jumanji/")
    return EnvSpec(
        f"jumanji/{name}",
        _entry_point(jumanji, name),
        description=f"Jumanji {name} through marljax.envs.adapters.from_jumanji",
    )


def _entry_point(jumanji: Any, name: str) -> Callable[..., JumanjiEnv]:
    """A constructor whose signature lists the static overrides (so `make` can split them)."""

    def build(**kwargs: Any) -> JumanjiEnv:
        return from_jumanji(name, **kwargs)[0]

    kw = inspect.Parameter.KEYWORD_ONLY
    class_name, cls = _class_of(jumanji, name)
    params = [
        p.replace(kind=kw)
        for p in list(inspect.signature(cls.__init__).parameters.values())[1:]
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "viewer"
    ]
    # The generator's size keywords: not given, they keep the values of the id's generator.
    params += [
        inspect.Parameter(n, kw, default=None) for n in _CONVERSIONS[class_name].generator[3]
    ]
    params.append(inspect.Parameter("keep_extras", kw, default=True))
    build.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    build.__name__ = f"jumanji_{class_name}"
    return build
