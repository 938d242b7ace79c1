"""FACMAC's actor loss as a pure function; its critic loss is the mixed TD loss of the
value-based learner (`marljax.agents.qlearning.mixed_td_loss` with the QMIX or VDN mixer).

    from marljax.agents import facmac
    from marljax.nn.qvalues import mixed_td_loss

    # utilities q [1, B, A] at the stored actions, v [1, B, A] of the target actors' next actions
    critic_loss, _ = mixed_td_loss(q, v, r, terminated, truncated, gamma, mix_tm1=mix,
                                   mix_t=target_mix)
    actor_loss = facmac.centralised_actor_loss(q_tot_pi, a_pi, reg=1e-3)

Reference: B. Peng et al., "FACMAC: Factored Multi-Agent Centralised Policy Gradients",
NeurIPS 2021 (https://arxiv.org/abs/2003.06709), the centralised policy gradient.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

Array = jax.Array


def centralised_actor_loss(q_tot: Array, a: Array, reg: Array | float = 0.0) -> Array:
    """FACMAC's centralised policy-gradient loss: every agent's action from its current policy.

        L = -mean_b Q_tot(s_b, mu_1(o_1b), ..., mu_A(o_Ab)) + reg * mean_{b,i,d} mu_i(o_ib)_d^2.

    Unlike MADDPG's per-agent loss (the others' actions from the replay), all `A` actions are
    the current policies', and the gradient reaches every actor through the mixer, so the
    agents' updates are coordinated through `Q_tot` (Peng et al. 2021).

    Args:
      q_tot: `[B]` the mixed value of the policies' joint action.
      a: `[B, A, D]` the policies' actions (unit box), penalised as in FACMAC's code.
      reg: the penalty's weight.

    Returns:
      `[]` the loss.
    """
    if q_tot.ndim != 1 or a.ndim != 3 or a.shape[0] != q_tot.shape[0]:
        raise ValueError(f"q_tot must be [B] and a [B, A, D], got {q_tot.shape}, {a.shape}")
    return -jnp.mean(q_tot) + reg * jnp.mean(a**2)


__all__ = ["centralised_actor_loss"]
