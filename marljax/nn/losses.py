"""Return estimators and policy/value losses as pure, shape-checked functions.

These are the functions papers import. Each one is a pure function of arrays, in the style of
rlax (`rlax/_src/multistep.py`): hyperparameters are arguments (and may be traced arrays), nothing
reads a config, and shapes are checked on entry with chex.

Conventions shared by every estimator:

* Time is axis 0. Any number of trailing batch axes may follow (e.g. `[T, E, A]`); all sequence
  arguments of one call must have the *same* shape (broadcast `[T, E]` termination flags to
  `[T, E, A]` yourself, e.g. with `jnp.broadcast_to(x[..., None], r_t.shape)`).
* Termination enters as a discount array, `discount_t = gamma * (1 - terminated_t)`, so gamma is
  never a separate argument. Time-limit truncation does *not* zero the discount: the estimators
  that need to stop at truncations (`gae`) take a separate `done_t` flag.
* Shape errors raise `AssertionError` (chex's convention), at trace time under `jit`.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
from flax import struct

Array = jax.Array
ArrayLike = jax.typing.ArrayLike

__all__ = [
    "RunningMeanStd",
    "discounted_returns",
    "gae",
    "lambda_returns",
    "masked_mean",
    "n_step_returns",
    "normalize",
    "ppo_clip_loss",
    "running_mean_std_init",
    "running_mean_std_update",
    "standardize",
    "unstandardize",
    "value_loss",
]


# ----------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------


def _assert_time_major(*arrays: Array) -> None:
    """Checks that every array has a leading time axis and that all shapes agree."""
    for x in arrays:
        if jnp.ndim(x) < 1:
            raise AssertionError(
                f"expected arrays with a leading time axis [T, ...], got shape {jnp.shape(x)}"
            )
    chex.assert_equal_shape(list(arrays))


def _assert_mask(x: Array, mask: Array | None) -> None:
    if mask is not None:
        chex.assert_equal_shape([x, mask])


def _as_weights(mask: Array, dtype: jnp.dtype) -> Array:
    return jnp.asarray(mask).astype(dtype)


def masked_mean(x: ArrayLike, mask: ArrayLike | None = None, axis_name: str | None = None) -> Array:
    """Mean of `x` over the valid entries of `mask`.

    mean = sum(mask * x) / sum(mask), with `mask` boolean (valid = True) or float (weights).
    Entries of `x` where `mask == 0` never enter the result, even if they hold `inf`. Returns 0
    when no entry is valid (rather than NaN).

    Args:
      x: `[...]` values.
      mask: optional `[...]` (same shape as `x`) bool or float mask; `None` means a plain mean.
      axis_name: a mapped axis (`shard_map`, `vmap`) whose shards together hold the batch: the
        sums are taken over all of them (`psum`), so every shard gets the mean of the whole.

    Returns:
      `[]` the (masked) mean.
    """
    x = jnp.asarray(x)
    if mask is None:
        mean = jnp.mean(x)
        return mean if axis_name is None else jax.lax.pmean(mean, axis_name)
    _assert_mask(x, mask)
    w = _as_weights(mask, x.dtype)
    total = jnp.sum(jnp.where(w != 0, x * w, 0.0))
    count = jnp.sum(w)
    if axis_name is not None:
        total, count = jax.lax.psum((total, count), axis_name)
    return jnp.where(count > 0, total / jnp.where(count > 0, count, 1.0), 0.0)


def normalize(
    x: ArrayLike, mask: ArrayLike | None = None, eps: float = 1e-8, axis_name: str | None = None
) -> Array:
    """Standardises `x` to zero mean and unit standard deviation.

    x_normalized = (x - mean(x)) / (std(x) + eps), with the (population) mean and std taken over
    all entries, or over the valid entries of `mask` only. Every entry is transformed with those
    statistics, masked ones included (their values are meaningless but finite if `x` is).
    Typically applied to PPO advantages over a whole minibatch.

    Args:
      x: `[...]` values.
      mask: optional `[...]` (same shape as `x`) bool or float mask of the entries whose
        statistics are used.
      eps: added to the standard deviation; may be a traced scalar.
      axis_name: a mapped axis whose shards together hold the batch (see `masked_mean`): the
        statistics are those of the whole batch.

    Returns:
      `[...]` the normalised array (same shape as `x`).
    """
    x = jnp.asarray(x)
    _assert_mask(x, mask)
    if axis_name is None:
        mean = masked_mean(x, mask)
        centred = x - mean
        std = jnp.sqrt(masked_mean(jnp.square(centred), mask))
        return centred / (std + eps)
    # Shards: one all-reduce of (count, sum, sum of squares) instead of two passes.
    w = jnp.ones_like(x) if mask is None else _as_weights(mask, x.dtype)
    xv = jnp.where(w != 0, x, 0.0)
    count, total, sq = jax.lax.psum(
        jnp.stack([jnp.sum(w), jnp.sum(w * xv), jnp.sum(w * jnp.square(xv))]), axis_name
    )
    count = jnp.where(count > 0, count, 1.0)
    mean = total / count
    std = jnp.sqrt(jnp.maximum(sq / count - jnp.square(mean), 0.0))
    return (x - mean) / (std + eps)


# ----------------------------------------------------------------------------------------------
# Return estimators
# ----------------------------------------------------------------------------------------------


def gae(
    r_t: Array,
    v_t: Array,
    v_next_t: Array,
    discount_t: Array,
    done_t: Array,
    lambda_: ArrayLike,
) -> tuple[Array, Array]:
    """Generalized advantage estimation that bootstraps through truncation, not termination.

    With `delta_t = r_t + discount_t * v_next_t - v_t`:

        A_t = delta_t + lambda_ * discount_t * (1 - done_t) * A_{t+1},    A_T = 0,
        returns_t = A_t + v_t.

    `discount_t = gamma * (1 - terminated_t)` removes the bootstrap at terminal steps, while
    `done_t = terminated_t OR truncated_t` cuts the recursion at every episode boundary. At a
    truncation `discount_t = gamma`, so the step still bootstraps on `v_next_t`, the value of the
    episode's *final* observation (not the first observation of the next episode). The last step
    of the rollout bootstraps on `v_next_t[T-1]` like any other step.

    No gradient is stopped here: compute advantages outside the loss (or wrap the result in
    `jax.lax.stop_gradient`) when the values come from a differentiated network.

    Reference: Schulman et al., "High-Dimensional Continuous Control Using Generalized Advantage
    Estimation", ICLR 2016 (https://arxiv.org/abs/1506.02438).

    Args:
      r_t: `[T, ...]` rewards of the transitions s_t -> s_{t+1}.
      v_t: `[T, ...]` V(s_t).
      v_next_t: `[T, ...]` V(s_{t+1}), the value of the observation returned by step t (the final
        observation at an episode end).
      discount_t: `[T, ...]` gamma * (1 - terminated_t).
      done_t: `[T, ...]` bool or float, terminated_t OR truncated_t.
      lambda_: the GAE lambda; a Python float or a (traced) array broadcastable to `[T, ...]`.

    Returns:
      A tuple `(advantages, returns)`, each `[T, ...]`; `returns = advantages + v_t` are the value
      targets.
    """
    _assert_time_major(r_t, v_t, v_next_t, discount_t, done_t)
    chex.assert_type([r_t, v_t, v_next_t, discount_t], float)
    dtype = r_t.dtype
    lambda_ = jnp.broadcast_to(jnp.asarray(lambda_, dtype=dtype), r_t.shape)
    not_done = 1.0 - jnp.asarray(done_t).astype(dtype)

    delta_t = r_t + discount_t * v_next_t - v_t
    # Gamma comes in through discount_t; not_done cuts the sum at truncations as well.
    decay_t = lambda_ * discount_t * not_done

    def _step(adv_tp1: Array, xs: tuple[Array, Array]) -> tuple[Array, Array]:
        delta, decay = xs
        adv = delta + decay * adv_tp1
        return adv, adv

    _, advantages = jax.lax.scan(
        _step, jnp.zeros(r_t.shape[1:], dtype), (delta_t, decay_t), reverse=True
    )
    return advantages, advantages + v_t


def lambda_returns(
    r_t: Array,
    discount_t: Array,
    v_t: Array,
    lambda_: ArrayLike,
    stop_target_gradients: bool = True,
    done_t: Array | None = None,
) -> Array:
    """TD(lambda) returns (lambda-returns), in rlax's convention.

        G_t = r_t + discount_t * ((1 - lambda_t) * v_t + lambda_t * G_{t+1}),    G_T := v_{T-1}.

    Here `v_t` is the bootstrap value of the state *after* the transition at t, i.e. V(s_{t+1}),
    so the last step bootstraps fully on `v_{T-1}`. `lambda_ = 1` gives the discounted return
    bootstrapped on `v_{T-1}`; `lambda_ = 0` gives the one-step target `r_t + discount_t * v_t`.

    Reference: Sutton & Barto, "Reinforcement Learning: An Introduction", 2nd ed. 2018, ch. 12.

    Args:
      r_t: `[T, ...]` rewards.
      discount_t: `[T, ...]` gamma * (1 - terminated_t).
      v_t: `[T, ...]` bootstrap values V(s_{t+1}).
      lambda_: scalar or array broadcastable to `[T, ...]` (may be traced).
      stop_target_gradients: whether to wrap the targets in `jax.lax.stop_gradient` (static).
      done_t: optional `[T, ...]` bool, terminated OR truncated. Where true, `lambda_t` is set to
        0, so the return stops at the episode boundary and bootstraps on `v_t`, the value of the
        episode's final observation (zero weight at termination through `discount_t`). Needed
        when a sequence holds several episodes (replayed streams); this is PyMARL2's TD(lambda)
        recursion with its padding mask replaced by an explicit cut.

    Returns:
      `[T, ...]` the lambda-returns G_t.
    """
    _assert_time_major(r_t, discount_t, v_t)
    chex.assert_type([r_t, discount_t, v_t], float)
    lambda_ = jnp.broadcast_to(jnp.asarray(lambda_, dtype=r_t.dtype), r_t.shape)
    if done_t is not None:
        _assert_time_major(r_t, done_t)
        lambda_ = jnp.where(jnp.asarray(done_t, bool), 0.0, lambda_).astype(r_t.dtype)

    def _step(g_tp1: Array, xs: tuple[Array, Array, Array, Array]) -> tuple[Array, Array]:
        r, discount, v, lam = xs
        g = r + discount * ((1.0 - lam) * v + lam * g_tp1)
        return g, g

    _, returns = jax.lax.scan(_step, v_t[-1], (r_t, discount_t, v_t, lambda_), reverse=True)
    if stop_target_gradients:
        returns = jax.lax.stop_gradient(returns)
    return returns


def n_step_returns(
    r_t: Array,
    discount_t: Array,
    v_t: Array,
    n: int,
    stop_target_gradients: bool = True,
    done_t: Array | None = None,
) -> Array:
    """n-step bootstrapped returns, truncated at the end of the sequence (rlax semantics).

        G_t = sum_{k=0}^{m-1} (prod_{j<k} discount_{t+j}) r_{t+k}
              + (prod_{j<m} discount_{t+j}) v_{t+m-1},          m = min(n, T - t).

    `v_t` is the bootstrap value V(s_{t+1}) as in `lambda_returns`, so the n-step target from t
    bootstraps on `v_{t+n-1}`; near the end of the sequence fewer steps are available and the
    target bootstraps on `v_{T-1}`. A zero discount (termination) stops both the rewards and the
    bootstrap after it. `n = 1` is the one-step TD target `r_t + discount_t * v_t`.

    Reference: Sutton & Barto, "Reinforcement Learning: An Introduction", 2nd ed. 2018, ch. 7.

    Args:
      r_t: `[T, ...]` rewards.
      discount_t: `[T, ...]` gamma * (1 - terminated_t).
      v_t: `[T, ...]` bootstrap values V(s_{t+1}).
      n: number of steps, a static Python int >= 1.
      stop_target_gradients: whether to wrap the targets in `jax.lax.stop_gradient` (static).
      done_t: optional `[T, ...]` bool, terminated OR truncated. Where true at `t + k` (k < n), the
        target stops there and bootstraps on `v_{t+k}` (the final observation's value), instead
        of summing rewards of the next episode.

    Returns:
      `[T, ...]` the n-step returns G_t.
    """
    _assert_time_major(r_t, discount_t, v_t)
    chex.assert_type([r_t, discount_t, v_t], float)
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a Python int >= 1, got {n!r}")
    seq_len = r_t.shape[0]
    pad = n - 1
    batch_shape = r_t.shape[1:]

    def _pad(x: Array, value: Array) -> Array:
        return jnp.concatenate([x, jnp.broadcast_to(value, (pad, *batch_shape)).astype(x.dtype)])

    # Past the end of the sequence: zero reward, unit discount, value v_{T-1}, so every target
    # that runs off the end bootstraps on v_{T-1}.
    v_last = v_t[-1]
    r_pad = _pad(r_t, jnp.zeros((), r_t.dtype))
    discount_pad = _pad(discount_t, jnp.ones((), discount_t.dtype))
    v_pad = _pad(v_t, v_last)

    returns = v_pad[n - 1 : n - 1 + seq_len]
    if done_t is not None:
        _assert_time_major(r_t, done_t)
        done_pad = _pad(jnp.asarray(done_t, bool), jnp.zeros((), bool))
    for i in reversed(range(n)):
        if done_t is not None and i < n - 1:
            # An episode ended after step t+i: bootstrap on its final value, drop what follows.
            returns = jnp.where(done_pad[i : i + seq_len], v_pad[i : i + seq_len], returns)
        returns = r_pad[i : i + seq_len] + discount_pad[i : i + seq_len] * returns
    if stop_target_gradients:
        returns = jax.lax.stop_gradient(returns)
    return returns


def discounted_returns(r_t: Array, discount_t: Array, v_T: ArrayLike = 0.0) -> Array:
    """Monte-Carlo discounted returns, bootstrapped on `v_T` after the last step.

        G_t = r_t + discount_t * G_{t+1},    G_T := v_T.

    Args:
      r_t: `[T, ...]` rewards.
      discount_t: `[T, ...]` gamma * (1 - terminated_t).
      v_T: the bootstrap value after the final step: a scalar or a `[...]` array (the trailing
        shape of `r_t`); 0 by default.

    Returns:
      `[T, ...]` the discounted returns G_t.
    """
    _assert_time_major(r_t, discount_t)
    chex.assert_type([r_t, discount_t], float)
    g_T = jnp.broadcast_to(jnp.asarray(v_T, dtype=r_t.dtype), r_t.shape[1:])

    def _step(g_tp1: Array, xs: tuple[Array, Array]) -> tuple[Array, Array]:
        r, discount = xs
        g = r + discount * g_tp1
        return g, g

    _, returns = jax.lax.scan(_step, g_T, (r_t, discount_t), reverse=True)
    return returns


# ----------------------------------------------------------------------------------------------
# Losses
# ----------------------------------------------------------------------------------------------


def ppo_clip_loss(
    log_prob: Array,
    old_log_prob: Array,
    advantages: Array,
    clip_eps: ArrayLike,
    mask: Array | None = None,
) -> tuple[Array, dict[str, Array]]:
    """PPO's clipped surrogate policy loss.

        ratio = exp(log_prob - old_log_prob),
        loss = -mean(min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A)).

    The gradient is zero exactly where the clip is active (ratio > 1 + eps with A > 0, or
    ratio < 1 - eps with A < 0). `old_log_prob` and `advantages` are treated as constants
    (`stop_gradient`); normalise the advantages beforehand if desired (`normalize`).

    Reference: Schulman et al., "Proximal Policy Optimization Algorithms", 2017
    (https://arxiv.org/abs/1707.06347).

    Args:
      log_prob: `[...]` log pi(a|s) under the current parameters.
      old_log_prob: `[...]` log pi_old(a|s) recorded when acting.
      advantages: `[...]` advantage estimates.
      clip_eps: clipping range epsilon (may be traced).
      mask: optional `[...]` bool or float mask; the means run over valid entries only.

    Returns:
      A tuple `(loss, info)`: `loss` is a scalar; `info` holds (gradient-stopped) scalars
      `approx_kl`, the mean of `(ratio - 1) - log(ratio)` (the low-variance, non-negative
      estimator of KL(pi_old || pi), http://joschu.net/blog/kl-approx.html), and
      `clip_fraction`, the fraction of valid entries with `|ratio - 1| > clip_eps`.
    """
    chex.assert_equal_shape([log_prob, old_log_prob, advantages])
    _assert_mask(log_prob, mask)
    chex.assert_type([log_prob, old_log_prob, advantages], float)
    old_log_prob = jax.lax.stop_gradient(old_log_prob)
    advantages = jax.lax.stop_gradient(advantages)

    log_ratio = log_prob - old_log_prob
    ratio = jnp.exp(log_ratio)
    clipped_ratio = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
    surrogate = jnp.minimum(ratio * advantages, clipped_ratio * advantages)
    loss = -masked_mean(surrogate, mask)

    approx_kl = masked_mean((ratio - 1.0) - log_ratio, mask)
    clipped = (jnp.abs(ratio - 1.0) > clip_eps).astype(log_prob.dtype)
    clip_fraction = masked_mean(clipped, mask)
    info = {
        "approx_kl": jax.lax.stop_gradient(approx_kl),
        "clip_fraction": jax.lax.stop_gradient(clip_fraction),
    }
    return loss, info


def value_loss(
    values: Array,
    old_values: Array,
    returns: Array,
    clip_eps: ArrayLike | None = None,
    mask: Array | None = None,
) -> Array:
    """Squared-error value loss, optionally PPO-clipped around the old values.

    Unclipped (`clip_eps is None`):

        loss = 0.5 * mean((v - R)^2).

    Clipped:

        v_clip = old_v + clip(v - old_v, -eps, eps),
        loss = 0.5 * mean(max((v - R)^2, (v_clip - R)^2)).

    `old_values` and `returns` are treated as constants (`stop_gradient`).

    References: Yu et al., "The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games",
    NeurIPS 2022 Datasets and Benchmarks (https://arxiv.org/abs/2103.01955); openai/baselines
    `ppo2`.

    Args:
      values: `[...]` V(s) under the current parameters.
      old_values: `[...]` V(s) recorded when acting (ignored when `clip_eps is None`).
      returns: `[...]` value targets R.
      clip_eps: `None` (static choice: no clipping) or the clipping range (may be traced).
      mask: optional `[...]` bool or float mask; the mean runs over valid entries only.

    Returns:
      `[]` the loss.
    """
    chex.assert_equal_shape([values, old_values, returns])
    _assert_mask(values, mask)
    chex.assert_type([values, old_values, returns], float)
    old_values = jax.lax.stop_gradient(old_values)
    returns = jax.lax.stop_gradient(returns)

    sq_error = jnp.square(values - returns)
    if clip_eps is not None:
        v_clipped = old_values + jnp.clip(values - old_values, -clip_eps, clip_eps)
        sq_error = jnp.maximum(sq_error, jnp.square(v_clipped - returns))
    return 0.5 * masked_mean(sq_error, mask)


# ----------------------------------------------------------------------------------------------
# Running mean / std (MAPPO's ValueNorm)
# ----------------------------------------------------------------------------------------------


@struct.dataclass
class RunningMeanStd:
    """Running statistics of a stream of arrays, for value normalisation.

    Attributes:
      mean: `[*shape]` running mean.
      var: `[*shape]` running (population) variance.
      count: `[]` float number of entries seen so far.
    """

    mean: Array
    var: Array
    count: Array


def running_mean_std_init(
    shape: tuple[int, ...] = (), dtype: jnp.dtype = jnp.float32
) -> RunningMeanStd:
    """Empty running statistics: mean 0, variance 1 (so `standardize` is the identity), count 0.

    Args:
      shape: the shape of one entry; statistics are kept per element of this shape (`()` for
        scalar values).
      dtype: floating dtype of the statistics.

    Returns:
      The initial `RunningMeanStd`.
    """
    return RunningMeanStd(
        mean=jnp.zeros(shape, dtype), var=jnp.ones(shape, dtype), count=jnp.zeros((), dtype)
    )


def running_mean_std_update(
    state: RunningMeanStd,
    x: ArrayLike,
    mask: ArrayLike | None = None,
    axis_name: str | None = None,
) -> RunningMeanStd:
    """Merges a batch into the running statistics with the parallel (Chan et al.) update.

    With batch statistics (m_b, v_b, n_b) over all leading entries of `x`:

        n = n_a + n_b,   delta = m_b - m_a,
        mean = m_a + delta * n_b / n,
        var = (v_a * n_a + v_b * n_b + delta^2 * n_a * n_b / n) / n.

    After any sequence of updates, `mean`/`var` equal the population mean/variance of the
    concatenation of all batches. A batch with no valid entry leaves the state unchanged.

    Reference: Chan, Golub & LeVeque, "Updating Formulae and a Pairwise Algorithm for Computing
    Sample Variances", 1979; used as ValueNorm in Yu et al., 2022 (MAPPO).

    Args:
      state: the current statistics, with `mean.shape == shape`.
      x: `[..., *shape]` a batch; every leading entry is one sample.
      mask: optional `[...]` bool or float mask over the leading (sample) axes of `x`.
      axis_name: a mapped axis whose shards together hold the batch: the batch statistics are
        those of the whole batch (`psum` of counts and sums), so every shard's state stays the
        same.

    Returns:
      The updated `RunningMeanStd`.
    """
    x = jnp.asarray(x, dtype=state.mean.dtype)
    entry_ndim = state.mean.ndim
    if x.ndim < entry_ndim or x.shape[x.ndim - entry_ndim :] != state.mean.shape:
        raise AssertionError(
            f"x of shape {x.shape} does not end with the statistics' shape {state.mean.shape}"
        )
    sample_shape = x.shape[: x.ndim - entry_ndim]
    axes = tuple(range(len(sample_shape)))
    if mask is None:
        w = jnp.ones(sample_shape, x.dtype)
    else:
        chex.assert_shape(mask, sample_shape)
        w = _as_weights(mask, x.dtype)
    w = w.reshape(sample_shape + (1,) * entry_ndim)

    psum = (lambda v: v) if axis_name is None else (lambda v: jax.lax.psum(v, axis_name))
    batch_count = psum(jnp.sum(w))
    safe_batch_count = jnp.where(batch_count > 0, batch_count, 1.0)
    batch_mean = psum(jnp.sum(jnp.where(w != 0, w * x, 0.0), axis=axes)) / safe_batch_count
    batch_var = (
        psum(jnp.sum(jnp.where(w != 0, w * jnp.square(x - batch_mean), 0.0), axis=axes))
        / safe_batch_count
    )

    total = state.count + batch_count
    safe_total = jnp.where(total > 0, total, 1.0)
    delta = batch_mean - state.mean
    new_mean = state.mean + delta * batch_count / safe_total
    m2 = (
        state.var * state.count
        + batch_var * batch_count
        + jnp.square(delta) * state.count * batch_count / safe_total
    )
    new_var = m2 / safe_total

    empty = batch_count <= 0
    return RunningMeanStd(
        mean=jnp.where(empty, state.mean, new_mean),
        var=jnp.where(empty, state.var, new_var),
        count=jnp.where(empty, state.count, total),
    )


def standardize(state: RunningMeanStd, x: ArrayLike, eps: float = 1e-8) -> Array:
    """Maps raw values to normalised ones: (x - mean) / sqrt(var + eps).

    Args:
      state: running statistics of shape `[*shape]`.
      x: `[..., *shape]` raw values (e.g. value targets).
      eps: added to the variance.

    Returns:
      `[..., *shape]` normalised values.
    """
    return (jnp.asarray(x) - state.mean) / jnp.sqrt(state.var + eps)


def unstandardize(state: RunningMeanStd, x: ArrayLike, eps: float = 1e-8) -> Array:
    """Inverse of `standardize`: x * sqrt(var + eps) + mean.

    Args:
      state: running statistics of shape `[*shape]`.
      x: `[..., *shape]` normalised values (e.g. critic outputs).
      eps: added to the variance (use the same value as in `standardize`).

    Returns:
      `[..., *shape]` values on the raw scale.
    """
    return jnp.asarray(x) * jnp.sqrt(state.var + eps) + state.mean
