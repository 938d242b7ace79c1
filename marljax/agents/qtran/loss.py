"""QTRAN-base's losses as pure functions on arrays (Son et al. 2019).

QTRAN learns three things: per-agent utilities `Q_i(tau_i, u_i)` that the agents act greedily on,
a joint action-value `Q_jt(s, u)` trained by TD on the team reward, and a state value `V_jt(s)`.
Its losses make the sum of the utilities a *factorization* of `Q_jt` (Theorem 1 of the paper):

    Q'_jt(s, u) = sum_i Q_i(tau_i, u_i),
    Q'_jt(s, u) - Q_jt(s, u) + V_jt(s) = 0   at the greedy joint action u = u_bar,
    Q'_jt(s, u) - Q_jt(s, u) + V_jt(s) >= 0  at every other joint action,

so that the tuple of per-agent argmaxes is the argmax of `Q_jt`, whatever its shape (no
monotonicity as in QMIX, no additivity as in VDN). `Q_jt` is held fixed (stop-gradient) in the
two constraint losses; they move the utilities and `V_jt`.

    from marljax.agents.qtran import qtran_loss

    loss, metrics = qtran_loss(
        q_jt, targets, q_jt_greedy, v, q_sum_taken, q_sum_greedy, opt_weight=1.0, nopt_weight=1.0)

Reference: K. Son, D. Kim, W. J. Kang, D. E. Hostallero and Y. Yi, "QTRAN: Learning to Factorize
with Transformation for Cooperative Multi-Agent Reinforcement Learning", ICML 2019
(https://arxiv.org/abs/1905.05408), section 3 (QTRAN-base), eqs. (6)-(8).
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

Array = jax.Array


def opt_loss(q_sum_greedy: Array, q_jt_greedy: Array, v: Array) -> Array:
    """L_opt, the equality constraint at the greedy joint action (Son et al. 2019, eq. 7).

        L_opt = mean((Q'_jt(s, u_bar) - stop_gradient(Q_jt(s, u_bar)) + V_jt(s))^2).

    Args:
      q_sum_greedy: `[...]` sum over agents of each agent's greedy utility `max_u Q_i`.
      q_jt_greedy: `[...]` `Q_jt` at the greedy joint action (no gradient flows into it).
      v: `[...]` `V_jt(s)`.

    Returns:
      `[]` the loss.
    """
    chex.assert_equal_shape([q_sum_greedy, q_jt_greedy, v])
    return jnp.mean((q_sum_greedy - jax.lax.stop_gradient(q_jt_greedy) + v) ** 2)


def nopt_loss(q_sum_taken: Array, q_jt_taken: Array, v: Array) -> Array:
    """L_nopt, the inequality constraint at the taken joint action (only violations count).

        L_nopt = mean(min(Q'_jt(s, u) - stop_gradient(Q_jt(s, u)) + V_jt(s), 0)^2).

    Args:
      q_sum_taken: `[...]` sum over agents of the taken actions' utilities `Q_i(tau_i, u_i)`.
      q_jt_taken: `[...]` `Q_jt(s, u)` of the taken joint action (no gradient flows into it).
      v: `[...]` `V_jt(s)`.

    Returns:
      `[]` the loss.
    """
    chex.assert_equal_shape([q_sum_taken, q_jt_taken, v])
    gap = q_sum_taken - jax.lax.stop_gradient(q_jt_taken) + v
    return jnp.mean(jnp.minimum(gap, 0.0) ** 2)


def qtran_loss(
    q_jt: Array,
    targets: Array,
    q_jt_greedy: Array,
    v: Array,
    q_sum_taken: Array,
    q_sum_greedy: Array,
    *,
    opt_weight: Array | float = 1.0,
    nopt_weight: Array | float = 1.0,
) -> tuple[Array, dict[str, Array]]:
    """QTRAN-base's total loss, `L = L_td + opt_weight * L_opt + nopt_weight * L_nopt`.

        L_td = mean((Q_jt(s, u) - y)^2),   y = r + gamma * Q_jt^target(s', u_bar')
                                              (or an n-step / lambda return; no gradient),

    with `L_opt` and `L_nopt` as in `opt_loss` and `nopt_loss`. `u_bar'` is the greedy joint
    action of the agents' utilities at `s'`.

    Args:
      q_jt: `[...]` `Q_jt(s, u)` of the taken joint actions (e.g. `[T, B]`).
      targets: `[...]` TD targets `y` (no gradient flows into them).
      q_jt_greedy: `[...]` `Q_jt(s, u_bar)` at the agents' greedy joint action.
      v: `[...]` `V_jt(s)`.
      q_sum_taken: `[...]` `sum_i Q_i(tau_i, u_i)` of the taken actions.
      q_sum_greedy: `[...]` `sum_i max_u Q_i(tau_i, u)`.
      opt_weight: lambda_opt.
      nopt_weight: lambda_nopt.

    Returns:
      `(loss [], metrics)` with scalar `loss`, `td_loss`, `opt_loss`, `nopt_loss`, `q_taken`
      (mean `Q_jt`), `target_mean` and `v_mean`.

    Reference: Son et al. 2019, eqs. (6)-(8); EPyMARL / PyMARL `qtran_learner.py`.
    """
    chex.assert_equal_shape([q_jt, targets, q_jt_greedy, v, q_sum_taken, q_sum_greedy])
    td = jnp.mean((q_jt - jax.lax.stop_gradient(targets)) ** 2)
    l_opt = opt_loss(q_sum_greedy, q_jt_greedy, v)
    l_nopt = nopt_loss(q_sum_taken, q_jt, v)
    total = td + opt_weight * l_opt + nopt_weight * l_nopt
    metrics = {
        "loss": total,
        "td_loss": td,
        "opt_loss": l_opt,
        "nopt_loss": l_nopt,
        "q_taken": jnp.mean(q_jt),
        "target_mean": jnp.mean(targets),
        "v_mean": jnp.mean(v),
    }
    return total, metrics


#: the metric names `qtran_loss` returns
METRICS = ("loss", "td_loss", "opt_loss", "nopt_loss", "q_taken", "target_mean", "v_mean")

__all__ = ["METRICS", "nopt_loss", "opt_loss", "qtran_loss"]
