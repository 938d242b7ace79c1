"""Evaluating a league on device: cross-play between snapshots, Elo, Nash, alpha-rank, exploitability.

    out = league_crossplay(agent, state, env, env_params, key, teams, num_envs=32, num_steps=100)
    out["win_rate"]            # [K, K]: snapshot i (team 0) against snapshot j (team 1)
    report = league_report(out["win_rate"], state.filled)   # Elo, Nash and alpha-rank
    br = make_best_response(agent, env, pool, num_envs)     # a learner against a frozen pool
    curve = exploitability_curve(...)                        # one best response per generation

`league` is the agent `marljax.population.league.make_league` built and `state` one run's
`LeagueState` (no seed axis). Every pair of the pool plays `num_envs` episodes (each env to the
end of its first episode within `num_steps`) in one `vmap`.

Approximate exploitability of a policy (or a mixture of snapshots) is measured by training a
fresh learner against it, frozen: the best response's win rate against it minus 1/2 (0 for an
unexploitable policy of a symmetric zero-sum game, 1/2 for one always beaten).
`exploitability_curve` trains one best response per generation (snapshot `g`, or the rule's
mixture over the snapshots up to `g`) as one program (`vmap` over generations and seeds).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.agents.base import Agent
from marljax.core.types import Environment, EnvParams
from marljax.population.league import LeagueConfig, LeagueState, league_teams, make_league
from marljax.population.metasolvers import alpharank, get_meta_solver
from marljax.training import rollout
from marljax.training.train import TrainConfig, make_train

Array = jax.Array


def league_crossplay(
    agent: Agent | tuple,
    state: LeagueState | Any,
    env: Environment,
    env_params: EnvParams,
    key: Array,
    teams: tuple,
    num_envs: int = 32,
    num_steps: int = 100,
    hparams: Any = None,
    sides: str = "both",
) -> dict[str, Array]:
    """Every snapshot of `state.pool` against every other (sampled actions), one program.

    Args:
      agent: the league's learner (built for one team, as for `make_league`); for a
        two-population league (`state` a `TwoLeagueState`), its pair of learners.
      state: a `LeagueState` (or `TwoLeagueState`): one run's, or several runs' with leading
        run axes (e.g. a finished run's `[G, S, ...]`), all evaluated in one `vmap`.
      env, env_params: the env the league plays.
      key: PRNG key.
      teams: the league's two teams (`marljax.population.league.league_teams`).
      num_envs: episodes per pair (static).
      num_steps: step budget of an episode (static; at least the env's episode length).
      hparams: the learner's hparams (default: its defaults; shared by the runs).
      sides: `both` (default): each episode seats member `i` on a team drawn at random, so an
        advantage of one side averages out; `first`: member `i` always plays team 0. A
        two-population league seats population 0's snapshot `i` on team 0, always.

    Returns:
      `{"win_rate", "score", "finished", "return"}`, each `[..., K, K]` (`...` the run axes):
      member `i` against member `j` (on the other team; with two populations, population 0's
      `i` against population 1's `j`): `i`'s win rate (draws 1/2), its team's mean return
      minus the opponent's, the share of episodes that finished within `num_steps`, and `i`'s
      team's mean return (the sum over its agents).
    """
    two = not isinstance(agent, Agent)
    first = agent[0] if two else agent
    hparams = first.default_hparams() if hparams is None else hparams
    state = jax.tree.map(jnp.asarray, state)  # host arrays (a finished run's) to device
    seats = jnp.asarray(np.stack([np.asarray(t) for t in teams]), jnp.int32) if not two else None
    filled = state.sides[0].filled if two else state.filled
    num = filled.shape[-1]
    runs = filled.shape[:-1]
    if two:  # both learners replaced by the pair's snapshots; each plays the other (rule self)
        envs = 2 * num_envs
        config = LeagueConfig(rule="self", capacity=num, num_envs=envs, teams=teams)
        league = make_league(tuple(agent), env, config)
    else:
        envs = num_envs
        config = LeagueConfig(rule="uniform", capacity=num, num_envs=num_envs, teams=teams,
                              sides=sides)  # fmt: skip
        league = make_league(agent, env, config)
    vec_env = rollout.batched_env(env)

    def seated(state, i, j):
        if two:
            s0, s1 = state.sides
            pick = lambda s, k: s.replace(learner=jax.tree.map(lambda p: p[k], s.pool))  # noqa: E731
            return state.replace(sides=(pick(s0, i), pick(s1, j)))
        return state.replace(
            learner=jax.tree.map(lambda p: p[i], state.pool), weights=jax.nn.one_hot(j, num)
        )

    def play(state, i, j, k):
        k_reset, k_run = jax.random.split(k)
        rs = rollout.reset(vec_env, env_params, k_reset, k_run, envs, league.initial_carry(envs))
        side_of = (lambda t: jnp.zeros_like(t.truncated, jnp.int32)) if two else (
            lambda t: t.policy_info[2]
        )  # fmt: skip
        _, (reward, done, side) = rollout.rollout(
            vec_env, env_params, league, seated(state, i, j), hparams, rs, num_steps,
            record=lambda t: (t.reward, t.terminated | t.truncated, side_of(t)),
        )  # fmt: skip
        returns, finished = rollout.first_episode_returns(reward, done)
        side = side[0]  # every env starts an episode at the first step
        if two:
            mine = returns[:, np.asarray(teams[0])].sum(-1)
            diff = mine - returns[:, np.asarray(teams[1])].sum(-1)
        else:
            take = lambda team: jnp.take_along_axis(returns, team, axis=1).sum(-1)  # noqa: E731
            mine = take(seats[side])
            diff = mine - take(seats[1 - side])
        outcome = jnp.where(diff > 0, 1.0, jnp.where(diff < 0, 0.0, 0.5))
        return outcome.mean(), diff.mean(), finished.mean(), mine.mean()

    idx = jnp.arange(num)
    row = jax.vmap(play, in_axes=(None, None, 0, 0))
    table = jax.vmap(row, in_axes=(None, 0, None, 0))
    for _ in runs:
        table = jax.vmap(table, in_axes=(0, None, None, 0))
    keys = jax.random.split(key, int(np.prod(runs, dtype=int)) * num * num)
    keys = keys.reshape(*runs, num, num, -1)
    win, score, finished, ret = jax.jit(table)(state, idx, idx, keys)
    return {"win_rate": win, "score": score, "finished": finished, "return": ret}


def elo_ratings(win_rate: Array, mask: Array | None = None, steps: int = 2000) -> Array:
    """Elo ratings fitted to a win-rate matrix (Bradley-Terry, 400-point scale, mean 0).

    Maximises `sum_ij w_ij log s(R_i - R_j) + (1 - w_ij) log s(R_j - R_i)` over the valid
    off-diagonal pairs, `s(d) = 1 / (1 + 10^(-d / 400))`, by gradient ascent.

    Args:
      win_rate: `[K, K]` win rate of `i` against `j` (both seats may be filled).
      mask: `[K]` bool valid members (default all); invalid ones get NaN.
      steps: gradient steps (static).

    Returns:
      `[K]` ratings, mean 0 over the valid members.
    """
    w = jnp.asarray(win_rate, jnp.float32)
    num = w.shape[0]
    valid = jnp.ones((num,), bool) if mask is None else jnp.asarray(mask, bool)
    pairs = valid[:, None] & valid[None, :] & ~jnp.eye(num, dtype=bool)
    scale = jnp.log(10.0) / 400.0

    def loss(r):
        d = (r[:, None] - r[None, :]) * scale
        ll = w * jax.nn.log_sigmoid(d) + (1.0 - w) * jax.nn.log_sigmoid(-d)
        return -jnp.sum(jnp.where(pairs, ll, 0.0)) / jnp.maximum(pairs.sum(), 1)

    def step(r, _):
        return r - 2e4 * jax.grad(loss)(r), None

    r, _ = jax.lax.scan(step, jnp.zeros((num,)), None, length=steps)
    r = r - jnp.sum(jnp.where(valid, r, 0.0)) / jnp.maximum(valid.sum(), 1)
    return jnp.where(valid, r, jnp.nan)


def league_report(win_rate: Array, mask: Array | None = None, meta_iterations: int = 1000):
    """Elo, Nash and alpha-rank of the snapshots from their cross-play win rates.

    The empirical game is symmetrised (`(W + 1 - W^T) / 2`, so each pair's two seatings count
    once) and made zero-sum around 1/2.

    Returns:
      `{"elo": [K], "nash": [K], "alpharank": [K], "nash_value": []}`: Nash of the symmetric
      game (its row strategy), alpha-rank's marginal, and the Nash mixture's worst-case win
      rate against any single member.
    """
    w = jnp.asarray(win_rate, jnp.float32)
    num = w.shape[0]
    valid = jnp.ones((num,), bool) if mask is None else jnp.asarray(mask, bool)
    sym = 0.5 * (w + 1.0 - w.T)
    game = jnp.stack([sym - 0.5, 0.5 - sym])
    masks = jnp.stack([valid, valid])
    nash = get_meta_solver("nash")(game, masks, None, meta_iterations)[0]
    rank = alpharank(game, masks)[0]
    worst = jnp.min(jnp.where(valid, nash @ sym, jnp.inf))
    return {
        "elo": elo_ratings(sym, valid),
        "nash": nash,
        "alpharank": rank,
        "nash_value": worst,
    }


def pair_report(win_rate: Array, filled_0: Array, filled_1: Array,
                meta_iterations: int = 1000) -> dict[str, Array]:  # fmt: skip
    """Nash of the bimatrix game between two populations' snapshots (a two-population league).

    Args:
      win_rate: `[K, K]` win rate of population 0's snapshot `i` (team 0) against population
        1's `j` (`league_crossplay` of a `TwoLeagueState`); the game is zero-sum around 1/2.
      filled_0, filled_1: `[K]` the slots holding a snapshot.

    Returns:
      `{"nash_0": [K], "nash_1": [K], "value_0": [], "value_1": []}`: each population's Nash
      mixture and its worst-case win rate against any single snapshot of the other.
    """
    w = jnp.asarray(win_rate, jnp.float32)
    f0, f1 = jnp.asarray(filled_0, bool), jnp.asarray(filled_1, bool)
    game = jnp.stack([w - 0.5, 0.5 - w])
    sigma = get_meta_solver("nash")(game, jnp.stack([f0, f1]), None, meta_iterations)
    value_0 = jnp.min(jnp.where(f1, sigma[0] @ w, jnp.inf))
    value_1 = jnp.min(jnp.where(f0, 1.0 - w @ sigma[1], jnp.inf))
    return {"nash_0": sigma[0], "nash_1": sigma[1], "value_0": value_0, "value_1": value_1}


def generation_targets(
    win_rate: Array, age: Array, meta_iterations: int = 1000, age_1: Array | None = None
) -> dict[str, Array]:
    """The policies of each generation of a league: its newest snapshot and its meta-strategy.

    Generation `g` is the league after its `g`-th snapshot (snapshots ordered by `age`, the
    initial policy first).

    Args:
      win_rate: `[K, K]` cross-play win rates of the snapshots (`league_crossplay`).
      age: `[K]` update at which each snapshot was taken (-1: empty slot).
      meta_iterations: iterations of the Nash solver.

      age_1: a two-population league's population-1 ages (`win_rate` then is population 0's
        snapshots against population 1's, `league_crossplay` of a `TwoLeagueState`).

    Returns:
      `{"latest": [K, K], "nash": [K, K], "filled": [K]}`: row `g` of `latest` is one-hot on
      generation `g`'s newest snapshot (what naive self-play outputs), row `g` of `nash` the
      Nash mixture over the snapshots up to generation `g` (PSRO's output); rows past the
      number of snapshots repeat the last. With `age_1`: `latest_0`, `nash_0`, `latest_1`,
      `nash_1`, each population's (the Nash of the bimatrix game between the generations up
      to `g` of both, `pair_report`), and `filled`.
    """

    def ranks(age):
        age = jnp.asarray(age)
        num = age.shape[0]
        order = jnp.argsort(jnp.where(age < 0, jnp.iinfo(jnp.int32).max, age))
        rank = jnp.zeros((num,), jnp.int32).at[order].set(jnp.arange(num, dtype=jnp.int32))
        return age, rank, jnp.sum(age >= 0)

    age, rank, count = ranks(age)
    num = age.shape[0]
    if age_1 is not None:
        age_1, rank_1, count_1 = ranks(age_1)
        count = jnp.minimum(count, count_1)

    def row(g):
        g = jnp.minimum(g, count - 1)
        upto = (rank <= g) & (age >= 0)
        latest = (rank == g).astype(jnp.float32)
        if age_1 is None:
            nash = league_report(win_rate, upto, meta_iterations)["nash"]
            return latest, jnp.where(upto, nash, 0.0)
        upto_1 = (rank_1 <= g) & (age_1 >= 0)
        report = pair_report(win_rate, upto, upto_1, meta_iterations)
        return (latest, jnp.where(upto, report["nash_0"], 0.0),
                (rank_1 == g).astype(jnp.float32), jnp.where(upto_1, report["nash_1"], 0.0))  # fmt: skip

    filled = jnp.arange(num) < count
    if age_1 is None:
        latest, nash = jax.vmap(row)(jnp.arange(num))
        return {"latest": latest, "nash": nash, "filled": filled}
    names = ("latest_0", "nash_0", "latest_1", "nash_1")
    return {**dict(zip(names, jax.vmap(row)(jnp.arange(num)), strict=True)), "filled": filled}


@struct.dataclass
class BestResponseHParams:
    """Traced hparams of a best response: the learner's, the frozen pool and its mixture.

    Attributes:
      agent: the learner's hparams.
      pool: the frozen opponents, stacked agent states `[K, ...]` (traced, so one compiled
        program serves every pool of the same shape, and pools can be a `vmap` axis).
      weights: `[K]` probabilities of the pool's members (one-hot: a single snapshot).
    """

    agent: Any
    pool: Any
    weights: Array


def make_best_response(agent: Agent, env: Environment, pool: Any, num_envs: int,
                       teams: tuple | None = None, opponent: Agent | None = None,
                       side: int = 0) -> Agent:  # fmt: skip
    """A fresh learner (team 0) trained against a frozen pool (team 1), drawn per episode.

    Args:
      agent: the learner, built for one team (`TeamView`), as for `make_league`.
      env: the two-sided env.
      pool: stacked agent states `[K, ...]` (e.g. a finished league's `state.pool`): the
        default hparams' pool, and the shape of any other.
      num_envs: the runner's `num_envs`.
      teams: as for `LeagueConfig.teams`.
      opponent: the agent whose states `pool` holds, when it is not `agent` (a two-population
        league: the other population's learner); the learner then plays team `side` and the
        pool the other (`marljax.population.league_two.make_team_best_response`).
      side: the learner's team with an `opponent`.

    Returns:
      An `Agent` whose hparams are `BestResponseHParams` (default: the learner's defaults,
      `pool` and uniform weights); its metrics' `league/win_rate` is its win rate against the
      pool.
    """
    pool = jax.tree.map(jnp.asarray, pool)
    num = int(jax.tree.leaves(pool)[0].shape[0])
    if opponent is not None:
        from marljax.population.league_two import make_team_best_response

        br = make_team_best_response(agent, opponent, env, num_envs, league_teams(
            env, teams, same_size=False), side)  # fmt: skip
        return br._replace(default_hparams=lambda: BestResponseHParams(
            agent.default_hparams(), pool, jnp.full((num,), 1.0 / num)))  # fmt: skip
    config = LeagueConfig(rule="uniform", capacity=num, snapshot_interval=2**30,
                          num_envs=num_envs, teams=teams)  # fmt: skip
    league = make_league(agent, env, config)

    def frozen(state, hparams):
        return state.replace(pool=hparams.pool, filled=jnp.ones((num,), bool),
                             weights=hparams.weights)  # fmt: skip

    def init(key, hparams):
        state = frozen(league.init(key, hparams.agent), hparams)
        return state.replace(age=jnp.zeros((num,), jnp.int32))

    def act(state, carry, obs, key, hparams, greedy=False):
        return league.act(frozen(state, hparams), carry, obs, key, hparams.agent, greedy)

    def update(state, traj, hparams, key, axis_name=None):
        new, metrics = league.update(frozen(state, hparams), traj, hparams.agent, key, axis_name)
        return new.replace(newest=state.newest), metrics

    def default_hparams():
        return BestResponseHParams(agent.default_hparams(), pool, jnp.full((num,), 1.0 / num))

    return league._replace(init=init, act=act, update=update, default_hparams=default_hparams)


def exploitability_curve(
    agent: Agent,
    env: Environment,
    env_params: EnvParams,
    pool: Any,
    weights: Array,
    train: TrainConfig,
    key: Array,
    seeds: int = 1,
    hparams: Any = None,
    last_fraction: float = 0.1,
    teams: tuple | None = None,
    opponent: Agent | None = None,
    side: int = 0,
) -> Array:
    """Approximate exploitability of `G` targets: one best response each, one program.

    Args:
      agent: a fresh learner for one team (`TeamView`).
      env, env_params: the env.
      pool: stacked snapshots `[K, ...]` of one run, or `[R, K, ...]` of `R` runs (e.g. a
        league's seeds), every run's targets trained in the same program.
      weights: `[G, K]` (or `[R, G, K]`) each target's mixture over its run's snapshots (rows
        of `eye(K)`: the snapshots themselves).
      train: the best responses' training run.
      key: PRNG key.
      seeds: best responses per target.
      hparams: the learner's hparams (default: its defaults).
      last_fraction: share of the best response's last updates whose win rate is averaged.
      teams: as for `LeagueConfig.teams`.
      opponent, side: as for `make_best_response` (the pool's agent, when it is not `agent`,
        and the learner's team).

    Returns:
      `[seeds, G]` (or `[R, seeds, G]`): each best response's win rate against its target
      minus 1/2, averaged over its last `last_fraction` of updates.
    """
    pool = jax.tree.map(jnp.asarray, pool)
    weights = jnp.asarray(weights, jnp.float32)
    batched = weights.ndim == 3
    one_pool = jax.tree.map(lambda x: x[0], pool) if batched else pool
    br = make_best_response(agent, env, one_pool, train.num_envs, teams, opponent, side)
    trainer = make_train(train, env, br, env_params)
    base = agent.default_hparams() if hparams is None else hparams
    num_targets = weights.shape[-2]

    def one(k, p, w):
        _, metrics = trainer.train(k, BestResponseHParams(base, p, w))
        rate = metrics["league/win_rate"]
        tail = max(1, int(round(rate.shape[0] * last_fraction)))
        return jnp.nanmean(rate[-tail:]) - 0.5

    run = jax.vmap(jax.vmap(one, in_axes=(0, None, 0)), in_axes=(0, None, None))
    if not batched:
        keys = jax.random.split(key, seeds * num_targets).reshape(seeds, num_targets, -1)
        return jax.jit(run)(keys, pool, weights)
    runs = weights.shape[0]
    keys = jax.random.split(key, runs * seeds * num_targets).reshape(runs, seeds, num_targets, -1)
    return jax.jit(jax.vmap(run))(keys, pool, weights)


__all__ = [
    "BestResponseHParams",
    "generation_targets",
    "elo_ratings",
    "exploitability_curve",
    "league_crossplay",
    "league_report",
    "pair_report",
    "make_best_response",
]
