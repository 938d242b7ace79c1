"""A catalogue of normal-form payoff tables, as `[A, N, ..., N]` float32 tensors.

Convention: `payoffs[i, a_0, a_1, ..., a_{A-1}]` is the payoff to agent `i` when agent `j` plays
action `a_j`. For two-player games agent 0 is the row player and agent 1 the column player. In the
social dilemmas action 0 is the cooperative action (cooperate, stag, swerve, contribute).

Every entry is a function returning a fresh `jax.Array`, so importing this module allocates nothing
on the device. `GAMES` maps the names used by the registry (`make_matrix_game(game=...)`) to
builders `num_agents -> payoffs`; `game_payoffs(name, num_agents)` looks one up.
"""

from __future__ import annotations

import difflib
import itertools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

Array = jax.Array

# ---------------------------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------------------------


def bimatrix(row: npt.ArrayLike, col: npt.ArrayLike) -> Array:
    """Two-player payoff tensor from the row and column players' tables.

    Args:
      row: `[N, N]` payoff to agent 0 (the row player), indexed `[a_0, a_1]`.
      col: `[N, N]` payoff to agent 1 (the column player), indexed `[a_0, a_1]` as well.

    Returns:
      `[2, N, N]` float32 payoff tensor.
    """
    row = jnp.asarray(row, jnp.float32)
    col = jnp.asarray(col, jnp.float32)
    if row.ndim != 2 or row.shape[0] != row.shape[1] or row.shape != col.shape:
        raise ValueError(
            f"bimatrix needs two square tables of one shape, got {row.shape}, {col.shape}"
        )
    return jnp.stack([row, col])


def symmetric(row: npt.ArrayLike) -> Array:
    """Symmetric two-player game: agent 1's table is the transpose of agent 0's.

    Args:
      row: `[N, N]` payoff to the row player, `row[own action, other's action]`.

    Returns:
      `[2, N, N]` float32 payoff tensor.
    """
    row = jnp.asarray(row, jnp.float32)
    return bimatrix(row, row.T)


def zero_sum(row: npt.ArrayLike) -> Array:
    """Two-player zero-sum game: agent 1 receives the negative of agent 0's payoff.

    Args:
      row: `[N, N]` payoff to the row player.

    Returns:
      `[2, N, N]` float32 payoff tensor.
    """
    row = jnp.asarray(row, jnp.float32)
    return bimatrix(row, -row)


def common_payoff(table: npt.ArrayLike) -> Array:
    """Common-payoff (fully cooperative) game: every agent receives `table[joint action]`.

    Args:
      table: `[N, ..., N]` (one axis per agent) shared payoff; its number of axes is `A`.

    Returns:
      `[A, N, ..., N]` float32 payoff tensor.
    """
    table = jnp.asarray(table, jnp.float32)
    if table.ndim < 1 or len(set(table.shape)) != 1:
        raise ValueError(f"common_payoff needs a table with equal axes, got shape {table.shape}")
    return jnp.broadcast_to(table, (table.ndim, *table.shape))


def from_function(fn: Callable[[Array], Array], num_agents: int, num_actions: int) -> Array:
    """N-player payoff tensor from a payoff function of the joint action.

    `fn` is evaluated (vectorised with `jax.vmap`) on every one of the `N**A` joint actions.

    Args:
      fn: traceable function mapping a joint action `[A]` int32 to payoffs `[A]`.
      num_agents: number of agents `A`.
      num_actions: number of actions `N` of every agent.

    Returns:
      `[A, N, ..., N]` float32 payoff tensor.
    """
    entries = num_actions**num_agents
    if entries * num_agents > 2**26:  # 256 MiB of float32 payoffs, built in a Python list first
        count = f"{entries:,}" if entries < 10**15 else f"about 10^{int(math.log10(entries))}"
        raise ValueError(
            f"the payoff tensor of num_agents={num_agents} x {num_actions} actions has "
            f"{num_actions}^{num_agents} = {count} joint actions; too many to enumerate "
            "(use fewer agents, or a social/* env, which computes payoffs per step)"
        )
    joint = np.array(list(itertools.product(range(num_actions), repeat=num_agents)), np.int32)
    values = jax.vmap(fn)(jnp.asarray(joint)).astype(jnp.float32)  # [N**A, A]
    if values.shape != (joint.shape[0], num_agents):
        raise ValueError(f"fn must return [{num_agents}] payoffs, got shape {values.shape[1:]}")
    return jnp.moveaxis(values, -1, 0).reshape((num_agents,) + (num_actions,) * num_agents)


# ---------------------------------------------------------------------------------------------
# Two-player general-sum and zero-sum games
# ---------------------------------------------------------------------------------------------


def prisoners_dilemma(r: float = 3.0, s: float = 0.0, t: float = 5.0, p: float = 1.0) -> Array:
    """Prisoner's Dilemma; action 0 = cooperate, 1 = defect.

    Row player's table `[[R, S], [T, P]]`, symmetric. Defaults are Axelrod's tournament values
    R=3 (reward), S=0 (sucker), T=5 (temptation), P=1 (punishment), with T > R > P > S and
    2R > T + S.

    Reference: R. Axelrod, *The Evolution of Cooperation*, Basic Books, 1984 (Axelrod & Hamilton,
    Science 211, 1981).

    Returns:
      `[2, 2, 2]` float32 payoff tensor.
    """
    return symmetric([[r, s], [t, p]])


def stag_hunt() -> Array:
    """Stag Hunt; action 0 = stag, 1 = hare.

    Row player's table `[[2, 0], [1, 1]]`, symmetric: (stag, stag) is payoff-dominant, (hare, hare)
    is risk-dominant.

    Reference: B. Skyrms, *The Stag Hunt and the Evolution of Social Structure*, 2004; values as in
    OpenSpiel's `matrix_sh` (Lanctot et al. 2019).

    Returns:
      `[2, 2, 2]` float32 payoff tensor.
    """
    return symmetric([[2.0, 0.0], [1.0, 1.0]])


def chicken() -> Array:
    """Chicken (hawk-dove); action 0 = swerve ("chicken"), 1 = go straight ("dare").

    Row player's table `[[3, 1], [4, 0]]`, symmetric: the pure equilibria are the two
    asymmetric outcomes where exactly one player swerves.

    Reference: A. Rapoport & A. M. Chammah, "The game of chicken", American Behavioral Scientist
    10(3), 1966; values as in OpenSpiel's `matrix_cd` (with the actions in the order swerve, dare).

    Returns:
      `[2, 2, 2]` float32 payoff tensor.
    """
    return symmetric([[3.0, 1.0], [4.0, 0.0]])


def battle_of_the_sexes() -> Array:
    """Battle of the Sexes (Bach or Stravinsky); action 0 = agent 0's favourite venue.

    Agent 0 gets `[[3, 0], [0, 2]]`, agent 1 gets `[[2, 0], [0, 3]]`: both want to coordinate but
    disagree on where.

    Reference: R. D. Luce & H. Raiffa, *Games and Decisions*, 1957; values as in OpenSpiel's
    `matrix_bos`.

    Returns:
      `[2, 2, 2]` float32 payoff tensor.
    """
    return bimatrix([[3.0, 0.0], [0.0, 2.0]], [[2.0, 0.0], [0.0, 3.0]])


def matching_pennies() -> Array:
    """Matching Pennies; action 0 = heads, 1 = tails. Zero-sum.

    Agent 0 (the matcher) gets `[[1, -1], [-1, 1]]`, agent 1 the negative. The unique equilibrium
    is uniform play.

    Reference: J. von Neumann & O. Morgenstern, *Theory of Games and Economic Behavior*, 1944;
    values as in OpenSpiel's `matrix_mp`.

    Returns:
      `[2, 2, 2]` float32 payoff tensor.
    """
    return zero_sum([[1.0, -1.0], [-1.0, 1.0]])


def rock_paper_scissors() -> Array:
    """Rock-Paper-Scissors; action 0 = rock, 1 = paper, 2 = scissors. Zero-sum.

    Win +1, loss -1, draw 0: agent 0 gets `[[0, -1, 1], [1, 0, -1], [-1, 1, 0]]`.

    Reference: OpenSpiel's `matrix_rps` (Lanctot et al., "OpenSpiel", arXiv:1908.09453, 2019).

    Returns:
      `[2, 3, 3]` float32 payoff tensor.
    """
    return zero_sum([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])


# ---------------------------------------------------------------------------------------------
# Common-payoff coordination games (cooperative MARL benchmarks)
# ---------------------------------------------------------------------------------------------


def climbing_game() -> Array:
    """The climbing game (common payoff): `[[11, -30, 0], [-30, 7, 0], [0, 6, 5]]`.

    The optimum (0, 0) is surrounded by heavy miscoordination penalties, so independent learners
    tend to settle on the (2, 2) or (1, 1) outcomes.

    Reference: C. Claus & C. Boutilier, "The dynamics of reinforcement learning in cooperative
    multiagent systems", AAAI 1998.

    Returns:
      `[2, 3, 3]` float32 payoff tensor.
    """
    return common_payoff([[11.0, -30.0, 0.0], [-30.0, 7.0, 0.0], [0.0, 6.0, 5.0]])


def penalty_game(k: float = 0.0) -> Array:
    """The penalty game (common payoff): `[[-k, 0, 10], [0, 2, 0], [10, 0, -k]]`, `k >= 0`.

    Two optimal equilibria (0, 2) and (2, 0) and a safe suboptimal one (1, 1); miscoordinating on
    the optima costs `k`. Commonly run with k in {0, 25, 50, 75, 100}.

    Reference: C. Claus & C. Boutilier, "The dynamics of reinforcement learning in cooperative
    multiagent systems", AAAI 1998.

    Returns:
      `[2, 3, 3]` float32 payoff tensor.
    """
    k = float(k)
    return common_payoff([[-k, 0.0, 10.0], [0.0, 2.0, 0.0], [10.0, 0.0, -k]])


def nonmonotonic_game() -> Array:
    """A non-monotonic one-step game (common payoff): `[[8, -12, -12], [-12, 0, 0], [-12, 0, 0]]`.

    The optimum (0, 0) cannot be represented by a monotonic (QMIX) or additive (VDN) mixing of
    per-agent utilities trained on uniform data, which then prefer the safe zero-payoff block.

    Reference: K. Son et al., "QTRAN: Learning to factorize with transformation for cooperative
    multi-agent reinforcement learning", ICML 2019; T. Rashid et al., "Weighted QMIX:
    Expanding monotonic value function factorisation for deep multi-agent reinforcement
    learning", NeurIPS 2020.

    Returns:
      `[2, 3, 3]` float32 payoff tensor.
    """
    return common_payoff([[8.0, -12.0, -12.0], [-12.0, 0.0, 0.0], [-12.0, 0.0, 0.0]])


# ---------------------------------------------------------------------------------------------
# N-player games
# ---------------------------------------------------------------------------------------------


def public_goods(num_agents: int = 3, multiplier: float = 1.5) -> Array:
    """Linear public goods game (an N-player Prisoner's Dilemma); action 0 = contribute.

    Each agent holds an endowment of 1 and either contributes it (action 0) or keeps it
    (action 1). The pot is multiplied by `multiplier` and shared equally, so agent `i` gets
    `(1 - c_i) + multiplier * sum_j c_j / A` with `c_j = 1` if agent `j` contributes. For
    `1 < multiplier < A` keeping is dominant while full contribution is efficient.

    Reference: J. O. Ledyard, "Public goods: a survey of experimental research", in *Handbook of
    Experimental Economics*, 1995.

    Args:
      num_agents: number of agents `A` (at least 2).
      multiplier: return on the common pot.

    Returns:
      `[A, 2, ..., 2]` float32 payoff tensor.
    """
    if num_agents < 2:
        raise ValueError(f"public_goods needs num_agents >= 2, got {num_agents}")

    def payoff(joint: Array) -> Array:
        contrib = (joint == 0).astype(jnp.float32)
        return (1.0 - contrib) + multiplier * contrib.sum() / num_agents

    return from_function(payoff, num_agents, 2)


# ---------------------------------------------------------------------------------------------
# Name lookup
# ---------------------------------------------------------------------------------------------


def _two_player(build: Callable[[], Array], name: str) -> Callable[[int], Array]:
    def builder(num_agents: int = 2) -> Array:
        if num_agents != 2:
            raise ValueError(f"game {name!r} is a two-player game, got num_agents={num_agents}")
        return build()

    return builder


GAMES: dict[str, Callable[[int], Array]] = {
    "prisoners_dilemma": _two_player(prisoners_dilemma, "prisoners_dilemma"),
    "stag_hunt": _two_player(stag_hunt, "stag_hunt"),
    "chicken": _two_player(chicken, "chicken"),
    "battle_of_sexes": _two_player(battle_of_the_sexes, "battle_of_sexes"),
    "matching_pennies": _two_player(matching_pennies, "matching_pennies"),
    "rock_paper_scissors": _two_player(rock_paper_scissors, "rock_paper_scissors"),
    "climbing": _two_player(climbing_game, "climbing"),
    **{
        f"penalty_k{k}": _two_player(lambda k=k: penalty_game(k), f"penalty_k{k}")
        for k in (0, 25, 50, 75, 100)
    },
    "nonmonotonic": _two_player(nonmonotonic_game, "nonmonotonic"),
    "public_goods": lambda num_agents=3: public_goods(num_agents),
}
"""Game name -> builder `num_agents -> [A, N, ..., N]` payoffs (two-player games reject A != 2)."""


def game_payoffs(name: str, num_agents: int = 2) -> Array:
    """The payoff tensor of a catalogue game by name.

    Args:
      name: a key of `GAMES`, e.g. `"prisoners_dilemma"` or `"penalty_k50"`.
      num_agents: number of agents `A` (only N-player games accept values other than 2).

    Returns:
      `[A, N, ..., N]` float32 payoff tensor.

    Raises:
      KeyError: unknown name (lists close matches).
      ValueError: `num_agents` unsupported by the game.
    """
    if name not in GAMES:
        close = difflib.get_close_matches(name, list(GAMES), n=3, cutoff=0.4)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise KeyError(f"Unknown matrix game {name!r}.{hint} Known games: {', '.join(GAMES)}.")
    return GAMES[name](num_agents)
