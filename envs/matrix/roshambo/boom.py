"""Boom (J. van Rijswijk), 10th in the 1999 RoShamBo competition, as a JAX strategy.

The original (`boom` in the competition's `rsb-ts1.c`) counts what the opponent played after
each (opponent, me) pair of moves 1 to 27 throws earlier (with "any" wildcards), predicts from
the most lopsided count, refines the prediction with second-order counts restricted to the
throws that fit the chosen context, plays against it through a "gear" (a rotation chosen by
its recent success), and bails out to random play when losing.

Port notes: the float arithmetic is the original's single precision (C `float`), so the port
computes in float32 too; a few bail-out quantities the original rounds through double may differ
in the last bit. On its first 27 throws the original reads element 0 of the history arrays (the
throw count) as a move, indexing its count table out of its [4] bounds; the port reads the
table's flat memory at the same offset (0 past the table's end), as the compiled original does
while the offset stays inside the table.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from marljax.envs.matrix.roshambo.base import biased_roshambo, count_matmul, i32

Array = jax.Array

LAGS = 27
LAMBDA = np.float32(0.95)
ONE_MINUS = np.float32(1) - LAMBDA  # C: 1 - lambda in float
BAIL_L_MIN = np.float32(math.sqrt(float(ONE_MINUS) / 3))
BAIL_L_MAX = np.float32(math.sqrt(2 * float(ONE_MINUS)))
BAIL_L_DIFF = np.float32(BAIL_L_MIN - BAIL_L_MAX)
THIRD = float(np.float32(1) / np.float32(3))


class BoomState(NamedTuple):
    stats: Array  # [28, 4, 4, 3] int32 opponent's move after (opp, me) `lag + 1` throws back
    overall: Array  # [] int32 my score
    gear: Array  # [] int32 rotation applied to the move
    gear_success: Array  # [3] float32 decayed success of each gear
    recent: Array  # [] float32 decayed recent success


def init(trials: int) -> BoomState:
    return BoomState(
        jnp.zeros((28, 4, 4, 3), jnp.int32),
        i32(0),
        i32(0),
        jnp.zeros(3, jnp.float32),
        jnp.float32(0),
    )


def _relevance(c: Array) -> Array:
    """`boom_getrelevance`: the largest of s - p, r - s, p - r over the count + 5 (float)."""
    c = c.astype(jnp.float32)
    r, p, s = c[..., 0], c[..., 1], c[..., 2]
    best = jnp.maximum(jnp.maximum(s - p, r - s), p - r)
    return best / (r + p + s + 5)


def _flat_read(stats: Array, lag: Array, a: Array, b: Array) -> Array:
    """`stats[lag][a][b][0..2]` as C reads it, also for out-of-range `a`, `b` (flat offset;
    0 past the end of the table)."""
    flat = stats.reshape(-1)
    off = ((lag * 4 + a) * 4 + b) * 3 + jnp.arange(3)
    return jnp.where(off < flat.shape[0], flat[jnp.clip(off, 0, flat.shape[0] - 1)], 0)


def _pick(cands: Array, w: Array, best: Array, cur: tuple):
    """Scan candidates in order, keeping strict improvements of `w > best`.

    The scan ends on the first candidate of the largest `w` if that beats `best` (`w` is never
    NaN), so it is computed as one `argmax` (first maximum) instead of a loop.
    """
    counts, meta = cands
    i = jnp.argmax(w)
    better = w[i] > best
    t = counts[i].sum().astype(jnp.float32)
    c = counts[i].astype(jnp.float32)
    sel = lambda new, old: jnp.where(better, new, old)  # noqa: E731
    pr, pp, ps, fo, fm, fl = cur
    return (
        sel(w[i], best),
        sel(c[0] / t, pr),
        sel(c[1] / t, pp),
        sel(c[2] / t, ps),
        sel(meta[i, 0], fo),
        sel(meta[i, 1], fm),
        sel(meta[i, 2], fl),
    )


def _lagged(hist: Array) -> Array:
    """`[LAGS, L+1]` with row `lag`, column `pos` = `hist[pos - lag - 1]` (0 where that is < 0)."""
    n = hist.shape[0]
    padded = jnp.concatenate([jnp.zeros((LAGS,), hist.dtype), hist])
    return jnp.stack([padded[LAGS - lag - 1 : LAGS - lag - 1 + n] for lag in range(LAGS)])


def step(state: BoomState, my: Array, opp: Array, rand: Array):
    trials = my.shape[0] - 1
    turn = opp[0]
    started = turn > 0
    idx = jnp.arange(trials + 1)
    lags = jnp.arange(LAGS)

    # Update the statistics with the last throw.
    ol, ml = opp[turn], my[turn]
    earlier = turn - lags - 1
    ok = (earlier > 0) & started
    oe, me = opp[jnp.clip(earlier, 0, trials)], my[jnp.clip(earlier, 0, trials)]
    add = ok.astype(jnp.int32)
    stats = state.stats
    for a, b in ((oe, me), (3, me), (oe, 3), (3, 3)):
        stats = stats.at[lags, a, b, ol].add(add)
    gs = state.gear_success * LAMBDA
    recent = state.recent * LAMBDA
    g = state.gear
    res = jnp.where(ml == ol, 0, jnp.where((ml + 1) % 3 == ol, -1, 1))
    one = jnp.float32(ONE_MINUS)
    loss = gs.at[g].add(-one).at[(g + 2) % 3].add(one)
    win = gs.at[g].add(one).at[(g + 1) % 3].add(-one)
    tie = gs.at[(g + 1) % 3].add(one).at[(g + 2) % 3].add(-one)
    gs = jnp.where(res == -1, loss, jnp.where(res == 1, win, tie))
    recent = recent + jnp.where(res == -1, -one, jnp.where(res == 1, one, 0.0))
    overall = state.overall + res
    gs = jnp.where(started, gs, state.gear_success)
    recent = jnp.where(started, recent, state.recent)
    overall = jnp.where(started, overall, state.overall)

    # Primary contexts: lags 0..26 with lag <= turn; (opp, me) read raw at turn - lag.
    ctx = turn - lags
    o_ctx, m_ctx = opp[jnp.clip(ctx, 0, trials)], my[jnp.clip(ctx, 0, trials)]
    variants = [
        (o_ctx, m_ctx),
        (jnp.full_like(o_ctx, 3), m_ctx),
        (o_ctx, jnp.full_like(m_ctx, 3)),
        (jnp.full_like(o_ctx, 3), jnp.full_like(m_ctx, 3)),
    ]
    counts = jnp.stack(
        [jax.vmap(_flat_read, (None, 0, 0, 0))(stats, lags, a, b) for a, b in variants], axis=1
    )  # [27, 4, 3]
    meta = jnp.stack([jnp.stack([a, b, lags], -1) for a, b in variants], axis=1)  # [27, 4, 3]
    w = jnp.where((lags <= turn)[:, None], _relevance(counts), -jnp.inf)
    z = jnp.float32(0)
    best, pr, pp, ps, fo, fm, fl = _pick(
        (counts.reshape(-1, 3), meta.reshape(-1, 3)),
        w.reshape(-1),
        z,
        (z, z, z, i32(0), i32(0), i32(-1)),
    )

    # Second-order statistics over the throws whose context matches the chosen filter.
    pos = idx
    src = pos - fl - 1
    o_src, m_src = opp[jnp.clip(src, 0, trials)], my[jnp.clip(src, 0, trials)]
    take = (
        (pos >= fl + 2) & (pos <= turn) & ((fo == 3) | (fo == o_src)) & ((fm == 3) | (fm == m_src))
    )
    e = pos[None, :] - lags[:, None] - 1  # [27, L+1]
    ok2 = take[None, :] & (e > 0)
    o2, m2 = _lagged(opp), _lagged(my)  # [27, L+1] hist[e] where e > 0 (static shifts, no gather)
    use2 = (best < 0.95) & (fl >= 0)
    # Only the cells the lookup reads are needed: count them directly (no table).
    o_c, m_c = o_ctx[:, None], m_ctx[:, None]  # [27, 1] the current context per lag
    nxt = jax.nn.one_hot(opp, 3, dtype=jnp.int32)  # [L+1, 3]
    masks = [ok2 & (o2 == o_c) & (m2 == m_c), ok2 & (m2 == m_c), ok2 & (o2 == o_c)]
    counts2 = jnp.stack([count_matmul(k, nxt) for k in masks], 1)
    w2 = jnp.where(((lags < turn)[:, None]) & use2, _relevance(counts2), -jnp.inf)
    meta2 = jnp.zeros(counts2.shape, jnp.int32)
    _, pr, pp, ps, _, _, _ = _pick(
        (counts2.reshape(-1, 3), meta2.reshape(-1, 3)),
        w2.reshape(-1),
        best,
        (pr, pp, ps, fo, fm, fl),
    )

    # Suggested action, then the gear.
    b0 = ps - pp
    action = jnp.where(pr - ps > b0, 1, 0)
    b1 = jnp.where(pr - ps > b0, pr - ps, b0)
    action = jnp.where(pp - pr > b1, 2, action)
    gear = jnp.where(gs[1] > gs[0], 1, 0)
    gear = jnp.where(gs[2] > gs[jnp.where(gs[1] > gs[0], 1, 0)], 2, gear)
    action = (action + gear) % 3

    # Bail-outs.
    tf = turn.astype(jnp.float32)
    bail_min = jnp.sqrt(tf) / jnp.float32(math.sqrt(3.0))
    bail_max = jnp.sqrt(tf) * jnp.float32(math.sqrt(2.0))
    bail = jnp.where(
        bail_min < bail_max, (bail_min + overall.astype(jnp.float32)) / (bail_min - bail_max), 0.0
    )
    local = (recent + BAIL_L_MIN) / BAIL_L_DIFF
    bail = jnp.clip(jnp.maximum(bail, local), 0.0, 1.0)
    coin = rand[0] < jnp.ceil(bail * jnp.float32(2**31)).astype(jnp.uint32)
    action = jnp.where(coin, biased_roshambo(rand[1], THIRD, THIRD), action)

    new = BoomState(stats, i32(overall), i32(gear), gs, recent)
    return i32(action), new
