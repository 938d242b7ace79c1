"""Matrix (normal-form) and repeated games.

Importing this package registers the `matrix/*` ids; build them with `marljax.make`::

    env, params = marljax.make("matrix/ipd-v0")                       # 50-round IPD, 2 learners
    env, params = marljax.make("matrix/ipd-v0", coplayer="grim_trigger", num_rounds=10)
    env, params = marljax.make("matrix/penalty_k50-v0")
    env, params = marljax.make("matrix/rrps_population-v0", bots=("rockbot", "copybot"))

Static options of every `matrix/*` id except `two_step` are the arguments of `make_matrix_game`
(`game`, `num_agents`, `coplayer`); `num_rounds`, `max_steps` and `payoffs` are traced params.
"""

from __future__ import annotations

from marljax.core.registry import register
from marljax.core.types import Environment
from marljax.envs.matrix import payoffs
from marljax.envs.matrix.coplayers import CoPlayerState, ScriptedCoPlayers
from marljax.envs.matrix.matrix_game import (
    MatrixGame,
    MatrixGameParams,
    MatrixGameState,
    payoff_of,
)
from marljax.envs.matrix.payoffs import (
    GAMES,
    battle_of_the_sexes,
    bimatrix,
    chicken,
    climbing_game,
    common_payoff,
    from_function,
    game_payoffs,
    matching_pennies,
    nonmonotonic_game,
    penalty_game,
    prisoners_dilemma,
    public_goods,
    rock_paper_scissors,
    stag_hunt,
    symmetric,
    zero_sum,
)
from marljax.envs.matrix.rps_bots import (
    ALL_BOT_NAMES,
    BOT_NAMES,
    EXTRA_NAMES,
    BotParams,
    BotState,
    RPSPopulation,
    RPSPopulationParams,
    bot_act,
    bot_init,
    bot_params,
    bot_strategy,
    bot_update,
    get_bot,
    get_bots,
    make_rps_population,
    play_match,
)
from marljax.envs.matrix.rps_league import RPSLeague, make_rps_league
from marljax.envs.matrix.strategies import (
    STRATEGIES,
    Strategy,
    always_cooperate,
    always_defect,
    cycle,
    fixed_action,
    get_strategy,
    grim_trigger,
    tit_for_tat,
    uniform_random,
    win_stay_lose_shift,
)
from marljax.envs.matrix.two_step import TwoStepGame, TwoStepParams, TwoStepState


def make_matrix_game(
    game: str = "prisoners_dilemma", num_agents: int = 2, coplayer: str | None = None
) -> Environment:
    """Build a catalogue matrix game, optionally against scripted co-players.

    Args:
      game: a key of `payoffs.GAMES` (e.g. `"prisoners_dilemma"`, `"penalty_k50"`).
      num_agents: number of agents `A` (two-player games accept only 2).
      coplayer: optional key of `strategies.STRATEGIES` (e.g. `"tit_for_tat"`); if given, agents
        `1 .. A-1` play this scripted strategy and agent 0 is the only learner.

    Returns:
      A `MatrixGame` (one-shot by default; the registry sets `num_rounds`), or a
      `ScriptedCoPlayers` wrapping it when `coplayer` is given.
    """
    env = MatrixGame(game_payoffs(game, num_agents), name=game)
    if coplayer is not None:
        strategy = get_strategy(coplayer, env.num_actions)
        env = ScriptedCoPlayers(env, {i: strategy for i in range(1, env.num_agents)})
    return env


_REPEATED_ROUNDS = 50

# Reference returns per episode (undiscounted, mean over the learning agents: the unit of the
# `episode_return` metric) under each id's defaults, read off the payoff tables in `payoffs`.
_PENALTY_REFS = {"optimum (0, 2) or (2, 0)": 10.0, "safe equilibrium (1, 1)": 2.0}
_REFERENCES = {
    "prisoners_dilemma": {"mutual cooperation": 3.0, "mutual defection (equilibrium)": 1.0},
    "stag_hunt": {"stag, stag (payoff-dominant)": 2.0, "hare, hare (risk-dominant)": 1.0},
    "climbing": {"optimum (0, 0)": 11.0, "relative-overgeneralisation equilibrium (1, 1)": 7.0},
    "nonmonotonic": {"optimum (0, 0)": 8.0, "safe equilibria (1-2, 1-2)": 0.0},
    "public_goods": {"all contribute": 1.5, "none contribute (equilibrium)": 1.0},
    **{f"penalty_k{k}": _PENALTY_REFS for k in (0, 25, 50, 75, 100)},
}


def _register_all() -> None:
    one_shot = {
        "prisoners_dilemma": (
            "prisoners_dilemma",
            "Prisoner's Dilemma, one-shot (Axelrod R3 S0 T5 P1)",
        ),
        "stag_hunt": ("stag_hunt", "Stag Hunt, one-shot"),
        "chicken": ("chicken", "Chicken (hawk-dove), one-shot"),
        "battle_of_sexes": ("battle_of_sexes", "Battle of the Sexes, one-shot"),
        "matching_pennies": ("matching_pennies", "Matching Pennies, one-shot, zero-sum"),
        "rps": ("rock_paper_scissors", "Rock-Paper-Scissors, one-shot, zero-sum"),
        "climbing": ("climbing", "Climbing game, common payoff (Claus & Boutilier 1998)"),
        "nonmonotonic": ("nonmonotonic", "Non-monotonic one-step game, common payoff (QTRAN)"),
        "public_goods": ("public_goods", "Linear public goods game, N players (default 3)"),
    }
    for k in (0, 25, 50, 75, 100):
        one_shot[f"penalty_k{k}"] = (
            f"penalty_k{k}",
            f"Penalty game k={k}, common payoff (Claus & Boutilier 1998)",
        )
    for env_id, (game, description) in one_shot.items():
        kwargs = {"game": game}
        if game == "public_goods":
            kwargs["num_agents"] = 3
        register(
            f"matrix/{env_id}-v0",
            make_matrix_game,
            kwargs=kwargs,
            description=description,
            references=_REFERENCES.get(env_id),
        )

    rounds = {"num_rounds": _REPEATED_ROUNDS}
    register(
        "matrix/ipd-v0",
        make_matrix_game,
        kwargs={"game": "prisoners_dilemma"},
        params=rounds,
        description=f"Iterated Prisoner's Dilemma, {_REPEATED_ROUNDS} rounds",
        references={
            "mutual cooperation": 3.0 * _REPEATED_ROUNDS,
            "mutual defection": 1.0 * _REPEATED_ROUNDS,
        },
    )
    register(
        "matrix/ipd_tft-v0",
        make_matrix_game,
        kwargs={"game": "prisoners_dilemma", "coplayer": "tit_for_tat"},
        params=rounds,
        description=f"Iterated Prisoner's Dilemma, {_REPEATED_ROUNDS} rounds, 1 learner vs tit-for-tat",
        # the learner's return; tit-for-tat copies the learner's previous move
        references={
            "best response (cooperate, defect in the last round)": 3.0 * _REPEATED_ROUNDS + 2.0,
            "always cooperate": 3.0 * _REPEATED_ROUNDS,
            "always defect": 5.0 + 1.0 * (_REPEATED_ROUNDS - 1),
        },
    )
    register(
        "matrix/rrps-v0",
        make_matrix_game,
        kwargs={"game": "rock_paper_scissors"},
        params=rounds,
        description=f"Repeated Rock-Paper-Scissors, {_REPEATED_ROUNDS} rounds",
    )
    register(
        "matrix/rrps_population-v0",
        make_rps_population,
        description="Repeated Rock-Paper-Scissors, 1000 throws, 1 learner vs a population of "
        f"{len(BOT_NAMES)} RoShamBo competition bots (Lanctot et al. 2023)",
    )
    register(
        "matrix/rrps_league-v0",
        make_rps_league,
        description="Repeated Rock-Paper-Scissors, 1000 throws, learner slot i vs bot i of the "
        f"{len(BOT_NAMES)} RoShamBo competition bots, all in one env (for training)",
    )
    register(
        "matrix/two_step-v0",
        TwoStepGame,
        description="QMIX two-step game (Rashid et al. 2018)",
        references={"optimum (2B, then (1, 1))": 8.0, "safe (2A)": 7.0},
    )


_register_all()

__all__ = [
    "ALL_BOT_NAMES",
    "BOT_NAMES",
    "EXTRA_NAMES",
    "BotParams",
    "BotState",
    "GAMES",
    "RPSLeague",
    "RPSPopulation",
    "RPSPopulationParams",
    "STRATEGIES",
    "CoPlayerState",
    "MatrixGame",
    "MatrixGameParams",
    "MatrixGameState",
    "ScriptedCoPlayers",
    "Strategy",
    "TwoStepGame",
    "TwoStepParams",
    "TwoStepState",
    "always_cooperate",
    "always_defect",
    "battle_of_the_sexes",
    "bimatrix",
    "bot_act",
    "bot_init",
    "bot_params",
    "bot_strategy",
    "bot_update",
    "chicken",
    "climbing_game",
    "common_payoff",
    "cycle",
    "fixed_action",
    "from_function",
    "game_payoffs",
    "get_strategy",
    "grim_trigger",
    "make_matrix_game",
    "get_bot",
    "get_bots",
    "make_rps_league",
    "make_rps_population",
    "matching_pennies",
    "nonmonotonic_game",
    "payoff_of",
    "payoffs",
    "play_match",
    "penalty_game",
    "prisoners_dilemma",
    "public_goods",
    "rock_paper_scissors",
    "stag_hunt",
    "symmetric",
    "tit_for_tat",
    "uniform_random",
    "win_stay_lose_shift",
    "zero_sum",
]
