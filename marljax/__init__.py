"""marljax: JAX-native functional multi-agent reinforcement learning.

Quick use::

    import marljax
    env, params = marljax.make("matrix/climbing-v0")
"""

from marljax.core import make, registered_envs, spaces
from marljax.core.types import Environment, EnvParams, TimeStep

__version__ = "0.1.0"


def __getattr__(name: str):
    if name == "load_policy":  # imported on first use (it pulls in the agents)
        from marljax.policy import load_policy

        return load_policy
    raise AttributeError(f"module 'marljax' has no attribute {name!r}")


__all__ = [
    "Environment",
    "EnvParams",
    "TimeStep",
    "load_policy",
    "make",
    "registered_envs",
    "spaces",
    "__version__",
]
