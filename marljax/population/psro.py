"""PSRO on two-player normal-form games as one compiled program.

Policy-Space Response Oracles (Lanctot et al. 2017) grows one population of policies per player.
Each iteration

1. a meta-solver (`marljax.population.metasolvers`) turns the empirical payoff matrix between
   the populations into a meta-strategy `sigma_i` per player;
2. each player gets a new policy, a best response to the other player's meta-mixture
   `sum_k sigma_{-i}[k] pi_{-i}^k`;
3. the new policies are evaluated against every member of the other population, extending the
   empirical payoff matrix by one row and one column;
4. the NashConv of the meta-strategy (the mixture `sum_k sigma_i[k] pi_i^k` of each player) in
   the true game is recorded.

In a normal-form game with `N` actions a policy is a distribution over actions, so a population
is one `[K, N]` array per player (`[2, K, N]` for both), grown inside a fixed capacity `K` with a
count of valid members: the whole run, every iteration included, is one `lax.scan` that `jit`
compiles once and `vmap` batches over seeds. Special cases: fictitious (self-)play is PSRO with
the `uniform` meta-solver, iterated best-response self-play is PSRO with `last`.

Best responses (`PSROConfig.best_response`):

- `exact`: the pure best response to the opponents' meta-mixture
  (`marljax.evaluation.normal_form.best_response`);
- `pg`: learned by a softmax policy-gradient learner that plays the env: every step it samples
  `br_batch` episodes, in each an opponent member drawn from the opponent's meta-strategy (one
  per episode) and actions from both policies, steps the env, and ascends REINFORCE
  `grad = mean((r - mean r) * grad log pi(a))` with step `br_learning_rate`;
- `agent`: trained by a registered agent (`PSROConfig.br_algo`, e.g. `ippo`) with
  `marljax.training.train.make_train` on `MixedCoPlayer`, the game seen by one learner whose co-player
  samples from the opponent's meta-mixture held in the env params, so one compiled training
  program serves every iteration and both players (a `vmap` over the two roles, the column
  player's game with the roles swapped). The new policy is the trained agent's action
  frequencies over `br_samples` sampled acts on the first-round observation.

    env, params = marljax.make("matrix/rps-v0")
    run = make_psro(PSROConfig(population_size=20, meta_solver="uniform"), env)
    out = jax.jit(jax.vmap(run, in_axes=(0, None)))(keys, PSROHParams())
    out.nash_conv        # [S, 20]: NashConv of the meta-strategy after each iteration

Reference: M. Lanctot, V. Zambaldi, A. Gruslys, A. Lazaridou, K. Tuyls, J. Perolat, D. Silver,
T. Graepel, "A unified game-theoretic approach to multiagent reinforcement learning",
NeurIPS 2017.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.agents.base import Observation
from marljax.core.config import ConfigError, check_ranges, param
from marljax.core.types import Environment, EnvParams
from marljax.envs.matrix.matrix_game import MatrixGame
from marljax.evaluation import normal_form as nf
from marljax.population.coplayer import MixedCoPlayer, swap_roles
from marljax.population.metasolvers import MetaSolverHParams, get_meta_solver
from marljax.training.train import TrainConfig, make_train

Array = jax.Array

#: best-response oracles of `make_psro`.
BEST_RESPONSES = ("exact", "pg", "agent")


@dataclasses.dataclass(frozen=True)
class PSROConfig:
    """Static configuration of a PSRO run (shapes and loop lengths).

    Attributes:
      population_size: final number of policies per player `K` (the initial one plus
        `K - 1` best responses); at least 1.
      meta_solver: a name of `marljax.population.metasolvers.META_SOLVERS`.
      meta_iterations: iterations of the iterative meta-solvers.
      best_response: `exact` (pure best response), `pg` (softmax policy gradient) or `agent`
        (a registered agent trained with `make_train`).
      br_steps: policy-gradient steps of the `pg` oracle.
      br_batch: episodes per policy-gradient step of the `pg` oracle.
      br_algo: registered algorithm of the `agent` oracle (`marljax.agents.ALGORITHMS`).
      br_agent_config: its config (None: the algorithm's defaults).
      br_train: the `agent` oracle's training run (env steps, envs, rollout length).
      br_samples: sampled acts that estimate a trained agent's mixed strategy.
      symmetric: one population shared by both players, for symmetric games
        (`payoffs[1] = payoffs[0].T`): both start from the same pure strategy, the
        meta-strategy is the average of the solver's two rows, and each iteration adds player
        0's best response to both (symmetric self-play and fictitious self-play).
    """

    population_size: int = param(20, lo=1, help="final number of policies per player.")
    meta_solver: str = "nash"
    meta_iterations: int = param(1000, lo=1, help="iterations of the iterative meta-solvers.")
    best_response: str = "exact"
    br_steps: int = param(100, lo=1, help="policy-gradient steps of the pg oracle.")
    br_batch: int = param(64, lo=1, help="episodes per policy-gradient step of the pg oracle.")
    br_algo: str = "ippo"
    br_agent_config: Any = None
    br_train: TrainConfig = dataclasses.field(
        default_factory=lambda: TrainConfig(num_envs=16, rollout_len=1, total_env_steps=1024)
    )
    br_samples: int = param(256, lo=1, help="sampled acts estimating a trained agent's policy.")
    symmetric: bool = False


@struct.dataclass
class PSROHParams:
    """Traced hyperparameters of PSRO (vmap over them to sweep).

    Attributes:
      br_learning_rate: step of the `pg` best-response learner.
      br_agent: hyperparameters of the `agent` oracle's agent (None: its defaults).
      meta: hyperparameters of the meta-solvers.
    """

    br_learning_rate: float = param(1.0, lo=0.0, lo_open=True, help="step of the pg learner.")
    meta: MetaSolverHParams = struct.field(default_factory=MetaSolverHParams)
    br_agent: Any = None


class PSROOutput(NamedTuple):
    """Result of a PSRO run (add a leading `[S]` axis under `vmap` over seeds).

    Attributes:
      policies: `[2, K, N]` every player's population, row `k` a distribution over actions.
      meta_payoffs: `[2, K, K]` empirical payoffs, `[i, a, b]` player `i`'s payoff when
        player 0 plays member `a` and player 1 member `b`.
      meta_strategy: `[K, 2, K]` the meta-strategy used at each iteration (row `t` has
        support on the first `t + 1` members); the last row is the final one.
      nash_conv: `[K]` NashConv of the meta-strategy's mixture in the true game, per iteration.
      exploitability: `[K]` `nash_conv / 2`.
    """

    policies: Array
    meta_payoffs: Array
    meta_strategy: Array
    nash_conv: Array
    exploitability: Array


def _validate(config: PSROConfig, env: Environment) -> None:
    check_ranges(config, "PSROConfig")
    get_meta_solver(config.meta_solver)  # raises for an unknown name
    if config.best_response not in BEST_RESPONSES:
        raise ConfigError(
            f"PSROConfig.best_response must be one of {list(BEST_RESPONSES)}, "
            f"got {config.best_response!r}"
        )
    if config.best_response == "agent":
        from marljax.agents import ALGORITHMS

        if config.br_algo not in ALGORITHMS:
            raise ConfigError(
                f"PSROConfig.br_algo must be one of {sorted(ALGORITHMS)}, got {config.br_algo!r}"
            )
    if not isinstance(env, MatrixGame):
        raise ConfigError(
            f"PSRO here runs on normal-form games (a MatrixGame, e.g. matrix/rps-v0); "
            f"got {type(env).__name__}"
        )
    if env.num_agents != 2:
        raise ConfigError(f"PSRO needs a two-player game; {env!r} has {env.num_agents} players")


def _validate_params(config: PSROConfig, env: MatrixGame, params: EnvParams) -> None:
    if config.symmetric and not isinstance(params.payoffs, jax.core.Tracer):
        table = np.asarray(params.payoffs)
        if not np.allclose(table[1], table[0].T):
            raise ConfigError(
                f"PSROConfig.symmetric=True needs a symmetric game (payoffs[1] == payoffs[0].T); "
                f"{env!r} is not (use symmetric=False for two populations)"
            )
    rounds = params.num_rounds
    if not isinstance(rounds, jax.core.Tracer) and int(rounds) != 1:
        raise ConfigError(
            f"PSRO here solves the one-shot game of {env!r}; its params have num_rounds="
            f"{int(rounds)} (use a one-shot env such as matrix/rps-v0, or num_rounds=1)"
        )


def _make_agent_oracle(config: PSROConfig, env: MatrixGame, params: EnvParams):
    """`oracle(key, mixture [2, N], params, agent_hparams) -> [2, N]`: both players' trained
    registered agents' mixed strategies against the other's mixture."""
    from marljax.agents import ALGORITHMS

    spec = ALGORITHMS[config.br_algo]
    co_env = MixedCoPlayer(env)
    co_params = co_env.default_params().replace(
        max_steps=params.max_steps, payoffs=params.payoffs, num_rounds=params.num_rounds
    )
    agent_config = config.br_agent_config
    if agent_config is None:
        agent_config = spec.config_cls(**spec.config_defaults)
    agent = spec.factory(agent_config, co_env, co_params)
    trainer = make_train(config.br_train, co_env, agent, co_params)
    samples, num_actions = config.br_samples, env.num_actions

    def one_role(key, role_params, agent_hparams):
        key_train, key_reset, key_act = jax.random.split(key, 3)
        state, _ = trainer.train(key_train, agent_hparams, role_params)
        _, ts = co_env.reset(key_reset, role_params)
        observation = Observation(
            obs=jnp.broadcast_to(ts.obs, (samples, *ts.obs.shape)),
            action_mask=jnp.broadcast_to(ts.action_mask, (samples, *ts.action_mask.shape)),
            global_state=jnp.broadcast_to(ts.global_state, (samples, *ts.global_state.shape)),
            reset=jnp.ones((samples,), jnp.bool_),
        )
        carry = agent.initial_carry(samples)
        actions, _, _ = agent.act(state.agent_state, carry, observation, key_act, agent_hparams)
        return jnp.mean(jax.nn.one_hot(actions[:, 0], num_actions), axis=0)

    def oracle(key, mixture, params, agent_hparams):
        agent_hparams = agent.default_hparams() if agent_hparams is None else agent_hparams
        # the row player's game as is, the column player's with the roles swapped
        roles = co_params.replace(
            max_steps=jnp.stack([jnp.asarray(params.max_steps)] * 2),
            payoffs=jnp.stack([params.payoffs, swap_roles(params.payoffs)]),
            num_rounds=jnp.stack([jnp.asarray(params.num_rounds)] * 2),
            coplayer_strategy=mixture[::-1],  # each learner faces the other's mixture
        )
        keys = jax.random.split(key, 2)
        return jax.vmap(one_role, in_axes=(0, 0, None))(keys, roles, agent_hparams)

    return oracle


def _pg_best_response(config, env, key, player, opp_policies, opp_sigma, params, hp):
    """Softmax REINFORCE against opponents sampled per episode from the meta-strategy."""
    num_actions = env.num_actions

    def episode(key, logits):
        k_member, k_own, k_opp, k_reset, k_step = jax.random.split(key, 5)
        member = jax.random.categorical(k_member, jnp.log(opp_sigma))
        own = jax.random.categorical(k_own, logits)
        opp = jax.random.categorical(k_opp, jnp.log(opp_policies[member]))
        actions = jnp.where(player == 0, jnp.stack([own, opp]), jnp.stack([opp, own]))
        state, _ = env.reset(k_reset, params)
        _, ts = env.step(k_step, state, actions, params)
        return own, ts.reward[player]

    def step(logits, key):
        own, reward = jax.vmap(episode, in_axes=(0, None))(
            jax.random.split(key, config.br_batch), logits
        )
        adv = reward - reward.mean()
        score = jax.nn.one_hot(own, num_actions) - jax.nn.softmax(logits)  # grad log pi
        return logits + hp.br_learning_rate * jnp.mean(adv[:, None] * score, axis=0), None

    logits, _ = jax.lax.scan(step, jnp.zeros(num_actions), jax.random.split(key, config.br_steps))
    return jax.nn.softmax(logits)


def _make_oracle(config: PSROConfig, env: Environment, default_params: EnvParams):
    """`best_responses(key, policies, sigma, params, hp) -> [2, N]`, config's oracle."""
    num_actions = env.num_actions
    if config.best_response == "agent":
        agent_best_response = _make_agent_oracle(config, env, default_params)

    def best_responses(key, policies, sigma, params, hp):
        mixture = jnp.einsum("ik,ikn->in", sigma, policies)  # [2, N]
        if config.best_response == "exact":
            _, actions = nf.best_response(params.payoffs, mixture)
            return jax.nn.one_hot(actions, num_actions, dtype=jnp.float32)
        if config.best_response == "agent":
            return agent_best_response(key, mixture, params, hp.br_agent)
        keys = jax.random.split(key, 2)
        return jnp.stack(
            [
                _pg_best_response(
                    config, env, keys[p], p, policies[1 - p], sigma[1 - p], params, hp
                )
                for p in range(2)
            ]
        )

    return best_responses


def make_psro(config: PSROConfig, env: Environment, env_params: EnvParams | None = None):
    """Build `run(key, hparams, env_params=None) -> PSROOutput`, the whole PSRO run.

    Args:
      config: static configuration (checked here, before anything is compiled).
      env: a two-player `MatrixGame` (its one-shot payoff table is the game).
      env_params: default env params (their `payoffs` define the game; may be overridden per
        call, e.g. vmapped over a family of games).

    Returns:
      `run`, a pure jittable function; `jax.jit(jax.vmap(run, in_axes=(0, None)))` runs seeds.

    Raises:
      ConfigError: unknown meta-solver or best-response oracle, `population_size < 1`, an env
        that is not a two-player matrix game, default params of a repeated game.
    """
    _validate(config, env)
    solver = get_meta_solver(config.meta_solver)
    default_params = env_params if env_params is not None else env.default_params()
    _validate_params(config, env, default_params)
    size, num_actions = config.population_size, env.num_actions

    def solve(meta_payoffs, count, hp):
        mask = jnp.broadcast_to(jnp.arange(size) < count, (2, size))
        sigma = solver(meta_payoffs, mask, hp.meta, config.meta_iterations)
        if config.symmetric:  # one population: one meta-strategy
            sigma = jnp.broadcast_to(sigma.mean(0), sigma.shape)
        return sigma

    best_responses = _make_oracle(config, env, default_params)

    def evaluate(params, pol0, pol1):
        return nf.expected_payoffs(params.payoffs, jnp.stack([pol0, pol1]))  # [2]

    def nash_conv_of(policies, sigma, params):
        mixture = jnp.einsum("ik,ikn->in", sigma, policies)
        return nf.nash_conv(params.payoffs, mixture)

    def run(key: Array, hparams: PSROHParams, env_params: EnvParams | None = None) -> PSROOutput:
        params = env_params if env_params is not None else default_params
        key_init, key_loop = jax.random.split(key)
        # the initial population: one random pure strategy per player
        first = jax.random.randint(key_init, (1 if config.symmetric else 2,), 0, num_actions)
        first = jnp.broadcast_to(first, (2,))
        policies = jnp.zeros((2, size, num_actions), jnp.float32)
        policies = policies.at[:, 0].set(jax.nn.one_hot(first, num_actions))
        meta = jnp.zeros((2, size, size), jnp.float32)
        meta = meta.at[:, 0, 0].set(evaluate(params, policies[0, 0], policies[1, 0]))

        def iteration(carry, t):
            policies, meta = carry
            count = t + 1  # members before this iteration's best responses join
            sigma = solve(meta, count, hparams)
            nc = nash_conv_of(policies, sigma, params)
            new = best_responses(jax.random.fold_in(key_loop, t), policies, sigma, params, hparams)
            if config.symmetric:
                new = jnp.broadcast_to(new[0], new.shape)
            policies = policies.at[:, count].set(new)
            # the new row (player 0's newcomer vs all of 1) and column (all of 0 vs 1's newcomer)
            row = jax.vmap(evaluate, in_axes=(None, None, 0))(
                params, policies[0, count], policies[1]
            )
            col = jax.vmap(evaluate, in_axes=(None, 0, None))(
                params, policies[0], policies[1, count]
            )
            meta = meta.at[:, count, :].set(row.T).at[:, :, count].set(col.T)
            return (policies, meta), (sigma, nc)

        # iteration t solves the game of the first t + 1 members and adds member t + 1; the
        # final meta-strategy solves the game of all K members
        (policies, meta), (sigmas, ncs) = jax.lax.scan(
            iteration, (policies, meta), jnp.arange(size - 1)
        )
        final = solve(meta, size, hparams)
        sigmas = jnp.concatenate([sigmas, final[None]])
        ncs = jnp.concatenate([ncs, nash_conv_of(policies, final, params)[None]])
        return PSROOutput(
            policies=policies,
            meta_payoffs=meta,
            meta_strategy=sigmas,
            nash_conv=ncs,
            exploitability=ncs / 2.0,
        )

    return run
