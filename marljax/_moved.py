"""Old import paths of modules that moved into the layer folders (0.1 -> the layered package).

`import marljax.train` and `from marljax.experiment import Experiment` keep working: the old
name is the new module itself (so patching it patches the new one), with a `DeprecationWarning`
that names the new path. `marljax.train` maps to the `marljax.training` package, which also
holds `sweep` (now in `marljax.training.execute`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: old module -> new module
MOVED = {
    "marljax.config": "marljax.core.config",
    "marljax.losses": "marljax.nn.losses",
    "marljax.networks": "marljax.nn.networks",
    "marljax.distributions": "marljax.nn.distributions",
    "marljax.mixers": "marljax.nn.mixers",
    "marljax.replay": "marljax.nn.replay",
    "marljax.rollout": "marljax.training.rollout",
    "marljax.train": "marljax.training",
    "marljax.execute": "marljax.training.execute",
    "marljax.checkpoint": "marljax.training.checkpoint",
    "marljax.experiment": "marljax.shell.experiment",
    "marljax.sweep": "marljax.shell.sweep",
    "marljax.cli": "marljax.shell.cli",
    "marljax.results": "marljax.evaluation.results",
    "marljax.rundir": "marljax.shell.rundir",
    "marljax.loggers": "marljax.shell.loggers",
    "marljax.policy": "marljax.shell.policy",
    "marljax.shell.results": "marljax.evaluation.results",
    "marljax.shell.space": "marljax.training.space",
    # each algorithm's factory module is `agent.py` (one name in every algorithm folder)
    **{
        f"marljax.agents.{pkg}.learner": f"marljax.agents.{pkg}.agent"
        for pkg in ("qlearning", "qtran", "shaq", "transf_qmix", "sac", "maddpg", "facmac")
    },
}


class _Alias(importlib.abc.Loader):
    def __init__(self, new: str):
        self.new = new

    def create_module(self, spec):
        warnings.warn(
            f"{spec.name} moved to {self.new}; import it from there (the old path will go).",
            DeprecationWarning,
            stacklevel=3,
        )
        return importlib.import_module(self.new)

    def exec_module(self, module) -> None:
        pass  # the new module is already executed


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in MOVED:
            return importlib.util.spec_from_loader(name, _Alias(MOVED[name]))
        return None


def install() -> None:
    """Put the old names on the import path (once)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
