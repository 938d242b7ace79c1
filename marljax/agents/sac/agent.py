"""The HASAC / MASAC agent: its update steps, and `init` / `act` / `update` as pure functions of a
`SACParts` record (the model and the replay buffer), which `make_sac` wires into an `Agent`.

One gradient step: the critic step (`critic_step`), then every `policy_delay` steps the actors'
step (`sequential_actor_step` for HASAC, `simultaneous_actor_step` for MASAC) and the temperature
step (`temperature_step`), then the Polyak update of the target critics.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from marljax.agents import common, offpolicy
from marljax.agents.base import Agent, AgentParams, Observation, Trajectory
from marljax.agents.sac import loss as sloss
from marljax.agents.sac.config import (
    SACConfig,
    SACHParams,
    SACState,
    check_target_entropy,
    target_entropy,
)
from marljax.agents.sac.networks import SACModel, make_sac_model
from marljax.core.types import Environment, EnvParams
from marljax.nn import distributions, losses
from marljax.nn.replay import Replay, make_replay

Array = jax.Array


class SACParts(NamedTuple):
    """The static structure a HASAC / MASAC agent's functions close over (built by `make_sac`)."""

    model: SACModel
    replay: Replay


def agent_order(key: Array, num_agents: int, fixed_order: bool) -> Array:
    """The order of HASAC's sequential update: `[A]` int32, a random permutation or `0..A-1`."""
    if fixed_order:
        return jnp.arange(num_agents, dtype=jnp.int32)
    return jax.random.permutation(key, num_agents).astype(jnp.int32)


def optimizer(lr: Array, max_grad_norm: Array) -> optax.GradientTransformation:
    """The actors' and critics' optimiser: global-norm clipping, Adam, learning rate `lr`."""
    return common.make_optimizer(lr, max_grad_norm, kind="adam")


def to_items(model: SACModel, traj: Trajectory, hp: SACHParams) -> dict[str, Any]:
    """`[T, E, ...]` rollout -> `T * E` n-step transitions (see `loss.n_step_transitions`)."""
    T, E = traj.reward.shape[:2]
    A, discrete = model.num_agents, model.discrete
    done = jnp.logical_or(traj.terminated, traj.truncated)
    r = traj.reward.mean(-1) * hp.reward_scale
    ret, disc, boot = sloss.n_step_transitions(
        r, traj.terminated, done, hp.gamma, model.config.n_step
    )
    e = jnp.arange(E)[None, :]
    o = traj.observation
    actions = traj.actions if discrete else model.to_unit(traj.actions)
    mask = o.action_mask if discrete else jnp.zeros((T, E, A, 0), bool)
    next_mask = traj.next_action_mask[boot, e] if discrete else mask
    steps = {
        "obs": o.obs,
        "mask": mask,
        "state": o.global_state,
        "actions": actions,
        "reward": ret,
        "discount": disc,
        "next_obs": traj.next_obs[boot, e],
        "next_state": traj.next_global_state[boot, e],
        "next_mask": next_mask,
    }
    return jax.tree.map(lambda x: x.reshape(T * E, *x.shape[2:]), steps)


def critic_step(model: SACModel, state: SACState, batch, hp: SACHParams, key, axis_name):
    """One step of the twin critics on `loss.twin_critic_loss` to `loss.soft_td_target`."""
    config = model.config
    alpha = model.alpha(state, hp)
    x_next = model.inputs(batch["next_obs"])
    a_next, logp_next = model.sample_all(state.actor_params, x_next, batch["next_mask"], key)
    gs, gs_next = model.state_inputs(batch["state"]), model.state_inputs(batch["next_state"])
    q_next = model.critic_apply(state.target_critic_params, gs_next, model.features(a_next)).min(0)
    if config.value_norm:
        q_next = losses.unstandardize(state.value_norm, q_next)
    target = sloss.soft_td_target(batch["reward"], batch["discount"], q_next, logp_next, alpha)
    vn = state.value_norm
    if config.value_norm:
        vn = losses.running_mean_std_update(vn, target, axis_name=axis_name)
        target_n = losses.standardize(vn, target)
    else:
        target_n = target
    feats = model.features(batch["actions"])

    def loss_fn(params):
        q = model.critic_apply(params, gs, feats)  # [2, B]
        return sloss.twin_critic_loss(q, target_n, config.critic_loss, hp.huber_delta), q

    (loss, q), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.critic_params)
    grads = common.data_mean(grads, axis_name)
    tx = optimizer(hp.critic_lr, hp.max_grad_norm)
    updates, opt_state = tx.update(grads, state.critic_opt_state, state.critic_params)
    params = optax.apply_updates(state.critic_params, updates)
    q_true = losses.unstandardize(vn, q) if config.value_norm else q
    metrics = {
        "critic_loss": loss,
        "q_mean": q_true.mean(),
        "target_mean": target.mean(),
        "critic_grad_norm": optax.global_norm(grads),
    }
    state = state.replace(critic_params=params, critic_opt_state=opt_state, value_norm=vn)
    return state, metrics


def agent_actor_loss(model: SACModel, p_i, i, x_i, mask_i, joint, alpha_i, state, pre, key):
    """Agent `i`'s soft policy loss against the critics at `joint [B, A, F]` with its slot set to
    its own actions (all of them, discrete; a reparameterised sample, continuous). `pre`: the
    critics' part of the global state, `model.critic_state_part` (`[2, B, H]`, shared by the
    agents' losses).

    Returns `(loss, mean log-probability)`.
    """
    out = model.nets.actor.apply(p_i, x_i)

    def q_of(part, feats):
        q = model.critic_apply_split(state.critic_params, part, feats).min(0)
        return losses.unstandardize(state.value_norm, q) if model.config.value_norm else q

    if model.discrete:
        F = model.nets.act_dim
        logits = jnp.where(mask_i, out, distributions.MASKED_LOGIT)
        eye = jnp.eye(F)[:, None, :]  # every own action, for the exact expectation
        cand = jnp.broadcast_to(joint, (F, *joint.shape))
        cand = cand.at[:, :, i].set(jnp.broadcast_to(eye, (F, joint.shape[0], F)))
        q = q_of(jnp.broadcast_to(pre[:, None], (pre.shape[0], F, *pre.shape[1:])), cand)
        return sloss.discrete_actor_loss(logits, mask_i, q.T, alpha_i)  # q: [N, B]
    a, logp = model.policy(out, model.entries(i)).sample_and_log_prob(seed=key)
    return sloss.gaussian_actor_loss(
        logp, q_of(pre, joint.at[:, i].set(model.features(a, i))), alpha_i
    )


def sequential_actor_step(model, state, x, mask, pre, joint, alpha, hp, keys, axis_name):
    """HASAC: agents updated one after the other in `agent_order`, each against the joint action
    holding the NEW actions of the agents updated before it (a `lax.scan` over the order).

    Returns `(actor params, optimiser state, loss [A], mean log-prob [A], order [A])`.
    """
    key_order, key_scan = keys
    A = model.num_agents
    if axis_name is not None:  # every shard must update the agents in the same order
        key_order = jax.lax.all_gather(key_order, axis_name)[0]
    order = agent_order(key_order, A, model.config.fixed_order)
    tx = optimizer(hp.actor_lr, hp.max_grad_norm)
    grad_fn = jax.value_and_grad(
        lambda p_i, i, joint, k: agent_actor_loss(
            model, p_i, i, x[:, i], mask[:, i] if model.discrete else None, joint, alpha[i],
            state, pre, k,
        ),
        has_aux=True,
    )  # fmt: skip

    def body(carry, inp):
        params, opt_state, joint = carry
        i, k = inp
        k_loss, k_new = jax.random.split(k)
        p_i, o_i = model.slice_agent(params, i), model.slice_agent(opt_state, i)
        (loss, mean_logp), g = grad_fn(p_i, i, joint, k_loss)
        g = common.data_mean(g, axis_name)
        updates, o_i = tx.update(g, o_i, p_i)
        p_i = optax.apply_updates(p_i, updates)
        params = model.write_agent(params, i, p_i)
        opt_state = model.write_agent(opt_state, i, o_i)
        # re-sample agent i's action from its NEW policy for the agents after it
        out = model.nets.actor.apply(p_i, x[:, i])
        new_a = model.policy(out, mask[:, i] if model.discrete else None).sample(seed=k_new)
        new_feat = model.features(new_a, i)
        joint = joint.at[:, i].set(jax.lax.stop_gradient(new_feat))
        return (params, opt_state, joint), (loss, mean_logp, i)

    carry = (state.actor_params, state.actor_opt_state, joint)
    (params, opt_state, _), (loss, mean_logp, visited) = jax.lax.scan(
        body, carry, (order, jax.random.split(key_scan, A))
    )
    loss_a = jnp.zeros((A,)).at[visited].set(loss)
    logp_a = jnp.zeros((A,)).at[visited].set(mean_logp)
    return params, opt_state, loss_a, logp_a, visited


def simultaneous_actor_step(model, state, x, mask, pre, joint, alpha, hp, key, axis_name):
    """MASAC: every agent updated at once against the joint action of the current policies.

    Returns `(actor params, optimiser state, loss [A], mean log-prob [A], agents [A])`.
    """
    A = model.num_agents
    tx = optimizer(hp.actor_lr, hp.max_grad_norm)

    def loss_and_grad(i, k):
        p_i = model.slice_agent(state.actor_params, i)
        mask_i = mask[:, i] if model.discrete else None
        (loss, mean_logp), g = jax.value_and_grad(
            lambda p: agent_actor_loss(
                model, p, i, x[:, i], mask_i, joint, alpha[i], state, pre, k
            ),
            has_aux=True,
        )(p_i)
        return g, loss, mean_logp

    idx = jnp.arange(A)
    g, loss_a, logp_a = jax.vmap(loss_and_grad)(idx, jax.random.split(key, A))
    g = common.data_mean(g, axis_name)
    if model.independent:
        updates, opt_state = jax.vmap(tx.update)(g, state.actor_opt_state, state.actor_params)
    else:
        g = jax.tree.map(lambda x: x.mean(0), g)
        updates, opt_state = tx.update(g, state.actor_opt_state, state.actor_params)
    params = optax.apply_updates(state.actor_params, updates)
    return params, opt_state, loss_a, logp_a, idx


def temperature_step(model: SACModel, state: SACState, logp_a: Array, hp: SACHParams, axis_name):
    """One Adam step of the log temperatures on `loss.temperature_loss`."""
    config = model.config
    dims = model.nets.act_dim if model.used is None else model.used.sum(-1)  # [A] used entries
    tgt = target_entropy(config, model.discrete, dims, hp.target_entropy_scale)
    logp_a = common.data_mean(logp_a, axis_name)
    alpha_grad = jax.grad(sloss.temperature_loss)(state.log_alpha, logp_a, tgt)
    upd, aopt = optax.adam(hp.alpha_lr).update(alpha_grad, state.alpha_opt_state, state.log_alpha)
    return state.replace(log_alpha=optax.apply_updates(state.log_alpha, upd), alpha_opt_state=aopt)


def actor_step(model: SACModel, state: SACState, batch, hp: SACHParams, key, axis_name):
    """The actors' step (sequential or simultaneous), then the temperatures' (`auto_alpha`)."""
    alpha = model.alpha(state, hp)
    key_order, key_joint, key_scan = jax.random.split(key, 3)
    x = model.inputs(batch["obs"])  # [B, A, D_in]
    mask = batch["mask"]
    # the critics' global-state part, once for every agent's loss (the critics do not change here)
    pre = model.critic_state_part(state.critic_params, model.state_inputs(batch["state"]))
    a0, _ = model.sample_all(state.actor_params, x, mask, key_joint)
    joint = jax.lax.stop_gradient(model.features(a0))  # [B, A, F]
    if model.config.sequential:
        keys = (key_order, key_scan)
        out = sequential_actor_step(model, state, x, mask, pre, joint, alpha, hp, keys, axis_name)
    else:
        out = simultaneous_actor_step(
            model, state, x, mask, pre, joint, alpha, hp, key_scan, axis_name
        )
    params, opt_state, loss_a, logp_a, visited = out
    metrics = {
        "actor_loss": loss_a.mean(),
        "entropy": -logp_a.mean(),
        "actor_order": visited.astype(jnp.float32),
    }
    state = state.replace(actor_params=params, actor_opt_state=opt_state)
    if model.config.auto_alpha:
        state = temperature_step(model, state, logp_a, hp, axis_name)
    return state, metrics


def _zero_actor_metrics(num_agents: int) -> dict[str, Array]:
    z = jnp.float32(0.0)
    return {"actor_loss": z, "entropy": z, "actor_order": jnp.zeros((num_agents,), jnp.float32)}


def _zero_metrics(num_agents: int) -> dict[str, Array]:
    z = jnp.float32(0.0)
    m = {"critic_loss": z, "q_mean": z, "target_mean": z, "critic_grad_norm": z}
    m.update(_zero_actor_metrics(num_agents))
    return m


def gradient_step(model: SACModel, hp: SACHParams, axis_name, state: SACState, batch, keys):
    """Critic step, delayed actor and temperature steps, Polyak update of the target critics."""
    key_critic, key_actor = keys
    state, metrics = critic_step(model, state, batch, hp, key_critic, axis_name)
    delay = model.config.policy_delay
    if delay == 1:
        state, actor_metrics = actor_step(model, state, batch, hp, key_actor, axis_name)
    else:
        state, actor_metrics = jax.lax.cond(
            state.grad_steps % delay == 0,
            lambda s: actor_step(model, s, batch, hp, key_actor, axis_name),
            lambda s: (s, _zero_actor_metrics(model.num_agents)),
            state,
        )
    metrics.update(actor_metrics)
    target = offpolicy.target_update(
        state.critic_params, state.target_critic_params, state.grad_steps, tau=hp.tau
    )
    state = state.replace(target_critic_params=target, grad_steps=state.grad_steps + 1)
    return state, metrics


def _split3(key: Array) -> tuple[Array, tuple[Array, Array]]:
    key_sample, key_critic, key_actor = jax.random.split(key, 3)
    return key_sample, (key_critic, key_actor)


def _summarize(metrics: dict) -> dict:
    order = metrics.pop("actor_order")[-1]
    metrics = jax.tree.map(jnp.mean, metrics)
    metrics["actor_order"] = order
    return metrics


def init(parts: SACParts, key: Array, hparams: SACHParams) -> SACState:
    """A fresh `SACState`: actors, twin critics and their targets, optimisers, temperatures."""
    model = parts.model
    nets, A = model.nets, model.num_agents
    key_actor, key_critic = jax.random.split(key)
    init_actor = lambda k: nets.actor.init(k, jnp.zeros((1, nets.actor_in_dim)))  # noqa: E731
    actor_params = common.init_per_agent(init_actor, key_actor, A, model.independent)
    z_dim = model.state_space.flat_dim + A * nets.act_dim
    critic_params = jax.vmap(lambda k: nets.critic.init(k, jnp.zeros((1, z_dim))))(
        jax.random.split(key_critic, 2)
    )
    actor_tx = optimizer(hparams.actor_lr, hparams.max_grad_norm)
    if model.independent:
        actor_opt = jax.vmap(actor_tx.init)(actor_params)
    else:
        actor_opt = actor_tx.init(actor_params)
    log_alpha = jnp.full((A,), jnp.log(jnp.asarray(hparams.init_alpha, jnp.float32)))
    return SACState(
        actor_params=actor_params,
        critic_params=critic_params,
        target_critic_params=critic_params,
        actor_opt_state=actor_opt,
        critic_opt_state=optimizer(hparams.critic_lr, hparams.max_grad_norm).init(critic_params),
        log_alpha=log_alpha,
        alpha_opt_state=optax.adam(hparams.alpha_lr).init(log_alpha),
        value_norm=losses.running_mean_std_init(),
        replay=parts.replay.init(model.example_item()),
        env_steps=jnp.int32(0),
        grad_steps=jnp.int32(0),
        num_updates=jnp.int32(0),
    )


def act(
    parts: SACParts, state: SACState, carry, observation: Observation, key, hparams, greedy=False
):
    """Sampled actions (uniformly random ones during warm-up), or the policies' modes with
    `greedy=True` (masked argmax; tanh of the Gaussian mean, rescaled to the action box);
    `info = {"mode": [E, A, ...]}`, the modes in env units."""
    del hparams
    model = parts.model
    out = model.actor_all(state.actor_params, model.inputs(observation.obs))  # [E, A, O]
    mask = observation.action_mask
    mode = model.mode(out, mask)
    if greedy:
        return mode, carry, {"mode": mode}
    key_policy, key_random = jax.random.split(key)
    a = model.policy(out, mask if model.discrete else None).sample(seed=key_policy)
    warm = state.env_steps < model.config.warmup_steps
    if model.discrete:
        rand = jax.random.categorical(key_random, jnp.where(mask, 0.0, -jnp.inf))
        actions = jnp.where(warm, rand, a).astype(jnp.int32)
    else:
        rand = jax.random.uniform(key_random, a.shape, minval=-1.0, maxval=1.0)
        actions = model.to_env(jnp.where(warm, rand, a))
    return actions, carry, {"mode": mode}


def update(
    parts: SACParts,
    state: SACState,
    traj: Trajectory,
    hparams: SACHParams,
    key: Array,
    axis_name: str | None = None,
):
    """Store the rollout, then `utd_ratio * T` critic / actor / temperature steps.

    `axis_name`: data-parallel devices, each with a replay buffer of its own environments and
    its share of every batch; gradients, the critic targets' running statistics and the
    temperature step's entropies are averaged over the axis, HASAC's agent order is the same on
    every device, and the environment-step counter (warm-up) counts every device's steps.
    """
    model, replay, config = parts.model, parts.replay, parts.model.config
    T, E = traj.reward.shape[:2]
    replay_state = offpolicy.store(replay, state.replay, to_items(model, traj, hparams))
    env_steps = state.env_steps + T * E * common.data_shards(axis_name)
    learner, metrics = offpolicy.learn_from_replay(
        replay,
        replay_state,
        state.replace(replay=None, env_steps=env_steps),  # the buffer is closed over
        key,
        env_steps=env_steps,
        learning_starts=config.warmup_steps,
        num_steps=max(1, int(round(config.utd_ratio * T))),
        gradient_step=lambda s, b, k: gradient_step(model, hparams, axis_name, s, b, k),
        zero_metrics=lambda: _zero_metrics(model.num_agents),
        split_key=_split3,
        summarize=_summarize,
    )
    metrics["alpha"] = model.alpha(learner, hparams).mean()
    return learner.replace(replay=replay_state, num_updates=state.num_updates + 1), metrics


def get_params(state: SACState) -> AgentParams:
    """`AgentParams(policy=actors, critic=twin critics)`."""
    return AgentParams(policy=state.actor_params, critic=state.critic_params)


def make_sac(
    config: SACConfig,
    env: Environment,
    env_params: EnvParams | None = None,
) -> Agent:
    """Build a HASAC (`config.sequential`) or MASAC agent for `env`.

    Args:
      config: static structure.
      env: the environment (its spaces and number of agents are read).
      env_params: params used to read the spaces (default: `env.default_params()`).

    Returns:
      An `Agent`. `act` samples from the policies (uniformly at random during warm-up), or
      takes their modes with `greedy=True` (masked argmax; tanh of the Gaussian mean, rescaled
      to the action box); its `policy_info` is `{"mode": [E, A, ...]}`, the policies' most likely
      actions in env units. `update` metrics include `actor_order` `[A]`, the agent order of the
      last actor update. `get_params` gives `AgentParams(policy=actors, critic=twin critics)`.

    Raises:
      ValueError: an action space the learner cannot handle, an `action_type` that contradicts
        the env, a target entropy of the wrong sign for the action type.
    """
    env_params = env.default_params() if env_params is None else env_params
    model = make_sac_model(config, env, env_params)
    check_target_entropy(config, model.discrete, model.nets.act_dim)
    parts = SACParts(model, make_replay(config.buffer_size, config.batch_size))
    return Agent(
        init=functools.partial(init, parts),
        initial_carry=lambda num_envs: (),  # feed-forward actors
        act=functools.partial(act, parts),
        update=functools.partial(update, parts),
        default_hparams=SACHParams,
        get_params=get_params,
        config=config,
        rebuild=lambda c: make_sac(c, env, env_params),
    )


def hasac(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """HASAC: the sequential heterogeneous-agent update."""
    return make_sac(SACConfig(sequential=True, **config), env, env_params)


def masac(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """MASAC: every agent updated simultaneously."""
    return make_sac(SACConfig(sequential=False, **config), env, env_params)


__all__ = [
    "SACParts",
    "act",
    "agent_order",
    "actor_step",
    "critic_step",
    "get_params",
    "hasac",
    "init",
    "make_sac",
    "masac",
    "optimizer",
    "sequential_actor_step",
    "simultaneous_actor_step",
    "temperature_step",
    "update",
]
