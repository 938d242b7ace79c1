"""The 25 entrants of the RoShamBo competitions (24 from 1999, Greenberg from 2000) in JAX."""

from __future__ import annotations

from marljax.envs.matrix.roshambo import iocaine
from marljax.envs.matrix.roshambo.base import Bot


def entrant_bots() -> list[Bot]:
    return [
        Bot("iocainebot", iocaine.init, iocaine.step, "Iocaine Powder", "Dan Egnor"),
    ]
