"""Shofar (R. Cilibrasi), 11th in the 1999 RoShamBo competition, as a JAX strategy.

The original (`shofar` in the competition's `rsb-ts1.c`) keeps 89 simple strategies: three
constant moves, three "mirror" (the opponent's last move plus an offset), three "narcissus" (my
last move plus an offset) and 80 random cyclic patterns of length 1 to 5. Each is scored as if
played (+3, or +4 for the one chosen, for a win; the same off for a loss; x 0.99 per throw); the
worst pattern is replaced by a fresh random one every throw; the move comes from a strategy
drawn with probability proportional to 1.05 ** score. (Its second initialisation loop re-runs
every init function on the last strategy only, which the port keeps.)

Port notes: the scores and weights are double precision in the original and float32 here, so a
draw that falls within rounding of a boundary between two strategies could pick the other one
(it did not in the 10 recorded parity matches; 2 of 12 matches of an independent check
departed, at throws 15 and 349). The original initialises once per
process and keeps its strategies from match to match; the port starts every match fresh, as a
new bot (OpenSpiel's per-match bots and the parity recordings do the same). Its first throw
reads up to 960 draws (160 pattern initialisations), so `num_random` is large.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from marljax.envs.matrix.roshambo.base import i32

Array = jax.Array

NUM_FIXED = 9  # 3 constant, 3 mirror, 3 narcissus
NUM_PATTERNS = 80
NUM_STRATS = NUM_FIXED + NUM_PATTERNS
NUM_RANDOM = 2 * NUM_PATTERNS * 6 + 1  # the worst case of the first throw


class ShofarState(NamedTuple):
    score: Array  # [89] float32 strategy scores
    length: Array  # [80] int32 pattern lengths (1..5)
    pos: Array  # [80] int32 pattern positions
    pattern: Array  # [80, 5] int32 pattern moves
    move: Array  # [89] int32 each strategy's last move
    chose: Array  # [] int32 the strategy played last (-1 none)


def init(trials: int) -> ShofarState:
    return ShofarState(
        jnp.zeros(NUM_STRATS, jnp.float32),
        jnp.ones(NUM_PATTERNS, jnp.int32),
        jnp.zeros(NUM_PATTERNS, jnp.int32),
        jnp.zeros((NUM_PATTERNS, 5), jnp.int32),
        jnp.zeros(NUM_STRATS, jnp.int32),
        i32(-1),
    )


def _pattern_init(rand: Array, ptr: Array) -> tuple[Array, Array, Array]:
    """`pattern_init` from draws at `ptr`: `(length, moves [5], new ptr)`."""
    r = rand[ptr]
    # 1 + random() / (maxrandom / 5), truncated: r < k * 2**31 / 5 exactly in integers.
    bounds = jnp.asarray([(k * 2**31 + 4) // 5 for k in range(1, 5)], jnp.uint32)
    length = 1 + jnp.sum(r >= bounds)
    k = jnp.arange(5)
    d = rand[jnp.clip(ptr + 1 + k, 0, rand.shape[0] - 1)]
    moves = jnp.where(d < 715827883, 0, jnp.where(d < 1431655766, 1, 2))  # 3 * random()/2**31
    moves = jnp.where(k < length, moves, 0).astype(jnp.int32)
    return length.astype(jnp.int32), moves, ptr + 1 + length


def step(state: ShofarState, my: Array, opp: Array, rand: Array):
    n = opp[0]
    first = n == 0

    # First throw: 80 pattern initialisations, then 80 more from the original's second init
    # loop, which does not point `cur` at each strategy: they all land on the last one.
    def init_body(ptr, _):
        length, moves, ptr = _pattern_init(rand, ptr)
        return ptr, (length, moves)

    ptr0, (lengths, patterns) = jax.lax.scan(init_body, i32(0), None, length=2 * NUM_PATTERNS)
    lengths0 = lengths[:NUM_PATTERNS].at[-1].set(lengths[-1])
    patterns0 = patterns[:NUM_PATTERNS].at[-1].set(patterns[-1])

    # Later throws: score the last moves, replace the worst pattern.
    her = opp[n]
    win, lose = (her + 1) % 3, (her + 2) % 3
    mult = jnp.where(jnp.arange(NUM_STRATS) == state.chose, 4.0, 3.0)
    score = state.score + mult * ((state.move == win) - 1.0 * (state.move == lose))
    score = score * jnp.float32(0.99)
    worst = jnp.argmin(score[NUM_FIXED:])  # the first of the lowest
    length_w, moves_w, ptr1 = _pattern_init(rand, i32(0))
    length = state.length.at[worst].set(length_w)
    pattern = state.pattern.at[worst].set(moves_w)
    pos = state.pos.at[worst].set(0)

    score = jnp.where(first, jnp.zeros_like(score), score)
    length = jnp.where(first, lengths0, length)
    pattern = jnp.where(first, patterns0, pattern)
    pos = jnp.where(first, jnp.zeros_like(pos), pos)
    ptr = jnp.where(first, ptr0, ptr1)

    # Every strategy plays (mirror and narcissus read element 0, 0 throws, on the first).
    c = jnp.arange(3)
    fixed = jnp.concatenate([c, (c + opp[n]) % 3, (c + my[n]) % 3])
    pat_moves = jnp.take_along_axis(pattern, pos[:, None], axis=1)[:, 0]
    moves = jnp.concatenate([fixed, pat_moves]).astype(jnp.int32)
    pos = (pos + 1) % length

    w = jnp.float32(1.05) ** score
    total = w.sum()
    r = (rand[ptr].astype(jnp.float32) / jnp.float32(2**31)) * total
    chose = jnp.argmax(r - jnp.cumsum(w) <= 0).astype(jnp.int32)
    new = ShofarState(score, length, pos, pattern, moves, chose)
    return moves[chose], new
