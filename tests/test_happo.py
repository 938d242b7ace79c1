"""HAPPO / HATRPO: one agent is MAPPO, the factor-1 loss is MAPPO's, HATRPO's trust region,
end-to-end training on discrete and continuous spread, and refused inputs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.agents import algo_spec
from marljax.agents.happo import (
    HAPPOConfig,
    HAPPOHParams,
    conjugate_gradient,
    happo_loss,
    line_search,
    make_happo,
)
from marljax.agents.happo.agent import hatrpo_actor_step
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo, ppo_loss
from marljax.agents.ppo import agent as ppo_agent
from marljax.core import spaces
from marljax.training import TrainConfig, make_train, rollout

SPREAD = "particle/simple_spread-v0"
TINY = dict(hidden_sizes=(16,), num_epochs=2, num_minibatches=2)
E, T = 4, 8


def collect(env, params, agent, state, hp, key):
    """A `[T, E]` rollout of `agent` (the learner's `Trajectory`)."""
    vec_env = rollout.batched_env(env)
    carry = agent.initial_carry(E)
    rs = rollout.reset(vec_env, params, key, key, E, carry)
    final, transitions = rollout.rollout(vec_env, params, agent, state, hp, rs, T)
    return rollout.to_trajectory(transitions, final, carry)


# ----------------------------------------------------------------------- one agent is MAPPO


@pytest.fixture(scope="module")
def one_agent_updates():
    env, params = marljax.make(SPREAD, num_agents=1)
    mappo = make_ppo(PPOConfig(critic_input="global", parameter_mode="shared", **TINY), env, params)
    happo = make_happo(HAPPOConfig(parameter_mode="shared", **TINY), env, params)
    # a clip that never binds: MAPPO clips the actor's and critic's joint gradient norm, HAPPO
    # (HARL's two optimisers) each one's own
    hp_m, hp_h = PPOHParams(max_grad_norm=1e9), HAPPOHParams(max_grad_norm=1e9)
    key_init, key_roll, key_update = jax.random.split(jax.random.PRNGKey(3), 3)

    @jax.jit
    def run():
        s_m = mappo.init(key_init, hp_m)
        s_h = happo.init(key_init, hp_h)
        s_h = s_h.replace(actor_params=s_m.actor_params, critic_params=s_m.critic_params)
        traj = collect(env, params, mappo, s_m, hp_m, key_roll)
        new_m, met_m = mappo.update(s_m, traj, hp_m, key_update)
        new_h, met_h = happo.update(s_h, traj, hp_h, key_update)
        return s_m, new_m, met_m, new_h, met_h

    return run()


def test_one_agent_happo_is_mappos_update(one_agent_updates):
    before, new_m, met_m, new_h, met_h = one_agent_updates
    moved = jax.tree.leaves(jax.tree.map(lambda a, b: jnp.abs(a - b).max(), before.actor_params,
                                         new_m.actor_params))  # fmt: skip
    assert max(float(m) for m in moved) > 1e-4  # the update did something
    for a, b in zip(jax.tree.leaves((new_m.actor_params, new_m.critic_params)),
                    jax.tree.leaves((new_h.actor_params, new_h.critic_params))):  # fmt: skip
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for name in ("policy_loss", "value_loss", "entropy", "approx_kl", "value_mean"):
        np.testing.assert_allclose(met_m[name], met_h[name], rtol=1e-5, atol=1e-7)


# ----------------------------------------------------------------------- the loss with M = 1


def test_happo_loss_with_factor_one_is_mappos_clipped_loss():
    k = jax.random.split(jax.random.PRNGKey(0), 4)
    shape = (5, 6)
    lp = jax.random.normal(k[0], shape) * 0.3
    old = jax.random.normal(k[1], shape) * 0.3
    adv = jax.random.normal(k[2], shape)
    ent = jnp.abs(jax.random.normal(k[3], shape))
    v = jnp.zeros(shape)
    kw = dict(clip_eps=0.2, ent_coef=0.01, normalize_advantages=True)
    for fn in (happo_loss, jax.jit(happo_loss, static_argnames="normalize_advantages")):
        h, hm = fn(lp, old, adv, jnp.ones(shape), ent, **kw)
        p, pm = ppo_loss(lp, old, adv, v, v, v, ent, value_clip_eps=None, vf_coef=0.0, **kw)
        np.testing.assert_allclose(h, p, rtol=1e-6)
        for name in ("policy_loss", "entropy", "approx_kl", "clip_fraction"):
            np.testing.assert_allclose(hm[name], pm[name], rtol=1e-6)
    grad_h = jax.grad(lambda x: happo_loss(x, old, adv, jnp.ones(shape), ent, **kw)[0])(lp)
    grad_p = jax.grad(lambda x: ppo_loss(x, old, adv, v, v, v, ent, value_clip_eps=None,
                                         vf_coef=0.0, **kw)[0])(lp)  # fmt: skip
    np.testing.assert_allclose(grad_h, grad_p, rtol=1e-6)
    # M scales the (normalised) advantage: M = 2 is the loss of doubled advantages, unnormalised
    h2, _ = happo_loss(
        lp, old, adv, 2 * jnp.ones(shape), ent, **{**kw, "normalize_advantages": False}
    )
    p2, _ = ppo_loss(lp, old, 2 * adv, v, v, v, ent, value_clip_eps=None, vf_coef=0.0,
                     **{**kw, "normalize_advantages": False})  # fmt: skip
    np.testing.assert_allclose(h2, p2, rtol=1e-6)


# ----------------------------------------------------------------------- HATRPO's trust region


def test_conjugate_gradient_solves_a_spd_system():
    m = jax.random.normal(jax.random.PRNGKey(0), (6, 6))
    f = m @ m.T + 0.5 * jnp.eye(6)
    b = jnp.arange(6.0)
    x = conjugate_gradient(lambda v: f @ v, b, 12)
    np.testing.assert_allclose(f @ x, b, atol=1e-3)


def test_line_search_takes_the_first_accepted_step_or_none():
    # surrogate = theta, KL = theta^2 / 2: a step of 1 has KL 0.5, of 0.5 has KL 0.125
    evaluate = lambda th: (th[0], 0.5 * th[0] ** 2)  # noqa: E731
    kw = dict(accept_ratio=0.5, backtrack_coeff=0.5, num_steps=4)
    frac, m = line_search(evaluate, jnp.zeros(1), jnp.ones(1), 0.0, 1.0, kl_threshold=0.2, **kw)
    assert float(frac) == 0.5 and float(m["step_accepted"]) == 1.0
    assert float(m["kl"]) <= 0.2 and float(m["surrogate_improve"]) > 0
    frac, m = line_search(evaluate, jnp.zeros(1), jnp.ones(1), 0.0, 1.0, kl_threshold=1e-6, **kw)
    assert float(frac) == 0.0 and float(m["step_accepted"]) == 0.0


@pytest.fixture(scope="module")
def hatrpo_case():
    """Agent 0's HATRPO step on a spread rollout, for a usual and a tiny KL bound."""
    env, params = marljax.make(SPREAD)
    config = HAPPOConfig(actor_update="trpo", **TINY)
    agent = make_happo(config, env, params)
    parts = agent.update.args[0]
    ppo = parts.ppo
    hp = HAPPOHParams()
    key_init, key_roll = jax.random.split(jax.random.PRNGKey(1))
    state = agent.init(key_init, hp)
    traj = collect(env, params, agent, state, hp, key_roll)
    adv, _, targets, old_values, _ = ppo_agent.advantages_and_targets(ppo, state, traj, hp)
    batch = ppo_agent.rollout_batch(ppo, traj, adv, targets, old_values)
    batch["factor"] = jnp.ones((T, E))
    p0 = jax.tree.map(lambda x: x[0], state.actor_params)

    @jax.jit
    def step(kl_threshold):
        hp_k = hp.replace(kl_threshold=kl_threshold)
        p1, _, metrics = hatrpo_actor_step(ppo, p0, (), 0, batch, traj.initial_carry, hp_k, None)
        return p1, metrics

    return p0, step(0.01), step(1e-12)


def test_hatrpo_accepted_step_keeps_the_kl_bound_and_improves(hatrpo_case):
    p0, (p1, m), _ = hatrpo_case
    assert float(m["step_accepted"]) == 1.0
    assert 0.0 < float(m["kl"]) <= 0.01
    assert float(m["surrogate_improve"]) > 0.0
    moved = max(
        float(jnp.abs(a - b).max()) for a, b in zip(jax.tree.leaves(p0), jax.tree.leaves(p1))
    )
    assert moved > 0.0


def test_hatrpo_rejected_line_search_leaves_the_actor_unchanged(hatrpo_case):
    p0, _, (p1, m) = hatrpo_case
    assert float(m["step_accepted"]) == 0.0 and float(m["step_fraction"]) == 0.0
    for a, b in zip(jax.tree.leaves(p0), jax.tree.leaves(p1)):
        np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------- end to end


@pytest.mark.parametrize(
    "algo, env_id",
    [("happo", SPREAD), ("hatrpo", SPREAD), ("happo", "particle/simple_spread_continuous-v0")],
)
def test_trains_end_to_end_with_finite_metrics(algo, env_id):
    env, params = marljax.make(env_id)
    spec = algo_spec(algo)
    agent = spec.factory(spec.config_cls(**spec.config_defaults, **TINY), env, params)
    trainer = make_train(TrainConfig(num_envs=E, rollout_len=T, total_env_steps=E * T * 3), env,
                         agent, params)  # fmt: skip
    state, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0), spec.hparams_cls())
    assert int(state.agent_state.num_updates) == 3
    for name in ("value_loss", "factor_mean", "value_mean"):
        assert np.all(np.isfinite(np.asarray(metrics[name]))), name
    per_agent = "policy_loss" if algo == "happo" else "step_accepted"
    assert np.all(np.isfinite(np.asarray(metrics[per_agent])))
    leaves = jax.tree.leaves(state.agent_state.actor_params)
    assert all(x.shape[0] == env.num_agents for x in leaves)  # one actor per agent


def test_agent_order_is_a_fresh_permutation_unless_fixed():
    from marljax.agents.sac.agent import agent_order

    orders = {tuple(np.asarray(agent_order(jax.random.PRNGKey(s), 3, False))) for s in range(8)}
    assert len(orders) > 1 and all(sorted(o) == [0, 1, 2] for o in orders)


# ----------------------------------------------------------------------- refused inputs


class _MultiDiscreteSpread:
    """simple spread with its action space replaced by a MultiDiscrete one."""

    def __init__(self):
        self.env, _ = marljax.make(SPREAD)
        self.num_agents = self.env.num_agents

    def __getattr__(self, name):
        return getattr(self.env, name)

    def action_space(self, params):
        return spaces.MultiDiscrete((2, 3))


@pytest.mark.parametrize("actor_update, name", [("ppo", "HAPPO"), ("trpo", "HATRPO")])
def test_unsupported_action_space_is_refused_by_name(actor_update, name):
    env = _MultiDiscreteSpread()
    with pytest.raises(ValueError, match=f"{name} supports Discrete and Box.*MultiDiscrete"):
        make_happo(HAPPOConfig(actor_update=actor_update), env)


def test_bad_configs_are_refused():
    with pytest.raises(ValueError, match="critic_input must be 'global'"):
        HAPPOConfig(critic_input="local")
    with pytest.raises(ValueError, match="graph must be 'none'"):
        HAPPOConfig(graph="chain")
    with pytest.raises(ValueError, match="actor_update"):
        HAPPOConfig(actor_update="sgd")
