"""Repeated Rock-Paper-Scissors against a population of scripted RoShamBo bots.

The population of Lanctot et al. (2023) is the 43 bots of the International RoShamBo Programming
Competitions; their JAX ports live in `marljax.envs.matrix.roshambo` (see its table for what is
ported and how faithfully). `BOT_NAMES` is the default population: the ported competition bots,
played in matches of `DEFAULT_ROUNDS = 1000` throws as in the paper.

This module adds a few classic heuristics that are NOT competition entries (`EXTRA_NAMES`; each
is a `roshambo.Bot` with `competition=False`), useful as extra opponents or for teaching:

==================  =======================================================
name                behaviour
==================  =======================================================
paperbot            always paper
scissorsbot         always scissors
biased532           random 50 % rock, 30 % paper, 20 % scissors
mirrorbot           copy the opponent's last move (random first)
beatcopybot         beat the move that beats my own last move
freqbot_w20         beat the opponent's most frequent move over its last 20
wsls                win: stay; draw or loss: play what beats their last
markov1             predict the opponent from counts after the last joint move, beat it
markov2             ... after the last two joint moves
iocaine_lite        a small ensemble of 18 predictor x rotation strategies, after Iocaine
                    Powder (the real one is `iocainebot`)
==================  =======================================================

The extras are written on one shared summary of the match (`BotState`, `bot_update`,
`bot_act`, dispatching on `BotParams.kind`); `extra_bot(name)` wraps one as a `roshambo.Bot`.

`RPSPopulation` is the env: one learner against a bot drawn per episode from a population of
`roshambo.Bot`s (competition bots and extras alike).

Actions: 0 = rock, 1 = paper, 2 = scissors (as `payoffs.rock_paper_scissors`), so `(a + 1) % 3`
beats `a`.

References:
  M. Lanctot, J. Schultz, N. Burch, M. O. Smith, D. Hennes, T. Anthony, J. Perolat,
  "Population-based Evaluation in Repeated Rock-Paper-Scissors as a Benchmark for Multiagent
  Reinforcement Learning", TMLR 2023 (arXiv:2303.03196).
  D. Billings, "The First International RoShamBo Programming Competition", ICGA Journal 23(1),
  2000; D. Egnor, "Iocaine Powder", ICGA Journal 23(1), 2000.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core import spaces
from marljax.core.types import Array, Environment, PRNGKey, TimeStep
from marljax.core.wrappers import Wrapper
from marljax.envs.matrix import roshambo
from marljax.envs.matrix.matrix_game import MatrixGame, MatrixGameParams
from marljax.envs.matrix.payoffs import rock_paper_scissors
from marljax.envs.matrix.roshambo.base import num_random
from marljax.envs.matrix.roshambo.play import init_states, switch_step
from marljax.envs.matrix.roshambo.tables import pi_digits as _pi_digits
from marljax.envs.matrix.strategies import Strategy

ROCK, PAPER, SCISSORS = 0, 1, 2
NUM_ACTIONS = 3
#: match length of an `RPSPopulation` episode (`params.num_rounds`), as in Lanctot et al. 2023.
DEFAULT_ROUNDS = 1000
#: longest window of recent opponent moves a bot may read (static; `BotParams.window <= WINDOW`).
WINDOW = 32
#: number of iocaine-lite candidate strategies: 6 predictors x 3 rotations.
NUM_CANDIDATES = 18
#: length of each row of the sequence table (the period of a sequence bot is at most this).
SEQ_LEN = 1000

# Bot kinds (the `lax.switch` branch index).
CONSTANT, MIXED, SEQUENCE, REACT, SWITCH, FREQUENCY = 0, 1, 2, 3, 4, 5
FLAT, ANTIFLAT, FOXTROT, WSLS, MARKOV, IOCAINE = 6, 7, 8, 9, 10, 11
# Rows of the sequence table.
SEQ_ROTATE, SEQ_PI, SEQ_DEBRUIJN = 0, 1, 2


def beats(action: Array) -> Array:
    """The move that beats `action` (`(a + 1) % 3`)."""
    return (jnp.asarray(action) + 1) % NUM_ACTIONS


def rps_payoff(mine: Array, theirs: Array) -> Array:
    """Payoff of playing `mine` against `theirs`: +1 win, 0 draw, -1 loss (broadcasts)."""
    d = (jnp.asarray(mine) - jnp.asarray(theirs)) % NUM_ACTIONS
    return jnp.where(d == 1, 1.0, jnp.where(d == 2, -1.0, 0.0)).astype(jnp.float32)


# ----------------------------------------------------------------------------- params and state


@struct.dataclass
class BotParams:
    """Which bot, as numbers (stack these along a leading `[P]` axis for a population).

    Attributes:
      kind: `[]` int32 branch index (`CONSTANT`, `MIXED`, ... `IOCAINE`).
      action: `[]` int32 constant move (`CONSTANT`) or first move (`REACT`; -1 = random).
      probs: `[3]` float32 mixed strategy (`MIXED`).
      ref_self: `[]` bool, `REACT` reacts to my own last move instead of the opponent's.
      offset: `[]` int32, `REACT` plays `(reference + offset) % 3`.
      window: `[]` int32, `FREQUENCY` counts the last `window` opponent moves (0 = all).
      order: `[]` int32, `MARKOV` context length in joint moves (1 or 2).
      seq_id: `[]` int32 row of the sequence table (`SEQUENCE`).
      repeat_prob: `[]` float32, `SWITCH` repeats its last move with this probability.
      decay: `[]` float32, `IOCAINE` score decay per round.
    """

    kind: Array
    action: Array
    probs: Array
    ref_self: Array
    offset: Array
    window: Array
    order: Array
    seq_id: Array
    repeat_prob: Array
    decay: Array


def make_bot_params(
    kind: int,
    action: int = 0,
    probs: Sequence[float] = (1 / 3, 1 / 3, 1 / 3),
    ref_self: bool = False,
    offset: int = 0,
    window: int = 0,
    order: int = 1,
    seq_id: int = 0,
    repeat_prob: float = 0.0,
    decay: float = 0.9,
) -> BotParams:
    """Build one bot's `BotParams` with the right dtypes (see `BotParams` for the fields)."""
    if not 0 <= window <= WINDOW:
        raise ValueError(f"window must be in [0, {WINDOW}], got {window}")
    if order not in (1, 2):
        raise ValueError(f"order must be 1 or 2, got {order}")
    return BotParams(
        kind=np.int32(kind),
        action=np.int32(action),
        probs=np.asarray(probs, np.float32),
        ref_self=np.bool_(ref_self),
        offset=np.int32(offset),
        window=np.int32(window),
        order=np.int32(order),
        seq_id=np.int32(seq_id),
        repeat_prob=np.float32(repeat_prob),
        decay=np.float32(decay),
    )


@struct.dataclass
class BotState:
    """A bot's summary of the match so far (the same structure for every bot).

    Attributes:
      t: `[]` int32 rounds played.
      my_last: `[]` int32 my previous move (-1 before the first round).
      opp_last: `[]` int32 the opponent's previous move (-1 before the first round).
      my_counts: `[3]` float32 how often I played each move.
      opp_counts: `[3]` float32 how often the opponent played each move.
      opp_recent: `[WINDOW]` int32 ring buffer, round `r`'s opponent move at `r % WINDOW`.
      joint_hist: `[2]` int32 the last two joint moves `3 * mine + theirs`, newest first (-1 none).
      markov1: `[9, 3]` float32 counts of the opponent's move after each joint move.
      markov2: `[81, 3]` float32 counts of the opponent's move after each pair of joint moves.
      scores: `[NUM_CANDIDATES]` float32 decayed scores of the iocaine-lite candidates.
      total: `[]` float32 my cumulative payoff.
    """

    t: Array
    my_last: Array
    opp_last: Array
    my_counts: Array
    opp_counts: Array
    opp_recent: Array
    joint_hist: Array
    markov1: Array
    markov2: Array
    scores: Array
    total: Array


def bot_init() -> BotState:
    """The empty history (every bot starts a match from it)."""
    return BotState(
        t=jnp.int32(0),
        my_last=jnp.int32(-1),
        opp_last=jnp.int32(-1),
        my_counts=jnp.zeros((NUM_ACTIONS,), jnp.float32),
        opp_counts=jnp.zeros((NUM_ACTIONS,), jnp.float32),
        opp_recent=jnp.full((WINDOW,), -1, jnp.int32),
        joint_hist=jnp.full((2,), -1, jnp.int32),
        markov1=jnp.zeros((9, NUM_ACTIONS), jnp.float32),
        markov2=jnp.zeros((81, NUM_ACTIONS), jnp.float32),
        scores=jnp.zeros((NUM_CANDIDATES,), jnp.float32),
        total=jnp.float32(0.0),
    )


# ----------------------------------------------------------------------------- sequences


def _de_bruijn(k: int, n: int) -> list[int]:
    """The lexicographically least de Bruijn sequence B(k, n) (length k**n), via Lyndon words."""
    a = [0] * (k * n)
    seq: list[int] = []

    def extend(t: int, p: int) -> None:
        if t > n:
            if n % p == 0:
                seq.extend(a[1 : p + 1])
            return
        a[t] = a[t - p]
        extend(t + 1, p)
        for j in range(a[t - p] + 1, k):
            a[t] = j
            extend(t + 1, t)

    extend(1, 1)
    return seq


@functools.lru_cache(maxsize=1)
def _sequence_table() -> tuple[np.ndarray, np.ndarray]:
    """`([S, SEQ_LEN] int32 moves, [S] int32 periods)` of the sequence bots."""
    rotate = [0, 1, 2]
    digits = [int(c) for c in _pi_digits(1400) if c != "0"][:SEQ_LEN]
    pi = [d % 3 for d in digits]
    debruijn = _de_bruijn(3, 4)
    rows = [rotate, pi, debruijn]
    table = np.zeros((len(rows), SEQ_LEN), np.int32)
    for i, row in enumerate(rows):
        table[i, : len(row)] = row
    return table, np.asarray([len(r) for r in rows], np.int32)


# ----------------------------------------------------------------------------- helpers


# The bots draw all their randomness from one `[NUM_UNIFORMS]` vector of uniforms per round
# (`bot_act` makes it from the key), so a population under `vmap` hashes the key once, not once
# per branch: `u[0]` samples a move, `u[1:4]` break ties.
NUM_UNIFORMS = 4


def _sample(u: Array, probs: Array) -> Array:
    """A move drawn from `probs` `[3]` (unnormalised) by inverting the CDF at `u[0]`."""
    cdf = jnp.cumsum(probs) / jnp.sum(probs)
    return jnp.minimum(jnp.sum(u[0] >= cdf[:-1]), NUM_ACTIONS - 1).astype(jnp.int32)


def _random(u: Array) -> Array:
    return _sample(u, jnp.ones((NUM_ACTIONS,), jnp.float32))


def _argmax_random_ties(u: Array, values: Array) -> Array:
    """Index of the maximum of `values` `[3]`, ties broken uniformly at random by `u[1:4]`."""
    best = values >= values.max()
    return jnp.argmax(jnp.where(best, u[1:4], -1.0)).astype(jnp.int32)


def _row(table: Array, index: Array) -> Array:
    """`table[index]` as a one-hot contraction (cheaper than a gather under `vmap`)."""
    return jax.nn.one_hot(index, table.shape[0], dtype=table.dtype) @ table


def _beat_most_frequent(counts: Array) -> Array:
    """freqbot's rule: paper if rock is strictly most frequent, else scissors if paper > scissors,
    else rock (the original's tie-breaking)."""
    r, p, s = counts[0], counts[1], counts[2]
    return jnp.where((r > p) & (r > s), PAPER, jnp.where(p > s, SCISSORS, ROCK)).astype(jnp.int32)


def window_counts(state: BotState, window: Array) -> Array:
    """`[3]` counts of the opponent's moves over its last `window` moves (0 = whole match)."""
    idx = jnp.arange(WINDOW)
    age = (state.t - 1 - idx) % WINDOW  # rounds since slot idx was written
    w = jnp.where(window > 0, window, WINDOW)
    valid = (age < w) & (age < state.t) & (state.opp_recent >= 0)
    onehot = jax.nn.one_hot(state.opp_recent, NUM_ACTIONS, dtype=jnp.float32)
    windowed = jnp.sum(onehot * valid[:, None], axis=0)
    return jnp.where(window > 0, windowed, state.opp_counts)


def _markov_row(state: BotState, order: Array) -> tuple[Array, Array]:
    """`([3] counts of the opponent's next move in the current context, [] bool context seen)`."""
    h0, h1 = state.joint_hist[0], state.joint_hist[1]
    row1 = _row(state.markov1, jnp.maximum(h0, 0))
    row2 = _row(state.markov2, jnp.maximum(h1, 0) * 9 + jnp.maximum(h0, 0))
    row = jnp.where(order == 1, row1, row2)
    known = jnp.where(order == 1, h0 >= 0, h1 >= 0) & (row.sum() > 0)
    return row, known


def _candidates(state: BotState) -> Array:
    """`[NUM_CANDIDATES]` int32 moves of the iocaine-lite strategies in the current state.

    Six predictors each give a move to counter: four predictions of the opponent's next move
    (its most frequent move, its last move, the order-1 and order-2 pattern predictions), countered
    by playing what beats them, and two predictions of MY next move (my most frequent, my last),
    which an opponent would beat, countered by playing what beats that. Each is used at three
    rotations `+0, +1, +2` (Iocaine Powder's "sicilian reasoning": the opponent may be second-
    guessing us one or two levels deep).
    """
    last_opp = jnp.maximum(state.opp_last, 0)
    last_me = jnp.maximum(state.my_last, 0)
    m1 = jnp.argmax(_row(state.markov1, jnp.maximum(state.joint_hist[0], 0)))
    m2_ctx = jnp.maximum(state.joint_hist[1], 0) * 9 + jnp.maximum(state.joint_hist[0], 0)
    m2 = jnp.argmax(_row(state.markov2, m2_ctx))
    opp_pred = jnp.stack([jnp.argmax(state.opp_counts), last_opp, m1, m2])
    my_pred = jnp.stack([jnp.argmax(state.my_counts), last_me])
    base = jnp.concatenate([opp_pred + 1, my_pred + 2]).astype(jnp.int32)  # [6]
    return ((base[:, None] + jnp.arange(3)[None, :]) % NUM_ACTIONS).reshape(-1)


# ----------------------------------------------------------------------------- the bots


def _constant(p: BotParams, s: BotState, u: Array) -> Array:
    return p.action.astype(jnp.int32)


def _mixed(p: BotParams, s: BotState, u: Array) -> Array:
    return _sample(u, p.probs)


def _sequence(p: BotParams, s: BotState, u: Array) -> Array:
    table, periods = _sequence_table()
    row = _row(jnp.asarray(table), p.seq_id)  # [SEQ_LEN]
    period = _row(jnp.asarray(periods), p.seq_id)
    return _row(row, s.t % period).astype(jnp.int32)


def _react(p: BotParams, s: BotState, u: Array) -> Array:
    ref = jnp.where(p.ref_self, s.my_last, s.opp_last)
    first = jnp.where(p.action >= 0, p.action, _random(u))
    return jnp.where(s.t == 0, first, (ref + p.offset) % NUM_ACTIONS).astype(jnp.int32)


def _switch(p: BotParams, s: BotState, u: Array) -> Array:
    same = jnp.arange(NUM_ACTIONS) == s.my_last
    probs = jnp.where(same, p.repeat_prob, (1.0 - p.repeat_prob) / 2.0)
    probs = jnp.where(s.t == 0, jnp.full((NUM_ACTIONS,), 1.0 / 3.0), probs)
    return _sample(u, probs)


def _frequency(p: BotParams, s: BotState, u: Array) -> Array:
    return _beat_most_frequent(window_counts(s, p.window))


def _flat(p: BotParams, s: BotState, u: Array) -> Array:
    c = s.my_counts
    is_min = c <= c.min()
    n_min = is_min.sum()
    probs = jnp.where(
        n_min == 1,
        jnp.where(is_min, 0.8, 0.1),
        jnp.where(n_min == 2, jnp.where(is_min, 0.45, 0.1), 1.0 / 3.0),
    )
    return _sample(u, probs)


def _antiflat(p: BotParams, s: BotState, u: Array) -> Array:
    c = s.opp_counts
    is_min = c <= c.min()
    n_min = is_min.sum()
    unique_min = jnp.argmax(is_min)
    not_min = jnp.argmin(is_min)  # the one move that is not a minimum when two tie
    # One least-used move m: a flatbot plays it 80 %, so play what beats it. Two tied, x and
    # x + 1: play x + 1 (beats x, draws x + 1), i.e. the not-minimum move + 2.
    action = jnp.where(n_min == 1, unique_min + 1, not_min + 2) % NUM_ACTIONS
    return jnp.where(n_min == 3, _random(u), action).astype(jnp.int32)


def _foxtrot(p: BotParams, s: BotState, u: Array) -> Array:
    turn = s.t + 1  # 1-based round number, as in the original
    return jnp.where(turn % 2 == 1, _random(u), (s.my_last + turn) % NUM_ACTIONS).astype(jnp.int32)


def _wsls(p: BotParams, s: BotState, u: Array) -> Array:
    won = rps_payoff(s.my_last, s.opp_last) > 0
    action = jnp.where(won, s.my_last, beats(s.opp_last))
    return jnp.where(s.t == 0, _random(u), action).astype(jnp.int32)


def _markov(p: BotParams, s: BotState, u: Array) -> Array:
    row, known = _markov_row(s, p.order)
    prediction = _argmax_random_ties(u, row)
    return jnp.where(known, beats(prediction), _random(u)).astype(jnp.int32)


def _iocaine(p: BotParams, s: BotState, u: Array) -> Array:
    best = jnp.argmax(s.scores)
    confident = (s.t > 0) & (s.scores[best] > 0)
    return jnp.where(confident, _candidates(s)[best], _random(u)).astype(jnp.int32)


_BRANCHES = (
    _constant,
    _mixed,
    _sequence,
    _react,
    _switch,
    _frequency,
    _flat,
    _antiflat,
    _foxtrot,
    _wsls,
    _markov,
    _iocaine,
)


def bot_act(params: BotParams, state: BotState, key: PRNGKey) -> Array:
    """The bot's next move given its summary of the match so far.

    Args:
      params: one bot's `BotParams` (no leading axis; `vmap` over a population).
      state: its `BotState`.
      key: PRNG key (only the random bots read it).

    Returns:
      `[]` int32 move in `{0, 1, 2}`.
    """
    u = jax.random.uniform(key, (NUM_UNIFORMS,))
    return jax.lax.switch(params.kind, _BRANCHES, params, state, u)


def bot_update(params: BotParams, state: BotState, my_action: Array, opp_action: Array) -> BotState:
    """Fold one round `(my_action, opp_action)` into the bot's summary.

    Args:
      params: the bot's `BotParams` (its `decay` weighs the iocaine-lite scores).
      state: the summary before the round.
      my_action: `[]` int the bot's move this round.
      opp_action: `[]` int the opponent's move this round.

    Returns:
      The summary after the round.
    """
    me = jnp.asarray(my_action, jnp.int32)
    opp = jnp.asarray(opp_action, jnp.int32)
    h0, h1 = state.joint_hist[0], state.joint_hist[1]
    opp_onehot = jax.nn.one_hot(opp, NUM_ACTIONS, dtype=jnp.float32)
    # Dense one-hot outer products instead of scatters (cheap tables, fast to compile).
    ctx1 = jax.nn.one_hot(h0, 9, dtype=jnp.float32)  # all zeros before the first round
    ctx2 = jax.nn.one_hot(jnp.where(h1 >= 0, h1 * 9 + h0, -1), 81, dtype=jnp.float32)
    markov1 = state.markov1 + ctx1[:, None] * opp_onehot[None, :]
    markov2 = state.markov2 + ctx2[:, None] * opp_onehot[None, :]
    scores = params.decay * state.scores + rps_payoff(_candidates(state), opp)
    return BotState(
        t=state.t + 1,
        my_last=me,
        opp_last=opp,
        my_counts=state.my_counts + jax.nn.one_hot(me, NUM_ACTIONS, dtype=jnp.float32),
        opp_counts=state.opp_counts + opp_onehot,
        opp_recent=jnp.where(jnp.arange(WINDOW) == state.t % WINDOW, opp, state.opp_recent),
        joint_hist=jnp.stack([me * NUM_ACTIONS + opp, h0]),
        markov1=markov1,
        markov2=markov2,
        scores=scores.astype(jnp.float32),
        total=state.total + rps_payoff(me, opp),
    )


def replay_history(
    params: BotParams, my_moves: Array, opp_moves: Array, length: Array | None = None
) -> BotState:
    """The bot's summary after a given history (for tests and analysis).

    Args:
      params: the bot's `BotParams`.
      my_moves: `[T]` int the bot's moves in rounds `0 .. T-1`.
      opp_moves: `[T]` int the opponent's moves.
      length: optional `[]` int number of leading rounds to use (the rest is padding), so that
        histories of different lengths share one compiled program.

    Returns:
      The `BotState` after the rounds; `bot_act(params, state, key)` is the next move.
    """
    my_moves = jnp.asarray(my_moves, jnp.int32)
    opp_moves = jnp.asarray(opp_moves, jnp.int32)
    chex.assert_equal_shape([my_moves, opp_moves])
    length = my_moves.shape[0] if length is None else length

    def body(state, inputs):
        t, me, opp = inputs
        new = bot_update(params, state, me, opp)
        return jax.tree.map(lambda a, b: jnp.where(t < length, a, b), new, state), None

    steps = jnp.arange(my_moves.shape[0])
    state, _ = jax.lax.scan(body, bot_init(), (steps, my_moves, opp_moves))
    return state


# ----------------------------------------------------------------------------- the population

#: name -> (params, one-line description) of the extra (non-competition) bots.
EXTRA_BOTS: dict[str, tuple[BotParams, str]] = {
    "paperbot": (make_bot_params(CONSTANT, action=PAPER), "always paper"),
    "scissorsbot": (make_bot_params(CONSTANT, action=SCISSORS), "always scissors"),
    "biased532": (make_bot_params(MIXED, probs=(0.5, 0.3, 0.2)), "random 50/30/20"),
    "mirrorbot": (make_bot_params(REACT, action=-1, offset=0), "copy opponent's last move"),
    "beatcopybot": (
        make_bot_params(REACT, action=-1, ref_self=True, offset=2),
        "beat the beater of my last move",
    ),
    "freqbot_w20": (make_bot_params(FREQUENCY, window=20), "freqbot over the last 20 moves"),
    "wsls": (make_bot_params(WSLS), "win-stay, else beat their last"),
    "markov1": (make_bot_params(MARKOV, order=1), "pattern match, 1 joint move"),
    "markov2": (make_bot_params(MARKOV, order=2), "pattern match, 2 joint moves"),
    "iocaine_lite": (make_bot_params(IOCAINE, decay=0.9), "ensemble of 18 predictors"),
}

#: the extra bots, in table order.
EXTRA_NAMES: tuple[str, ...] = tuple(EXTRA_BOTS)


def _act_uniform(params: BotParams, state: BotState, u: Array) -> Array:
    return jax.lax.switch(params.kind, _BRANCHES, params, state, u)


def extra_bot(name: str) -> roshambo.Bot:
    """An extra bot as a `roshambo.Bot` (its state is the shared `BotState` summary)."""
    if name not in EXTRA_BOTS:
        roshambo.get_bot(name, EXTRAS)  # raises with close matches
    params, description = EXTRA_BOTS[name]

    def init(trials: int) -> BotState:
        return bot_init()

    def step(state, my, opp, rand):
        n = my[0]
        new = bot_update(params, state, my[n], opp[n])
        state = jax.tree.map(lambda a, b: jnp.where(n > 0, a, b), new, state)
        u = rand[:NUM_UNIFORMS].astype(jnp.float32) / jnp.float32(roshambo.MAXRANDOM)
        return _act_uniform(params, state, u), state

    return roshambo.Bot(
        name, init, step, description, "marljax", "-", "not a competition entry", False
    )


#: the extra bots as `roshambo.Bot`s.
EXTRAS: dict[str, roshambo.Bot] = {}
EXTRAS.update({n: extra_bot(n) for n in EXTRA_NAMES})

#: the default population: the ported competition bots (`roshambo.BOTS`), in table order.
BOT_NAMES: tuple[str, ...] = tuple(roshambo.BOTS)
#: every bot this module can play: competition bots, then extras.
ALL_BOT_NAMES: tuple[str, ...] = BOT_NAMES + EXTRA_NAMES


def get_bot(name: str) -> roshambo.Bot:
    """A competition bot or an extra by name (unknown names list close matches)."""
    return roshambo.get_bot(name, EXTRAS)


def get_bots(names: Sequence[str] | None = None) -> tuple[roshambo.Bot, ...]:
    """Bots by name (default `BOT_NAMES`); an empty population is refused."""
    return roshambo.get_bots(BOT_NAMES if names is None else names, EXTRAS)


def bot_params(name: str) -> BotParams:
    """An extra bot's `BotParams` by name (a key of `EXTRA_BOTS`)."""
    if name not in EXTRA_BOTS:
        roshambo.get_bot(name, EXTRAS)
        raise KeyError(f"{name!r} is a competition bot, not an extra; use get_bot({name!r})")
    return EXTRA_BOTS[name][0]


def play_match(bot_a: str, bot_b: str, key: PRNGKey, num_rounds: int) -> tuple[Array, Array]:
    """One match of `num_rounds` throws between two bots by name (`roshambo.play_match`).

    Returns:
      `([] int32 A's score = wins - losses, [T, 2] int32 moves of A and B)`.
    """
    if int(num_rounds) < 1:
        raise ValueError(f"a match needs at least 1 throw, got num_rounds={num_rounds}")
    return roshambo.play_match(get_bot(bot_a), get_bot(bot_b), key, int(num_rounds))


# ----------------------------------------------------------------------------- Strategy adapter


def bot_strategy(
    names: str | Sequence[str],
    weights: Sequence[float] | None = None,
    num_throws: int | None = None,
) -> Strategy:
    """A bot (or a random draw from several, per episode) as a `strategies.Strategy`.

    Plugs the bots into `ScriptedCoPlayers`, e.g. a learner against Iocaine Powder::

        game = MatrixGame(rock_paper_scissors(), num_rounds=1000)
        env = ScriptedCoPlayers(game, {1: bot_strategy("iocainebot")})

    With several names, `init` draws one bot per episode with probabilities `weights` (uniform by
    default). For per-bot evaluation with traced weights, use `RPSPopulation` instead.

    Args:
      names: a bot name or a sequence of names (`ALL_BOT_NAMES`).
      weights: optional `[P]` non-negative weights of the draw.
      num_throws: history capacity = the bots' match length (static; default `DEFAULT_ROUNDS`).

    Returns:
      A `Strategy` whose state is `(bot index [] int32, bot states, my [L+1], opp [L+1])`.
    """
    bots = get_bots([names] if isinstance(names, str) else names)
    trials = check_throws(DEFAULT_ROUNDS if num_throws is None else num_throws)
    w = np.ones(len(bots)) if weights is None else np.asarray(weights, np.float64)
    if w.shape != (len(bots),) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"weights must be {len(bots)} non-negative numbers, not all 0; got {w}")
    logits = np.log(np.maximum(w / w.sum(), 1e-30)).astype(np.float32)

    def init(key):
        idx = jax.random.categorical(key, jnp.asarray(logits)).astype(jnp.int32)
        h = roshambo.empty_history(trials)
        return idx, init_states(bots, trials), h, h

    def act(state, last_actions, last_rewards, me, key):
        if last_actions.shape[0] != 2:
            raise ValueError("RPS bots play two-player games")
        idx, states, my, opp = state
        mine, theirs = last_actions[me], last_actions[1 - me]
        started = mine >= 0
        my = jnp.where(started, roshambo.record(my, mine), my)
        opp = jnp.where(started, roshambo.record(opp, theirs), opp)
        rand = roshambo.draw_random(key, num_random(bots))
        move, states = switch_step(bots, idx, states, my, opp, rand)
        return move, (idx, states, my, opp)

    return Strategy(init, act)


def check_throws(num_throws: int) -> int:
    """`num_throws` as an int, refused unless >= 1 (a match needs a throw)."""
    n = int(num_throws)
    if n < 1:
        raise ValueError(f"a match needs at least 1 throw, got {num_throws}")
    return n


def check_rounds(params: MatrixGameParams, num_throws: int) -> None:
    """Refuse `params.num_rounds` outside `[1, num_throws]` (the bots' histories hold
    `num_throws` throws)."""
    rounds = np.asarray(params.num_rounds)
    if np.any(rounds < 1) or np.any(rounds > num_throws):
        raise ValueError(f"num_rounds must be in [1, num_throws={num_throws}], got {rounds}")


# ----------------------------------------------------------------------------- the env


def init_population(
    wrapper: Wrapper, env: Environment, bots: Sequence[str] | None, num_throws: int | None
) -> None:
    """Check the inner game and set a bot env's `_bots`, `bots`, `num_throws` and `num_bots`
    (shared by `RPSPopulation` and `RPSLeague`).

    Raises:
      ValueError: `env` is not a 2-player, 3-action game; unknown bot names (with the close
        matches); an empty population; a match length < 1.
    """
    if env.num_agents != 2 or getattr(env, "num_actions", None) != NUM_ACTIONS:
        raise ValueError(f"{type(wrapper).__name__} needs a 2-player, 3-action game, got {env!r}")
    wrapper._bots = get_bots(bots)
    wrapper.bots = tuple(b.name for b in wrapper._bots)
    wrapper.num_throws = check_throws(DEFAULT_ROUNDS if num_throws is None else num_throws)
    wrapper.num_bots = len(wrapper.bots)


@struct.dataclass
class RPSPopulationParams(MatrixGameParams):
    """`MatrixGameParams` plus the population draw.

    Attributes:
      bot_weights: `[P]` float32 non-negative weights; each episode's bot is drawn from them.
      fixed_bot: `[]` int32, when >= 0 every episode plays this bot and `bot_weights` is
        ignored. With `RPSPopulation.per_bot_view()` it is read from the params, shared by all
        episodes of a batch, so only that bot's code runs (per-bot evaluation maps over it
        with `lax.map`).
    """

    bot_weights: Array = struct.field(default_factory=lambda: jnp.ones((1,), jnp.float32))
    fixed_bot: Array = struct.field(default_factory=lambda: jnp.int32(-1))


@struct.dataclass
class RPSPopulationState:
    """State of `RPSPopulation`."""

    inner: Any  # the MatrixGame's state
    bot_id: Array  # [] int32 index of this episode's bot in the population
    bots: tuple  # every population bot's state (only this episode's bot's entry moves)
    my: Array  # [L + 1] int32 the bot's moves, element 0 = throws so far (roshambo layout)
    opp: Array  # [L + 1] int32 the learner's moves


class RPSPopulation(Wrapper):
    """Repeated RPS in which agent 1 is a scripted bot drawn from a population at every reset.

    The wrapped env has ONE agent, the learner (agent 0 of the inner game): `obs`, `reward` and
    `action_mask` are its rows of the inner game's (the one-hot previous joint action, own move
    first, and a first-round flag), `global_state` is the inner game's. The bot is not observed:
    the agent must tell the bots apart from their play, so use a recurrent policy. Extras:
    `"coplayer_actions"` `[1]` int32 (the bot's move, -1 at reset) and `"bot_id"` `[]` int32.

    Params: `RPSPopulationParams` = the inner `MatrixGameParams` (`num_rounds`, `payoffs`, ...)
    plus `bot_weights` `[P]` (default uniform). `num_rounds` may not exceed `num_throws`.

    Args:
      env: a two-player, three-action `MatrixGame` (rock-paper-scissors).
      bots: names of the population's bots (`ALL_BOT_NAMES`; default all of `BOT_NAMES`).
      num_throws: the bots' match length `L` (static: the size of the histories they read,
        and the `trials` some of them plan with); default `DEFAULT_ROUNDS` = 1000.
    """

    def __init__(
        self, env: Environment, bots: Sequence[str] | None = None, num_throws: int | None = None
    ):
        super().__init__(env)
        init_population(self, env, bots, num_throws)
        self.num_agents = 1
        self._index_from_params = False
        self._view = None

    def per_bot_view(self) -> RPSPopulation:
        """The same env, stepping the bot `params.fixed_bot` (which must be >= 0) instead of the
        episode's drawn bot: for evaluation, where a batch of episodes plays one bot and only
        that bot's code should run (`population_returns` maps over bots with it)."""
        if self._view is None:
            view = copy.copy(self)
            view._index_from_params = True
            view._view = view
            self._view = view
        return self._view

    @property
    def name(self) -> str:
        return f"RPSPopulation<{self._env.name}, {self.num_bots} bots>"

    @property
    def agent_types(self) -> Array:
        return jnp.zeros((1,), jnp.int32)

    def default_params(self) -> RPSPopulationParams:
        inner = self._env.default_params()
        fields = {k: getattr(inner, k) for k in inner.__dataclass_fields__}
        weights = jnp.full((self.num_bots,), 1.0 / self.num_bots, jnp.float32)
        return RPSPopulationParams(**fields, bot_weights=weights)

    def validate_params(self, params: RPSPopulationParams) -> None:
        w = np.asarray(params.bot_weights)
        if w.shape != (self.num_bots,):
            raise ValueError(f"bot_weights must have shape ({self.num_bots},), got {w.shape}")
        if np.any(w < 0) or w.sum() <= 0:
            raise ValueError(f"bot_weights must be >= 0 and not all 0, got {w}")
        fixed = np.asarray(params.fixed_bot)
        if np.any(fixed < -1) or np.any(fixed >= self.num_bots):
            raise ValueError(f"fixed_bot must be -1 or a bot index < {self.num_bots}, got {fixed}")
        check_rounds(params, self.num_throws)

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        return {"num_rounds": (1, 6), "bot_weights": (0.01, 1.0)}

    def one_hot_params(self, params: RPSPopulationParams | None = None) -> RPSPopulationParams:
        """`[P]` stacked params, the `i`-th playing only bot `i` (`lax.map` over these to
        evaluate; `vmap` works too but runs every bot's code for every element)."""
        params = self.default_params() if params is None else params
        eye = jnp.eye(self.num_bots, dtype=jnp.float32)
        stacked = jax.tree.map(
            lambda x: jnp.broadcast_to(x, (self.num_bots, *jnp.shape(x))), params
        )
        return stacked.replace(
            bot_weights=eye, fixed_bot=jnp.arange(self.num_bots, dtype=jnp.int32)
        )

    def _slice(self, ts: TimeStep, bot_action: Array, bot_id: Array) -> TimeStep:
        return ts.replace(
            obs=ts.obs[:1],
            reward=ts.reward[:1],
            action_mask=ts.action_mask[:1],
            extras={**ts.extras, "coplayer_actions": bot_action[None], "bot_id": bot_id},
        )

    def reset(self, key: PRNGKey, params: RPSPopulationParams):
        key_env, key_bot = jax.random.split(key)
        inner, ts = self._env.reset(key_env, params)
        w = jnp.asarray(params.bot_weights, jnp.float32)
        logits = jnp.log(jnp.maximum(w / jnp.maximum(w.sum(), 1e-30), 1e-30))
        drawn = jax.random.categorical(key_bot, logits).astype(jnp.int32)
        fixed = jnp.asarray(params.fixed_bot, jnp.int32)
        bot_id = jnp.where(fixed >= 0, fixed, drawn)
        h = roshambo.empty_history(self.num_throws)
        states = init_states(self._bots, self.num_throws)
        state = RPSPopulationState(inner=inner, bot_id=bot_id, bots=states, my=h, opp=h)
        return state, self._slice(ts, jnp.int32(-1), bot_id)

    def step(self, key: PRNGKey, state: RPSPopulationState, actions: Array, params):
        key_env, key_bot = jax.random.split(key)
        chex.assert_shape(actions, (1,))
        learner = jnp.clip(jnp.asarray(actions, jnp.int32)[0], 0, NUM_ACTIONS - 1)
        rand = roshambo.draw_random(key_bot, num_random(self._bots))
        # The per-bot view reads the bot from the params, which a batch of episodes shares, so
        # `lax.switch` runs that bot only; drawn bots differ per episode, and under `vmap` the
        # switch becomes a select over every bot.
        index = params.fixed_bot if self._index_from_params else state.bot_id
        bot, states = switch_step(
            self._bots, jnp.asarray(index, jnp.int32), state.bots, state.my, state.opp, rand
        )
        inner, ts = self._env.step(key_env, state.inner, jnp.stack([learner, bot]), params)
        new = RPSPopulationState(
            inner=inner,
            bot_id=state.bot_id,
            bots=states,
            my=roshambo.record(state.my, bot),
            opp=roshambo.record(state.opp, learner),
        )
        return new, self._slice(ts, bot, state.bot_id)

    def observation_space(self, params) -> spaces.Box:
        return self._env.observation_space(params)

    def action_space(self, params) -> spaces.Discrete:
        return self._env.action_space(params)


def make_rps_population(
    bots: Sequence[str] | None = None, num_throws: int | None = None
) -> RPSPopulation:
    """Repeated RPS against a bot population, in matches of `DEFAULT_ROUNDS` = 1000 throws.

    Args:
      bots: names of the population (`ALL_BOT_NAMES`; default all `BOT_NAMES`).
      num_throws: match length (static; default 1000, as in Lanctot et al. 2023). Shorter
        matches (e.g. 50) also work as `params.num_rounds` <= `num_throws`, but bots plan with
        `num_throws`; build with `num_throws=50` for bots that know the match is 50 throws.

    Returns:
      An `RPSPopulation` around `MatrixGame(rock_paper_scissors())`.
    """
    n = check_throws(DEFAULT_ROUNDS if num_throws is None else num_throws)
    game = MatrixGame(rock_paper_scissors(), num_rounds=n, name="rock_paper_scissors")
    return RPSPopulation(game, bots, n)


__all__ = [
    "ALL_BOT_NAMES",
    "BOT_NAMES",
    "DEFAULT_ROUNDS",
    "EXTRAS",
    "EXTRA_BOTS",
    "EXTRA_NAMES",
    "NUM_CANDIDATES",
    "PAPER",
    "ROCK",
    "SCISSORS",
    "WINDOW",
    "BotParams",
    "BotState",
    "RPSPopulation",
    "RPSPopulationParams",
    "RPSPopulationState",
    "beats",
    "bot_act",
    "bot_init",
    "bot_params",
    "bot_strategy",
    "bot_update",
    "check_rounds",
    "check_throws",
    "extra_bot",
    "get_bot",
    "get_bots",
    "init_population",
    "make_bot_params",
    "make_rps_population",
    "play_match",
    "replay_history",
    "rps_payoff",
    "window_counts",
]
