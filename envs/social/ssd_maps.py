"""ASCII layouts of the Cleanup and Harvest sequential social dilemmas.

Legend: `@` wall, `P` spawn point, ` ` floor; Harvest: `A` apple cell (starts with an apple);
Cleanup: `B` apple cell (starts empty), `H` river cell that starts polluted (waste), `R` clean
river cell, `S` stream cell (water where waste never spawns).

The large layouts are the 5-player maps `HARVEST_MAP` and `CLEANUP_MAP` of the SSD reference
implementation (E. Vinitsky et al., `sequential_social_dilemma_games`, `social_dilemmas/maps.py`;
used by E. Hughes et al., NeurIPS 2018, and N. Jaques et al., ICML 2019). That repository has
no small layouts; the small ones here are ours, for fast tests and small-scale experiments.
"""

from __future__ import annotations

#: 16 x 38, 20 spawn points, 155 apple cells (SSD reference `HARVEST_MAP`).
HARVEST_LARGE = (
    "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@",
    "@ P   P      A    P AAAAA    P  A P  @",
    "@  P     A P AA    P    AAA    A  A  @",
    "@     A AAA  AAA    A    A AA AAAA   @",
    "@ A  AAA A    A  A AAA  A  A   A A   @",
    "@AAA  A A    A  AAA A  AAA        A P@",
    "@ A A  AAA  AAA  A A    A AA   AA AA @",
    "@  A A  AAA    A A  AAA    AAA  A    @",
    "@   AAA  A      AAA  A    AAAA       @",
    "@ P  A       A  A AAA    A  A      P @",
    "@A  AAA  A  A  AAA A    AAAA     P   @",
    "@    A A   AAA  A A      A AA   A  P @",
    "@     AAA   A A  AAA      AA   AAA P @",
    "@ A    A     AAA  A  P          A    @",
    "@       P     A         P  P P     P @",
    "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@",
)

#: 7 x 12, 4 spawn points, 15 apple cells in three patches (ours).
HARVEST_SMALL = (
    "@@@@@@@@@@@@",
    "@P  A     P@",
    "@  AAA  A  @",
    "@   A  AAA @",
    "@ A     A  @",
    "@AAA A P  P@",
    "@@@@@@@@@@@@",
)

#: 25 x 18, 10 spawn points, 103 apple cells, 119 river cells of which 56 start polluted
#: (SSD reference `CLEANUP_MAP`).
CLEANUP_LARGE = (
    "@@@@@@@@@@@@@@@@@@",
    "@RRRRRR     BBBBB@",
    "@HHHHHH      BBBB@",
    "@RRRRRR     BBBBB@",
    "@RRRRR  P    BBBB@",
    "@RRRRR    P BBBBB@",
    "@HHHHH       BBBB@",
    "@RRRRR      BBBBB@",
    "@HHHHHHSSSSSSBBBB@",
    "@HHHHHHSSSSSSBBBB@",
    "@RRRRR   P P BBBB@",
    "@HHHHH   P  BBBBB@",
    "@RRRRRR    P BBBB@",
    "@HHHHHH P   BBBBB@",
    "@RRRRR       BBBB@",
    "@HHHH    P  BBBBB@",
    "@RRRRR       BBBB@",
    "@HHHHH  P P BBBBB@",
    "@RRRRR       BBBB@",
    "@HHHH       BBBBB@",
    "@RRRRR       BBBB@",
    "@HHHHH      BBBBB@",
    "@RRRRR       BBBB@",
    "@HHHH       BBBBB@",
    "@@@@@@@@@@@@@@@@@@",
)

#: 7 x 10, 3 spawn points, 10 apple cells, 8 river cells of which 2 start polluted (ours).
CLEANUP_SMALL = (
    "@@@@@@@@@@",
    "@HR P  BB@",
    "@RR    BB@",
    "@SS  P BB@",
    "@RH    BB@",
    "@RR P  BB@",
    "@@@@@@@@@@",
)

#: 10 x 10 (8 x 8 inside the walls), 4 spawn points, 20 apple cells (ours). The size of
#: JaxMARL's `storm_2p` grid (8 x 8), for workload-matched benchmarks and tiny experiments.
HARVEST_TINY = (
    "@@@@@@@@@@",
    "@P  A   P@",
    "@  AAA   @",
    "@   A  A @",
    "@ A   AAA@",
    "@AAA   A @",
    "@ A  A   @",
    "@   AAA  @",
    "@P   A  P@",
    "@@@@@@@@@@",
)

#: 10 x 10 (8 x 8 inside the walls), 4 spawn points, 16 apple cells, 18 river cells of which 4
#: start polluted (ours); the size of `storm_2p`'s grid, like `HARVEST_TINY`.
CLEANUP_TINY = (
    "@@@@@@@@@@",
    "@HRR P BB@",
    "@RRR   BB@",
    "@SSS   BB@",
    "@RHR P BB@",
    "@RRR   BB@",
    "@HRR P BB@",
    "@SSS   BB@",
    "@RRH P BB@",
    "@@@@@@@@@@",
)

HARVEST_LAYOUTS = {"large": HARVEST_LARGE, "small": HARVEST_SMALL, "tiny": HARVEST_TINY}
CLEANUP_LAYOUTS = {"large": CLEANUP_LARGE, "small": CLEANUP_SMALL, "tiny": CLEANUP_TINY}
