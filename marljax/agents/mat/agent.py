"""The MAT factory: wires a config, the transformer, a policy head and the loss into an `Agent`.

`make_mat` only validates and chooses pieces; `init`, `act` and `update` below are pure
functions of a `MATParts` record of static structure, and the loss is
`marljax.agents.mat.loss.mat_loss`. MAT is feed-forward: its carry is `()`.

Acting is autoregressive over the agents inside the compiled program: a `jax.lax.scan` over the
agent index (`decode_autoregressive`) that decodes one position per agent with a key/value
cache, so the program's size does not grow with `A`. Training
scores the taken actions in one teacher-forced decoder pass (`log_prob_and_entropy`).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from marljax.agents import common, heads
from marljax.agents.base import Agent, AgentParams, Observation, Trajectory
from marljax.agents.mat.config import MATConfig, MATHParams, MATState
from marljax.agents.mat.loss import mat_loss
from marljax.agents.mat.networks import (
    MultiAgentTransformer,
    action_token,
    action_tokens,
    start_token,
    token_dim,
)
from marljax.agents.ppo.agent import optimizer
from marljax.core import spaces
from marljax.core.types import Environment, EnvParams
from marljax.nn import losses

Array = jax.Array


class MATParts(NamedTuple):
    """The static structure MAT's functions close over (built by `make_mat`)."""

    config: MATConfig
    num_agents: int
    net: MultiAgentTransformer
    head: heads.PolicyHead
    obs_rank: int
    obs_dim: int


# -------------------------------------------------------------------------------- networks


def net_params(parts: MATParts, params: Any) -> Any:
    """The transformer's parameters inside MAT's (which may hold the head's too)."""
    return params if parts.head.init_params() is None else params["net"]


def encode(parts: MATParts, params: Any, obs: Array) -> tuple[Array, Array]:
    """`obs [..., A, *obs_shape]` -> `(rep [..., A, H], values [..., A])` (critic's scale)."""
    x = common.agent_inputs(obs, parts.obs_rank, parts.num_agents, add_id=False)
    return parts.net.apply(net_params(parts, params), x, method=MultiAgentTransformer.encode)


def decode(parts: MATParts, params: Any, rep: Array, tokens: Array) -> Array:
    """`rep [..., A, H]`, shifted action `tokens [..., A, K]` -> head inputs `[..., A, O]`."""
    return parts.net.apply(
        net_params(parts, params), rep, tokens, method=MultiAgentTransformer.decode
    )


def log_prob_and_entropy(
    parts: MATParts, params: Any, rep: Array, actions: Array, mask: Array
) -> tuple[Array, Array]:
    """Teacher forcing: `(log_prob [..., A], entropy [..., A])` of `actions [..., A, ...]`.

    One decoder pass on the shifted actions; with the causal masks agent `i`'s distribution is
    `pi(. | o, a_0 .. a_{i-1})`, the one it was sampled from.
    """
    dist = parts.head(decode(parts, params, rep, action_tokens(parts.head, actions)), params, mask)
    return dist.log_prob(actions), dist.entropy()


def decode_autoregressive(
    parts: MATParts, params: Any, rep: Array, mask: Array, key: Array, greedy: bool = False
) -> tuple[Array, Array]:
    """Act agent by agent: `(actions [..., A, *act_shape], log_prob [..., A])`.

    A `jax.lax.scan` over `i = 0 .. A-1` carrying agent `i - 1`'s action token (the start token
    for agent 0) and the decoder's key/value cache: agent `i` runs the decoder on its own
    position only (`MultiAgentTransformer(cached=True)`, which reads positions `0 .. i-1` from
    the cache and adds position `i`), which is row `i` of the teacher-forced pass on the actions
    chosen so far; it samples (or, `greedy`, takes the mode) and hands its token on. Each step
    decodes one position, so acting costs `A` positions rather than `A` passes over `A`.

    Args:
      parts: the static structure.
      params: MAT's parameters.
      rep: `[..., A, H]` the encoder's representations.
      mask: `[..., A, N]` legal actions (`N = 0` for continuous actions).
      key: the sampling key (split into one per agent).
      greedy: (static) take each conditional distribution's mode.
    """
    A = parts.num_agents
    net = parts.net.clone(cached=True)
    variables = dict(net_params(parts, params))  # {"params": ...}
    run = functools.partial(net.apply, method=MultiAgentTransformer.decode, mutable=["cache"])
    start = jnp.broadcast_to(start_token(parts.head), (*rep.shape[:-2], 1, token_dim(parts.head)))
    shapes = jax.eval_shape(lambda: run(variables, rep, jnp.repeat(start, A, axis=-2))[1])
    cache = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes["cache"])

    def step(carry: tuple[Array, Any], inputs: tuple[Array, Array]):
        token, cache = carry
        i, key_i = inputs
        rep_i = jax.lax.dynamic_slice_in_dim(rep, i, 1, axis=-2)
        out, mutated = run({**variables, "cache": cache}, rep_i, token)
        dist = parts.head(out[..., 0, :], params, mask[..., i, :])
        if greedy:
            action = dist.mode()
            log_prob = dist.log_prob(action)
        else:
            action, log_prob = dist.sample_and_log_prob(key_i)
        token = action_token(parts.head, action)[..., None, :]
        return (token, mutated["cache"]), (action, log_prob)

    keys = jax.random.split(key, A)
    _, (actions, log_prob) = jax.lax.scan(step, (start, cache), (jnp.arange(A), keys))
    batch = rep.ndim - 2  # the agent axis goes back after the batch axes
    return jnp.moveaxis(actions, 0, batch), jnp.moveaxis(log_prob, 0, batch)


def value_scale(parts: MATParts, state: MATState, v: Array) -> Array:
    """Raw-scale values of the encoder's outputs (undoes value normalisation)."""
    return losses.unstandardize(state.value_norm, v) if parts.config.value_norm else v


# -------------------------------------------------------------------------------- init / act


def init(parts: MATParts, key: Array, hparams: MATHParams) -> MATState:
    """A fresh `MATState`: the transformer's parameters (and the head's), Adam's state."""
    A = parts.num_agents
    obs = jnp.zeros((1, A, parts.obs_dim))
    params = parts.net.init(key, obs, jnp.zeros((1, A, token_dim(parts.head))))
    params = heads.pack_actor_params(params, parts.head.init_params())
    return MATState(
        params=params,
        opt_state=optimizer(hparams).init(params),
        value_norm=losses.running_mean_std_init(),
        num_updates=jnp.int32(0),
    )


def act(
    parts: MATParts,
    state: MATState,
    carry: tuple,
    observation: Observation,
    key: Array,
    hparams: MATHParams,
    greedy: bool = False,
):
    """One step for `E` envs: `(actions [E, A, ...], (), {"log_prob": [E, A], "value": [E, A]})`."""
    del hparams
    rep, v = encode(parts, state.params, observation.obs)
    actions, log_prob = decode_autoregressive(
        parts, state.params, rep, observation.action_mask, key, greedy
    )
    return actions, carry, {"log_prob": log_prob, "value": value_scale(parts, state, v)}


# -------------------------------------------------------------------------------- update


def advantages_and_targets(
    parts: MATParts, state: MATState, traj: Trajectory, hp: MATHParams, axis_name: str | None
) -> tuple[Array, Array, Array, Array, losses.RunningMeanStd]:
    """Per-agent GAE: `(advantages, returns, targets, old_values, value_norm)`, `[T, E, A]`.

    Bootstraps on the encoder's values of `next_obs` (the final observation at episode ends),
    through truncation but not termination (`marljax.nn.losses.gae`). `targets` and
    `old_values` are in the encoder's scale (standardised when `config.value_norm`).
    """
    ones = jnp.ones_like(traj.reward)
    v_next = value_scale(parts, state, encode(parts, state.params, traj.next_obs)[1])
    discount = hp.gamma * (1.0 - traj.terminated[..., None].astype(jnp.float32)) * ones
    done = jnp.logical_or(traj.terminated, traj.truncated)[..., None] * ones
    old_values = traj.policy_info["value"]
    advantages, returns = jax.lax.stop_gradient(
        losses.gae(traj.reward, old_values, v_next, discount, done, hp.gae_lambda)
    )
    if not parts.config.value_norm:
        return advantages, returns, returns, old_values, state.value_norm
    norm = losses.running_mean_std_update(state.value_norm, returns, axis_name=axis_name)
    scaled = losses.standardize(norm, returns), losses.standardize(norm, old_values)
    return advantages, returns, *scaled, norm


def minibatch_loss(
    parts: MATParts, params: Any, mb: dict, hp: MATHParams, axis_name: str | None = None
) -> tuple[Array, dict[str, Array]]:
    """`mat_loss` of one minibatch (leaves `[B, A, ...]`): encoder, one teacher-forced pass."""
    rep, values = encode(parts, params, mb["obs"])
    log_prob, entropy = log_prob_and_entropy(parts, params, rep, mb["actions"], mb["mask"])
    recorded = (mb["old_log_prob"], mb["advantages"], values, mb["old_values"], mb["targets"])
    return mat_loss(
        log_prob, *recorded, entropy,
        clip_eps=hp.clip_eps,
        value_clip_eps=hp.value_clip_eps if parts.config.clip_value_loss else None,
        vf_coef=hp.vf_coef,
        ent_coef=hp.ent_coef,
        normalize_advantages=parts.config.normalize_advantages,
        axis_name=axis_name,
    )  # fmt: skip


def update(
    parts: MATParts,
    state: MATState,
    traj: Trajectory,
    hparams: MATHParams,
    key: Array,
    axis_name: str | None = None,
):
    """`num_epochs` passes of minibatched `mat_loss` steps over one rollout.

    A sample is one (step, env) with all its agents. `axis_name`: a mapped axis whose members
    hold shares of the rollout (data-parallel devices); gradients and batch statistics are
    averaged over it, so every member takes the whole batch's step.
    """
    hp = hparams
    advantages, returns, targets, old_values, value_norm = advantages_and_targets(
        parts, state, traj, hp, axis_name
    )
    obs = traj.observation
    steps = {
        "obs": obs.obs,
        "mask": obs.action_mask,
        "actions": traj.actions,
        "old_log_prob": traj.policy_info["log_prob"],
        "old_values": old_values,
        "targets": targets,
        "advantages": advantages,
    }
    n = traj.reward.shape[0] * traj.reward.shape[1]  # T * E samples (masks may be empty)
    steps = jax.tree.map(lambda x: x.reshape(n, *x.shape[2:]), steps)  # [T * E, A, ...]
    tx = optimizer(hp)
    grad_fn = jax.value_and_grad(functools.partial(minibatch_loss, parts), has_aux=True)

    def sgd_step(carry, mb):
        params, opt_state = carry
        (_, metrics), grads = grad_fn(params, mb, hp, axis_name)
        grads = common.data_mean(grads, axis_name)
        updates, opt_state = tx.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), {
            **metrics,
            "grad_norm": optax.global_norm(grads),
        }

    def epoch(carry, key_epoch):
        mbs = common.shuffled_minibatches(key_epoch, steps, parts.config.num_minibatches)
        return jax.lax.scan(sgd_step, carry, mbs)

    keys = jax.random.split(key, parts.config.num_epochs)
    (params, opt_state), metrics = jax.lax.scan(epoch, (state.params, state.opt_state), keys)
    metrics = jax.tree.map(jnp.mean, metrics)
    metrics["value_mean"] = jnp.mean(returns)
    new_state = state.replace(params=params, opt_state=opt_state, value_norm=value_norm)
    return new_state.replace(num_updates=state.num_updates + 1), metrics


def check_batch(config: MATConfig, num_envs: int, rollout_len: int) -> None:
    """Raise a clear error when the `num_envs * rollout_len` samples do not split evenly."""
    n = num_envs * rollout_len
    if n % config.num_minibatches:
        raise ValueError(
            f"MAT: num_envs * rollout_len = {n} is not divisible by num_minibatches = "
            f"{config.num_minibatches}"
        )


def get_params(state: MATState) -> AgentParams:
    """`AgentParams(policy=MAT's parameters)`: acting needs the encoder too, so no split."""
    return AgentParams(policy=state.params, critic=None)


# -------------------------------------------------------------------------------- factory


def check_env(env: Environment, env_params: EnvParams) -> None:
    """Raise a `ValueError` naming MAT and `env` when MAT cannot act in it.

    MAT needs a Discrete or a 1-D Box action space, and agents that all observe the same
    quantities: one observation embedding is shared by every agent's token, so an env that pads
    observations of different sizes to one shape (`obs_sizes` not all equal) is refused.
    """
    act_space = env.action_space(env_params)
    discrete = isinstance(act_space, spaces.Discrete)
    if not (discrete or (isinstance(act_space, spaces.Box) and len(act_space.shape) == 1)):
        raise ValueError(
            f"MAT supports Discrete and 1-D Box action spaces, but {env.name} has the action "
            f"space {act_space}"
        )
    sizes = getattr(env, "obs_sizes", None)
    if sizes is not None and len(set(np.asarray(sizes).tolist())) > 1:
        raise ValueError(
            f"MAT needs every agent to have the same observation size, but {env.name} pads "
            f"observations of sizes {np.asarray(sizes).tolist()} to one shape (agents of "
            "different kinds); use a learner with per-agent parameters (e.g. mappo with "
            'parameter_mode="independent")'
        )


def make_parts(config: MATConfig, env: Environment, env_params: EnvParams) -> MATParts:
    """Validate `env` (`check_env`) and build the `MATParts` of a MAT agent for it."""
    check_env(env, env_params)
    obs_space = env.observation_space(env_params)
    head = heads.head_for_space(env.action_space(env_params))
    net = MultiAgentTransformer(
        config.embed_dim, config.num_heads, config.num_blocks, head.num_outputs, head.discrete
    )
    return MATParts(config, env.num_agents, net, head, len(obs_space.shape), obs_space.flat_dim)


def make_mat(config: MATConfig, env: Environment, env_params: EnvParams | None = None) -> Agent:
    """Build a MAT agent for `env` (Discrete or 1-D Box actions, one observation size).

    Args:
      config: static structure.
      env: the environment (only its spaces and number of agents are read).
      env_params: params used to read the spaces (default: `env.default_params()`).

    Returns:
      An `Agent` (see `marljax.agents.base`), feed-forward (carry `()`). Its `act` returns
      `policy_info = {"log_prob": [E, A], "value": [E, A]}`.

    Raises:
      ValueError: an unsupported action space, or agents with different observation sizes
        (the message names MAT and the env).
    """
    env_params = env.default_params() if env_params is None else env_params
    parts = make_parts(config, env, env_params)
    return Agent(
        init=functools.partial(init, parts),
        initial_carry=lambda num_envs: (),
        act=functools.partial(act, parts),
        update=functools.partial(update, parts),
        default_hparams=MATHParams,
        get_params=get_params,
        check_batch=functools.partial(check_batch, config),
        config=config,
        rebuild=lambda c: make_mat(c, env, env_params),
    )


def mat(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """MAT with `MATConfig(**config)`."""
    return make_mat(MATConfig(**config), env, env_params)


__all__ = [
    "MATParts",
    "act",
    "advantages_and_targets",
    "check_env",
    "decode",
    "decode_autoregressive",
    "encode",
    "init",
    "log_prob_and_entropy",
    "make_mat",
    "make_parts",
    "mat",
    "minibatch_loss",
    "update",
]
