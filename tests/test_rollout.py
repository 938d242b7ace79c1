"""The rollout module: transitions stacked into a Trajectory, episode statistics, greedy acting."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.agents.base import Agent, AgentParams
from marljax.evaluation.rollout import evaluate_policy
from marljax.testing import CountingEnv
from marljax.training import rollout
from marljax.training.train import TrainConfig, combine_shard_metrics, make_train

KEY = jax.random.PRNGKey(0)


def _counting_agent() -> Agent:
    """Agent `i` plays `(count + i) % 2`; its carry counts the steps since the episode start.

    `act` takes the old five arguments only: a rollout that is not greedy never passes `greedy`.
    """

    def act(state, carry, observation, key, hparams):
        count = observation.obs[..., 0].astype(jnp.int32)  # [E, A]
        actions = (count + jnp.arange(count.shape[-1])[None, :]) % 2
        carry = jnp.where(observation.reset, 0, carry) + 1  # [E]
        return actions.astype(jnp.int32), carry, {"steps": carry}

    return Agent(
        init=lambda key, hparams: (),
        initial_carry=lambda num_envs: jnp.full((num_envs,), 7, jnp.int32),
        act=act,
        update=lambda state, traj, hparams, key: (state, {}),
        default_hparams=lambda: (),
        get_params=lambda state: AgentParams(policy=state),
    )


@pytest.fixture(scope="module")
def counting_rollout():
    env = CountingEnv(num_agents=2)
    params = env.default_params()  # goal 5: every episode terminates after 5 steps
    agent = _counting_agent()
    vec_env = rollout.batched_env(env)
    E, T = 3, 7

    @jax.jit
    def run(key):
        carry = agent.initial_carry(E)
        state = rollout.reset(vec_env, params, key, key, E, carry)
        final, transitions = rollout.rollout(vec_env, params, agent, (), (), state, T)
        return rollout.to_trajectory(transitions, final, carry), transitions, final

    return run(KEY)


def test_transitions_stack_into_the_trajectory_of_a_hand_rollout(counting_rollout):
    traj, _, final = counting_rollout
    E, T, A = 3, 7, 2
    count = np.array([0, 1, 2, 3, 4, 0, 1])  # [T] the count each step acts on (reset after 5)
    actions = (count[:, None] + np.arange(A)[None, :]) % 2  # [T, A]
    last = np.vstack([[-1, -1], actions[:-1]])  # previous action, -1 at an episode start
    last[5] = -1
    starts = np.isin(np.arange(T), [0, 5])
    tile = lambda x: np.broadcast_to(x[:, None], (T, E) + x.shape[1:])  # noqa: E731

    obs = np.stack([np.broadcast_to(count[:, None], (T, A)), last], axis=-1)  # [T, A, 2]
    np.testing.assert_array_equal(traj.observation.obs, tile(obs))
    np.testing.assert_array_equal(traj.observation.reset, tile(starts))
    np.testing.assert_array_equal(traj.actions, tile(actions))
    np.testing.assert_array_equal(traj.reward, tile(actions.astype(np.float32)))
    np.testing.assert_array_equal(traj.terminated, tile(np.arange(T) == 4))
    np.testing.assert_array_equal(traj.truncated, np.zeros((T, E), bool))
    # next_obs is the observation after the step, the FINAL one (count 5) where the episode ends
    next_obs = np.stack([np.broadcast_to(count[:, None] + 1, (T, A)), actions], axis=-1)
    np.testing.assert_array_equal(traj.next_obs, tile(next_obs))
    np.testing.assert_array_equal(traj.next_action_mask, tile(np.tile(
        np.array([[True, True, False], [True, True, True]]), (T, 1, 1))))  # fmt: skip
    # the carry restarts at each episode start; the initial carry is the one before step 0
    steps = np.array([1, 2, 3, 4, 5, 1, 2])
    np.testing.assert_array_equal(traj.policy_info["steps"], tile(steps))
    np.testing.assert_array_equal(traj.initial_carry, np.full((E,), 7))
    # the last observation bootstraps: count 2 after the final step, not an episode start
    np.testing.assert_array_equal(traj.last_observation.obs[:, :, 0], np.full((E, A), 2.0))
    np.testing.assert_array_equal(traj.last_observation.obs[:, :, 1], np.tile(actions[-1], (E, 1)))
    np.testing.assert_array_equal(traj.last_observation.reset, np.zeros((E,), bool))
    np.testing.assert_array_equal(final.carry, np.full((E,), 2))


def test_transitions_carry_the_finished_episodes_statistics(counting_rollout):
    _, transitions, _ = counting_rollout
    ep = transitions.episode
    done = np.arange(7) == 4
    np.testing.assert_array_equal(ep.done, np.broadcast_to(done[:, None], (7, 3)))
    ret = np.where(done[:, None, None], np.array([2.0, 3.0]), 0.0)  # agent 0: 0+1+0+1+0
    np.testing.assert_array_equal(ep.episode_return, np.broadcast_to(ret, (7, 3, 2)))
    np.testing.assert_array_equal(ep.episode_length, np.broadcast_to(5 * done[:, None], (7, 3)))
    stats = rollout.episode_statistics(ep)
    np.testing.assert_array_equal(stats["episode_return_per_agent"], [2.0, 3.0])
    assert float(stats["episode_return"]) == 2.5
    assert float(stats["episode_length"]) == 5.0
    assert float(stats["num_episodes"]) == 3.0


def _hand_episodes() -> rollout.EpisodeRecord:
    """`T = 4` steps of `E = 4` envs, `A = 2`: two ends in env 0, none in env 1, one in env 2
    and one in env 3."""
    T, E, A = 4, 4, 2
    done = np.zeros((T, E), bool)
    ret = np.zeros((T, E, A), np.float32)
    length = np.zeros((T, E), np.int32)
    metric = np.zeros((T, E), np.float32)
    for t, e, r, n, m in ((1, 0, [1, 2], 2, 1.0), (3, 0, [3, 4], 2, 2.0), (2, 2, [5, 0], 3, 3.0),
                          (0, 3, [-1, 6], 4, 6.0)):  # fmt: skip
        done[t, e], ret[t, e], length[t, e], metric[t, e] = True, r, n, m
    return rollout.EpisodeRecord(
        done=jnp.asarray(done),
        episode_return=jnp.asarray(ret),
        episode_length=jnp.asarray(length),
        metrics={"group/m": jnp.asarray(metric)},
    )


def _expected() -> dict:
    per_agent = np.array([1 + 3 + 5 - 1, 2 + 4 + 0 + 6]) / 4
    return {
        "episode_return": per_agent.mean(),
        "episode_return_per_agent": per_agent,
        "episode_length": (2 + 2 + 3 + 4) / 4,
        "group/m": (1 + 2 + 3 + 6) / 4,
        "num_episodes": 4.0,
    }


def _assert_stats(got: dict, want: dict) -> None:
    assert set(got) == set(want)
    for name, value in want.items():
        np.testing.assert_allclose(np.asarray(got[name]), value, rtol=1e-6, err_msg=name)


def test_episode_statistics_of_a_hand_built_window():
    episodes = _hand_episodes()
    _assert_stats(rollout.episode_statistics(episodes), _expected())
    _assert_stats(jax.jit(rollout.episode_statistics)(episodes), _expected())
    # no episode finished in env 1: alone it gives NaN averages and zero episodes
    one = jax.tree.map(lambda x: x[:, 1:2], episodes)
    stats = rollout.episode_statistics(one)
    assert float(stats["num_episodes"]) == 0.0
    for name in ("episode_return", "episode_length", "group/m"):
        assert np.isnan(float(stats[name])), name
    assert np.all(np.isnan(np.asarray(stats["episode_return_per_agent"])))


def test_episode_statistics_combine_shards_over_an_axis_name():
    episodes = _hand_episodes()
    # two shards of two envs each ([shard, T, E / 2, ...]); shard 1 holds env 1 (no episodes)
    shards = jax.tree.map(lambda x: jnp.stack([x[:, 0::2], x[:, 1::2]]), episodes)
    per_shard = jax.vmap(lambda e: rollout.episode_statistics(e, axis_name="envs"),
                         axis_name="envs")(shards)  # fmt: skip
    for shard in (0, 1):  # every shard returns the whole batch's statistics
        _assert_stats({k: v[shard] for k, v in per_shard.items()}, _expected())
    alone = jax.vmap(rollout.episode_statistics)(shards)  # without the axis: per shard
    assert np.asarray(alone["num_episodes"]).tolist() == [3.0, 1.0]


# ----------------------------------------------------------------------------- greedy acting


def _table_agent(logits) -> Agent:
    """A fixed policy: agent `i` plays action `n` with probability `softmax(logits[i])[n]`."""
    logits = jnp.asarray(logits, jnp.float32)  # [A, N]

    def act(state, carry, observation, key, hparams, greedy=False):
        shape = observation.obs.shape[:2]  # [E, A]
        if greedy:
            actions = jnp.broadcast_to(jnp.argmax(logits, axis=-1), shape)
        else:
            actions = jax.random.categorical(key, jnp.broadcast_to(logits, (*shape, 3)))
        return actions.astype(jnp.int32), carry, {}

    return Agent(
        init=lambda key, hparams: (),
        initial_carry=lambda num_envs: (),
        act=act,
        update=lambda state, traj, hparams, key: (state, {}),
        default_hparams=lambda: (),
        get_params=lambda state: AgentParams(policy=logits),
    )


def test_greedy_evaluation_of_a_fixed_policy_matches_a_hand_rollout():
    rounds, E, T = 3, 4, 9
    env, params = marljax.make("matrix/climbing-v0", num_rounds=rounds)
    # argmax: both agents play action 1 -> payoff 7 each per round
    agent = _table_agent([[0.0, 0.5, 0.4], [0.3, 0.5, 0.2]])
    payoff = float(np.asarray(params.payoffs)[0, 1, 1])
    evaluate = jax.jit(evaluate_policy, static_argnums=(0, 2, 6, 7, 8, 9))
    greedy = evaluate(env, params, agent, (), (), KEY, E, T, None, True)
    assert float(greedy["episode_return"]) == payoff * rounds == 21.0
    np.testing.assert_array_equal(greedy["episode_return_per_agent"], [21.0, 21.0])
    assert float(greedy["episode_length"]) == rounds
    assert float(greedy["num_episodes"]) == E * (T // rounds)
    # the default is greedy; sampling the same policy earns less than its mode here
    default = evaluate_policy(env, params, agent, (), (), KEY, E, T)
    np.testing.assert_array_equal(default["episode_return"], greedy["episode_return"])
    sampled = evaluate(env, params, agent, (), (), KEY, E, T, None, False)
    assert float(sampled["episode_return"]) < 21.0
    assert float(sampled["num_episodes"]) == E * (T // rounds)


def test_evaluate_social_acts_greedily_only_when_asked():
    """`evaluate_social(greedy=True)` plays the mode (7 + 7 per round here); the default samples."""
    from marljax.evaluation.social import evaluate_social

    env, params = marljax.make("matrix/climbing-v0", num_rounds=3)
    agent = _table_agent([[0.0, 0.5, 0.4], [0.3, 0.5, 0.2]])
    evaluate = jax.jit(evaluate_social, static_argnums=(0, 2, 6, 7, 8))
    greedy = evaluate(env, params, agent, (), (), KEY, 4, 9, True)
    sampled = evaluate(env, params, agent, (), (), KEY, 4, 9, False)
    assert float(greedy["social/efficiency"]) == 14.0
    assert float(sampled["social/efficiency"]) < 14.0
    assert float(greedy["num_episodes"]) == float(sampled["num_episodes"]) == 4 * 3


def test_combined_shard_metrics_are_the_whole_batch():
    """`combine_shard_metrics` (the "envs" layout's metrics): episode averages weighted by each
    shard's episodes, episodes and env steps summed, the rest averaged, the same on every shard."""
    env, params = marljax.make("matrix/climbing-v0", num_rounds=3)
    agent = _table_agent([[0.0, 0.5, 0.4], [0.3, 0.5, 0.2]])._replace(
        update=lambda state, traj, hparams, key: (state, {"mean_reward": traj.reward.mean()})
    )
    config = TrainConfig(num_envs=2, rollout_len=4, total_env_steps=2 * 4 * 3)
    keys = jax.random.split(KEY, 2)  # one per shard
    local = make_train(config, env, agent)
    own = jax.jit(jax.vmap(lambda k: local.train(k, ())[1]))(keys)
    combined = jax.jit(
        jax.vmap(lambda k: combine_shard_metrics(local.train(k, ())[1], "envs"), axis_name="envs")
    )(keys)
    n = np.asarray(own["num_episodes"], np.float64)
    ret = np.nan_to_num(np.asarray(own["episode_return"], np.float64))
    with np.errstate(invalid="ignore"):
        expect = (ret * n).sum(0) / n.sum(0)
    for shard in range(2):
        np.testing.assert_allclose(combined["episode_return"][shard], expect, rtol=1e-6)
        np.testing.assert_array_equal(combined["num_episodes"][shard], n.sum(0))
        np.testing.assert_allclose(
            combined["mean_reward"][shard], np.asarray(own["mean_reward"]).mean(0), rtol=1e-6
        )
    np.testing.assert_array_equal(combined["env_steps"][0], [16, 32, 48])  # both shards' steps
    assert not np.array_equal(*own["mean_reward"])
