"""SHAQ's coalition sampling and loss as pure functions on arrays (Wang et al. 2022).

SHAQ reads each agent's utility `Q_i(s, a_i)` as its Markov Shapley value (MSV) at the greedy
action and as a scaled copy of it elsewhere. Agent `i`'s MSV is its marginal contribution
averaged over the coalitions `C_i` of the agents that join before it in a uniformly random
order of the grand coalition (Shapley 1953):

    Q^phi_i(s, a_i) = E_{C_i ~ Pr(C_i | N \\ {i})} [ Phi_i(s, a_i; C_i) ],
    Pr(C_i | N \\ {i}) = |C_i|! (|N| - |C_i| - 1)! / |N|!.

The Shapley-Bellman operator leads to the loss (the paper's SHAQ loss, section 4)

    L = E[ ( r + gamma * sum_i max_a Q_i^target(s', a) - sum_i delta_i(s, a_i) Q_i(s, a_i) )^2 ],
    delta_i(s, a_i) = 1                                          if a_i = argmax_a Q_i(s, a),
                    = alpha_i(s, a_i) = E_{C_i}[ alpha_hat_i(s, a_{C_i u {i}}) ]   otherwise,

where `alpha_hat_i >= 1` is a network of the state, `Q_i` and the coalition's utilities, and
the expectation over coalitions is a Monte Carlo mean over `M` sampled permutations
(`sample_coalitions`; the coalition enters the network as the mean utility of its members,
`coalition_mean`). At the greedy joint action `delta = 1`, so `sum_i Q_i` is the optimal
global value (the MSV's efficiency); elsewhere the weights `alpha > 1` let the utilities of
non-greedy actions sit below the team value they would share additively, which is what frees
SHAQ from VDN's fixed credit (relative overgeneralisation).

    from marljax.agents.shaq import coalition_mean, sample_coalitions, shaq_loss

    c = sample_coalitions(key, (T, B), num_agents=A, sample_size=5)   # [T, B, M, A, A]
    q_c = coalition_mean(q_taken, c)                                  # [T, B, M, A]
    alpha = 1 + mean_m |alpha_hat(q_taken, q_c, state)|               # your network
    loss, metrics = shaq_loss(q_taken, alpha, greedy, targets)

Reference: J. Wang, Y. Zhang, Y. Gu and T.-K. Kim, "SHAQ: Incorporating Shapley Value Theory
into Multi-Agent Q-Learning", NeurIPS 2022 (https://arxiv.org/abs/2105.15013), section 4 and the
appendix; JaxMARL `baselines/QLearning/shaq.py` (its `AlphaEstimate` and `SHAQMixer`).
"""

from __future__ import annotations

import math

import chex
import jax
import jax.numpy as jnp

Array = jax.Array


def sample_coalitions(
    key: Array, batch_shape: tuple[int, ...], num_agents: int, sample_size: int
) -> Array:
    """`sample_size` uniformly random orders of the grand coalition per batch element.

    Each order is the ranking of `A` i.i.d. uniform draws (a uniformly random permutation), and
    agent `i`'s coalition `C_i` holds the agents ranked before it, so over orders `C_i` follows
    the Shapley distribution `Pr(C_i) = |C_i|! (A - |C_i| - 1)! / A!`.

    Args:
      key: PRNG key.
      batch_shape: leading shape `[...]` (e.g. `(T, B)`; static).
      num_agents: `A` (static).
      sample_size: `M` orders per batch element (static).

    Returns:
      `[..., M, A, A]` bool: `coalitions[..., m, i, j]` is true when agent `j` joins before
      agent `i` in order `m` (never on the diagonal).
    """
    if int(num_agents) < 1 or int(sample_size) < 1:
        raise ValueError(
            f"sample_coalitions needs num_agents >= 1 and sample_size >= 1, got "
            f"{num_agents} and {sample_size}"
        )
    u = jax.random.uniform(key, (*batch_shape, sample_size, num_agents))
    return u[..., None, :] < u[..., :, None]  # [..., M, i, j]: u_j < u_i


def coalition_mean(q: Array, coalitions: Array) -> Array:
    """Mean utility of each agent's coalition, the coalition's input to the alpha network.

        q_C[..., m, i] = sum_j c[..., m, i, j] q[..., j] / max(|C_i|, 1)   (0 for C_i empty).

    Args:
      q: `[..., A]` the agents' utilities of their taken actions.
      coalitions: `[..., M, A, A]` bool, from `sample_coalitions`.

    Returns:
      `[..., M, A]`.
    """
    chex.assert_equal_shape_prefix([q, coalitions], q.ndim - 1)
    A = q.shape[-1]
    chex.assert_shape(coalitions, (*q.shape[:-1], coalitions.shape[-3], A, A))
    c = coalitions.astype(q.dtype)
    total = jnp.einsum("...mij,...j->...mi", c, q)
    return total / jnp.maximum(c.sum(-1), 1.0)


def shapley_weights(alpha: Array, greedy: Array) -> Array:
    """`delta_i`: 1 where the taken action is agent `i`'s greedy one, `alpha_i` elsewhere.

    Args:
      alpha: `[...]` the estimated `alpha_i(s, a_i)` (>= 1 for the learned estimate).
      greedy: `[...]` bool, `a_i = argmax_a Q_i(s, a)`.

    Returns:
      `[...]` the weights.
    """
    chex.assert_equal_shape([alpha, greedy])
    return jnp.where(greedy, 1.0, alpha)


def shaq_loss(
    q_taken: Array, alpha: Array, greedy: Array, targets: Array
) -> tuple[Array, dict[str, Array]]:
    """SHAQ's TD loss: the squared error of the alpha-weighted sum of the agents' utilities.

        Q_tot = sum_i delta_i Q_i(s, a_i),    loss = mean_{t, b} (Q_tot - y)^2,

    with `delta_i` from `shapley_weights` and `y` a TD target of the target network's greedy sum
    `sum_i max_a Q_i^target(s', a)` (1-step, n-step or lambda; no gradient flows into it).
    Gradients flow into the utilities and into `alpha` (the alpha network).

    Args:
      q_taken: `[T, B, A]` online utilities of the taken actions.
      alpha: `[T, B, A]` `alpha_i(s, a_i)` of the taken actions.
      greedy: `[T, B, A]` bool, the taken action is the agent's greedy one.
      targets: `[T, B]` TD targets.

    Returns:
      `(loss [], metrics)` with scalar `loss`, `q_taken` (mean `Q_tot`), `target_mean`,
      `alpha_mean` (mean `alpha` over non-greedy actions; 0 if every action was greedy) and
      `greedy_frac` (fraction of greedy actions).

    Reference: Wang et al. 2022, section 4 (the SHAQ loss); JaxMARL `shaq.py` (whose TD(lambda)
    branch halves the squared error; with Adam only the gradient clip sees the factor).
    """
    chex.assert_rank(q_taken, 3)
    chex.assert_equal_shape([q_taken, alpha, greedy])
    chex.assert_shape(targets, q_taken.shape[:2])
    q_tot = jnp.sum(shapley_weights(alpha, greedy) * q_taken, axis=-1)
    loss = jnp.mean((q_tot - jax.lax.stop_gradient(targets)) ** 2)
    non_greedy = 1.0 - greedy.astype(jnp.float32)
    alpha_mean = jnp.sum(alpha * non_greedy) / jnp.maximum(non_greedy.sum(), 1.0)
    metrics = {
        "loss": loss,
        "q_taken": jnp.mean(q_tot),
        "target_mean": jnp.mean(targets),
        "alpha_mean": jax.lax.stop_gradient(alpha_mean),
        "greedy_frac": 1.0 - jnp.mean(non_greedy),
    }
    return loss, metrics


def shapley_probability(coalition_size: int, num_agents: int) -> float:
    """`Pr(C_i)` of one coalition of `coalition_size` agents: `|C|! (A - |C| - 1)! / A!`."""
    s, A = int(coalition_size), int(num_agents)
    if not 0 <= s < A:
        raise ValueError(f"coalition_size must be in [0, {A - 1}], got {coalition_size}")
    return math.factorial(s) * math.factorial(A - s - 1) / math.factorial(A)


#: the metric names `shaq_loss` returns
METRICS = ("loss", "q_taken", "target_mean", "alpha_mean", "greedy_frac")

__all__ = [
    "METRICS",
    "coalition_mean",
    "sample_coalitions",
    "shapley_probability",
    "shapley_weights",
    "shaq_loss",
]
