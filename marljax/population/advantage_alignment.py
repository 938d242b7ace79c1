"""Advantage Alignment: opponent shaping by aligning the two agents' advantages.

Two policy-gradient learners play a game; agent 1 acts `a_t`, agent 2 acts `b_t` in state
`s_t`, and each has a joint-action advantage `A^i_t = A^i(s_t, a_t, b_t) = Q^i(s_t, a_t, b_t) -
V^i(s_t)`. A naive policy-gradient learner ascends

    E[ sum_t gamma^t A^1_t grad log pi^1(a_t | s_t) ].

An Advantage Alignment learner (Duque et al., ICLR 2025) replaces its own advantage by the
aligned advantage

    A*_t = A^1_t + beta * ( sum_{k < t} gamma^(t - k) A^1_k ) * A^2_t,

which raises the probability of actions that are good for the other agent (`A^2_t > 0`) when the
interaction has so far been good for itself (the discounted sum of its past advantages is
positive), and lowers it when it has been bad: reciprocity. The paper derives it from first
principles as the opponent-shaping term and shows that LOLA and LOQA implicitly perform it;
`beta` weighs it against the learner's own advantage. It is the update used by the seed paper "Learning Robust Social Strategies with Large Language Models",
written here as in its public implementation (`beta * sum_{k<t} gamma^(t-k) A^1_k * A^2_t`).

`make_aa_ppo` is the learned (neural) version for any two-player env: PPO with one critic
per agent (IPPO by default) whose GAE advantages `[T, E, 2]` are replaced by the aligned
advantages of both agents before the clipped loss (`aligned_pair_advantages`, the past sum
restarting at every episode start and at every rollout start), with `beta` the traced
hyperparameter `AAPPOHParams.aa_beta` (`aa_beta = 0` is IPPO exactly, so one program can
train both).

On the iterated Prisoner's Dilemma (IPD) with memory-one policies (the five logits of
`marljax.population.lola`) the critic is exact: the two policies define a Markov chain on the
joint outcomes, so `V^i(s)` of every state `s in (start, CC, CD, DC, DD)` is known in closed form
(`ipd_state_values`) and `A^i_t = r^i_t + gamma V^i(s_{t+1}) - V^i(s_t)`. The gradients are
estimated from sampled episodes (`ipd_rollout`); naive policy gradient with the same exact
advantages is the control.

Published outcome (Duque et al. 2025, IPD experiments): Advantage Alignment agents learn
tit-for-tat-like reciprocity and cooperate; naive policy-gradient agents defect. The paper's
experiments use neural policies and learned value estimates; here the policies are tabular
and the critic exact, which isolates the aligned term.

References: J. A. Duque, M. Aghajohari, T. Cooijmans, R. Ciuca, T. Zhang, G. Gidel,
A. Courville, "Advantage Alignment Algorithms", ICLR 2025 (arXiv:2406.14662).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from marljax.agents.base import Agent
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.core.config import ConfigError, check_ranges, param
from marljax.core.types import Environment, EnvParams
from marljax.population.lola import (
    SWAP_STATES,
    ipd_markov_chain,
    lola_ipd_payoffs,
    resolvent,
)

Array = jax.Array

#: learning rules of `make_advantage_alignment_ipd`.
METHODS = ("aa", "naive")


def discounted_past_sum(adv_t: Array, gamma: Array) -> Array:
    """`c_t = sum_{k < t} gamma^(t - k) adv_k` along the last (time) axis.

    Computed by the recursion `c_0 = 0`, `c_t = gamma (c_{t-1} + adv_{t-1})`.

    Args:
      adv_t: `[..., T]` advantages, time last.
      gamma: `[]` discount.

    Returns:
      `[..., T]` the discounted sums of strictly earlier entries.
    """

    def body(carry, adv):
        return gamma * (carry + adv), carry

    _, out = jax.lax.scan(
        body, jnp.zeros(adv_t.shape[:-1], adv_t.dtype), jnp.moveaxis(adv_t, -1, 0)
    )
    return jnp.moveaxis(out, 0, -1)


def aligned_advantages(own_adv_t: Array, other_adv_t: Array, beta: Array, gamma: Array) -> Array:
    """The aligned advantage of Advantage Alignment (Duque et al., ICLR 2025).

    `A*_t = A^1_t + beta * (sum_{k < t} gamma^(t - k) A^1_k) * A^2_t`.

    Args:
      own_adv_t: `[..., T]` the learner's advantages `A^1(s_t, a_t, b_t)`, time last.
      other_adv_t: `[..., T]` the other agent's advantages `A^2(s_t, a_t, b_t)`.
      beta: `[]` weight of the alignment term (0 gives `A^1`, naive policy gradient).
      gamma: `[]` discount.

    Returns:
      `[..., T]` `A*_t`.
    """
    if own_adv_t.shape != other_adv_t.shape:
        raise ValueError(
            f"own_adv_t and other_adv_t must have the same shape, got {own_adv_t.shape} "
            f"and {other_adv_t.shape}"
        )
    return own_adv_t + beta * discounted_past_sum(own_adv_t, gamma) * other_adv_t


def episodic_past_sum(adv_t: Array, done_t: Array, gamma: Array) -> Array:
    """`c_t = sum_{k < t, same episode} gamma^(t - k) adv_k` along the first (time) axis.

    The recursion `c_0 = 0`, `c_t = gamma (c_{t-1} + adv_{t-1}) (1 - done_{t-1})` restarts the
    sum after every step that ended an episode (a rollout's `[T, E, ...]` layout).

    Args:
      adv_t: `[T, ...]` advantages, time first.
      done_t: `[T, ...]` (broadcastable) true where step `t` ended its episode.
      gamma: `[]` discount.

    Returns:
      `[T, ...]` the discounted sums of strictly earlier entries of the same episode.
    """
    done_t = jnp.broadcast_to(done_t, adv_t.shape).astype(adv_t.dtype)

    def body(carry, inputs):
        adv, done = inputs
        return gamma * (carry + adv) * (1.0 - done), carry

    _, out = jax.lax.scan(body, jnp.zeros(adv_t.shape[1:], adv_t.dtype), (adv_t, done_t))
    return out


def aligned_pair_advantages(adv: Array, done: Array, beta: Array, gamma: Array) -> Array:
    """Both agents' aligned advantages on a two-player rollout.

    `A*_i,t = A_i,t + beta * c_i,t * A_{1-i},t` with `c_i,t` the discounted sum of agent `i`'s
    earlier advantages in the episode (`episodic_past_sum`).

    Args:
      adv: `[T, E, 2]` advantages of both agents (e.g. GAE).
      done: `[T, E]` bool, the step ended its episode (terminated or truncated).
      beta: `[]` weight of the alignment term.
      gamma: `[]` discount.

    Returns:
      `[T, E, 2]` aligned advantages.
    """
    if adv.ndim != 3 or adv.shape[-1] != 2 or done.shape != adv.shape[:2]:
        raise ValueError(
            f"aligned_pair_advantages needs adv [T, E, 2] and done [T, E], got {adv.shape} "
            f"and {done.shape}"
        )
    past = episodic_past_sum(adv, done[..., None], gamma)
    return adv + beta * past * adv[..., ::-1]


@struct.dataclass
class AAPPOHParams(PPOHParams):
    """`PPOHParams` plus the alignment weight of `make_aa_ppo` (traced: vmap over it).

    Attributes:
      aa_beta: weight `beta` of the alignment term (0: plain PPO / IPPO).
    """

    aa_beta: float = param(1.0, lo=0.0, help="weight of the alignment term (0: IPPO).")


def make_aa_ppo(
    env: Environment,
    env_params: EnvParams | None = None,
    config: PPOConfig | None = None,
    **kwargs,
) -> Agent:
    """Advantage Alignment as a PPO agent of the contract, for a two-player env.

    PPO (`marljax.agents.ppo.make_ppo`) whose advantages are `aligned_pair_advantages` of the
    two agents' GAE advantages, weighted by `hparams.aa_beta` (`AAPPOHParams`, its
    `default_hparams`); the proximal variant of the paper's update. Train it with
    `marljax.training.train.make_train` like any agent.

    Args:
      env: a two-player env.
      env_params: its params.
      config: `PPOConfig` (default: IPPO, a local critic per agent, independent parameters).
      **kwargs: more `make_ppo` arguments (networks, policy_head).

    Returns:
      An `Agent`.

    Raises:
      ConfigError: an env without exactly two agents.
    """
    if env.num_agents != 2:
        raise ConfigError(
            f"Advantage Alignment needs a two-player env, got {env.name} with {env.num_agents}"
        )
    if config is None:
        config = PPOConfig(critic_input="local", parameter_mode="independent")

    def transform(advantages, traj, hp):
        done = jnp.logical_or(traj.terminated, traj.truncated)
        return aligned_pair_advantages(advantages, done, hp.aa_beta, hp.gamma)

    agent = make_ppo(config, env, env_params, advantage_transform=transform, **kwargs)
    return agent._replace(default_hparams=AAPPOHParams)


def policy_gradient_loss(logp_t: Array, adv_t: Array, gamma: Array) -> Array:
    """Surrogate loss `-sum_t gamma^t adv_t log pi(a_t | s_t)`, mean over leading axes.

    Its gradient is minus the policy-gradient estimate; `adv_t` is held constant.

    Args:
      logp_t: `[..., T]` log-probabilities of the taken actions (differentiable).
      adv_t: `[..., T]` advantages (`A^1_t` for naive policy gradient, `A*_t` for Advantage
        Alignment).
      gamma: `[]` discount.

    Returns:
      `[]` the loss.
    """
    discounts = gamma ** jnp.arange(logp_t.shape[-1], dtype=logp_t.dtype)
    weighted = discounts * jax.lax.stop_gradient(adv_t) * logp_t
    return -jnp.mean(jnp.sum(weighted, axis=-1))


def ipd_state_values(
    theta_1: Array, theta_2: Array, payoffs: Array, gamma: Array, squarings: int = 16
) -> Array:
    """Exact values of both agents in every IPD state, for memory-one policies.

    States are `start, CC, CD, DC, DD` (`lola.IPD_STATES`, agent 1's action first). With `P`,
    `p_0` the chain of `lola.ipd_markov_chain` and `r` the `[4, 2]` outcome rewards, the values
    after each outcome are `v = (I - gamma P)^{-1} P r` and the start value is
    `p_0 (r + gamma v)` (which equals `lola.ipd_values`).

    Args:
      theta_1: `[5]` agent 1's logits.
      theta_2: `[5]` agent 2's logits (own action first).
      payoffs: `[2, 2, 2]` stage game (action 0 = cooperate).
      gamma: `[]` discount in `[0, 1)`.
      squarings: terms `gamma^(2^J)` of the series (static).

    Returns:
      `[5, 2]` `V^i(s)`.
    """
    p0, trans = ipd_markov_chain(theta_1, theta_2)
    rewards = payoffs.reshape(2, 4).T  # [4, 2]
    after = resolvent(gamma * trans, squarings) @ trans @ rewards  # [4, 2]
    start = p0 @ (rewards + gamma * after)  # [2]
    return jnp.concatenate([start[None], after], axis=0)


class IPDRollout(NamedTuple):
    """Sampled IPD episodes (time last; leading `[B]` axis under `vmap`).

    Attributes:
      states: `[T]` int32 state index before each round (0 = start, `1 + outcome` after).
      actions: `[2, T]` int32 actions of both agents (0 = cooperate).
      rewards: `[2, T]` float32 stage rewards.
    """

    states: Array
    actions: Array
    rewards: Array


def ipd_rollout(
    key: Array, theta_1: Array, theta_2: Array, payoffs: Array, num_rounds: int
) -> IPDRollout:
    """Sample one episode of `num_rounds` rounds between two memory-one policies.

    Args:
      key: PRNG key.
      theta_1: `[5]` agent 1's logits.
      theta_2: `[5]` agent 2's logits (own action first).
      payoffs: `[2, 2, 2]` stage game.
      num_rounds: `T` (static).

    Returns:
      the `IPDRollout`.
    """
    p1 = jax.nn.sigmoid(theta_1)
    p2 = jax.nn.sigmoid(theta_2)[jnp.array(SWAP_STATES)]

    def body(state, key):
        key_1, key_2 = jax.random.split(key)
        a = (jax.random.uniform(key_1) >= p1[state]).astype(jnp.int32)
        b = (jax.random.uniform(key_2) >= p2[state]).astype(jnp.int32)
        return 1 + 2 * a + b, (state, jnp.stack([a, b]), payoffs[:, a, b])

    keys = jax.random.split(key, num_rounds)
    _, (states, actions, rewards) = jax.lax.scan(body, jnp.int32(0), keys)
    return IPDRollout(states=states, actions=actions.T, rewards=rewards.T)


def ipd_advantages(rollout: IPDRollout, values: Array, gamma: Array) -> Array:
    """Exact-critic joint-action advantages `A^i_t = r^i_t + gamma V^i(s_{t+1}) - V^i(s_t)`.

    Args:
      rollout: one episode (`[T]` states, `[2, T]` actions and rewards).
      values: `[5, 2]` `ipd_state_values`.
      gamma: `[]` discount.

    Returns:
      `[2, T]` both agents' advantages.
    """
    outcome = 2 * rollout.actions[0] + rollout.actions[1]
    next_values = values[1 + outcome].T  # [2, T]
    return rollout.rewards + gamma * next_values - values[rollout.states].T


def ipd_log_probs(theta: Array, rollout: IPDRollout, agent: int) -> Array:
    """`log pi^i(a^i_t | s_t)` of one agent's memory-one policy along an episode.

    Args:
      theta: `[5]` the agent's logits (own action first).
      rollout: one episode.
      agent: 0 or 1 (static).

    Returns:
      `[T]` log-probabilities.
    """
    states = rollout.states if agent == 0 else jnp.array(SWAP_STATES)[rollout.states]
    logit = theta[states]
    cooperate = rollout.actions[agent] == 0
    return jnp.where(cooperate, jax.nn.log_sigmoid(logit), jax.nn.log_sigmoid(-logit))


@dataclasses.dataclass(frozen=True)
class AdvantageAlignmentConfig:
    """Static configuration of `make_advantage_alignment_ipd`.

    Attributes:
      method: `aa` (both agents Advantage Alignment) or `naive` (both naive policy gradient).
      num_steps: number of simultaneous updates.
      num_episodes: sampled episodes per update.
      num_rounds: rounds per sampled episode.
      squarings: repeated squarings of the exact critic (`ipd_state_values`).
    """

    method: str = "aa"
    num_steps: int = param(300, lo=1, help="number of simultaneous updates.")
    num_episodes: int = param(32, lo=1, help="sampled episodes per update.")
    num_rounds: int = param(50, lo=1, help="rounds per sampled episode.")
    squarings: int = param(12, lo=1, help="repeated squarings of the exact critic.")


@struct.dataclass
class AdvantageAlignmentHParams:
    """Traced hyperparameters of `make_advantage_alignment_ipd`.

    Attributes:
      learning_rate: gradient-ascent step of both agents on their logits.
      beta: weight of the alignment term (unused by naive learners).
      gamma: discount of the iterated game.
      init_std: standard deviation of the normal initial logits.
    """

    learning_rate: float = param(1.0, lo=0.0, lo_open=True, help="step of both agents.")
    beta: float = param(1.0, lo=0.0, help="weight of the alignment term.")
    gamma: float = param(0.96, lo=0.0, hi=1.0, help="discount of the iterated game.")
    init_std: float = param(1.0, lo=0.0, help="std of the normal initial logits.")


class AdvantageAlignmentOutput(NamedTuple):
    """Result of `make_advantage_alignment_ipd`'s run (leading `[S]` axis under seed `vmap`).

    Attributes:
      theta: `[2, 5]` final logits of both agents.
      probabilities: `[2, 5]` final cooperation probabilities (`lola.IPD_STATES` order).
      average_reward: `[T, 2]` exact `(1 - gamma) V^i(start)` before each update.
    """

    theta: Array
    probabilities: Array
    average_reward: Array


def make_advantage_alignment_ipd(config: AdvantageAlignmentConfig, payoffs: Array | None = None):
    """Build `run(key, hparams)`: two Advantage Alignment (or naive PG) learners on the IPD.

    Each update samples `num_episodes` episodes of `num_rounds` rounds, computes both agents'
    exact-critic advantages, and both agents take one simultaneous gradient-ascent step on
    `-policy_gradient_loss` with `aligned_advantages` (`aa`) or their own advantages (`naive`).

    Args:
      config: static configuration (checked before anything is compiled).
      payoffs: `[2, 2, 2]` stage game (default `lola.lola_ipd_payoffs()`).

    Returns:
      `run(key, hparams) -> AdvantageAlignmentOutput`, pure and jittable;
      `jax.jit(jax.vmap(run, in_axes=(0, None)))` runs seeds in one program.

    Raises:
      ConfigError: unknown method, out-of-range config, payoffs not of shape `[2, 2, 2]`.
    """
    check_ranges(config, "AdvantageAlignmentConfig")
    if config.method not in METHODS:
        raise ConfigError(
            f"AdvantageAlignmentConfig.method must be one of {list(METHODS)}, got {config.method!r}"
        )
    payoffs = lola_ipd_payoffs() if payoffs is None else jnp.asarray(payoffs, jnp.float32)
    if payoffs.shape != (2, 2, 2):
        raise ConfigError(
            f"Advantage Alignment on the IPD needs a two-player two-action payoff tensor "
            f"[2, 2, 2], got {payoffs.shape}"
        )

    def run(key: Array, hparams: AdvantageAlignmentHParams) -> AdvantageAlignmentOutput:
        gamma = hparams.gamma
        beta = hparams.beta if config.method == "aa" else 0.0

        def losses(theta, rollout, adv):  # adv [2, T] -> agent i's own surrogate loss
            shaped = jnp.stack(
                [
                    aligned_advantages(adv[0], adv[1], beta, gamma),
                    aligned_advantages(adv[1], adv[0], beta, gamma),
                ]
            )
            return sum(
                policy_gradient_loss(ipd_log_probs(theta[i], rollout, i), shaped[i], gamma)
                for i in (0, 1)
            )

        def step(theta, key):
            values = ipd_state_values(theta[0], theta[1], payoffs, gamma, config.squarings)
            keys = jax.random.split(key, config.num_episodes)
            rollouts = jax.vmap(ipd_rollout, in_axes=(0, None, None, None, None))(
                keys, theta[0], theta[1], payoffs, config.num_rounds
            )
            adv = jax.vmap(ipd_advantages, in_axes=(0, None, None))(rollouts, values, gamma)

            def total(th):  # the sum of both agents' losses: agent i's reaches theta[i] only
                return jnp.mean(jax.vmap(losses, in_axes=(None, 0, 0))(th, rollouts, adv))

            grads = jax.grad(total)(theta)
            return theta - hparams.learning_rate * grads, (1.0 - gamma) * values[0]

        key_init, key_run = jax.random.split(key)
        theta0 = hparams.init_std * jax.random.normal(key_init, (2, 5))
        keys = jax.random.split(key_run, config.num_steps)
        theta, rewards = jax.lax.scan(step, theta0, keys)
        return AdvantageAlignmentOutput(
            theta=theta, probabilities=jax.nn.sigmoid(theta), average_reward=rewards
        )

    return run
