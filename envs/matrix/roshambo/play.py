"""Driving bots: one throw, a match against fixed moves, a match between two bots."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from marljax.envs.matrix.roshambo.base import Bot, draw_random, empty_history, record

Array = jax.Array


def play_sequence(bot: Bot, opp_moves: Array, rand: Array) -> Array:
    """The bot's moves against a fixed opponent sequence, with given random draws.

    The match length is `T = opp_moves.shape[0]` (the bot's `trials`). Used for parity tests:
    with the draws the original read from `random()`, a faithful port plays the same moves.

    Args:
      bot: the bot.
      opp_moves: `[T]` int32 the opponent's moves.
      rand: `[T, K]` uint32 draws on `[0, 2**31)`, row `t` for throw `t`, `K >= bot.num_random`.

    Returns:
      `[T]` int32 the bot's moves.
    """
    trials = opp_moves.shape[0]

    def body(carry, inputs):
        state, my, opp = carry
        opp_t, rand_t = inputs
        move, state = bot.step(state, my, opp, rand_t)
        return (state, record(my, move), record(opp, opp_t)), move

    h = empty_history(trials)
    carry = (bot.init(trials), h, h)
    _, moves = jax.lax.scan(body, carry, (jnp.asarray(opp_moves, jnp.int32), rand))
    return moves


def play_match(bot_a: Bot, bot_b: Bot, key: Array, trials: int) -> tuple[Array, Array]:
    """A match of `trials` throws between two bots (jittable; `trials` static).

    Returns:
      `([] int32 A's score = wins - losses, [T, 2] int32 moves of A and B)`.
    """

    def body(carry, key_t):
        sa, sb, ha, hb = carry
        key_a, key_b = jax.random.split(key_t)
        a, sa = bot_a.step(sa, ha, hb, draw_random(key_a, bot_a.num_random))
        b, sb = bot_b.step(sb, hb, ha, draw_random(key_b, bot_b.num_random))
        return (sa, sb, record(ha, a), record(hb, b)), jnp.stack([a, b])

    h = empty_history(trials)
    carry = (bot_a.init(trials), bot_b.init(trials), h, h)
    _, moves = jax.lax.scan(body, carry, jax.random.split(key, trials))
    d = (moves[:, 0] - moves[:, 1]) % 3
    score = jnp.sum(d == 1) - jnp.sum(d == 2)
    return score.astype(jnp.int32), moves


def init_states(bots: tuple[Bot, ...], trials: int) -> tuple:
    """Every bot's initial state (a tuple, one entry per bot), for `switch_step`."""
    return tuple(b.init(trials) for b in bots)


def switch_step(
    bots: tuple[Bot, ...], index: Array, states: tuple, my: Array, opp: Array, rand: Array
) -> tuple[Array, tuple]:
    """Step bot `bots[index]` (traced index) on its entry of `states`; the others are unchanged.

    Under `vmap` over `index`, `lax.switch` evaluates every bot for every element: fine for
    training on a random bot per episode; per-bot evaluation should group matches by bot
    (`population.crosstable_scores`).
    """

    def branch(j):
        def run(states, my, opp, rand):
            move, s = bots[j].step(states[j], my, opp, rand)
            return jnp.asarray(move, jnp.int32), states[:j] + (s,) + states[j + 1 :]

        return run

    if len(bots) == 1:
        return branch(0)(states, my, opp, rand)
    return jax.lax.switch(index, [branch(j) for j in range(len(bots))], states, my, opp, rand)


def step_each(
    bots: tuple[Bot, ...], states: tuple, my: Array, opp: Array, rand: Array
) -> tuple[Array, tuple]:
    """Step every bot once, bot `i` on its own match `i` (a loop over bots: no switch, no select).

    Each bot's code runs once per call, on its own slice, so under `vmap` the cost is the sum of
    the bots' costs (where `switch_step` under `vmap` pays that sum for every element).

    Args:
      bots: the `P` bots.
      states: their states, one entry per bot (`init_states`).
      my: `[P, L + 1]` int32 each bot's own history.
      opp: `[P, L + 1]` int32 each bot's opponent's history.
      rand: `[P, K]` uint32 draws, row `i` for bot `i` (`K >= num_random(bots)`).

    Returns:
      `([P] int32 moves, the new states)`.
    """
    moves, new = [], []
    for i, bot in enumerate(bots):
        move, s = bot.step(states[i], my[i], opp[i], rand[i])
        moves.append(jnp.asarray(move, jnp.int32))
        new.append(s)
    return jnp.stack(moves), tuple(new)
