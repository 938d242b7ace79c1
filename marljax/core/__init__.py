"""marljax.core: the environment contract (types, spaces, registry, wrappers)."""

from marljax.core import spaces
from marljax.core.registry import (
    EnvSpec,
    MissingDependencyError,
    env_references,
    make,
    register,
    register_family,
    registered_envs,
    spec,
)
from marljax.core.types import Environment, EnvParams, TimeStep, default_global_state
from marljax.core.wrappers import (
    AutoReset,
    BatchedAutoReset,
    EpisodeStats,
    InvalidActionError,
    ObsHistory,
    ValidateActions,
    Wrapper,
    wrap_for_training,
)

__all__ = [
    "AutoReset",
    "BatchedAutoReset",
    "EnvParams",
    "EnvSpec",
    "Environment",
    "EpisodeStats",
    "InvalidActionError",
    "MissingDependencyError",
    "ObsHistory",
    "TimeStep",
    "ValidateActions",
    "Wrapper",
    "default_global_state",
    "env_references",
    "make",
    "register",
    "register_family",
    "registered_envs",
    "spaces",
    "spec",
    "wrap_for_training",
]
