"""PPO's total actor-critic loss as a pure, importable function (brax `ppo/losses.py` style).

`ppo_loss` combines the clipped surrogate (`marljax.nn.losses.ppo_clip_loss`), the (optionally
clipped) value loss (`marljax.nn.losses.value_loss`) and an entropy bonus from quantities any
actor-critic computes: log-probabilities, values, advantages and entropies. It never reads a
config: every hyperparameter is an argument (traced, except the static switches).
"""

from __future__ import annotations

import chex
import jax

from marljax.nn import losses

Array = jax.Array


def ppo_loss(
    log_prob: Array,
    old_log_prob: Array,
    advantages: Array,
    values: Array,
    old_values: Array,
    targets: Array,
    entropy: Array,
    *,
    clip_eps: Array | float = 0.2,
    value_clip_eps: Array | float | None = 0.2,
    vf_coef: Array | float = 0.5,
    ent_coef: Array | float = 0.01,
    normalize_advantages: bool = True,
    axis_name: str | None = None,
) -> tuple[Array, dict[str, Array]]:
    """PPO's total loss: clipped surrogate + weighted value loss - weighted entropy bonus.

        A'    = normalize(A) if normalize_advantages else A,
        r     = exp(log_prob - old_log_prob),
        L_pi  = -mean(min(r A', clip(r, 1 - clip_eps, 1 + clip_eps) A')),
        L_V   = 0.5 mean(max((V - R)^2, (V_clip - R)^2)),  V_clip = V_old + clip(V - V_old, +-eps_V)
                (0.5 mean((V - R)^2) when value_clip_eps is None),
        H     = mean(entropy),
        loss  = L_pi + vf_coef L_V - ent_coef H.

    With a single gradient step on fresh data (`r = 1`), no advantage normalisation and no
    value clipping this is the A2C loss (Huang et al. 2022, "A2C is a special case of PPO").

    References: Schulman et al., "Proximal Policy Optimization Algorithms", 2017
    (https://arxiv.org/abs/1707.06347); Yu et al., "The Surprising Effectiveness of PPO in
    Cooperative Multi-Agent Games", NeurIPS 2022 (value clipping, MAPPO).

    Args:
      log_prob: `[...]` log pi(a|s) under the current parameters (e.g. `[T, B, A]`).
      old_log_prob: `[...]` log pi_old(a|s) recorded when acting (constant).
      advantages: `[...]` advantage estimates (constant).
      values: `[...]` V(s) under the current parameters.
      old_values: `[...]` V(s) recorded when acting (constant; ignored without value clipping).
      targets: `[...]` value targets R (constant).
      entropy: `[...]` entropies of the current policy.
      clip_eps: the surrogate's clip range.
      value_clip_eps: the value clip range, or None (static) for the unclipped value loss.
      vf_coef: weight of the value loss.
      ent_coef: weight of the entropy bonus.
      normalize_advantages: (static) standardise the advantages over the batch first.
      axis_name: a mapped axis whose shards together hold the batch (data-parallel learners):
        advantage statistics are those of the whole batch.

    Returns:
      `(loss [], metrics)` with scalar `policy_loss`, `value_loss`, `entropy`, `approx_kl`
      and `clip_fraction`.
    """
    chex.assert_equal_shape([log_prob, old_log_prob, advantages, values, old_values, targets])
    entropy = losses.masked_mean(entropy)
    if normalize_advantages:
        advantages = losses.normalize(advantages, axis_name=axis_name)
    pg_loss, pg_info = losses.ppo_clip_loss(log_prob, old_log_prob, advantages, clip_eps)
    v_loss = losses.value_loss(values, old_values, targets, value_clip_eps)
    total = pg_loss + vf_coef * v_loss - ent_coef * entropy
    metrics = {
        "policy_loss": pg_loss,
        "value_loss": v_loss,
        "entropy": entropy,
        "approx_kl": pg_info["approx_kl"],
        "clip_fraction": pg_info["clip_fraction"],
    }
    return total, metrics


__all__ = ["ppo_loss"]
