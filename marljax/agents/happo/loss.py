"""HAPPO's and HATRPO's per-agent objectives and HATRPO's trust-region step, as pure functions.

Both algorithms update the agents one after another in a random order `i_1, ..., i_n`. Agent
`i_m` maximises a surrogate whose advantage is weighted by the product of the earlier agents'
probability ratios, computed after their updates and held constant:

    M_{i_1:m-1}(s, a) = prod_{j < m} pi_{i_j}^new(a_{i_j} | o_{i_j}) / pi_{i_j}^old(a_{i_j} | o_{i_j}).

HAPPO clips agent `i_m`'s own ratio (`happo_loss`); HATRPO takes a natural-gradient step of
bounded KL on the unclipped surrogate (`hatrpo_surrogate`, `policy_kl`, `conjugate_gradient`,
`max_step`, `line_search`). Every hyperparameter is an argument.

Reference: J. G. Kuba et al., "Trust Region Policy Optimisation in Multi-Agent Reinforcement
Learning", ICLR 2022 (https://arxiv.org/abs/2109.11251), Algorithms 1 (HATRPO) and 2 (HAPPO);
HARL `harl/algorithms/actors/happo.py`, `hatrpo.py`, `harl/utils/trpo_util.py`.
"""

from __future__ import annotations

from collections.abc import Callable

import chex
import jax
import jax.numpy as jnp

from marljax.agents import heads
from marljax.nn import distributions, losses

Array = jax.Array


def happo_loss(
    log_prob: Array,
    old_log_prob: Array,
    advantages: Array,
    factor: Array,
    entropy: Array,
    *,
    clip_eps: Array | float = 0.2,
    ent_coef: Array | float = 0.01,
    normalize_advantages: bool = True,
    axis_name: str | None = None,
) -> tuple[Array, dict[str, Array]]:
    """HAPPO's loss of one agent: the clipped surrogate of the factor-weighted advantage.

        A'   = normalize(A) if normalize_advantages else A,
        r    = exp(log_prob - old_log_prob),
        L_pi = -mean(min(r M A', clip(r, 1 - clip_eps, 1 + clip_eps) M A')),
        loss = L_pi - ent_coef mean(entropy).

    `M > 0`, so this is `marljax.nn.losses.ppo_clip_loss` on the advantages `M A'`; with
    `M = 1` (the first agent of the order, or one agent) it is the policy part of
    `marljax.agents.ppo.loss.ppo_loss`.

    Reference: Kuba et al. 2022 (ICLR), Algorithm 2; HARL `harl/algorithms/actors/happo.py`.

    Args:
      log_prob: `[...]` log pi_i(a_i | o_i) of the agent under the current parameters.
      old_log_prob: `[...]` the same when acting (constant).
      advantages: `[...]` advantage estimates A(s, a) of the joint action (constant).
      factor: `[...]` M, the earlier agents' new / old ratio product (constant; 1 for the first).
      entropy: `[...]` entropies of the agent's current policy.
      clip_eps: the ratio's clip range.
      ent_coef: weight of the entropy bonus.
      normalize_advantages: (static) standardise the advantages over the batch first (before
        the factor multiplies them, as HARL).
      axis_name: a mapped axis whose shards together hold the batch (advantage statistics).

    Returns:
      `(loss [], metrics)` with scalar `policy_loss`, `entropy`, `approx_kl`, `clip_fraction`.
    """
    chex.assert_equal_shape([log_prob, old_log_prob, advantages, factor])
    if normalize_advantages:
        advantages = losses.normalize(advantages, axis_name=axis_name)
    weighted = jax.lax.stop_gradient(factor) * advantages
    pg_loss, info = losses.ppo_clip_loss(log_prob, old_log_prob, weighted, clip_eps)
    entropy = losses.masked_mean(entropy)
    metrics = {"policy_loss": pg_loss, "entropy": entropy, **info}
    return pg_loss - ent_coef * entropy, metrics


def hatrpo_surrogate(
    log_prob: Array, old_log_prob: Array, advantages: Array, factor: Array
) -> Array:
    """HATRPO's surrogate of one agent (to maximise): `mean(r M A)`, `r = exp(log_prob - old)`.

    Reference: Kuba et al. 2022 (ICLR), Algorithm 1; HARL `harl/algorithms/actors/hatrpo.py`.

    Args:
      log_prob: `[...]` log pi_i(a_i | o_i) under the candidate parameters.
      old_log_prob: `[...]` the same when acting (constant).
      advantages: `[...]` advantages, normalised or not (constant).
      factor: `[...]` the earlier agents' ratio product M (constant).

    Returns:
      `[]` the surrogate.
    """
    chex.assert_equal_shape([log_prob, old_log_prob, advantages, factor])
    weight = jax.lax.stop_gradient(factor * advantages)
    return jnp.mean(jnp.exp(log_prob - jax.lax.stop_gradient(old_log_prob)) * weight)


def _gaussian(dist: heads.ActionDistribution):
    """The distrax distribution whose KL is the policy's (the tanh-Gaussian's base Gaussian)."""
    inner = dist.dist
    return inner.base if isinstance(inner, distributions.TanhGaussian) else inner


def policy_kl(old: heads.ActionDistribution, new: heads.ActionDistribution) -> Array:
    """`KL(old || new)` per batch element of two action distributions of `marljax.agents.heads`.

    Exact: categorical (masked actions have zero probability under both) and diagonal
    Gaussian; a tanh-Gaussian's KL is its base Gaussian's (KL is invariant under the bijection).

    Returns:
      `[...]` the KL of each batch element.
    """
    return _gaussian(old).kl_divergence(_gaussian(new))


def conjugate_gradient(
    matvec: Callable[[Array], Array], b: Array, num_iters: int, residual_tol: float = 1e-10
) -> Array:
    """Approximately solve `F x = b` for a symmetric positive-definite `F` given as `matvec`.

    `num_iters` (static) iterations of conjugate gradient from `x = 0` as one `lax.scan`; the
    iterate stops changing once the squared residual is below `residual_tol` (HARL's early exit).

    Reference: J. Nocedal and S. Wright, "Numerical Optimization", Algorithm 5.2; HARL
    `harl/utils/trpo_util.py` (`conjugate_gradient`).

    Args:
      matvec: `v [D] -> F v [D]`.
      b: `[D]` right-hand side.
      num_iters: the number of iterations.
      residual_tol: squared-residual tolerance.

    Returns:
      `[D]` the approximate solution.
    """
    chex.assert_rank(b, 1)

    def body(carry, _):
        x, r, p, rdotr = carry
        active = rdotr >= residual_tol
        fp = matvec(p)
        alpha = rdotr / jnp.maximum(jnp.dot(p, fp), 1e-30)
        x_new, r_new = x + alpha * p, r - alpha * fp
        new_rdotr = jnp.dot(r_new, r_new)
        p_new = r_new + new_rdotr / jnp.maximum(rdotr, 1e-30) * p
        keep = lambda new, old: jnp.where(active, new, old)  # noqa: E731
        return (keep(x_new, x), keep(r_new, r), keep(p_new, p), keep(new_rdotr, rdotr)), None

    init = (jnp.zeros_like(b), b, b, jnp.dot(b, b))
    (x, _, _, _), _ = jax.lax.scan(body, init, None, length=num_iters)
    return x


def max_step(direction: Array, f_direction: Array, kl_threshold: Array | float) -> Array:
    """The largest step along `direction` whose quadratic KL model is `kl_threshold`.

        0.5 (beta s)^T F (beta s) = delta  =>  beta = sqrt(2 delta / (s^T F s)).

    Args:
      direction: `[D]` the search direction `s` (CG's solution of `F s = g`).
      f_direction: `[D]` `F s`.
      kl_threshold: `delta`.

    Returns:
      `[D]` the full step `beta s`.
    """
    shs = 0.5 * jnp.dot(direction, f_direction)
    return direction * jnp.sqrt(kl_threshold / jnp.maximum(shs, 1e-30))


def line_search(
    evaluate: Callable[[Array], tuple[Array, Array]],
    theta: Array,
    full_step: Array,
    surrogate0: Array,
    expected_improve: Array,
    *,
    kl_threshold: Array | float,
    accept_ratio: Array | float,
    backtrack_coeff: Array | float,
    num_steps: int,
) -> tuple[Array, dict[str, Array]]:
    """Backtracking line search of TRPO: the first step `c^k full_step` that is accepted.

    Step `k` (`k = 0, ..., num_steps - 1`, fraction `f_k = backtrack_coeff^k`) is accepted when

        KL_k <= kl_threshold,  improve_k > 0  and  improve_k / (f_k expected_improve) > accept_ratio,

    with `improve_k = surrogate(theta + f_k full_step) - surrogate0`. The candidates are
    evaluated together (one `vmap`, so the program does not grow with `num_steps`). If none is
    accepted the fraction is 0: the parameters stay unchanged.

    Reference: Schulman et al., "Trust Region Policy Optimization", ICML 2015; HARL
    `harl/algorithms/actors/hatrpo.py`.

    Args:
      evaluate: `theta [D] -> (surrogate [], mean KL(old || theta) [])`.
      theta: `[D]` the current (old) parameters.
      full_step: `[D]` the largest step (`max_step`).
      surrogate0: `[]` the surrogate at `theta`.
      expected_improve: `[]` its linear model's improvement, `g . full_step`.
      kl_threshold, accept_ratio, backtrack_coeff: as above.
      num_steps: the number of candidates (static).

    Returns:
      `(fraction [], metrics)`: the accepted fraction (0 if none) and scalar `kl`,
      `surrogate_improve` (of the accepted step; 0 if none) and `step_accepted` (0 or 1).
    """
    fractions = backtrack_coeff ** jnp.arange(num_steps, dtype=jnp.float32)
    surrogate, kl = jax.vmap(lambda f: evaluate(theta + f * full_step))(fractions)
    improve = surrogate - surrogate0
    ok = (
        (kl <= kl_threshold)
        & (improve > 0)
        & (improve > accept_ratio * fractions * expected_improve)
    )
    accepted = jnp.any(ok)
    first = jnp.argmax(ok)
    fraction = jnp.where(accepted, fractions[first], 0.0)
    metrics = {
        "kl": jnp.where(accepted, kl[first], 0.0),
        "surrogate_improve": jnp.where(accepted, improve[first], 0.0),
        "step_accepted": accepted.astype(jnp.float32),
    }
    return fraction, metrics


__all__ = [
    "conjugate_gradient",
    "happo_loss",
    "hatrpo_surrogate",
    "line_search",
    "max_step",
    "policy_kl",
]
