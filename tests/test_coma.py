"""COMA: the counterfactual advantage equals a hand computation on a matrix game, the critic's
output for an agent does not depend on that agent's own action, and COMA learns the penalty game
(Foerster et al. 2018)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.agents import algo_spec
from marljax.agents.coma import (
    COMAConfig,
    COMAHParams,
    coma_actor_loss,
    coma_critic_loss,
    counterfactual_advantage,
    counterfactual_baseline,
    counterfactual_q,
    make_coma,
)
from marljax.agents.coma.agent import critic_q
from marljax.training.train import TrainConfig, make_train

#: the non-monotonic game's common payoff (rows: agent 0's action)
PAYOFF = jnp.array([[8.0, -12.0, -12.0], [-12.0, 0.0, 0.0], [-12.0, 0.0, 0.0]])


@pytest.mark.parametrize("jit", [False, True])
def test_counterfactual_advantage_equals_a_hand_computation(jit):
    """Joint action (0, 1) worth -12, a critic equal to the payoff table.

    Agent 0 (pi_0 = [0.5, 0.25, 0.25]) varies its action with agent 1's fixed at 1: column 1
    of the table, [-12, 0, 0]; baseline 0.5 * -12 = -6; advantage -12 - (-6) = -6.
    Agent 1 (pi_1 = [0.2, 0.4, 0.4]) varies its action with agent 0's fixed at 0: row 0,
    [8, -12, -12]; baseline 1.6 - 4.8 - 4.8 = -8; advantage -12 - (-8) = -4.
    """
    actions = jnp.array([0, 1])
    pi = jnp.array([[0.5, 0.25, 0.25], [0.2, 0.4, 0.4]])
    q = counterfactual_q(PAYOFF, actions)
    np.testing.assert_allclose(np.asarray(q), [[-12, 0, 0], [8, -12, -12]])
    adv_fn = jax.jit(counterfactual_advantage) if jit else counterfactual_advantage
    np.testing.assert_allclose(np.asarray(counterfactual_baseline(q, pi)), [-6.0, -8.0])
    np.testing.assert_allclose(np.asarray(adv_fn(q, pi, actions)), [-6.0, -4.0], rtol=1e-6)
    # Batched: a [2] batch of joint actions gives [2, A] advantages.
    batch = jnp.array([[0, 1], [0, 0]])
    adv = counterfactual_advantage(counterfactual_q(PAYOFF, batch), jnp.stack([pi, pi]), batch)
    # (0, 0): agent 0's column 0 [8, -12, -12] -> b = 4 - 3 - 3 = -2, A = 10;
    #         agent 1's row 0 [8, -12, -12] -> b = -8, A = 16.
    np.testing.assert_allclose(np.asarray(adv), [[-6.0, -4.0], [10.0, 16.0]], rtol=1e-6)


def test_actor_and_critic_losses():
    log_prob = jnp.log(jnp.array([0.5, 0.4]))
    adv = jnp.array([-6.0, -4.0])
    entropy = jnp.array([1.0, 1.5])
    loss, m = coma_actor_loss(log_prob, adv, entropy, ent_coef=0.1)
    pg = -np.mean([np.log(0.5) * -6.0, np.log(0.4) * -4.0])
    np.testing.assert_allclose(float(loss), pg - 0.1 * 1.25, rtol=1e-6)
    np.testing.assert_allclose(float(m["actor_loss"]), pg, rtol=1e-6)
    # the advantage is a constant of the actor's loss: no gradient flows into it
    g = jax.grad(lambda a: coma_actor_loss(log_prob, a, entropy)[0])(adv)
    np.testing.assert_allclose(np.asarray(g), 0.0)
    q, y = jnp.array([1.0, 2.0]), jnp.array([0.0, 4.0])
    np.testing.assert_allclose(float(coma_critic_loss(q, y)), 2.5)


@pytest.fixture(scope="module")
def penalty():
    return marljax.make("matrix/penalty_k0-v0")


def test_critic_row_of_an_agent_ignores_its_own_action(penalty):
    """Q(s, (u_-a, .)) for agent a is the same whatever a's own action: one pass gives every
    counterfactual, and changing another agent's action changes it."""
    env, params = penalty
    agent = make_coma(COMAConfig(hidden_sizes=(8,), critic_hidden=(16,)), env, params)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0), COMAHParams())
    _, ts = env.reset(jax.random.PRNGKey(0), params)
    parts = agent.update.args[0]
    q = jax.jit(lambda u: critic_q(parts, state.critic_params, ts.global_state, ts.obs, u))
    q00, q20, q02 = q(jnp.array([0, 0])), q(jnp.array([2, 0])), q(jnp.array([0, 2]))
    np.testing.assert_allclose(np.asarray(q00[0]), np.asarray(q20[0]), rtol=1e-6)  # own action
    np.testing.assert_allclose(np.asarray(q00[1]), np.asarray(q02[1]), rtol=1e-6)
    assert not np.allclose(np.asarray(q00[0]), np.asarray(q02[0]))  # the other's action counts
    assert algo_spec("coma").factory is make_coma
    with pytest.raises(ValueError, match="critic_hidden"):
        COMAConfig(critic_hidden=())


def test_coma_learns_the_penalty_game(penalty):
    """The penalty game (k = 0, optimum 10 at two joint actions, Claus & Boutilier 1998): COMA's
    episodes reach 10 within 150 updates."""
    env, params = penalty
    agent = make_coma(COMAConfig(hidden_sizes=(32,), critic_hidden=(32, 32)), env, params)
    trainer = make_train(TrainConfig(num_envs=16, rollout_len=4, total_env_steps=16 * 4 * 150),
                         env, agent, params)  # fmt: skip
    hp = COMAHParams(lr=1e-2, critic_lr=1e-2)
    state, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0), hp)
    assert np.isfinite(np.asarray(metrics["critic_loss"])).all()
    ret = np.asarray(metrics["episode_return"])
    assert ret[-5:].mean() > 9.0 > ret[:5].mean(), ret
