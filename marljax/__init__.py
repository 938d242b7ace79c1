"""marljax: JAX-native functional multi-agent reinforcement learning.

Quick use::

    import marljax
    env, params = marljax.make("matrix/climbing-v0")
"""

from marljax.core import make, registered_envs, spaces
from marljax.core.types import Environment, EnvParams, TimeStep

__version__ = "0.1.0"

__all__ = [
    "Environment",
    "EnvParams",
    "TimeStep",
    "make",
    "registered_envs",
    "spaces",
    "__version__",
]
