"""Two-population leagues: one learner per team of an asymmetric game, each against the other's pool.

`make_two_league((agent_0, agent_1), env, config)` is `marljax.population.league.make_league`
for games whose two teams differ (MPE simple tag's three slow adversaries and one fast good
agent; any predator-prey game): learner `p` is built for team `p` (`TeamView(env, teams[p])`),
and each population keeps its own pool of `K` snapshots of its learner. The runner's `E` envs
are split in two halves: in the first, learner 0 plays team 0 against an opponent for team 1
drawn from population 1's pool (or its current learner); in the second, learner 1 plays team 1
against an opponent drawn from population 0's pool. Each learner trains on its own half only,
so both seats learn, each against the other's past and present. Greedy acting (the
evaluations) plays the two current learners against each other in every env.

Every rule of `LeagueConfig` applies per learner against the other population: `self` plays
the other current learner, `latest` its newest snapshot, `uniform` and `pfsp` draw from its
snapshots (PFSP by the learner's win rate against each), `psro` plays the opponents' side of a
Nash (or other meta-solver) mixture of the bimatrix game between the two pools (its rows are
population 0's snapshots, its entries team 0's win rate, filled as in the one-population
league from the win rates training measured when a snapshot is taken). Both populations take
their snapshots on the same schedule. `LeagueConfig.sides` does not apply (each learner has its
team). The two learners share one hparams (the engine's grids and seeds apply to both), so they
are normally one algorithm; their networks may differ (each is built for its team).

The state is a `TwoLeagueState`: one `LeagueState` per population (learner, pool, slots, ages,
the learner's win counts against the other pool, the bimatrix from its side, its opponent
distribution, the running scores of its half). Metrics: learner 0's under their names,
learner 1's under `team1/<name>`, `league/win_rate` and `league/team1_win_rate` (each
learner's mean outcome over its half's finished episodes), `league/members`.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.agents.base import Agent, Observation, Trajectory
from marljax.core.config import ConfigError
from marljax.core.types import Environment
from marljax.population.league_parts import (
    LeagueConfig,
    LeagueState,
    check_num_envs,
    draw_opponents,
    episode_outcomes,
    fresh_league,
    league_teams,
    members_act,
    opponent_weights,
    team_trajectory,
    validate_league,
    win_rates,
)

Array = jax.Array


@struct.dataclass
class TwoLeagueState:
    """The state of a two-population league.

    Attributes:
      sides: `(LeagueState, LeagueState)`, population `p`'s: its learner and pool; `wins`,
        `games` its learner's counts against the other population's slots; `payoffs` `[K, K]`
        the win rate of its snapshot `i` against the other's snapshot `j`; `weights` its
        learner's opponent distribution over the other pool; `running` its half's scores.
    """

    sides: tuple

    @property
    def updates(self) -> Array:
        return self.sides[0].updates


def record_pair(config: LeagueConfig, sides: tuple, learners: tuple, running: tuple,
                new_wins: tuple, new_games: tuple) -> tuple:  # fmt: skip
    """Both populations after one update: decayed win counts, a snapshot of each learner on
    schedule, the bimatrix between the pools (a new snapshot's row: its learner's current win
    rates against the other pool; two new snapshots' entry: unknown, 1/2) and each learner's
    opponent distribution."""
    K = sides[0].filled.shape[0]
    updates = sides[0].updates + 1
    take = updates % config.snapshot_interval == 0
    wins = [config.win_decay * s.wins + w for s, w in zip(sides, new_wins, strict=True)]
    games = [config.win_decay * s.games + g for s, g in zip(sides, new_games, strict=True)]
    rate = [win_rates(w, g) for w, g in zip(wins, games, strict=True)]  # against the old pool
    slot = [(s.newest + 1) % K for s in sides]
    pool = [
        jax.tree.map(lambda p, x, i=i: p.at[i].set(jnp.where(take, x, p[i])), s.pool, learner)
        for s, learner, i in zip(sides, learners, slot, strict=True)
    ]
    filled = [s.filled.at[i].set(s.filled[i] | take) for s, i in zip(sides, slot, strict=True)]
    newest = [jnp.where(take, i, s.newest) for s, i in zip(sides, slot, strict=True)]
    age = [s.age.at[i].set(jnp.where(take, updates, s.age[i])) for s, i in zip(sides, slot, strict=True)]  # fmt: skip
    m = sides[0].payoffs  # team 0's snapshots (rows) against team 1's
    row = jnp.where(sides[1].filled, rate[0], 0.5)
    col = jnp.where(sides[0].filled, 1.0 - rate[1], 0.5)
    m = jnp.where(take, m.at[slot[0], :].set(row).at[:, slot[1]].set(col), m)
    m = jnp.where(take, m.at[slot[0], slot[1]].set(0.5), m)
    for p in (0, 1):  # the other population's new snapshot starts without games
        wins[p] = wins[p].at[slot[1 - p]].set(jnp.where(take, 0.0, wins[p][slot[1 - p]]))
        games[p] = games[p].at[slot[1 - p]].set(jnp.where(take, 0.0, games[p][slot[1 - p]]))
    payoffs = (m, 1.0 - m.T)
    out = []
    for p in (0, 1):
        o = 1 - p
        weights = opponent_weights(
            config, filled[o], newest[o], wins[p], games[p], payoffs[p], row_filled=filled[p]
        )
        out.append(
            LeagueState(
                learner=learners[p],
                pool=pool[p],
                filled=filled[p],
                newest=newest[p],
                age=age[p],
                wins=wins[p],
                games=games[p],
                payoffs=payoffs[p],
                weights=weights,
                running=running[p],
                updates=updates,
            )  # fmt: skip
        )
    return tuple(out)


def _halves(x: Any, h: int, axis: int = 0) -> tuple[Any, Any]:
    """Every leaf of `x` cut at `h` along `axis` (the env axis)."""
    leaves = jax.tree.leaves(x)
    if not leaves:  # e.g. a feed-forward agent's empty carry
        return x, x
    cut = lambda sl: jax.tree.map(lambda y: jax.lax.slice_in_dim(y, *sl, axis=axis), x)  # noqa: E731
    return cut((0, h)), cut((h, leaves[0].shape[axis]))


def _half_trajectory(traj: Trajectory, h: int) -> tuple[Trajectory, Trajectory]:
    timed = (traj.observation, traj.actions, traj.reward, traj.terminated, traj.truncated,
             traj.next_obs, traj.next_global_state, traj.next_action_mask)  # fmt: skip
    a, b = _halves(timed, h, axis=1)
    last_a, last_b = _halves(traj.last_observation, h)

    def build(t, last):
        obs, actions, reward, term, trunc, next_obs, next_state, next_mask = t
        return traj.replace(
            observation=obs, actions=actions, reward=reward, terminated=term, truncated=trunc,
            next_obs=next_obs, next_global_state=next_state, next_action_mask=next_mask,
            last_observation=last,
        )  # fmt: skip

    return build(a, last_a), build(b, last_b)


def _team_obs(obs: Observation, team: Array) -> Observation:
    return obs.replace(obs=obs.obs[:, team], action_mask=obs.action_mask[:, team])


class TwoLeagueParts(NamedTuple):
    """The static structure a two-population league's functions close over (built by
    `make_two_league`)."""

    agents: tuple  # (learner 0 for team 0, learner 1 for team 1)
    env: Environment
    config: LeagueConfig
    team: tuple  # (team 0's agents, team 1's agents), int32 numpy arrays

    @property
    def capacity(self) -> int:
        return int(self.config.capacity)

    @property
    def pooled(self) -> bool:
        return self.config.rule != "self"


def init(parts: TwoLeagueParts, key: Array, hparams: Any) -> TwoLeagueState:
    """Each population's `fresh_league`, its running scores over its half of the envs."""
    keys = jax.random.split(key)
    K, half = parts.capacity, int(parts.config.num_envs) // 2
    return TwoLeagueState(
        tuple(fresh_league(a, k, hparams, K, half) for a, k in zip(parts.agents, keys, strict=True))
    )


def initial_carry(parts: TwoLeagueParts, num_envs: int) -> Any:
    agents = parts.agents
    h = num_envs // 2
    rest = num_envs - h
    return (
        agents[0].initial_carry(h),  # learner 0, first half
        agents[1].initial_carry(h),  # population 1 against it
        agents[1].initial_carry(rest),  # learner 1, second half
        agents[0].initial_carry(rest),  # population 0 against it
        jnp.full((num_envs,), -1, jnp.int32),
    )


def act(parts: TwoLeagueParts, state: TwoLeagueState, carry, obs: Observation, key, hparams,
        greedy=False):  # fmt: skip
    """Learner 0 and an opponent of population 1 in the first half of the envs, learner 1 and
    an opponent of population 0 in the second; greedy: the two learners in every env."""
    agents, team, config = parts.agents, parts.team, parts.config
    kwargs = {"greedy": True} if greedy else {}
    own_0, opp_1, own_1, opp_0, opponent = carry
    n = obs.reset.shape[0]
    h = n // 2
    s0, s1 = state.sides
    k_a, k_b, k_self, k0, k1, k2, k3 = jax.random.split(key, 7)
    if greedy or h == 0:  # evaluation: the two current learners against each other
        return _learners_act(parts, state, carry, obs, (k0, k1), hparams, h, kwargs)
    if parts.pooled:
        k_self_a, k_self_b = jax.random.split(k_self)
        drawn = jnp.concatenate([
            draw_opponents(k_a, s0.weights, h, config.self_play, k_self_a),
            draw_opponents(k_b, s1.weights, n - h, config.self_play, k_self_b),
        ])  # fmt: skip
        opponent = jnp.where(obs.reset, drawn, opponent)
    first, second = _halves(obs, h)
    opp_first, opp_second = (opponent[:h], opponent[h:]) if parts.pooled else (None, None)
    a0, own_0, info_0 = agents[0].act(s0.learner, own_0, _team_obs(first, team[0]), k0, hparams, **kwargs)  # fmt: skip
    a1, own_1, info_1 = agents[1].act(s1.learner, own_1, _team_obs(second, team[1]), k1, hparams, **kwargs)  # fmt: skip
    b1, opp_1 = members_act(agents[1], s1.pool, s1.learner, opp_1, _team_obs(first, team[1]), k2, hparams, opp_first, **kwargs)  # fmt: skip
    b0, opp_0 = members_act(agents[0], s0.pool, s0.learner, opp_0, _team_obs(second, team[0]), k3, hparams, opp_second, **kwargs)  # fmt: skip
    dtype = a0.dtype
    actions = jnp.zeros((n, parts.env.num_agents, *a0.shape[2:]), dtype)
    actions = actions.at[:h, team[0]].set(a0).at[:h, team[1]].set(b1.astype(dtype))
    actions = actions.at[h:, team[1]].set(a1.astype(dtype)).at[h:, team[0]].set(b0.astype(dtype))
    return actions, (own_0, opp_1, own_1, opp_0, opponent), (info_0, info_1, opponent)


def _learners_act(parts: TwoLeagueParts, state, carry, obs, keys, hparams, h, kwargs):
    agents, team = parts.agents, parts.team
    own_0, opp_1, own_1, opp_0, opponent = carry
    join = lambda a, b: jax.tree.map(lambda x, y: jnp.concatenate([x, y]), a, b)  # noqa: E731
    moves, carries, infos = [], [], []
    for p, c in ((0, join(own_0, opp_0)), (1, join(opp_1, own_1))):
        s = state.sides[p]
        a, c, i = agents[p].act(s.learner, c, _team_obs(obs, team[p]), keys[p], hparams, **kwargs)  # fmt: skip
        moves.append(a)
        carries.append(_halves(c, h))
        infos.append(_halves(i, h))
    (own_0, opp_0), (opp_1, own_1) = carries
    dtype = moves[0].dtype
    actions = jnp.zeros((obs.reset.shape[0], parts.env.num_agents, *moves[0].shape[2:]), dtype)
    actions = actions.at[:, team[0]].set(moves[0]).at[:, team[1]].set(moves[1].astype(dtype))
    info = (infos[0][0], infos[1][1], opponent)
    return actions, (own_0, opp_1, own_1, opp_0, opponent), info


def update(parts: TwoLeagueParts, state: TwoLeagueState, traj: Trajectory, hparams, key,
           axis_name=None):  # fmt: skip
    """Each learner's update on its own half of the envs, then both pools' (`record_pair`)."""
    agents, team, K = parts.agents, parts.team, parts.capacity
    info_0, info_1, opponent = traj.policy_info
    T, n = traj.reward.shape[:2]
    h = n // 2
    first, second = _half_trajectory(traj, h)
    idx = lambda t, m: jnp.broadcast_to(jnp.asarray(t), (T, m, len(t)))  # noqa: E731
    mine = (
        team_trajectory(first, idx(team[0], h), info_0, traj.initial_carry[0]),
        team_trajectory(second, idx(team[1], n - h), info_1, traj.initial_carry[2]),
    )
    kwargs = {} if axis_name is None else {"axis_name": axis_name}
    keys = jax.random.split(key)
    learners, metrics = [], []
    for p in (0, 1):
        learner, m = agents[p].update(state.sides[p].learner, mine[p], hparams, keys[p], **kwargs)  # fmt: skip
        learners.append(learner)
        metrics.append(m)
    done = traj.terminated | traj.truncated
    outcomes = []
    for p, half, sl in ((0, first, slice(0, h)), (1, second, slice(h, n))):
        score = half.reward[:, :, team[p]].sum(-1) - half.reward[:, :, team[1 - p]].sum(-1)
        outcomes.append(
            episode_outcomes(state.sides[p].running, score, done[:, sl], opponent[:, sl], K)
        )
    sides = record_pair(
        parts.config, state.sides, tuple(learners), tuple(o[0] for o in outcomes),
        tuple(o[1] for o in outcomes), tuple(o[2] for o in outcomes),
    )  # fmt: skip
    out = dict(metrics[0])
    out.update({f"team1/{k}": v for k, v in metrics[1].items()})
    for name, (_, _, _, (won, ended)) in zip(
        ("league/win_rate", "league/team1_win_rate"), outcomes, strict=True
    ):
        out[name] = jnp.where(ended > 0, won / jnp.maximum(ended, 1.0), jnp.nan)
    out["league/members"] = sides[0].filled.sum().astype(jnp.float32)
    return TwoLeagueState(sides), out


def check_batch(parts: TwoLeagueParts, num_envs: int, rollout_len: int) -> None:
    check_num_envs(parts.config, num_envs)
    for a in parts.agents:
        try:
            a.check_batch(num_envs // 2, rollout_len)
        except ValueError as err:
            raise ConfigError(
                f"{err} (each learner of a two-population league trains on half of the "
                f"num_envs={num_envs} envs)"
            ) from None


def make_two_league(agents: tuple, env: Environment, config: LeagueConfig) -> Agent:
    """The two-population league of `agents` (one per team) on `env` (module docstring).

    Raises:
      ConfigError: not two agents, `league.populations=1`, an odd `num_envs`, or the errors of
        `validate_league` and `league_teams`.
    """
    validate_league(config)
    if len(agents) != 2:
        raise ConfigError(f"a two-population league needs two agents, got {len(agents)}")
    if config.populations == 1:
        raise ConfigError("league.populations=1 plays one learner on both teams: pass one agent")
    teams = league_teams(env, config.teams, same_size=False)
    if int(config.num_envs) % 2:
        raise ConfigError(
            f"a two-population league gives each learner half of the envs: num_envs must be "
            f"even, got {config.num_envs}"
        )
    team = tuple(np.asarray(t, np.int32) for t in teams)
    parts = TwoLeagueParts(tuple(agents), env, config, team)
    return agents[0]._replace(
        init=functools.partial(init, parts),
        initial_carry=functools.partial(initial_carry, parts),
        act=functools.partial(act, parts),
        update=functools.partial(update, parts),
        get_params=lambda state: agents[0].get_params(state.sides[0].learner),
        check_batch=functools.partial(check_batch, parts),
        rebuild=None,
    )


@struct.dataclass
class ResponderState:
    """A best response's state: its learner's, and each env's running score."""

    learner: Any
    running: Array


def make_team_best_response(agent: Agent, opponent: Agent, env: Environment, num_envs: int,
                            teams: tuple, side: int) -> Agent:  # fmt: skip
    """A fresh `agent` (built for team `side`) trained against a frozen pool of `opponent`'s
    states on the other team, the member drawn per episode: the best response behind the
    approximate exploitability of one population of a two-population league.

    Its hparams are `marljax.population.league_eval.BestResponseHParams` (the learner's hparams,
    also the opponent's when it acts; the pool `[K, ...]`; the mixture `[K]`), its metrics
    add `league/win_rate`, its win rate against the pool.
    """
    mine, theirs = (np.asarray(teams[i], np.int32) for i in (side, 1 - side))

    def init(key, hparams):
        return ResponderState(agent.init(key, hparams.agent), jnp.zeros((num_envs,)))

    def initial_carry(n):
        return agent.initial_carry(n), opponent.initial_carry(n), jnp.zeros((n,), jnp.int32)

    def act(state, carry, obs, key, hparams, greedy=False):
        kwargs = {"greedy": True} if greedy else {}
        own, other, drawn = carry
        k_draw, k0, k1 = jax.random.split(key, 3)
        n = obs.reset.shape[0]
        new = jax.random.categorical(k_draw, jnp.log(hparams.weights + 1e-30), shape=(n,))
        drawn = jnp.where(obs.reset, new.astype(jnp.int32), drawn)
        a, own, info = agent.act(state.learner, own, _team_obs(obs, mine), k0, hparams.agent, **kwargs)  # fmt: skip
        b, other = members_act(opponent, hparams.pool, None, other, _team_obs(obs, theirs), k1,
                               hparams.agent, drawn, **kwargs)  # fmt: skip
        actions = jnp.zeros((n, env.num_agents, *a.shape[2:]), a.dtype)
        actions = actions.at[:, mine].set(a).at[:, theirs].set(b.astype(a.dtype))
        return actions, (own, other, drawn), (info, drawn)

    def update(state, traj, hparams, key, axis_name=None):
        info, drawn = traj.policy_info
        T, n = traj.reward.shape[:2]
        idx = jnp.broadcast_to(jnp.asarray(mine), (T, n, len(mine)))
        kwargs = {} if axis_name is None else {"axis_name": axis_name}
        learner, metrics = agent.update(
            state.learner, team_trajectory(traj, idx, info, traj.initial_carry[0]), hparams.agent,
            key, **kwargs,
        )  # fmt: skip
        score = traj.reward[:, :, mine].sum(-1) - traj.reward[:, :, theirs].sum(-1)
        K = hparams.weights.shape[0]
        running, _, _, (won, ended) = episode_outcomes(
            state.running, score, traj.terminated | traj.truncated, drawn, K
        )
        metrics = dict(metrics)
        metrics["league/win_rate"] = jnp.where(ended > 0, won / jnp.maximum(ended, 1.0), jnp.nan)
        return ResponderState(learner, running), metrics

    return agent._replace(
        init=init, initial_carry=initial_carry, act=act, update=update,
        get_params=lambda state: agent.get_params(state.learner), rebuild=None,
    )  # fmt: skip


__all__ = [
    "ResponderState",
    "TwoLeagueParts",
    "TwoLeagueState",
    "make_team_best_response",
    "make_two_league",
    "record_pair",
]
