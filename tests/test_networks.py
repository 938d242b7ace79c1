"""Initializers, the recurrent core's reset convention and the action distributions."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from marljax.nn import distributions
from marljax.nn.networks import (
    MLP,
    RecurrentCore,
    dot_product_attention,
    mlp_first_layer,
    mlp_from_first_layer,
    orthogonal,
    rows_dot_general,
)


@pytest.mark.parametrize("shape", [(18, 64), (64, 64), (64, 7), (3, 4, 5)])
def test_orthogonal_is_orthogonal_and_scaled(shape):
    w = np.asarray(orthogonal(2.0)(jax.random.PRNGKey(0), shape)).reshape(-1, shape[-1])
    gram = w @ w.T if w.shape[0] < w.shape[1] else w.T @ w
    np.testing.assert_allclose(gram, 4.0 * np.eye(gram.shape[0]), atol=1e-4)


def test_orthogonal_seeds_differ_and_vmap_has_no_lapack():
    init = orthogonal()
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    ws = jax.vmap(lambda k: init(k, (8, 8)))(keys)
    assert not np.allclose(ws[0], ws[1])
    hlo = jax.jit(jax.vmap(lambda k: init(k, (8, 8)))).lower(keys).as_text().lower()
    assert "lapack" not in hlo


def test_orthogonal_matches_qr_distribution():
    """Same law as QR with sign correction: E[w_00^2] = 1/n for Haar-orthogonal n x n."""
    ws = jax.vmap(lambda k: orthogonal()(k, (4, 4)))(jax.random.split(jax.random.PRNGKey(1), 4000))
    np.testing.assert_allclose(np.mean(np.asarray(ws)[:, 0, 0] ** 2), 0.25, atol=0.02)


def test_recurrent_core_resets_the_carry_where_an_episode_starts():
    core = RecurrentCore(hidden_size=5)
    T, B, D = 6, 2, 3
    xs = jax.random.normal(jax.random.PRNGKey(0), (T, B, D))
    resets = jnp.zeros((T, B), bool).at[3, 0].set(True)
    carry0 = jax.random.normal(jax.random.PRNGKey(1), (B, 5))  # a non-zero carry from before
    params = core.init(jax.random.PRNGKey(2), carry0, xs, resets)
    _, ys = core.apply(params, carry0, xs, resets)
    # Env 0 restarts at t=3: its outputs from t=3 equal a fresh core run on xs[3:].
    _, fresh = core.apply(params, jnp.zeros((B, 5)), xs[3:], jnp.zeros((T - 3, B), bool))
    np.testing.assert_allclose(ys[3:, 0], fresh[:, 0], rtol=1e-5, atol=1e-6)
    # Env 1 has no reset: its outputs depend on the initial carry (no spurious reset).
    assert not np.allclose(ys[3:, 1], fresh[:, 1])
    # One step at a time gives the same as the whole sequence (acting == training).
    c, steps = carry0, []
    for t in range(T):
        c, y = core.apply(params, c, xs[t : t + 1], resets[t : t + 1])
        steps.append(y[0])
    np.testing.assert_allclose(np.stack(steps), ys, rtol=1e-5, atol=1e-6)


def test_masked_categorical_gives_zero_probability_to_illegal_actions():
    logits = jnp.array([[5.0, 0.0, 1.0]])
    dist = distributions.masked_categorical(logits, jnp.array([[False, True, True]]))
    samples = dist.sample(seed=jax.random.PRNGKey(0), sample_shape=(500,))
    assert not bool((samples == 0).any())
    assert np.isfinite(float(dist.entropy()[0]))
    np.testing.assert_allclose(
        np.exp(dist.log_prob(jnp.array([2]))), np.exp(1) / (1 + np.exp(1)), rtol=1e-5
    )


def test_tanh_gaussian_log_prob_matches_change_of_variables():
    mean, log_std = jnp.array([0.3, -0.2]), jnp.array([-0.5, 0.1])
    dist = distributions.TanhGaussian(mean, log_std)
    a, logp = dist.sample_and_log_prob(jax.random.PRNGKey(0))
    np.testing.assert_allclose(dist.log_prob(a), logp, rtol=1e-4, atol=1e-4)
    # Numerical check in 1-D: density of a = tanh(u) is N(u) / (1 - a^2).
    d1 = distributions.TanhGaussian(jnp.array([0.3]), jnp.array([-0.5]))
    x = 0.4
    u = np.arctanh(x)
    std = np.exp(-0.5)
    ref = -0.5 * ((u - 0.3) / std) ** 2 - np.log(std * np.sqrt(2 * np.pi)) - np.log(1 - x**2)
    np.testing.assert_allclose(d1.log_prob(jnp.array([x])), ref, rtol=1e-5)


def test_tanh_gaussian_entries_keep_only_the_used_entries_density():
    """With `entries`, the log-prob is the density of the used entries alone, whatever the rest."""
    mean, log_std = jnp.array([0.3, -0.2, 0.5]), jnp.array([-0.5, 0.1, 1.5])
    used = jnp.array([1.0, 0.0, 1.0])
    masked = distributions.TanhGaussian(mean, log_std, entries=used)
    sub = distributions.TanhGaussian(mean[::2], log_std[::2])
    a = jnp.array([0.4, -0.9, 0.1])
    np.testing.assert_allclose(masked.log_prob(a), sub.log_prob(a[::2]), rtol=1e-5)
    np.testing.assert_allclose(masked.log_prob(a.at[1].set(0.7)), masked.log_prob(a), rtol=1e-6)
    b, logp = masked.sample_and_log_prob(jax.random.PRNGKey(1))
    np.testing.assert_allclose(logp, sub.log_prob(b[::2]), rtol=1e-4, atol=1e-4)
    # all entries used = the plain distribution
    full = distributions.TanhGaussian(mean, log_std, entries=jnp.ones(3))
    np.testing.assert_allclose(
        full.log_prob(a), distributions.TanhGaussian(mean, log_std).log_prob(a), rtol=1e-5
    )


def test_apply_once_per_env_equals_every_agent_for_equal_inputs():
    """A shared critic on a global state: evaluating agent 0 and broadcasting gives the same
    outputs, carry and gradients as evaluating every agent (what `make_ppo` relies on)."""
    from marljax.agents import common

    core = RecurrentCore(hidden_size=4)
    T, B, A, D = 5, 3, 3, 2
    state = jax.random.normal(jax.random.PRNGKey(0), (T, B, 1, D))
    xs = jnp.broadcast_to(state, (T, B, A, D))  # the same global state for every agent
    resets = jnp.zeros((T, B), bool).at[2, 1].set(True)
    carry = jnp.broadcast_to(jax.random.normal(jax.random.PRNGKey(1), (B, 1, 4)), (B, A, 4))
    params = core.init(jax.random.PRNGKey(2), carry[:, 0], xs[:, :, 0], resets)

    def loss(fn, p):
        c, ys = fn(core.apply, p, carry, xs, resets)
        weights = jnp.arange(1.0, A + 1.0)[:, None]  # agents weighted differently in the loss
        return jnp.sum(ys * weights) + jnp.sum(jnp.sin(c)), (c, ys)

    every = lambda *a: common.apply_over_agents(*a, False)  # noqa: E731
    (l_all, (c_all, y_all)), g_all = jax.value_and_grad(lambda p: loss(every, p), has_aux=True)(
        params
    )
    (l_one, (c_one, y_one)), g_one = jax.value_and_grad(
        lambda p: loss(common.apply_once_per_env, p), has_aux=True
    )(params)
    assert y_one.shape == y_all.shape == (T, B, A, 4) and c_one.shape == c_all.shape
    np.testing.assert_allclose(y_one, y_all, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(c_one, c_all, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(l_one, l_all, rtol=1e-5)
    for a, b in zip(jax.tree.leaves(g_one), jax.tree.leaves(g_all), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_sequence_net_names_its_modules_by_class():
    """A default torso passed in keeps the parameter tree of a network built inline."""
    from marljax.nn.networks import MLP, SequenceNet

    net = SequenceNet(MLP((4,), "tanh", 3, 0.01), recurrent=True, gru_size=5)
    p = net.init(
        jax.random.PRNGKey(0), jnp.zeros((2, 5)), jnp.zeros((1, 2, 6)), jnp.zeros((1, 2), bool)
    )
    assert set(p["params"]) == {"MLP_0", "RecurrentCore_0"}
    carry, out = net.apply(p, jnp.zeros((2, 5)), jnp.ones((3, 2, 6)), jnp.zeros((3, 2), bool))
    assert carry.shape == (2, 5) and out.shape == (3, 2, 3)


def test_grid_encoder_reads_both_layouts_alike():
    from marljax.nn.networks import GridEncoder

    grid = jax.random.normal(jax.random.PRNGKey(0), (2, 4, 5, 3))  # [B, H, W, C]
    extra = jnp.ones((2, 2))
    hwc = GridEncoder((4, 5, 3), "hwc", (6,))
    chw = GridEncoder((4, 5, 3), "chw", (6,))
    x_hwc = jnp.concatenate([grid.reshape(2, -1), extra], -1)
    x_chw = jnp.concatenate([jnp.moveaxis(grid, -1, 1).reshape(2, -1), extra], -1)
    p = hwc.init(jax.random.PRNGKey(1), x_hwc)
    out = hwc.apply(p, x_hwc)
    assert out.shape == (2, 4 * 5 * 6 + 2)
    np.testing.assert_allclose(chw.apply(p, x_chw), out, rtol=1e-6)
    np.testing.assert_array_equal(out[:, -2:], extra)  # the agent id passes through


@pytest.mark.parametrize("kernel_size", [1, 3, 5])
def test_conv_equals_flax_conv_with_the_same_parameters(kernel_size):
    """`networks.Conv` (a matmul over shifted windows) is flax's SAME, stride-1 Conv."""
    import flax.linen as nn

    from marljax.nn.networks import Conv

    x = jax.random.normal(jax.random.PRNGKey(0), (2, 3, 7, 6, 4))  # [..., H, W, C], odd H/W
    ours = Conv(5, kernel_size)
    params = ours.init(jax.random.PRNGKey(1), x)
    params = jax.tree_util.tree_map(lambda p: p + 0.1, params)  # a nonzero bias too
    flax_conv = nn.Conv(5, (kernel_size, kernel_size), padding="SAME")
    np.testing.assert_allclose(ours.apply(params, x), flax_conv.apply(params, x), atol=1e-5)
    with pytest.raises(ValueError, match="odd kernel_size"):
        Conv(5, 2).init(jax.random.PRNGKey(1), x)


@pytest.mark.parametrize("layer_norm", [False, True])
def test_mlp_from_its_first_layer_equals_the_mlp(layer_norm):
    """The split MLP (first layer, then the rest) is the MLP: bit for bit unsplit, and to float
    rounding with the first layer's input split in two parts (as SAC's actor step splits the
    critic's global state from the joint action)."""
    mlp = MLP((16, 8), "relu", 1, 1.0, layer_norm)
    x = jax.random.normal(jax.random.PRNGKey(0), (32, 12))
    params = mlp.init(jax.random.PRNGKey(1), x)
    want = mlp.apply(params, x)
    got = mlp_from_first_layer(mlp, params, mlp_first_layer(params, x))
    assert np.array_equal(np.asarray(got), np.asarray(want))
    parts = mlp_first_layer(params, x[:, :9], slice(0, 9)) + mlp_first_layer(
        params, x[:, 9:], slice(9, None)
    )
    split = mlp_from_first_layer(mlp, params, parts)
    np.testing.assert_allclose(np.asarray(split), np.asarray(want), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="no first layer"):
        mlp_from_first_layer(MLP((), "relu", 1), params, x)


@pytest.mark.parametrize("heads", [1, 2])
def test_dot_product_attention_equals_flax(heads):
    """The heads-folded attention is Flax's, with masks and biases, over extra batch axes; and
    as a `MultiHeadDotProductAttention`'s `attention_fn`, including its autoregressive cache."""
    kq, kk, kv, kb = jax.random.split(jax.random.PRNGKey(0), 4)
    q = jax.random.normal(kq, (2, 5, 4, heads, 3))  # [..., Q, h, d]
    k = jax.random.normal(kk, (2, 5, 6, heads, 3))
    v = jax.random.normal(kv, (2, 5, 6, heads, 7))
    mask = jax.random.uniform(kb, (2, 1, heads, 4, 6)) < 0.7
    bias = jax.random.normal(kb, (heads, 4, 6))
    for kwargs in ({}, {"mask": mask}, {"mask": mask, "bias": bias}):
        np.testing.assert_allclose(
            dot_product_attention(q, k, v, **kwargs),
            nn.dot_product_attention(q, k, v, **kwargs),
            rtol=1e-5, atol=1e-6,
        )  # fmt: skip
    with pytest.raises(ValueError, match="no dropout"):
        dot_product_attention(q, k, v, dropout_rate=0.1, deterministic=False)

    x = jax.random.normal(kq, (3, 4, 8))  # [B, A, H]
    causal = jnp.tril(jnp.ones((4, 4), bool))[None]
    ours, theirs = (
        nn.MultiHeadDotProductAttention(num_heads=heads, attention_fn=fn)
        for fn in (dot_product_attention, nn.dot_product_attention)
    )
    params = theirs.init(kk, x, x)
    want = theirs.apply(params, x, x, mask=causal)
    np.testing.assert_allclose(ours.apply(params, x, x, mask=causal), want, rtol=1e-5, atol=1e-6)
    cached = ours.clone(decode=True)
    cache = cached.apply(params, x, x, mutable=["cache"])[1]["cache"]
    cache = jax.tree.map(jnp.zeros_like, cache)
    for i in range(4):  # one position at a time reads the cache of the earlier ones
        out, mutated = cached.apply(
            {**params, "cache": cache}, x[:, i : i + 1], x[:, i : i + 1], mutable=["cache"]
        )
        cache = mutated["cache"]
        np.testing.assert_allclose(out[:, 0], want[:, i], rtol=1e-5, atol=1e-6)


def test_rows_dot_general_is_dot_general():
    """As a dense layer's `dot_general` (one and two contracted axes) it is one 2-D matmul with
    the same result; a contraction with batch axes falls through to `jax.lax.dot_general`."""
    kx, kw = jax.random.split(jax.random.PRNGKey(0))
    x = jax.random.normal(kx, (4, 3, 2, 5))
    for axis, features in ((-1, (2, 6)), ((-2, -1), 7)):
        layer = nn.DenseGeneral(features, axis=axis)
        rows = nn.DenseGeneral(features, axis=axis, dot_general=rows_dot_general)
        params = layer.init(kw, x)
        np.testing.assert_allclose(
            rows.apply(params, x), layer.apply(params, x), rtol=1e-5, atol=1e-6
        )
    y = jax.random.normal(kw, (4, 5, 6))
    batched = (((2,), (1,)), ((0,), (0,)))  # [4, 6, 5] x [4, 5, 6], batch axis 0
    x3 = x.reshape(4, 6, 5)
    np.testing.assert_array_equal(
        rows_dot_general(x3, y, batched), jax.lax.dot_general(x3, y, batched)
    )
