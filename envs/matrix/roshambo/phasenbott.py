"""Phasenbott (J. Mandelson), second in the 1999 RoShamBo competition, as a JAX strategy.

The original (`phasenbott` in the competition's `rsb-ts1.c`) is a two-level "jocaine": a
meta-predictor over four sub-predictors (history matching on the opponent's moves, on both
players' moves, a random guess, and an inner jocaine over the both-moves matcher). Each
sub-predictor proposes my move and the opponent's; the meta level counts, for every rotation,
how often it would have been right (as my move, as the opponent's, and crossed), and plays the
best rotation of the best proposal.

History matching (`jlm_history`) finds, scanning back from the latest throw, the longest match of
the recent past on both histories, then extends it on my moves or the opponent's alone; the port
computes all match lengths incrementally (one vector update per throw) and evaluates the
original's early-stopping scan in closed form, with the same result, including its reads of the
history arrays' element 0 (the throw count) at the edge. Random draws are taken in the
original's call order (a proposal draws only when it has no match).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from marljax.envs.matrix.roshambo.base import biased_roshambo, i32, rand_mod3

Array = jax.Array

NUM_RANDOM = 7  # draws on the first throw (later throws read at most 4)


class JocaineStats(NamedTuple):
    my_last: Array  # [n] int32 each proposal's last "my move"
    opp_last: Array  # [n] int32 each proposal's last "opponent move"
    my_stats: Array  # [n, 3] int32 rotations of my proposal that beat the opponent
    opp_stats: Array  # [n, 3] int32 rotations of the opponent proposal that hit its move
    my_ostats: Array  # [n, 3] int32 crossed: the opponent proposal vs my move
    opp_ostats: Array  # [n, 3] int32 crossed: my proposal vs my move


def _stats_init(n: int) -> JocaineStats:
    z = jnp.zeros
    return JocaineStats(
        z((n,), jnp.int32),
        z((n,), jnp.int32),
        z((n, 3), jnp.int32),
        z((n, 3), jnp.int32),
        z((n, 3), jnp.int32),
        z((n, 3), jnp.int32),
    )


class PhasenbottState(NamedTuple):
    match: Array  # [3, L + 1] int32 suffix-match lengths (both, my, opp) vs the latest throw
    outer: JocaineStats  # 4 proposals
    inner: JocaineStats  # 1 proposal


def init(trials: int) -> PhasenbottState:
    return PhasenbottState(jnp.zeros((3, trials + 1), jnp.int32), _stats_init(4), _stats_init(1))


def _first_max(x: Array) -> tuple[Array, Array]:
    """`(h, i)` of the first maximum of `[n, 3]` in row-major scan order (strict `>`)."""
    flat = jnp.argmax(x.reshape(-1))
    return flat // 3, flat % 3


def _jocaine(s: JocaineStats, my_g: Array, opp_g: Array, my: Array, opp: Array, num):
    """One `apply_jocaine` call after throw `num > 0` given the proposals' new guesses."""
    lm, lo = my[num], opp[num]
    oh = lambda v: jax.nn.one_hot(v % 3, 3, dtype=jnp.int32)  # noqa: E731
    my_stats = s.my_stats + oh(3 + lo - s.my_last)
    opp_stats = s.opp_stats + oh(3 + lo - s.opp_last)
    my_ostats = s.my_ostats + oh(3 + lm - s.opp_last)
    opp_ostats = s.opp_ostats + oh(3 + lm - s.my_last)
    hy, my_most = _first_max(my_stats)
    hp, opp_most = _first_max(opp_stats)
    hyo, my_omost = _first_max(my_ostats)
    hpo, opp_omost = _first_max(opp_ostats)
    low = jnp.where(
        opp_stats[hp, opp_most] >= my_stats[hy, my_most],
        (opp_g[hp] + opp_most + 1) % 3,
        (my_g[hy] + my_most + 1) % 3,
    )
    high = jnp.where(
        opp_ostats[hpo, opp_omost] >= my_ostats[hyo, my_omost],
        (my_g[hpo] + opp_omost + 1) % 3,
        (opp_g[hyo] + my_omost + 1) % 3,
    )
    new = JocaineStats(my_g, opp_g, my_stats, opp_stats, my_ostats, opp_ostats)
    return low.astype(jnp.int32), high.astype(jnp.int32), new


def _matches(state: PhasenbottState, my: Array, opp: Array, num: Array) -> Array:
    """`[3, L + 1]` lengths of the suffixes ending at each `i < num` matching those ending at
    `num` (both histories, mine, the opponent's), bounded by `i`."""
    idx = jnp.arange(my.shape[0])
    valid = (idx >= 1) & (idx <= num - 1)
    eq_my = my == my[num]
    eq_opp = opp == opp[num]
    eq = jnp.stack([eq_my & eq_opp, eq_my, eq_opp])
    shifted = jnp.concatenate([jnp.zeros((3, 1), jnp.int32), state.match[:, :-1]], axis=1)
    return jnp.where(eq & valid, shifted + 1, 0).astype(jnp.int32)


def _jlm_history(match: Array, my: Array, opp: Array, num: Array) -> tuple[Array, Array, Array]:
    """`(both, my, opp)`: the positions `jlm_history` returns (0 = none)."""
    n = my.shape[0]
    idx = jnp.arange(n)
    in_range = (idx >= 1) & (idx <= num - 1)
    jb = jnp.where(in_range, match[0], 0)
    after = jax.lax.cummax(jb, reverse=True)
    best_after = jnp.concatenate([after[1:], jnp.zeros((1,), jnp.int32)])
    visited = in_range & (idx > best_after)
    # After the both-match of length jb, the original tests the opponent's moves at offset jb
    # (reading element 0, the throw count, when jb reaches i) and extends on one history.
    mism = opp[jnp.clip(num - jb, 0, n - 1)] != opp[jnp.clip(idx - jb, 0, n - 1)]
    cand_my = jnp.where(mism, match[1], jb)
    cand_opp = jnp.where(mism, jb, match[2])

    def best(c):
        c = jnp.where(visited, c, 0)
        pos = n - 1 - jnp.argmax(c[::-1])  # the latest position among the longest
        return jnp.where(c.max() > 0, pos, 0).astype(jnp.int32)

    return best(jb), best(cand_my), best(cand_opp)


def step(state: PhasenbottState, my: Array, opp: Array, rand: Array):
    trials = my.shape[0] - 1
    num = my[0]
    started = num > 0
    third = 1.0 / 3.0
    match = jnp.where(started, _matches(state, my, opp, num), state.match)
    both, mine, theirs = _jlm_history(match, my, opp, num)
    both = jnp.where(started, both, 0)
    mine = jnp.where(started, mine, 0)
    theirs = jnp.where(started, theirs, 0)

    def at_next(h, i):
        return h[jnp.minimum(i + 1, trials)]

    # Proposals in call order, with a running pointer into the draws.
    ptr = i32(0)

    def draw(ptr, use):
        return rand[ptr], ptr + use.astype(jnp.int32)

    r, ptr = draw(ptr, theirs == 0)  # jlmhist1
    p1 = jnp.where(
        theirs == 0,
        jnp.stack([biased_roshambo(r, third, third), i32(0)]),
        jnp.stack([(at_next(opp, theirs) + 1) % 3, (at_next(my, mine) + 1) % 3]),
    )
    r, ptr = draw(ptr, both == 0)  # jlmhist0
    hist0 = jnp.where(
        both == 0,
        jnp.stack([biased_roshambo(r, third, third), i32(0)]),
        jnp.stack([(at_next(opp, both) + 1) % 3, (at_next(my, both) + 1) % 3]),
    )
    p2 = hist0
    r_lo, ptr = draw(ptr, jnp.bool_(True))  # jlmrand: the left operand first
    r_hi, ptr = draw(ptr, jnp.bool_(True))
    p3 = jnp.stack([biased_roshambo(r_lo, third, third), biased_roshambo(r_hi, third, third)])
    r, ptr = draw(ptr, both == 0)  # the inner jocaine's jlmhist0
    inner_prop = jnp.where(
        both == 0,
        jnp.stack([biased_roshambo(r, third, third), i32(0)]),
        hist0,
    )

    # Later throws: the inner jocaine, then the outer one.
    lo_in, hi_in, inner = _jocaine(state.inner, inner_prop[:1], inner_prop[1:], my, opp, num)
    p4 = jnp.stack([lo_in, hi_in])
    props = jnp.stack([p1, p2, p3, p4])  # [4, 2] (my move, opponent move)
    low, _, outer = _jocaine(state.outer, props[:, 0], props[:, 1], my, opp, num)

    # The first throw: reset, remember the proposals, play random (the inner jocaine's own
    # first answer, random()%3, is its proposal; then the outer draws once more).
    r_inner, ptr0 = draw(ptr, jnp.bool_(True))
    inner_first = rand_mod3(r_inner)
    props0 = props.at[3].set(jnp.stack([inner_first, i32(0)]))
    outer0 = _stats_init(4)._replace(my_last=props0[:, 0], opp_last=props0[:, 1])
    inner0 = _stats_init(1)._replace(my_last=inner_prop[:1], opp_last=inner_prop[1:])
    first_move = rand_mod3(rand[ptr0])

    pick = lambda a, b: jax.tree.map(lambda x, y: jnp.where(started, x, y), a, b)  # noqa: E731
    new = PhasenbottState(match, pick(outer, outer0), pick(inner, inner0))
    return i32(jnp.where(started, low, first_move)), new
