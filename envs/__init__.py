"""Built-in environment families, installed as `marljax.envs`. Importing registers them.

It also lets `marljax.make` resolve `jaxmarl/<name>` ids (JaxMARL envs through
`marljax.envs.adapters.jaxmarl`) and `smax/<map>-v0` ids (SMAX maps with the heuristic enemy,
`marljax.envs.adapters.smax`); JaxMARL itself is imported only when such an id is used. Likewise
`jumanji/<JumanjiId>` ids and the benchmark ids `rware/*`, `connector/*` and `cleaner/*`
(`marljax.envs.adapters.jumanji`) import Jumanji only when one is built.
"""

from marljax.core import registry as _registry
from marljax.envs import grid, matrix, particle, social, swarm  # noqa: F401
from marljax.envs.adapters import jumanji as _jumanji
from marljax.envs.adapters.smax import SMAX_MAPS as _SMAX_MAPS


def _jaxmarl_spec(name: str) -> _registry.EnvSpec:
    from marljax.envs.adapters.jaxmarl import jaxmarl_spec

    return jaxmarl_spec(name)


_registry.register_family("jaxmarl", _jaxmarl_spec)


def _smax_spec(name: str) -> _registry.EnvSpec:
    from marljax.envs.adapters.smax import smax_spec

    return smax_spec(name)


_registry.register_family("smax", _smax_spec, listed=tuple(f"{m}-v0" for m in _SMAX_MAPS))


def _jumanji_spec(name: str) -> _registry.EnvSpec:
    return _jumanji.jumanji_spec(name)


_registry.register_family("jumanji", _jumanji_spec)
_jumanji.register_jumanji_tasks()
