"""Registry of environments with versioned ids: `make("family/name-v0", **overrides)`.

An id maps to an entry point (a callable returning an `Environment`) and default static keyword
arguments. `make` splits user overrides into *static* constructor arguments (shape-determining,
e.g. `num_agents`) and *params* fields (traced, e.g. payoffs or episode length); anything else is
an error that lists the close matches. It then calls `env.validate_params(params)` once, the one
place where impossible values are rejected.

A *family resolver* (`register_family`) builds specs on demand for ids that are not registered
one by one: `make("jaxmarl/MPE_simple_spread_v3")` resolves any JaxMARL name through
`marljax.envs.adapters.jaxmarl`. Resolved ids are not listed by `registered_envs`.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import re
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp

from marljax.core.types import Environment, EnvParams

_ID_RE = re.compile(r"^[a-z0-9_]+/[A-Za-z0-9_\-\.]+-v\d+$")


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """A registered environment: its id, constructor and default keyword arguments.

    `references` maps a short name to a per-episode return that a learner can be measured
    against (e.g. the optimum and the equilibria of a matrix game), in the unit of the
    `episode_return` training metric (the undiscounted episode return, mean over agents) and
    valid for the registered defaults only (see `env_references`).
    """

    env_id: str
    entry_point: Callable[..., Environment]
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    description: str = ""
    references: dict[str, float] = dataclasses.field(default_factory=dict)


class MissingDependencyError(ModuleNotFoundError, KeyError):
    """An env id needs an optional package that is not installed; the message says what to install.

    A `ModuleNotFoundError` for Python callers, and a `KeyError` like an unknown id, so the CLI and
    the experiment loader report it in one line.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def import_optional(module: str, what: str, extra: str = "bench") -> Any:
    """`import module`, or a `MissingDependencyError` saying how to install it.

    Args:
      module: the optional package (e.g. `"jaxmarl"`, `"jumanji"`).
      what: what needs it, for the message (e.g. `"jaxmarl/MPE_simple_spread_v3"`).
      extra: the pyproject extra that installs it.
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingDependencyError(
            f"{what} needs {_PRETTY.get(module, module)}, which is not installed ({err}): install "
            f"it with `pip install 'marljax[{extra}]'` (or `pip install {module}`)",
            name=module,
        ) from None


_PRETTY = {"jaxmarl": "JaxMARL", "jumanji": "Jumanji"}

_REGISTRY: dict[str, EnvSpec] = {}
#: family -> resolver building the `EnvSpec` of `family/<name>` from `<name>` (see `spec`).
_FAMILIES: dict[str, Callable[[str], EnvSpec]] = {}
#: family -> names listed by `family_ids` (and `marljax envs`).
_LISTED: dict[str, tuple[str, ...]] = {}


def register(
    env_id: str,
    entry_point: Callable[..., Environment],
    kwargs: dict[str, Any] | None = None,
    params: dict[str, Any] | None = None,
    description: str = "",
    references: dict[str, float] | None = None,
) -> None:
    """Register an environment under a versioned id `family/name-vN`.

    Args:
      env_id: the id, e.g. `"matrix/prisoners_dilemma-v0"`.
      entry_point: callable building the env from static keyword arguments.
      kwargs: default static constructor arguments.
      params: default overrides of the env's `default_params()` fields for this id.
      description: one line shown by `marljax envs`.
      references: optional `{name: return}` reference values (e.g. `{"optimum (0, 0)": 11.0}`):
        per-episode returns in the unit of the `episode_return` metric (undiscounted, mean over
        agents) under the defaults of this id; plots draw them and run summaries print them.
    """
    if not _ID_RE.match(env_id):
        raise ValueError(f"env id {env_id!r} must look like 'family/name-v0'")
    if env_id in _REGISTRY:
        raise ValueError(f"env id {env_id!r} is already registered")
    refs = {str(k): float(v) for k, v in (references or {}).items()}
    _REGISTRY[env_id] = EnvSpec(
        env_id, entry_point, dict(kwargs or {}), dict(params or {}), description, refs
    )


def register_family(
    family: str, resolve: Callable[[str], EnvSpec], listed: tuple[str, ...] = ()
) -> None:
    """Resolve unregistered ids `family/<name>` on demand with `resolve(name) -> EnvSpec`.

    Args:
      family: the id prefix before the slash, e.g. `"jaxmarl"`.
      resolve: builds the spec of one name; raises `KeyError` for an unknown name (listing close
        matches) and `MissingDependencyError` when an optional package is missing.
      listed: names of the family that `marljax envs` lists (`family_ids`), e.g. SMAX's maps
        `("3m-v0", ...)`; resolving them must not import an optional package.
    """
    _FAMILIES[family] = resolve
    _LISTED[family] = tuple(listed)


def family_ids() -> list[str]:
    """The ids of on-demand families that are listed (`register_family(..., listed=...)`).

    They are not in `registered_envs` (the conformance kit runs there, and these need an
    optional package); `marljax envs` prints them after the registered ids.
    """
    _ensure_builtin()
    return [f"{family}/{name}" for family, names in _LISTED.items() for name in names]


def registered_envs() -> list[str]:
    """All registered ids, sorted."""
    _ensure_builtin()
    return sorted(_REGISTRY)


def spec(env_id: str) -> EnvSpec:
    """The `EnvSpec` of an id; unknown ids raise `KeyError` listing close matches.

    Registered ids come first; an unregistered `family/<name>` whose family has a resolver
    (`register_family`, e.g. `jaxmarl/<name>`) is resolved on demand.
    """
    _ensure_builtin()
    family, _, name = env_id.partition("/")
    if env_id not in _REGISTRY and name and family in _FAMILIES:
        return _FAMILIES[family](name)
    if env_id not in _REGISTRY:
        close = difflib.get_close_matches(env_id, list(_REGISTRY), n=5, cutoff=0.4)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise KeyError(
            f"Unknown environment id {env_id!r}.{hint} Run `marljax envs` to list all "
            f"{len(_REGISTRY)} registered ids."
        )
    return _REGISTRY[env_id]


def env_references(env_id: str, overrides: dict[str, Any] | None = None) -> dict[str, float]:
    """Reference returns of an env (optimum, equilibria, ...), `{name: per-episode return}`.

    The values are those declared at registration, in the unit of the `episode_return`
    training metric (undiscounted episode return, mean over agents). They hold for the
    registered defaults only: with any `overrides` (env options such as payoffs or the number
    of rounds) the result is empty, and so it is for an unknown id or one without references.

    Args:
      env_id: a registered id, e.g. `"matrix/climbing-v0"`.
      overrides: the env options of the run (`Experiment.env_kwargs`), if any.

    Returns:
      `{name: value}` in the order they were declared, e.g.
      `{"optimum (0, 0)": 11.0, "suboptimal equilibrium (1, 1)": 7.0}` for the climbing game.
    """
    if overrides:
        return {}
    try:
        return dict(spec(env_id).references)
    except KeyError:  # unknown ids and missing optional packages: nothing to draw
        return {}


def _static_arg_names(entry_point: Callable[..., Any]) -> list[str]:
    sig = inspect.signature(entry_point)
    return [
        n
        for n, p in sig.parameters.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and n != "self"
    ]


def make(env_id: str, debug: bool = False, **overrides: Any) -> tuple[Environment, EnvParams]:
    """Build a registered environment and its parameters.

    Args:
      env_id: a registered id, e.g. `"matrix/climbing-v0"`, or `"jaxmarl/<name>"` for a
        JaxMARL env through the adapter (its constructor keywords are static overrides;
        `max_steps` is the traced time limit, which can only shorten JaxMARL's episodes).
      debug: wrap the env in `ValidateActions`, which raises an error naming the agent when an
        action is outside the action space or masked.
      **overrides: static constructor arguments (e.g. `num_agents=3`) or fields of the env's
        params (e.g. `max_steps=50`). Params fields may be arrays.

    Returns:
      `(env, params)`.

    Raises:
      KeyError: unknown id (lists close matches).
      MissingDependencyError: the id needs an optional package (e.g. `jaxmarl/<name>` without
        JaxMARL); the message names the extra to install.
      TypeError: unknown override key (lists the valid keys and close matches).
      ValueError: `env.validate_params` rejects the params (the message names the field).
    """
    s = spec(env_id)
    static_names = _static_arg_names(s.entry_point)
    if "debug" in static_names:
        raise TypeError(f"{env_id}: an entry point may not take `debug` (reserved by make)")
    static = {k: v for k, v in overrides.items() if k in static_names}
    rest = {k: v for k, v in overrides.items() if k not in static_names}
    env = s.entry_point(**{**s.kwargs, **static})
    params = env.default_params()
    field_names = [f.name for f in dataclasses.fields(params)]
    ambiguous = sorted(set(field_names) & set(static_names))
    if ambiguous:
        raise TypeError(
            f"{env_id}: option(s) {ambiguous} are both constructor arguments and params fields; "
            "rename one so that overrides are unambiguous"
        )
    unknown = [k for k in rest if k not in field_names]
    if unknown:
        valid = sorted(set(field_names) | set(static_names))
        msgs = []
        for k in unknown:
            close = difflib.get_close_matches(k, valid, n=3, cutoff=0.5)
            msgs.append(
                f"{k!r}" + (f" (did you mean {', '.join(map(repr, close))}?)" if close else "")
            )
        raise TypeError(
            f"Unknown option(s) for {env_id}: {', '.join(msgs)}. Valid options: {', '.join(valid)}."
        )
    merged = {**s.params, **rest}
    params = params.replace(**{k: _as_leaf(params, k, v) for k, v in merged.items()})
    env.validate_params(params)
    if debug:
        from marljax.core.wrappers import ValidateActions

        env = ValidateActions(env)
    return env, params


def _as_leaf(params: EnvParams, name: str, value: Any) -> Any:
    """Convert an override to an array with the dtype and shape of the default field."""
    default = getattr(params, name)
    if isinstance(value, (int, float, bool, list, tuple)) or hasattr(value, "shape"):
        d = jnp.asarray(default)
        v = jnp.asarray(value)
        if v.shape != d.shape and not (d.ndim == 0 and v.ndim == 0):
            raise ValueError(
                f"Option {name!r} has shape {tuple(d.shape)} by default, got shape {tuple(v.shape)}."
            )
        if jnp.issubdtype(d.dtype, jnp.integer) and not jnp.issubdtype(v.dtype, jnp.integer):
            if not bool(jnp.all(v == jnp.round(v))):
                raise TypeError(f"Option {name!r} must be an integer, got {value!r}.")
        if isinstance(default, (int, float, bool)):
            return type(default)(value) if v.ndim == 0 else v
        return v.astype(d.dtype)
    raise TypeError(f"Option {name!r} must be a number or an array, got {type(value).__name__}.")


#: callables that register env families, run once before the first lookup (`add_loader`)
_LOADERS: list[Callable[[], Any]] = []


def add_loader(load: Callable[[], Any]) -> None:
    """Run `load()` (which registers envs) once, before the registry is first read.

    The package face adds the loader of the built-in families (`marljax.envs`), so this module
    imports no env: the envs depend on the registry, never the other way round. A package of
    envs of its own can add its loader the same way, or simply register on import.
    """
    _LOADERS.append(load)


def _ensure_builtin() -> None:
    """Run the pending loaders (the built-in env families register themselves)."""
    while _LOADERS:
        _LOADERS.pop(0)()
