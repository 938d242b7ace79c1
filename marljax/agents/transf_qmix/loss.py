"""TransfQMIX's monotonic mixing and TD loss as pure functions on arrays.

The transformer mixer (`networks.TransformerMixer`) reads the global state as entity tokens and
the agents' hidden tokens, and its output tokens *are* the mixing network's weights:

    W_1 = |e_agents|   [A, H]  (the output tokens of the agents' hidden states),
    b_1 = e_0          [H]     (the output of the mixer's own hidden token),
    w_2 = |e_0|        [H],    b_2 = Dense(relu(e_0))  [],
    Q_tot = elu(q_a W_1 + b_1) . w_2 + b_2,

so that `dQ_tot / dq_a >= 0` for every agent (QMIX's monotonicity: the greedy joint action is the
tuple of the agents' greedy actions). The loss regresses `Q_tot` of the taken actions on return
targets `y` built from the target networks (`marljax.agents.qlearning.loss.td_targets`):

    L = 1/2 mean_{t, b} (Q_tot(s_t, u_t) - y_t)^2.

    from marljax.agents.transf_qmix import monotonic_mix, transf_qmix_loss

    q_tot = monotonic_mix(q_a, agent_tokens, mixer_token, b2)     # [T, B]
    loss, metrics = transf_qmix_loss(q_tot, targets)

Reference: M. Gallici, M. Martin and I. Masmitja, "TransfQMix: Transformers for Leveraging the
Graph Structure of Multi-Agent Reinforcement Learning Problems", AAMAS 2023
(https://arxiv.org/abs/2301.05334), section 4.2 (eq. 5); JaxMARL's `baselines/QLearning/
transf_qmix.py` (`TransformerMixer`, `TD_LAMBDA_LOSS`).
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

Array = jax.Array


def monotonic_mix(q_a: Array, agent_tokens: Array, mixer_token: Array, b2: Array) -> Array:
    """`Q_tot` of the agents' values mixed with weights read from transformer output tokens.

        Q_tot = elu(sum_a q_a |W_1[a]| + b_1) . |w_2| + b_2,
        W_1 = agent_tokens,  b_1 = w_2 = mixer_token.

    Args:
      q_a: `[..., A]` the agents' values (e.g. of the taken actions).
      agent_tokens: `[..., A, H]` the mixer transformer's outputs at the agents' hidden tokens.
      mixer_token: `[..., H]` its output at the mixer's own hidden token.
      b2: `[...]` the final bias.

    Returns:
      `[...]` `Q_tot`, non-decreasing in every `q_a` (the weights pass through `abs`).
    """
    chex.assert_rank(agent_tokens, q_a.ndim + 1)
    chex.assert_equal_shape_prefix([q_a, agent_tokens], q_a.ndim)
    chex.assert_equal_shape([agent_tokens[..., 0, :], mixer_token])
    chex.assert_equal_shape([q_a[..., 0], b2])
    hidden = jax.nn.elu(jnp.einsum("...a,...ah->...h", q_a, jnp.abs(agent_tokens)) + mixer_token)
    return jnp.sum(hidden * jnp.abs(mixer_token), axis=-1) + b2


def transf_qmix_loss(q_tot: Array, targets: Array) -> tuple[Array, dict[str, Array]]:
    """TransfQMIX's TD loss, `L = 1/2 mean (Q_tot - y)^2` (JaxMARL's `TD_LAMBDA_LOSS`).

    Args:
      q_tot: `[T, B]` mixed values of the taken joint actions.
      targets: `[T, B]` return targets `y` (no gradient flows into them), e.g. TD(lambda) of
        the target mixer's `Q_tot` of the greedy next joint actions.

    Returns:
      `(loss [], {"loss", "q_taken", "target_mean"})` (scalar diagnostics).
    """
    chex.assert_rank(q_tot, 2)
    chex.assert_equal_shape([q_tot, targets])
    loss = 0.5 * jnp.mean((q_tot - jax.lax.stop_gradient(targets)) ** 2)
    return loss, {"loss": loss, "q_taken": jnp.mean(q_tot), "target_mean": jnp.mean(targets)}


#: the metric names `transf_qmix_loss` returns
METRICS = ("loss", "q_taken", "target_mean")

__all__ = ["METRICS", "monotonic_mix", "transf_qmix_loss"]
