"""Population-based evaluation (PBE) in repeated Rock-Paper-Scissors, after Lanctot et al. (2023).

An agent is scored by playing many matches against every bot of a fixed population (the
scripted bots of `marljax.envs.matrix.rps_bots`), giving a per-bot table of mean returns
`R[b] = E[G_agent | agent vs bot b]`, and three numbers (defined in Lanctot et al. 2023; the same
formulas as OpenSpiel's `python/examples/roshambo_population_example.py`, which computes them
from the paper's bot cross-table):

- population return, the mean return against a bot drawn uniformly from the population:
  `PopReturn = (1 / |B|) sum_b R[b]`;
- within-population exploitability, the best return any bot of the population earns against
  the agent: `WithinPopExpl = max_b E[G_b | agent vs b]`, which in the zero-sum RPS is
  `max_b -R[b]`. It is a lower bound on the true exploitability (the best response's return),
  tight only if the population holds a good exploiter of the agent's weaknesses. It is not
  clipped at 0 (a population with `randbot` keeps it >= 0 in expectation). Estimated from a
  finite number of episodes it is biased upwards (a max over noisy means): use enough episodes
  (see the standard errors of `PopulationReport`);
- aggregate score `AggScore = PopReturn - WithinPopExpl`, rewarding agents that both exploit
  the weak bots and are hard to exploit.

Returns are per episode (summed over the `num_rounds` throws); the paper plays 1000 throws, the
default here.

    env, params = marljax.make("matrix/rrps_population-v0")
    report = evaluate_population(env, agent, agent_state, hparams, key, params)
    print(format_population_table(report))

Reference: M. Lanctot, J. Schultz, N. Burch, M. O. Smith, D. Hennes, T. Anthony, J. Perolat,
"Population-based Evaluation in Repeated Rock-Paper-Scissors as a Benchmark for Multiagent
Reinforcement Learning", TMLR 2023 (arXiv:2303.03196).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from marljax.agents.base import AgentParams
from marljax.core.types import Environment, EnvParams, PRNGKey
from marljax.training import rollout

Array = jax.Array


# ----------------------------------------------------------------------------- metrics


def population_return(returns: Array) -> Array:
    """Mean return against a bot drawn uniformly from the population.

    Args:
      returns: `[..., P]` the agent's mean return against each of the `P` bots.

    Returns:
      `[...]` `PopReturn = mean_b returns[..., b]`.
    """
    return jnp.mean(jnp.asarray(returns, jnp.float32), axis=-1)


def within_population_exploitability(
    returns: Array, opponent_returns: Array | None = None
) -> Array:
    """The best return any bot of the population earns against the agent.

    `WithinPopExpl = max_b E[G_b]` (Lanctot et al. 2023). For a zero-sum game (RPS), omit
    `opponent_returns`: the bots' returns are `-returns`.

    Args:
      returns: `[..., P]` the agent's mean return against each bot.
      opponent_returns: optional `[..., P]` each bot's mean return against the agent
        (general-sum games).

    Returns:
      `[...]` the within-population exploitability (not clipped at 0).
    """
    returns = jnp.asarray(returns, jnp.float32)
    opp = -returns if opponent_returns is None else jnp.asarray(opponent_returns, jnp.float32)
    return jnp.max(opp, axis=-1)


def aggregate_score(returns: Array, opponent_returns: Array | None = None) -> Array:
    """`AggScore = PopReturn - WithinPopExpl` (Lanctot et al. 2023).

    Args:
      returns: `[..., P]` the agent's mean return against each bot.
      opponent_returns: optional `[..., P]` the bots' returns (default `-returns`, zero-sum).

    Returns:
      `[...]` aggregate score.
    """
    return population_return(returns) - within_population_exploitability(returns, opponent_returns)


def crosstable_metrics(table: Array) -> dict[str, Array]:
    """The three metrics of every row player of a zero-sum cross-table.

    Args:
      table: `[P, Q]` mean return of row player `i` against column bot `j` (e.g. from
        `bot_crosstable`, where rows and columns are the same bots, as in the paper's Table 1).

    Returns:
      `{"population_return", "within_population_exploitability", "aggregate_score"}`, each `[P]`.
    """
    table = jnp.asarray(table, jnp.float32)
    return {
        "population_return": population_return(table),
        "within_population_exploitability": within_population_exploitability(table),
        "aggregate_score": aggregate_score(table),
    }


# ----------------------------------------------------------------------------- rollouts


def episode_returns(
    env: Environment,
    env_params: EnvParams,
    agent: Any,
    agent_state: Any,
    hparams: Any,
    key: PRNGKey,
    num_episodes: int,
    num_rounds: int,
    greedy: bool = False,
) -> tuple[Array, Array]:
    """Play `num_episodes` episodes of `num_rounds` steps in parallel, without auto-reset.

    One `marljax.training.rollout.rollout`; rewards after an episode's end are not counted. Jittable (`num_episodes`, `num_rounds`, `greedy` static) and
    vmappable over `env_params` (e.g. one one-hot `bot_weights` per bot).

    Args:
      env: the core environment (e.g. an `RPSPopulation`).
      env_params: its params.
      agent: a `marljax.agents.Agent` built for `env` (recurrent carries start at reset).
      agent_state: the agent's state (one run, no seed axis).
      hparams: the agent's hyperparameters (acting reads them).
      key: PRNG key.
      num_episodes: parallel episodes `E`.
      num_rounds: steps per episode `T`; every episode should end by then.
      greedy: act with the agent's deterministic policy instead of sampling (default: sample;
        in RPS the mixed strategy is the point).

    Returns:
      `(returns [E, A] summed rewards, finished [E] bool, the episode ended within T steps)`.
    """
    vec_env = rollout.batched_env(env, auto_reset=False)
    key_reset, key_run = jax.random.split(key)
    carry = agent.initial_carry(num_episodes)
    state = rollout.reset(vec_env, env_params, key_reset, key_run, num_episodes, carry)
    _, (reward, done) = rollout.rollout(
        vec_env,
        env_params,
        agent,
        agent_state,
        hparams,
        state,
        num_rounds,
        greedy=greedy,
        record=lambda transition: (transition.reward, transition.episode.done),
    )
    return rollout.first_episode_returns(reward, done)


def population_returns(
    env: Any,
    agent: Any,
    agent_state: Any,
    hparams: Any,
    key: PRNGKey,
    env_params: EnvParams | None = None,
    num_episodes: int = 32,
    num_rounds: int | None = None,
    greedy: bool = False,
) -> Array:
    """The agent's return in each episode against each bot of an `RPSPopulation`, in one program.

    Args:
      env: an `RPSPopulation` (e.g. `marljax.make("matrix/rrps_population-v0")[0]`).
      agent: the agent (acting as agent 0, the learner).
      agent_state: its state (no seed axis).
      hparams: its hyperparameters.
      key: PRNG key.
      env_params: the env's params (default `env.default_params()`); `bot_weights` is replaced by
        each bot's one-hot vector in turn.
      num_episodes: episodes per bot `E`.
      num_rounds: rounds per episode (default `env_params.num_rounds`, read on the host).
      greedy: act with the agent's deterministic policy (default: sample).

    Returns:
      `[P, E]` float32 returns, in the order of `env.bots`.
    """
    env_params, num_rounds = _check_sizes(env, env_params, num_episodes, num_rounds)
    env = env.per_bot_view() if hasattr(env, "per_bot_view") else env
    program = _population_program(env, agent, int(num_episodes), num_rounds, bool(greedy))
    keys = jax.random.split(key, env.num_bots)
    return program(env.one_hot_params(env_params), agent_state, hparams, keys)


def population_returns_over_seeds(
    env: Any,
    agent: Any,
    agent_states: Any,
    hparams: Any,
    key: PRNGKey,
    env_params: EnvParams | None = None,
    num_episodes: int = 32,
    num_rounds: int | None = None,
    greedy: bool = False,
) -> Array:
    """`population_returns` for a stack of agents (e.g. one per training seed), in one program.

    Args:
      agent_states: the agents' states with a leading seed axis `[S, ...]`.
      (the rest as `population_returns`)

    Returns:
      `[S, P, E]` float32 returns.
    """
    env_params, num_rounds = _check_sizes(env, env_params, num_episodes, num_rounds)
    env = env.per_bot_view() if hasattr(env, "per_bot_view") else env
    num_seeds = jax.tree.leaves(agent_states)[0].shape[0]
    program = _seeds_program(env, agent, int(num_episodes), num_rounds, bool(greedy))
    keys = jax.random.split(key, (num_seeds, env.num_bots))
    return program(env.one_hot_params(env_params), agent_states, hparams, keys)


def _check_sizes(env, env_params, num_episodes, num_rounds):
    """Refuse bad sizes on the host, before anything compiles."""
    env_params = env.default_params() if env_params is None else env_params
    if num_rounds is None:
        num_rounds = int(np.asarray(env_params.num_rounds))
    num_rounds = int(num_rounds)
    limit = getattr(env, "num_throws", None)
    if num_rounds < 1 or (limit is not None and num_rounds > limit):
        raise ValueError(f"num_rounds must be in [1, {limit}], got {num_rounds}")
    if int(num_episodes) < 1:
        raise ValueError(f"num_episodes must be >= 1, got {num_episodes}")
    return env_params, num_rounds


@functools.lru_cache(maxsize=16)
def _seeds_program(env: Any, agent: Any, num_episodes: int, num_rounds: int, greedy: bool):
    inner = _population_program(env, agent, num_episodes, num_rounds, greedy)
    return jax.jit(jax.vmap(inner, in_axes=(None, 0, None, 0)))


@functools.lru_cache(maxsize=16)
def _population_program(env: Any, agent: Any, num_episodes: int, num_rounds: int, greedy: bool):
    """One jitted program per (env, agent, sizes): new agent states or params reuse it."""

    def one_bot(params, agent_state, hparams, k):
        total, _ = episode_returns(
            env, params, agent, agent_state, hparams, k, num_episodes, num_rounds, greedy
        )
        return total[:, 0]

    def program(per_bot_params, agent_state, hparams, keys):
        # lax.map, not vmap: each bot's index stays unbatched, so only its own code runs.
        return jax.lax.map(
            lambda pk: one_bot(pk[0], agent_state, hparams, pk[1]), (per_bot_params, keys)
        )

    return jax.jit(program)


def bot_crosstable(
    key: PRNGKey,
    names: Sequence[str] | None = None,
    num_episodes: int = 4,
    num_rounds: int = 1000,
    row_names: Sequence[str] | None = None,
) -> Array:
    """Mean return of each row bot against each column bot (the paper's cross-table).

    One compiled program over rows x columns x episodes, in which every bot's code runs only on
    the matches it plays (`roshambo.population.crosstable_scores`).

    Args:
      key: PRNG key.
      names: column bots (default all of `rps_bots.BOT_NAMES`, the ported competition bots).
      num_episodes: matches per cell.
      num_rounds: throws per match (default 1000, as in the paper).
      row_names: row bots (default: the same as `names`).

    Returns:
      `[P_rows, P]` float32 mean per-match return (wins - losses) of the row bot.
    """
    from marljax.envs.matrix import rps_bots
    from marljax.envs.matrix.roshambo.population import crosstable_scores

    cols = rps_bots.get_bots(names)
    rows = rps_bots.get_bots(row_names) if row_names is not None else cols
    scores = crosstable_scores(rows, cols, key, int(num_episodes), int(num_rounds))
    return scores.astype(jnp.float32).mean(axis=-1)


def fixed_policy_agent(num_actions: int = 3) -> Any:
    """A non-learning `Agent` that samples every action from a fixed mixed strategy.

    Its `agent_state` IS the strategy: `[N]` probabilities (e.g. `jnp.ones(3) / 3`, the RPS
    equilibrium, or a one-hot vector for a constant policy), so one compiled evaluation serves
    every strategy. Useful as a reference row in population tables. Acting greedily plays the
    most probable action (the first of ties); `get_params` returns `AgentParams(policy=probs)`.

    Args:
      num_actions: number of actions `N`.

    Returns:
      A `marljax.agents.Agent` (its `update` does nothing).
    """
    from marljax.agents.base import Agent

    def act(probs, carry, obs, key, hparams, greedy=False):
        shape = obs.obs.shape[:2]  # [E, A]
        probs = jnp.asarray(probs, jnp.float32)
        if greedy:
            actions = jnp.broadcast_to(jnp.argmax(probs), shape).astype(jnp.int32)
        else:
            logits = jnp.log(jnp.maximum(probs, 1e-30))
            actions = jax.random.categorical(key, logits, shape=shape).astype(jnp.int32)
        return actions, carry, {}

    return Agent(
        init=lambda key, hparams: jnp.full((num_actions,), 1.0 / num_actions, jnp.float32),
        initial_carry=lambda num_envs: (),
        act=act,
        update=lambda state, traj, hparams, key: (state, {}),
        default_hparams=lambda: (),
        get_params=lambda state: AgentParams(policy=state),
    )


# ----------------------------------------------------------------------------- reports


class PopulationReport(NamedTuple):
    """A per-bot table and the population metrics (host numpy values).

    Attributes:
      names: the bots, in table order.
      mean: `[P]` mean per-episode return against each bot.
      stderr: `[P]` standard error of each mean (NaN with one episode).
      population_return: `PopReturn`.
      within_population_exploitability: `WithinPopExpl`.
      aggregate_score: `AggScore`.
      num_episodes: episodes per bot.
      num_rounds: rounds per episode.
    """

    names: tuple[str, ...]
    mean: np.ndarray
    stderr: np.ndarray
    population_return: float
    within_population_exploitability: float
    aggregate_score: float
    num_episodes: int
    num_rounds: int | None


def report_from_returns(
    names: Sequence[str], returns: Array, num_rounds: int | None = None
) -> PopulationReport:
    """Summarise `[P, E]` per-episode returns (or `[P]` means) into a `PopulationReport`."""
    r = np.asarray(returns, np.float64)
    if r.ndim == 1:
        r = r[:, None]
    if r.shape[0] != len(names):
        raise ValueError(f"returns has {r.shape[0]} rows for {len(names)} bots")
    n = r.shape[1]
    mean = r.mean(axis=1)
    stderr = r.std(axis=1, ddof=1) / np.sqrt(n) if n > 1 else np.full_like(mean, np.nan)
    return PopulationReport(
        names=tuple(names),
        mean=mean,
        stderr=stderr,
        population_return=float(population_return(mean)),
        within_population_exploitability=float(within_population_exploitability(mean)),
        aggregate_score=float(aggregate_score(mean)),
        num_episodes=n,
        num_rounds=num_rounds,
    )


def evaluate_population(
    env: Any,
    agent: Any,
    agent_state: Any,
    hparams: Any,
    key: PRNGKey,
    env_params: EnvParams | None = None,
    num_episodes: int = 32,
    num_rounds: int | None = None,
    greedy: bool = False,
) -> PopulationReport:
    """Evaluate an agent against every bot of an `RPSPopulation` (see `population_returns`)."""
    env_params, num_rounds = _check_sizes(env, env_params, num_episodes, num_rounds)
    returns = population_returns(
        env, agent, agent_state, hparams, key, env_params, num_episodes, num_rounds, greedy
    )
    return report_from_returns(env.bots, returns, num_rounds)


def format_population_table(report: PopulationReport, title: str | None = None) -> str:
    """A printable per-bot table with the population metrics underneath."""
    lines = [title] if title else []
    rounds = f", {report.num_rounds} rounds" if report.num_rounds else ""
    lines.append(f"return per episode vs each bot ({report.num_episodes} episodes{rounds}):")
    width = max(len(n) for n in report.names)
    for name, m, s in zip(report.names, report.mean, report.stderr, strict=True):
        err = "" if np.isnan(s) else f" +- {s:6.2f}"
        lines.append(f"  {name:<{width}}  {m:8.2f}{err}")
    worst = report.names[int(np.argmin(report.mean))]
    lines.append(f"population return (PopReturn):            {report.population_return:8.2f}")
    lines.append(
        f"within-population exploitability:        {report.within_population_exploitability:8.2f}"
        f"  (by {worst})"
    )
    lines.append(f"aggregate score (PopReturn - WithinExpl): {report.aggregate_score:8.2f}")
    return "\n".join(lines)


__all__ = [
    "PopulationReport",
    "aggregate_score",
    "bot_crosstable",
    "crosstable_metrics",
    "episode_returns",
    "evaluate_population",
    "fixed_policy_agent",
    "format_population_table",
    "population_return",
    "population_returns",
    "population_returns_over_seeds",
    "report_from_returns",
    "within_population_exploitability",
]
