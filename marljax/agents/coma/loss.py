"""COMA's losses as pure functions on arrays (Foerster et al. 2018).

COMA trains decentralised actors with one centralised critic `Q(s, u)` of the joint action. For
agent `a` the critic outputs, in one pass, the values of all its own actions with the other
agents' actions held fixed, `Q(s, (u_-a, u'_a))` for every `u'_a`; the *counterfactual
baseline* marginalises agent `a`'s own action under its policy:

    b_a(s, u_-a) = sum_{u'_a} pi_a(u'_a | tau_a) Q(s, (u_-a, u'_a)),
    A_a(s, u)    = Q(s, u) - b_a(s, u_-a),

so each agent's advantage credits exactly its own contribution (the baseline does not depend
on `u_a`, so the policy gradient stays unbiased). The actor ascends
`E[log pi_a(u_a | tau_a) A_a(s, u)]`; the critic regresses `Q(s, u)` on TD(lambda) targets from
a target critic.

    from marljax.agents.coma import counterfactual_advantage, coma_actor_loss

    adv = counterfactual_advantage(q, pi, actions)        # q, pi [..., A, N]; actions [..., A]
    loss, metrics = coma_actor_loss(log_prob, adv, entropy, ent_coef=0.01)

Reference: J. Foerster, G. Farquhar, T. Afouras, N. Nardelli and S. Whiteson, "Counterfactual
Multi-Agent Policy Gradients", AAAI 2018 (https://arxiv.org/abs/1705.08926), eqs. (4)-(5).
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

Array = jax.Array


def counterfactual_q(q_joint: Array, actions: Array) -> Array:
    """Each agent's counterfactual row of a joint action-value table.

        out[..., a, u'] = Q(s, (u_-a, u'_a = u')),

    i.e. what COMA's critic outputs for agent `a`: the values of all of `a`'s actions with the
    other agents' actions fixed at `actions`. Useful for tabular critics (matrix games) and tests.

    Args:
      q_joint: `[N] * A` the joint table (one leading axis per agent; no batch axes).
      actions: `[..., A]` int joint actions.

    Returns:
      `[..., A, N]`.
    """
    A = q_joint.ndim
    N = q_joint.shape[0]
    chex.assert_axis_dimension(actions, -1, A)
    rows = []
    for a in range(A):  # A is static and small; an index per agent
        idx = [actions[..., b] for b in range(A)]
        idx[a] = jnp.broadcast_to(jnp.arange(N), (*actions.shape[:-1], N))
        idx = [i if b == a else i[..., None] for b, i in enumerate(idx)]
        rows.append(q_joint[tuple(idx)])
    return jnp.stack(rows, axis=-2)


def counterfactual_baseline(q: Array, pi: Array) -> Array:
    """`b_a = sum_{u'} pi_a(u') Q(s, (u_-a, u'))`: `q [..., A, N]`, `pi [..., A, N]` -> `[..., A]`."""
    chex.assert_equal_shape([q, pi])
    return jnp.sum(pi * q, axis=-1)


def counterfactual_advantage(q: Array, pi: Array, actions: Array) -> Array:
    """COMA's advantage `A_a = Q(s, u) - b_a(s, u_-a)` (no gradient flows through it).

    Args:
      q: `[..., A, N]` the critic's counterfactual values for each agent (`counterfactual_q`).
      pi: `[..., A, N]` each agent's policy (probabilities over its legal actions).
      actions: `[..., A]` int taken actions.

    Returns:
      `[..., A]` advantages.
    """
    chex.assert_equal_shape([q, pi])
    chex.assert_equal_shape_prefix([q, actions], actions.ndim)
    q_taken = jnp.take_along_axis(q, actions[..., None], axis=-1)[..., 0]
    return jax.lax.stop_gradient(q_taken - counterfactual_baseline(q, pi))


def coma_actor_loss(
    log_prob: Array, advantages: Array, entropy: Array, *, ent_coef: Array | float = 0.0
) -> tuple[Array, dict[str, Array]]:
    """The actor's policy-gradient loss with the counterfactual advantage.

        L_pi = -mean(log pi_a(u_a | tau_a) * A_a) - ent_coef * mean(entropy).

    Args:
      log_prob: `[...]` log-probabilities of the taken actions under the current policy.
      advantages: `[...]` counterfactual advantages (constant).
      entropy: `[...]` policy entropies.
      ent_coef: weight of the entropy bonus (EPyMARL: 0.01; the paper: none).

    Returns:
      `(loss [], {"actor_loss", "entropy", "advantage_mean"})`.
    """
    chex.assert_equal_shape([log_prob, advantages, entropy])
    pg = -jnp.mean(log_prob * jax.lax.stop_gradient(advantages))
    ent = jnp.mean(entropy)
    metrics = {"actor_loss": pg, "entropy": ent, "advantage_mean": jnp.mean(advantages)}
    return pg - ent_coef * ent, metrics


def coma_critic_loss(q_taken: Array, targets: Array) -> Array:
    """The critic's regression onto its (TD(lambda)) targets: `mean((Q(s, u) - G)^2)`.

    Args:
      q_taken: `[...]` the critic's value of the taken joint action (per agent's output).
      targets: `[...]` return targets (no gradient flows into them).
    """
    chex.assert_equal_shape([q_taken, targets])
    return jnp.mean((q_taken - jax.lax.stop_gradient(targets)) ** 2)


__all__ = [
    "coma_actor_loss",
    "coma_critic_loss",
    "counterfactual_advantage",
    "counterfactual_baseline",
    "counterfactual_q",
]
