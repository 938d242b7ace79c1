"""Social dilemmas: Coin Game (two variants), public goods, mechanism wrappers, Cleanup, Harvest,
the spatial Prisoner's Dilemma.

Importing this package registers the `social/*` ids; build them with `marljax.make`::

    env, params = marljax.make("social/coin_game-v0")                    # 2 players, 3x3 torus
    env, params = marljax.make("social/coin_game-v0", egocentric=True, grid_size=5)
    env, params = marljax.make("social/coin_game_jaxmarl-v0")            # JaxMARL's coin_game
    env, params = marljax.make("social/public_goods-v0", multiplier=2.0, num_agents=5)
    env, params = marljax.make("social/public_goods_punishment-v0", punish_fine=2.0)
    env, params = marljax.make("social/spatial_pd-v0", side=8, temptation=1.5)  # 64 agents

Static options are the constructor arguments of the registered entry points below (shapes:
`num_agents`, `grid_size`, `egocentric`, `num_levels`, ...); everything else (rewards, multiplier,
endowment, punishment cost and fine, reputation decay, episode length) is a traced params field.
Social metrics (efficiency, equality, sustainability, peace, cooperation and punishment rates)
are in `marljax.evaluation.social`.
"""

from __future__ import annotations

from marljax.core.registry import register
from marljax.core.types import Environment
from marljax.envs.matrix import MatrixGame
from marljax.envs.matrix.payoffs import prisoners_dilemma, stag_hunt
from marljax.envs.social import dilemma_grid  # noqa: F401  (registers Cleanup and Harvest)
from marljax.envs.social.coin_game import (
    ACTION_NAMES,
    CoinGame,
    CoinGameParams,
    CoinGameState,
    check_param,
)
from marljax.envs.social.coin_game_jaxmarl import (
    CoinDraws,
    CoinGameJaxMARL,
    CoinGameJaxMARLParams,
    CoinGameJaxMARLState,
)
from marljax.envs.social.mechanisms import (
    DirectPunishment,
    MarkCooperation,
    PairedGames,
    PairedGamesState,
    PartnerSelection,
    PartnerSelectionState,
    PunishmentState,
    Reputation,
    ReputationState,
    ThirdPartyPunishment,
    TwoStagePunishmentState,
    extend_params,
)
from marljax.envs.social.public_goods import (
    PublicGoods,
    PublicGoodsParams,
    PublicGoodsState,
    public_goods_payoff,
)
from marljax.envs.social.spatial_pd import (
    SpatialPD,
    SpatialPDParams,
    SpatialPDState,
    spatial_pd_payoff,
    torus_neighbours,
)


def make_public_goods_punishment(
    num_agents: int = 4, continuous: bool = False, num_levels: int = 5, two_stage: bool = False
) -> Environment:
    """`DirectPunishment(PublicGoods(...))`: the public goods game with peer punishment.

    `two_stage=True`: each round is a contribution step then a punishment step (Fehr &
    Gaechter 2000); see `DirectPunishment`.
    """
    return DirectPunishment(PublicGoods(num_agents, continuous, num_levels), two_stage=two_stage)


def make_public_goods_third_party(
    num_agents: int = 3, num_observers: int = 1, num_levels: int = 5, two_stage: bool = False
) -> Environment:
    """`ThirdPartyPunishment(PublicGoods(...), num_observers)`: observers may punish players.

    `two_stage=True`: each round is a play step then a punishment step; see
    `ThirdPartyPunishment`.
    """
    return ThirdPartyPunishment(
        PublicGoods(num_agents, False, num_levels), num_observers, two_stage=two_stage
    )


def make_public_goods_reputation(num_agents: int = 4, num_levels: int = 5) -> Environment:
    """`Reputation(PublicGoods(...))`: contributions build a public reputation score."""
    return Reputation(PublicGoods(num_agents, False, num_levels))


def make_partner_selection(
    game: str = "prisoners_dilemma",
    num_agents: int = 4,
    reputation: bool = False,
    random_partners: bool = False,
) -> Environment:
    """Partner selection in a population playing a one-shot two-player dilemma.

    Args:
      game: `"prisoners_dilemma"` or `"stag_hunt"` (action 0 is the cooperative one).
      num_agents: population size `A` (static).
      reputation: also add public reputation scores (`Reputation`).
      random_partners: the control without selection (partners drawn uniformly each round).
    """
    tables = {"prisoners_dilemma": prisoners_dilemma, "stag_hunt": stag_hunt}
    if game not in tables:
        raise ValueError(f"game must be one of {sorted(tables)}, got {game!r}")
    env = PartnerSelection(
        MatrixGame(tables[game](), name=game),
        num_agents,
        num_rounds=20,
        random_partners=random_partners,
    )
    return Reputation(env) if reputation else env


def make_coin_game_partner_selection(
    num_agents: int = 4,
    grid_size: int = 3,
    reputation: bool = False,
    random_partners: bool = False,
) -> Environment:
    """Partner selection in a gridworld: a population playing the Coin Game in chosen pairs.

    `PairedGames(CoinGame(2, grid_size, egocentric=True), ...)`: each round every agent names a
    partner, the population is matched into pairs and each pair plays `round_len` steps of the
    Coin Game (params `round_len` = 16 play steps per round, `selection_rounds` = 4 rounds);
    cooperation = picking up one's own coins.

    Args:
      num_agents: population size `A` (static, even, >= 4).
      grid_size: the Coin Game's torus side.
      reputation: also add public reputation scores (`Reputation`, from own-coin pickups).
      random_partners: the control without selection (a uniformly random matching each round).
    """
    env = PairedGames(
        CoinGame(2, grid_size, egocentric=True),
        num_agents,
        random_partners=random_partners,
    )
    return Reputation(env) if reputation else env


def make_coin_game_mechanism(mechanism: str = "punishment", grid_size: int = 3) -> Environment:
    """The two-player Coin Game (egocentric views) with one mechanism of `mechanisms`.

    Args:
      mechanism: `"punishment"` (`DirectPunishment`: each step an agent may also pay
        `punish_cost` to fine the other `punish_fine`), `"third_party"` (`ThirdPartyPunishment`
        with one observer who sees the whole grid and may fine either player) or
        `"reputation"` (`Reputation` scores from own-coin pickups in every observation).
      grid_size: the torus side.
    """
    game = CoinGame(2, grid_size, egocentric=True)
    wrappers = {
        "punishment": DirectPunishment,
        "third_party": ThirdPartyPunishment,
        "reputation": Reputation,
    }
    if mechanism not in wrappers:
        raise ValueError(f"mechanism must be one of {sorted(wrappers)}, got {mechanism!r}")
    return wrappers[mechanism](game)


#: Named incentives of the Prisoner's Dilemma with punishment: (PD temptation T, default params
#: of `DirectPunishment`). "flat": Axelrod's T = 5, every fine costs its punisher 1 and the
#: target 3. "dasgupta": the punishment paper's released code (its `Mechanisms/Punishment.py`
#: and `MatrixGame/IPDGame.py`): T = 4, a fine costs the target 3 and pays its punisher +2 if
#: the target defected, -10 if it cooperated. "dasgupta_costly": the same code's later
#: "costly punishment" experiments, -3 for fining a defector and -10 for a cooperator.
INCENTIVES: dict[str, tuple[float, dict[str, float]]] = {
    "flat": (5.0, {}),
    "dasgupta": (4.0, {"punish_cost": -2.0, "unjust_cost": 12.0}),
    "dasgupta_costly": (4.0, {"punish_cost": 3.0, "unjust_cost": 7.0}),
}


def make_repeated_pd(punishment: bool = False, incentives: str = "flat") -> Environment:
    """The repeated Prisoner's Dilemma with cooperation labels, optionally with direct punishment.

    `MarkCooperation(MatrixGame(prisoners_dilemma(), num_rounds=20))` (cooperate = action 0;
    R = 3, T = 5, S = 0, P = 1; each player observes the last joint action; `num_rounds` is a
    traced params field). `punishment=True` wraps it
    in two-stage `DirectPunishment` (Dasgupta & Musolesi 2025's setting: after each round of the
    dilemma, each player sees both moves and may pay `punish_cost` (1) to fine the other
    `punish_fine` (3)), so an episode of `num_rounds` rounds has `2 * num_rounds` steps.

    Args:
      punishment: add the punishment stage.
      incentives: `"flat"` (above), `"dasgupta"` (the paper's released code: T = 4; fining a
        defector pays the punisher +2, fining a cooperator costs it 10; the fine is 3) or
        `"dasgupta_costly"` (T = 4; -3 and -10); see `INCENTIVES`. Without `punishment` only
        the temptation T applies.
    """
    if incentives not in INCENTIVES:
        raise ValueError(f"incentives must be one of {sorted(INCENTIVES)}, got {incentives!r}")
    temptation, costs = INCENTIVES[incentives]
    payoffs = prisoners_dilemma(t=temptation)
    game = MarkCooperation(MatrixGame(payoffs, num_rounds=20, name="prisoners_dilemma"))
    return DirectPunishment(game, two_stage=True, defaults=costs) if punishment else game


def make_pd_population_staged(
    punishment: bool = False,
    num_agents: int = 4,
    reputation: bool = False,
    random_partners: bool = False,
    incentives: str = "flat",
) -> Environment:
    """A Prisoner's Dilemma population whose rounds come in stages: choose, play (, punish).

    Dasgupta & Musolesi (2025)'s round structure: `PairedGames` over the repeated PD of
    `make_repeated_pd`, each round a choice step (every agent names a partner, seeing every
    agent's cooperative and defecting moves of the last round), then one PD move with the matched
    partner and, with `punishment`, one punishment step (pay `punish_cost` 1 to fine the partner
    `punish_fine` 3, after seeing both moves). Params `round_len` (1, or 2 with punishment) and
    `selection_rounds` (20): an episode is 20 rounds of 2 or 3 steps.

    Args:
      punishment: add the punishment stage after each move.
      num_agents: population size `A` (static, even, >= 4).
      reputation: also add public reputation scores (`Reputation`).
      random_partners: the control without selection (a uniformly random matching each round).
      incentives: the pair game's payoffs and punishment incentives (`make_repeated_pd`).
    """
    env = PairedGames(
        make_repeated_pd(punishment, incentives),
        num_agents,
        round_len=2 if punishment else 1,
        num_rounds=20,
        random_partners=random_partners,
    )
    return Reputation(env) if reputation else env


def make_repeated_stag_hunt() -> Environment:
    """The repeated Stag Hunt with cooperation labels (`MarkCooperation`, stag = action 0).

    10 rounds by default (`num_rounds` is a traced params field).
    (Stag, stag) = 2 each is the payoff-dominant equilibrium, (hare, hare) = 1 each the
    risk-dominant one (payoffs of `marljax.envs.matrix.payoffs.stag_hunt`).
    """
    return MarkCooperation(MatrixGame(stag_hunt(), num_rounds=10, name="stag_hunt"))


def _register_all() -> None:
    register(
        "social/coin_game-v0",
        CoinGame,
        description="Coin Game, 2 players on a 3x3 torus (Lerer & Peysakhovich 2017; LOLA)",
    )
    register(
        "social/coin_game_jaxmarl-v0",
        CoinGameJaxMARL,
        description="Coin Game with JaxMARL coin_game's rules: a coin per colour, "
        "10 x 10-step episodes, its action order",
    )
    register(
        "social/public_goods-v0",
        PublicGoods,
        description="Repeated public goods game, 4 players, 5 contribution levels, r = 1.6",
    )
    register(
        "social/public_goods_continuous-v0",
        PublicGoods,
        kwargs={"continuous": True},
        description="Repeated public goods game, 4 players, continuous contributions",
    )
    register(
        "social/public_goods_punishment-v0",
        make_public_goods_punishment,
        description="Repeated public goods game with direct (peer) punishment",
    )
    register(
        "social/public_goods_punishment_2stage-v0",
        make_public_goods_punishment,
        kwargs={"two_stage": True},
        description="Public goods with peer punishment in two stages: contribute, see, punish",
    )
    register(
        "social/public_goods_third_party_2stage-v0",
        make_public_goods_third_party,
        kwargs={"two_stage": True},
        description="Public goods, 3 players + 1 third-party punisher, two stages per round",
    )
    register(
        "social/public_goods_third_party-v0",
        make_public_goods_third_party,
        description="Repeated public goods game, 3 players + 1 third-party punisher",
    )
    register(
        "social/public_goods_reputation-v0",
        make_public_goods_reputation,
        description="Repeated public goods game with public reputation scores",
    )
    register(
        "social/ipd_partner_selection-v0",
        make_partner_selection,
        description="Prisoner's Dilemma population (4) with partner selection, 20 rounds",
    )
    register(
        "social/ipd_staged-v0",
        make_pd_population_staged,
        description="Prisoner's Dilemma population (4), rounds of two stages: choose a "
        "partner, play; 20 rounds",
    )
    register(
        "social/ipd_staged_punishment-v0",
        make_pd_population_staged,
        kwargs={"punishment": True},
        description="Prisoner's Dilemma population (4), rounds of three stages: choose a "
        "partner, play, punish (cost 1, fine 3); 20 rounds",
    )
    register(
        "social/ipd_partner_reputation-v0",
        make_partner_selection,
        kwargs={"reputation": True},
        description="Prisoner's Dilemma population with partner selection and reputation",
    )
    for mechanism, what in [
        ("punishment", "direct punishment (pay 1 to fine the other 3)"),
        ("third_party", "a third-party observer who may fine either player"),
        ("reputation", "public reputation scores from own-coin pickups"),
    ]:
        register(
            f"social/coin_game_{mechanism}-v0",
            make_coin_game_mechanism,
            kwargs={"mechanism": mechanism},
            description=f"Coin Game, 2 players, egocentric 3x3 views, with {what}",
        )
    register(
        "social/coin_game_partner_selection-v0",
        make_coin_game_partner_selection,
        description="Coin Game population (4) choosing its partners: rounds of a choice step "
        "then 16 Coin Game steps in pairs, 4 rounds",
    )
    register(
        "social/coin_game_partner_reputation-v0",
        make_coin_game_partner_selection,
        kwargs={"reputation": True},
        description="Coin Game population with partner selection and reputation",
    )
    register(
        "social/spatial_pd-v0",
        SpatialPD,
        description="Spatial Prisoner's Dilemma, 6x6 torus (36 agents), von Neumann "
        "neighbours, local observations, T = 1.25, S = -0.25, 20 rounds",
    )
    register(
        "social/ipd-v0",
        make_repeated_pd,
        description="Repeated Prisoner's Dilemma (20 rounds) with cooperation labels",
    )
    register(
        "social/ipd_punishment_2stage-v0",
        make_repeated_pd,
        kwargs={"punishment": True},
        description="Repeated Prisoner's Dilemma, 20 rounds of a move step then a punishment "
        "step (pay 1 to fine the other 3)",
    )
    register(
        "social/stag_hunt-v0",
        make_repeated_stag_hunt,
        description="Repeated Stag Hunt (10 rounds) with cooperation labels for social metrics",
    )


_register_all()

__all__ = [
    "ACTION_NAMES",
    "CoinDraws",
    "CoinGame",
    "CoinGameJaxMARL",
    "CoinGameJaxMARLParams",
    "CoinGameJaxMARLState",
    "CoinGameParams",
    "CoinGameState",
    "INCENTIVES",
    "DirectPunishment",
    "MarkCooperation",
    "PairedGames",
    "PairedGamesState",
    "PartnerSelection",
    "PartnerSelectionState",
    "PublicGoods",
    "PublicGoodsParams",
    "PublicGoodsState",
    "PunishmentState",
    "Reputation",
    "ReputationState",
    "SpatialPD",
    "SpatialPDParams",
    "SpatialPDState",
    "ThirdPartyPunishment",
    "TwoStagePunishmentState",
    "check_param",
    "extend_params",
    "make_coin_game_mechanism",
    "make_coin_game_partner_selection",
    "make_partner_selection",
    "make_public_goods_punishment",
    "make_public_goods_reputation",
    "make_public_goods_third_party",
    "make_repeated_pd",
    "make_repeated_stag_hunt",
    "public_goods_payoff",
    "spatial_pd_payoff",
    "torus_neighbours",
]
