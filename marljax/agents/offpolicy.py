"""The off-policy update skeleton, written once for every replay-based learner (Q-learning, SAC).

One update of an off-policy learner, whatever its losses:

1. store the new rollout in the replay buffer (`store`);
2. gate learning with a `lax.cond`: learn only once the buffer holds a batch and `learning_starts`
   environment steps were collected (`learn_from_replay`);
3. take `num_steps` gradient steps, each on a batch sampled uniformly from the buffer, as a
   `lax.scan` (`learn_from_replay`'s `gradient_step` does one step of the learner's losses);
4. move the target network: a hard copy every `period` gradient steps or Polyak averaging with
   rate `tau` after every step (`target_update`).

    replay_state = offpolicy.store(replay, state.replay, items)
    carry, metrics = offpolicy.learn_from_replay(
        replay, replay_state, carry, key, env_steps=env_steps, learning_starts=learning_starts,
        num_steps=4, gradient_step=step, zero_metrics=zeros)

Data-parallel learners (the `"envs"` layout of `marljax.training.execute`) keep a buffer of their own
environments and sample their share of every batch: the engine divides the sizes a config declares
`param(..., split=True)` (`marljax.core.config.split_config`) and rebuilds the agent with them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from marljax.nn.replay import Replay, ReplayState

Array = jax.Array


def store(replay: Replay, replay_state: ReplayState, items: Any) -> ReplayState:
    """Add `items` (leaves `[K, ...]`) to the buffer."""
    return replay.add(replay_state, items)


def ready(
    replay: Replay, replay_state: ReplayState, env_steps: Array, learning_starts: int
) -> Array:
    """`[]` bool: the buffer holds one batch and `learning_starts` env steps were collected."""
    return jnp.logical_and(replay.can_sample(replay_state), env_steps >= learning_starts)


def _same_key(key: Array) -> tuple[Array, Array]:
    return key, key


def learn_from_replay(
    replay: Replay,
    replay_state: ReplayState,
    carry: Any,
    key: Array,
    *,
    env_steps: Array,
    learning_starts: int,
    num_steps: int,
    gradient_step: Callable[[Any, Any, Array], tuple[Any, dict]],
    zero_metrics: Callable[[], dict[str, Array]],
    split_key: Callable[[Array], tuple[Array, Any]] = _same_key,
    summarize: Callable[[dict], dict] | None = None,
) -> tuple[Any, dict]:
    """`num_steps` gradient steps on batches sampled from the buffer, once `ready`; else a no-op.

    Args:
      replay: the buffer's functions.
      replay_state: the buffer (not changed by learning; closed over, not carried by the scan).
      carry: what the gradient steps change (parameters, optimiser and target states, counters).
      key: the update's key, split into one key per gradient step.
      env_steps: `[]` environment steps collected so far (this rollout's included).
      learning_starts: learn only from this many environment steps on (and once the buffer holds
        a batch); the gate is a `lax.cond`, so skipping costs nothing.
      num_steps: gradient steps (static).
      gradient_step: `gradient_step(carry, batch, key) -> (carry, metrics)`, one step of the
        learner on a sampled batch (leaves `[B, ...]`).
      zero_metrics: `() -> metrics` returned when not learning (zeros, not NaN, so that a
        non-finite guard fires only on real NaNs), the structure of `summarize`'s output.
      split_key: `split_key(step_key) -> (sample key, gradient_step's key)`; by default the step
        key does both.
      summarize: reduces the `[num_steps]`-stacked metrics (default: the mean of each).

    Returns:
      `(carry, metrics)`; `metrics` adds `learning` (1.0 where gradient steps were taken) and
      `buffer_size` (items in the buffer).
    """
    summarize = (lambda m: jax.tree.map(jnp.mean, m)) if summarize is None else summarize
    keys = jax.random.split(key, num_steps)
    is_ready = ready(replay, replay_state, env_steps, learning_starts)

    def body(c, k):
        key_sample, key_step = split_key(k)
        return gradient_step(c, replay.sample(replay_state, key_sample), key_step)

    def learn(c):
        c, metrics = jax.lax.scan(body, c, keys)
        return c, summarize(metrics)

    def skip(c):
        return c, zero_metrics()

    carry, metrics = jax.lax.cond(is_ready, learn, skip, carry)
    metrics["learning"] = is_ready.astype(jnp.float32)
    metrics["buffer_size"] = replay_state.size
    return carry, metrics


def target_update(
    online: Any,
    target: Any,
    grad_steps: Array,
    *,
    tau: Array | float | None = None,
    period: int | None = None,
) -> Any:
    """The target network after a gradient step: Polyak averaging (`tau`) or a periodic copy.

        Polyak: target <- tau * online + (1 - tau) * target;
        hard:   target <- online where grad_steps % period == 0.

    Args:
      online: the online parameters after the step.
      target: the target parameters.
      grad_steps: `[]` int32 gradient steps taken, this one included.
      tau: the Polyak rate (traced); exactly one of `tau` and `period` is given.
      period: gradient steps between hard copies (static).
    """
    if (tau is None) == (period is None):
        raise ValueError("target_update needs exactly one of tau (Polyak) and period (hard)")
    if tau is not None:
        return optax.incremental_update(online, target, tau)
    copy = grad_steps % period == 0
    return jax.tree.map(lambda p, t: jnp.where(copy, p, t), online, target)


__all__ = ["learn_from_replay", "ready", "store", "target_update"]
