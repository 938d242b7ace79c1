"""QTRAN-base: its losses equal a hand computation; its constraint losses leave Q_jt alone; and on
the non-monotonic matrix game it plays the optimum 8 that VDN and QMIX miss (Son et al. 2019)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.agents import algo_spec
from marljax.agents.qlearning import first_step_q_table
from marljax.agents.qtran import (
    QTRANConfig,
    QTRANHParams,
    make_qtran,
    nopt_loss,
    opt_loss,
    qtran_loss,
)
from marljax.training.train import TrainConfig, make_train

# A batch of 3 transitions: Q_jt of the taken joint actions, TD targets, Q_jt at the greedy joint
# action, V_jt, and the sums of the agents' utilities of the taken and the greedy actions.
Q_JT = jnp.array([1.0, -2.0, 0.5])
TARGETS = jnp.array([2.0, -1.0, 0.5])
Q_JT_GREEDY = jnp.array([3.0, 1.0, 0.5])
V = jnp.array([0.5, 1.0, -1.0])
Q_SUM_TAKEN = jnp.array([0.0, -4.0, 3.0])
Q_SUM_GREEDY = jnp.array([2.0, 1.0, 2.0])


def _hand_losses():
    td = np.mean([(1 - 2) ** 2, (-2 + 1) ** 2, 0.0])  # (Q_jt - y)^2: 1, 1, 0
    # L_opt: (Q'_greedy - Q_jt_greedy + V)^2 = (2 - 3 + 0.5)^2, (1 - 1 + 1)^2, (2 - 0.5 - 1)^2
    opt = np.mean([0.25, 1.0, 0.25])
    # L_nopt: min(Q'_taken - Q_jt + V, 0)^2: 0 - 1 + 0.5 = -0.5; -4 + 2 + 1 = -1; 3 - 0.5 - 1 > 0
    nopt = np.mean([0.25, 1.0, 0.0])
    return td, opt, nopt


@pytest.mark.parametrize("jit", [False, True])
def test_qtran_loss_equals_a_hand_computation(jit):
    td, opt, nopt = _hand_losses()
    fn = jax.jit(qtran_loss) if jit else qtran_loss
    args = (Q_JT, TARGETS, Q_JT_GREEDY, V, Q_SUM_TAKEN, Q_SUM_GREEDY)
    loss, m = fn(*args, opt_weight=2.0, nopt_weight=0.1)
    np.testing.assert_allclose(float(m["td_loss"]), td, rtol=1e-6)
    np.testing.assert_allclose(float(m["opt_loss"]), opt, rtol=1e-6)
    np.testing.assert_allclose(float(m["nopt_loss"]), nopt, rtol=1e-6)
    np.testing.assert_allclose(float(loss), td + 2.0 * opt + 0.1 * nopt, rtol=1e-6)
    np.testing.assert_allclose(float(opt_loss(Q_SUM_GREEDY, Q_JT_GREEDY, V)), opt, rtol=1e-6)
    np.testing.assert_allclose(float(nopt_loss(Q_SUM_TAKEN, Q_JT, V)), nopt, rtol=1e-6)


def test_constraint_losses_move_the_utilities_and_v_not_q_jt():
    """L_opt and L_nopt hold Q_jt fixed (stop-gradient): only L_td trains the joint network."""

    def total(q_jt, q_jt_greedy, v, q_sum_taken, q_sum_greedy):
        args = (q_jt, TARGETS, q_jt_greedy, v, q_sum_taken, q_sum_greedy)
        return qtran_loss(*args, opt_weight=1.0, nopt_weight=1.0)[0]

    g = jax.grad(total, argnums=(0, 1, 2, 3, 4))(Q_JT, Q_JT_GREEDY, V, Q_SUM_TAKEN, Q_SUM_GREEDY)
    np.testing.assert_allclose(np.asarray(g[0]), 2 * (Q_JT - TARGETS) / 3, rtol=1e-6)  # TD only
    np.testing.assert_allclose(np.asarray(g[1]), 0.0)
    # d L_nopt / d Q'_taken = 2 min(gap, 0) / 3; the third gap is positive: no push.
    np.testing.assert_allclose(np.asarray(g[3]), [2 * -0.5 / 3, 2 * -1.0 / 3, 0.0], rtol=1e-6)
    assert float(jnp.abs(g[4]).min()) > 0  # L_opt moves every greedy utility
    with pytest.raises(AssertionError, match="shape"):
        qtran_loss(Q_JT, TARGETS[:2], Q_JT_GREEDY, V, Q_SUM_TAKEN, Q_SUM_GREEDY)


def test_registry_and_bad_config():
    spec = algo_spec("qtran")
    assert spec.config_cls is QTRANConfig and spec.hparams_cls is QTRANHParams
    assert {"epymarl", "pymarl"} <= set(spec.presets)
    with pytest.raises(ValueError, match="mixer"):
        QTRANConfig(mixer="qmix")
    with pytest.raises(ValueError, match="joint_hidden"):
        QTRANConfig(joint_hidden=(0,))
    with pytest.raises(ValueError, match="hypernet_hidden is not used by this learner"):
        QTRANConfig(hypernet_hidden=8)


UPDATES = 100


def test_qtran_plays_the_optimum_of_the_nonmonotonic_game():
    """On [[8,-12,-12],[-12,0,0],[-12,0,0]] with uniform data, QTRAN's agents greedily play the
    optimum (0, 0), which VDN and QMIX miss (test_qlearning checks those on the same setup)."""
    env, params = marljax.make("matrix/nonmonotonic-v0")
    cfg = QTRANConfig(
        sequence_len=1, hidden_sizes=(32,), joint_hidden=(32, 32), buffer_size=200, batch_size=16,
        target_update_interval=50, optimizer="adam",
    )  # fmt: skip
    agent = make_qtran(cfg, env, params)
    trainer = make_train(TrainConfig(num_envs=8, rollout_len=1, total_env_steps=8 * UPDATES), env,
                         agent, params)  # fmt: skip
    hp = QTRANHParams(lr=5e-3, gamma=1.0, eps_start=1.0, eps_finish=1.0)
    state, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0), hp)
    assert np.isfinite(np.asarray(metrics["loss"])).all()
    table = first_step_q_table(cfg, env, state.agent_state, params)
    assert tuple(int(a) for a in np.argmax(table["q"], axis=1)) == (0, 0)
    assert agent.get_params(state.agent_state).critic.keys() == {"joint", "value"}
