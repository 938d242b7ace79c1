"""The parts shared by one- and two-population leagues (`marljax.population.league`,
`marljax.population.league_two`): the configuration and state, the teams of an env, win rates,
the opponent distributions of the rules, the pool's actions and one team's trajectory.

Import them from `marljax.population.league`, which re-exports every public name.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.agents.base import Agent, Observation, Trajectory
from marljax.core.config import ConfigError, check_ranges, param
from marljax.core.types import Environment
from marljax.core.wrappers import Wrapper
from marljax.population.metasolvers import MetaSolverHParams, get_meta_solver

Array = jax.Array

#: opponent sampling rules of `make_league`.
RULES = ("self", "latest", "uniform", "pfsp", "psro")
#: PFSP weightings `f(p)` of a win rate `p`.
PFSP_WEIGHTINGS = ("hard", "variance")
#: which teams the learner plays (`LeagueConfig.sides`).
SIDES = ("both", "first")


@dataclasses.dataclass(frozen=True)
class LeagueConfig:
    """Static configuration of a league (see the module docstring).

    Attributes:
      rule: opponent sampling rule, one of `RULES`.
      capacity: snapshots in the pool `K` (the initial policy included).
      snapshot_interval: updates between snapshots.
      self_play: share of episodes against the current learner, whatever the rule.
      pfsp_weighting: `hard` or `variance` (`pfsp` rule).
      pfsp_power: exponent of the `hard` weighting.
      meta_solver: the `psro` rule's meta-solver (`marljax.population.metasolvers`).
      meta_iterations: iterations of an iterative meta-solver.
      explore: share of uniform play mixed into the `psro` meta-strategy (keeps every member's
        win-rate estimate fresh).
      win_decay: per-update decay of the win counts behind the win-rate estimates.
      teams: the agents of team 0 and team 1; None: the env's declared `teams`, or the two
        players of a two-player game (any other env needs them given). Both teams must have
        the same size (the learner's network plays either).
      sides: `both` (default): the learner's team is drawn per episode, so it learns both sides
        of a game whose sides differ (SMAX's spawn positions) and a snapshot meets it on
        either; `first`: the learner always plays team 0.
      num_envs: environments per run `E` (the runner's; `make_league` checks it).
      populations: learners: 1, one learner plays either team (teams of one size and agent
        types); 2, one learner per team, each against the other's snapshots
        (`marljax.population.league_two`, for asymmetric games such as predator-prey); 0
        (default): 2 when the teams differ in size or agent types, else 1.
      fixed_share: share of episodes against the fixed strategies given to `make_league`
        (`fixed`; from the command line `--opponents pool:...` with `--league`), if any.
      exploit_updates: after training, the run directory's approximate exploitability curve:
        a fresh learner trained this many updates (the run's envs and rollout length) against
        each generation's newest snapshot and Nash mixture (0: no curve; training unchanged).
    """

    rule: str = "pfsp"
    capacity: int = param(8, lo=1, hi=4096, help="snapshots in the pool (initial policy included)")
    snapshot_interval: int = param(10, lo=1, help="updates between snapshots")
    self_play: float = param(0.0, lo=0.0, hi=1.0, help="share of episodes against the learner")
    pfsp_weighting: str = "hard"
    pfsp_power: float = param(2.0, lo=0.0, help="exponent of the hard PFSP weighting")
    meta_solver: str = "nash"
    meta_iterations: int = param(1000, lo=1, help="iterations of an iterative meta-solver")
    explore: float = param(0.1, lo=0.0, hi=1.0, help="uniform share mixed into psro's sigma")
    win_decay: float = param(0.99, lo=0.0, hi=1.0, help="per-update decay of the win counts")
    teams: tuple | None = None
    sides: str = "both"
    num_envs: int = param(16, lo=1, help="environments per run (the runner's)")
    populations: int = param(0, lo=0, hi=2, help="learners: 1, 2 (one per team), 0 auto")
    exploit_updates: int = param(0, lo=0, help="best-response updates per generation (0: none)")
    fixed_share: float = param(0.5, lo=0.0, hi=1.0, help="share of episodes against fixed members")


@struct.dataclass
class LeagueState:
    """The league agent's state (every leaf also has the seeds / settings axes under `vmap`).

    Attributes:
      learner: the learner's agent state.
      pool: `K` snapshots of the learner's state, stacked (`[K, ...]` leaves).
      filled: `[K]` bool, the slots holding a snapshot.
      newest: `[]` int32 slot of the newest snapshot.
      age: `[K]` int32 update at which each snapshot was taken (-1: empty).
      wins, games: `[K]` decayed counts of the learner's outcomes against each snapshot.
      payoffs: `[K, K]` empirical win rate of member `i` against member `j` (0.5 on the
        diagonal and where unknown).
      weights: `[K]` the opponent distribution of the next episodes.
      running: `[E]` running score (team 0's return minus team 1's) of each env's episode.
      updates: `[]` int32 updates done.
    """

    learner: Any
    pool: Any
    filled: Array
    newest: Array
    age: Array
    wins: Array
    games: Array
    payoffs: Array
    weights: Array
    running: Array
    updates: Array


class TeamView(Wrapper):
    """The env as one team sees it: `num_agents` is the team's size (to build its learner)."""

    def __init__(self, env: Environment, team: tuple[int, ...]):
        super().__init__(env)
        self.team = tuple(int(i) for i in team)
        self.num_agents = len(self.team)

    @property
    def agent_types(self) -> Array:
        return self._env.agent_types[np.asarray(self.team)]

    def reset(self, key, params):  # pragma: no cover - the view only builds agents
        raise NotImplementedError("TeamView builds a team's agent; it does not run")

    def step(self, key, state, actions, params):  # pragma: no cover
        raise NotImplementedError("TeamView builds a team's agent; it does not run")


def league_teams(env: Environment, teams: tuple | None = None,
                 same_size: bool = True) -> tuple[tuple[int, ...], ...]:  # fmt: skip
    """The two teams of `env`: `teams`, else the env's `teams` attribute (e.g. SMAX with
    `enemy="learned"`, MPE simple tag), else the two players of a two-player game.

    Raises:
      ConfigError: an env that is not two-sided (not two players and no declared teams),
        teams overlapping or out of range, or of different sizes with `same_size`.
    """
    num = env.num_agents
    if teams is None:
        teams = getattr(env, "teams", None)
    if teams is None:
        if num != 2:
            raise ConfigError(
                f"a league needs a two-sided env (two teams of equal size); {env!r} has {num} "
                f"agent(s) and declares no teams (pass league teams, e.g. [[0, 1], [2, 3]], "
                f"if two of its teams are alike)"
            )
        teams = ((0,), (1,))
    try:
        teams = tuple(tuple(int(i) for i in t) for t in teams)
    except (TypeError, ValueError):
        raise ConfigError(
            f"league teams must be two lists of agent indices, got {teams!r}"
        ) from None
    if len(teams) != 2 or not all(teams):
        raise ConfigError(f"league teams must be two non-empty lists of agents, got {teams!r}")
    flat = [i for t in teams for i in t]
    if len(set(flat)) != len(flat) or min(flat) < 0 or max(flat) >= num:
        raise ConfigError(
            f"league teams must be distinct agents of 0..{num - 1} of {env!r}, got {teams!r}"
        )
    if same_size and len(teams[0]) != len(teams[1]):
        raise ConfigError(
            f"league teams must have the same size (the learner's network plays either side); "
            f"got {len(teams[0])} and {len(teams[1])} agents (league.populations=2 trains one "
            f"learner per team)"
        )
    return teams


def league_populations(env: Environment, config: LeagueConfig) -> tuple[int, tuple]:
    """`(populations, teams)` of a league on `env`: `config.populations`, or when 0, 2 if the
    teams differ in size or agent types (e.g. MPE simple tag's adversaries and good agents)
    and 1 otherwise.

    Raises:
      ConfigError: as `league_teams` (teams of different sizes only with `populations=1`).
    """
    teams = league_teams(env, config.teams, same_size=config.populations == 1)
    if config.populations:
        return int(config.populations), teams
    types = np.asarray(getattr(env, "agent_types", np.zeros((env.num_agents,), np.int32)))
    alike = len(teams[0]) == len(teams[1]) and np.array_equal(
        np.sort(types[np.asarray(teams[0])]), np.sort(types[np.asarray(teams[1])])
    )
    return (1 if alike else 2), teams


def validate_league(config: LeagueConfig) -> None:
    """Raise `ConfigError` for an unknown rule, weighting or meta-solver, or a value out of range."""
    check_ranges(config, "league")
    if config.rule not in RULES:
        raise ConfigError(f"league rule must be one of {list(RULES)}, got {config.rule!r}")
    if config.pfsp_weighting not in PFSP_WEIGHTINGS:
        raise ConfigError(
            f"league pfsp_weighting must be one of {list(PFSP_WEIGHTINGS)}, "
            f"got {config.pfsp_weighting!r}"
        )
    if config.sides not in SIDES:
        raise ConfigError(f"league sides must be one of {list(SIDES)}, got {config.sides!r}")
    try:
        get_meta_solver(config.meta_solver)
    except ConfigError as err:
        raise ConfigError(f"league meta_solver: {err}") from None


def _gather(x: Array, idx: Array) -> Array:
    """`x[..., e, idx[..., e, :], ...]`: per env `e` its team's agents (`x`: `[..., E, A, ...]`,
    `idx`: `[..., E, n]` agent indices) -> `[..., E, n, ...]`."""
    lead = idx.ndim - 1
    index = idx.reshape(*idx.shape, *([1] * (x.ndim - lead - 1)))
    return jnp.take_along_axis(x, index, axis=lead)


def _seat(obs: Observation, idx: Array) -> Observation:
    return obs.replace(obs=_gather(obs.obs, idx), action_mask=_gather(obs.action_mask, idx))


def win_rates(wins: Array, games: Array, prior: float = 1.0) -> Array:
    """Win-rate estimates `(wins + prior / 2) / (games + prior)`: 0.5 with no games."""
    return (wins + 0.5 * prior) / (games + prior)


def pfsp_weights(p: Array, filled: Array, weighting: str = "hard", power: float = 2.0) -> Array:
    """PFSP's opponent distribution over the filled slots from win rates `p` ([K])."""
    f = (1.0 - p) ** power if weighting == "hard" else p * (1.0 - p)
    w = jnp.where(filled, f, 0.0)
    uniform = filled / jnp.maximum(filled.sum(), 1)
    return jnp.where(w.sum() > 1e-9, w / jnp.maximum(w.sum(), 1e-9), uniform)


def episode_outcomes(running: Array, diff: Array, done: Array, opponent: Array, capacity: int):
    """Per-slot wins and games of the episodes that end in a trajectory, and the running scores.

    Args:
      running: `[E]` score (the learner's team return minus the other's) of each env's episode
        so far.
      diff: `[T, E]` this step's score; `done`: `[T, E]` bool episode ends; `opponent`:
        `[T, E]` int32 pool slot of each step's opponent (-1: the learner itself).
      capacity: pool slots `K`.

    Returns:
      `(running [E], wins [K], games [K], (won [], ended []))`: a win counts 1, a draw 1/2;
      `won / ended` is over every finished episode, self-play included.
    """

    def step(running, x):
        d, end, opp = x
        total = running + d
        outcome = jnp.where(total > 0, 1.0, jnp.where(total < 0, 0.0, 0.5))
        counted = end & (opp >= 0)
        hot = jax.nn.one_hot(jnp.where(counted, opp, 0), capacity) * counted[:, None]
        every = (jnp.sum(outcome * end), jnp.sum(end))
        return jnp.where(end, 0.0, total), (hot.T @ outcome, hot.sum(0), every)

    running, (wins, games, every) = jax.lax.scan(step, running, (diff, done, opponent))
    return running, wins.sum(0), games.sum(0), (every[0].sum(), every[1].sum())


def opponent_weights(config: LeagueConfig, filled: Array, newest: Array, wins: Array,
                     games: Array, payoffs: Array, row_filled: Array | None = None) -> Array:  # fmt: skip
    """The rule's opponent distribution `[K]` over the pool (see the module docstring).

    `filled`, `newest`: the opponents' pool; `wins`, `games`: the learner's counts against
    them; `payoffs`: the win rates of the learner's snapshots (rows) against the opponents
    (columns). `row_filled`: None for one population (rows and columns are the same pool, the
    game is symmetrised); the learner's own pool's slots for two (the `psro` rule then plays
    the opponents' side of the bimatrix game).
    """
    rule = config.rule
    if rule in ("self", "latest"):
        return (jnp.arange(filled.shape[0]) == newest).astype(jnp.float32)
    uniform = filled / jnp.maximum(filled.sum(), 1)
    if rule == "uniform":
        return uniform
    if rule == "pfsp":
        p = win_rates(wins, games)
        return pfsp_weights(p, filled, config.pfsp_weighting, config.pfsp_power)
    game = jnp.stack([payoffs - 0.5, 0.5 - payoffs])  # zero-sum, row = player 0
    solver = get_meta_solver(config.meta_solver)
    rows = filled if row_filled is None else row_filled
    sigma = solver(game, jnp.stack([rows, filled]), MetaSolverHParams(), config.meta_iterations)
    mixed = 0.5 * (sigma[0] + sigma[1]) if row_filled is None else sigma[1]
    sigma = jnp.where(filled, mixed, 0.0)
    sigma = sigma / jnp.maximum(sigma.sum(), 1e-9)
    return (1.0 - config.explore) * sigma + config.explore * uniform


def draw_opponents(key: Array, weights: Array, num: int, self_play: float = 0.0,
                   key_self: Array | None = None) -> Array:  # fmt: skip
    """`[num]` int32 pool slots drawn from the opponent distribution `weights` `[K]`, each set
    to -1 (the current learner) with probability `self_play`."""
    drawn = jax.random.categorical(key, jnp.log(weights + 1e-30), shape=(num,)).astype(jnp.int32)
    if self_play > 0:
        drawn = jnp.where(jax.random.uniform(key_self, (num,)) < self_play, -1, drawn)
    return drawn


def record_update(config: LeagueConfig, state: LeagueState, learner: Any, running: Array,
                  new_wins: Array, new_games: Array) -> LeagueState:  # fmt: skip
    """The league after one update: decayed win counts, a snapshot on schedule (into the next
    slot of the ring, its row of the win-rate matrix from the learner's current win rates), and
    the opponent distribution of the next episodes."""
    K = state.filled.shape[0]
    decay = config.win_decay
    wins = decay * state.wins + new_wins
    games = decay * state.games + new_games
    updates = state.updates + 1
    take = updates % config.snapshot_interval == 0
    slot = (state.newest + 1) % K
    pool = jax.tree.map(
        lambda p, x: p.at[slot].set(jnp.where(take, x, p[slot])), state.pool, learner
    )
    p = win_rates(wins, games)[:K]  # the snapshots' (fixed members follow, if any)
    row = jnp.where(state.filled, p, 0.5).at[slot].set(0.5)
    col = jnp.where(state.filled, 1.0 - p, 0.5).at[slot].set(0.5)
    payoffs = jnp.where(
        take,
        state.payoffs.at[slot, :].set(row).at[:, slot].set(col),
        state.payoffs,
    )
    filled = state.filled.at[slot].set(state.filled[slot] | take)
    newest = jnp.where(take, slot, state.newest)
    age = state.age.at[slot].set(jnp.where(take, updates, state.age[slot]))
    wins = wins.at[slot].set(jnp.where(take, 0.0, wins[slot]))
    games = games.at[slot].set(jnp.where(take, 0.0, games[slot]))
    weights = opponent_weights(config, filled, newest, wins[:K], games[:K], payoffs)
    return LeagueState(
        learner=learner, pool=pool, filled=filled, newest=newest, age=age, wins=wins,
        games=games, payoffs=payoffs, weights=weights, running=running, updates=updates,
    )  # fmt: skip


def members_act(agent: Agent, pool: Any, learner: Any, carry: Any, obs: Observation, key: Array,
                hparams: Any, opponent: Array | None, **kwargs) -> tuple[Array, Any]:  # fmt: skip
    """The actions and carry of each env's opponent, `opponent` `[E]` the slot of `pool`
    (stacked `[K, ...]` states of `agent`) playing each env, -1 for `learner` (None: `learner`
    everywhere). Every member (and the learner, unless it is None) acts and each env keeps its
    opponent's action: exact per-episode opponents under `vmap`, at `K + 1` forward passes."""
    if opponent is None:
        actions, carry, _ = agent.act(learner, carry, obs, key, hparams, **kwargs)
        return actions, carry
    K = jax.tree.leaves(pool)[0].shape[0]
    states = pool
    if learner is not None:
        states = jax.tree.map(lambda p, x: jnp.concatenate([p, x[None]]), pool, learner)
    acts, carries, _ = jax.vmap(lambda s: agent.act(s, carry, obs, key, hparams, **kwargs))(states)
    which = jnp.where(opponent < 0, K, opponent)  # [E] into [K + 1]
    pick = lambda x: jnp.take_along_axis(  # noqa: E731
        x, which.reshape(1, -1, *([1] * (x.ndim - 2))), axis=0
    )[0]
    return pick(acts), jax.tree.map(pick, carries)


def team_trajectory(traj: Trajectory, idx: Array, info: Any, initial_carry: Any) -> Trajectory:
    """One team's trajectory: `idx` `[T, E, n]` the team's agents at each step and env;
    `info`, `initial_carry`: its learner's policy info and carry."""
    return traj.replace(
        observation=_seat(traj.observation, idx),
        actions=_gather(traj.actions, idx),
        reward=_gather(traj.reward, idx),
        next_obs=_gather(traj.next_obs, idx),
        next_action_mask=_gather(traj.next_action_mask, idx),
        policy_info=info,
        # the side of the last step: where its episode goes on, the next step's too
        last_observation=_seat(traj.last_observation, idx[-1]),
        initial_carry=initial_carry,
    )


def fresh_league(agent: Agent, key: Array, hparams: Any, capacity: int, num_envs: int,
                 num_fixed: int = 0) -> LeagueState:  # fmt: skip
    """A league's first state: the learner's initial state, a pool of `capacity` slots of which
    slot 0 holds a copy of it, no games (`wins`, `games` over the `capacity + num_fixed`
    members), every payoff 1/2, the opponent distribution on slot 0 and `num_envs` running
    scores."""
    learner = agent.init(key, hparams)
    pool = jax.tree.map(lambda x: jnp.broadcast_to(x, (capacity, *jnp.shape(x))), learner)
    filled = jnp.arange(capacity) == 0
    members = capacity + num_fixed
    return LeagueState(
        learner=learner, pool=pool, filled=filled, newest=jnp.int32(0),
        age=jnp.where(filled, 0, -1).astype(jnp.int32), wins=jnp.zeros((members,)),
        games=jnp.zeros((members,)), payoffs=jnp.full((capacity, capacity), 0.5),
        weights=filled.astype(jnp.float32), running=jnp.zeros((num_envs,)), updates=jnp.int32(0),
    )  # fmt: skip


def check_num_envs(config: LeagueConfig, num_envs: int) -> None:
    """A league's state holds `config.num_envs` running scores: the runner must match."""
    if int(num_envs) != int(config.num_envs):
        raise ConfigError(
            f"the league was built for num_envs={config.num_envs}, the runner has {num_envs} "
            f"(LeagueConfig.num_envs must be the train config's num_envs)"
        )


__all__ = [
    "PFSP_WEIGHTINGS",
    "RULES",
    "SIDES",
    "LeagueConfig",
    "LeagueState",
    "TeamView",
    "check_num_envs",
    "draw_opponents",
    "episode_outcomes",
    "fresh_league",
    "league_populations",
    "league_teams",
    "members_act",
    "opponent_weights",
    "pfsp_weights",
    "record_update",
    "team_trajectory",
    "validate_league",
    "win_rates",
]
