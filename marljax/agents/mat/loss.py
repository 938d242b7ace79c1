"""MAT's loss as a pure, importable function: PPO's clipped objective on the decoder's
per-agent conditional log-probabilities and the encoder's per-agent values.

It never reads a config: every hyperparameter is an argument (traced, except static switches).
"""

from __future__ import annotations

from typing import Any

import chex
import jax

from marljax.agents.ppo.loss import ppo_loss

Array = jax.Array


def mat_loss(
    log_prob: Array,
    old_log_prob: Array,
    advantages: Array,
    values: Array,
    old_values: Array,
    targets: Array,
    entropy: Array,
    **hyperparameters: Any,
) -> tuple[Array, dict[str, Array]]:
    """MAT's total loss over `[B, A]` (a batch of steps, every agent of each).

    Agent `i`'s policy is the decoder's conditional `pi(a_i | o_1..o_A, a_1..a_{i-1})`,
    evaluated for all agents in one teacher-forced pass; the encoder gives `V(o)_i`. With
    `r_i = pi(a_i | o, a_{<i}) / pi_old(a_i | o, a_{<i})` and `A_i` the GAE advantage of agent
    `i` (paper, eq. 5 and 6):

        L_pi = -1/(B A) sum_b sum_i min(r_i A_i, clip(r_i, 1 - eps, 1 + eps) A_i),
        L_V  = 1/(2 B A) sum_b sum_i max((V_i - R_i)^2, (V_clip,i - R_i)^2),
        loss = L_pi + vf_coef L_V - ent_coef mean(H[pi(. | o, a_{<i})]).

    That is `marljax.agents.ppo.ppo_loss` on per-agent quantities: the ratios are per agent, as
    in the authors' `mat_trainer.py`, not one ratio of the joint action.

    Reference: M. Wen et al., "Multi-Agent Reinforcement Learning is a Sequence Modeling
    Problem", NeurIPS 2022 (https://arxiv.org/abs/2205.14953).

    Args:
      log_prob: `[B, A]` log pi(a_i | o, a_{<i}) under the current parameters.
      old_log_prob: `[B, A]` the same when acting (constant).
      advantages: `[B, A]` advantage estimates (constant).
      values: `[B, A]` the encoder's V(o)_i under the current parameters.
      old_values: `[B, A]` V(o)_i when acting (constant; ignored without value clipping).
      targets: `[B, A]` value targets R_i (constant).
      entropy: `[B, A]` entropies of the conditional policies.
      **hyperparameters: `ppo_loss`'s keyword arguments: `clip_eps` (eps), `value_clip_eps`
        (None, static, for the unclipped value loss), `vf_coef`, `ent_coef`,
        `normalize_advantages` (static) and `axis_name` (data-parallel batch statistics).

    Returns:
      `(loss [], metrics)` with scalar `policy_loss`, `value_loss`, `entropy`, `approx_kl` and
      `clip_fraction`.
    """
    chex.assert_rank([log_prob, old_log_prob, advantages, values, old_values, targets], 2)
    chex.assert_equal_shape([log_prob, entropy])
    arrays = (log_prob, old_log_prob, advantages, values, old_values, targets, entropy)
    return ppo_loss(*arrays, **hyperparameters)


__all__ = ["mat_loss"]
