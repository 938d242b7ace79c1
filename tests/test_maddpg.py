"""MADDPG: the pure losses against hand computations, the centralised critic's policy gradient on a
continuous coordination game, the learner state through a checkpoint, and bad-input errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_data_parallel import D, over_shards, split_traj

import marljax
from marljax.agents import algo_spec
from marljax.agents.base import Observation, Trajectory
from marljax.agents.maddpg import (
    MADDPGConfig,
    MADDPGHParams,
    actor_loss,
    critic_loss,
    make_maddpg,
    make_maddpg_model,
    noise_std,
    td_target,
)
from marljax.core import spaces
from marljax.core.types import Environment, EnvParams, TimeStep
from marljax.training.checkpoint import Checkpointer
from marljax.training.execute import ENVS_AXIS, for_devices
from marljax.training.train import TrainConfig, make_train

# ----------------------------------------------------------------------------- pure losses


@pytest.mark.parametrize("jit", [False, True])
def test_losses_equal_a_hand_computation(jit):
    """B = 2 transitions, A = 2 agents, D = 1 action dimension."""
    f = jax.jit if jit else (lambda g: g)
    r = jnp.array([[1.0, -1.0], [0.5, 0.0]])
    discount = jnp.array([0.9, 0.0])  # the second transition terminated
    q_next = jnp.array([[2.0, 4.0], [10.0, 10.0]])
    y = f(td_target)(r, discount, q_next)
    # y_i = r_i + discount * Q'_i: [1 + 1.8, -1 + 3.6], [0.5, 0]
    np.testing.assert_allclose(y, [[2.8, 2.6], [0.5, 0.0]], rtol=1e-6)
    q = jnp.array([[3.0, 2.0], [0.5, 1.0]])
    # agent 0: ((3 - 2.8)^2 + 0^2) / 2 = 0.02; agent 1: ((2 - 2.6)^2 + 1^2) / 2 = 0.68
    np.testing.assert_allclose(f(critic_loss)(q, y), [0.02, 0.68], rtol=1e-5)
    u = jnp.array([[[1.0], [2.0]], [[3.0], [0.0]]])
    # -mean_b Q_i + 0.1 * mean_b u_i^2: agent 0: -1.75 + 0.1 * 5; agent 1: -1.5 + 0.1 * 2
    np.testing.assert_allclose(f(actor_loss)(q, u, 0.1), [-1.25, -1.3], rtol=1e-6)
    np.testing.assert_allclose(f(actor_loss)(q), [-1.75, -1.5], rtol=1e-6)
    # the target is a constant of the critic loss
    g = jax.grad(lambda t: critic_loss(q, t).sum())(y)
    assert not np.any(np.asarray(g))
    with pytest.raises(ValueError, match="discount_t"):
        td_target(r, jnp.zeros(3), q_next)
    with pytest.raises(ValueError, match="u_t"):
        actor_loss(q, jnp.zeros((2, 3, 1)))


def test_noise_schedule_is_linear_and_clamped():
    hp = MADDPGHParams(noise_start=0.8, noise_finish=0.1, noise_anneal_steps=100.0)
    got = [float(noise_std(hp, jnp.float32(s))) for s in (0, 50, 100, 1000)]
    np.testing.assert_allclose(got, [0.8, 0.45, 0.1, 0.1], rtol=1e-6)


# ----------------------------------------------------------------------------- a tiny game


class FollowTheLeader(Environment):
    """Two agents, one step, one action each in `[0, 1]`; common reward

        r = 1 - 4 (a_0 - 0.8)^2 - 4 (a_1 - a_0)^2,

    best at `(0.8, 0.8)`. Agent 1's best action is agent 0's, which only a critic that sees
    the joint action can tell it."""

    num_agents = 2

    def default_params(self) -> EnvParams:
        return EnvParams(max_steps=1)

    def _ts(self, reward, terminated):
        return TimeStep(
            obs=jnp.ones((2, 1)),
            reward=reward,
            terminated=jnp.asarray(terminated),
            truncated=jnp.array(False),
            action_mask=jnp.zeros((2, 0), bool),
            global_state=jnp.ones((1,)),
        )

    def reset(self, key, params):
        return jnp.int32(0), self._ts(jnp.zeros((2,)), False)

    def step(self, key, state, actions, params):
        a0, a1 = actions[0, 0], actions[1, 0]
        r = 1.0 - 4.0 * (a0 - 0.8) ** 2 - 4.0 * (a1 - a0) ** 2
        return state, self._ts(jnp.full((2,), r), True)

    def observation_space(self, params):
        return spaces.Box(-1.0, 1.0, (1,))

    def action_space(self, params):
        return spaces.Box(0.0, 1.0, (1,))

    def global_state_space(self, params):
        return spaces.Box(-1.0, 1.0, (1,))


@pytest.fixture(scope="module")
def follow_the_leader():
    """MADDPG trained on `FollowTheLeader` (shared by the tests below: one compile)."""
    env = FollowTheLeader()
    cfg = MADDPGConfig(hidden_sizes=(32, 32), batch_size=64, buffer_size=2000,
                       warmup_steps=256, utd_ratio=2.0)  # fmt: skip
    hp = MADDPGHParams(actor_lr=3e-3, critic_lr=3e-3, gamma=0.0, noise_start=0.3,
                       noise_finish=0.05, noise_anneal_steps=1500.0, actor_reg=0.0)  # fmt: skip
    agent = make_maddpg(cfg, env)
    trainer = make_train(TrainConfig(16, 1, 16 * 150), env, agent, env.default_params())
    state, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0), hp)
    return env, cfg, hp, agent, state.agent_state, metrics


OBS = Observation(jnp.ones((1, 2, 1)), jnp.zeros((1, 2, 0), bool), jnp.ones((1, 1)),
                  jnp.ones((1,), bool))  # fmt: skip


def test_centralised_critic_leads_both_agents_to_the_joint_optimum(follow_the_leader):
    """The critics learn the joint action's value and their gradient moves both actors to
    (0.8, 0.8); agent 0's critic values agent 1's action, which it does not choose."""
    env, cfg, hp, agent, s, m = follow_the_leader
    played = np.asarray(m["episode_return"])
    assert np.mean(played[:10]) < 0.0  # uniform warm-up actions: about -0.2
    assert np.mean(played[-10:]) > 0.88  # 0.90-0.98 over 6 other seeds
    greedy, _, _ = agent.act(s, (), OBS, jax.random.PRNGKey(1), hp, greedy=True)
    a0, a1 = np.asarray(greedy)[0, :, 0]
    # seed 0: within 0.06 of (0.8, 0.8); 6 other seeds: a0 in [0.67, 0.81], |a1 - a0| <= 0.07
    assert abs(a0 - 0.8) < 0.2 and abs(a1 - a0) < 0.1, (a0, a1)
    model = make_maddpg_model(cfg, env)
    view = jnp.ones((2, 1))
    joint = model.to_unit(jnp.array([[[0.8], [0.8]], [[0.8], [0.3]]]))  # agent 1 at 0.8 / 0.3
    q = np.asarray(model.critic_all(s.critic_params, view, joint))  # [B, A]
    assert q[0, 0] > q[1, 0] + 0.3, q  # true values 1 and 0 (6 other seeds: 0.96-1.0, <= -0.03)


def test_state_round_trips_through_a_checkpoint(follow_the_leader, tmp_path):
    """The whole learner state (actors, critics, targets, optimisers, replay buffer with its
    empty action-mask-free items, counters) saves and restores bit for bit, so a resumed run
    continues exactly (the run directory's chunked execution restores this tree)."""
    _, _, hp, agent, s, _ = follow_the_leader
    with Checkpointer(tmp_path / "c") as ckpt:
        ckpt.save(1, s)
        back = ckpt.restore(s)
    assert int(back.replay.size) == int(s.replay.size) > 0
    for a, b in zip(jax.tree.leaves(s), jax.tree.leaves(back), strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    key = jax.random.PRNGKey(3)
    a0 = agent.act(s, (), OBS, key, hp)[0]
    np.testing.assert_array_equal(np.asarray(agent.act(back, (), OBS, key, hp)[0]), a0)


def random_traj(env, params, T: int, E: int) -> Trajectory:
    """A `[T, E]` trajectory of random observations, actions in the box and rewards."""
    A = env.num_agents
    k = iter(jax.random.split(jax.random.PRNGKey(1), 5))
    obs_shape = (T, E, A, *env.observation_space(params).shape)
    gs_shape = (T, E, *env.global_state_space(params).shape)
    obs = Observation(jax.random.normal(next(k), obs_shape), jnp.zeros((T, E, A, 0), bool),
                      jax.random.normal(next(k), gs_shape), jnp.zeros((T, E), bool))  # fmt: skip
    box = env.action_space(params)
    return Trajectory(
        observation=obs,
        actions=jax.random.uniform(next(k), (T, E, A, *box.shape), minval=box.low, maxval=box.high),
        reward=jax.random.normal(next(k), (T, E, A)),
        terminated=jnp.zeros((T, E), bool),
        truncated=jnp.zeros((T, E), bool),
        next_obs=obs.obs + 0.1,
        next_global_state=obs.global_state + 0.1,
        next_action_mask=obs.action_mask,
        policy_info={},
        last_observation=jax.tree.map(lambda x: x[-1], obs),
        initial_carry=(),
    )


def test_data_parallel_shards_count_every_env_step_and_stay_identical():
    """2 shards with different replay data and keys: gradients averaged over the axis keep the
    actors, critics and targets identical; the step counter (warm-up, noise) counts both."""
    env, params = marljax.make("particle/simple_spread_continuous-v0", max_steps=10)
    config = MADDPGConfig(hidden_sizes=(8,), warmup_steps=0, buffer_size=16, batch_size=4,
                          utd_ratio=0.4)  # fmt: skip
    agent = make_maddpg(config, env, params)
    sharded = for_devices(agent, D)
    hp = agent.default_hparams()
    local = jax.jit(sharded.init)(jax.random.PRNGKey(0), hp)
    assert local.replay.data["obs"].shape[0] == 8  # half the buffer per shard
    traj = random_traj(env, params, 5, 8)
    keys = jax.random.split(jax.random.PRNGKey(3), D)  # a different key on each shard
    update = lambda t, k: sharded.update(local, t, hp, k, axis_name=ENVS_AXIS)  # noqa: E731
    got, _ = jax.jit(lambda t, k: over_shards(update, t, k))(split_traj(traj), keys)
    np.testing.assert_array_equal(got.env_steps, [5 * 8, 5 * 8])  # every shard's steps
    assert int(got.grad_steps[0]) == 2
    learned = (got.actor_params, got.critic_params, got.target_actor_params,
               got.target_critic_params)  # fmt: skip
    for leaf in jax.tree.leaves(learned):
        np.testing.assert_array_equal(leaf[0], leaf[1])
    moved = [float(jnp.abs(a[0] - b).max())
             for a, b in zip(jax.tree.leaves(got.actor_params), jax.tree.leaves(local.actor_params))]  # fmt: skip
    assert max(moved) > 0
    assert not np.array_equal(got.replay.data["obs"][0], got.replay.data["obs"][1])


# ----------------------------------------------------------------------------- bad input


def test_registry_and_bad_input_fail_clearly():
    spec = algo_spec("maddpg")
    assert spec.config_cls is MADDPGConfig and {"maddpg_paper", "benchmarl"} <= set(spec.presets)
    disc, disc_params = marljax.make("matrix/climbing-v0")
    with pytest.raises(ValueError, match="continuous"):
        make_maddpg(MADDPGConfig(), disc, disc_params)
    with pytest.raises(ValueError, match="larger than the replay buffer"):
        MADDPGConfig(batch_size=512, buffer_size=256)
    with pytest.raises(ValueError, match="critic_input"):
        MADDPGConfig(critic_input="joint")
    with pytest.raises(ValueError, match="parameter_mode"):
        MADDPGConfig(parameter_mode="stacked")
