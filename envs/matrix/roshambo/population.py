"""Bots against bots: the population's cross-table as one compiled program.

Every match of a `[R, C]` table of bots runs `E` times, all in one `lax.scan` over throws. Each
bot's code runs once per throw on the batch of matches it plays in (as the row player over its
row, as the column player over its column), so no bot computes moves for matches it does not
play in, unlike a `lax.switch` under `vmap`, which evaluates every branch for every match.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp

from marljax.envs.matrix.roshambo.base import Bot, empty_history, num_random, record

Array = jax.Array


def _check_trials(trials: int) -> int:
    trials = int(trials)
    if trials < 1:
        raise ValueError(f"a match needs at least 1 throw, got trials={trials}")
    return trials


def crosstable_scores(
    row_bots: Sequence[Bot], col_bots: Sequence[Bot], key: Array, num_episodes: int, trials: int
) -> Array:
    """Scores (wins - losses, per match) of each row bot against each column bot.

    Args:
      row_bots: the `R` row bots.
      col_bots: the `C` column bots.
      key: PRNG key.
      num_episodes: matches `E` per pair.
      trials: throws per match (1000 in the competition and in Lanctot et al. 2023).

    Returns:
      `[R, C, E]` int32 the row bot's score in each match.
    """
    row_bots, col_bots = tuple(row_bots), tuple(col_bots)
    if not row_bots or not col_bots:
        raise ValueError("a cross-table needs at least one row bot and one column bot")
    if int(num_episodes) < 1:
        raise ValueError(f"num_episodes must be >= 1, got {num_episodes}")
    program = _crosstable_program(row_bots, col_bots, int(num_episodes), _check_trials(trials))
    return program(key)


@functools.lru_cache(maxsize=16)
def _crosstable_program(row_bots, col_bots, num_episodes, trials):
    R, C, E = len(row_bots), len(col_bots), num_episodes

    def batched_init(bot, shape):
        state = bot.init(trials)
        return jax.tree.map(lambda x: jnp.broadcast_to(x, (*shape, *jnp.shape(x))), state)

    def batched_step(bot, state, my, opp, rand):
        step = bot.step
        for _ in range(my.ndim - 1):
            step = jax.vmap(step)
        return step(state, my, opp, rand)

    def run(key):
        h = jnp.broadcast_to(empty_history(trials), (R, C, E, trials + 1))
        carry = (
            tuple(batched_init(b, (C, E)) for b in row_bots),
            tuple(batched_init(b, (R, E)) for b in col_bots),
            h,  # row player's own moves
            h,  # column player's own moves
            jnp.zeros((R, C, E), jnp.int32),
        )

        def body(carry, key_t):
            row_states, col_states, h_row, h_col, score = carry
            k = num_random(row_bots + col_bots)
            bits = jax.random.bits(key_t, (2, R, C, E, k), jnp.uint32) >> 1
            row_moves, new_row = [], []
            for r, bot in enumerate(row_bots):
                m, s = batched_step(bot, row_states[r], h_row[r], h_col[r], bits[0, r])
                row_moves.append(m)
                new_row.append(s)
            col_moves, new_col = [], []
            for c, bot in enumerate(col_bots):
                m, s = batched_step(bot, col_states[c], h_col[:, c], h_row[:, c], bits[1, :, c])
                col_moves.append(m)
                new_col.append(s)
            a = jnp.stack(row_moves)  # [R, C, E]
            b = jnp.stack(col_moves, axis=1)  # [R, C, E]
            d = (a - b) % 3
            score = score + (d == 1).astype(jnp.int32) - (d == 2).astype(jnp.int32)
            rec = jax.vmap(jax.vmap(jax.vmap(record)))
            return (tuple(new_row), tuple(new_col), rec(h_row, a), rec(h_col, b), score), None

        carry, _ = jax.lax.scan(body, carry, jax.random.split(key, trials))
        return carry[-1]

    return jax.jit(run)
