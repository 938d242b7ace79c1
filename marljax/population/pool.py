"""Co-player pools: one learner trained against co-players drawn per episode from a pool.

The setting of "Multi-agent cooperation through in-context co-player inference" (Weis et al.,
2026): a sequence-model agent (here a GRU policy) meets, each episode, a co-player drawn from a
diverse pool, so the best it can do is infer in context who it plays and answer accordingly.
The paper's finding is that agents trained this way become mutually shaping, and cooperate
when they meet each other.

- `pool_strategy` turns a pool of scripted `Strategy`s (`marljax.envs.matrix.strategies`) into
  one `Strategy` that draws a member at every episode start (its `init`) and plays it until the
  episode ends; `ScriptedCoPlayers(env, {1: pool_strategy(...)})` is then the env of one learner
  against the pool, trainable by any registered agent through `marljax.training.train.make_train`.
- `agent_strategy` freezes a trained single-learner agent into a `Strategy`, so learned
  snapshots can join a pool.
- `make_pool_training` builds that env, a registered agent for it and its `Trainer`.
- `parse_pool` reads a pool written as text, `"pool:tit_for_tat=2,always_defect"` (the
  `--opponents` option of `marljax train`).
- `pair_agents` seats two agents, each trained as the single learner of such an env, in the two
  seats of the two-player game (cross-play, `marljax.evaluation.crossplay.crossplay_matrix`).
  Matrix-game observations are ego-centred (own last action first), so a learner's view as
  agent 0 against a scripted co-player and as either agent of the two-player game is the same.
  `pool_crossplay` plays every trained seed with every other in the two-player game.

Reference: M. A. Weis, M. Wołczyk, R. Nasser, R. A. Saurous, B. Agüera y Arcas, J. Sacramento,
A. Meulemans, "Multi-agent cooperation through in-context co-player inference", 2026
(arXiv:2602.16301).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from marljax.agents.base import Agent, Observation
from marljax.core.config import ConfigError
from marljax.core.types import Environment, EnvParams
from marljax.envs.matrix.coplayers import ScriptedCoPlayers
from marljax.envs.matrix.matrix_game import MatrixGame, MatrixGameState
from marljax.envs.matrix.strategies import STRATEGIES, Strategy, get_strategy
from marljax.evaluation.crossplay import crossplay_matrix
from marljax.evaluation.rollout import evaluate_policy
from marljax.training.train import TrainConfig, Trainer, make_train

Array = jax.Array


def pool_strategy(
    strategies: Sequence[Strategy], weights: Sequence[float] | None = None
) -> Strategy:
    """One scripted co-player drawn from `strategies` at every episode start.

    `init(key)` draws the member `k` (with probabilities `weights`, uniform by default) and
    initialises every member's state; `act` plays member `k` (`lax.switch`, so the pool is one
    program whichever member is drawn).

    Args:
      strategies: `K >= 1` scripted strategies.
      weights: `[K]` non-negative sampling weights (normalised here); default uniform.

    Returns:
      A `Strategy` whose state is `(k [] int32, member states)`.

    Raises:
      ValueError: an empty pool, or weights of the wrong length, negative or summing to 0.
    """
    strategies = tuple(strategies)
    if not strategies:
        raise ValueError("pool_strategy needs at least one strategy, got an empty pool")
    num = len(strategies)
    if weights is None:
        probs = jnp.full((num,), 1.0 / num)
    else:
        w = [float(x) for x in weights]
        if len(w) != num or min(w) < 0 or sum(w) <= 0:
            raise ValueError(
                f"weights must be {num} non-negative numbers with a positive sum, got {w}"
            )
        probs = jnp.asarray(w, jnp.float32) / sum(w)

    def init(key):
        key_pick, key_init = jax.random.split(key)
        k = jax.random.choice(key_pick, num, p=probs).astype(jnp.int32)
        keys = jax.random.split(key_init, num)
        return k, tuple(s.init(kk) for s, kk in zip(strategies, keys, strict=True))

    def act(state, last_actions, last_rewards, me, key):
        k, members = state

        def branch(j):
            def play(members):
                a, new = strategies[j].act(members[j], last_actions, last_rewards, me, key)
                return jnp.asarray(a, jnp.int32), members[:j] + (new,) + members[j + 1 :]

            return play

        action, members = jax.lax.switch(k, [branch(j) for j in range(num)], members)
        return action, (k, members)

    return Strategy(init, act)


#: prefix of a pool written as text (`parse_pool`).
POOL_PREFIX = "pool:"


def parse_pool(spec: str) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """Read a pool of scripted co-players written as text.

    `"pool:NAME[=WEIGHT],NAME[=WEIGHT],..."`: names of `marljax.envs.matrix.strategies.
    STRATEGIES`, each with an optional relative sampling weight (default 1; the weights are
    normalised), e.g. `"pool:tit_for_tat,always_defect"` (half each) or
    `"pool:tit_for_tat=3,always_defect=1"` (three episodes in four against tit-for-tat).

    Args:
      spec: the text.

    Returns:
      `(names, weights)`, each of length `K >= 1`.

    Raises:
      ConfigError: a missing `pool:` prefix, an empty pool, an unknown name (with the close
        matches), a name given twice, or a weight that is not a non-negative number, or weights
        that sum to 0.
    """
    if not isinstance(spec, str) or not spec.startswith(POOL_PREFIX):
        raise ConfigError(
            f"a pool must be written {POOL_PREFIX}NAME[=WEIGHT],... (e.g. "
            f"{POOL_PREFIX}tit_for_tat,always_defect), got {spec!r}"
        )
    names, weights = [], []
    for item in spec[len(POOL_PREFIX) :].split(","):
        if not item.strip():
            continue
        name, _, raw = item.partition("=")
        name = name.strip()
        if name not in STRATEGIES:
            close = difflib.get_close_matches(name, list(STRATEGIES), n=3, cutoff=0.4)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(
                f"unknown co-player strategy {name!r} in {spec!r}.{hint} Known: "
                f"{', '.join(STRATEGIES)}."
            )
        if name in names:
            raise ConfigError(f"co-player strategy {name!r} is given twice in {spec!r}")
        try:
            weight = float(raw) if raw.strip() else 1.0
        except ValueError:
            weight = float("nan")
        if not weight >= 0 or weight == float("inf"):
            raise ConfigError(
                f"the weight of {name!r} in {spec!r} must be a non-negative number, got {raw!r}"
            )
        names.append(name)
        weights.append(weight)
    if not names:
        raise ConfigError(f"an empty pool {spec!r}: name at least one strategy")
    if sum(weights) <= 0:
        raise ConfigError(f"the weights of {spec!r} sum to 0; give one a positive weight")
    return tuple(names), tuple(weights)


def pool_from_spec(spec: str, num_actions: int) -> tuple[tuple[Strategy, ...], tuple[float, ...]]:
    """The strategies and weights of a pool written as text (`parse_pool`).

    Args:
      spec: e.g. `"pool:tit_for_tat,always_defect=0.5"`.
      num_actions: the game's number of actions `N` (for `random` and `cycle`).

    Returns:
      `(strategies, weights)` for `pool_strategy` / `make_pool_training`.
    """
    names, weights = parse_pool(spec)
    return tuple(get_strategy(n, num_actions) for n in names), weights


def agent_strategy(
    game: MatrixGame,
    env_params: Any,
    agent: Agent,
    agent_state: Any,
    hparams: Any,
    greedy: bool = False,
) -> Strategy:
    """A frozen trained agent as a scripted co-player: a learned snapshot for a pool.

    The agent must have been trained as the single learner of a two-player `game` (e.g. by
    `make_pool_training`). Each round it sees the observation the game gives its seat (the
    game's own encoding of the previous joint action, so what it saw in training) and acts with
    its recurrent carry, which the strategy state holds and `init` resets.

    Args:
      game: the two-player `MatrixGame`.
      env_params: its params.
      agent: the single-learner agent.
      agent_state: its trained state (no seed axis).
      hparams: its hparams.
      greedy: static; act greedily instead of sampling.

    Returns:
      A `Strategy` with state `(carry, t [] int32)`.
    """
    kwargs = {"greedy": True} if greedy else {}

    def init(key):
        return agent.initial_carry(1), jnp.int32(0)

    def act(state, last_actions, last_rewards, me, key):
        carry, t = state
        inner = MatrixGameState(last_actions=last_actions, last_rewards=last_rewards, t=t)
        no = jnp.array(False)
        ts = game._timestep(inner, env_params, last_rewards, no, no)  # the game's own encoding
        obs = Observation(
            obs=ts.obs[None, me : me + 1],
            action_mask=ts.action_mask[None, me : me + 1],
            global_state=ts.global_state[None],
            reset=(t == 0)[None],
        )
        action, carry, _ = agent.act(agent_state, carry, obs, key, hparams, **kwargs)
        return action[0, 0].astype(jnp.int32), (carry, t + 1)

    return Strategy(init, act)


def pair_agents(agent_a: Agent, agent_b: Agent) -> Agent:
    """Seat two single-learner agents in the two seats of a two-player game.

    `agent_a` acts for agent 0 and `agent_b` for agent 1, each on its own slice of the
    observation (`[E, 1, ...]`); their states, carries and hparams are pairs `(a, b)`. The
    result acts only (its `update` is `agent_a`'s and must not be called).

    Args:
      agent_a: an agent built for an env with one learner.
      agent_b: the same for the other seat (possibly another algorithm).

    Returns:
      An `Agent` for the two-player game, for `marljax.evaluation.rollout.evaluate_policy`.
    """

    def seat(obs: Observation, i: int) -> Observation:
        return obs.replace(obs=obs.obs[:, i : i + 1], action_mask=obs.action_mask[:, i : i + 1])

    def act(state, carry, obs, key, hparams, greedy=False):
        key_a, key_b = jax.random.split(key)
        kwargs = {"greedy": True} if greedy else {}
        act_a, carry_a, _ = agent_a.act(
            state[0], carry[0], seat(obs, 0), key_a, hparams[0], **kwargs
        )
        act_b, carry_b, _ = agent_b.act(
            state[1], carry[1], seat(obs, 1), key_b, hparams[1], **kwargs
        )
        return jnp.concatenate([act_a, act_b], axis=1), (carry_a, carry_b), ()

    def initial_carry(num_envs: int) -> Any:
        return agent_a.initial_carry(num_envs), agent_b.initial_carry(num_envs)

    return agent_a._replace(act=act, initial_carry=initial_carry)


class PoolTraining(NamedTuple):
    """What `make_pool_training` builds.

    Attributes:
      env: the one-learner env, `ScriptedCoPlayers(game, {1: pool_strategy(strategies)})`.
      env_params: its params (the game's).
      agent: the registered agent built for `env`.
      trainer: `make_train(train_config, env, agent, env_params)`.
    """

    env: Environment
    env_params: EnvParams
    agent: Agent
    trainer: Trainer


def make_pool_training(
    game: Environment,
    strategies: Sequence[Strategy],
    train_config: TrainConfig,
    algo: str = "ippo",
    agent_config: Any = None,
    env_params: EnvParams | None = None,
    weights: Sequence[float] | None = None,
) -> PoolTraining:
    """Train a registered agent as agent 0 of a two-player repeated game against a pool.

    Agent 1 is `pool_strategy(strategies, weights)`: a member drawn at every episode start.
    `jax.jit(jax.vmap(out.trainer.train, in_axes=(0, None)))(keys, hparams)` trains seeds.

    Args:
      game: a two-player repeated matrix game (e.g. `marljax.make("matrix/ipd-v0")[0]`).
      strategies: the pool, `K >= 1` scripted strategies.
      train_config: the run's `TrainConfig`.
      algo: a registered algorithm (`marljax.agents.ALGORITHMS`), e.g. `ippo`.
      agent_config: its static config (default: the algorithm's defaults; pass e.g.
        `PPOConfig(recurrent=True, critic_input="local")` for a GRU policy).
      env_params: the game's params (default: its defaults).
      weights: `[K]` sampling weights of the pool (default uniform).

    Returns:
      A `PoolTraining`.

    Raises:
      ConfigError: an unknown algorithm, a game without exactly two players, or one that is
        not a repeated matrix game.
      ValueError: an empty pool or bad weights (`pool_strategy`).
    """
    from marljax.agents import ALGORITHMS

    if algo not in ALGORITHMS:
        raise ConfigError(f"algo must be one of {sorted(ALGORITHMS)}, got {algo!r}")
    if game.num_agents != 2:
        raise ConfigError(
            f"a co-player pool needs a two-player game, got {game.name} with "
            f"{game.num_agents} agents"
        )
    spec = ALGORITHMS[algo]
    env = ScriptedCoPlayers(game, {1: pool_strategy(strategies, weights)})
    params = game.default_params() if env_params is None else env_params

    def reset_and_step(key):  # scripted co-players read the previous joint action
        state, _ = env.reset(key, params)
        return env.step(key, state, jnp.zeros((1,), jnp.int32), params)

    try:  # traced, not compiled
        jax.eval_shape(reset_and_step, jax.random.PRNGKey(0))
    except TypeError as err:
        raise ConfigError(
            f"a co-player pool needs a repeated matrix game (a state with the previous joint "
            f"action), got {game.name}: {err}"
        ) from None
    if agent_config is None:
        agent_config = spec.config_cls(**spec.config_defaults)
    agent = spec.factory(agent_config, env, params)
    return PoolTraining(env, params, agent, make_train(train_config, env, agent, params))


def pool_crossplay(
    game: Environment,
    env_params: EnvParams,
    agent: Agent,
    agent_states: Any,
    hparams: Any,
    key: Array,
    num_steps: int,
    num_envs: int = 16,
) -> Array:
    """Every trained seed against every other in the two-player game, greedy.

    Args:
      game: the two-player game the agents were trained in (as agent 0 against a pool).
      env_params: its params.
      agent: the single-learner agent (`PoolTraining.agent`).
      agent_states: `[S]`-stacked agent states (e.g. `trainer.train`'s under a seed `vmap`).
      hparams: the agent's hparams (shared by all seeds).
      key: PRNG key.
      num_steps: steps per evaluation env (e.g. the game's number of rounds; static).
      num_envs: parallel evaluation envs per pair (static).

    Returns:
      `[S, S, 2]` mean episode return of each seat: `out[i, j]` has seed `i` as agent 0 and
      seed `j` as agent 1 (the diagonal is each seed against itself).
    """
    joint = pair_agents(agent, agent)

    def play(state_a, state_b, k):
        out = evaluate_policy(
            game, env_params, joint, (state_a, state_b), (hparams, hparams), k, num_envs, num_steps
        )
        return out["episode_return_per_agent"]

    return crossplay_matrix(play, agent_states, key)
