"""Cross-play matrices: exact normal-form cross-play, generic vmapped play, and re-exports."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax.evaluation as E
from marljax.evaluation import crossplay as X

KEY = jax.random.PRNGKey(0)

# 2-agent coordination game (A = 2, N = 2): both get 1 if they match, 0 otherwise.
COORD = jnp.stack([jnp.eye(2), jnp.eye(2)])  # [A, N, N]


def test_normal_form_crossplay_by_hand():
    # seeds converged to conventions: 0 -> action 0, 1 -> action 1, 2 -> uniform
    profiles = jnp.array(
        [
            [[1.0, 0.0], [1.0, 0.0]],
            [[0.0, 1.0], [0.0, 1.0]],
            [[0.5, 0.5], [0.5, 0.5]],
        ]
    )
    m = X.normal_form_crossplay(COORD, profiles)
    assert m.shape == (3, 3, 2)
    expected = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [0.5, 0.5, 0.5]])
    np.testing.assert_allclose(m[..., 0], expected)
    np.testing.assert_allclose(m[..., 1], expected)
    s = X.crossplay_summary(m[..., 0])
    np.testing.assert_allclose(s["self_play"], 2.5 / 3)
    np.testing.assert_allclose(s["cross_play"], 2.0 / 6)
    np.testing.assert_allclose(s["gap"], 2.5 / 3 - 2.0 / 6, rtol=1e-6)
    # agent 1 from population A instead: the transpose here (symmetric game)
    m1 = X.normal_form_crossplay(COORD, profiles, roles=[False, True])
    np.testing.assert_allclose(m1[..., 0], expected.T)
    # equals expected_payoffs of the mixed profile, for an asymmetric 3-agent game too
    payoffs = jax.random.normal(KEY, (3, 2, 2, 2))
    pa = jax.nn.softmax(jax.random.normal(jax.random.PRNGKey(1), (2, 3, 2)))
    pb = jax.nn.softmax(jax.random.normal(jax.random.PRNGKey(2), (4, 3, 2)))
    roles = jnp.array([True, False, True])
    m3 = jax.jit(X.normal_form_crossplay)(payoffs, pa, pb, roles)
    assert m3.shape == (2, 4, 3)
    mixed = jnp.stack([pa[1, 0], pb[3, 1], pa[1, 2]])
    np.testing.assert_allclose(m3[1, 3], E.expected_payoffs(payoffs, mixed), rtol=1e-5)


def test_crossplay_matrix_generic_play_matches_exact():
    # Policies as logits pytrees; play = sampled episode return, averaged over many samples.
    logits = [
        {"w": jnp.array([[4.0, -4.0], [4.0, -4.0]])},
        {"w": jnp.array([[-4.0, 4.0], [-4.0, 4.0]])},
        {"w": jnp.zeros((2, 2))},
    ]

    def play(pa, pb, key):
        ka, kb = jax.random.split(key)
        a0 = jax.random.categorical(ka, pa["w"][0])
        a1 = jax.random.categorical(kb, pb["w"][1])
        return COORD[:, a0, a1]  # [A] returns

    m = X.crossplay_matrix(play, logits, KEY, num_samples=400)
    assert m.shape == (3, 3, 2)
    strategies = jax.nn.softmax(jnp.stack([p["w"] for p in logits]), axis=-1)
    exact = X.normal_form_crossplay(COORD, strategies)
    # 400 Bernoulli samples per cell: sd <= 0.025; allow 4 sd
    np.testing.assert_allclose(m, exact, atol=0.1)
    # stacked input and a distinct partner population
    stacked = X.stack_params(logits)
    m2 = X.crossplay_matrix(play, stacked, KEY, population_b=X.stack_params(logits[:2]))
    assert m2.shape == (3, 2, 2)
    # scalar team returns give [P, Q]
    team = X.crossplay_matrix(lambda a, b, k: play(a, b, k).sum(), logits, KEY)
    assert team.shape == (3, 3)


def test_crossplay_bad_inputs():
    with pytest.raises(ValueError, match="same pytree structure"):
        X.stack_params([{"w": jnp.zeros(2)}, {"v": jnp.zeros(2)}])
    with pytest.raises(ValueError, match="leading population axis"):
        X.crossplay_matrix(lambda a, b, k: 0.0, {"w": jnp.zeros(3), "b": jnp.zeros(4)}, KEY)
    with pytest.raises(ValueError, match=r"\[P, A, N\]"):
        X.normal_form_crossplay(COORD, jnp.ones((2, 2)))
    with pytest.raises(ValueError, match="strategies must have shape"):
        X.normal_form_crossplay(COORD, jnp.ones((2, 3, 2)) / 2)
    with pytest.raises(ValueError, match="square"):
        X.crossplay_summary(jnp.ones((2, 3)))


def test_exploitability_reexported():
    # Matching pennies: uniform is the Nash equilibrium; pure (0, 0) is exploitable by agent 1.
    mp = jnp.stack([jnp.array([[1.0, -1.0], [-1.0, 1.0]]), -jnp.array([[1.0, -1.0], [-1.0, 1.0]])])
    uniform = jnp.full((2, 2), 0.5)
    np.testing.assert_allclose(E.nash_conv(mp, uniform), 0.0, atol=1e-6)
    pure = E.pure_strategies(jnp.array([0, 0]), 2)
    np.testing.assert_allclose(E.nash_conv(mp, pure), 2.0)  # agent 1 gains 2 by switching
    np.testing.assert_allclose(E.exploitability(mp, pure), 1.0)


def test_plot_crossplay_heatmap_and_runs(tmp_path):
    """`plot_runs` on run directories shaped like experiment.py's (no training needed)."""
    import json

    from marljax.evaluation import plots

    runs = []
    rng = np.random.RandomState(0)
    for algo, shift in (("ippo", 0.0), ("mappo", 1.0)):
        d = tmp_path / algo
        d.mkdir()
        config = {
            "experiment": {"algo": algo, "env": "matrix/climbing-v0"},
            "resolved": {"grid_settings": [{}], "seeds": [0, 1, 2, 3]},
        }
        (d / "config.json").write_text(json.dumps(config))
        ret = rng.normal(shift, 1.0, (1, 4, 6)) + np.arange(6)
        ret[0, 1, 0] = np.nan  # an update where one seed finished no episode
        steps = np.broadcast_to(np.arange(1, 7) * 128, (1, 4, 6))
        np.savez(d / "metrics.npz", episode_return=ret, env_steps=steps)
        runs.append(d)
    written = plots.plot_runs(runs, tmp_path / "figs", num_resamples=200)
    names = {p.name for p in written}
    assert names == {
        "learning_curves.png",
        "aggregate_metrics.png",
        "performance_profile.png",
        "probability_of_improvement.png",
    }
    for p in written:
        assert p.exists() and p.stat().st_size > 1000
    single = plots.plot_runs(runs[:1], tmp_path / "one", num_resamples=200)
    assert [p.name for p in single] == [
        "learning_curves.png",
        "aggregate_metrics.png",
        "performance_profile.png",
    ]
    with pytest.raises(FileNotFoundError, match="config.json is missing"):
        plots.plot_runs([tmp_path], tmp_path / "none")
    path = plots.plot_crossplay_heatmap(jnp.ones((2, 2, 2)), tmp_path / "xp.png")
    assert path.exists()
