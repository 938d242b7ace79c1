"""Value-based building blocks shared by every Q-learner, as pure functions on arrays.

Masked greedy actions, double-Q bootstrap values, the team reward of per-agent rewards, TD
targets (one-step, n-step, TD(lambda)) cut at episode ends, the mixed TD loss of IQL / VDN /
QMIX / FACMAC, and epsilon-greedy exploration with its linear schedule. Nothing here reads a
config: hyperparameters are arguments. IQL, VDN, QMIX, QTRAN, SHAQ, TransfQMIX, PQN-VDN, COMA
(its critic targets) and FACMAC use them from here.

A QMIX / VDN / IQL TD loss with double-Q targets, in a paper's own code:

    from marljax.nn.mixers import vdn_mix
    from marljax.nn.qvalues import double_q_values, mixed_td_loss

    q_tm1 = ...                    # [T, B, A, N] online Q of the observed steps
    chosen = jnp.take_along_axis(q_tm1, a_tm1[..., None], -1)[..., 0]         # [T, B, A]
    v_t = double_q_values(q_target_t, q_online_t, mask_t)                      # [T, B, A]
    loss, aux = mixed_td_loss(
        chosen, v_t, r_t, terminated_t, truncated_t, gamma=0.99,
        mix_tm1=vdn_mix, mix_t=vdn_mix,          # None, None: independent Q-learning
        target="lambda", td_lambda=0.6)

References: Tan 1993 (IQL); Sunehag et al. 2018 (VDN); Rashid et al. 2018 (QMIX); van Hasselt et
al. 2016 (double Q-learning); Hu et al. 2021 (PyMARL2, TD(lambda) targets for QMIX).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from marljax.nn import losses

Array = jax.Array

TARGETS = ("one_step", "n_step", "lambda")
TEAM_REWARDS = ("mean", "sum")


def masked_argmax(q: Array, mask: Array) -> Array:
    """`argmax` over the last axis among legal actions (`mask` true).

    Args:
      q: `[..., N]` values.
      mask: `[..., N]` bool legal actions.

    Returns:
      `[...]` int indices.
    """
    return jnp.argmax(jnp.where(mask, q, -jnp.inf), axis=-1)


def double_q_values(q_target_t: Array, q_online_t: Array | None, mask_t: Array) -> Array:
    """Bootstrap values of the next observations, with double-Q action selection:

        v_t = Q_target(o_t, argmax_{a legal} Q_online(o_t, a)).

    Args:
      q_target_t: `[..., N]` target-network values of the next observations.
      q_online_t: `[..., N]` online-network values of the same observations (no gradient flows
        through the selection); None: plain Q-learning, the target network selects too.
      mask_t: `[..., N]` bool legal next actions.

    Returns:
      `[...]` the selected actions' target values.

    Reference: van Hasselt, Guez & Silver 2016, "Deep Reinforcement Learning with Double
    Q-learning".
    """
    if q_target_t.shape != mask_t.shape:
        raise ValueError(f"q {q_target_t.shape} and mask {mask_t.shape} differ in shape")
    if q_online_t is None:
        a_t = masked_argmax(q_target_t, mask_t)
    else:
        a_t = masked_argmax(jax.lax.stop_gradient(q_online_t), mask_t)
    return jnp.take_along_axis(q_target_t, a_t[..., None], axis=-1)[..., 0]


def team_reward(r_t: Array, kind: str = "mean") -> Array:
    """The team reward `[...]` of per-agent rewards `r_t [..., A]`: their "mean" or "sum"."""
    if kind not in TEAM_REWARDS:
        raise ValueError(f"team_reward must be one of {TEAM_REWARDS}, got {kind!r}")
    return r_t.mean(-1) if kind == "mean" else r_t.sum(-1)


def td_targets(
    r_t: Array,
    discount_t: Array,
    v_t: Array,
    done_t: Array,
    *,
    target: str = "one_step",
    td_lambda: Array | float = 0.6,
    n_steps: int = 3,
) -> Array:
    """Return targets along the time axis, cut at episode ends (no gradient flows through them).

        one_step: G_t = r_t + discount_t * v_t;
        n_step:   `marljax.nn.losses.n_step_returns`;   lambda: `marljax.nn.losses.lambda_returns`.

    Args:
      r_t: `[T, ...]` rewards.
      discount_t: `[T, ...]` `gamma * (1 - terminated_t)`.
      v_t: `[T, ...]` values of the observations after each step.
      done_t: `[T, ...]` bool, an episode ended at the step (returns do not cross it).
      target: "one_step", "n_step" or "lambda" (static).
      td_lambda: lambda of TD(lambda) (traced).
      n_steps: n of the n-step return (static).

    Returns:
      `[T, ...]` targets.
    """
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    v_t = jax.lax.stop_gradient(v_t)
    if target == "lambda":
        return losses.lambda_returns(r_t, discount_t, v_t, td_lambda, done_t=done_t)
    if target == "n_step":
        return losses.n_step_returns(r_t, discount_t, v_t, n_steps, done_t=done_t)
    return jax.lax.stop_gradient(r_t + discount_t * v_t)


def mixed_td_loss(
    q_tm1: Array,
    v_t: Array,
    r_t: Array,
    terminated_t: Array,
    truncated_t: Array,
    gamma: Array | float,
    *,
    mix_tm1: Callable[[Array], Array] | None = None,
    mix_t: Callable[[Array], Array] | None = None,
    team_reward_kind: str = "mean",
    reward_scale: Array | float = 1.0,
    target: str = "one_step",
    td_lambda: Array | float = 0.6,
    n_steps: int = 3,
) -> tuple[Array, dict[str, Array]]:
    """The squared TD error of a mixed `Q_tot` (VDN, QMIX) or of each agent's Q (IQL).

    With mixers (`mix_tm1`, `mix_t`, e.g. the online and the target QMIX mixer at the step's and
    the next step's global state):

        Q_tot_t = mix_tm1(q_tm1),   V_tot_t = mix_t(v_t),   R_t = team(reward_scale * r_t),
        loss = mean_{t, b} (Q_tot_t - G_t)^2,

    with `G_t` the `td_targets` of `(R_t, gamma * (1 - terminated_t), V_tot_t)`, cut where an
    episode ended (terminated or truncated). Without mixers (IQL) the same holds per agent, on
    each agent's own reward and value. Truncation bootstraps (`v_t` is the value of the final
    observation there); termination does not.

    Args:
      q_tm1: `[T, B, A]` online Q of the taken actions.
      v_t: `[T, B, A]` the agents' target values of the next observations (e.g.
        `double_q_values`); no gradient flows through them.
      r_t: `[T, B, A]` per-agent rewards.
      terminated_t: `[T, B]` bool, the step ended its episode in a terminal state.
      truncated_t: `[T, B]` bool, the step hit the time limit.
      gamma: discount.
      mix_tm1: `[T, B, A] -> [T, B]`, the mixer of the predictions; None: no mixing (IQL).
      mix_t: `[T, B, A] -> [T, B]`, the (target) mixer of the bootstrap values; None with
        `mix_tm1` None.
      team_reward_kind: "mean" or "sum" of the agents' rewards (mixed losses only).
      reward_scale: multiplies the rewards.
      target: "one_step", "n_step" or "lambda" (see `td_targets`).
      td_lambda: lambda of the TD(lambda) target.
      n_steps: n of the n-step target.

    Returns:
      `(loss [], {"loss", "q_taken", "target_mean"})` (scalar diagnostics).

    Reference: Rashid et al. 2018, "QMIX: Monotonic Value Function Factorisation for Deep
    Multi-Agent Reinforcement Learning", eq. (2); Sunehag et al. 2018 (VDN).
    """
    if q_tm1.ndim != 3 or v_t.shape != q_tm1.shape or r_t.shape != q_tm1.shape:
        raise ValueError(
            f"q_tm1, v_t and r_t must be [T, B, A] of one shape, got {q_tm1.shape}, "
            f"{v_t.shape}, {r_t.shape}"
        )
    if terminated_t.shape != q_tm1.shape[:2] or truncated_t.shape != q_tm1.shape[:2]:
        raise ValueError(
            f"terminated_t {terminated_t.shape} and truncated_t {truncated_t.shape} must be "
            f"[T, B] = {q_tm1.shape[:2]}"
        )
    if (mix_tm1 is None) != (mix_t is None):
        raise ValueError("give both mixers (VDN, QMIX) or neither (IQL)")
    reward = r_t * reward_scale
    if mix_tm1 is None:
        pred, r = q_tm1, reward
        expand = lambda z: z[..., None]  # noqa: E731  flags [T, B] -> [T, B, 1]
    else:
        pred = mix_tm1(q_tm1)
        v_t = mix_t(v_t)
        r = team_reward(reward, team_reward_kind)
        expand = lambda z: z  # noqa: E731
    discount = jnp.broadcast_to(expand(gamma * (1.0 - terminated_t)), r.shape)
    done = jnp.broadcast_to(expand(jnp.logical_or(terminated_t, truncated_t)), r.shape)
    targets = td_targets(
        r, discount, v_t, done, target=target, td_lambda=td_lambda, n_steps=n_steps
    )
    td = pred - targets
    loss = jnp.mean(td**2)
    return loss, {"loss": loss, "q_taken": jnp.mean(q_tm1), "target_mean": jnp.mean(targets)}


def epsilon(hparams: Any, env_steps: Array) -> Array:
    """Linear epsilon schedule from `eps_start` to `eps_finish` over `eps_anneal_steps` steps.

    `hparams`: any hyperparameters with those three fields (`QHParams`, `PQNHParams`, ...).
    """
    frac = jnp.clip(env_steps / jnp.maximum(hparams.eps_anneal_steps, 1.0), 0.0, 1.0)
    return hparams.eps_start + frac * (hparams.eps_finish - hparams.eps_start)


def epsilon_greedy(key: Array, q: Array, mask: Array, eps: Array | None) -> Array:
    """Epsilon-greedy actions `[...]` int32 from `q [..., N]` over legal actions (`mask`).

    With probability `eps` an action uniform over the legal ones, else the masked argmax of
    `q`; `eps=None` (static) is the greedy policy.
    """
    best = masked_argmax(q, mask)
    if eps is None:
        return best.astype(jnp.int32)
    key_explore, key_random = jax.random.split(key)
    random = jax.random.categorical(key_random, jnp.where(mask, 0.0, -jnp.inf))
    explore = jax.random.uniform(key_explore, best.shape) < eps
    return jnp.where(explore, random, best).astype(jnp.int32)


__all__ = [
    "double_q_values",
    "epsilon",
    "epsilon_greedy",
    "masked_argmax",
    "mixed_td_loss",
    "td_targets",
    "team_reward",
]
