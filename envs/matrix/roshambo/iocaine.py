"""Iocaine Powder (D. Egnor), winner of the 1999 RoShamBo competition, as a JAX strategy.

The original (`iocainebot` in the competition's `rsb-ts1.c`) runs 50 predictors: history matching
(the longest earlier repeat of the recent past, matched on my moves, the opponent's moves or both,
over horizons of 1000, 100, 10, 5, 2 and 1 throws, predicting my or the opponent's next move),
frequency analysis (my or the opponent's most frequent move), a random guess and a fixed "rock".
Each predictor is expanded into three rotations (play what beats the prediction, or what beats
that, ...) scored as if played; six meta-predictors pick the best rotation over windows of
1000 ... 1 throws, and a meta-meta level picks the best meta-predictor over the whole match.

The port keeps the original's decisions exactly, including its quirks:

- a score "over the last w throws" covers the last w - 1 throws (its cumulative sums are indexed
  one behind), so the window of 1 scores 0;
- the frequency predictor counts the whole match for every horizon (its counts never age);
- ties go to the first predictor in the original's scan order.

What differs is the data layout, so that a throw is O(L) vector work instead of a scan over the
history: the length of the longest match ending at each earlier position is kept incrementally
(`match[i] = match_prev[i - 1] + 1` when the moves at `i` and now agree, else 0), and the original's
early-stopping scan over positions is evaluated in closed form (a reverse running maximum). Scores
live in ring buffers of cumulative sums (101 rows; 1001 for matches longer than 1000 throws).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from marljax.envs.matrix.roshambo.base import biased_roshambo, i32

Array = jax.Array

AGES = (1000, 100, 10, 5, 2, 1)
NUM_AGES = len(AGES)
#: base predictors in the original's scan order: for each age, for me/opponent: history matched
#: on my moves, on theirs, on both, then frequency (8 per age); then random, then fixed.
NUM_BASE = NUM_AGES * 8 + 2
NUM_PRED = NUM_BASE + NUM_AGES  # plus the six meta-predictors
RANDOM_PRED, FIXED_PRED = NUM_AGES * 8, NUM_AGES * 8 + 1


class IocaineState(NamedTuple):
    match: Array  # [3, L + 1] int32 match lengths vs the current end (my, opp, both)
    counts: Array  # [2, 3] int32 my / the opponent's move counts
    cum: Array  # [R, NUM_PRED, 3] int32 ring of cumulative rotation scores, row k % R
    guess: Array  # [NUM_PRED] int32 each predictor's last prediction (-1 none)


def _ring(trials: int) -> int:
    return 101 if trials <= 1000 else 1001


def init(trials: int) -> IocaineState:
    return IocaineState(
        match=jnp.zeros((3, trials + 1), jnp.int32),
        counts=jnp.zeros((2, 3), jnp.int32),
        cum=jnp.zeros((_ring(trials), NUM_PRED, 3), jnp.int32),
        guess=jnp.full((NUM_PRED,), -1, jnp.int32),
    )


def _update_match(match: Array, my: Array, opp: Array, num: Array) -> Array:
    """Match lengths of the suffixes ending at each `i` in `[1, num - 1]` with the suffix ending
    at `num` (0 elsewhere), from those ending at `num - 1`."""
    idx = jnp.arange(my.shape[0])
    valid = (idx >= 1) & (idx <= num - 1)
    eq_my = my == my[num]
    eq_opp = opp == opp[num]
    eq = jnp.stack([eq_my, eq_opp, eq_my & eq_opp])
    shifted = jnp.concatenate([jnp.zeros((3, 1), jnp.int32), match[:, :-1]], axis=1)
    return jnp.where(eq & valid, shifted + 1, 0).astype(jnp.int32)


def _best_matches(match: Array, num: Array) -> Array:
    """`[NUM_AGES, 3]` the position `do_history` returns for each age and history kind (0 none).

    The original scans `i = num - 1, num - 2, ...` while `i > num - age` and `i > best length`,
    keeps strict improvements, and stops after a match longer than `num / 2`. Position `i` is
    visited iff it is in range, `i` exceeds the best length over the positions after it, and
    that best length is at most `num / 2`; the result is the visited position with the longest
    match, the latest on ties.
    """
    n = match.shape[1]
    idx = jnp.arange(n)
    in_range = (idx >= 1) & (idx <= num - 1)
    m = jnp.where(in_range, match, 0)
    after = jax.lax.cummax(m, axis=1, reverse=True)
    best_after = jnp.concatenate([after[:, 1:], jnp.zeros((3, 1), jnp.int32)], axis=1)
    base = in_range & (idx > best_after) & (best_after <= num // 2)
    ages = jnp.asarray(AGES, jnp.int32)
    visited = base[None] & (idx[None, None] > (num - ages)[:, None, None])  # [AGES, 3, n]
    score = jnp.where(visited, m[None], 0)
    # latest position among the longest: argmax over the reversed axis
    rev = jnp.argmax(score[..., ::-1], axis=-1)
    pos = n - 1 - rev
    return jnp.where(jnp.max(score, axis=-1) > 0, pos, 0).astype(jnp.int32)


def _pick(scores: Array, guesses: Array) -> Array:
    """`(guess + i) % 3` of the first (predictor, rotation) with the highest score."""
    flat = jnp.argmax(scores.reshape(-1))
    return (guesses[flat // 3] + flat % 3) % 3


def _rotation_delta(last: Array, guess: Array) -> Array:
    """`[..., 3]` the +1 / -1 a rotation scores when its predictor guessed `guess` and the
    opponent played `last` (the rotation that beats `last` wins, the one it beats loses)."""
    diff = (3 + last - guess) % 3
    win = jax.nn.one_hot((diff + 1) % 3, 3, dtype=jnp.int32)
    lose = jax.nn.one_hot((diff + 2) % 3, 3, dtype=jnp.int32)
    return win - lose


def step(state: IocaineState, my: Array, opp: Array, rand: Array):
    trials = my.shape[0] - 1
    num = my[0]
    started = num > 0
    last = jnp.where(started, opp[num], -1)
    guess = biased_roshambo(rand[0], 1.0 / 3.0, 1.0 / 3.0)

    counts = state.counts + started * jnp.stack(
        [jax.nn.one_hot(my[num], 3, dtype=jnp.int32), jax.nn.one_hot(opp[num], 3, dtype=jnp.int32)]
    )
    match = jnp.where(started, _update_match(state.match, my, opp, num), state.match)
    best = _best_matches(match, num)  # [AGES, 3]

    # New base predictions, in scan order [age][p][w (3 history kinds, then frequency)].
    nxt = jnp.minimum(best + 1, trials)
    hist_my = jnp.where(best == 0, guess, my[nxt])  # [AGES, 3] predicted by p = 0
    hist_opp = jnp.where(best == 0, guess, opp[nxt])  # p = 1
    freq = jnp.argmax(counts, axis=-1).astype(jnp.int32)  # [2] first most frequent
    per_age = jnp.stack(
        [
            jnp.concatenate([hist_my, jnp.broadcast_to(freq[0], (NUM_AGES, 1))], axis=1),
            jnp.concatenate([hist_opp, jnp.broadcast_to(freq[1], (NUM_AGES, 1))], axis=1),
        ],
        axis=1,
    )  # [AGES, 2, 4]
    base_guess = jnp.concatenate([per_age.reshape(-1), jnp.stack([guess, i32(0)])])

    # Score the base predictors' previous guesses against the opponent's last move.
    r = state.cum.shape[0]
    k = num  # updates after this throw's do_predict calls
    delta = _rotation_delta(last, state.guess) * started
    prev = state.cum[(k - 1) % r]
    cum_base = prev[:NUM_BASE] + delta[:NUM_BASE]

    # Meta-predictors: the best base rotation over each window, the original's
    # `max_stats(st, age)`: the ring's row `k % r` (here `cum_base`) minus the row `age - 1`
    # updates back, or the whole match when `age > k`. Read without copying the ring.
    meta_guess = []
    for age in AGES:
        back_at = (k - age + 1) % r
        back = jnp.where(back_at == k % r, cum_base, state.cum[back_at, :NUM_BASE])
        window = jnp.where(age > k, cum_base, cum_base - back)
        meta_guess.append(_pick(window, base_guess))
    meta_guess = jnp.stack(meta_guess).astype(jnp.int32)
    row = jnp.concatenate([cum_base, prev[NUM_BASE:] + delta[NUM_BASE:]])
    cum = state.cum.at[k % r].set(jnp.where(started, row, state.cum[k % r]))

    # Meta-meta: the best meta rotation over the whole match.
    move = _pick(cum[k % r][NUM_BASE:], meta_guess)
    new_guess = jnp.concatenate([base_guess, meta_guess]).astype(jnp.int32)
    return i32(move), IocaineState(match, counts, cum, new_guess)
