"""Mean-field policy gradient (Dec-POMFC style): size-independent shared actor and mean-field critic.

One short training run on Vicsek flocking with 100 agents is shared by the module; the trained
state then drives swarms of 1,000 and 10,000 agents unchanged (Cui et al., ICLR 2024: a
decentralised mean-field policy applies to any number of agents).
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

import marljax
from marljax.agents import ALGORITHMS, algo_spec
from marljax.agents.meanfield import MFPGConfig, make_mfpg, mfpg, transfer
from marljax.agents.ppo import PPOConfig, PPOHParams
from marljax.evaluation.rollout import evaluate_policy
from marljax.training.train import TrainConfig, make_train

CONFIG = MFPGConfig(hidden_sizes=(32, 32), num_epochs=2, num_minibatches=2)
HPARAMS = PPOHParams(lr=3e-3, ent_coef=0.0, gamma=0.9)
EPISODE = 50
# Local alignment reward (local_ratio=1): each agent's own contribution to the order is visible
# in its reward, which makes learning fast enough for a test; the metric is the GLOBAL order.
ENV_KW = {"max_steps": EPISODE, "local_ratio": 1.0}


def _swarm(num_agents: int, max_steps: int = EPISODE):
    # Flocks pack many agents into a few hash cells: room for 32 per cell (the default 16
    # overflows within 50 steps at 10,000 agents, which `swarm/neighbour_overflow` reports).
    cap = {"cell_capacity": 32} if num_agents > 256 else {}
    kw = {**ENV_KW, "max_steps": max_steps, **cap}
    return marljax.make("swarm/vicsek-v0", num_agents=num_agents, **kw)


def _evaluator(num_agents: int, num_envs: int, steps: int = EPISODE):
    """A jitted `state, key -> metrics` running one `steps`-step episode per env."""
    env, params = _swarm(num_agents, steps)

    def run(agent_state, key):
        agent = transfer(CONFIG, env, agent_state, params)
        return evaluate_policy(
            env,
            params,
            agent,
            agent_state,
            HPARAMS,
            key,
            num_envs=num_envs,
            num_steps=steps,
            greedy=False,  # compared with the untrained policy taken as random
        )

    # The 10,000-agent episodes' run time outweighs compiling: LLVM level 1 instead of the suite's
    # 0 (tests/conftest.py).
    return jax.jit(run, compiler_options={"xla_backend_optimization_level": 1})


@pytest.fixture(scope="module")
def trained():
    """(trained state, untrained state, training metrics) on Vicsek with 100 agents."""
    env, params = _swarm(100)
    agent = make_mfpg(CONFIG, env, params)
    trainer = make_train(
        TrainConfig(num_envs=4, rollout_len=25, total_env_steps=4 * 25 * 40), env, agent, params
    )
    state, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0), HPARAMS, params)
    untrained = jax.jit(agent.init)(jax.random.PRNGKey(1), HPARAMS)
    return state.agent_state, untrained, jax.tree.map(np.asarray, metrics)


def test_config_rejects_size_dependent_modes():
    with pytest.raises(ValueError, match="parameter_mode must be 'shared'"):
        MFPGConfig(parameter_mode="shared_id")
    with pytest.raises(ValueError, match="parameter_mode must be 'shared'"):
        MFPGConfig(parameter_mode="independent")
    with pytest.raises(ValueError, match="critic_input must be 'global'"):
        MFPGConfig(critic_input="local")
    env, params = _swarm(8)
    with pytest.raises(ValueError, match="parameter_mode must be 'shared'"):
        make_mfpg(PPOConfig(), env, params)  # PPO's default mode has agent ids
    agent = make_mfpg(PPOConfig(parameter_mode="shared"), env, params)  # re-validated: fine
    assert callable(agent.act)


def test_registered_as_mfpg():
    spec = algo_spec("mfpg")
    assert ALGORITHMS["mfpg"] is spec
    config = spec.config_cls(**spec.config_defaults)
    assert (config.parameter_mode, config.critic_input) == ("shared", "global")
    env, params = _swarm(8)
    agent = spec.factory(config, env, params)
    state = jax.eval_shape(agent.init, jax.random.PRNGKey(0), spec.hparams_cls())
    # No parameter has an agent axis or an agent-id input: the shapes are those of 1,000 agents.
    big = jax.eval_shape(mfpg(*_swarm(1000)).init, jax.random.PRNGKey(0), spec.hparams_cls())
    shapes = [x.shape for x in jax.tree.leaves(agent.get_params(state))]
    assert shapes == [x.shape for x in jax.tree.leaves(agent.get_params(big))]


def test_training_raises_the_order_parameter(trained):
    state, untrained, metrics = trained
    curve = metrics["swarm/polarisation"]
    curve = curve[np.isfinite(curve)]
    assert len(curve) >= 10
    # Training episodes: the last ones are far more aligned than the first (random policy).
    assert curve[:2].mean() < 0.2
    assert curve[-5:].mean() > 0.3
    evaluate = _evaluator(100, num_envs=4)
    key = jax.random.PRNGKey(7)
    learned = float(evaluate(state, key)["swarm/polarisation"])
    random = float(evaluate(untrained, key)["swarm/polarisation"])
    assert learned > random + 0.2, (learned, random)


@pytest.mark.parametrize("num_agents", [1_000, 10_000])
def test_trained_policy_runs_unchanged_on_larger_swarms(trained, num_agents):
    state, untrained, _ = trained
    steps = 20  # a short episode keeps the 10,000-agent rollouts cheap
    env, _ = _swarm(num_agents, steps)
    assert env.neighbours.hashed  # the spatial hash, not the O(A^2) search used in training
    evaluate = _evaluator(num_agents, num_envs=1, steps=steps)
    key = jax.random.PRNGKey(3)
    out = evaluate(state, key)  # the very arrays trained with 100 agents
    assert out["episode_return_per_agent"].shape == (num_agents,)
    assert float(out["num_episodes"]) == 1.0
    assert float(out["swarm/neighbour_overflow"]) == 0.0  # every neighbour query was exact
    assert np.isfinite(float(out["swarm/polarisation"]))
    base = evaluate(untrained, key)
    # The return is the summed local alignment (local_ratio=1): the rule learned with 100
    # agents still aligns neighbourhoods in the bigger swarm far better than random play.
    learned, random = float(out["episode_return"]), float(base["episode_return"])
    assert learned > 1.3 * random, (learned, random)
    assert float(out["swarm/polarisation"]) > float(base["swarm/polarisation"])


def test_transfer_rejects_a_state_that_does_not_fit(trained):
    state, _, _ = trained
    other, params = marljax.make("swarm/kuramoto-v0", num_agents=100)  # other obs size
    with pytest.raises(ValueError, match="does not fit"):
        transfer(CONFIG, other, state, params)
    seeded = jax.tree.map(lambda x: x[None], state)  # a leftover seed axis
    with pytest.raises(ValueError, match="seed axis"):
        transfer(CONFIG, _swarm(1000)[0], seeded)
    wider = dataclasses.replace(CONFIG, hidden_sizes=(16, 16))
    with pytest.raises(ValueError, match="does not fit"):
        transfer(wider, _swarm(100)[0], state)
