"""The extra-loss hook: an auxiliary loss term on PPO and the value learners without a fork.

An L2 penalty on the parameters with a large weight must shrink them against the plain run, and
be reported as the metric `extra_loss`; without the hook the program is the plain one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.agents.qlearning import QConfig, QHParams, make_q_learner
from marljax.training.train import TrainConfig, make_train

TRAIN = TrainConfig(num_envs=4, rollout_len=4, total_env_steps=4 * 4 * 6)


def l2(weight: float):
    def extra_loss(params, batch, hp):
        del batch, hp
        return weight * sum(jnp.sum(x**2) for x in jax.tree.leaves(params))

    return extra_loss


def _norm(params) -> float:
    return float(sum(np.sum(np.asarray(x) ** 2) for x in jax.tree.leaves(params)))


@pytest.mark.parametrize("family", ["ppo", "q"])
def test_an_extra_loss_changes_the_update_and_is_reported(family):
    env, params = marljax.make("matrix/climbing-v0")
    if family == "ppo":
        build = lambda extra: make_ppo(  # noqa: E731
            PPOConfig(hidden_sizes=(8,), num_minibatches=1, num_epochs=2), env, params,
            extra_loss=extra,
        )  # fmt: skip
        hparams = PPOHParams(lr=1e-2)
    else:
        build = lambda extra: make_q_learner(  # noqa: E731
            QConfig(recurrent=False, hidden_sizes=(8,), batch_size=8, buffer_size=64, sequence_len=1,
                    learning_starts=0),
            env, params, extra_loss=extra,
        )  # fmt: skip
        hparams = QHParams(lr=1e-2)
    runs = {}
    for name, extra in (("plain", None), ("penalised", l2(1.0))):
        trainer = make_train(TRAIN, env, build(extra), params)
        state, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0), hparams)
        agent_state = state.agent_state
        weights = getattr(agent_state, "params", None) or (
            agent_state.actor_params, agent_state.critic_params)  # fmt: skip
        runs[name] = (weights, metrics)
    plain, penalised = runs["plain"], runs["penalised"]
    assert "extra_loss" not in plain[1] and "extra_loss" in penalised[1]
    reported = np.asarray(penalised[1]["extra_loss"])
    assert np.isfinite(reported).all() and reported[-1] > 0
    assert _norm(penalised[0]) < 0.9 * _norm(plain[0])  # the penalty pulled the weights in


def test_an_extra_loss_must_be_a_scalar():
    env, params = marljax.make("matrix/climbing-v0")
    agent = make_ppo(
        PPOConfig(hidden_sizes=(8,), num_minibatches=1, num_epochs=1), env, params,
        extra_loss=lambda p, b, h: jnp.zeros(3),
    )  # fmt: skip
    trainer = make_train(TRAIN, env, agent, params)
    with pytest.raises(ValueError, match="extra_loss must return a scalar"):
        jax.jit(trainer.train)(jax.random.PRNGKey(0), PPOHParams())
