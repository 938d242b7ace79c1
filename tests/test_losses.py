"""Tests for `marljax.nn.losses`: hand-computed small cases, each run jitted and un-jitted."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from marljax.nn import losses

JIT = pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])


def variant(fn, jit: bool, **static):
    """`fn` with `static` keyword arguments bound, jitted or not."""
    fn = functools.partial(fn, **static)
    return jax.jit(fn) if jit else fn


def f32(x) -> jax.Array:
    return jnp.asarray(x, dtype=jnp.float32)


# ----------------------------------------------------------------------------------------------
# Brute-force Python references (used only in addition to hand-computed numbers).
# ----------------------------------------------------------------------------------------------


def gae_loop(r, v, v_next, discount, done, lam):
    T = len(r)
    adv = np.zeros(T)
    next_adv = 0.0
    for t in reversed(range(T)):
        delta = r[t] + discount[t] * v_next[t] - v[t]
        next_adv = delta + lam * discount[t] * (1.0 - done[t]) * next_adv
        adv[t] = next_adv
    return adv, adv + np.asarray(v)


def n_step_loop(r, discount, v, n):
    T = len(r)
    out = np.zeros(T)
    for t in range(T):
        m = min(n, T - t)
        g, scale = 0.0, 1.0
        for k in range(m):
            g += scale * r[t + k]
            scale *= discount[t + k]
        out[t] = g + scale * v[t + m - 1]
    return out


# ----------------------------------------------------------------------------------------------
# GAE
# ----------------------------------------------------------------------------------------------

# One rollout of T = 5 steps, gamma = 0.5, lambda = 0.5:
#   t=0 normal; t=1 terminates; t=2 is truncated (time limit); t=3 normal; t=4 last rollout step.
GAE_R = [1.0, 3.0, 3.0, 4.0, 5.0]
GAE_V = [1.0, 2.0, 0.0, 1.0, 2.0]
# v_next at t=1 is the terminal observation's value (must be ignored); at t=2 the value of the
# truncated episode's final observation (must be used); at t=4 the bootstrap for the rollout.
GAE_V_NEXT = [2.0, 100.0, 4.0, 2.0, 3.0]
GAE_DISCOUNT = [0.5, 0.0, 0.5, 0.5, 0.5]
GAE_DONE = [False, True, True, False, False]


@JIT
def test_gae_termination_and_truncation(jit):
    # delta = r + discount * v_next - v = [1+1-1, 3+0-2, 3+2-0, 4+1-1, 5+1.5-2] = [1, 1, 5, 4, 4.5]
    # A_4 = 4.5
    # A_3 = 4 + 0.5*0.5*1*4.5 = 5.125
    # A_2 = 5 + 0.25*(1-1)*A_3 = 5        (truncation: bootstrapped on 4, recursion cut)
    # A_1 = 1 + 0*(...) = 1               (termination: no bootstrap on 100)
    # A_0 = 1 + 0.25*1*A_1 = 1.25
    expected_adv = [1.25, 1.0, 5.0, 5.125, 4.5]
    expected_ret = [2.25, 3.0, 5.0, 6.125, 6.5]  # A + v
    fn = variant(losses.gae, jit)
    adv, ret = fn(
        f32(GAE_R), f32(GAE_V), f32(GAE_V_NEXT), f32(GAE_DISCOUNT), jnp.asarray(GAE_DONE), 0.5
    )
    np.testing.assert_allclose(adv, expected_adv, rtol=1e-6)
    np.testing.assert_allclose(ret, expected_ret, rtol=1e-6)
    # Float done flags and a traced lambda give the same answer.
    done_f = jnp.asarray(GAE_DONE, jnp.float32)
    adv_f, _ = fn(f32(GAE_R), f32(GAE_V), f32(GAE_V_NEXT), f32(GAE_DISCOUNT), done_f, f32(0.5))
    np.testing.assert_allclose(adv_f, expected_adv, rtol=1e-6)


def normal(seed, shape, loc=0.0, scale=1.0) -> jax.Array:
    # numpy draws keep the un-jitted variants free of per-shape PRNG compilations.
    return f32(np.random.default_rng(seed).normal(loc, scale, shape))


def _random_rollout(seed, shape, p_term=0.2, p_trunc=0.0, gamma=0.9):
    rng = np.random.default_rng(seed)
    r, v, v_boot = (rng.normal(size=shape) for _ in range(3))
    terminated = rng.random(shape) < p_term
    truncated = (rng.random(shape) < p_trunc) & ~terminated
    done = terminated | truncated
    # A consistent rollout: v_next_t = v_{t+1} inside an episode, arbitrary at episode ends.
    v_next = np.where(done, v_boot, np.concatenate([v[1:], v_boot[-1:]]))
    discount = gamma * (1.0 - terminated)
    return f32(r), f32(v), f32(v_next), f32(discount), jnp.asarray(done)


@JIT
def test_gae_lambda_one_is_discounted_return(jit):
    # Terminations only (no truncation): with lambda = 1 the GAE returns are the Monte-Carlo
    # returns bootstrapped on the final v_next.
    r, v, v_next, discount, done = _random_rollout(0, (12,), p_term=0.25)
    assert bool(done.any())
    _, ret = variant(losses.gae, jit)(r, v, v_next, discount, done, 1.0)
    mc = losses.discounted_returns(r, discount, v_T=v_next[-1])
    np.testing.assert_allclose(ret, mc, rtol=1e-5, atol=1e-6)


@JIT
def test_gae_lambda_zero_is_one_step_td(jit):
    r, v, v_next, discount, done = _random_rollout(1, (6, 3), p_trunc=0.2)
    adv, ret = variant(losses.gae, jit)(r, v, v_next, discount, done, 0.0)
    np.testing.assert_allclose(adv, r + discount * v_next - v, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ret, r + discount * v_next, rtol=1e-5, atol=1e-6)


@JIT
def test_gae_trailing_batch_axes(jit):
    T, E, A = 7, 3, 2
    r, v, v_next, discount, done = _random_rollout(2, (T, E, A), p_term=0.15, p_trunc=0.15)
    adv, ret = variant(losses.gae, jit)(r, v, v_next, discount, done, 0.8)
    assert adv.shape == ret.shape == (T, E, A)
    arrays = [np.asarray(x, np.float64) for x in (r, v, v_next, discount, done)]
    adv, ret = np.asarray(adv), np.asarray(ret)
    for e in range(E):
        for a in range(A):
            exp_adv, exp_ret = gae_loop(*(x[:, e, a] for x in arrays), 0.8)
            np.testing.assert_allclose(adv[:, e, a], exp_adv, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(ret[:, e, a], exp_ret, rtol=1e-5, atol=1e-5)
    # The hand case, tiled over [T, E, A] with a per-(e, a) lambda array, matches too.
    tile = lambda x: jnp.broadcast_to(jnp.asarray(x)[:, None, None], (5, E, A))  # noqa: E731
    adv_t, _ = variant(losses.gae, jit)(
        tile(f32(GAE_R)),
        tile(f32(GAE_V)),
        tile(f32(GAE_V_NEXT)),
        tile(f32(GAE_DISCOUNT)),
        tile(jnp.asarray(GAE_DONE)),
        jnp.full((E, A), 0.5),
    )
    np.testing.assert_allclose(adv_t[:, 1, 1], [1.25, 1.0, 5.0, 5.125, 4.5], rtol=1e-6)


# ----------------------------------------------------------------------------------------------
# lambda-returns, n-step returns, discounted returns
# ----------------------------------------------------------------------------------------------


@JIT
def test_lambda_returns_hand(jit):
    r, discount, v = f32([1.0, 2.0, 3.0]), f32([0.5, 0.0, 0.5]), f32([4.0, 6.0, 8.0])
    # G_3 := v_2 = 8
    # G_2 = 3 + 0.5 * (0.5*8 + 0.5*8) = 7
    # G_1 = 2 + 0 * (...) = 2
    # G_0 = 1 + 0.5 * (0.5*4 + 0.5*2) = 2.5
    g = variant(losses.lambda_returns, jit)(r, discount, v, 0.5)
    np.testing.assert_allclose(g, [2.5, 2.0, 7.0], rtol=1e-6)


@JIT
def test_lambda_returns_array_lambda(jit):
    r, discount, v = f32([1.0, 2.0, 3.0]), f32([0.5, 0.5, 0.5]), f32([4.0, 6.0, 8.0])
    lam = f32([0.0, 1.0, 0.5])
    # G_2 = 3 + 0.5 * (0.5*8 + 0.5*8) = 7
    # G_1 = 2 + 0.5 * (0*6 + 1*7) = 5.5
    # G_0 = 1 + 0.5 * (1*4 + 0*5.5) = 3
    g = variant(losses.lambda_returns, jit)(r, discount, v, lam)
    np.testing.assert_allclose(g, [3.0, 5.5, 7.0], rtol=1e-6)


@JIT
def test_lambda_returns_lambda_one_is_discounted_return(jit):
    r, v, _, discount, _ = _random_rollout(3, (9, 2, 3))
    g = variant(losses.lambda_returns, jit)(r, discount, v, 1.0)
    np.testing.assert_allclose(
        g, losses.discounted_returns(r, discount, v_T=v[-1]), rtol=1e-5, atol=1e-6
    )
    # lambda = 0 is the one-step target.
    g0 = variant(losses.lambda_returns, jit)(r, discount, v, 0.0)
    np.testing.assert_allclose(g0, r + discount * v, rtol=1e-5, atol=1e-6)


N_R, N_D, N_V = [1.0, 2.0, 3.0, 4.0], [0.5, 0.5, 0.0, 0.5], [10.0, 20.0, 30.0, 40.0]


@JIT
@pytest.mark.parametrize(
    "n, expected",
    [
        # n=1: r + d*v = [1+5, 2+10, 3+0, 4+20]
        (1, [6.0, 12.0, 3.0, 24.0]),
        # n=2: G_t = r_t + d_t r_{t+1} + d_t d_{t+1} v_{t+1}
        #   G_0 = 1 + 0.5*2 + 0.25*20 = 7;  G_1 = 2 + 0.5*3 + 0.5*0*30 = 3.5;  G_2 = 3 + 0 = 3
        #   G_3 runs off the end: 4 + 0.5*v_3 = 24
        (2, [7.0, 3.5, 3.0, 24.0]),
        # n=3: G_0 = 1 + 0.5*2 + 0.25*3 + 0.25*0*v_2 = 2.75;  the rest as for n=2
        (3, [2.75, 3.5, 3.0, 24.0]),
    ],
)
def test_n_step_returns_hand(jit, n, expected):
    g = variant(losses.n_step_returns, jit, n=n)(f32(N_R), f32(N_D), f32(N_V))
    np.testing.assert_allclose(g, expected, rtol=1e-6)


@JIT
def test_n_step_returns_random_and_limits(jit):
    T, shape = 6, (6, 4)
    r, v, _, discount, _ = _random_rollout(4, shape)
    for n in (1, 2, 4, T, T + 3):
        g = variant(losses.n_step_returns, jit, n=n)(r, discount, v)
        assert g.shape == shape
        g, arrays = np.asarray(g), [np.asarray(x, np.float64) for x in (r, discount, v)]
        for b in range(shape[1]):
            expected = n_step_loop(*(x[:, b] for x in arrays), n)
            np.testing.assert_allclose(g[:, b], expected, rtol=1e-5, atol=1e-5)
    # n = 1 is one-step TD; n >= T is the discounted return bootstrapped on v_{T-1}.
    g1 = variant(losses.n_step_returns, jit, n=1)(r, discount, v)
    np.testing.assert_allclose(g1, r + discount * v, rtol=1e-5, atol=1e-6)
    g_long = variant(losses.n_step_returns, jit, n=T + 3)(r, discount, v)
    np.testing.assert_allclose(
        g_long, losses.discounted_returns(r, discount, v[-1]), rtol=1e-5, atol=1e-6
    )


@JIT
def test_discounted_returns_hand(jit):
    r, discount = f32([1.0, 2.0, 3.0]), f32([0.5, 0.0, 0.5])
    fn = variant(losses.discounted_returns, jit)
    # G_2 = 3 + 0.5*10 = 8;  G_1 = 2 + 0 = 2;  G_0 = 1 + 0.5*2 = 2
    np.testing.assert_allclose(fn(r, discount, 10.0), [2.0, 2.0, 8.0], rtol=1e-6)
    # Default v_T = 0: G_2 = 3
    np.testing.assert_allclose(fn(r, discount), [2.0, 2.0, 3.0], rtol=1e-6)
    # Per-column bootstrap with a trailing axis.
    r2 = jnp.stack([r, r], axis=1)
    d2 = jnp.stack([discount, discount], axis=1)
    g2 = fn(r2, d2, f32([0.0, 10.0]))
    np.testing.assert_allclose(g2, [[2.0, 2.0], [2.0, 2.0], [3.0, 8.0]], rtol=1e-6)


def test_stop_target_gradients():
    r, discount, v = f32([1.0, 2.0]), f32([0.5, 0.5]), f32([3.0, 4.0])

    def total(v, stop):
        return (
            losses.lambda_returns(r, discount, v, 0.5, stop_target_gradients=stop).sum()
            + losses.n_step_returns(r, discount, v, 2, stop_target_gradients=stop).sum()
        )

    np.testing.assert_array_equal(jax.grad(total)(v, True), [0.0, 0.0])
    assert np.abs(jax.grad(total)(v, False)).sum() > 0


# ----------------------------------------------------------------------------------------------
# PPO losses
# ----------------------------------------------------------------------------------------------

EPS = 0.2
# ratio, advantage ->   min(ratio*A, clip(ratio)*A)           branch taken
PPO_RATIO = [1.1, 1.5, 0.5, 0.5, 1.5, 0.9]
PPO_ADV = [2.0, 2.0, 2.0, -2.0, -2.0, -2.0]
PPO_OBJ = [
    2.2,  # 1.1*2 inside the clip range
    2.4,  # min(3.0, 1.2*2)        clipped (gradient 0)
    1.0,  # min(1.0, 0.8*2)        unclipped: the pessimistic term is the raw ratio
    -1.6,  # min(-1.0, 0.8*-2)      clipped (gradient 0)
    -3.0,  # min(-3.0, 1.2*-2)      unclipped
    -1.8,  # 0.9*-2 inside
]


@JIT
def test_ppo_clip_loss_hand(jit):
    log_prob = jnp.log(f32(PPO_RATIO))
    old = jnp.zeros(6)
    loss, info = variant(losses.ppo_clip_loss, jit)(log_prob, old, f32(PPO_ADV), EPS)
    # -(2.2 + 2.4 + 1.0 - 1.6 - 3.0 - 1.8) / 6 = 0.8 / 6
    np.testing.assert_allclose(loss, 0.8 / 6, rtol=1e-5)
    # |ratio - 1| > 0.2 for ratios 1.5, 0.5, 0.5, 1.5.
    np.testing.assert_allclose(info["clip_fraction"], 4 / 6, rtol=1e-6)
    kl = sum((p - 1.0) - math.log(p) for p in PPO_RATIO) / 6  # ~0.0975691
    np.testing.assert_allclose(info["approx_kl"], kl, rtol=1e-4)
    assert -np.mean(PPO_OBJ) == pytest.approx(0.8 / 6)


@JIT
def test_ppo_clip_loss_mask_and_traced_eps(jit):
    # Masking out entries 2 and 4 (and giving them absurd advantages) leaves
    # -(2.2 + 2.4 - 1.6 - 1.8) / 4 = -0.3.
    adv = f32([2.0, 2.0, 1e6, -2.0, -1e6, -2.0])
    mask = jnp.array([True, True, False, True, False, True])
    log_prob = jnp.log(f32(PPO_RATIO)) + 0.3
    old = jnp.full((6,), 0.3)
    fn = variant(losses.ppo_clip_loss, jit)
    loss, info = fn(log_prob, old, adv, f32(EPS), mask)
    np.testing.assert_allclose(loss, -0.3, rtol=1e-5)
    np.testing.assert_allclose(info["clip_fraction"], 2 / 4, rtol=1e-6)
    # A float mask behaves like the bool one.
    loss_f, _ = fn(log_prob, old, adv, f32(EPS), mask.astype(jnp.float32))
    np.testing.assert_allclose(loss_f, -0.3, rtol=1e-5)


@JIT
def test_ppo_clip_loss_gradient_zero_where_clipped(jit):
    log_prob = jnp.log(f32(PPO_RATIO))
    old = jnp.zeros(6)
    adv = f32(PPO_ADV)

    def loss_fn(lp):
        return losses.ppo_clip_loss(lp, old, adv, EPS)[0]

    grad = (jax.jit(jax.grad(loss_fn)) if jit else jax.grad(loss_fn))(log_prob)
    # d/dlogp of -ratio*A/6 is -ratio*A/6 on unclipped entries, 0 on clipped ones.
    expected = [-1.1 * 2 / 6, 0.0, -0.5 * 2 / 6, 0.0, 1.5 * 2 / 6, 0.9 * 2 / 6]
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-7)
    # No gradient flows into the old log-probabilities or advantages.
    g_old, g_adv = jax.grad(lambda o, a: losses.ppo_clip_loss(log_prob, o, a, EPS)[0], (0, 1))(
        old, adv
    )
    np.testing.assert_array_equal(g_old, 0.0)
    np.testing.assert_array_equal(g_adv, 0.0)


@JIT
def test_value_loss_hand(jit):
    values, old, returns = f32([1.9, 2.0, 3.0]), f32([1.0, 1.0, 3.0]), f32([2.0, 0.0, 2.5])
    fn = variant(losses.value_loss, jit)
    # Unclipped: (v - R)^2 = [0.01, 4, 0.25]; 0.5 * 4.26 / 3 = 0.71
    np.testing.assert_allclose(fn(values, old, returns), 0.71, rtol=1e-5)
    # Clipped, eps = 0.2: v - old = [0.9, 1, 0] -> [0.2, 0.2, 0]; v_clip = [1.2, 1.2, 3.0];
    # (v_clip - R)^2 = [0.64, 1.44, 0.25]; max with unclipped = [0.64, 4, 0.25];
    # 0.5 * 4.89 / 3 = 0.815
    np.testing.assert_allclose(fn(values, old, returns, 0.2), 0.815, rtol=1e-5)
    np.testing.assert_allclose(fn(values, old, returns, f32(0.2)), 0.815, rtol=1e-5)
    # Masking out the last entry: 0.5 * (0.64 + 4) / 2 = 1.16
    mask = jnp.array([1.0, 1.0, 0.0])
    np.testing.assert_allclose(fn(values, old, returns, 0.2, mask), 1.16, rtol=1e-5)


# ----------------------------------------------------------------------------------------------
# Normalisation
# ----------------------------------------------------------------------------------------------


@JIT
def test_masked_mean(jit):
    fn = variant(losses.masked_mean, jit)
    x = f32([1.0, 2.0, 3.0, jnp.inf])
    np.testing.assert_allclose(fn(x[:3]), 2.0)
    np.testing.assert_allclose(fn(x, jnp.array([True, False, True, False])), 2.0)
    # Float weights: (1*1 + 0.5*2 + 0*inf) / 1.5
    np.testing.assert_allclose(fn(x, f32([1.0, 0.5, 0.0, 0.0])), 2.0 / 1.5, rtol=1e-6)
    # Nothing valid: 0, not NaN.
    np.testing.assert_allclose(fn(x, jnp.zeros(4, bool)), 0.0)


@JIT
def test_normalize(jit):
    x = normal(5, (16, 4, 3), 3.0, 5.0)
    y = variant(losses.normalize, jit)(x)
    assert y.shape == x.shape
    np.testing.assert_allclose(jnp.mean(y), 0.0, atol=1e-5)
    np.testing.assert_allclose(jnp.std(y), 1.0, rtol=1e-5)
    # Hand case: [1, 3] -> mean 2, std 1 -> [-1, 1].
    np.testing.assert_allclose(
        variant(losses.normalize, jit)(f32([1.0, 3.0])), [-1.0, 1.0], rtol=1e-6
    )


@JIT
def test_normalize_masked(jit):
    x = f32([1.0, 1000.0, 3.0, -1000.0])
    mask = jnp.array([True, False, True, False])
    y = variant(losses.normalize, jit)(x, mask)
    # Valid entries [1, 3]: mean 2, std 1.
    np.testing.assert_allclose(y[jnp.array([0, 2])], [-1.0, 1.0], rtol=1e-6)
    np.testing.assert_allclose(y[1], 998.0, rtol=1e-6)  # masked entries use the same statistics


# ----------------------------------------------------------------------------------------------
# RunningMeanStd
# ----------------------------------------------------------------------------------------------


@JIT
def test_running_mean_std_matches_numpy(jit):
    update = variant(losses.running_mean_std_update, jit)
    x1 = normal(6, (5, 4), 2.0, 3.0)
    x2 = normal(7, (11,), -1.0, 0.5)
    state = losses.running_mean_std_init()
    np.testing.assert_allclose(losses.standardize(state, x2), x2, rtol=1e-6)  # identity at init
    state = update(update(state, x1), x2)
    both = np.concatenate([np.ravel(x1), np.ravel(x2)]).astype(np.float64)
    np.testing.assert_allclose(state.count, both.size)
    np.testing.assert_allclose(state.mean, both.mean(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state.var, both.var(), rtol=1e-5)
    # Round trip.
    z = losses.standardize(state, x2)
    np.testing.assert_allclose(losses.unstandardize(state, z), x2, rtol=1e-5, atol=1e-5)
    # Hand case: [1, 3] then [5] -> mean 3, var ((1-3)^2 + 0 + (5-3)^2) / 3 = 8/3.
    hand = update(update(losses.running_mean_std_init(), f32([1.0, 3.0])), f32([5.0]))
    np.testing.assert_allclose([hand.mean, hand.var, hand.count], [3.0, 8 / 3, 3.0], rtol=1e-6)


@JIT
def test_running_mean_std_vector_and_mask(jit):
    update = variant(losses.running_mean_std_update, jit)
    x1 = normal(8, (4, 3, 2))
    x2 = normal(9, (6, 2), 5.0)
    mask2 = jnp.array([True, False, True, True, False, True])
    state = update(update(losses.running_mean_std_init((2,)), x1), x2, mask2)
    both = np.concatenate([np.reshape(x1, (-1, 2)), np.asarray(x2)[np.asarray(mask2)]])
    np.testing.assert_allclose(state.count, len(both))
    np.testing.assert_allclose(state.mean, both.mean(axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state.var, both.var(axis=0), rtol=1e-5)
    # An all-masked batch changes nothing.
    same = update(state, x2, jnp.zeros(6, bool))
    np.testing.assert_array_equal(same.mean, state.mean)
    np.testing.assert_array_equal(same.var, state.var)
    np.testing.assert_array_equal(same.count, state.count)


# ----------------------------------------------------------------------------------------------
# Shape checks
# ----------------------------------------------------------------------------------------------


@JIT
def test_shape_checks_raise(jit):
    a3, a4 = jnp.zeros(3), jnp.zeros(4)
    with pytest.raises(AssertionError):
        variant(losses.gae, jit)(a3, a3, a4, a3, a3, 0.9)
    with pytest.raises(AssertionError):
        variant(losses.gae, jit)(jnp.zeros((3, 2)), a3, a3, a3, a3, 0.9)
    with pytest.raises(AssertionError):
        variant(losses.lambda_returns, jit)(a3, a4, a3, 0.9)
    with pytest.raises(AssertionError):
        variant(losses.n_step_returns, jit, n=2)(a3, a3, a4)
    with pytest.raises(AssertionError):
        variant(losses.discounted_returns, jit)(jnp.zeros(()), jnp.zeros(()))
    with pytest.raises(AssertionError):
        variant(losses.ppo_clip_loss, jit)(a3, a3, a4, 0.2)
    with pytest.raises(AssertionError):
        variant(losses.ppo_clip_loss, jit)(a3, a3, a3, 0.2, jnp.ones(4, bool))
    with pytest.raises(AssertionError):
        variant(losses.value_loss, jit)(a3, a4, a3)
    with pytest.raises(AssertionError):
        variant(losses.masked_mean, jit)(a3, jnp.ones((3, 1)))
    with pytest.raises(AssertionError):
        variant(losses.running_mean_std_update, jit)(losses.running_mean_std_init((2,)), a3)
    with pytest.raises(ValueError):
        losses.n_step_returns(a3, a3, a3, 0)


def test_hyperparameters_may_be_traced():
    # A sweep over lambda / clip_eps is one vmap: no Python branching on their values.
    args = (f32(GAE_R), f32(GAE_V), f32(GAE_V_NEXT), f32(GAE_DISCOUNT), jnp.asarray(GAE_DONE))
    adv, _ = jax.vmap(lambda lam: losses.gae(*args, lam))(f32([0.0, 0.5]))
    np.testing.assert_allclose(adv[1], [1.25, 1.0, 5.0, 5.125, 4.5], rtol=1e-6)
    np.testing.assert_allclose(adv[0], [1.0, 1.0, 5.0, 4.0, 4.5], rtol=1e-6)  # the deltas
    log_prob, old, a = jnp.log(f32(PPO_RATIO)), jnp.zeros(6), f32(PPO_ADV)
    loss, _ = jax.vmap(lambda eps: losses.ppo_clip_loss(log_prob, old, a, eps))(f32([EPS, 10.0]))
    np.testing.assert_allclose(
        loss, [0.8 / 6, -np.mean(np.multiply(PPO_RATIO, PPO_ADV))], rtol=1e-5
    )


# ----------------------------------------------------------------------------------------------
# Episode boundaries inside a sequence (replayed streams): done_t cuts the return.
# ----------------------------------------------------------------------------------------------


@JIT
def test_lambda_returns_cut_at_done(jit):
    # Episode 1 = steps 0, 1 (truncated at 1: bootstrap on v[1], the final obs's value);
    # episode 2 = steps 2, 3 (terminated at 3).
    r, v = f32([1.0, 2.0, 3.0, 4.0]), f32([10.0, 20.0, 30.0, 40.0])
    gamma, lam = 0.5, 0.8
    term = np.array([0, 0, 0, 1], bool)
    done = np.array([0, 1, 0, 1], bool)
    discount = f32(gamma * (1.0 - term))
    fn = variant(losses.lambda_returns, jit)
    g = np.asarray(fn(r, discount, v, lam, done_t=jnp.asarray(done)))
    g3 = 4.0  # terminal: no bootstrap
    g2 = 3.0 + gamma * ((1 - lam) * 30.0 + lam * g3)
    g1 = 2.0 + gamma * 20.0  # truncated: one-step bootstrap on the final value, no mixing
    g0 = 1.0 + gamma * ((1 - lam) * 10.0 + lam * g1)
    np.testing.assert_allclose(g, [g0, g1, g2, g3], rtol=1e-6)
    # Without the cut the return would leak the next episode's rewards into step 1.
    leaky = np.asarray(fn(r, discount, v, lam))
    assert not np.isclose(leaky[1], g1)


@JIT
def test_n_step_returns_cut_at_done(jit):
    r, v = f32([1.0, 2.0, 3.0, 4.0]), f32([10.0, 20.0, 30.0, 40.0])
    gamma = 0.5
    done = np.array([0, 1, 0, 0], bool)  # truncation after step 1
    discount = f32([gamma] * 4)
    fn = variant(losses.n_step_returns, jit, n=3)
    g = np.asarray(fn(r, discount, v, done_t=jnp.asarray(done)))
    expected = [
        1.0 + gamma * (2.0 + gamma * 20.0),  # stops at the truncation, bootstraps on v[1]
        2.0 + gamma * 20.0,
        3.0 + gamma * (4.0 + gamma * 40.0),  # runs off the end: bootstraps on v[T-1]
        4.0 + gamma * 40.0,
    ]
    np.testing.assert_allclose(g, expected, rtol=1e-6)
    # No done anywhere: identical to the plain n-step returns.
    plain = np.asarray(fn(r, discount, v))
    np.testing.assert_allclose(np.asarray(fn(r, discount, v, done_t=jnp.zeros(4, bool))), plain)
