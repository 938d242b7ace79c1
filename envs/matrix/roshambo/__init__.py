"""Bots of the International RoShamBo Programming Competitions as pure, jittable JAX strategies.

Lanctot et al. (2023) evaluate agents in repeated Rock-Paper-Scissors against the 43 bots of the
1999 competition (D. Billings) plus Greenberg (A. Nagorko, winner in 2000), as shipped with
OpenSpiel, in matches of 1000 throws. `COMPETITION_NAMES` lists those 43, under the names of
the original C functions (OpenSpiel's names). `BOTS` holds them all; each follows
its original's logic (the competition's public source, `rsb-ts1.c`), reads the match history in
the original's layout and draws its randomness like the original's `random()` calls, so that with
the same draws it makes the same moves (checked throw by throw in `tests/test_rps_parity.py`
against recordings of the original programs, including matches against an opponent that beats
every move, so that the bots' losing branches run too).

======================  ====================  ====================  ==========  ==================
name                    played as             author                fidelity    note
======================  ====================  ====================  ==========  ==================
randbot                 Random (Optimal)      Darse Billings        faithful
rockbot                 Good Ole Rock         Darse Billings        faithful
r226bot                 R-P-S 20-20-60        Darse Billings        faithful
rotatebot               Rotate R-P-S          Darse Billings        faithful
copybot                 Beat The Last Move    Darse Billings        faithful
switchbot               Always Switchin'      Darse Billings        faithful
freqbot2                Beat Frequent Pick    Darse Billings        faithful
pibot                   Pi                    Darse Billings        faithful
switchalot              Switch A Lot          Darse Billings        faithful
flatbot3                Flat                  Darse Billings        faithful
antiflatbot             Anti-Flat             Darse Billings        faithful
foxtrotbot              Foxtrot               Darse Billings        faithful
debruijn81              De Bruijn             Darse Billings        faithful    (1)
textbot                 Text                  Darse Billings        faithful
antirotnbot             Anti-rotn             Darse Billings        faithful
driftbot                Copy-drift            Darse Billings        faithful
addshiftbot3            Add-react             Darse Billings        faithful
adddriftbot2            Add-drift             Darse Billings        faithful
iocainebot              Iocaine Powder        Dan Egnor             faithful    (2)
halbot                  MegaHAL               Jason Hutchens        faithful    (12)
russrocker4             RussRocker4           Russ Williams         faithful
biopic                  Biopic                Jonathan Schaeffer    faithful    (2)
boom                    Boom                  Jack van Rijswijk     faithful    (10)
shofar                  Shofar                Rudi Cilibrasi        approximate (11)
mod1bot                 Simple Modeller       Don Beal              approximate (3)
predbot                 Simple Predictor      Don Beal              faithful    (3)
robertot                Robertot              Andreas Junghanns     faithful
markov5                 Majikthise            Markian Hlynka        faithful    (4)
markovbails             Vroomfondel           Markian Hlynka        faithful    (4)
greenberg               Greenberg             Andrzej Nagorko       faithful    (5)
phasenbott              Phasenbott            Jakob Mandelson       faithful    (2)
actr_lag2_decay         ACT-R Lag2            D. Bothell et al.     faithful    (6)
sweetrock               Sweet Rocky           Lourdes Pena          faithful
piedra                  Piedra                Lourdes Pena          faithful
mixed_strategy          Mixed Strategy        Thad Frogley          faithful    (4)
multibot                Multi-strategy        Mark James            faithful    (7)
peterbot                Peterbot              Peter Baylie          faithful
inocencio               Inocencio             Rafael Morales        approximate (8)
granite                 Granite               Aaron Davidson        faithful
marble                  Marble                Aaron Davidson        faithful
zq_move                 ZQ Bot                Neil Burch            faithful    (9)
suncrazybot             Knucklehead           Sunir Shah            faithful
sunnervebot             Bugbrain              Sunir Shah            faithful    (4)
======================  ====================  ====================  ==========  ==================

(1) The original's table: several different de Bruijn strings B(3, 4) of length 81 concatenated
    (1000 moves), not one string repeated.
(2) Same decisions, different layout (incremental match lengths, the original's early-stopping
    scans in closed form, ring buffers of cumulative scores): O(L) vector work per throw. The
    originals' quirks are kept (see `iocaine`, `phasenbott`).
(3) The originals model in double precision; the ports use float32 (JAX's default). predbot
    made the same moves as the original in every recorded match; mod1bot's exponentially faded
    scores (x 0.98 per throw) meet near-ties where float32 and double round differently, so its
    moves can part from the original's from throw 64 on (the earliest departure seen in an
    independent check; in the recorded parity matches, throw 144 in 2 of 10). The parity test
    compares its first 100 throws of the recorded matches, and its move frequencies.
(4) Draws compared in float32 against the model's probabilities (the original compares in
    double): a draw within float32 rounding of a boundary (about 1e-7 of draws) can differ.
(5) Its gear predictor writes out of the bounds of a 3-entry array (undefined behaviour in C);
    the port drops those writes, as the compiled original does (see `greenberg`).
(6) Logistic noise and power-law activations in float32 (the original: double). The original
    redraws a zero `random()`; the port reads a zero draw (probability 2**-31) as 1.
(7) Its "random" strategy is a fixed MD5-based sequence, recomputed here from the algorithm.
(8) Its last resort adds into uninitialised local arrays (undefined behaviour: the values are
    whatever the C stack held); the port starts them at 0. Its other rules are exact, so moves
    agree until the first throw that falls through to that branch.
(9) Its trie of joint-move sequences is evaluated from suffix matches (same counts). It redraws
    `random()` values above 2**31 - 3 (probability 1e-9), which the port does not.
(10) Single-precision arithmetic as in the original (a few bail-out terms it rounds through
    double may differ in the last bit); its out-of-bounds table reads on the first 27 throws
    are reproduced from the table's flat layout (see `boom`).
(11) Scores and weights in float32 (the original: double), so a strategy draw within rounding
    of a boundary can pick another strategy: all 10 recorded parity matches agree for 1000
    throws, but 2 of 12 matches of an independent check departed (at throws 15 and 349). The
    original initialises once per process and carries its strategies from match to match; the
    port starts each match fresh. Its first throw reads up to 961 draws (`num_random`).

(12) Its trie of contexts (grown with `malloc`, counted over a sliding window of 200 throws) is
    evaluated from suffix matches (same counts), and its `qsort` of the contexts is replaced by
    taking the best-ranked one (the comparator's order is total, so the result is the same);
    see `megahal`.

All 43 are ported; `MISSING` is empty (a competition bot not yet ported would raise
`NotImplementedError` by name).

References:
  M. Lanctot et al., "Population-based Evaluation in Repeated Rock-Paper-Scissors as a Benchmark
  for Multiagent Reinforcement Learning", TMLR 2023 (arXiv:2303.03196).
  D. Billings, "The First International RoShamBo Programming Competition", ICGA Journal 23(1),
  2000; the test-suite program and all 1999 entries: https://webdocs.cs.ualberta.ca/~darse/rsbpc.html
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from marljax.envs.matrix.roshambo.base import (
    MAXRANDOM,
    NUM_RANDOM,
    PAPER,
    ROCK,
    SCISSORS,
    Bot,
    draw_random,
    empty_history,
    record,
)
from marljax.envs.matrix.roshambo.dummies import dummy_bots
from marljax.envs.matrix.roshambo.entrants import entrant_bots
from marljax.envs.matrix.roshambo.play import play_match, play_sequence

#: The 43 bots of Lanctot et al.'s population (OpenSpiel's names), in the 1999 table's order
#: (dummy bots, then entrants; Greenberg, from 2000, last).
COMPETITION_NAMES: tuple[str, ...] = (
    "randbot",
    "rockbot",
    "r226bot",
    "rotatebot",
    "copybot",
    "switchbot",
    "freqbot2",
    "pibot",
    "switchalot",
    "flatbot3",
    "antiflatbot",
    "foxtrotbot",
    "debruijn81",
    "textbot",
    "antirotnbot",
    "driftbot",
    "addshiftbot3",
    "adddriftbot2",
    "iocainebot",
    "phasenbott",
    "halbot",
    "russrocker4",
    "biopic",
    "mod1bot",
    "predbot",
    "robertot",
    "boom",
    "shofar",
    "actr_lag2_decay",
    "markov5",
    "markovbails",
    "granite",
    "marble",
    "zq_move",
    "sweetrock",
    "piedra",
    "mixed_strategy",
    "multibot",
    "inocencio",
    "peterbot",
    "sunnervebot",
    "suncrazybot",
    "greenberg",
)

#: Ported competition bots by name, in `COMPETITION_NAMES` order.
BOTS: dict[str, Bot] = {
    b.name: b
    for b in sorted(dummy_bots() + entrant_bots(), key=lambda b: COMPETITION_NAMES.index(b.name))
}

#: Competition bots not ported yet.
MISSING: tuple[str, ...] = tuple(n for n in COMPETITION_NAMES if n not in BOTS)


def get_bot(name: str, extra: dict[str, Bot] | None = None) -> Bot:
    """A bot by name: a ported competition bot, or one of `extra`.

    Raises:
      NotImplementedError: a competition bot that is not ported yet.
      KeyError: an unknown name (the message lists close matches).
    """
    pool = {**BOTS, **(extra or {})}
    if name in pool:
        return pool[name]
    if name in MISSING:
        raise NotImplementedError(
            f"RoShamBo bot {name!r} is a competition entry that is not ported to JAX yet. "
            f"Ported: {', '.join(pool)}."
        )
    close = difflib.get_close_matches(name, list(pool) + list(MISSING), n=3, cutoff=0.5)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise KeyError(f"Unknown RoShamBo bot {name!r}.{hint} Known: {', '.join(pool)}.")


def get_bots(names: Sequence[str], extra: dict[str, Bot] | None = None) -> tuple[Bot, ...]:
    """Bots by name; an empty population is refused."""
    if isinstance(names, str):
        names = (names,)
    if len(names) == 0:
        raise ValueError("a bot population needs at least one bot, got none")
    return tuple(get_bot(n, extra) for n in names)


__all__ = [
    "BOTS",
    "COMPETITION_NAMES",
    "MAXRANDOM",
    "MISSING",
    "NUM_RANDOM",
    "PAPER",
    "ROCK",
    "SCISSORS",
    "Bot",
    "draw_random",
    "empty_history",
    "get_bot",
    "get_bots",
    "play_match",
    "play_sequence",
    "record",
]
