"""The losses of MADDPG as pure functions on arrays.

Every function takes its hyperparameters as arguments and reads no config, so a paper can import
one and use it with its own networks. `B` is the batch, `A` the agents, `D` an agent's action
dimension. Every loss is returned per agent (`[A]`): agent `i`'s loss depends only on its own
critic (`critic_loss`) or its own actor's action (`actor_loss`), so their sum gives each agent's
gradient to its own (independent) parameters, and a learner with shared parameters takes their
mean.

One MADDPG step in a paper's own code:

    from marljax.agents import maddpg

    # y_i = r_i + gamma (1 - d) Q'_i(x', mu'_1(o'_1), ..., mu'_A(o'_A))
    y = maddpg.td_target(r, discount, q_next)              # [B, A]
    critic_loss = maddpg.critic_loss(q, y).sum()          # q [B, A] at the stored actions
    # agent i's critic at the stored actions with a_i replaced by mu_i(o_i)
    actor_loss = maddpg.actor_loss(q_pi, u, reg=1e-3).sum()

Reference: R. Lowe et al., "Multi-Agent Actor-Critic for Mixed Cooperative-Competitive
Environments", NeurIPS 2017 (https://arxiv.org/abs/1706.02275), eqs. (5) and (6); the
deterministic policy gradient of Silver et al. 2014 and DDPG (Lillicrap et al. 2016).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

Array = jax.Array


def td_target(r_t: Array, discount_t: Array, q_tp1: Array) -> Array:
    """Each agent's one-step TD target of its centralised critic (no gradient flows through it).

        y_i = r_i + discount * Q'_i(x', a'_1, ..., a'_A),   a'_j = mu'_j(o'_j),

    with the target critics `Q'` at the target actors' next actions.

    Args:
      r_t: `[B, A]` the agents' rewards.
      discount_t: `[B]` bootstrap discounts (`gamma (1 - terminated)`), or `[B, A]`.
      q_tp1: `[B, A]` the target critics' values of the next observations and actions.

    Returns:
      `[B, A]` targets.
    """
    if r_t.ndim != 2 or q_tp1.shape != r_t.shape:
        raise ValueError(
            f"r_t and q_tp1 must be [B, A] of one shape, got {r_t.shape}, {q_tp1.shape}"
        )
    if discount_t.shape not in (r_t.shape[:1], r_t.shape):
        raise ValueError(f"discount_t must be [B] or [B, A], got {discount_t.shape}")
    d = discount_t[:, None] if discount_t.ndim == 1 else discount_t
    return jax.lax.stop_gradient(r_t + d * q_tp1)


def critic_loss(q_t: Array, target_t: Array) -> Array:
    """Each agent's critic regression loss (Lowe et al. 2017, eq. (6)).

        L_i = mean_b (Q_i(x_b, a_1b, ..., a_Ab) - y_ib)^2.

    Args:
      q_t: `[B, A]` the critics' values of the stored joint actions.
      target_t: `[B, A]` targets (`td_target`).

    Returns:
      `[A]` the agents' losses.
    """
    if q_t.ndim != 2 or q_t.shape != target_t.shape:
        raise ValueError(f"q_t and target_t must be [B, A], got {q_t.shape}, {target_t.shape}")
    return jnp.mean((q_t - jax.lax.stop_gradient(target_t)) ** 2, axis=0)


def actor_loss(q_t: Array, u_t: Array | None = None, reg: Array | float = 0.0) -> Array:
    """Each agent's deterministic policy-gradient loss (Lowe et al. 2017, eq. (5)).

        L_i = -mean_b Q_i(x_b, a_1b, ..., mu_i(o_ib), ..., a_Ab) + reg * mean_{b,d} u_ibd^2,

    where only agent `i`'s slot holds its actor's action `mu_i(o_i) = tanh(u_i)` (the gradient
    flows through it into the actor) and the others hold the stored actions. The penalty on the
    pre-tanh outputs `u` keeps the tanh out of saturation (the official code's `1e-3`).

    Args:
      q_t: `[B, A]` agent `i`'s critic at the joint action with its own slot set to its actor's.
      u_t: `[B, A, D]` the actors' pre-tanh outputs (None: no penalty).
      reg: the penalty's weight.

    Returns:
      `[A]` the agents' losses.
    """
    if q_t.ndim != 2:
        raise ValueError(f"q_t must be [B, A], got {q_t.shape}")
    loss = -jnp.mean(q_t, axis=0)
    if u_t is None:
        return loss
    if u_t.shape[:2] != q_t.shape:
        raise ValueError(f"u_t must be [B, A, D] with q_t [B, A], got {u_t.shape}, {q_t.shape}")
    return loss + reg * jnp.mean(u_t**2, axis=(0, 2))


__all__ = ["actor_loss", "critic_loss", "td_target"]
