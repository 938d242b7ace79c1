"""The value-based learner's agent: module-level `init` / `act` / `update` over a `QParts`
record (the networks, the replay buffer, the loss), wired into an `Agent` by `make_q_learner`.

Acting is epsilon-greedy on the agents' Q; `update` stores the rollout as replay sequences and
takes gradient steps through the shared off-policy loop (`marljax.agents.offpolicy`). IQL, VDN
and QMIX use `loss_fn`; QTRAN, SHAQ and TransfQMIX pass their own networks and loss.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from marljax.agents import common, offpolicy
from marljax.agents.base import Agent, AgentParams, Observation, Trajectory
from marljax.agents.qlearning import loss as qloss
from marljax.agents.qlearning.config import QConfig, QHParams, QState
from marljax.agents.qlearning.networks import QNetworks, make_q_networks, next_q
from marljax.core.types import Environment, EnvParams
from marljax.nn.qvalues import epsilon, epsilon_greedy  # noqa: F401  (also exported here)
from marljax.nn.replay import Replay, make_replay

Array = jax.Array

#: the scalar metrics of `loss_fn` (and of `loss.mixed_td_loss`)
METRICS = ("loss", "q_taken", "target_mean")


class QParts(NamedTuple):
    """The static structure a value-based agent's functions close over (built by
    `make_q_learner`).

    Attributes:
      config: the static config (a `QConfig`).
      nets: the agent network and mixer (or another learner's critics) and how they are applied.
      replay: the replay buffer's pure functions (`marljax.nn.replay.make_replay`).
      loss: `loss(nets, params, target_params, batch, hparams[, key=]) -> (loss, metrics)`.
      metric_names: the scalar metrics `loss` returns.
      loss_uses_key: whether `loss` takes `key=` (a loss that samples).
    """

    config: QConfig
    nets: QNetworks
    replay: Replay
    loss: Callable[..., tuple[Array, dict]]
    metric_names: tuple[str, ...]
    loss_uses_key: bool
    #: an auxiliary loss term added to `loss` (`marljax.agents.common.ExtraLoss`)
    extra_loss: Any = None


def optimizer(config: QConfig, hp: QHParams, grad_steps: Array) -> optax.GradientTransformation:
    """Clipping, `config.optimizer` and the learning rate, decayed linearly to zero over
    `config.lr_decay_steps` gradient steps when set (`common.make_optimizer`)."""
    lr = hp.lr
    if config.lr_decay_steps:
        lr = lr * jnp.maximum(1.0 - grad_steps / config.lr_decay_steps, 0.0)
    return common.make_optimizer(
        lr, hp.max_grad_norm, kind=config.optimizer, eps=hp.opt_eps, rms_decay=hp.rmsprop_decay
    )


def example_item(nets: QNetworks) -> dict[str, Any]:
    """One stored sequence (leaves `[L, ...]`) and its start carry `[A, H]`."""
    L, A, N = nets.config.sequence_len, nets.num_agents, nets.num_actions
    obs_shape, obs_dtype = nets.obs_space.shape, nets.obs_space.dtype
    zeros = lambda *s, dtype=jnp.float32: jnp.zeros(s, dtype)  # noqa: E731
    return {
        "obs": zeros(L, A, *obs_shape, dtype=obs_dtype),
        "mask": zeros(L, A, N, dtype=bool),
        "state": zeros(L, *nets.state_space.shape),
        "reset": zeros(L, dtype=bool),
        "actions": zeros(L, A, dtype=jnp.int32),
        "reward": zeros(L, A),
        "terminated": zeros(L, dtype=bool),
        "truncated": zeros(L, dtype=bool),
        "next_obs": zeros(L, A, *obs_shape, dtype=obs_dtype),
        "next_state": zeros(L, *nets.state_space.shape),
        "next_mask": zeros(L, A, N, dtype=bool),
        "carry": zeros(A, nets.carry_size),
    }


def to_items(nets: QNetworks, traj: Trajectory) -> dict[str, Any]:
    """`[T, E, ...]` rollout -> `K * E` sequences `[L, ...]` (K = T / L), plus start carries."""
    T, E = traj.reward.shape[:2]
    L = nets.config.sequence_len
    K = T // L
    o = traj.observation
    steps = {
        "obs": o.obs,
        "mask": o.action_mask,
        "state": o.global_state,
        "reset": o.reset,
        "actions": traj.actions,
        "reward": traj.reward,
        "terminated": traj.terminated,
        "truncated": traj.truncated,
        "next_obs": traj.next_obs,
        "next_state": traj.next_global_state,
        "next_mask": traj.next_action_mask,
    }

    def chunk(x):  # [T, E, ...] -> [K * E, L, ...]
        x = x.reshape(K, L, E, *x.shape[2:])
        return jnp.swapaxes(x, 1, 2).reshape(K * E, L, *x.shape[3:])

    items = jax.tree.map(chunk, steps)
    carry = traj.policy_info["carry"]  # [T, E, A, H]
    items["carry"] = carry[::L].reshape(K * E, nets.num_agents, nets.carry_size)
    return items


def unroll(nets: QNetworks, params, target_params, batch):
    """Unroll the online and target agent networks over a replay batch (time-major outputs).

    Returns:
      `(b, q, q_next_target, q_next_online)`: `b` the batch without the carry, time-major
      (leaves `[L, B, ...]`); `q [L, B, A, N]` the online values of the observed steps;
      `q_next_target [L, B, A, N]` the target network's values of the observations after each
      step (no gradient); `q_next_online` the online ones (no gradient; None unless
      `config.double_q`).
    """
    config = nets.config
    b = jax.tree.map(
        lambda x: jnp.swapaxes(x, 0, 1), {k: v for k, v in batch.items() if k != "carry"}
    )
    x, x_next = nets.inputs(b["obs"]), nets.inputs(b["next_obs"])  # [L, B, A, D]
    carry0 = batch["carry"]  # [B, A, H]
    _, (q, hidden) = nets.apply_agents(params["agent"], carry0, x, b["reset"])
    target_agent = jax.lax.stop_gradient(target_params["agent"])
    q_next_online = None
    if config.recurrent:
        # Next-step Q read from the online and target unrolls (see `next_q`).
        _, (q_t, hidden_t) = nets.apply_agents(target_agent, carry0, x, b["reset"])
        q_next_t = next_q(nets.next_step_q, target_agent, q_t, hidden_t, x_next, b["truncated"])
        if config.double_q:
            q_next_online = next_q(
                nets.next_step_q, params["agent"], q, hidden, x_next, b["truncated"]
            )
    else:  # feed-forward: one pass over the next observations per network
        q_next_t = nets.next_step_q(target_agent, hidden, x_next)
        if config.double_q:
            q_next_online = nets.next_step_q(params["agent"], hidden, x_next)
    return b, q, q_next_t, q_next_online


def loss_fn(nets: QNetworks, params, target_params, batch, hp: QHParams):
    """The learner's loss on a replay batch: `unroll` the networks, then `loss.mixed_td_loss`."""
    config = nets.config
    b, q, q_next_t, q_next_online = unroll(nets, params, target_params, batch)
    chosen = jnp.take_along_axis(q, b["actions"][..., None], axis=-1)[..., 0]  # [L, B, A]
    v_next = qloss.double_q_values(q_next_t, q_next_online, b["next_mask"])  # [L, B, A]
    mix_tm1 = mix_t = None
    if config.mixer != "none":
        mix_tm1 = lambda q_a: nets.mix(params["mixer"], q_a, b["state"])  # noqa: E731
        mix_t = lambda q_a: nets.mix(target_params["mixer"], q_a, b["next_state"])  # noqa: E731
    return qloss.mixed_td_loss(
        chosen,
        v_next,
        b["reward"],
        b["terminated"],
        b["truncated"],
        hp.gamma,
        mix_tm1=mix_tm1,
        mix_t=mix_t,
        team_reward_kind=config.team_reward,
        reward_scale=hp.reward_scale,
        target=config.target,
        td_lambda=hp.td_lambda,
        n_steps=config.n_steps,
    )


def gradient_step(parts: QParts, hp: QHParams, axis_name: str | None, carry, batch, key):
    """One optimiser step of `parts.loss(nets, params, target_params, batch, hp)` on a replay
    batch, then the target-network update. With `parts.loss_uses_key` the loss also gets `key=`
    (a loss that samples, e.g. SHAQ's coalitions); otherwise it is deterministic given the
    batch."""
    nets, config = parts.nets, parts.config
    params, target_params, opt_state, grad_steps = carry
    extra = {"key": jax.random.fold_in(key, 1)} if parts.loss_uses_key else {}

    def total_loss(p):
        total, metrics = parts.loss(nets, p, target_params, batch, hp, **extra)
        return common.add_extra_loss(total, metrics, parts.extra_loss, p, batch, hp)

    (_, metrics), grads = jax.value_and_grad(total_loss, has_aux=True)(params)
    grads = common.data_mean(grads, axis_name)
    tx = optimizer(config, hp, grad_steps)
    updates, opt_state = tx.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    grad_steps = grad_steps + 1
    if config.target_update == "polyak":
        target_params = offpolicy.target_update(params, target_params, grad_steps, tau=hp.tau)
    else:
        target_params = offpolicy.target_update(
            params, target_params, grad_steps, period=config.target_update_interval
        )
    metrics["grad_norm"] = optax.global_norm(grads)
    return (params, target_params, opt_state, grad_steps), metrics


def init(parts: QParts, key: Array, hparams: QHParams) -> QState:
    """A fresh `QState`: the networks' parameters (the target a copy), an empty replay buffer."""
    params = parts.nets.init(key)
    return QState(
        params=params,
        target_params=params,
        opt_state=optimizer(parts.config, hparams, jnp.int32(0)).init(params),
        replay=parts.replay.init(example_item(parts.nets)),
        env_steps=jnp.int32(0),
        grad_steps=jnp.int32(0),
        num_updates=jnp.int32(0),
    )


def initial_carry(parts: QParts, num_envs: int) -> Array:
    """The agents' start carry `[E, A, H]` (zeros; `H = 1` when feed-forward)."""
    return jnp.zeros((num_envs, parts.nets.num_agents, parts.nets.carry_size), jnp.float32)


def act(parts: QParts, state: QState, carry, observation: Observation, key, hparams, greedy=False):
    """Epsilon-greedy actions `[E, A]` (the masked argmax of Q with `greedy=True`); `info` is
    `{"q": [E, A, N], "carry": [E, A, H]}`, the carry given here, stored for replay."""
    nets = parts.nets
    new_carry, (q, _) = nets.apply_agents(
        state.params["agent"],
        carry,
        nets.inputs(observation.obs)[None],
        observation.reset[None],
    )
    q = q[0]  # [E, A, N]
    eps = None if greedy else epsilon(hparams, state.env_steps)
    actions = epsilon_greedy(key, q, observation.action_mask, eps)
    if not parts.config.recurrent:
        new_carry = carry
    return actions, new_carry, {"q": q, "carry": carry}


def update(
    parts: QParts,
    state: QState,
    traj: Trajectory,
    hparams: QHParams,
    key: Array,
    axis_name: str | None = None,
):
    """Store the rollout, then `gradient_steps` TD steps on replay batches.

    `axis_name`: a mapped axis of data-parallel devices, each with a replay buffer of its own
    environments and its share of every batch; gradients are averaged over it and the
    environment-step counter (epsilon schedule, `learning_starts`) counts every device's steps.
    """
    config, replay = parts.config, parts.replay
    T, E = traj.reward.shape[:2]
    replay_state = offpolicy.store(replay, state.replay, to_items(parts.nets, traj))
    env_steps = state.env_steps + T * E * common.data_shards(axis_name)
    (params, target_params, opt_state, grad_steps), metrics = offpolicy.learn_from_replay(
        replay,
        replay_state,
        (state.params, state.target_params, state.opt_state, state.grad_steps),
        key,
        env_steps=env_steps,
        learning_starts=config.learning_starts,
        num_steps=config.gradient_steps,
        gradient_step=functools.partial(gradient_step, parts, hparams, axis_name),
        zero_metrics=lambda: dict.fromkeys((*parts.metric_names, "grad_norm"), jnp.float32(0.0)),
    )
    metrics["epsilon"] = epsilon(hparams, state.env_steps)
    new_state = QState(
        params=params,
        target_params=target_params,
        opt_state=opt_state,
        replay=replay_state,
        env_steps=env_steps,
        grad_steps=grad_steps,
        num_updates=state.num_updates + 1,
    )
    return new_state, metrics


def get_params(state: QState) -> AgentParams:
    """The agent Q-network's parameters (policy) and the mixer's (critic; None without one)."""
    return AgentParams(policy=state.params["agent"], critic=state.params["mixer"] or None)


def check_batch(config: QConfig, num_envs: int, rollout_len: int) -> None:
    """Raise a clear error when the rollout does not split into replay sequences."""
    del num_envs
    L = config.sequence_len
    if rollout_len % L:
        raise ValueError(
            f"rollout_len = {rollout_len} is not a multiple of the replay sequence_len = {L}"
            f" (QConfig.sequence_len); use rollout_len = {L * max(1, rollout_len // L)}"
            f" or a sequence_len dividing {rollout_len}"
        )


def make_q_learner(
    config: QConfig,
    env: Environment,
    env_params: EnvParams | None = None,
    *,
    networks: QNetworks | None = None,
    loss: Callable[..., tuple[Array, dict]] = loss_fn,
    metric_names: tuple[str, ...] = METRICS,
    loss_uses_key: bool = False,
    default_hparams: type = QHParams,
    rebuild: Callable[[QConfig], Agent] | None = None,
    extra_loss: common.ExtraLoss | None = None,
) -> Agent:
    """Build an IQL / VDN / QMIX agent for `env` (discrete actions).

    Other value-based learners (QTRAN, SHAQ, TransfQMIX) are this agent with their own
    `networks`, `loss`, `metric_names`, `default_hparams` and `rebuild`.

    Args:
      config: static structure.
      env: the environment (only its spaces, number of agents and `max_steps` are read).
      env_params: params used to read the spaces (default: `env.default_params()`).
      networks: the agent network and mixer (default `make_q_networks(config, env,
        env_params)`); a learner with other critics (e.g. QTRAN's joint networks) passes its
        own `QNetworks` subclass, whose `init` adds their parameters under `"mixer"`.
      loss: `loss(networks, params, target_params, batch, hparams) -> (loss, metrics)` on a
        replay batch (default `loss_fn`, the IQL / VDN / QMIX TD loss).
      metric_names: the scalar metrics `loss` returns (zeros before learning starts).
      loss_uses_key: call `loss(..., key=key)` with a fresh key per gradient step (a loss that
        samples, e.g. SHAQ's coalitions).
      default_hparams: the traced hyperparameters' class (a `QHParams`; e.g. `QTRANHParams`).
      rebuild: `rebuild(config) -> Agent`, the same algorithm from another config (default:
        `make_q_learner` with these arguments); another algorithm passes its own factory.
      extra_loss: `extra_loss(params, replay batch, hparams) -> scalar` added to `loss` at
        every gradient step and reported as the metric `extra_loss` (an auxiliary loss;
        `marljax.agents.common.ExtraLoss`); default none.

    Returns:
      An `Agent`. `act` is epsilon-greedy, or the masked argmax of Q with `greedy=True`; its
      `policy_info` is `{"q": [E, A, N], "carry": [E, A, H]}` (the carry given to `act`, stored
      for replay; `[E, A, 1]` zeros when feed-forward). `get_params` gives
      `AgentParams(policy=agent Q-network params, critic=mixer params or None)`.

    Raises:
      ValueError: continuous actions, a mixer on an env whose global state is empty, a sequence
        longer than the episode cap.
    """
    env_params = env.default_params() if env_params is None else env_params
    nets = make_q_networks(config, env, env_params) if networks is None else networks
    max_steps, L = int(env_params.max_steps), int(config.sequence_len)
    if L > max_steps:
        raise ValueError(
            f"QConfig.sequence_len = {L} is longer than the episode cap of {env.name} "
            f"(max_steps = {max_steps}); use a sequence_len <= {max_steps}"
        )
    replay = make_replay(config.buffer_size, config.batch_size)
    names = tuple(metric_names) + (("extra_loss",) if extra_loss is not None else ())
    parts = QParts(config, nets, replay, loss, names, loss_uses_key, extra_loss)
    if rebuild is None:  # the same learner, from another config
        rebuild = lambda c: make_q_learner(  # noqa: E731
            c,
            env,
            env_params,
            networks=networks,
            loss=loss,
            metric_names=metric_names,
            loss_uses_key=loss_uses_key,
            default_hparams=default_hparams,
            extra_loss=extra_loss,
        )
    return Agent(
        init=functools.partial(init, parts),
        initial_carry=functools.partial(initial_carry, parts),
        act=functools.partial(act, parts),
        update=functools.partial(update, parts),
        default_hparams=default_hparams,
        get_params=get_params,
        check_batch=functools.partial(check_batch, config),
        config=config,
        rebuild=rebuild,
    )


def iql(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """Independent Q-learning (no mixer)."""
    return make_q_learner(QConfig(mixer="none", **config), env, env_params)


def vdn(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """VDN: additive value decomposition."""
    return make_q_learner(QConfig(mixer="vdn", **config), env, env_params)


def qmix(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """QMIX: monotonic value decomposition conditioned on the global state."""
    return make_q_learner(QConfig(mixer="qmix", **config), env, env_params)


__all__ = [
    "METRICS",
    "QParts",
    "epsilon",
    "epsilon_greedy",
    "iql",
    "make_q_learner",
    "qmix",
    "unroll",
    "update",
    "vdn",
]
