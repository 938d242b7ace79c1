"""Policy heads, greedy acting, networks as arguments (CNN for grids) and build-time checks."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.agents import heads
from marljax.agents.base import AgentParams, Observation
from marljax.agents.ppo import PPOConfig, PPOHParams, PPONetworks, make_ppo
from marljax.core import spaces
from marljax.nn.networks import MLP
from marljax.training.train import TrainConfig, make_train

SMALL = dict(hidden_sizes=(8,), num_epochs=1, num_minibatches=1, gru_size=8, cnn_channels=(4,))


# ------------------------------------------------------------------------------------ heads


def test_categorical_head_masks_and_its_mode_is_the_legal_argmax():
    head = heads.CategoricalHead(4)
    logits = jnp.array([[0.0, 3.0, 1.0, 2.0]] * 2)
    mask = jnp.array([[True, False, True, True], [True, True, True, True]])
    dist = head(logits, None, mask)
    np.testing.assert_array_equal(dist.mode(), [3, 1])
    a = jax.vmap(lambda k: dist.sample(k))(jax.random.split(jax.random.PRNGKey(0), 200))
    assert a.dtype == jnp.int32 and not np.any(np.asarray(a[:, 0]) == 1)
    a, lp = dist.sample_and_log_prob(jax.random.PRNGKey(1))
    np.testing.assert_allclose(lp, dist.log_prob(a), rtol=1e-6)
    assert dist.entropy().shape == (2,)


def test_gaussian_heads_mode_and_box():
    mean = jnp.array([[0.3, -2.0]])
    g = heads.GaussianHead(2)
    p = g.init_params()
    np.testing.assert_array_equal(g(mean, p, None).mode(), mean)
    t = heads.TanhGaussianHead(2, low=np.array([0.0, -2.0]), high=np.array([1.0, 2.0]))
    dist = t(mean, t.init_params(), None)
    np.testing.assert_allclose(
        dist.mode(), [[0.5 * (np.tanh(0.3) + 1), 2.0 * np.tanh(-2.0)]], rtol=1e-6
    )
    a, lp = dist.sample_and_log_prob(jax.random.PRNGKey(0))
    assert np.all((a >= np.array([0.0, -2.0])) & (a <= np.array([1.0, 2.0])))
    np.testing.assert_allclose(lp, dist.log_prob(a), rtol=1e-4, atol=1e-4)


def test_head_for_space_and_mismatches_name_both_shapes():
    assert heads.head_for_space(spaces.Discrete(5)) == heads.CategoricalHead(5)
    assert isinstance(heads.head_for_space(spaces.Box(-1, 1, (3,)), True), heads.TanhGaussianHead)
    with pytest.raises(ValueError, match=r"Discrete\(5\)"):
        heads.check_head(heads.CategoricalHead(4), spaces.Discrete(5))
    with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)"):
        heads.check_head(heads.GaussianHead(2), spaces.Box(-1, 1, (3,)))


def test_box_layout_is_validated():
    assert spaces.Box(0, 1, (3, 5, 6), layout="chw").grid_shape == (5, 6, 3)
    assert spaces.Box(0, 1, (4,)).layout is None
    with pytest.raises(ValueError, match="3-D"):
        spaces.Box(0, 1, (3, 4), layout="hwc")
    with pytest.raises(ValueError, match="layout"):
        spaces.Box(0, 1, (3, 4, 5), layout="whc")


# ------------------------------------------------------------------------------------ agents


@pytest.fixture(scope="module")
def climbing():
    return marljax.make("matrix/climbing-v0")


def _observation(env, params, E=3, key=0):
    state, ts = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(jax.random.PRNGKey(key), E), params
    )
    return Observation(ts.obs, ts.action_mask, ts.global_state, jnp.ones((E,), bool))


def test_bad_networks_and_heads_are_refused_at_build_time(climbing):
    env, params = climbing
    config = PPOConfig(**SMALL)
    wrong = PPONetworks(actor=MLP((8,), "tanh", 7), critic=MLP((8,), "tanh", 1))
    with pytest.raises(ValueError, match=r"\(7,\).*\(3,\)"):
        make_ppo(config, env, params, wrong)
    wrong_critic = PPONetworks(actor=MLP((8,), "tanh", 3), critic=MLP((8,), "tanh", 2))
    with pytest.raises(ValueError, match=r"critic.*\(2,\).*\(1,\)"):
        make_ppo(config, env, params, wrong_critic)
    with pytest.raises(ValueError, match=r"Discrete\(3\)"):
        make_ppo(config, env, params, policy_head=heads.GaussianHead(3))
    with pytest.raises(ValueError, match="grid"):
        make_ppo(PPOConfig(torso="cnn", **SMALL), env, params)


@pytest.mark.parametrize("graph", ["none", "learned"])
def test_greedy_acting_is_deterministic_and_the_mode(climbing, graph):
    env, params = climbing
    agent = make_ppo(PPOConfig(graph=graph, **SMALL), env, params)
    state = agent.init(jax.random.PRNGKey(0), PPOHParams())
    obs = _observation(env, params)
    carry = agent.initial_carry(3)
    greedy = jax.jit(lambda k: agent.act(state, carry, obs, k, PPOHParams(), greedy=True)[0])
    a0, a1 = greedy(jax.random.PRNGKey(1)), greedy(jax.random.PRNGKey(2))
    np.testing.assert_array_equal(a0, a1)
    if graph == "none":  # the argmax of each agent's logits
        x = jnp.concatenate([obs.obs, jnp.broadcast_to(jnp.eye(2), (3, 2, 2))], -1)
        _, logits = agent.act.args[0].actor.apply(
            state.actor_params, jnp.zeros((6, 1)), x.reshape(1, 6, -1), jnp.ones((1, 6), bool)
        )
        np.testing.assert_array_equal(a0, jnp.argmax(logits[0], -1).reshape(3, 2))
    params_ = agent.get_params(state)
    assert isinstance(params_, AgentParams) and params_.critic is state.critic_params


def test_continuous_greedy_action_is_the_rescaled_mean():
    env, params = marljax.make("particle/simple_spread-v0", continuous=True)
    agent = make_ppo(PPOConfig(tanh_squash=True, **SMALL), env, params)
    state = agent.init(jax.random.PRNGKey(0), PPOHParams())
    obs = _observation(env, params)
    act = jax.jit(lambda k, g: agent.act(state, agent.initial_carry(3), obs, k, PPOHParams(), g)[0],
                  static_argnums=1)  # fmt: skip
    a = act(jax.random.PRNGKey(1), True)
    np.testing.assert_array_equal(a, act(jax.random.PRNGKey(2), True))
    assert not np.array_equal(act(jax.random.PRNGKey(1), False), act(jax.random.PRNGKey(2), False))
    # zero-initialised output layer scale 0.01: the mean is near 0, tanh(0) is the box centre
    np.testing.assert_allclose(a, 0.5, atol=0.05)


@pytest.fixture(scope="module")
def lbf_grid():
    return marljax.make("grid/lbf-v0", grid_observation=True, sight=2)


def test_grid_observations_get_a_cnn_unless_mlp_is_forced(lbf_grid):
    env, params = lbf_grid
    for torso, has_cnn in (("auto", True), ("mlp", False)):
        agent = make_ppo(PPOConfig(critic_input="local", torso=torso, **SMALL), env, params)
        state = agent.init(jax.random.PRNGKey(0), PPOHParams())
        names = set(state.actor_params["params"])
        assert ("GridEncoder_0" in names) == has_cnn, (torso, names)
        assert ("GridEncoder_0" in state.critic_params["params"]) == has_cnn
    # a centralised critic reads the (vector) global state: no CNN there
    agent = make_ppo(PPOConfig(critic_input="global", **SMALL), env, params)
    state = agent.init(jax.random.PRNGKey(0), PPOHParams())
    assert "GridEncoder_0" not in state.critic_params["params"]


def test_cnn_recurrent_ippo_trains_on_grid_observations(lbf_grid):
    env, params = lbf_grid
    agent = make_ppo(PPOConfig(critic_input="local", recurrent=True, **SMALL), env, params)
    trainer = make_train(
        TrainConfig(num_envs=2, rollout_len=4, total_env_steps=16), env, agent, params
    )
    state, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0), PPOHParams())
    assert all(np.all(np.isfinite(np.asarray(v))) for k, v in metrics.items() if "loss" in k)
    enc = state.agent_state.actor_params["params"]["GridEncoder_0"]
    assert enc["Conv_0"]["kernel"].shape == (3, 3, 3, 4)


def test_user_networks_are_used(climbing):
    env, params = climbing

    class Wide(nn.Module):
        out: int

        @nn.compact
        def __call__(self, x):
            return nn.Dense(self.out)(nn.relu(nn.Dense(32)(x)))

    agent = make_ppo(PPOConfig(**SMALL), env, params, PPONetworks(Wide(3), Wide(1)))
    state = agent.init(jax.random.PRNGKey(0), PPOHParams())
    assert state.actor_params["params"]["Wide_0"]["Dense_1"]["kernel"].shape[-1] == 32
    obs = _observation(env, params)
    actions, _, info = agent.act(
        state, agent.initial_carry(3), obs, jax.random.PRNGKey(0), PPOHParams()
    )
    assert actions.shape == (3, 2) and info["value"].shape == (3, 2)


def test_agents_doc_example_runs():
    """The paper-style example of docs/agents.md runs as written."""
    import pathlib
    import re

    page = pathlib.Path(__file__).resolve().parents[1] / "docs" / "agents.md"
    code = re.search(r"## Composing an agent.*?```python\n(.*?)```", page.read_text(), re.S)
    assert code, "docs/agents.md lost its paper-style example"
    namespace: dict = {}
    exec(compile(code.group(1), str(page), "exec"), namespace)
    assert namespace["actions"].shape == (4, 2)
    assert (
        "SmallCNN_0" in namespace["agent"].get_params(namespace["s"].agent_state).policy["params"]
    )
