"""marljax: JAX-native functional multi-agent reinforcement learning.

Quick use::

    import marljax
    env, params = marljax.make("matrix/climbing-v0")

The package is in layers, each importing only those below it: `core` (env contract, spaces,
registry, config) and `nn` (losses, networks, distributions, mixers, replay); `envs`; `agents`;
`training` (rollout, train, the engine, checkpoints); `evaluation`; `population`; `shell`
(experiments, sweeps, run directories, policies, the CLI); `benchmarks`. This face is the top.
"""

from marljax import _moved
from marljax.core import make, registered_envs, spaces
from marljax.core.registry import add_loader
from marljax.core.types import Environment, EnvParams, TimeStep

__version__ = "0.1.0"


def _load_builtin_envs() -> None:
    import marljax.envs  # noqa: F401  (the built-in families register themselves)


add_loader(_load_builtin_envs)
_moved.install()


def __getattr__(name: str):
    if name == "load_policy":  # imported on first use (it pulls in the agents)
        from marljax.shell.policy import load_policy

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
