"""Mean-field swarms: Vicsek flocking, Kuramoto synchronisation and aggregation on a 2D torus.

Collective-behaviour tasks adapted from K. Cui, S. Hauck, C. Fabian and H. Koeppl, "Learning
Decentralized Partially Observable Mean Field Control for Artificial Collective Behavior", ICLR
2024 (Dec-POMFC), built on T. Vicsek et al., Phys. Rev. Lett. 75, 1995 (flocking) and
Y. Kuramoto, 1975 / 1984 (coupled oscillators). Importing this package registers them::

    env, params = marljax.make("swarm/vicsek-v0")                        # 16 agents
    env, params = marljax.make("swarm/vicsek-v0", num_agents=10_000)     # spatial hash kicks in
    env, params = marljax.make("swarm/kuramoto-v0", coupling=0.0, omega_std=1.0)
    env, params = marljax.make("swarm/aggregation-v0", mean_field="kernel")

Ids: `swarm/vicsek-v0`, `swarm/kuramoto-v0`, `swarm/aggregation-v0`, with discrete actions;
`make(..., continuous=True)` gives continuous ones (a `Box(-1, 1)` turn, offset or move). The
number of agents `num_agents` (default 16) and the other shape-determining choices (action counts, observation bins, neighbour-search grid and capacity,
mean-field representation) are static constructor arguments; everything else (torus `size`,
`radius`, speeds, noise, frequency distribution, coupling, reward weights, `max_steps` = 200) is
a traced params field. The default torus side grows with the swarm, `size = sqrt(A / density)`,
so the density and hence the work per agent stay the same as `A` grows.

Large swarms: with more than `brute_force_threshold` (256) agents, neighbours within `radius` are
found with a spatial hash (`O(A)` memory and work per step instead of `O(A^2)`), see
`marljax.envs.swarm.neighbours`; it keeps at most `cell_capacity` agents per cell and reports
overflows in `extras["swarm/neighbour_overflow"]` (`check_overflow=True` raises instead).
The default cap (16) suits a uniform swarm; a policy that flocks or aggregates packs agents
together (a Vicsek policy trained with `marljax.agents.meanfield` overflowed it within 50 steps
at 10,000 agents), so evaluate such policies with a larger `cell_capacity` (32 to 64) and check
that `swarm/neighbour_overflow` stays 0.
The global state for centralised critics is the swarm's mean field (`meanfield.py`): a histogram
(`mean_field="histogram"`, default) or kernel embedding (`"kernel"`) over a fixed grid.
Order parameters are reported per episode as `extras["swarm/<name>"]`.
"""

from __future__ import annotations

from marljax.core.registry import register
from marljax.envs.swarm.aggregation import (
    Aggregation,
    AggregationParams,
    AggregationState,
)
from marljax.envs.swarm.base import SwarmEnv, SwarmParams, SwarmState, polarisation
from marljax.envs.swarm.kuramoto import Kuramoto, KuramotoParams, KuramotoState
from marljax.envs.swarm.meanfield import (
    MeanField,
    circular_histogram,
    circular_kernel_embedding,
    torus_histogram,
    torus_kernel_embedding,
)
from marljax.envs.swarm.neighbours import (
    Neighbours,
    NeighbourSearch,
    assert_no_overflow,
    brute_force_neighbours,
    hashed_neighbours,
)
from marljax.envs.swarm.vicsek import Vicsek, VicsekParams, VicsekState


def _register_all() -> None:
    tasks = (
        ("vicsek", Vicsek, "Vicsek flocking, reward = polarisation (Vicsek et al. 1995)"),
        ("kuramoto", Kuramoto, "Kuramoto oscillators, reward = synchronisation (1975)"),
        ("aggregation", Aggregation, "aggregation on a torus with collision penalty"),
    )
    for name, entry, what in tasks:
        register(
            f"swarm/{name}-v0",
            entry,
            description=f"{what}; 16 agents, discrete actions (Cui et al. 2024, Dec-POMFC)",
        )


_register_all()

__all__ = [
    "Aggregation",
    "AggregationParams",
    "AggregationState",
    "Kuramoto",
    "KuramotoParams",
    "KuramotoState",
    "MeanField",
    "NeighbourSearch",
    "Neighbours",
    "SwarmEnv",
    "SwarmParams",
    "SwarmState",
    "Vicsek",
    "VicsekParams",
    "VicsekState",
    "assert_no_overflow",
    "brute_force_neighbours",
    "circular_histogram",
    "circular_kernel_embedding",
    "hashed_neighbours",
    "polarisation",
    "torus_histogram",
    "torus_kernel_embedding",
]
