"""Adapters at the edge: import JaxMARL and Jumanji envs into the marljax contract, export marljax
envs to PettingZoo.

    from marljax.envs.adapters import from_jaxmarl, from_jumanji, to_pettingzoo

    env, params = from_jaxmarl("MPE_simple_spread_v3")     # JaxMARL -> marljax
    env, params = from_jumanji("RobotWarehouse-v0")        # Jumanji -> marljax
    pz = to_pettingzoo("grid/lbf-v0")                       # marljax -> PettingZoo ParallelEnv

Importing this package imports neither JaxMARL, Jumanji nor PettingZoo: each name is loaded from
its submodule on first use (PEP 562), and the submodules import the optional dependency only
inside the functions that need it.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "from_jaxmarl": "jaxmarl",
    "JaxMARLEnv": "jaxmarl",
    "JaxMARLParams": "jaxmarl",
    "JaxMARLState": "jaxmarl",
    "native_episode_len": "jaxmarl",
    "register_jaxmarl_envs": "jaxmarl",
    "from_jumanji": "jumanji",
    "JumanjiEnv": "jumanji",
    "JumanjiParams": "jumanji",
    "JumanjiState": "jumanji",
    "to_pettingzoo": "pettingzoo",
    "to_gymnasium_space": "pettingzoo",
    "MarljaxParallelEnv": "pettingzoo",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module = importlib.import_module(f"{__name__}.{_EXPORTS[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
