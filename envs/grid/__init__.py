"""Gridworlds: Level-Based Foraging, predator-prey and lifelong multi-agent pathfinding.

Importing this package registers the `grid/*` ids; build them with `marljax.make`::

    env, params = marljax.make("grid/lbf-8x8-2p-2f-coop-v0")
    env, params = marljax.make("grid/lbf-v0", grid_size=10, num_agents=3, num_food=3, sight=2)
    env, params = marljax.make("grid/predator_prey-v0", punishment=-1.0)

Static options of `grid/lbf*` are the arguments of `make_lbf` (`grid_size`, `num_agents`,
`num_food`, `sight`, `grid_observation`); the others (`max_steps`, level bounds, `force_coop`,
`normalize_reward`, `penalty`, and `obs_sight`, the traced view radius that defaults to the static
`sight` and can be vmapped over) are fields of `LBFParams`. LBF ids follow the `lbforaging` v3 names
(`Foraging-8x8-2p-2f-coop-v3` is `grid/lbf-8x8-2p-2f-coop-v0` and `Foraging-2s-8x8-2p-2f-coop-v3`
is `grid/lbf-8x8-2p-2f-2s-coop-v0`; `grid/lbf-grid-*` use the grid observation), with `max_steps=50` as there. Static options of `grid/predator_prey*`
are those of `make_predator_prey`; the rest are fields of `PredatorPreyParams`. Pathfinding ids
(`grid/lmapf-v0`, `grid/lmapf_maze-v0`, `grid/mapf-v0`) take the static options of `Pathfinding`,
e.g. `collision="priority"` for POGEMA's default collision rule (ours is `"soft"`), and the params
`max_steps` and `density`.
"""

from __future__ import annotations

from marljax.core.registry import register
from marljax.envs.grid import pathfinding  # noqa: F401  (registers the pathfinding ids)
from marljax.envs.grid.lbf import (
    LBFParams,
    LBFState,
    LevelBasedForaging,
    make_lbf,
    max_food_packing,
)
from marljax.envs.grid.predator_prey import (
    PredatorPrey,
    PredatorPreyParams,
    PredatorPreyState,
    make_predator_prey,
)

#: (size, agents, food, coop, sight) of the registered LBF tasks: the default, and the tasks of
#: Papoudakis et al. 2021 (Table 2) on 8x8 and 10x10 plus one 15x15 task.
_LBF_TASKS = [
    (8, 2, 2, True, None),
    (8, 2, 2, True, 2),
    (10, 3, 3, False, None),
    (10, 3, 3, False, 2),
    (15, 4, 3, False, None),
]


def _lbf_name(size: int, agents: int, food: int, coop: bool, sight: int | None) -> str:
    return (
        f"{size}x{size}-{agents}p-{food}f"
        + (f"-{sight}s" if sight else "")
        + ("-coop" if coop else "")
    )


def _lbforaging_id(size: int, agents: int, food: int, coop: bool, sight: int | None) -> str:
    prefix = "Foraging-2s" if sight == 2 else "Foraging"
    return f"{prefix}-{size}x{size}-{agents}p-{food}f" + ("-coop" if coop else "") + "-v3"


def _register_all() -> None:
    register(
        "grid/lbf-v0",
        make_lbf,
        description="Level-Based Foraging 8x8, 2 agents, 2 food, full sight (lbforaging rules)",
    )
    for task in _LBF_TASKS:
        size, agents, food, coop, sight = task
        name = _lbf_name(size, agents, food, coop, sight)
        kwargs = {"grid_size": size, "num_agents": agents, "num_food": food, "sight": sight}
        params = {"force_coop": True} if coop else {}
        register(
            f"grid/lbf-{name}-v0",
            make_lbf,
            kwargs=kwargs,
            params=params,
            description=f"Level-Based Foraging {name} (lbforaging {_lbforaging_id(*task)})",
        )
    register(
        "grid/lbf-grid-8x8-2p-2f-coop-v0",
        make_lbf,
        kwargs={"grid_size": 8, "num_agents": 2, "num_food": 2, "grid_observation": True},
        params={"force_coop": True},
        description="Level-Based Foraging 8x8-2p-2f-coop, grid observation (Foraging-grid-*-v3)",
    )
    register(
        "grid/predator_prey-v0",
        make_predator_prey,
        description="Predator-prey 10x10, 8 predators, 8 prey, 2 to catch (Böhmer et al. 2020)",
    )
    register(
        "grid/predator_prey_punish-v0",
        make_predator_prey,
        params={"punishment": -1.0},
        description="Predator-prey with punishment p=-1 for lone catches (relative overgeneralisation)",
    )


_register_all()

__all__ = [
    "LBFParams",
    "LBFState",
    "LevelBasedForaging",
    "PredatorPrey",
    "PredatorPreyParams",
    "PredatorPreyState",
    "make_lbf",
    "make_predator_prey",
    "max_food_packing",
]
