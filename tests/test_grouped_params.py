"""The value-based learner's `grouped` parameter mode: one parameter set per group of agents."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
import marljax.envs.social  # noqa: F401  (registers social/*)
from marljax.agents import common
from marljax.agents.base import Observation
from marljax.agents.ppo import PPOConfig
from marljax.agents.qlearning import QConfig, QHParams, make_q_learner, q_table
from marljax.agents.qlearning.networks import make_q_networks
from marljax.agents.shaq import SHAQConfig
from marljax.agents.transf_qmix import TransfQMIXConfig
from marljax.training.train import TrainConfig, make_train

A, G = 9, 3  # a 3x3 lattice in three groups of three agents (rows)


CONFIG = QConfig(
    mixer="none",
    parameter_mode="grouped",
    num_groups=G,
    recurrent=False,
    hidden_sizes=(8,),
    sequence_len=2,
    batch_size=4,
    buffer_size=16,
    target="one_step",
)


@pytest.fixture(scope="module")
def grouped():
    env, params = marljax.make("social/spatial_pd-v0", side=3, num_rounds=2)
    nets = make_q_networks(CONFIG, env, params)
    theta = nets.init(jax.random.PRNGKey(0))["agent"]
    obs_dim = nets.in_dim

    @jax.jit
    def q_values(theta, xs):  # xs [1, 1, A, D] -> q [A, N]
        _, (q, _) = nets.apply_agents(theta, jnp.zeros((1, A, 1)), xs, jnp.zeros((1, 1), bool))
        return q[0, 0]

    return nets, theta, obs_dim, q_values


def test_agent_groups_are_balanced_blocks():
    np.testing.assert_array_equal(common.agent_groups(9, 3), [0, 0, 0, 1, 1, 1, 2, 2, 2])
    np.testing.assert_array_equal(common.agent_groups(5, 2), [0, 0, 0, 1, 1])
    np.testing.assert_array_equal(common.agent_groups(4, 4), [0, 1, 2, 3])
    with pytest.raises(ValueError, match="between 1 and the number of agents"):
        common.agent_groups(4, 5)


def test_agents_of_one_group_share_parameters(grouped):
    nets, theta, D, q_values = grouped
    assert all(leaf.shape[0] == G for leaf in jax.tree.leaves(theta))  # one set per group
    xs = jnp.broadcast_to(jax.random.normal(jax.random.PRNGKey(1), (D,)), (1, 1, A, D))
    q = np.asarray(q_values(theta, xs))  # the same input for every agent
    for g in range(G):
        np.testing.assert_allclose(q[3 * g : 3 * g + 3], np.broadcast_to(q[3 * g], (3, 2)))
    assert not np.allclose(q[0], q[3]) and not np.allclose(q[3], q[6])  # groups differ


def test_group_gradient_is_the_sum_over_its_agents(grouped):
    nets, theta, D, q_values = grouped
    xs = jax.random.normal(jax.random.PRNGKey(2), (1, 1, A, D))
    w = jax.random.normal(jax.random.PRNGKey(3), (A, 2))

    def loss_grouped(theta):
        return jnp.sum(w * q_values(theta, xs) ** 2)

    def loss_per_agent(theta_a):  # the same loss on `independent` parameters [A, ...]
        _, (q, _) = common.apply_over_agents(
            nets.net.apply, theta_a, jnp.zeros((1, A, 1)), xs, jnp.zeros((1, 1), bool), True
        )
        return jnp.sum(w * q[0, 0] ** 2)

    g_group = jax.grad(loss_grouped)(theta)
    g_agent = jax.grad(loss_per_agent)(common.group_params(theta, common.agent_groups(A, G)))
    summed = jax.tree.map(lambda g: g.reshape(G, A // G, *g.shape[1:]).sum(1), g_agent)
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), g_group, summed
    )
    # agents of group 0 alone move only group 0's parameters
    g0 = jax.grad(lambda t: jnp.sum(q_values(t, xs)[:3] ** 2))(theta)
    for leaf in jax.tree.leaves(g0):
        assert np.any(leaf[0] != 0) and np.all(leaf[1:] == 0)


def test_grouped_refused_where_not_implemented():
    env, params = marljax.make("social/spatial_pd-v0", side=3)
    with pytest.raises(ValueError, match="between 1 and the number of agents"):
        make_q_networks(QConfig(parameter_mode="grouped", num_groups=10), env, params)
    with pytest.raises(ValueError, match="only read when parameter_mode is 'grouped'"):
        QConfig(parameter_mode="independent", num_groups=2)
    for config in (SHAQConfig, TransfQMIXConfig, PPOConfig):
        with pytest.raises(ValueError, match="parameter_mode must be one of"):
            config(parameter_mode="grouped")


def test_grouped_iql_trains_every_group_and_reads_back(grouped):
    nets, _, _, q_values = grouped
    env, params = marljax.make("social/spatial_pd-v0", side=3, num_rounds=2)
    agent = make_q_learner(CONFIG, env, params)
    hparams = QHParams(lr=1e-2, gamma=0.9, eps_start=1.0, eps_finish=1.0)
    trainer = make_train(TrainConfig(num_envs=2, rollout_len=2, total_env_steps=40), env, agent)
    state, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0), hparams)
    assert np.all(np.isfinite(np.asarray(metrics["loss"])))
    theta0 = agent.init(jax.random.PRNGKey(0), hparams).params["agent"]
    theta = state.agent_state.params["agent"]
    for before, after in zip(jax.tree.leaves(theta0), jax.tree.leaves(theta)):
        assert after.shape[0] == G
        moved = np.abs(np.asarray(after - before)).reshape(G, -1).max(axis=1)
        assert np.all(moved > 0)  # every group's set was trained
    _, ts = env.reset(jax.random.PRNGKey(4), params)
    obs = Observation(ts.obs, ts.action_mask, ts.global_state, jnp.array(True))
    table = q_table(CONFIG, env, state.agent_state, obs, params)
    xs = nets.inputs(ts.obs)[None, None]
    np.testing.assert_allclose(table["q"], q_values(theta, xs), rtol=1e-5, atol=1e-6)
