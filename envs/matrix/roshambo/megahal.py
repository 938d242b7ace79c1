"""MegaHAL (`halbot`, Jason Hutchens, third in 1999) as a pure, jittable bot.

The original (`megahal.c`, inside `rsb-ts1.c`) is an "infinite-order" Markov model of the
opponent's next move given the last `L` joint throws, `L = 0 .. HISTORY = 21`, kept in a trie
grown with `malloc` and counted over a sliding window of `WINDOW = 200` throws. Every context
that has been seen (`BELIEVE = 1`) predicts; each context length keeps a score (how often the
move its prediction recommended would have won minus lost, over its recent recommendations); the
contexts are sorted with `qsort` by that score and the best one that has been seen plays, unless
the "random" pseudo-context ranks above it.

The port keeps the original's decisions exactly, in fixed-size state:

- **The trie** is replaced by suffix matches (as in `zq_move`): with `M[e]` the length of the
  common suffix of the joint history ending at throw `e` and now, the node of the last `L` pairs
  holds, for every throw `i` with `M[i - 1] >= L`, the opponent's move `opp[i]`. The original's
  window adds throw `i` to the contexts of length `<= 20` that start at `s = i - L >= 1` and
  removes it when `s` leaves the window (at `n = s + 200`), so the node's counts are exactly those
  `i` with `s >= max(1, n - 199)`, `L <= 20` (length-21 nodes exist but never count).
- **The context scores** (`best`, `worst`, `seen` per context length) and the ring buffer of
  recommendations (`memory`, `[WINDOW, HISTORY + 2]`) are ported as they are, with the
  original's window quirk: context index `i` forgets the recommendation of `201 - i` throws ago.
- **The sort** (`qsort` with `halbot_compare`): the comparator ranks by the score
  `(best - worst) / seen` (0 when unseen; float32 in C, exact rationals here: two different
  fractions with denominators <= 200 differ by more than float32 rounds) and breaks ties by the
  longer context. Its "both unseen" branch assigns (`seen = 0`) instead of comparing and so never
  fires; the assignment only touches contexts whose score is already 0, so it never changes an
  order. Context lengths are all different, so the order is total and any sorting algorithm
  gives the same one: the port takes the best-ranked candidate instead of sorting.

`random()` is called once every throw (the original's `random_move`), whether it is used or not.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from marljax.envs.matrix.roshambo.base import at, i32, rand_mod3

Array = jax.Array

HISTORY = 21  # longest context, in joint throws
WINDOW = 200  # sliding window, in throws
NUM_CONTEXTS = HISTORY + 2  # index 0: the random pseudo-context; index k >= 1: length k - 1


class HalState(NamedTuple):
    match: Array  # [L+1] int32 common-suffix length of the joint history at e and now
    counts: Array  # [HISTORY+1, 3] int32 the previous throw's node counts per context length
    size: Array  # [] int32 the previous throw's number of contexts (`context_size`)
    memory: Array  # [WINDOW, NUM_CONTEXTS] int32 recommended moves (-1: none), a ring
    remember: Array  # [] int32 the ring's oldest slot
    best: Array  # [NUM_CONTEXTS] int32 recommendations that would have won, in the window
    worst: Array  # [NUM_CONTEXTS] int32 ... that would have lost
    seen: Array  # [NUM_CONTEXTS] int32 recommendations made


def init(trials: int) -> HalState:
    """The state at the start of a match of `trials` throws."""
    z = jnp.zeros((NUM_CONTEXTS,), jnp.int32)
    return HalState(
        match=jnp.zeros((trials + 1,), jnp.int32),
        counts=jnp.zeros((HISTORY + 1, 3), jnp.int32),
        size=i32(2),
        memory=jnp.full((WINDOW, NUM_CONTEXTS), -1, jnp.int32),
        remember=i32(0),
        best=z,
        worst=z,
        seen=z,
    )


def _recommend(counts: Array) -> Array:
    """`[..., 3]` counts -> `[...]` the move of highest expected score (first on ties)."""
    expected = jnp.roll(counts, -2, axis=-1) - jnp.roll(counts, -1, axis=-1)  # c[j+2] - c[j+1]
    return jnp.argmax(expected, axis=-1).astype(jnp.int32)


def _score_contexts(state: HalState, opp: Array, n: Array) -> HalState:
    """Forget the recommendations leaving the window, then score the previous throw's."""
    idx = jnp.arange(NUM_CONTEXTS)
    live = (idx >= 1) & (idx < state.size)
    old = state.memory[(state.remember + idx - 1) % WINDOW, idx]  # [NUM_CONTEXTS]
    o_old = at(opp, n - WINDOW + idx - 1)
    drop = live & (old >= 0)
    best = state.best - (drop & (old == (o_old + 1) % 3))
    worst = state.worst - (drop & (old == (o_old + 2) % 3))
    seen = state.seen - drop
    # index 0 (the random context) has no node; index k >= 1 reads the length k - 1 node
    node_counts = jnp.concatenate([jnp.zeros((1, 3), jnp.int32), state.counts])
    believed = live & (node_counts.sum(-1) >= 1)
    rec = _recommend(node_counts)
    o = opp[n]
    best = best + (believed & (rec == (o + 1) % 3))
    worst = worst + (believed & (rec == (o + 2) % 3))
    seen = seen + believed
    row = jnp.where(believed, rec, jnp.where(idx < state.size, -1, state.memory[state.remember]))
    return state._replace(
        memory=state.memory.at[state.remember].set(row),
        remember=(state.remember + 1) % WINDOW,
        best=best.astype(jnp.int32),
        worst=worst.astype(jnp.int32),
        seen=seen.astype(jnp.int32),
    )


def step(state: HalState, my: Array, opp: Array, rand: Array) -> tuple[Array, HalState]:
    """One throw of MegaHAL (see the module docstring for how it maps onto the original)."""
    trials = my.shape[0] - 1
    n = my[0]
    idx = jnp.arange(trials + 1)
    state = jax.lax.cond(n > 0, lambda s: _score_contexts(s, opp, n), lambda s: s, state)

    # the windowed trie: counts[L, m] = #{i: lo + L <= i <= n, M[i - 1] >= L, opp[i] = m}
    same = (my == my[n]) & (opp == opp[n]) & (idx >= 1) & (idx <= n)
    prev = jnp.concatenate([jnp.zeros((1,), jnp.int32), state.match[:-1]])
    match = jnp.where(n > 0, jnp.where(same, prev + 1, 0), state.match).astype(jnp.int32)
    lo = jnp.maximum(1, n - WINDOW + 1)
    lengths = jnp.arange(HISTORY + 1)[:, None]  # [22, 1]
    i = idx[None, :] + 1  # outcome throw i for the context ending at e = i - 1
    hit = (
        ((lengths == 0) | (match[None, :] >= lengths))
        & (i >= lo + lengths)
        & (i <= n)
        & (lengths < HISTORY)  # the length-21 nodes are never counted into
    )  # [22, L+1]
    nxt = jnp.concatenate([opp[1:], jnp.zeros((1,), jnp.int32)])  # opp[e + 1]
    counts = jnp.einsum(
        "le,em->lm", hit.astype(jnp.int32), jax.nn.one_hot(nxt, 3, dtype=jnp.int32)
    ).astype(jnp.int32)

    # rank the contexts (score, then length) and play the best seen one, or at random
    size = 2 + jnp.minimum(n, HISTORY)
    k = jnp.arange(NUM_CONTEXTS)
    total = jnp.concatenate([jnp.zeros((1,), jnp.int32), counts.sum(-1)])
    candidate = (k == 0) | ((k < size) & (total >= 1))
    num = jnp.where(state.seen > 0, state.best - state.worst, 0)
    den = jnp.maximum(state.seen, 1)
    cross = num[:, None] * den[None, :] - num[None, :] * den[:, None]  # [a, b] > 0: a ranks first
    ahead = (cross > 0) | ((cross == 0) & (k[:, None] > k[None, :]))
    beaten = jnp.sum(ahead & candidate[:, None], axis=0)  # candidates ranked before b
    chosen = jnp.argmin(jnp.where(candidate, beaten, NUM_CONTEXTS + 1))
    node_counts = jnp.concatenate([jnp.zeros((1, 3), jnp.int32), counts])
    move = jnp.where(chosen == 0, rand_mod3(rand[0]), _recommend(node_counts[chosen]))
    return i32(move), state._replace(match=match, counts=counts, size=i32(size))
