"""The 18 "dummy" bots of the 1999 RoShamBo competition's test suite, ported to JAX.

Written by D. Billings for the First International RoShamBo Programming Competition, and
entered in the field so that strong programs had weak ones to exploit. Logic follows the
functions of the same names in the test-suite program (`rsb-ts1.c`, 1999, revised 2000); the
docstring of each port says what it does. All are faithful: given the same `random()` draws they
make the same moves as the originals (see `tests/test_rps_parity.py`).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from marljax.envs.matrix.roshambo import tables
from marljax.envs.matrix.roshambo.base import (
    PAPER,
    ROCK,
    SCISSORS,
    Bot,
    at,
    biased_roshambo,
    flip_biased_coin,
    i32,
    last,
    rand_mod3,
)

Array = jax.Array


class _NoState(NamedTuple):
    pass


def _stateless(fn):
    """A stateless move function `(my, opp, rand) -> move` as a `Bot` step."""

    def step(state, my, opp, rand):
        return i32(fn(my, opp, rand)), state

    return step


def _no_state(trials: int) -> _NoState:
    return _NoState()


# ----------------------------------------------------------------------------- stateless


def randbot(my, opp, rand):
    """Uniformly random: `random() % 3`."""
    return rand_mod3(rand[0])


def rockbot(my, opp, rand):
    """Good Ole Rock: always rock."""
    return ROCK


def r226bot(my, opp, rand):
    """20 % rock, 20 % paper, 60 % scissors."""
    return biased_roshambo(rand[0], 0.2, 0.2)


def rotatebot(my, opp, rand):
    """Rock, paper, scissors, rock, ... by turn number."""
    return my[0] % 3


def copybot(my, opp, rand):
    """Beat the opponent's last move (paper on the first throw, as `opp[0]` reads rock)."""
    return (last(opp) + 1) % 3


def switchbot(my, opp, rand):
    """Never repeat my last move: one of the other two, 50/50 (first move as after rock)."""
    prev = last(my)
    return jnp.where(
        prev == ROCK,
        biased_roshambo(rand[0], 0.0, 0.5),
        jnp.where(
            prev == PAPER, biased_roshambo(rand[0], 0.5, 0.0), biased_roshambo(rand[0], 0.5, 0.5)
        ),
    )


def switchalot(my, opp, rand):
    """Repeat my last move with probability 0.12, else one of the other two (0.44 each)."""
    prev = last(my)
    return jnp.where(
        prev == ROCK,
        biased_roshambo(rand[0], 0.12, 0.44),
        jnp.where(
            prev == PAPER,
            biased_roshambo(rand[0], 0.44, 0.12),
            biased_roshambo(rand[0], 0.44, 0.44),
        ),
    )


def foxtrotbot(my, opp, rand):
    """Odd turns random; even turn `t` plays `(my move of turn t-1 + t) % 3`."""
    turn = my[0] + 1
    return jnp.where(turn % 2 == 1, rand_mod3(rand[0]), (at(my, turn - 1) + turn) % 3)


@functools.lru_cache(maxsize=1)
def pi_nonzero_digits() -> np.ndarray:
    """The non-zero digits among the first 1200 decimal digits of pi (pibot's cycle)."""
    digits = np.asarray([int(c) for c in tables.pi_digits(1200)], np.int32)
    return digits[digits != 0]


def pibot(my, opp, rand):
    """The digits of pi (3, 1, 4, 1, 5, 9, ...) mod 3, skipping zeros, cycling after 1200 digits."""
    table = jnp.asarray(pi_nonzero_digits() % 3)
    return table[my[0] % table.shape[0]]


def _digits(s: str) -> np.ndarray:
    return np.frombuffer(s.encode(), np.uint8).astype(np.int32) - ord("0")


def debruijn81(my, opp, rand):
    """Concatenated de Bruijn strings of length 81 (a fixed table of 1000 moves, by turn)."""
    table = jnp.asarray(_digits(tables.DEBRUIJN81))
    return table[my[0] % 1000]


def textbot(my, opp, rand):
    """English text mapped to moves (a fixed, heavily biased table of 1000 moves, by turn)."""
    table = jnp.asarray(_digits(tables.TEXTBOT))
    return table[my[0] % 1000]


# ----------------------------------------------------------------------------- with state


class Counts(NamedTuple):
    counts: Array  # [3] int32 how often each move was seen


def _counts_init(trials: int) -> Counts:
    return Counts(jnp.zeros((3,), jnp.int32))


def _counted(hist: Array, state: Counts) -> Array:
    """Counts including the last move of `hist` (none before the first throw)."""
    add = jax.nn.one_hot(last(hist), 3, dtype=jnp.int32) * (hist[0] > 0)
    return state.counts + add


def freqbot2_step(state, my, opp, rand):
    """Beat the opponent's most frequent move: paper if rock strictly leads, else scissors if
    paper > scissors, else rock."""
    c = _counted(opp, state)
    r, p, s = c[0], c[1], c[2]
    move = jnp.where((r > p) & (r > s), PAPER, jnp.where(p > s, SCISSORS, ROCK))
    return i32(move), Counts(c)


def _flat_choice(c: Array, rand: Array) -> Array:
    """flatbot3's rule on my own counts: favour my least-used move (0.8 / 0.1 / 0.1; 0.45 each
    for two tied least-used; uniform when all are equal)."""
    r, p, s = c[0], c[1], c[2]
    u = rand[0]
    cases = [
        ((r < p) & (r < s), biased_roshambo(u, 0.8, 0.1)),
        ((p < r) & (p < s), biased_roshambo(u, 0.1, 0.8)),
        ((s < r) & (s < p), biased_roshambo(u, 0.1, 0.1)),
        ((r == p) & (r < s), biased_roshambo(u, 0.45, 0.45)),
        ((r == s) & (r < p), biased_roshambo(u, 0.45, 0.1)),
        ((p == s) & (p < r), biased_roshambo(u, 0.1, 0.45)),
        ((r == p) & (r == s), rand_mod3(u)),
    ]
    choice = i32(0)
    for cond, move in cases:
        choice = jnp.where(cond, move, choice)
    return choice


def flatbot3_step(state, my, opp, rand):
    """Play my least-used move most of the time (a flat distribution overall)."""
    c = _counted(my, state)
    return _flat_choice(c, rand), Counts(c)


def antiflatbot_step(state, my, opp, rand):
    """Beat flatbot: expect the opponent's least-used move, and beat it."""
    c = _counted(opp, state)
    r, p, s = c[0], c[1], c[2]
    cases = [
        ((r < p) & (r < s), PAPER),
        ((p < r) & (p < s), SCISSORS),
        ((s < r) & (s < p), ROCK),
        ((r == p) & (r < s), PAPER),
        ((r == s) & (r < p), ROCK),
        ((p == s) & (p < r), SCISSORS),
        ((r == p) & (r == s), rand_mod3(rand[0])),
    ]
    choice = i32(0)
    for cond, move in cases:
        choice = jnp.where(cond, move, choice)
    return choice, Counts(c)


class AntiRotn(NamedTuple):
    no: Array  # [] int32 opponent repeats
    up: Array  # [] int32 opponent steps +1
    dn: Array  # [] int32 opponent steps -1
    score: Array  # [] int32 my running score


def _antirotn_init(trials: int) -> AntiRotn:
    z = i32(0)
    return AntiRotn(z, z, z, z)


def antirotnbot_step(state, my, opp, rand):
    """Count the opponent's rotations (repeat, +1, -1) and exploit the most or least
    frequent, whichever stands out more; random when losing by 4 % of the match."""
    trials = my.shape[0] - 1
    mv = opp[0]
    started = mv > 0
    d = (at(my, mv) - at(opp, mv) + 3) % 3
    score = state.score + jnp.where(started, (d == 1).astype(jnp.int32) - (d == 2), 0)
    r = (at(opp, mv) - at(opp, mv - 1) + 3) % 3
    more = started & (mv > 1)
    no = state.no + (more & (r == 0))
    up = state.up + (more & (r == 1))
    dn = state.dn + (more & (r == 2))
    new = AntiRotn(i32(no), i32(up), i32(dn), i32(score))

    lo = last(opp)
    coin = flip_biased_coin(rand[0], 0.5)
    srt = jnp.sort(jnp.stack([no, up, dn]))
    diff, diff2 = srt[1] - srt[0], srt[2] - srt[1]
    clear_max = jnp.select(
        [(no > up) & (no > dn), (up > no) & (up > dn), (dn > no) & (dn > up)],
        [(lo + 1) % 3, (lo + 2) % 3, lo],
        0,
    )
    clear_min = jnp.select(
        [(dn < up) & (dn < no), (up < dn) & (up < no), (no < dn) & (no < up)],
        [(lo + 1) % 3, lo, (lo + 2) % 3],
        0,
    )
    even = jnp.select(
        [
            (no > up) & (up > dn),
            (dn > up) & (up > no),
            (dn > no) & (no > up),
            (up > no) & (no > dn),
            (up > dn) & (dn > no),
            (no > dn) & (dn > up),
        ],
        [
            (lo + 1) % 3,
            jnp.where(coin, lo, (lo + 2) % 3),
            lo,
            jnp.where(coin, (lo + 1) % 3, (lo + 2) % 3),
            (lo + 2) % 3,
            jnp.where(coin, lo, (lo + 1) % 3),
        ],
        0,
    )
    tree = jnp.where(diff < diff2, clear_max, jnp.where(diff > diff2, clear_min, even))
    # C's `-trials/25` truncates towards zero.
    fail_safe = (score < -(trials // 25)) | ((no == up) & (no == dn))
    return i32(jnp.where(fail_safe, rand_mod3(rand[0]), tree)), new


class Gear(NamedTuple):
    gear: Array  # [] int32 rotation added to the move


def _gear_init(trials: int) -> Gear:
    return Gear(i32(0))


def driftbot_step(state, my, opp, rand):
    """Copy the opponent's last move half the time (else random), plus a gear that moves by 2
    every 111 turns."""
    mv = my[0]
    copy = jnp.where(flip_biased_coin(rand[0], 0.5), at(opp, mv), rand_mod3(rand[1]))
    throw = jnp.where(mv == 0, rand_mod3(rand[0]), copy)
    gear = jnp.where(mv == 0, 0, state.gear + jnp.where(mv % 111 == 0, 2, 0))
    return i32((throw + gear) % 3), Gear(i32(gear))


class AddShift(NamedTuple):
    gear: Array  # [] int32
    recent: Array  # [] int32 turns since the last gear shift
    score: Array  # [] int32 score since the last gear shift


def _addshift_init(trials: int) -> AddShift:
    z = i32(0)
    return AddShift(z, z, z)


def addshiftbot3_step(state, my, opp, rand):
    """Play (my last + opponent's last + gear) 80 % of the time, else random; shift gear when
    losing (3 down in the first 20 turns since a shift, or 10 %)."""
    mv = my[0]
    d = (at(my, mv) - at(opp, mv) + 3) % 3
    score = state.score + (d == 1).astype(jnp.int32) - (d == 2)
    recent = state.recent + 1
    shift = ((recent <= 20) & (score <= -3)) | ((recent > 20) & (score <= -(recent // 10)))
    gear = state.gear + jnp.where(shift, 2, 0)
    recent = jnp.where(shift, 0, recent)
    score = jnp.where(shift, 0, score)
    move = jnp.where(
        flip_biased_coin(rand[0], 0.2), rand_mod3(rand[1]), (at(my, mv) + at(opp, mv) + gear) % 3
    )
    first = mv == 0
    new = AddShift(
        i32(jnp.where(first, 0, gear)),
        i32(jnp.where(first, 0, recent)),
        i32(jnp.where(first, 0, score)),
    )
    return i32(jnp.where(first, rand_mod3(rand[0]), move)), new


def adddriftbot2_step(state, my, opp, rand):
    """Play (my last + opponent's last + gear) half the time, else random; gear += 2 every 200
    turns."""
    mv = my[0]
    gear = jnp.where(mv == 0, 0, state.gear + jnp.where(mv % 200 == 0, 2, 0))
    move = jnp.where(
        flip_biased_coin(rand[0], 0.5), rand_mod3(rand[1]), (at(my, mv) + at(opp, mv) + gear) % 3
    )
    return i32(jnp.where(mv == 0, rand_mod3(rand[0]), move)), Gear(i32(gear))


# ----------------------------------------------------------------------------- registry


def _bot(name, init, step, title):
    return Bot(name, init, step, title, "Darse Billings")


def dummy_bots() -> list[Bot]:
    """The 18 test-suite bots, in the order of the 1999 tournament's table."""
    s = _stateless
    return [
        _bot("randbot", _no_state, s(randbot), "Random (Optimal)"),
        _bot("rockbot", _no_state, s(rockbot), "Good Ole Rock"),
        _bot("r226bot", _no_state, s(r226bot), "R-P-S 20-20-60"),
        _bot("rotatebot", _no_state, s(rotatebot), "Rotate R-P-S"),
        _bot("copybot", _no_state, s(copybot), "Beat The Last Move"),
        _bot("switchbot", _no_state, s(switchbot), "Always Switchin'"),
        _bot("freqbot2", _counts_init, freqbot2_step, "Beat Frequent Pick"),
        _bot("pibot", _no_state, s(pibot), "Pi"),
        _bot("switchalot", _no_state, s(switchalot), "Switch A Lot"),
        _bot("flatbot3", _counts_init, flatbot3_step, "Flat"),
        _bot("antiflatbot", _counts_init, antiflatbot_step, "Anti-Flat"),
        _bot("foxtrotbot", _no_state, s(foxtrotbot), "Foxtrot"),
        _bot("debruijn81", _no_state, s(debruijn81), "De Bruijn"),
        _bot("textbot", _no_state, s(textbot), "Text"),
        _bot("antirotnbot", _antirotn_init, antirotnbot_step, "Anti-rotn"),
        _bot("driftbot", _gear_init, driftbot_step, "Copy-drift"),
        _bot("addshiftbot3", _addshift_init, addshiftbot3_step, "Add-react"),
        _bot("adddriftbot2", _gear_init, adddriftbot2_step, "Add-drift"),
    ]
