"""LOLA: Learning with Opponent-Learning Awareness, with exact returns, and naive learning.

Two agents with parameters `theta_1`, `theta_2` and differentiable returns `V_1`, `V_2`
(`value_fn(theta_1, theta_2) -> [2]`). A naive learner ascends its own return, treating the
other as fixed:

    theta_1 <- theta_1 + delta * grad_1 V_1.

A LOLA learner (Foerster et al. 2018, eq. 4.2 with exact gradients) also accounts for how its
parameters change the other's next naive step `Delta theta_2 = eta * grad_2 V_2`:

    theta_1 <- theta_1 + delta * (grad_1 V_1 + eta * (grad_2 V_1)^T grad_1 grad_2 V_2),

and symmetrically for agent 2. The second-order term is computed as
`grad_1 [stop_gradient(grad_2 V_1) . grad_2 V_2]` (one Hessian-vector product).

The iterated Prisoner's Dilemma (IPD) of the paper: each agent has a memory-one policy of five
parameters, the probabilities (sigmoids of `theta`) of cooperating in the first round and after
each previous joint outcome `CC, CD, DC, DD` (own action first). The two policies define a Markov
chain on the four outcomes with transition matrix `P` and first-round distribution `p_0`; the
exact discounted return is

    V_i = p_0^T (I - gamma P)^{-1} r_i

(`r_i` the agent's payoff of each outcome). The inverse is formed as the product
`prod_j (I + (gamma P)^(2^j))` of repeated squarings, which equals the Neumann series up to
`gamma^(2^J)`, with matrix products only (no batched LAPACK call under `vmap`).

Published outcome (Foerster et al. 2018, Section 5): two LOLA agents learn tit-for-tat-like
reciprocity and mostly cooperate; two naive learners learn to defect.

Reference: J. Foerster, R. Y. Chen, M. Al-Shedivat, S. Whiteson, P. Abbeel, I. Mordatch,
"Learning with Opponent-Learning Awareness", AAMAS 2018 (arXiv:1709.04326).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from marljax.core.config import ConfigError, check_ranges, param
from marljax.envs.matrix.payoffs import prisoners_dilemma

Array = jax.Array
ValueFn = Callable[[Array, Array], Array]

#: learning rules of `make_lola_ipd`.
METHODS = ("lola", "naive")
#: names of the five memory-one probabilities, in parameter order.
IPD_STATES = ("start", "CC", "CD", "DC", "DD")


def lola_ipd_payoffs() -> Array:
    """The IPD payoffs of the LOLA paper: `(CC, CD, DC, DD) -> (-1, -3, 0, -2)` for the row agent.

    Returns:
      `[2, 2, 2]` float32 payoff tensor (action 0 = cooperate).
    """
    return prisoners_dilemma(r=-1.0, s=-3.0, t=0.0, p=-2.0)


def ipd_values(
    theta_1: Array, theta_2: Array, payoffs: Array, gamma: Array, squarings: int = 16
) -> Array:
    """Exact discounted returns of two memory-one policies in the infinitely iterated game.

    Args:
      theta_1: `[5]` logits of agent 1's cooperation probabilities (`IPD_STATES` order, own
        action first in each outcome).
      theta_2: `[5]` the same for agent 2 (its own action first).
      payoffs: `[2, 2, 2]` stage-game payoff tensor (action 0 = cooperate).
      gamma: `[]` discount in `[0, 1)`.
      squarings: `J`, the series is summed up to `gamma^(2^J)` (static).

    Returns:
      `[2]` `V_i = p_0^T (I - gamma P)^{-1} r_i`.
    """
    p0, trans = ipd_markov_chain(theta_1, theta_2)
    rewards = payoffs.reshape(2, 4).T  # [4, 2]
    return p0 @ resolvent(gamma * trans, squarings) @ rewards


#: agent 2's own-first index of each state in agent 1's `IPD_STATES` order (CD and DC swap).
SWAP_STATES = (0, 1, 3, 2, 4)


def ipd_markov_chain(theta_1: Array, theta_2: Array) -> tuple[Array, Array]:
    """The Markov chain on joint outcomes that two memory-one IPD policies induce.

    Args:
      theta_1: `[5]` agent 1's logits (`IPD_STATES` order, own action first).
      theta_2: `[5]` agent 2's logits (its own action first).

    Returns:
      `(p_0, P)`: `[4]` first-round distribution and `[4, 4]` transition matrix over the
      outcomes `CC, CD, DC, DD` (agent 1's action first).
    """
    p1 = jax.nn.sigmoid(theta_1)
    # agent 2's own-first outcomes CD and DC are agent 1's DC and CD
    p2 = jax.nn.sigmoid(theta_2)[jnp.array(SWAP_STATES)]

    def joint(a, b):  # [..., 4] distribution over CC, CD, DC, DD
        return jnp.stack([a * b, a * (1 - b), (1 - a) * b, (1 - a) * (1 - b)], axis=-1)

    return joint(p1[0], p2[0]), joint(p1[1:], p2[1:])


def resolvent(matrix: Array, squarings: int) -> Array:
    """`(I - M)^{-1}` as `prod_j (I + M^(2^j))`, `j < J`: the Neumann series up to `M^(2^J)`.

    Matrix products only, so it stays cheap and batched under `vmap` (no LAPACK call).

    Args:
      matrix: `[n, n]` `M` with spectral radius below 1 (here `gamma P`).
      squarings: `J` (static).

    Returns:
      `[n, n]` the truncated series.
    """

    def body(carry, _):
        total, power = carry
        return (total + total @ power, power @ power), None

    eye = jnp.eye(matrix.shape[-1], dtype=matrix.dtype)
    (series, _), _ = jax.lax.scan(body, (eye, matrix), None, length=squarings)
    return series


def naive_gradients(value_fn: ValueFn, theta_1: Array, theta_2: Array) -> tuple[Array, Array]:
    """Each agent's gradient of its own return, the other held fixed.

    Args:
      value_fn: `(theta_1, theta_2) -> [2]` differentiable returns.
      theta_1: agent 1's parameters.
      theta_2: agent 2's parameters.

    Returns:
      `(grad_1 V_1, grad_2 V_2)`.
    """
    g1 = jax.grad(lambda t1: value_fn(t1, theta_2)[0])(theta_1)
    g2 = jax.grad(lambda t2: value_fn(theta_1, t2)[1])(theta_2)
    return g1, g2


def lola_gradients(
    value_fn: ValueFn, theta_1: Array, theta_2: Array, lookahead: Array
) -> tuple[Array, Array]:
    """The exact LOLA update directions of both agents (Foerster et al. 2018, eq. 4.2).

    `g_1 = grad_1 V_1 + eta * (grad_2 V_1)^T grad_1 grad_2 V_2` and
    `g_2 = grad_2 V_2 + eta * (grad_1 V_2)^T grad_2 grad_1 V_1`.

    Args:
      value_fn: `(theta_1, theta_2) -> [2]` differentiable returns.
      theta_1: agent 1's parameters.
      theta_2: agent 2's parameters.
      lookahead: `[]` `eta`, the step size assumed for the other's naive update.

    Returns:
      `(g_1, g_2)`, shaped like `theta_1` and `theta_2`.
    """
    v1 = lambda t1, t2: value_fn(t1, t2)[0]  # noqa: E731
    v2 = lambda t1, t2: value_fn(t1, t2)[1]  # noqa: E731
    naive_1, naive_2 = naive_gradients(value_fn, theta_1, theta_2)
    # the other agent's gradient of *my* return, held constant in the shaping term
    d2_v1 = jax.lax.stop_gradient(jax.grad(v1, argnums=1)(theta_1, theta_2))
    d1_v2 = jax.lax.stop_gradient(jax.grad(v2, argnums=0)(theta_1, theta_2))

    def shaping_1(t1):
        return jnp.vdot(d2_v1, jax.grad(v2, argnums=1)(t1, theta_2))

    def shaping_2(t2):
        return jnp.vdot(d1_v2, jax.grad(v1, argnums=0)(theta_1, t2))

    g1 = naive_1 + lookahead * jax.grad(shaping_1)(theta_1)
    g2 = naive_2 + lookahead * jax.grad(shaping_2)(theta_2)
    return g1, g2


@dataclasses.dataclass(frozen=True)
class LOLAConfig:
    """Static configuration of `make_lola_ipd`.

    Attributes:
      method: `lola` (both agents LOLA) or `naive` (both naive learners).
      num_steps: number of simultaneous updates.
      squarings: repeated squarings of the exact return (`ipd_values`).
    """

    method: str = "lola"
    num_steps: int = param(200, lo=1, help="number of simultaneous updates.")
    squarings: int = param(16, lo=1, help="repeated squarings of the exact return.")


@struct.dataclass
class LOLAHParams:
    """Traced hyperparameters of `make_lola_ipd`.

    Attributes:
      learning_rate: `delta`, the step of both agents.
      lookahead: `eta`, the opponent step a LOLA agent assumes (unused by naive learners).
      gamma: discount of the iterated game.
      init_std: standard deviation of the normal initial logits.
    """

    learning_rate: float = param(1.0, lo=0.0, lo_open=True, help="step delta of both agents.")
    lookahead: float = param(1.0, lo=0.0, help="opponent step eta assumed by LOLA.")
    gamma: float = param(0.96, lo=0.0, hi=1.0, help="discount of the iterated game.")
    init_std: float = param(1.0, lo=0.0, help="std of the normal initial logits.")


class LOLAOutput(NamedTuple):
    """Result of `make_lola_ipd`'s run (leading `[S]` axis under `vmap` over seeds).

    Attributes:
      theta: `[2, 5]` final logits of both agents.
      probabilities: `[2, 5]` final cooperation probabilities (`IPD_STATES` order).
      average_reward: `[T, 2]` `(1 - gamma) V_i` before each update, the per-round reward.
    """

    theta: Array
    probabilities: Array
    average_reward: Array


def make_lola_ipd(config: LOLAConfig, payoffs: Array | None = None):
    """Build `run(key, hparams) -> LOLAOutput`: two LOLA (or naive) learners on the IPD.

    Both agents update simultaneously with exact gradients of the exact discounted return
    (`ipd_values`), `config.num_steps` times, inside one `lax.scan`.

    Args:
      config: static configuration (checked before anything is compiled).
      payoffs: `[2, 2, 2]` stage game (default `lola_ipd_payoffs()`); any 2x2 game works.

    Returns:
      `run`, a pure jittable function; `jax.jit(jax.vmap(run, in_axes=(0, None)))` runs seeds.

    Raises:
      ConfigError: unknown method, out-of-range config, payoffs not of shape `[2, 2, 2]`.
    """
    check_ranges(config, "LOLAConfig")
    if config.method not in METHODS:
        raise ConfigError(
            f"LOLAConfig.method must be one of {list(METHODS)}, got {config.method!r}"
        )
    payoffs = lola_ipd_payoffs() if payoffs is None else jnp.asarray(payoffs, jnp.float32)
    if payoffs.shape != (2, 2, 2):
        raise ConfigError(
            f"LOLA on the IPD needs a two-player two-action payoff tensor [2, 2, 2], "
            f"got {payoffs.shape}"
        )

    def run(key: Array, hparams: LOLAHParams) -> LOLAOutput:
        def value_fn(t1, t2):
            return ipd_values(t1, t2, payoffs, hparams.gamma, config.squarings)

        def step(theta, _):
            values = value_fn(theta[0], theta[1])
            if config.method == "lola":
                g1, g2 = lola_gradients(value_fn, theta[0], theta[1], hparams.lookahead)
            else:
                g1, g2 = naive_gradients(value_fn, theta[0], theta[1])
            theta = theta + hparams.learning_rate * jnp.stack([g1, g2])
            return theta, (1.0 - hparams.gamma) * values

        theta0 = hparams.init_std * jax.random.normal(key, (2, 5))
        theta, rewards = jax.lax.scan(step, theta0, None, length=config.num_steps)
        return LOLAOutput(theta=theta, probabilities=jax.nn.sigmoid(theta), average_reward=rewards)

    return run
