"""HASAC / MASAC: single-agent SAC reduction, the sequential order, masks, n-step windows,
coordination on a matrix game, short registry runs and bad-input errors."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import marljax
from marljax.agents import algo_spec
from marljax.agents.base import Observation, Trajectory
from marljax.agents.sac import (
    PRESETS,
    SACConfig,
    SACHParams,
    agent_order,
    make_sac,
    make_sac_networks,
    n_step_transitions,
    preset,
)
from marljax.core import spaces
from marljax.core.types import Environment, EnvParams, TimeStep
from marljax.training import TrainConfig, broadcast_hparams, make_train, sweep

# ----------------------------------------------------------------------------- a tiny env

PAYOFF = jnp.array([0.0, 10.0, 1.0])  # action 1 pays most but is illegal
MASK = jnp.array([True, False, True])


class MaskedBandit(Environment):
    """One agent, one step, three actions of which action 1 is masked out."""

    num_agents = 1

    def default_params(self) -> EnvParams:
        return EnvParams(max_steps=1)

    action_mask = MASK[None]

    def _ts(self, reward, terminated):
        return TimeStep(
            obs=jnp.ones((1, 2)),
            reward=reward,
            terminated=jnp.asarray(terminated),
            truncated=jnp.array(False),
            action_mask=self.action_mask,
            global_state=jnp.ones((2,)),
        )

    def reset(self, key, params):
        return jnp.int32(0), self._ts(jnp.zeros((1,)), False)

    def step(self, key, state, actions, params):
        return state, self._ts(PAYOFF[actions], True)

    def observation_space(self, params):
        return spaces.Box(-1.0, 1.0, (2,))

    def action_space(self, params):
        return spaces.Discrete(3)

    def global_state_space(self, params):
        return spaces.Box(-1.0, 1.0, (2,))


def one_step_traj(action: int) -> Trajectory:
    """A `[T=1, E=1]` trajectory of the bandit where the agent played `action`."""
    obs = Observation(jnp.ones((1, 1, 1, 2)), MASK[None, None, None], jnp.ones((1, 1, 2)),
                      jnp.ones((1, 1), bool))  # fmt: skip
    return Trajectory(
        observation=obs,
        actions=jnp.full((1, 1, 1), action, jnp.int32),
        reward=PAYOFF[action].reshape(1, 1, 1),
        terminated=jnp.ones((1, 1), bool),
        truncated=jnp.zeros((1, 1), bool),
        next_obs=jnp.ones((1, 1, 1, 2)),
        next_global_state=jnp.ones((1, 1, 2)),
        next_action_mask=MASK[None, None, None],
        policy_info={},
        last_observation=jax.tree.map(lambda x: x[0], obs),
        initial_carry=(),
    )


# ----------------------------------------------------------------------------- pure pieces


def test_agent_order_fixed_and_random():
    np.testing.assert_array_equal(agent_order(jax.random.PRNGKey(0), 5, True), np.arange(5))
    perms = [np.asarray(agent_order(jax.random.PRNGKey(k), 5, False)) for k in range(6)]
    for p in perms:
        np.testing.assert_array_equal(np.sort(p), np.arange(5))
    assert len({tuple(p) for p in perms}) > 1  # the order is drawn afresh


def test_n_step_windows_cut_at_episode_ends_and_rollout_end():
    r = jnp.array([[1.0], [2.0], [4.0], [8.0]])
    term = jnp.array([[False], [True], [False], [False]])
    trunc = jnp.array([[False], [False], [False], [True]])
    ret, disc, boot = n_step_transitions(r, term, term | trunc, jnp.float32(0.5), 3)
    # t=0: r0 + .5 r1, terminal at 1 -> no bootstrap; t=1: r1 terminal; t=2: r2 + .5 r3, truncated
    # at 3 -> bootstrap with .5^2 from step 3's final observation; t=3: window cut by the rollout.
    np.testing.assert_allclose(np.asarray(ret[:, 0]), [2.0, 2.0, 8.0, 8.0])
    np.testing.assert_allclose(np.asarray(disc[:, 0]), [0.0, 0.0, 0.25, 0.5])
    np.testing.assert_array_equal(np.asarray(boot[:, 0]), [1, 1, 3, 3])


def test_presets_build():
    assert {"harl", "harl_masac", "harl_mpe", "sac_v2"} <= set(PRESETS)
    cfg, hp = preset("sac_v2")
    assert SACConfig(**cfg).n_step == 1 and float(hp.actor_lr) == pytest.approx(3e-4)
    # HARL's tuned simple-spread config: learned temperature from 1, MSE, no ValueNorm, 20 steps
    cfg, hp = preset("harl_mpe")
    mpe = SACConfig(**cfg)
    assert (mpe.auto_alpha, mpe.critic_loss, mpe.value_norm, mpe.n_step) == (True, "mse", False, 20)
    assert float(hp.init_alpha) == 1.0 and mpe.sequential
    with pytest.raises(KeyError, match="available"):
        preset("nope")


# ----------------------------------------------------------------------------- single-agent SAC

TINY = dict(hidden_sizes=(8,), n_step=1, critic_loss="mse", value_norm=False, warmup_steps=0)


def test_one_agent_tiny_temperature_is_single_agent_sac():
    """One agent, one stored transition, alpha -> 0: two gradient steps of the learner equal two
    steps of a hand-written single-agent SAC (critic, then actor on the new critic, then Polyak).
    """
    env = MaskedBandit()
    cfg = SACConfig(**TINY, batch_size=1, buffer_size=1, utd_ratio=2.0)
    agent = make_sac(cfg, env)
    alpha, lr, tau = 1e-6, 0.05, 0.5
    hp = SACHParams(actor_lr=lr, critic_lr=lr, init_alpha=alpha, tau=tau, max_grad_norm=1e9)
    state0 = agent.init(jax.random.PRNGKey(0), hp)
    state1, metrics = jax.jit(agent.update)(state0, one_step_traj(2), hp, jax.random.PRNGKey(1))
    assert float(metrics["learning"]) == 1.0

    nets = make_sac_networks(cfg, env)
    obs, gs = jnp.ones((1, 2)), jnp.ones((1, 2))
    a, r = 2, PAYOFF[2]

    def q_twin(params, action_one_hot):
        z = jnp.concatenate([jnp.broadcast_to(gs, (len(action_one_hot), 2)), action_one_hot], -1)
        return jax.vmap(nets.critic.apply, in_axes=(0, None))(params, z)[..., 0]  # [2, B]

    # critic: terminal transition, y = r; loss sum_j 0.5 (Q_j - y)^2.
    def critic_loss(params):
        return jnp.sum(0.5 * (q_twin(params, jax.nn.one_hot(jnp.array([a]), 3)) - r) ** 2)

    # actor: E_{a~pi}[alpha log pi(a) - min_j Q_j(s, a)] with the updated critic (SAC's order).
    def actor_loss(p, critic):
        logits = jnp.where(MASK, nets.actor.apply(p, obs)[0], -1e9)
        logp = jax.nn.log_softmax(logits)
        q = jnp.min(q_twin(critic, jnp.eye(3)), axis=0)  # [3] every action
        return jnp.sum(jnp.where(MASK, jnp.exp(logp) * (alpha * logp - q), 0.0))

    adam = optax.adam(lr)
    c, t = state0.critic_params, state0.target_critic_params
    p = jax.tree.map(lambda x: x[0], state0.actor_params)  # independent mode: [A=1, ...]
    c_opt, p_opt = adam.init(c), adam.init(p)
    for _ in range(2):
        upd, c_opt = adam.update(jax.grad(critic_loss)(c), c_opt, c)
        c = optax.apply_updates(c, upd)
        upd, p_opt = adam.update(jax.grad(actor_loss)(p, c), p_opt, p)
        p = optax.apply_updates(p, upd)
        t = jax.tree.map(lambda x, y: tau * x + (1 - tau) * y, c, t)

    close = lambda x, y: np.testing.assert_allclose(np.asarray(x), np.asarray(y), atol=1e-5)  # noqa: E731
    jax.tree.map(close, state1.critic_params, c)
    jax.tree.map(close, jax.tree.map(lambda x: x[0], state1.actor_params), p)
    jax.tree.map(close, state1.target_critic_params, t)
    # the reference moved: the comparison is not between two unchanged initial states
    assert not np.allclose(
        np.asarray(jax.tree.leaves(p)[0]), np.asarray(jax.tree.leaves(state0.actor_params)[0][0])
    )
    # and the legal action worth 1 gained probability over the legal action worth 0
    logits = nets.actor.apply(p, obs)[0]
    logits0 = nets.actor.apply(jax.tree.map(lambda x: x[0], state0.actor_params), obs)[0]
    assert float(logits[2] - logits[0]) > float(logits0[2] - logits0[0])


class ContinuousBandit(MaskedBandit):
    """One agent, one step, one action in `[0, 1]`; reward `-10 (a - 0.8)^2` (best at 0.8)."""

    action_mask = jnp.zeros((1, 0), bool)

    def step(self, key, state, actions, params):
        return state, self._ts(-10.0 * (actions[:, 0] - 0.8) ** 2, True)

    def action_space(self, params):
        return spaces.Box(0.0, 1.0, (1,))


def test_one_agent_continuous_sac_learns_in_the_env_action_box():
    """Single-agent continuous SAC (tanh-Gaussian rescaled to the env's `[0, 1]` box, learned
    temperature) finds the best action 0.8 of a continuous bandit; its critic loss goes down."""
    env = ContinuousBandit()
    overrides = {**TINY, "hidden_sizes": (64, 64), "warmup_steps": 320, "auto_alpha": True}
    cfg = SACConfig(**overrides, batch_size=32, buffer_size=2000, utd_ratio=4.0)
    hp = SACHParams(actor_lr=3e-3, critic_lr=3e-3, init_alpha=0.1)
    trainer = make_train(
        TrainConfig(16, 1, 16 * 100), env, make_sac(cfg, env), env.default_params()
    )
    state, m = jax.jit(trainer.train)(jax.random.PRNGKey(0), hp)
    played = np.asarray(m["episode_return"])
    assert np.mean(played[:20]) < -1.0  # uniform warm-up actions: about -1.7
    assert np.mean(played[-20:]) > -0.15
    loss = np.asarray(m["critic_loss"])
    first = int(np.argmax(np.asarray(m["learning"]) > 0))
    assert np.mean(loss[-20:]) < 0.1 * np.mean(loss[first : first + 10])
    agent = trainer.agent
    actions, _, _ = agent.act(
        state.agent_state, (), obs_of(state), jax.random.PRNGKey(0), hp, greedy=True
    )
    a = actions[0]  # env 0: [A, D], the policy's mode in env units
    assert abs(float(a[0, 0]) - 0.8) < 0.05, a


def obs_of(state) -> Observation:
    ts = state.timestep
    return Observation(ts.obs, ts.action_mask, ts.global_state, state.episode_start)


def test_masked_actions_are_never_played():
    env = MaskedBandit()
    obs = Observation(jnp.ones((256, 1, 2)), jnp.broadcast_to(MASK, (256, 1, 3)),
                      jnp.ones((256, 2)), jnp.ones((256,), bool))  # fmt: skip
    agent = make_sac(SACConfig(**{**TINY, "warmup_steps": 100}, batch_size=4), env)
    state = agent.init(jax.random.PRNGKey(0), SACHParams())
    act = jax.jit(agent.act)
    for env_steps in (0, 1000):  # uniform warm-up samples, then policy samples
        state = state.replace(env_steps=jnp.int32(env_steps))
        actions, _, info = act(state, (), obs, jax.random.PRNGKey(3), SACHParams())
        a = np.asarray(actions)
        assert set(np.unique(a)) == {0, 2}  # both legal actions appear, never action 1
        assert int(np.asarray(info["mode"])[0, 0]) in (0, 2)


# ----------------------------------------------------------------------------- the sequential scheme


def random_rollout(env, params, key, num_envs: int) -> Trajectory:
    """A `[T=1, E]` trajectory of a one-shot game under uniform random actions."""
    key_reset, key_act, key_step = jax.random.split(key, 3)
    reset = jax.vmap(env.reset, in_axes=(0, None))
    _, ts = reset(jax.random.split(key_reset, num_envs), params)
    n = env.action_space(params).n
    actions = jax.random.randint(key_act, (num_envs, env.num_agents), 0, n)
    states, _ = reset(jax.random.split(key_reset, num_envs), params)
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    _, nts = step(jax.random.split(key_step, num_envs), states, actions, params)
    obs = Observation(ts.obs, ts.action_mask, ts.global_state, jnp.ones((num_envs,), bool))
    t = lambda x: x[None]  # noqa: E731
    return Trajectory(
        observation=jax.tree.map(t, obs),
        actions=t(actions),
        reward=t(nts.reward),
        terminated=t(nts.terminated),
        truncated=t(nts.truncated),
        next_obs=t(nts.obs),
        next_global_state=t(nts.global_state),
        next_action_mask=t(nts.action_mask),
        policy_info={},
        last_observation=obs,
        initial_carry=(),
    )


@pytest.fixture(scope="module")
def climbing_states():
    """One gradient step of HASAC and of MASAC (fixed order) from the same state and batch."""
    env, params = marljax.make("matrix/climbing-v0")
    traj = random_rollout(env, params, jax.random.PRNGKey(0), 64)
    out = {}
    hp = SACHParams(actor_lr=0.3, critic_lr=0.01, max_grad_norm=1e9)
    for seq in (True, False):
        cfg = SACConfig(
            **TINY, sequential=seq, fixed_order=True, batch_size=64, buffer_size=64, utd_ratio=1.0
        )
        agent = make_sac(cfg, env, params)
        state0 = agent.init(jax.random.PRNGKey(0), hp)
        state1, metrics = jax.jit(agent.update)(state0, traj, hp, jax.random.PRNGKey(1))
        out[seq] = (state0, state1, metrics)
    return out


def test_fixed_order_scan_visits_agents_in_order(climbing_states):
    for seq in (True, False):
        _, _, metrics = climbing_states[seq]
        np.testing.assert_array_equal(np.asarray(metrics["actor_order"]), [0.0, 1.0])
        assert float(metrics["learning"]) == 1.0


def test_sequential_update_conditions_later_agents_on_earlier_updates(climbing_states):
    """Agent 0 (first in the order) gets the same step in HASAC and MASAC; agent 1's loss differs,
    because HASAC evaluates it against agent 0's re-sampled new actions."""
    init0, seq, m_seq = climbing_states[True]
    _, sim, m_sim = climbing_states[False]
    first = lambda t: jax.tree.leaves(jax.tree.map(lambda x: x[0], t))  # noqa: E731
    for x, y in zip(first(seq.actor_params), first(sim.actor_params)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), atol=1e-6)
    moved = max(float(jnp.abs(x - z).max()) for x, z in
                zip(first(seq.actor_params), first(init0.actor_params)))  # fmt: skip
    assert moved > 0.1  # agent 0 really took a step
    jax.tree.map(lambda x, y: np.testing.assert_allclose(np.asarray(x), np.asarray(y)),
                 seq.critic_params, sim.critic_params)  # fmt: skip
    # same critic, same agent-0 loss: the mean actor loss differs only through agent 1
    assert abs(float(m_seq["actor_loss"]) - float(m_sim["actor_loss"])) > 1e-5


# ----------------------------------------------------------------------------- learning


def test_hasac_coordinates_on_the_penalty_game():
    """Both agents must pick opposite corners (0, 2) or (2, 0) worth 10 (Claus & Boutilier 1998)."""
    spec = algo_spec("hasac")
    env, params = marljax.make("matrix/penalty_k0-v0")
    cfg = SACConfig(
        **{**TINY, "warmup_steps": 128}, sequential=True, batch_size=64, buffer_size=2000
    )
    agent = spec.factory(cfg, env, params)
    trainer = make_train(TrainConfig(num_envs=8, rollout_len=2, total_env_steps=16 * 150), env,
                         agent, params)  # fmt: skip
    hp = SACHParams(actor_lr=3e-3, critic_lr=3e-3, init_alpha=0.05)
    keys = jnp.stack([jax.random.PRNGKey(1), jax.random.PRNGKey(2)])
    states, metrics = sweep(trainer, keys, broadcast_hparams(hp, 1))
    _, ts = env.reset(jax.random.PRNGKey(0), params)
    observation = Observation(ts.obs, ts.action_mask, ts.global_state, jnp.array(True))
    one_env = jax.tree.map(lambda x: x[None], observation)
    for s in range(2):
        st = jax.tree.map(lambda x, s=s: x[0, s], states.agent_state)
        actions, _, _ = agent.act(st, (), one_env, jax.random.PRNGKey(0), hp, greedy=True)
        joint = tuple(int(a) for a in actions[0])
        assert joint in ((0, 2), (2, 0)), joint
        assert float(metrics["episode_return"][0, s, -1]) > 9.0


def test_short_continuous_run_through_the_registry():
    """A few updates of HASAC (tuned temperature) on continuous simple spread, built by name."""
    spec = algo_spec("hasac")
    env, params = marljax.make("particle/simple_spread_continuous-v0")
    overrides = {"hidden_sizes": (16,), "batch_size": 8, "buffer_size": 64, "warmup_steps": 16,
                 "n_step": 3, "auto_alpha": True, "policy_delay": 2}  # fmt: skip
    cfg = SACConfig(**{**spec.config_defaults, **overrides})
    agent = spec.factory(cfg, env, params)
    trainer = make_train(TrainConfig(num_envs=2, rollout_len=4, total_env_steps=2 * 4 * 6), env,
                         agent, params)  # fmt: skip
    hp = SACHParams()
    state, m = jax.jit(trainer.train)(jax.random.PRNGKey(0), hp)
    assert float(m["learning"][-1]) == 1.0 and float(m["learning"][0]) == 0.0
    for name in ("critic_loss", "actor_loss", "alpha", "q_mean"):
        assert np.isfinite(np.asarray(m[name])).all(), name
    # the temperature is tuned: it moved away from its initial value
    assert abs(float(m["alpha"][-1]) - float(hp.init_alpha)) > 1e-7
    a = np.asarray(state.timestep.obs)
    assert np.isfinite(a).all()
    spec_masac = algo_spec("masac")
    assert spec_masac.config_cls(**spec_masac.config_defaults).sequential is False


@pytest.mark.parametrize("env_id", ["particle/simple_spread_continuous-v0", "matrix/climbing-v0"])
def test_critic_split_at_the_global_state_equals_the_critic(env_id):
    """The actor step's critic (the global state's first-layer part computed once, the joint
    action's per agent) gives the critics' values."""
    from marljax.agents.sac.networks import make_sac_model

    env, params = marljax.make(env_id)
    model = make_sac_model(SACConfig(hidden_sizes=(16, 16)), env, params)
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    z = jnp.zeros((1, model.state_space.flat_dim + model.num_agents * model.nets.act_dim))
    critic = jax.vmap(model.nets.critic.init, in_axes=(0, None))(jax.random.split(k1), z)
    gs = jax.random.normal(k2, (8, model.state_space.flat_dim))
    feats = jax.random.normal(k3, (8, model.num_agents, model.nets.act_dim))
    want = model.critic_apply(critic, gs, feats)
    got = model.critic_apply_split(critic, model.critic_state_part(critic, gs), feats)
    assert got.shape == want.shape == (2, 8)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def test_used_entries_only_counts_the_roles_own_action_entries():
    """Speaker-listener: the speaker reads entries 0-2, the listener 1-4. With
    `used_entries_only`, log-probs ignore the other entries, the default target entropy is
    -(used entries) per agent, and the critic sees zeros in the unused entries."""
    from marljax.agents.sac import make_sac_model
    from marljax.agents.sac.agent import temperature_step

    env, params = marljax.make("particle/simple_speaker_listener_continuous-v0")
    used = np.asarray(env.action_entries_used, np.float32)
    np.testing.assert_array_equal(used, [[1, 1, 1, 0, 0], [0, 1, 1, 1, 1]])
    cfg = SACConfig(hidden_sizes=(8,), auto_alpha=True, used_entries_only=True)
    model = make_sac_model(cfg, env, params)
    assert (
        make_sac_model(dataclasses.replace(cfg, used_entries_only=False), env, params).used is None
    )
    np.testing.assert_array_equal(model.used, used)
    a = jnp.full((4, 2, 5), 0.5)
    np.testing.assert_array_equal(model.features(a), np.broadcast_to(0.5 * used, (4, 2, 5)))
    np.testing.assert_array_equal(
        model.features(a[:, 0], 0), np.broadcast_to(0.5 * used[0], (4, 5))
    )
    # sampled log-probs of both agents equal the density of their used entries
    out = jnp.tile(jnp.linspace(-0.5, 0.2, 10), (3, 2, 1))  # [B, A, 2D], unsaturated samples
    acts, logp = model.policy(out, model.used).sample_and_log_prob(jax.random.PRNGKey(0))
    for i in range(2):
        keep = used[i] > 0
        mean, log_std = np.split(np.asarray(out[:, i]), 2, axis=-1)
        sub = marljax.nn.distributions.TanhGaussian(
            mean[:, keep], np.clip(log_std[:, keep], -20, 2)
        )
        np.testing.assert_allclose(logp[:, i], sub.log_prob(acts[:, i][:, keep]), rtol=1e-4)
    # the temperature step pushes each agent towards -(its used entries): -3 and -4 nats.
    state = make_sac(cfg, env, params).init(jax.random.PRNGKey(0), SACHParams())
    hp = SACHParams(alpha_lr=1.0)
    at_target = temperature_step(model, state, jnp.array([3.0, 4.0]), hp, None)
    np.testing.assert_allclose(at_target.log_alpha, state.log_alpha, atol=1e-6)
    above = temperature_step(model, state, jnp.array([3.5, 3.5]), hp, None)  # entropy -3.5
    moved = np.asarray(above.log_alpha - state.log_alpha)
    assert moved[0] > 0 > moved[1]  # speaker below its target (-3), listener above (-4)


# ----------------------------------------------------------------------------- bad input


def test_bad_input_raises_before_compile():
    cont, cont_params = marljax.make("particle/simple_spread_continuous-v0")
    disc, disc_params = marljax.make("matrix/climbing-v0")
    with pytest.raises(ValueError, match="continuous actions"):
        make_sac(SACConfig(action_type="discrete"), cont, cont_params)
    with pytest.raises(ValueError, match="discrete actions"):
        make_sac(SACConfig(action_type="continuous"), disc, disc_params)
    with pytest.raises(ValueError, match="wrong sign"):
        make_sac(SACConfig(target_entropy=5.0), cont, cont_params)
    with pytest.raises(ValueError, match="discrete actions"):
        make_sac(SACConfig(target_entropy=-3.0), disc, disc_params)
    with pytest.raises(ValueError, match="larger than the replay buffer"):
        SACConfig(batch_size=512, buffer_size=256)
    with pytest.raises(ValueError, match="parameter_mode"):
        SACConfig(parameter_mode="stacked")
    # from the CLI / YAML the target entropy arrives as text
    assert SACConfig(target_entropy="-2").target_entropy == -2.0
    assert SACConfig(target_entropy="none").target_entropy is None
    with pytest.raises(ValueError, match="number or none"):
        SACConfig(target_entropy="high")
