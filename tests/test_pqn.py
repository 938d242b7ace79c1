"""PQN-VDN: Q(lambda) targets of the VDN sum equal a hand computation (masks, episode cuts), the
loss is the squared error of the VDN sum, and the agent learns the penalty game with no replay
buffer and no target network."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.agents import algo_spec
from marljax.agents.pqn import PQNConfig, PQNHParams, make_pqn_vdn, pqn_vdn_loss, vdn_lambda_targets
from marljax.training.train import TrainConfig, make_train


@pytest.mark.parametrize("jit", [False, True])
def test_vdn_lambda_targets_equal_a_hand_computation(jit):
    # T = 3 steps of one env, 2 agents, 2 actions; gamma 0.5, lambda 0.5; step 1 truncated.
    q_next = jnp.array(
        [[[[1.0, 3.0], [2.0, 0.0]]], [[[4.0, -1.0], [0.0, 1.0]]], [[[2.0, 2.0], [1.0, 5.0]]]]
    )  # [T, B, A, N]
    mask = jnp.ones_like(q_next, bool).at[1, 0, 0, 0].set(False)  # agent 0 may not take 4.0
    r = jnp.array([[1.0], [2.0], [3.0]])
    discount = jnp.full((3, 1), 0.5)
    done = jnp.array([[False], [True], [False]])
    fn = jax.jit(vdn_lambda_targets) if jit else vdn_lambda_targets
    g = fn(r, discount, q_next, mask, done, 0.5)
    # V = sum_a max_legal Q: 3 + 2 = 5, -1 + 1 = 0, 2 + 5 = 7.
    # G2 = 3 + 0.5 * 7 = 6.5 (last step bootstraps fully); G1 = 2 + 0.5 * 0 = 2 (episode end:
    # no lambda mixing across it); G0 = 1 + 0.5 * (0.5 * 5 + 0.5 * G1) = 2.75.
    np.testing.assert_allclose(np.asarray(g)[:, 0], [2.75, 2.0, 6.5], rtol=1e-6)
    loss, m = pqn_vdn_loss(jnp.array([[1.0, 2.0], [0.0, 0.0], [3.0, 3.0]]), g[:, 0])
    np.testing.assert_allclose(float(loss), np.mean([0.25**2, 2.0**2, 0.5**2]), rtol=1e-6)
    np.testing.assert_allclose(float(m["q_taken"]), 3.0, rtol=1e-6)


def test_pqn_vdn_learns_the_penalty_game_without_replay_or_target():
    env, params = marljax.make("matrix/penalty_k0-v0")
    cfg = PQNConfig(hidden_sizes=(32, 32), num_minibatches=4, num_epochs=2)
    agent = make_pqn_vdn(cfg, env, params)
    trainer = make_train(TrainConfig(num_envs=16, rollout_len=4, total_env_steps=16 * 4 * 80),
                         env, agent, params)  # fmt: skip
    hp = PQNHParams(gamma=0.99, eps_anneal_steps=16 * 4 * 40.0, eps_finish=0.05)
    state, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0), hp)
    ret = np.asarray(metrics["episode_return"])
    assert ret[-10:].mean() > 8.5 > ret[:5].mean(), ret
    # the whole learner state: the Q-network, its optimiser state and two counters
    assert set(vars(state.agent_state)) == {"params", "opt_state", "env_steps", "num_updates"}
    assert any("LayerNorm" in k for k in state.agent_state.params["params"]["MLP_0"])
    assert algo_spec("pqn_vdn").factory is make_pqn_vdn
    with pytest.raises(ValueError, match="num_minibatches"):
        agent.check_batch(3, 5)
