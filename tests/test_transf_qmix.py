"""TransfQMIX: its mixing and loss equal a hand computation, Q_tot is monotonic in every agent's
value, the agent transformer ignores the order of the entity tokens, spread's entity tokens are
the world's geometry, an env without entity tokens is refused by name, and on a one-agent spread
the greedy return improves with training (Gallici, Martin & Masmitja 2023)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.agents import algo_spec, preset
from marljax.agents.transf_qmix import (
    TransformerAgent,
    TransformerMixer,
    TransfQMIXConfig,
    TransfQMIXHParams,
    entity_shapes,
    make_transf_qmix,
    monotonic_mix,
    transf_qmix_loss,
)
from marljax.training.train import TrainConfig, make_train

TINY = dict(
    embed_dim=8, agent_heads=2, mixer_heads=2, agent_ff=16, mixer_ff=16, agent_layers=1,
    mixer_layers=1,
)  # fmt: skip


@pytest.mark.parametrize("jit", [False, True])
def test_monotonic_mix_and_loss_equal_a_hand_computation(jit):
    q_a = jnp.array([[1.0, -2.0]])  # [1, A=2]
    w1 = jnp.array([[[0.5, -1.0], [2.0, 0.0]]])  # [1, A, H=2]: |W_1| = [[0.5, 1], [2, 0]]
    main = jnp.array([[-1.0, 3.0]])  # b_1 = [-1, 3], |w_2| = [1, 3]
    b2 = jnp.array([0.25])
    mix = jax.jit(monotonic_mix) if jit else monotonic_mix
    # hidden pre-activation: 1 * [0.5, 1] - 2 * [2, 0] + [-1, 3] = [-4.5, 4]
    elu = np.array([np.expm1(-4.5), 4.0])
    np.testing.assert_allclose(np.asarray(mix(q_a, w1, main, b2)), [elu @ [1, 3] + 0.25], 1e-6)

    q_tot, targets = jnp.array([[1.0, 2.0], [0.0, -1.0]]), jnp.array([[0.0, 2.0], [2.0, -1.0]])
    loss_fn = jax.jit(transf_qmix_loss) if jit else transf_qmix_loss
    loss, m = loss_fn(q_tot, targets)
    np.testing.assert_allclose(float(loss), 0.5 * (1 + 0 + 4 + 0) / 4, rtol=1e-6)
    assert float(m["target_mean"]) == pytest.approx(0.75)
    g = jax.grad(lambda y: transf_qmix_loss(q_tot, y)[0])(targets)
    np.testing.assert_allclose(np.asarray(g), 0.0)  # no gradient into the targets
    with pytest.raises(AssertionError):
        transf_qmix_loss(q_tot, targets[:1])


def test_mixer_is_monotonic_in_every_agent_value():
    """dQ_tot/dq_a >= 0 for random parameters, states, hidden tokens and values."""
    T, B, A, H = 3, 5, 3, 8
    mixer = TransformerMixer(H, 2, 16, 1, init_scale=1.0)
    k = jax.random.split(jax.random.PRNGKey(1), 5)
    q_a = 3.0 * jax.random.normal(k[0], (T, B, A))
    h_a = jax.random.normal(k[1], (T, B, A, H))
    state = jax.random.normal(k[2], (T, B, 4, 5))
    resets = jnp.zeros((T, B), bool).at[0].set(True)
    init = jax.jit(lambda key: mixer.init(key, q_a, h_a, state, resets))
    grad_fn = jax.jit(jax.grad(lambda p, q: mixer.apply(p, q, h_a, state, resets).sum(), 1))
    for key in jax.random.split(k[3], 3):  # three random mixers
        grads = grad_fn(init(key), q_a)  # [T, B, A]
        assert float(grads.min()) >= 0.0 and float(grads.max()) > 0.0


def test_agent_ignores_the_order_of_entity_tokens():
    """No positional encoding: permuting the entity tokens leaves Q and the hidden token alone."""
    T, B, K, F, H = 4, 2, 5, 3, 8
    net = TransformerAgent(K, H, 2, 16, 1, num_actions=4)
    key_x, key_p = jax.random.split(jax.random.PRNGKey(2))
    tokens = jax.random.normal(key_x, (T, B, K, F))
    resets = jnp.zeros((T, B), bool).at[0].set(True)
    carry = jnp.zeros((B, H))
    params = jax.jit(net.init)(key_p, carry, tokens.reshape(T, B, -1), resets)
    apply = jax.jit(net.apply)
    c1, (q1, h1) = apply(params, carry, tokens.reshape(T, B, -1), resets)
    perm = tokens[:, :, jnp.array([3, 0, 4, 2, 1])]
    c2, (q2, h2) = apply(params, carry, perm.reshape(T, B, -1), resets)
    np.testing.assert_allclose(np.asarray(q1), np.asarray(q2), atol=1e-5)
    np.testing.assert_allclose(np.asarray(c1), np.asarray(c2), atol=1e-5)
    assert float(jnp.abs(q1[1:] - q1[:-1]).max()) > 1e-4  # the hidden token carries something
    ff = TransformerAgent(K, H, 2, 16, 1, num_actions=4, recurrent=False)
    _, (q_ff, _) = jax.jit(ff.apply)(
        params, carry, jnp.repeat(tokens[:1], T, 0).reshape(T, B, -1), resets
    )
    np.testing.assert_allclose(np.asarray(q_ff[1:]), np.asarray(q_ff[:-1]), atol=1e-6)


def test_spread_entity_tokens_are_the_world_geometry():
    env, params = marljax.make("particle/simple_spread-v0", num_agents=3, num_landmarks=2)
    state, ts = jax.jit(env.reset)(jax.random.PRNGKey(3), params)
    obs_tok, state_tok = env.entity_obs(ts.obs), env.entity_state(ts.global_state)
    assert obs_tok.shape == (3, 1 + 2 + 2, 4) and state_tok.shape == (3 + 2, 5)
    pos, lm = np.asarray(state.agent_pos), np.asarray(state.landmark_pos)
    np.testing.assert_allclose(np.asarray(obs_tok[:, 0]), [[0, 0, 1, 1]] * 3)
    np.testing.assert_allclose(np.asarray(obs_tok[1, 1:3, :2]), lm - pos[1], atol=1e-6)
    np.testing.assert_allclose(np.asarray(obs_tok[1, 3:, :2]), pos[[0, 2]] - pos[1], atol=1e-6)
    np.testing.assert_allclose(np.asarray(obs_tok[1, 3:, 2:]), [[0, 1], [0, 1]])
    np.testing.assert_allclose(np.asarray(state_tok[:3, :2]), pos, atol=1e-6)
    np.testing.assert_allclose(np.asarray(state_tok[3:, :2]), lm, atol=1e-6)
    np.testing.assert_allclose(np.asarray(state_tok[:, 4]), [1, 1, 1, 0, 0])
    lbf, lparams = marljax.make("grid/lbf-8x8-2p-2f-coop-v0")
    _, lts = jax.jit(lbf.reset)(jax.random.PRNGKey(3), lparams)
    tok = lbf.entity_obs(lts.obs)  # [A, F + A, 5]: food, self, other
    np.testing.assert_allclose(np.asarray(tok[..., :3]).reshape(2, -1), np.asarray(lts.obs))
    np.testing.assert_allclose(np.asarray(tok[0, :, 3:]), [[0, 0], [0, 0], [1, 1], [1, 0]])
    assert entity_shapes(lbf, lparams) == ((4, 5), (4, 5))


def test_bad_inputs_are_refused_before_compile():
    env, params = marljax.make("matrix/climbing-v0")
    with pytest.raises(ValueError, match="entity tokens.*MatrixGame"):
        make_transf_qmix(TransfQMIXConfig(sequence_len=1), env, params)
    cont, cparams = marljax.make("particle/simple_spread-v0", continuous=True)
    with pytest.raises(ValueError, match="discrete actions"):
        make_transf_qmix(TransfQMIXConfig(), cont, cparams)
    grid, gparams = marljax.make("grid/lbf-8x8-2p-2f-coop-v0", grid_observation=True)
    with pytest.raises(ValueError, match="LevelBasedForaging: entity tokens need the vector"):
        make_transf_qmix(TransfQMIXConfig(sequence_len=10), grid, gparams)
    with pytest.raises(ValueError, match="shared_id"):
        TransfQMIXConfig(parameter_mode="shared_id")
    with pytest.raises(ValueError, match="embed_dim = 12 is not divisible by agent_heads = 8"):
        TransfQMIXConfig(embed_dim=12)
    with pytest.raises(ValueError, match="mixer"):
        TransfQMIXConfig(mixer="qmix")
    spec = algo_spec("transf_qmix")
    assert spec.config_cls is TransfQMIXConfig and "jaxmarl" in spec.presets
    assert preset("transf_qmix", "jaxmarl").train == dict(
        num_envs=8, rollout_len=25, total_env_steps=10_000_000
    )


UPDATES, NUM_ENVS, STEPS = 120, 8, 10


@pytest.fixture(scope="module")
def trained():
    """One agent, one landmark, 10-step episodes: 120 updates of 8 episodes, 4 gradient steps
    each. The training-episode return goes from about -5.2 (random walk) to about -4.0."""
    env, params = marljax.make("particle/simple_spread-v0", num_agents=1, num_landmarks=1)
    params = dataclasses.replace(params, max_steps=jnp.int32(STEPS))
    cfg = TransfQMIXConfig(
        **TINY, sequence_len=STEPS, batch_size=16, buffer_size=256, target_update_interval=20,
        gradient_steps=4,
    )  # fmt: skip
    agent = make_transf_qmix(cfg, env, params)
    trainer = make_train(
        TrainConfig(
            num_envs=NUM_ENVS, rollout_len=STEPS, total_env_steps=NUM_ENVS * STEPS * UPDATES
        ),
        env,
        agent,
        params,
    )
    hp = TransfQMIXHParams(lr=3e-3, eps_anneal_steps=NUM_ENVS * STEPS * UPDATES * 0.5)
    state, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0), hp)
    return agent, state, metrics


def test_training_improves_the_return_on_a_one_agent_spread(trained):
    agent, state, metrics = trained
    ret = np.asarray(metrics["episode_return"])
    assert np.isfinite(np.asarray(metrics["loss"])).all()
    assert float(np.asarray(metrics["learning"])[-1]) == 1.0
    first, last = ret[:10].mean(), ret[-10:].mean()
    assert last > first + 0.6, (first, last)
    p = agent.get_params(state.agent_state)
    assert p.critic and p.policy
