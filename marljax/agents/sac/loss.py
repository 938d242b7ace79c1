"""The losses of HASAC / MASAC as pure functions on arrays.

Every function takes its hyperparameters as arguments and reads no config, so a paper can import
one and use it with its own networks: the n-step windows of a rollout (`n_step_transitions`), the
soft TD target and the twin critic loss, the per-agent actor losses (exact expectation over a
discrete agent's own actions, reparameterised for a tanh-Gaussian), and the temperature loss.
`B` is the batch, `A` the agents, `N` a discrete agent's actions.

One HASAC step in a paper's own code (agent `i` updated after the agents before it in the order):

    from marljax.agents import sac

    y = sac.soft_td_target(r, discount, q_next_min, logp_next, alpha)          # [B]
    critic_loss = sac.twin_critic_loss(q_twin, y, "huber", huber_delta=10.0)   # q_twin [2, B]
    # agent i: the critic's values of every own action with the others' actions fixed
    loss_i, logp_i = sac.discrete_actor_loss(logits_i, mask_i, q_i, alpha[i])  # q_i [B, N]
    alpha_loss = sac.temperature_loss(log_alpha, logp_mean, target_entropy)     # [A]

References: Haarnoja et al. 2018, "Soft Actor-Critic" (ICML) and 2018b, "Soft Actor-Critic
Algorithms and Applications"; Christodoulou 2019, "Soft Actor-Critic for Discrete Action
Settings"; Fujimoto et al. 2018 (TD3, clipped double Q); Liu et al. 2024, "Maximum Entropy
Heterogeneous-Agent Reinforcement Learning" (ICLR, HASAC).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

Array = jax.Array

CRITIC_LOSSES = ("huber", "mse")


def n_step_transitions(
    r_t: Array, terminated_t: Array, done_t: Array, gamma: Array, n: int
) -> tuple[Array, Array, Array]:
    """n-step return sums and bootstrap indices inside one rollout.

    For each step `t` the window covers steps `t .. t + k - 1` with `k <= n`, cut after the first
    episode end and at the end of the rollout:

        R_t = sum_{m < k} gamma^m r_{t+m},   discount_t = gamma^k (1 - terminated_{t+k-1}),

    and the target is `R_t + discount_t * V(next observation of step t + k - 1)`.

    Args:
      r_t: `[T, E]` rewards.
      terminated_t: `[T, E]` bool, the step ended its episode in a terminal state.
      done_t: `[T, E]` bool, the step ended its episode (terminated or truncated).
      gamma: `[]` discount.
      n: the window length (static, >= 1).

    Returns:
      `(R [T, E], discount [T, E], bootstrap step index [T, E] int32)`.
    """
    chex_shape = r_t.shape
    if terminated_t.shape != chex_shape or done_t.shape != chex_shape or r_t.ndim != 2:
        raise ValueError(
            f"n_step_transitions needs [T, E] arrays of one shape, got {r_t.shape}, "
            f"{terminated_t.shape}, {done_t.shape}"
        )
    T, E = r_t.shape
    t = jnp.arange(T)[:, None]
    e = jnp.arange(E)[None, :]
    ret = jnp.zeros_like(r_t)
    count = jnp.zeros((T, E), jnp.float32)
    boot = jnp.broadcast_to(t, (T, E)).astype(jnp.int32)
    alive = jnp.ones((T, E), bool)
    for k in range(n):
        j = t + k
        valid = alive & (j < T)
        jc = jnp.minimum(j, T - 1)
        ret = ret + jnp.where(valid, gamma**k * r_t[jc, e], 0.0)
        boot = jnp.where(valid, jc, boot).astype(jnp.int32)
        count = count + valid
        alive = valid & ~done_t[jc, e]
    discount = gamma**count * (1.0 - terminated_t[boot, e].astype(jnp.float32))
    return ret, discount, boot


def soft_td_target(
    r_t: Array, discount_t: Array, q_tp1: Array, log_pi_tp1: Array, alpha: Array
) -> Array:
    """The soft TD target of a centralised critic (no gradient flows through it):

        y = r + discount * (min_j Q'_j(s', a') - sum_i alpha_i log pi_i(a'_i | o'_i)),

    with `a'` sampled from the current policies at the next observations.

    Args:
      r_t: `[B]` (n-step) rewards.
      discount_t: `[B]` bootstrap discounts (`gamma^k (1 - terminated)`).
      q_tp1: `[B]` the minimum of the target critics at `(s', a')`, in return units.
      log_pi_tp1: `[B, A]` log-probabilities of the agents' next actions.
      alpha: `[A]` the agents' temperatures.

    Returns:
      `[B]` targets.
    """
    if r_t.shape != discount_t.shape or q_tp1.shape != r_t.shape or r_t.ndim != 1:
        raise ValueError(
            f"r_t, discount_t, q_tp1 must be [B] of one shape, got {r_t.shape}, "
            f"{discount_t.shape}, {q_tp1.shape}"
        )
    if log_pi_tp1.shape[:1] != r_t.shape:
        raise ValueError(f"log_pi_tp1 must be [B, A], got {log_pi_tp1.shape}")
    v_tp1 = q_tp1 - jnp.sum(alpha * log_pi_tp1, axis=-1)
    return jax.lax.stop_gradient(r_t + discount_t * v_tp1)


def twin_critic_loss(
    q_t: Array, target_t: Array, kind: str = "mse", huber_delta: Array | float = 10.0
) -> Array:
    """The twin critics' regression loss, summed over the critics:

        L = sum_j mean_b l(Q_j(s_b, a_b) - y_b),   l = Huber(delta) or td^2 / 2.

    Args:
      q_t: `[2, B]` the twin critics' values of the stored joint actions.
      target_t: `[B]` targets (e.g. `soft_td_target`, possibly standardised).
      kind: "huber" or "mse" (static).
      huber_delta: the Huber threshold (traced).

    Returns:
      `[]` the loss.
    """
    if kind not in CRITIC_LOSSES:
        raise ValueError(f"critic loss must be one of {CRITIC_LOSSES}, got {kind!r}")
    if q_t.ndim != 2 or q_t.shape[1:] != target_t.shape:
        raise ValueError(f"q_t must be [J, B] and target_t [B], got {q_t.shape}, {target_t.shape}")
    td = q_t - target_t[None]
    per = optax.huber_loss(td, delta=huber_delta) if kind == "huber" else 0.5 * td**2
    return per.mean(-1).sum()


def discrete_actor_loss(
    logits: Array, mask: Array, q: Array, alpha: Array | float
) -> tuple[Array, Array]:
    """One agent's soft policy loss, the exact expectation over its own (legal) actions:

        L = mean_b sum_a pi(a | o_b) (alpha log pi(a | o_b) - Q(s_b, a, a_-i)).

    Args:
      logits: `[B, N]` the agent's logits, illegal actions already set to a large negative value.
      mask: `[B, N]` bool legal actions.
      q: `[B, N]` the critic's value of each own action, the other agents' actions fixed (no
        gradient needs to flow into the critic).
      alpha: the agent's temperature.

    Returns:
      `(loss [], mean log-probability [])`, i.e. minus the policy's mean entropy.

    Reference: Christodoulou 2019, "Soft Actor-Critic for Discrete Action Settings", eq. (10).
    """
    if logits.shape != mask.shape or q.shape != logits.shape:
        raise ValueError(
            f"logits, mask, q must be [B, N], got {logits.shape}, {mask.shape}, {q.shape}"
        )
    logp = jax.nn.log_softmax(logits)
    pi = jnp.exp(logp)
    plogp = jnp.where(mask, pi * logp, 0.0)
    loss = jnp.mean(jnp.sum(alpha * plogp - pi * q, axis=-1))
    return loss, jnp.mean(jnp.sum(plogp, axis=-1))


def gaussian_actor_loss(log_pi: Array, q: Array, alpha: Array | float) -> tuple[Array, Array]:
    """One agent's reparameterised soft policy loss (continuous actions):

        L = mean_b (alpha log pi(a_b | o_b) - Q(s_b, a_b, a_-i)),   a_b ~ pi(. | o_b)

    with the action sampled by the reparameterisation trick, so the gradient flows through
    `log_pi` and `q` into the policy.

    Args:
      log_pi: `[B]` log-probabilities of the sampled actions.
      q: `[B]` the critic's values with the agent's slot set to the sampled actions.
      alpha: the agent's temperature.

    Returns:
      `(loss [], mean log-probability [])`.

    Reference: Haarnoja et al. 2018, "Soft Actor-Critic", eq. (7) and (9).
    """
    if log_pi.shape != q.shape or log_pi.ndim != 1:
        raise ValueError(f"log_pi and q must be [B], got {log_pi.shape}, {q.shape}")
    return jnp.mean(alpha * log_pi - q), jnp.mean(log_pi)


def temperature_loss(log_alpha: Array, log_pi: Array, target_entropy: Array | float) -> Array:
    """The agents' temperature losses, summed (each agent's only depends on its own `alpha_i`):

        J = -sum_i log alpha_i * (mean log pi_i + H_target).

    Its gradient, `-(mean log pi_i + H_target)`, raises `alpha_i` while the policy's entropy
    `-mean log pi_i` is below the target and lowers it above.

    Args:
      log_alpha: `[A]` log temperatures.
      log_pi: `[A]` the agents' mean log-probabilities (minus their entropies; no gradient).
      target_entropy: the target entropy (`-dim(A)` continuous, `scale * log N` discrete).

    Returns:
      `[]` the loss.

    Reference: Haarnoja et al. 2018b, "Soft Actor-Critic Algorithms and Applications", eq. (18).
    """
    if log_alpha.shape != log_pi.shape:
        raise ValueError(f"log_alpha {log_alpha.shape} and log_pi {log_pi.shape} must match")
    return -jnp.sum(log_alpha * jax.lax.stop_gradient(log_pi + target_entropy))


__all__ = [
    "discrete_actor_loss",
    "gaussian_actor_loss",
    "n_step_transitions",
    "soft_td_target",
    "temperature_loss",
    "twin_critic_loss",
]
