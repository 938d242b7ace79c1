"""Leagues on two-sided Markov games: one learner against a pool of its own snapshots, in jit.

`make_league(agent, env, config)` wraps any registered agent, built for one team of a two-team
env (`team_view`), into an `Agent` for the whole env. Its state holds the learner's state and a
fixed-capacity pool of `K` snapshots of it (one stacked pytree, `[K, ...]` on every leaf, not a
Python list); so training a league is plain training (`marljax.training.train.make_train`), and
the engine's seeds, hyperparameter grids, chunks, checkpoints, resume and run directories apply
unchanged. The learner plays one team (drawn per episode, `sides="both"`; or always team 0) and
the other team is played, per episode, by an opponent drawn when the episode starts:

- `self`: the current learner (naive self-play; the pool is not used);
- `latest`: the newest snapshot;
- `uniform`: a snapshot drawn uniformly (fictitious self-play over the snapshots);
- `pfsp`: prioritised fictitious self-play (Vinyals et al. 2019): snapshot `k` with weight
  `f(p_k)`, where `p_k` is the learner's recent win rate against it and `f` is `hard`
  `(1 - p)^power` (focus on the snapshots the learner loses to) or `variance` `p (1 - p)`
  (focus on the even matches);
- `psro`: a PSRO meta-strategy over the pool (Lanctot et al. 2017): a meta-solver of
  `marljax.population.metasolvers` (default `nash`) on the empirical win-rate matrix between
  the snapshots, mixed with `explore` of uniform. A new snapshot's row of that matrix is the
  learner's recent win rates against every member when it is taken (the matches training
  already played, as in Pipeline PSRO / NeuPL), so no extra evaluation runs inside training.

`LeagueConfig.self_play` plays that share of episodes against the current learner whatever the
rule (AlphaStar's main agents mix self-play and PFSP). The pool starts with the learner's
initial policy; a snapshot is taken every `snapshot_interval` updates into the next slot of a
ring (the oldest snapshot goes once `capacity` is reached). An episode's outcome is a win (1),
draw (0.5) or loss (0) by the sign of team 0's return minus team 1's; the win counts decay by
`win_decay` per update, so the estimates follow the learner as it changes.

Under `self` the snapshots are still taken (they are the generations the evaluation compares),
only never played. Snapshots act by sampling from their policies (mixed strategies matter in non-transitive games).
Team 1's actions are computed for every pool member and the current learner, then selected per
env (exact per-episode opponents under `vmap`); a league step therefore costs `K + 1` forward
passes of team 1 where self-play costs one (`bench/bench_league.py` measures it).

Scripted strategies (`marljax.envs.matrix.strategies`, given as `make_league(..., fixed=...)`)
can join the pool as fixed members on games of one-agent teams: `LeagueConfig.fixed_share` of
the episodes meet one of them (the in-context co-player setting: learners against a mixed pool
of learners and fixed strategies). A game whose two teams differ (MPE simple tag) trains one
learner per team instead, each against the other's snapshots: `make_league((agent_0, agent_1),
...)`, `marljax.population.league_two`.

Evaluation of a finished league (`marljax.population.league_eval`): the cross-play matrix between
the snapshots, Elo ratings and Nash / alpha-rank over it, and approximate exploitability (a best
response trained against a snapshot or a meta-strategy).

References: O. Vinyals et al., "Grandmaster level in StarCraft II using multi-agent
reinforcement learning", Nature 2019 (PFSP); M. Lanctot et al., "A unified game-theoretic
approach to multiagent reinforcement learning", NeurIPS 2017 (PSRO); S. McAleer et al.,
"Pipeline PSRO", NeurIPS 2020; S. Liu et al., "NeuPL: Neural Population Learning", ICLR 2022.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from marljax.agents.base import Agent, Observation, Trajectory
from marljax.core.config import ConfigError
from marljax.core.types import Environment, EnvParams
from marljax.envs.matrix.strategies import Strategy
from marljax.population import league_parts
from marljax.population.league_parts import (
    PFSP_WEIGHTINGS,  # noqa: F401 (re-exported)
    RULES,  # noqa: F401 (re-exported)
    SIDES,  # noqa: F401 (re-exported)
    LeagueConfig,
    LeagueState,
    TeamView,  # noqa: F401 (re-exported)
    _gather,
    _seat,
    check_num_envs,
    draw_opponents,
    episode_outcomes,
    fresh_league,
    league_populations,  # noqa: F401 (re-exported)
    league_teams,
    members_act,
    opponent_weights,  # noqa: F401 (re-exported)
    pfsp_weights,  # noqa: F401 (re-exported)
    record_update,
    team_trajectory,
    validate_league,
    win_rates,
)

Array = jax.Array


class LeagueParts(NamedTuple):
    """The static structure a league's functions close over (built by `make_league`)."""

    agent: Agent  # the learner, built for one team (`TeamView(env, teams[0])`)
    env: Environment
    config: LeagueConfig
    seats: Array  # [2, n] int32: the agents of each team
    fixed: tuple = ()  # scripted strategies, pool slots K .. K + F - 1
    fixed_probs: Array | None = None  # [F] their probabilities

    @property
    def capacity(self) -> int:
        return int(self.config.capacity)

    @property
    def num_fixed(self) -> int:
        return len(self.fixed)

    @property
    def use_pool(self) -> bool:
        return self.config.rule != "self"


def _fixed_probs(weights: Sequence[float] | None, num: int) -> Array:
    """Probabilities of `num` fixed strategies from relative `weights` (default uniform)."""
    w = np.ones((num,)) if weights is None else np.asarray([float(x) for x in weights])
    if w.shape != (num,) or np.any(w < 0) or w.sum() <= 0:
        raise ConfigError(
            f"fixed_weights must be {num} non-negative numbers with a positive sum, got "
            f"{list(weights)}"
        )
    return jnp.asarray(w / w.sum(), jnp.float32)


def _fixed_act(fixed: tuple, states: tuple, last: Array, reset: Array, seat: Array, key: Array):
    """Every fixed strategy's action in every env: `[F, E]` int32 and the new states. `last`
    `[E, A]` is the previous joint action (-1 at an episode start, where the states restart)."""
    num_envs = reset.shape[0]
    last = jnp.where(reset[:, None], -1, last)
    zeros = jnp.zeros(last.shape, jnp.float32)
    actions, new = [], []
    for f, (strategy, state) in enumerate(zip(fixed, states, strict=True)):
        k_init, k_act = jax.random.split(jax.random.fold_in(key, 1000 + f))
        fresh = jax.vmap(strategy.init)(jax.random.split(k_init, num_envs))
        state = jax.tree.map(
            lambda a, b: jnp.where(reset.reshape(-1, *([1] * (a.ndim - 1))), a, b), fresh, state
        )
        a, state = jax.vmap(strategy.act)(state, last, zeros, seat, jax.random.split(k_act, num_envs))  # fmt: skip
        actions.append(a)
        new.append(state)
    return jnp.stack(actions), tuple(new)


def init(parts: LeagueParts, key: Array, hparams: Any) -> LeagueState:
    """`fresh_league` of the learner (with the fixed members' counts)."""
    config = parts.config
    return fresh_league(parts.agent, key, hparams, parts.capacity, int(config.num_envs),
                        parts.num_fixed)  # fmt: skip


def initial_carry(parts: LeagueParts, num_envs: int) -> Any:
    """`(learner's carry, team 1's carry, opponent [E], learner's side [E])`, and with fixed
    members the last joint action `[E, A]` and the strategies' states."""
    c = parts.agent.initial_carry(num_envs)
    out = c, c, jnp.full((num_envs,), -1, jnp.int32), jnp.zeros((num_envs,), jnp.int32)
    if not parts.fixed:
        return out
    key = jax.random.PRNGKey(0)  # replaced at every episode start
    states = tuple(jax.vmap(f.init)(jax.random.split(key, num_envs)) for f in parts.fixed)
    return (*out, jnp.full((num_envs, parts.env.num_agents), -1, jnp.int32), states)


def act(parts: LeagueParts, state: LeagueState, carry, obs: Observation, key, hparams,
        greedy=False):  # fmt: skip
    """The joint action: the learner on its side's seats, each env's opponent (drawn at its
    episode's start: the learner, a snapshot or a fixed member) on the other's."""
    agent, config, seats, fixed = parts.agent, parts.config, parts.seats, parts.fixed
    K, F = parts.capacity, parts.num_fixed
    kwargs = {"greedy": True} if greedy else {}
    own, other, opponent, side = carry[:4]
    key_draw, key_self, key_0, key_1, key_side = jax.random.split(key, 5)
    num_envs = obs.reset.shape[0]
    if config.sides == "both":
        side = jnp.where(obs.reset, jax.random.bernoulli(key_side, 0.5, (num_envs,)), side)
        side = side.astype(jnp.int32)
    mine, theirs = seats[side], seats[1 - side]  # [E, n] agents of each env's two teams
    drawn = jnp.full((num_envs,), -1, jnp.int32)
    if parts.use_pool:
        drawn = draw_opponents(key_draw, state.weights, num_envs, config.self_play, key_self)
    if F:  # a fixed member (slots K ..) in fixed_share of the episodes
        key_pick, key_member = jax.random.split(jax.random.fold_in(key, F))
        pick = jax.random.uniform(key_pick, (num_envs,)) < config.fixed_share
        member = draw_opponents(key_member, parts.fixed_probs, num_envs)
        drawn = jnp.where(pick, K + member, drawn)
    if parts.use_pool or F:
        opponent = jnp.where(obs.reset, drawn, opponent)
    actions_0, own, info = agent.act(state.learner, own, _seat(obs, mine), key_0, hparams, **kwargs)  # fmt: skip
    actions_1, other = members_act(
        agent, state.pool, state.learner, other, _seat(obs, theirs), key_1, hparams,
        jnp.where(opponent >= K, -1, opponent) if parts.use_pool else None, **kwargs,
    )  # fmt: skip
    shape = (num_envs, parts.env.num_agents, *actions_0.shape[2:])
    rows = jnp.arange(num_envs)[:, None]
    if F:
        last, fstates = carry[4:]
        actions_f, fstates = _fixed_act(fixed, fstates, last, obs.reset, theirs[:, 0], key)
        chosen = jnp.take_along_axis(actions_f, jnp.clip(opponent - K, 0, F - 1)[None], 0)
        actions_1 = jnp.where((opponent >= K)[:, None], chosen[0][:, None], actions_1)
    actions = jnp.zeros(shape, actions_0.dtype).at[rows, mine].set(actions_0)
    actions = actions.at[rows, theirs].set(actions_1.astype(actions_0.dtype))
    carry = (own, other, opponent, side)
    if F:
        carry = (*carry, actions.astype(jnp.int32), fstates)
    return actions, carry, (info, opponent, side)


def update(parts: LeagueParts, state: LeagueState, traj: Trajectory, hparams, key,
           axis_name=None):  # fmt: skip
    """The learner's update on its team's steps, then the pool's: outcomes, decayed win
    counts, a snapshot on schedule and the opponent distribution (`record_update`)."""
    seats, K, F = parts.seats, parts.capacity, parts.num_fixed
    info, opponent, side = traj.policy_info
    idx = seats[side]  # [T, E, n] the learner's agents at each step
    mine = team_trajectory(traj, idx, info, traj.initial_carry[0])
    kwargs = {} if axis_name is None else {"axis_name": axis_name}
    learner, metrics = parts.agent.update(state.learner, mine, hparams, key, **kwargs)
    score = _gather(traj.reward, idx).sum(-1) - _gather(traj.reward, seats[1 - side]).sum(-1)
    running, new_wins, new_games, (won, ended) = episode_outcomes(
        state.running, score, traj.terminated | traj.truncated, opponent, K + F
    )
    new = record_update(parts.config, state, learner, running, new_wins, new_games)
    weights, filled = new.weights, new.filled
    metrics = dict(metrics)
    metrics["league/win_rate"] = jnp.where(ended > 0, won / jnp.maximum(ended, 1.0), jnp.nan)
    if F:  # decayed, as PFSP's estimates (never NaN: 1/2 before any game)
        metrics["league/fixed_win_rate"] = win_rates(new.wins[K:].sum(), new.games[K:].sum())
    metrics["league/members"] = filled.sum().astype(jnp.float32)
    metrics["league/entropy"] = -jnp.sum(
        jnp.where(weights > 0, weights * jnp.log(jnp.maximum(weights, 1e-30)), 0.0)
    )
    return new, metrics


def check_batch(parts: LeagueParts, num_envs: int, rollout_len: int) -> None:
    check_num_envs(parts.config, num_envs)
    parts.agent.check_batch(num_envs, rollout_len)


def make_league(agent: Agent, env: Environment, config: LeagueConfig,
                env_params: EnvParams | None = None, fixed: Sequence[Strategy] = (),
                fixed_weights: Sequence[float] | None = None) -> Agent:  # fmt: skip
    """The league of `agent` on the two-sided `env` (see the module docstring).

    Args:
      agent: a registered agent built for `TeamView(env, teams[0])` (one team of the env); or
        a pair of agents, one per team (`TeamView(env, teams[p])`): a two-population league
        (`marljax.population.league_two.make_two_league`).
      env: the two-sided env the league plays.
      config: the league's `LeagueConfig` (its `num_envs` is the runner's).
      env_params: unused (kept for the factories' signature).
      fixed: scripted strategies (`marljax.envs.matrix.strategies`) that join the pool as fixed
        members, for one-agent teams of discrete actions (repeated matrix games): an episode's
        opponent is one of them with probability `config.fixed_share` (drawn by
        `fixed_weights`, default uniform), otherwise the rule's. They see the last joint
        action (their last rewards are zeros: a strategy keyed on rewards does not apply).
        The in-context co-player setting: a learner against a mixed pool of learners (itself,
        its snapshots) and fixed strategies.
      fixed_weights: relative weights of the `fixed` strategies.

    Returns:
      An `Agent` for the whole env whose state is a `LeagueState` (`wins` and `games` have
      `K + F` entries, the `F` fixed members last); `update` trains the learner on its team's
      steps and maintains the pool. Metrics add `league/win_rate` (the finished episodes' mean
      outcome for the learner, self-play episodes included; NaN when none ended),
      `league/members` and `league/entropy` (of the opponent distribution); with fixed members
      `league/fixed_win_rate` (against them, from the decayed counts).
    """
    del env_params
    if not isinstance(agent, Agent):  # a pair of agents (an Agent is a NamedTuple itself)
        from marljax.population.league_two import make_two_league

        return make_two_league(tuple(agent), env, config)
    validate_league(config)
    if config.populations == 2:
        raise ConfigError(
            "league.populations=2 trains one learner per team: pass make_league a pair of "
            "agents, one built for each team's TeamView"
        )
    teams = league_teams(env, config.teams)
    seats = jnp.asarray(np.stack([np.asarray(t) for t in teams]), jnp.int32)  # [2, n]
    fixed = tuple(fixed)
    probs = None
    if fixed:
        probs = _fixed_probs(fixed_weights, len(fixed))
        if len(teams[0]) != 1:
            raise ConfigError(
                f"fixed strategies play one-agent teams (repeated matrix games); the teams of "
                f"{env!r} have {len(teams[0])} agents"
            )
    parts = LeagueParts(agent, env, config, seats, fixed, probs)
    return agent._replace(
        init=functools.partial(init, parts),
        initial_carry=functools.partial(initial_carry, parts),
        act=functools.partial(act, parts),
        update=functools.partial(update, parts),
        get_params=lambda state: agent.get_params(state.learner),
        check_batch=functools.partial(check_batch, parts),
        rebuild=None,
    )


__all__ = [*league_parts.__all__, "LeagueParts", "make_league"]
