"""Built-in environment families, installed as `marljax.envs`. Importing registers them.

It also lets `marljax.make` resolve `jaxmarl/<name>` ids (JaxMARL envs through
`marljax.envs.adapters.jaxmarl`); JaxMARL itself is imported only when such an id is used.
"""

from marljax.core import registry as _registry
from marljax.envs import grid, matrix, particle, social, swarm  # noqa: F401


def _jaxmarl_spec(name: str) -> _registry.EnvSpec:
    from marljax.envs.adapters.jaxmarl import jaxmarl_spec

    return jaxmarl_spec(name)


_registry.register_family("jaxmarl", _jaxmarl_spec)
