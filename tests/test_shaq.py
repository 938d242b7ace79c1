"""SHAQ: its loss equals a hand computation; its sampled coalition orders give the Shapley
distribution, so their Monte Carlo average of marginal contributions is the exact Shapley value;
bad configs fail before compiling; and it learns a cooperative matrix game (Wang et al. 2022)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.agents import algo_spec
from marljax.agents.qlearning import first_step_q_table
from marljax.agents.shaq import (
    SHAQConfig,
    SHAQHParams,
    coalition_mean,
    make_shaq,
    make_shaq_networks,
    sample_coalitions,
    shapley_probability,
    shapley_weights,
    shaq_loss,
)
from marljax.evaluation.shapley import exact_shapley
from marljax.training.checkpoint import Checkpointer
from marljax.training.train import TrainConfig, make_train

# One step of 2 sequences, 2 agents: utilities of the taken actions, alpha, greedy flags, targets.
Q = jnp.array([[[1.0, 2.0], [-1.0, 3.0]]])  # [T=1, B=2, A=2]
ALPHA = jnp.array([[[1.5, 4.0], [2.0, 1.25]]])
GREEDY = jnp.array([[[True, False], [False, False]]])
Y = jnp.array([[5.0, 2.0]])


@pytest.mark.parametrize("jit", [False, True])
def test_shaq_loss_equals_a_hand_computation(jit):
    # Q_tot = sum_i delta_i Q_i: 1 * 1 + 4 * 2 = 9;  2 * -1 + 1.25 * 3 = 1.75
    # loss = mean((9 - 5)^2, (1.75 - 2)^2) = (16 + 0.0625) / 2
    fn = jax.jit(shaq_loss) if jit else shaq_loss
    loss, m = fn(Q, ALPHA, GREEDY, Y)
    np.testing.assert_allclose(float(loss), (16 + 0.0625) / 2, rtol=1e-6)
    np.testing.assert_allclose(float(m["q_taken"]), (9 + 1.75) / 2, rtol=1e-6)
    np.testing.assert_allclose(float(m["alpha_mean"]), (4.0 + 2.0 + 1.25) / 3, rtol=1e-6)
    np.testing.assert_allclose(float(m["greedy_frac"]), 0.25)
    np.testing.assert_array_equal(
        np.asarray(shapley_weights(ALPHA, GREEDY)), [[[1.0, 4.0], [2.0, 1.25]]]
    )
    # d loss / d Q_i = delta_i (Q_tot - y) (2 / 2); no gradient into the targets
    g_q, g_y = jax.grad(lambda q, y: shaq_loss(q, ALPHA, GREEDY, y)[0], argnums=(0, 1))(Q, Y)
    np.testing.assert_allclose(np.asarray(g_q), [[[4.0, 16.0], [-0.5, -0.3125]]], rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(g_y), 0.0)
    with pytest.raises(AssertionError):
        shaq_loss(Q, ALPHA[..., :1], GREEDY, Y)


def test_coalition_mean_by_hand():
    q = jnp.array([1.0, 2.0, 4.0])
    # order (2, 0, 1): C_0 = {2}, C_1 = {2, 0}, C_2 = {}
    c = jnp.array([[[False, False, True], [True, False, True], [False, False, False]]])
    np.testing.assert_allclose(np.asarray(coalition_mean(q, c)), [[4.0, 2.5, 0.0]])


# A characteristic function on 3 agents (coalition bits -> value), not additive.
V3 = np.array([0.0, 1.0, 2.0, 5.0, 0.5, 3.0, 4.0, 10.0])  # index = sum_i bit_i << i


def test_sampled_orders_give_the_exact_shapley_value():
    """The defining property of SHAQ's estimator: coalitions drawn from random orders follow
    Pr(C_i) = |C_i|! (A - |C_i| - 1)! / A!, so the Monte Carlo mean of the marginal
    contributions v(C_i u {i}) - v(C_i) over them is the Shapley value."""
    A, n = 3, 20_000
    c = np.asarray(sample_coalitions(jax.random.PRNGKey(0), (n,), A, 1))[:, 0]  # [n, A, A]
    assert not c[:, np.arange(A), np.arange(A)].any()
    # every sample is a strict order: exactly one of (i before j), (j before i)
    off = ~np.eye(A, dtype=bool)
    assert (np.logical_xor(c, np.swapaxes(c, 1, 2)) == off).all()
    sizes = c.sum(-1)  # [n, A]
    assert (np.sort(sizes, axis=1) == np.arange(A)).all()
    for s in range(A):  # P(|C_i| = s) = C(A - 1, s) Pr(C_i) = 1 / A
        p_size = math.comb(A - 1, s) * shapley_probability(s, A)
        np.testing.assert_allclose(np.mean(sizes == s), p_size, atol=0.015)
    bits = (c * (1 << np.arange(A))).sum(-1)  # [n, A] index of C_i
    marginal = V3[bits | (1 << np.arange(A))] - V3[bits]
    mc = marginal.mean(0)
    exact = np.asarray(exact_shapley(lambda m, k: jnp.asarray(V3)[jnp.sum(m * 2 ** jnp.arange(A))],
                                     A, jax.random.PRNGKey(0)))  # fmt: skip
    # by hand: phi_0 = 1/3 (1) + 1/6 (5 - 2) + 1/6 (3 - 0.5) + 1/3 (10 - 4)
    np.testing.assert_allclose(exact[0], 1 / 3 + 3 / 6 + 2.5 / 6 + 6 / 3, rtol=1e-6)
    np.testing.assert_allclose(exact.sum(), V3[-1], rtol=1e-6)
    stderr = marginal.std(0) / math.sqrt(n)
    assert (np.abs(mc - exact) < 4 * stderr + 1e-6).all(), (mc, exact, stderr)
    # different keys: different orders
    c2 = np.asarray(sample_coalitions(jax.random.PRNGKey(1), (n,), A, 1))
    assert (c2[:, 0] != c).any()


def test_alpha_starts_at_one_and_stays_at_least_one():
    env, params = marljax.make("matrix/climbing-v0")
    nets = make_shaq_networks(SHAQConfig(sequence_len=1, recurrent=False), env, params)
    p = jax.jit(nets.init)(jax.random.PRNGKey(0))
    q = jnp.array([[3.0, -2.0], [0.5, 8.0]])
    gs = jnp.ones((2, nets.state_space.flat_dim))
    weights = jax.jit(nets.alpha_weights)
    alpha = weights(p["mixer"], q, gs, jax.random.PRNGKey(1))
    assert alpha.shape == (2, 2)
    np.testing.assert_allclose(np.asarray(alpha), 1.0, atol=1e-3)  # init scale 1e-5: VDN
    big = jax.tree.map(lambda x: x * 1e5, p["mixer"])
    alpha = np.asarray(weights(big, q, gs, jax.random.PRNGKey(1)))
    assert (alpha >= 1.0).all() and (alpha > 1.01).any()


def test_registry_and_bad_config():
    spec = algo_spec("shaq")
    assert spec.config_cls is SHAQConfig and spec.hparams_cls is SHAQHParams
    assert "jaxmarl" in spec.presets
    with pytest.raises(ValueError, match="mixer"):
        SHAQConfig(mixer="qmix")
    with pytest.raises(ValueError, match="sample_size"):
        SHAQConfig(sample_size=0)
    with pytest.raises(ValueError, match="manual_alpha"):
        SHAQConfig(manual_alpha=-1.0)
    with pytest.raises(ValueError, match="positive_map is not used by this learner"):
        SHAQConfig(positive_map="relu")
    with pytest.raises(ValueError, match="sample_size"):
        sample_coalitions(jax.random.PRNGKey(0), (2,), 3, 0)


UPDATES = 150


@pytest.fixture(scope="module")
def penalty_run():
    """SHAQ trained on the penalty game [[0, 0, 10], [0, 2, 0], [10, 0, 0]] (k = 0), one seed."""
    env, params = marljax.make("matrix/penalty_k0-v0")
    cfg = SHAQConfig(
        sequence_len=1, recurrent=False, hidden_sizes=(32,), buffer_size=200, batch_size=16,
        target="one_step", target_update_interval=50, parameter_mode="shared_id",
        team_reward="mean", sample_size=3,
    )  # fmt: skip
    agent = make_shaq(cfg, env, params)
    trainer = make_train(TrainConfig(num_envs=8, rollout_len=1, total_env_steps=8 * UPDATES),
                         env, agent, params)  # fmt: skip
    hp = SHAQHParams(lr=5e-3, gamma=1.0, eps_anneal_steps=8 * UPDATES / 2, max_grad_norm=10.0)
    state, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0), hp)
    return env, params, cfg, agent, hp, state, metrics


def test_shaq_learns_the_optimum_of_the_penalty_game(penalty_run):
    env, params, cfg, agent, hp, state, metrics = penalty_run
    assert np.isfinite(np.asarray(metrics["loss"])).all()
    table = first_step_q_table(cfg, env, state.agent_state, params)
    greedy = tuple(int(a) for a in np.argmax(table["q"], axis=1))
    assert greedy in {(0, 2), (2, 0)}, table  # worth 10; the safe (1, 1) is worth 2
    alpha = np.asarray(metrics["alpha_mean"])
    # alpha of the non-greedy actions in the batches (0 where a batch had none: late, greedy)
    assert alpha.max() > 1.0 and alpha[0] == 0.0  # zero before learning starts
    assert agent.get_params(state.agent_state).critic is not None  # the alpha network


def test_state_round_trips_through_a_checkpoint(penalty_run, tmp_path):
    env, params, cfg, agent, hp, state, metrics = penalty_run
    s = state.agent_state
    with Checkpointer(tmp_path / "c") as ckpt:
        ckpt.save(1, s)
        back = ckpt.restore(s)
    assert int(back.replay.size) == int(s.replay.size) > 0
    for a, b in zip(jax.tree.leaves(s), jax.tree.leaves(back), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
