"""`marljax.agents.ppo.ppo_loss` on small hand-computed arrays, jitted and un-jitted."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from marljax.agents.ppo import ppo_loss

LOG_PROB = jnp.log(jnp.array([0.5, 0.2, 0.3]))
OLD = jnp.log(jnp.array([0.4, 0.2, 0.6]))
ADV = jnp.array([1.0, -1.0, 2.0])
V = jnp.array([0.1, 0.3, 1.0])
OLD_V = jnp.array([0.0, 0.3, 0.0])
R = jnp.array([1.0, 0.0, 2.0])
ENT = jnp.array([1.0, 0.9, 0.8])


def _by_hand(value_clip):
    ratio = np.array([0.5 / 0.4, 1.0, 0.5])  # clip at 0.2: 1.25 -> 1.2, 0.5 -> 0.8
    clipped = np.clip(ratio, 0.8, 1.2)
    adv = np.asarray(ADV)
    pg = -np.mean(np.minimum(ratio * adv, clipped * adv))
    v, old_v, r = map(np.asarray, (V, OLD_V, R))
    if value_clip is None:
        vl = 0.5 * np.mean((v - r) ** 2)
    else:
        v_clip = old_v + np.clip(v - old_v, -value_clip, value_clip)
        vl = 0.5 * np.mean(np.maximum((v - r) ** 2, (v_clip - r) ** 2))
    return pg + 0.5 * vl - 0.01 * np.mean(np.asarray(ENT)), pg, vl


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("value_clip", [None, 0.2])
def test_ppo_loss_matches_the_equation(jit, value_clip):
    def f(*args):
        return ppo_loss(
            *args,
            clip_eps=0.2,
            value_clip_eps=value_clip,
            vf_coef=0.5,
            ent_coef=0.01,
            normalize_advantages=False,
        )

    f = jax.jit(f) if jit else f
    total, metrics = f(LOG_PROB, OLD, ADV, V, OLD_V, R, ENT)
    want, pg, vl = _by_hand(value_clip)
    np.testing.assert_allclose(float(total), want, rtol=1e-5)
    np.testing.assert_allclose(float(metrics["policy_loss"]), pg, rtol=1e-5)
    np.testing.assert_allclose(float(metrics["value_loss"]), vl, rtol=1e-5)
    np.testing.assert_allclose(float(metrics["clip_fraction"]), 2 / 3, rtol=1e-6)


def test_ppo_loss_normalises_advantages_and_checks_shapes():
    kw = dict(clip_eps=0.2, value_clip_eps=None)
    a, _ = ppo_loss(OLD, OLD, ADV, V, OLD_V, R, ENT, normalize_advantages=True, **kw)
    b, _ = ppo_loss(OLD, OLD, 3.0 * ADV + 1.0, V, OLD_V, R, ENT, normalize_advantages=True, **kw)
    np.testing.assert_allclose(float(a), float(b), rtol=1e-5)  # invariant to affine rescaling
    with pytest.raises(AssertionError):
        ppo_loss(OLD, OLD, ADV[:2], V, OLD_V, R, ENT, **kw)
