"""Scripted strategies for repeated matrix games (fixed co-players and opponents).

A `Strategy` is a pair of pure functions, usable inside `jit` and `vmap`:

    init(key)                                            -> strat_state
    act(strat_state, last_actions, last_rewards, me, key) -> (action, strat_state)

`last_actions` is the previous joint action `[A]` int32 (-1 before the first round),
`last_rewards` the previous rewards `[A]` float32 and `me` the (static) index of the agent the
strategy plays. Action 0 is "cooperate" and 1 "defect" for the Prisoner's Dilemma family. For more
than two players, "the other player" of the two-player definitions means "any other player":
tit-for-tat plays the largest action any other agent played (with two players: copies the other).

Reference: R. Axelrod, *The Evolution of Cooperation*, 1984 (tit-for-tat, grim trigger);
M. Nowak & K. Sigmund, "A strategy of win-stay, lose-shift that outperforms tit-for-tat in the
Prisoner's Dilemma game", Nature 364, 1993 (Pavlov / WSLS).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

Array = jax.Array
PRNGKey = jax.Array

COOPERATE = 0
DEFECT = 1


class Strategy(NamedTuple):
    """A scripted player as pure functions (see the module docstring).

    Attributes:
      init: `init(key) -> strat_state`, called at every episode start.
      act: `act(strat_state, last_actions [A] int32, last_rewards [A] float32, me: int, key)
        -> (action [] int32, strat_state)`.
    """

    init: Callable[[PRNGKey], Any]
    act: Callable[[Any, Array, Array, int, PRNGKey], tuple[Array, Any]]


def _no_state(key: PRNGKey) -> tuple:
    return ()


def _others(last_actions: Array, me: int) -> Array:
    """`[A]` bool, true for every agent except `me`."""
    return jnp.arange(last_actions.shape[0]) != me


def fixed_action(action: int) -> Strategy:
    """Always plays `action`.

    Args:
      action: the action to play every round.

    Returns:
      A stateless `Strategy`.
    """

    def act(state, last_actions, last_rewards, me, key):
        return jnp.int32(action), state

    return Strategy(_no_state, act)


def always_cooperate() -> Strategy:
    """Always plays action 0 (cooperate). Returns a stateless `Strategy`."""
    return fixed_action(COOPERATE)


def always_defect() -> Strategy:
    """Always plays action 1 (defect). Returns a stateless `Strategy`."""
    return fixed_action(DEFECT)


def tit_for_tat() -> Strategy:
    """Tit-for-tat: cooperate first, then copy the other player's last action.

    With more than two players it plays the largest action of any other player (defects if
    anyone defected).

    Reference: A. Rapoport's entry in R. Axelrod, "Effective choice in the Prisoner's Dilemma",
    Journal of Conflict Resolution 24(1), 1980.

    Returns:
      A stateless `Strategy`.
    """

    def act(state, last_actions, last_rewards, me, key):
        others = jnp.where(_others(last_actions, me), last_actions, -1)
        return jnp.maximum(jnp.max(others), COOPERATE).astype(jnp.int32), state

    return Strategy(_no_state, act)


def grim_trigger() -> Strategy:
    """Grim trigger: cooperate until any other player defects once, then defect forever.

    The strategy state is a `[]` bool "triggered" flag, cleared by `init` at each episode start.

    Reference: J. W. Friedman, "A non-cooperative equilibrium for supergames", Review of Economic
    Studies 38(1), 1971.

    Returns:
      A `Strategy` with state `[]` bool.
    """

    def init(key):
        return jnp.array(False)

    def act(state, last_actions, last_rewards, me, key):
        defected = jnp.any(_others(last_actions, me) & (last_actions > COOPERATE))
        triggered = jnp.logical_or(state, defected)
        return jnp.where(triggered, DEFECT, COOPERATE).astype(jnp.int32), triggered

    return Strategy(init, act)


def win_stay_lose_shift(aspiration: float | None = None) -> Strategy:
    """Win-stay, lose-shift (Pavlov) for two-action games.

    Cooperates in the first round; afterwards repeats its own last action after a "win" and
    switches after a "loss". By default a win is a round in which every other player cooperated
    (in the Prisoner's Dilemma: payoff R or T), so after (C,C) it cooperates, after (C,D) defects,
    after (D,C) defects and after (D,D) cooperates. With `aspiration` set, a win is
    `last_rewards[me] >= aspiration` instead (e.g. 3 for Axelrod's PD).

    Reference: M. Nowak & K. Sigmund, Nature 364, 1993.

    Args:
      aspiration: optional payoff threshold defining a win.

    Returns:
      A stateless `Strategy`.
    """

    def act(state, last_actions, last_rewards, me, key):
        own = last_actions[me]
        if aspiration is None:
            win = jnp.all(~_others(last_actions, me) | (last_actions == COOPERATE))
        else:
            win = last_rewards[me] >= aspiration
        action = jnp.where(win, own, 1 - own)
        return jnp.where(own < 0, COOPERATE, action).astype(jnp.int32), state

    return Strategy(_no_state, act)


def uniform_random(num_actions: int) -> Strategy:
    """Plays a uniformly random action each round.

    Args:
      num_actions: number of actions `N`.

    Returns:
      A stateless `Strategy` (it uses the `key` passed to `act`).
    """

    def act(state, last_actions, last_rewards, me, key):
        return jax.random.randint(key, (), 0, num_actions, dtype=jnp.int32), state

    return Strategy(_no_state, act)


def cycle(num_actions: int) -> Strategy:
    """Plays 0, 1, 2, ..., N-1, 0, 1, ... (e.g. rock, paper, scissors, rock, ...).

    The strategy state is the `[]` int32 round counter, reset by `init`.

    Args:
      num_actions: number of actions `N`.

    Returns:
      A `Strategy` with state `[]` int32.
    """

    def init(key):
        return jnp.int32(0)

    def act(state, last_actions, last_rewards, me, key):
        return (state % num_actions).astype(jnp.int32), state + 1

    return Strategy(init, act)


def random_memory_one() -> Strategy:
    """A tabular memory-one policy drawn afresh at every episode start (two-action games).

    `init` draws five cooperation probabilities uniformly in `[0, 1]`: for the first round and
    after each previous joint outcome (own, other) = CC, CD, DC, DD; `act` samples from the
    one its history selects. A pool of such co-players is the diverse, simple "tabular"
    opponents of the in-context co-player setting (Weis et al. 2026): each episode meets a new
    policy that the learner has to identify from the interaction itself.

    Returns:
      A `Strategy` with state `[5]` float32.
    """

    def init(key):
        return jax.random.uniform(key, (5,))

    def act(state, last_actions, last_rewards, me, key):
        own = last_actions[me]
        other = jnp.max(jnp.where(_others(last_actions, me), last_actions, -1))
        index = jnp.where(own < 0, 0, 1 + 2 * jnp.clip(own, 0, 1) + jnp.clip(other, 0, 1))
        cooperate = jax.random.uniform(key) < state[index]
        return jnp.where(cooperate, COOPERATE, DEFECT).astype(jnp.int32), state

    return Strategy(init, act)


STRATEGIES: dict[str, Callable[[int], Strategy]] = {
    "always_cooperate": lambda num_actions: always_cooperate(),
    "always_defect": lambda num_actions: always_defect(),
    "tit_for_tat": lambda num_actions: tit_for_tat(),
    "grim_trigger": lambda num_actions: grim_trigger(),
    "win_stay_lose_shift": lambda num_actions: win_stay_lose_shift(),
    "random": uniform_random,
    "cycle": cycle,
    "random_memory_one": lambda num_actions: random_memory_one(),
}
"""Strategy name -> factory `num_actions -> Strategy`."""


def get_strategy(name: str, num_actions: int = 2) -> Strategy:
    """A scripted strategy by name.

    Args:
      name: a key of `STRATEGIES`, e.g. `"tit_for_tat"`.
      num_actions: number of actions `N` of the game (used by `"random"` and `"cycle"`).

    Returns:
      The `Strategy`.

    Raises:
      KeyError: unknown name (lists close matches).
    """
    if name not in STRATEGIES:
        close = difflib.get_close_matches(name, list(STRATEGIES), n=3, cutoff=0.4)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise KeyError(f"Unknown strategy {name!r}.{hint} Known: {', '.join(STRATEGIES)}.")
    return STRATEGIES[name](num_actions)
