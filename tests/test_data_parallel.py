"""Data-parallel learners: shards of a batch that average over a named axis take the whole
batch's step.

The shards here are a named `vmap` axis in this one-device process (collectives over a named
`vmap` axis are the same `psum` / `pmean` that `shard_map` runs over devices);
`tests/test_distributed.py` runs the `"envs"` layout of `marljax.training.execute` over 4 host devices.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.agents import ALGORITHMS
from marljax.agents.base import Observation, Trajectory
from marljax.agents.ppo import PPOConfig, make_ppo
from marljax.agents.qlearning import QConfig, make_q_learner
from marljax.core.config import split_fields
from marljax.nn import losses
from marljax.training.execute import ENVS_AXIS, execute, for_devices, make_mesh, programs
from marljax.training.train import TrainConfig, combine_shard_metrics, make_train

D = 2  # shards


def shards(x: jax.Array, axis: int = 0) -> jax.Array:
    """`[..., N, ...]` -> `[D, ..., N / D, ...]`: the shards of `axis`, stacked first."""
    x = jnp.moveaxis(x, axis, 0)
    x = x.reshape(D, x.shape[0] // D, *x.shape[1:])
    return jnp.moveaxis(x, 1, axis + 1)


def over_shards(fn, *args):
    return jax.vmap(fn, axis_name=ENVS_AXIS)(*args)


# ----------------------------------------------------------------------------- losses


def test_batch_statistics_over_shards_equal_the_whole_batch():
    x = jax.random.normal(jax.random.PRNGKey(0), (8, 6)) * 3.0 + 1.0
    mask = jax.random.uniform(jax.random.PRNGKey(1), (8, 6)) < 0.7
    xs, ms = shards(x), shards(mask)

    got = over_shards(lambda a, m: losses.masked_mean(a, m, ENVS_AXIS), xs, ms)
    np.testing.assert_allclose(got, np.full(D, losses.masked_mean(x, mask)), rtol=1e-6)
    got = over_shards(lambda a: losses.masked_mean(a, axis_name=ENVS_AXIS), xs)
    np.testing.assert_allclose(got, np.full(D, x.mean()), rtol=1e-6)

    for m, mm in ((None, None), (mask, ms)):
        whole = losses.normalize(x, m)
        if m is None:
            got = over_shards(lambda a: losses.normalize(a, axis_name=ENVS_AXIS), xs)
        else:
            got = over_shards(lambda a, b: losses.normalize(a, b, axis_name=ENVS_AXIS), xs, mm)
        np.testing.assert_allclose(got.reshape(x.shape), whole, rtol=1e-5, atol=1e-5)

    rms = losses.running_mean_std_update(losses.running_mean_std_init(()), x[:2].reshape(-1))
    whole = losses.running_mean_std_update(rms, x, mask)
    got = over_shards(
        lambda a, m: losses.running_mean_std_update(rms, a, m, axis_name=ENVS_AXIS), xs, ms
    )
    for field in ("mean", "var", "count"):
        np.testing.assert_allclose(getattr(got, field), np.full(D, getattr(whole, field)),
                                   rtol=1e-5)  # fmt: skip


# ----------------------------------------------------------------------------- agents


def rollout(env, params, agent, agent_state, hp, key, num_envs: int, steps: int) -> Trajectory:
    """`steps` steps of `num_envs` envs from a reset (no episode ends inside), as a Trajectory."""
    key_reset, key = jax.random.split(key)
    env_state, ts = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(key_reset, num_envs), params
    )
    carry0 = carry = agent.initial_carry(num_envs)
    start = jnp.ones((num_envs,), bool)
    steps_out = []
    for _ in range(steps):
        key, key_act, key_env = jax.random.split(key, 3)
        obs = Observation(ts.obs, ts.action_mask, ts.global_state, start)
        actions, carry, info = agent.act(agent_state, carry, obs, key_act, hp)
        env_state, nts = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
            jax.random.split(key_env, num_envs), env_state, actions, params
        )
        steps_out.append((obs, actions, nts, info))
        ts, start = nts, jnp.zeros((num_envs,), bool)
    stack = lambda *xs: jnp.stack(xs)  # noqa: E731
    obs, actions, nts, info = jax.tree.map(stack, *steps_out)
    return Trajectory(
        observation=obs,
        actions=actions,
        reward=nts.reward,
        terminated=nts.terminated,
        truncated=nts.truncated,
        next_obs=nts.obs,
        next_global_state=nts.global_state,
        next_action_mask=nts.action_mask,
        policy_info=info,
        last_observation=Observation(ts.obs, ts.action_mask, ts.global_state, start),
        initial_carry=carry0,
    )


def split_traj(traj: Trajectory) -> Trajectory:
    """Shard a `[T, E, ...]` trajectory over its environments: leaves `[D, T, E / D, ...]`."""
    time_major = {"last_observation", "initial_carry"}
    parts = {}
    for name in Trajectory.__dataclass_fields__:
        leaf_axis = 0 if name in time_major else 1
        parts[name] = jax.tree.map(lambda x, a=leaf_axis: shards(x, a), getattr(traj, name))
    return Trajectory(**parts)


@pytest.mark.parametrize("recurrent", [False, True])
def test_ppo_shards_take_the_whole_batch_step(recurrent):
    """2 shards of 4 envs (gradients, advantage and value normalisation averaged over the axis)
    update to the same parameters as one learner on all 8 envs."""
    env, params = marljax.make("particle/simple_spread-v0")
    config = PPOConfig(
        critic_input="global",
        hidden_sizes=(16,),
        recurrent=recurrent,
        gru_size=8,
        num_epochs=2,
        num_minibatches=1,
        value_norm=True,
    )
    agent = make_ppo(config, env, params)
    sharded = for_devices(agent, D)
    hp = agent.default_hparams().replace(lr=3e-3)
    state = agent.init(jax.random.PRNGKey(0), hp)
    traj = rollout(env, params, agent, state, hp, jax.random.PRNGKey(1), 8, 5)
    key = jax.random.PRNGKey(2)

    whole, m_whole = jax.jit(agent.update)(state, traj, hp, key)
    step = lambda s: sharded.update(state, s, hp, key, axis_name=ENVS_AXIS)  # noqa: E731
    got, m_got = jax.jit(lambda t: over_shards(step, t))(split_traj(traj))
    before = jax.tree.leaves(agent.get_params(state))
    after = jax.tree.leaves(agent.get_params(whole))
    moved = max(float(jnp.abs(a - b).max()) for a, b in zip(after, before))
    assert moved > 1e-4  # the step did something
    for a, g in zip(after, jax.tree.leaves(agent.get_params(got))):
        np.testing.assert_array_equal(g[0], g[1])  # identical on every shard
        np.testing.assert_allclose(g[0], a, rtol=2e-4, atol=2e-6)
    np.testing.assert_allclose(got.value_norm.mean[0], whole.value_norm.mean, rtol=1e-5)
    np.testing.assert_allclose(m_got["grad_norm"][0], m_whole["grad_norm"], rtol=1e-4)


@pytest.mark.parametrize(
    "algo, config",
    [
        ("coma", dict(hidden_sizes=(16,), critic_hidden=(16,), critic_steps=2)),
        ("pqn_vdn", dict(hidden_sizes=(16,), num_epochs=2, num_minibatches=1)),
    ],
)
def test_coma_and_pqn_shards_take_the_whole_batch_step(algo, config):
    """The agents built without any device argument run data-parallel too: 2 shards of 4 envs
    with `axis_name` step as one learner on all 8 envs (and PQN counts every shard's steps)."""
    env, params = marljax.make("particle/simple_spread-v0")
    spec = ALGORITHMS[algo]
    agent = spec.factory(spec.config_cls(**{**spec.config_defaults, **config}), env, params)
    sharded = for_devices(agent, D)
    assert sharded is agent  # no size to split: the same agent, the axis comes with `update`
    hp = agent.default_hparams()
    if algo == "coma":  # its targets bootstrap on next actions sampled per env (other draws
        hp = hp.replace(gamma=0.0)  # on a shard); without bootstrapping they are the rewards
    state = agent.init(jax.random.PRNGKey(0), hp)
    traj = rollout(env, params, agent, state, hp, jax.random.PRNGKey(1), 8, 5)
    key = jax.random.PRNGKey(2)
    whole, _ = jax.jit(agent.update)(state, traj, hp, key)
    step = lambda s: agent.update(state, s, hp, key, axis_name=ENVS_AXIS)  # noqa: E731
    got, _ = jax.jit(lambda t: over_shards(step, t))(split_traj(traj))
    before = jax.tree.leaves(agent.get_params(state))
    after = jax.tree.leaves(agent.get_params(whole))
    assert max(float(jnp.abs(a - b).max()) for a, b in zip(after, before)) > 1e-5
    for a, g in zip(after, jax.tree.leaves(agent.get_params(got))):
        np.testing.assert_array_equal(g[0], g[1])  # identical on every shard
        np.testing.assert_allclose(g[0], a, rtol=2e-4, atol=2e-6)
    if algo == "pqn_vdn":
        np.testing.assert_array_equal(got.env_steps, [8 * 5, 8 * 5])


def test_value_learner_shards_count_every_env_step_and_stay_identical():
    env, params = marljax.make("particle/simple_spread-v0")
    config = QConfig(mixer="qmix", hidden_sizes=(16,), gru_size=8, sequence_len=5,
                     buffer_size=16, batch_size=4)  # fmt: skip
    agent = make_q_learner(config, env, params)
    sharded = for_devices(agent, D)
    hp = agent.default_hparams()
    state = agent.init(jax.random.PRNGKey(0), hp)
    local = sharded.init(jax.random.PRNGKey(0), hp)
    assert local.replay.data["obs"].shape[0] == 8  # half the buffer per shard
    traj = rollout(env, params, agent, state, hp, jax.random.PRNGKey(1), 8, 5)

    def two_updates(t):
        s, _ = sharded.update(local, t, hp, jax.random.PRNGKey(3), axis_name=ENVS_AXIS)
        return sharded.update(s, t, hp, jax.random.PRNGKey(4), axis_name=ENVS_AXIS)[0]

    got = jax.jit(lambda t: over_shards(two_updates, t))(split_traj(traj))
    np.testing.assert_array_equal(got.env_steps, [2 * 5 * 8, 2 * 5 * 8])  # every shard's steps
    assert int(got.grad_steps[0]) == 2
    leaves = jax.tree.leaves(got.params)
    for leaf in leaves:
        np.testing.assert_array_equal(leaf[0], leaf[1])
    moved = [float(jnp.abs(a[0] - b).max()) for a, b in zip(leaves, jax.tree.leaves(local.params))]
    assert max(moved) > 0
    # the two shards hold different data
    assert not np.array_equal(got.replay.data["obs"][0], got.replay.data["obs"][1])


def test_value_learner_batch_must_divide_over_shards():
    env, params = marljax.make("particle/simple_spread-v0")
    agent = make_q_learner(QConfig(sequence_len=5, buffer_size=32, batch_size=8), env, params)
    half = for_devices(agent, 2)  # the sizes declared `param(split=True)`, halved
    assert (half.config.buffer_size, half.config.batch_size) == (16, 4)
    assert split_fields(QConfig) == ["buffer_size", "batch_size"]
    agent = make_q_learner(QConfig(sequence_len=5, buffer_size=30, batch_size=5), env, params)
    with pytest.raises(ValueError, match=r"batch_size = 5 is not divisible.*batch_size = 4 or 6"):
        for_devices(agent, 2)


def test_combined_metrics_weight_episodes_by_shard():
    metrics = {
        "episode_return": jnp.array([[1.0, jnp.nan], [3.0, 5.0]]).T,  # [shard=2, U=2] -> T
        "num_episodes": jnp.array([[1.0, 0.0], [3.0, 2.0]]).T,
        "env_steps": jnp.array([[10, 20], [10, 20]]).T,
        "loss": jnp.array([[1.0, 2.0], [3.0, 4.0]]).T,
    }
    out = jax.vmap(lambda m: combine_shard_metrics(m, ENVS_AXIS), in_axes=1, axis_name=ENVS_AXIS)(
        metrics
    )
    np.testing.assert_allclose(out["episode_return"][0], [(1 * 1 + 3 * 3) / 4, 5.0])
    np.testing.assert_allclose(out["num_episodes"][0], [4, 2])
    np.testing.assert_array_equal(out["env_steps"][0], [20, 40])
    np.testing.assert_allclose(out["loss"][0], [2.0, 3.0])


# ----------------------------------------------------------------------------- the runner


def test_one_device_data_parallel_train_is_train():
    env, params = marljax.make("matrix/climbing-v0")
    agent = make_ppo(PPOConfig(hidden_sizes=(8,), num_minibatches=2, num_epochs=1), env, params)
    trainer = make_train(TrainConfig(num_envs=4, rollout_len=4, total_env_steps=48), env, agent)
    hp = agent.default_hparams()
    key = jax.random.PRNGKey(5)
    ref_state, ref = jax.jit(trainer.train)(key, hp)
    out = execute(trainer, key[None], hp, mesh=make_mesh("envs", 1), layout="envs", chunk_updates=2)
    for k in ref:  # the same play; losses to float32 reduction order (a vmap of one run)
        np.testing.assert_allclose(
            out.metrics[k][0], np.asarray(ref[k]), rtol=1e-5, atol=1e-7, err_msg=k
        )
    for a, b in zip(jax.tree.leaves(ref_state.agent_state), jax.tree.leaves(out.state.agent_state)):
        np.testing.assert_allclose(b[0, 0], np.asarray(a), rtol=1e-5, atol=1e-7)  # [run, device]


def test_data_parallel_train_rejects_unsupported_agents_and_bad_splits():
    env, params = marljax.make("matrix/climbing-v0")
    agent = make_ppo(PPOConfig(hidden_sizes=(8,)), env, params)
    trainer = make_train(TrainConfig(num_envs=4, rollout_len=4, total_env_steps=48), env, agent)
    two = jax.sharding.Mesh(np.asarray(jax.devices() * 2), (ENVS_AXIS,))  # a 2-device shape
    no_axis = agent._replace(update=lambda s, t, h, k: agent.update(s, t, h, k))
    with pytest.raises(ValueError, match="does not support the 'envs' layout.*axis_name"):
        programs(trainer._replace(agent=no_axis), two, "envs")
    # A device's share of the batch must still split into the minibatches.
    recurrent = make_ppo(PPOConfig(hidden_sizes=(8,), recurrent=True, num_minibatches=4), env)
    trainer = make_train(TrainConfig(num_envs=4, rollout_len=4), env, recurrent)
    with pytest.raises(ValueError, match=r"each device steps num_envs / 2 = 2 .*num_minibatches"):
        programs(trainer, two, "envs")
