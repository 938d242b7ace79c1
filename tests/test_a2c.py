"""A2C is a special case of PPO (Huang et al. 2022): IA2C / MAA2C are PPO configurations.

With one epoch, one minibatch, raw advantages and no value clipping, the PPO update takes one
gradient step on fresh data: the ratio is 1, the clip is inactive, and the step equals a
hand-written A2C step (policy gradient `-log pi(a|s) A`, value MSE, entropy bonus, the same
optimiser) to float tolerance.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import marljax
from marljax.agents import ALGORITHMS, algo_spec
from marljax.agents.base import Observation, Trajectory
from marljax.agents.ppo import A2C_OVERRIDES, PPOConfig, PPOHParams, ia2c, maa2c, make_ppo
from marljax.nn import losses
from marljax.nn.networks import MLP

T, E = 4, 3
HIDDEN = (16,)


def _trajectory(agent, state, env, params, key):
    """`T` steps of random observations with the agent's own actions and policy info."""
    A = env.num_agents
    obs_dim = env.observation_space(params).flat_dim
    N = env.action_space(params).n
    k_obs, k_next, k_rew, k_term, k_act = jax.random.split(key, 5)
    obs = jax.random.uniform(k_obs, (T, E, A, obs_dim))
    next_obs = jax.random.uniform(k_next, (T, E, A, obs_dim))
    mask = jnp.ones((T, E, A, N), bool)
    gs = obs.reshape(T, E, -1)[..., : env.global_state_space(params).flat_dim]
    reset = jnp.zeros((T, E), bool)
    flat = Observation(
        obs.reshape(T * E, A, -1), mask.reshape(T * E, A, N), gs.reshape(T * E, -1),
        reset.reshape(T * E),
    )  # fmt: skip
    actions, _, info = agent.act(state, agent.initial_carry(T * E), flat, k_act, PPOHParams())
    info = jax.tree.map(lambda x: x.reshape(T, E, *x.shape[1:]), info)
    observation = Observation(obs, mask, gs, reset)
    return Trajectory(
        observation=observation,
        actions=actions.reshape(T, E, A),
        reward=jax.random.normal(k_rew, (T, E, A)),
        terminated=jax.random.bernoulli(k_term, 0.3, (T, E)),
        truncated=jnp.zeros((T, E), bool),
        next_obs=next_obs,
        next_global_state=next_obs.reshape(T, E, -1)[..., : gs.shape[-1]],
        next_action_mask=mask,
        policy_info=info,
        last_observation=jax.tree.map(lambda x: x[-1], observation),
        initial_carry=agent.initial_carry(E),
    )


def _a2c_step(actor_p, critic_p, traj, hp):
    """A hand-written A2C step: shared MLPs on each agent's observation (IA2C, `shared`)."""
    actor = MLP(HIDDEN, "tanh", 3, 0.01)
    critic = MLP(HIDDEN, "tanh", 1, 1.0)

    def apply(net, p, x):  # SequenceNet's parameters: the MLP's live under "MLP_0"
        return net.apply({"params": p["params"]["MLP_0"]}, x)

    v_next = apply(critic, critic_p, traj.next_obs)[..., 0]
    discount = hp.gamma * (1.0 - traj.terminated[..., None].astype(jnp.float32))
    discount = discount * jnp.ones_like(traj.reward)
    done = jnp.broadcast_to(traj.terminated[..., None], traj.reward.shape).astype(jnp.float32)
    adv, returns = losses.gae(
        traj.reward, traj.policy_info["value"], v_next, discount, done, hp.gae_lambda
    )

    def loss(params):
        a_p, c_p = params
        logp_all = jax.nn.log_softmax(apply(actor, a_p, traj.observation.obs))
        logp = jnp.take_along_axis(logp_all, traj.actions[..., None], -1)[..., 0]
        entropy = -jnp.sum(jnp.exp(logp_all) * logp_all, -1)
        v = apply(critic, c_p, traj.observation.obs)[..., 0]
        pg = -jnp.mean(logp * adv)
        v_loss = 0.5 * jnp.mean(jnp.square(v - returns))
        return pg + hp.vf_coef * v_loss - hp.ent_coef * jnp.mean(entropy)

    params = (actor_p, critic_p)
    grads = jax.grad(loss)(params)
    tx = optax.chain(
        optax.clip_by_global_norm(hp.max_grad_norm),
        optax.scale_by_adam(eps=hp.adam_eps),
        optax.scale_by_learning_rate(hp.lr),
    )
    updates, _ = tx.update(grads, tx.init(params), params)
    return optax.apply_updates(params, updates)


def test_ppo_with_a2c_settings_is_a2c():
    env, params = marljax.make("matrix/climbing-v0")
    config = PPOConfig(
        critic_input="local", parameter_mode="shared", hidden_sizes=HIDDEN, **A2C_OVERRIDES
    )
    agent = make_ppo(config, env, params)
    hp = PPOHParams(lr=0.05, ent_coef=0.1)
    state = agent.init(jax.random.PRNGKey(0), hp)
    traj = _trajectory(agent, state, env, params, jax.random.PRNGKey(1))
    new_state, metrics = jax.jit(agent.update)(state, traj, hp, jax.random.PRNGKey(2))
    # the only step is on fresh data: ratio 1, nothing clipped
    assert float(metrics["clip_fraction"]) == 0.0
    assert abs(float(metrics["approx_kl"])) < 1e-6
    want_actor, want_critic = jax.jit(_a2c_step)(state.actor_params, state.critic_params, traj, hp)
    got = agent.get_params(new_state)
    moved = 0.0
    for w, g, old in zip(
        jax.tree.leaves((want_actor, want_critic)),
        jax.tree.leaves((got.policy, got.critic)),
        jax.tree.leaves((state.actor_params, state.critic_params)),
        strict=True,
    ):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)
        moved = max(moved, float(jnp.max(jnp.abs(w - old))))
    assert moved > 1e-3, "the update did not move the parameters: the test would be vacuous"


@pytest.mark.parametrize("name, critic", [("ia2c", "local"), ("maa2c", "global")])
def test_a2c_family_is_registered_as_ppo_configurations(name, critic):
    spec = algo_spec(name)
    assert spec.config_cls is PPOConfig and spec.factory is make_ppo
    assert {**spec.config_defaults} == {"critic_input": critic, **A2C_OVERRIDES}
    env, params = marljax.make("matrix/climbing-v0")
    agent = {"ia2c": ia2c, "maa2c": maa2c}[name](env, params, hidden_sizes=HIDDEN)
    agent.check_batch(1, 1)  # one minibatch: any batch fits
    assert name in ALGORITHMS
