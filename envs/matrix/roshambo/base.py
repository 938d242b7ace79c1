"""The bot contract of the RoShamBo population: pure, jittable strategies with pytree state.

A bot is a `Bot`: `init(trials) -> state` and `step(state, my, opp, rand) -> (move, state)`.
`step` is called once per throw, before the throw, with the whole match history in the layout of
the 1999 competition's harness (`rsb-ts1.c`), so that ports read like their originals:

- `my`, `opp`: `[L + 1]` int32 histories; element 0 is the number of throws played so far `n`,
  element `i` (1 <= i <= n) the move of throw `i`; elements past `n` are 0. `L = trials` is the
  match length (static).
- `rand`: `[K]` uint32 fresh draws (`K = bot.num_random`, at least `NUM_RANDOM`), each uniform
  on `[0, 2**31)` like C's `random()`.
  A bot uses them in the order its original calls `random()` within the throw (the i-th call of
  the throw reads `rand[i]`), so with the same draws the port and the original make the same
  choices. The driver draws them from the JAX key, so bots are deterministic given the key.
- `move`: `[]` int32 in {0 rock, 1 paper, 2 scissors}.

Every bot's state is its own pytree (the C `static` variables), rebuilt by `init` for every match.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

Array = jax.Array

ROCK, PAPER, SCISSORS = 0, 1, 2
#: random draws handed to a bot per throw by default; bots that need more in some throw (a
#: random initialisation on the first throw) say so in `Bot.num_random`.
NUM_RANDOM = 8
#: C's `maxrandom`: `random()` is uniform on `[0, 2**31)`.
MAXRANDOM = 2**31


class Bot(NamedTuple):
    """One scripted RPS strategy.

    Attributes:
      name: registry name (the competition's function name for the 43 entries).
      init: `trials -> state`, the state at the start of a match of `trials` throws (static int).
      step: `(state, my [L+1], opp [L+1], rand [NUM_RANDOM] uint32) -> ([] int32 move, state)`.
      title: the name it played under (e.g. "Iocaine Powder").
      author: its author(s).
      fidelity: "faithful" (same decisions as the original given the same random draws) or
        "approximate" (see `note`).
      note: what differs from the original, and why (empty when faithful).
      competition: True for the 43 bots of the population; False for the extra heuristics.
      num_random: draws `K` its `step` reads per throw (the drivers hand at least this many).
    """

    name: str
    init: Callable[[int], Any]
    step: Callable[[Any, Array, Array, Array], tuple[Array, Any]]
    title: str
    author: str
    fidelity: str = "faithful"
    note: str = ""
    competition: bool = True
    num_random: int = NUM_RANDOM


# ----------------------------------------------------------------------------- random helpers


def threshold(prob: float) -> int:
    """The integer `t` with `r / 2**31 < prob  <=>  r < t` for C's `random()` draws `r`.

    `r / 2**31` is exact in double precision, so the comparison with a double `prob` is the
    integer comparison `r < ceil(prob * 2**31)` (the product is exact too).
    """
    return max(0, min(MAXRANDOM, math.ceil(prob * MAXRANDOM)))


def rand_mod3(r: Array) -> Array:
    """`random() % 3`."""
    return (r % 3).astype(jnp.int32)


def flip_biased_coin(r: Array, prob: float) -> Array:
    """The harness's `flip_biased_coin(prob)`: `[]` bool, True with probability `prob`."""
    return r < jnp.uint32(threshold(prob))


def biased_roshambo(r: Array, prob_rock: float, prob_paper: float) -> Array:
    """The harness's `biased_roshambo(prob_rock, prob_paper)` with static probabilities."""
    t_rock = jnp.uint32(threshold(prob_rock))
    t_paper = jnp.uint32(threshold(prob_rock + prob_paper))  # the sum as C forms it, in double
    return jnp.where(r < t_rock, ROCK, jnp.where(r < t_paper, PAPER, SCISSORS)).astype(jnp.int32)


def biased_roshambo_traced(r: Array, prob_rock: Array, prob_paper: Array) -> Array:
    """`biased_roshambo` with traced probabilities, compared in float32.

    Ties with the double-precision original differ only when a draw falls within float32
    rounding of a probability boundary (about 1e-7 of draws).
    """
    u = r.astype(jnp.float32) / jnp.float32(MAXRANDOM)
    return jnp.where(
        u < prob_rock, ROCK, jnp.where(u < prob_rock + prob_paper, PAPER, SCISSORS)
    ).astype(jnp.int32)


def unit(r: Array) -> Array:
    """`random() / maxrandom` in float32."""
    return r.astype(jnp.float32) / jnp.float32(MAXRANDOM)


def draw_random(key: Array, num: int = NUM_RANDOM) -> Array:
    """`[num]` uint32 draws uniform on `[0, 2**31)` from a key."""
    return jax.random.bits(key, (num,), jnp.uint32) >> 1


def num_random(bots) -> int:
    """Draws per throw that serve every bot of `bots`."""
    return max([NUM_RANDOM, *(b.num_random for b in bots)])


# ----------------------------------------------------------------------------- history helpers


def last(hist: Array) -> Array:
    """`hist[hist[0]]`: the last move (0 before the first throw, as in the C harness)."""
    return hist[hist[0]]


def at(hist: Array, i: Array) -> Array:
    """`hist[i]` with `i` clipped into the array (the C code never reads out of bounds here)."""
    return hist[jnp.clip(i, 0, hist.shape[0] - 1)]


def i32(x: Any) -> Array:
    return jnp.asarray(x, jnp.int32)


def record(hist: Array, move: Array) -> Array:
    """The history with `move` appended (element 0 incremented)."""
    n = hist[0] + 1
    return hist.at[jnp.minimum(n, hist.shape[0] - 1)].set(move).at[0].set(n)


def count_matmul(mask: Array, onehot: Array) -> Array:
    """`[l, n] x [n, m] -> [l, m]` int32 counts, `mask @ onehot` for 0/1 (or small int) entries.

    Computed in float32 (exact while counts stay below 2**24): XLA's CPU backend has no fast
    integer matrix product, and the float one is several times faster here.
    """
    out = jnp.matmul(mask.astype(jnp.float32), onehot.astype(jnp.float32))
    return jnp.round(out).astype(jnp.int32)


def empty_history(trials: int) -> Array:
    """`[trials + 1]` int32 zeros: the history before the first throw."""
    return jnp.zeros((trials + 1,), jnp.int32)


__all__ = [
    "MAXRANDOM",
    "NUM_RANDOM",
    "PAPER",
    "ROCK",
    "SCISSORS",
    "Bot",
    "at",
    "biased_roshambo",
    "biased_roshambo_traced",
    "count_matmul",
    "draw_random",
    "empty_history",
    "flip_biased_coin",
    "i32",
    "last",
    "rand_mod3",
    "record",
    "threshold",
    "unit",
]
