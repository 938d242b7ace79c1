"""The 25 entrants of the RoShamBo competitions (24 from 1999, Greenberg from 2000) in JAX."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from marljax.envs.matrix.roshambo import greenberg, iocaine
from marljax.envs.matrix.roshambo.base import (
    PAPER,
    ROCK,
    SCISSORS,
    Bot,
    at,
    biased_roshambo,
    i32,
    last,
    rand_mod3,
    threshold,
    unit,
)

Array = jax.Array


# ----------------------------------------------------------------------------- Markov (Hlynka)


class MarkovState(NamedTuple):
    tally: Array  # [27, 3] int32 opponent's next move after each context
    wins: Array  # [] int32
    losses: Array  # [] int32


def markov_init(trials: int) -> MarkovState:
    return MarkovState(jnp.zeros((27, 3), jnp.int32), i32(0), i32(0))


def _markov_context(opp: Array, end: Array) -> Array:
    """The originals' context index of the five moves ending at `end`: NOT base 3 but
    `3 * (sum of the first four) + the fifth`, so contexts share rows (27 rows used of 243)."""
    first4 = at(opp, end - 4) + at(opp, end - 3) + at(opp, end - 2) + at(opp, end - 1)
    return 3 * first4 + at(opp, end)


def _markov_step(bail_at: int | None):
    def step(state: MarkovState, my, opp, rand):
        n = my[0]
        lo, lm = last(opp), last(my)
        won = (n > 0) & ((lo + 1) % 3 == lm)
        lost = (n > 0) & ~won & ((lo + 2) % 3 == lm)
        wins = state.wins + won
        losses = state.losses + lost
        ctx = _markov_context(opp, n - 1)
        add = jax.nn.one_hot(lo, 3, dtype=jnp.int32) * (n > 5)
        tally = state.tally.at[ctx].add(add)

        row = tally[_markov_context(opp, n)]
        total = row.sum()
        u = unit(rand[0])
        cum = jnp.cumsum(row).astype(jnp.float32) / jnp.maximum(total, 1).astype(jnp.float32)
        used_pick = jnp.where(u < cum[0], 1, jnp.where(u < cum[1], 2, jnp.where(u < cum[2], 0, 0)))
        r = rand[0]
        fresh_pick = jnp.where(
            r < threshold(0.33),
            1,
            jnp.where(r < threshold(0.33 + 0.33), 2, 0),  # 0 also past 0.99
        )
        chain = jnp.where(total > 0, used_pick, fresh_pick)
        bail = n <= 5
        if bail_at is not None:
            bail = bail | (wins - losses < bail_at)
        move = jnp.where(bail, biased_roshambo(rand[0], 0.33333, 0.33333), chain)
        return i32(move), MarkovState(tally, i32(wins), i32(losses))

    return step


# ----------------------------------------------------------------------------- Don Beal


class Mod1State(NamedTuple):
    c: Array  # [4, 4, 6] float32 opponent model by (my/opp last moves or "any" = 3)
    d: Array  # [4, 4, 6] float32 my model by (opp/my last moves or "any")


def mod1_init(trials: int) -> Mod1State:
    return Mod1State(jnp.zeros((4, 4, 6), jnp.float32), jnp.zeros((4, 4, 6), jnp.float32))


def _beal_best(row: Array) -> Array:
    """The original's `bm`: the move with the best expected score against counts `row[:3]`
    (first of ties)."""
    c0, c1, c2 = row[0], row[1], row[2]
    u = jnp.stack([c2 - c1, c0 - c2, c1 - c0])
    return jnp.argmax(u).astype(jnp.int32)


def _score(m: Array, o: Array) -> Array:
    return jnp.where(m == o, 0, jnp.where((o + 1) % 3 == m, 1, -1)).astype(jnp.float32)


def _mod1_update(table: Array, a1: Array, b1: Array, move: Array, o: Array, score_it, beat):
    """Update the four cells (a1, b1), (a1, any), (any, b1), (any, any) of a model."""
    for a, b in ((a1, b1), (a1, 3), (3, b1), (3, 3)):
        cell = table[a, b]
        bm = _beal_best(cell)
        bm = (bm + 1) % 3 if beat else bm
        scored = cell.at[4].add(_score(bm, o)).at[5].add(1.0)
        cell = jnp.where(score_it & (cell[3] > 0), scored, cell)
        cell = cell.at[move].add(1.0).at[3].add(1.0)
        table = table.at[a, b].set(cell)
    return table


def mod1bot_step(state: Mod1State, my, opp, rand):
    n = my[0]
    o, m = at(opp, n), at(my, n)
    o1, m1 = at(opp, n - 1), at(my, n - 1)
    c = _mod1_update(state.c, o1, m1, o, o, n > 2, beat=False)
    d = _mod1_update(state.d, m1, o1, m, o, n > 2, beat=True)
    c = jnp.where(n > 1, c, state.c)
    d = jnp.where(n > 1, d, state.d)
    fade = jnp.where(n > 50, jnp.float32(0.98), jnp.float32(1.0))
    c, d = c * fade, d * fade

    dcell = d[m, o]
    bm_d = (_beal_best(dcell) + 1) % 3
    qd = jnp.where(dcell[5] > 0, dcell[4] / dcell[5], 0.0)
    cells = jnp.stack([c[o, m], c[o, 3], c[3, m], c[3, 3]])
    qs = jnp.where(cells[:, 5] > 0, cells[:, 4] / cells[:, 5], 0.0)
    best = i32(0)
    q = qs[0]
    for i in (1, 2, 3):
        better = qs[i] > q
        best = jnp.where(better, i, best)
        q = jnp.where(better, qs[i], q)
    bm_c = _beal_best(cells[best])
    late = jnp.where((qd > q) & (qd > 0), bm_d, jnp.where(q > 0, bm_c, rand_mod3(rand[0])))
    move = jnp.where(n == 0, rand_mod3(rand[0]), jnp.where(n == 1, (o + 1) % 3, late))
    return i32(move), Mod1State(c, d)


class PredState(NamedTuple):
    c: Array  # [4, 4, 4] float32 counts of the opponent's move after (opp, my) last moves


def pred_init(trials: int) -> PredState:
    return PredState(jnp.zeros((4, 4, 4), jnp.float32))


def predbot_step(state: PredState, my, opp, rand):
    n = my[0]
    o, m = at(opp, n), at(my, n)
    o1, m1 = at(opp, n - 1), at(my, n - 1)
    c = state.c
    upd = c
    for a, b in ((o1, m1), (o1, 3), (3, m1), (3, 3)):
        upd = upd.at[a, b, o].add(1.0).at[a, b, 3].add(1.0)
    c = jnp.where(n > 1, upd, c) * jnp.float32(0.98)
    cells = jnp.stack([c[o, m], c[o, 3], c[3, m], c[3, 3]])
    qs = jnp.max(cells[:, :3], axis=1) / cells[:, 3]  # 0 / 0 is NaN, as in the original
    best = i32(0)
    q = qs[0]
    for i in (1, 2):
        better = qs[i] > q
        best = jnp.where(better, i, best)
        q = jnp.where(better, qs[i], q)
    best = jnp.where(qs[3] > q, 3, best)
    s = cells[best]
    # The original stores these double differences in ints (truncation towards zero).
    mr, mp, ms = (jnp.trunc(s[2] - s[1]), jnp.trunc(s[0] - s[2]), jnp.trunc(s[1] - s[0]))
    move = jnp.where(ms > jnp.maximum(mr, mp), SCISSORS, jnp.where(mp > mr, PAPER, ROCK))
    move = jnp.where(n == 0, rand_mod3(rand[0]), move)
    new = jnp.where(n == 0, jnp.zeros_like(c), c)
    return i32(move), PredState(new)


# ----------------------------------------------------------------------------- Robertot


def _robertot_votes() -> np.ndarray:
    """Robertot's `incvote` table (201 entries), computed in float32 like the original."""
    f32 = np.float32
    zero, steps, maxvote = 11.1, 200, 256
    out = []
    index = f32(f32(maxvote) / zero**5)
    for h in range(11, 0, -1):  # the original's int h starts at (int) 11.1
        out.append(-int(float(f32(f32(h**5) * index)) + 0.5))
    index = f32(f32(maxvote) / (steps - zero) ** 5)
    for h in range(11, steps + 1):
        out.append(int(float(f32(f32((h - zero) ** 5) * index)) + 0.5))
    return np.asarray(out, np.int32)


class RobertotState(NamedTuple):
    hits: Array  # [10, 3, 3, 3] int32 next opponent move after (opp, my) h + 1 throws back
    count: Array  # [10, 3, 3] int32 how often (opp, my) was seen h + 1 throws back


def robertot_init(trials: int) -> RobertotState:
    return RobertotState(jnp.zeros((10, 3, 3, 3), jnp.int32), jnp.zeros((10, 3, 3), jnp.int32))


def robertot_step(state: RobertotState, my, opp, rand):
    pos = opp[0]
    h = jnp.arange(10)
    back = pos - (h + 1)
    ok = (back > 0) & (pos >= 2)
    ob, mb = at(opp, back), at(my, back)
    count = state.count.at[h, ob, mb].add(ok.astype(jnp.int32))
    hits = state.hits.at[h, at(opp, pos), ob, mb].add(ok.astype(jnp.int32))

    now = pos - h
    on, mn = at(opp, now), at(my, now)
    cnt = count[h, on, mn]  # [10]
    use = (now > 0) & (cnt > 0)
    hit = hits[h, :, on, mn]  # [10, 3]
    index = (jnp.float32(200.0) * hit.astype(jnp.float32)) / jnp.maximum(cnt, 1)[:, None]
    incvote = jnp.asarray(_robertot_votes())
    vote = jnp.sum(jnp.where(use[:, None], incvote[index.astype(jnp.int32)], 0), axis=0)
    vote = vote - vote.min()
    top = (vote.max() * 3) // 4
    top = jnp.where(top == 0, 1, top)
    vote = vote // top
    r, p, s = vote[0], vote[1], vote[2]
    move = jnp.select(
        [
            (r > s) & (r > p),
            (s > p) & (s > r),
            (p > r) & (p > s),
            (r == p) & (p == s),
            r == p,
            p == s,
            s == r,
        ],
        [PAPER, ROCK, SCISSORS, rand_mod3(rand[0]), PAPER, SCISSORS, ROCK],
        rand_mod3(rand[0]),
    )
    move = jnp.where(pos >= 2, move, rand_mod3(rand[0]))
    return i32(move), RobertotState(hits, count)


def entrant_bots() -> list[Bot]:
    return [
        Bot("iocainebot", iocaine.init, iocaine.step, "Iocaine Powder", "Dan Egnor"),
        Bot(
            "mod1bot",
            mod1_init,
            mod1bot_step,
            "Simple Modeller",
            "Don Beal",
            "approximate",
            "float32 instead of double: near-ties of its faded scores can resolve differently, "
            "so moves may part from the original's after about 100 throws",
        ),
        Bot("predbot", pred_init, predbot_step, "Simple Predictor", "Don Beal"),
        Bot("robertot", robertot_init, robertot_step, "Robertot", "Andreas Junghanns"),
        Bot("markov5", markov_init, _markov_step(None), "Majikthise", "Markian Hlynka"),
        Bot("markovbails", markov_init, _markov_step(-50), "Vroomfondel", "Markian Hlynka"),
        Bot("greenberg", greenberg.init, greenberg.step, "Greenberg", "Andrzej Nagorko"),
    ]
