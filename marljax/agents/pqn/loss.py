"""PQN-VDN's target and loss as pure functions on arrays.

PQN (parallel Q-network; Gallici et al. 2024) drops the replay buffer and the target network: many
parallel environments give decorrelated on-policy data, layer-normalised Q-networks keep TD
learning stable, and Q(lambda) returns computed once per rollout are regressed on for a few
epochs of minibatches. The multi-agent version in JaxMARL sums the agents' values (VDN):

    Q_tot(o, u) = sum_a Q_a(o_a, u_a),      V_t = sum_a max_{u legal} Q_a(o_{a,t+1}, u),
    G_t = r_t + discount_t ((1 - lambda) V_t + lambda G_{t+1}),   G_{T-1} = r + discount V,
    L   = mean((Q_tot(o_t, u_t) - G_t)^2).

    from marljax.agents.pqn import pqn_vdn_loss, vdn_lambda_targets

    targets = vdn_lambda_targets(r_t, discount_t, q_next_t, mask_next_t, done_t, 0.3)  # [T, B]
    loss, metrics = pqn_vdn_loss(q_taken, targets)   # q_taken [..., A], targets [...]

References: M. Gallici, M. Fellows, B. Ellis, B. Pou, I. Masmitja, J. N. Foerster and M. Martin,
"Simplifying Deep Temporal Difference Learning", ICLR 2025 (https://arxiv.org/abs/2407.04811);
A. Rutherford et al., "JaxMARL", NeurIPS 2024 (`baselines/QLearning/pqn_vdn_ff.py`).
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from marljax.nn import losses
from marljax.nn.qvalues import masked_argmax

Array = jax.Array


def vdn_lambda_targets(
    r_t: Array,
    discount_t: Array,
    q_next_t: Array,
    mask_next_t: Array,
    done_t: Array,
    lambda_: Array | float,
) -> Array:
    """Q(lambda) targets of the VDN sum, cut at episode ends (no gradient flows through them).

    Args:
      r_t: `[T, B]` team rewards.
      discount_t: `[T, B]` `gamma * (1 - terminated_t)`.
      q_next_t: `[T, B, A, N]` the agents' values of the observations after each step (the
        final observation at episode ends, so truncation bootstraps).
      mask_next_t: `[T, B, A, N]` bool legal actions there.
      done_t: `[T, B]` bool, terminated or truncated (returns do not cross episode ends).
      lambda_: the lambda of Q(lambda).

    Returns:
      `[T, B]` the targets `G_t` (see the module docstring).
    """
    chex.assert_equal_shape([q_next_t, mask_next_t])
    best = masked_argmax(q_next_t, mask_next_t)
    v_t = jnp.take_along_axis(q_next_t, best[..., None], axis=-1)[..., 0].sum(-1)  # [T, B]
    return losses.lambda_returns(
        r_t, discount_t, jax.lax.stop_gradient(v_t), lambda_, done_t=done_t
    )


def pqn_vdn_loss(q_taken: Array, targets: Array) -> tuple[Array, dict[str, Array]]:
    """The squared error of the VDN sum of the taken actions' values against the targets.

    Args:
      q_taken: `[..., A]` each agent's value of its taken action.
      targets: `[...]` `vdn_lambda_targets` (constant).

    Returns:
      `(loss [], {"loss", "q_taken", "target_mean"})`.
    """
    chex.assert_equal_shape_prefix([q_taken, targets], targets.ndim)
    q_tot = q_taken.sum(-1)
    loss = jnp.mean((q_tot - jax.lax.stop_gradient(targets)) ** 2)
    return loss, {"loss": loss, "q_taken": jnp.mean(q_tot), "target_mean": jnp.mean(targets)}


__all__ = ["pqn_vdn_loss", "vdn_lambda_targets"]
