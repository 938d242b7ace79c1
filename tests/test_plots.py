"""Plots of social-metric curves and swarm snapshots (`marljax.evaluation.plots`).

The figures are inspected before they are closed (`_save` is wrapped), so the tests check what is
drawn, not only that a PNG appeared. Other plot functions are tested in `test_stats.py` and
`test_crossplay.py`.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import marljax
import marljax.envs.swarm  # noqa: F401  (registers swarm/*)
from marljax.evaluation import plots


@pytest.fixture
def captured(monkeypatch):
    """Figures passed to `plots._save`, kept for inspection (the PNG is still written)."""
    figures = []
    save = plots._save

    def keep(fig, path):
        figures.append(fig)  # a closed figure keeps its axes and artists
        return save(fig, path)

    monkeypatch.setattr(plots, "_save", keep)
    return figures


def _social_runs():
    rng = np.random.default_rng(0)
    coop = rng.uniform(size=(3, 5))  # [S, U]
    coop[1, 0] = np.nan  # seed 1 finished no episode in update 0
    eff = 2.0 + 2.0 * coop
    return {
        "shared": {"social/cooperation_rate": coop, "social/efficiency": eff, "loss": coop},
        "independent": {"social/cooperation_rate": coop[::-1], "social/efficiency": eff[::-1]},
    }


def test_social_metric_curves_draw_the_mean_over_seeds(tmp_path, captured):
    runs = _social_runs()
    steps = np.arange(1, 6) * 160
    path = plots.plot_social_metrics(runs, steps, tmp_path / "social.png", num_resamples=200)
    assert path.exists() and path.stat().st_size > 1000
    (fig,) = captured
    axes = fig.axes
    # default metrics: the social/* keys common to both runs, in social.METRICS order
    assert [ax.get_title() for ax in axes] == ["efficiency", "cooperation rate"]
    shared_line = axes[1].get_lines()[0]
    assert shared_line.get_label() == "shared"
    # update 0 is left out (a NaN seed); the curve is the mean over seeds elsewhere
    np.testing.assert_array_equal(shared_line.get_xdata(), steps[1:])
    expected = runs["shared"]["social/cooperation_rate"][:, 1:].mean(axis=0)
    np.testing.assert_allclose(shared_line.get_ydata(), expected, rtol=1e-5)
    # names without the prefix are accepted
    plots.plot_social_metrics(runs, steps, tmp_path / "one.png", metrics=["efficiency"])
    assert [ax.get_title() for ax in captured[-1].axes] == ["efficiency"]


def test_social_metric_curves_bad_input(tmp_path):
    runs = _social_runs()
    steps = np.arange(5)
    with pytest.raises(ValueError, match="runs is empty"):
        plots.plot_social_metrics({}, steps, tmp_path / "x.png")
    with pytest.raises(ValueError, match="'independent' has no metric 'social/peace'"):
        plots.plot_social_metrics(
            {"shared": {"social/peace": np.ones((2, 5))}, "independent": runs["independent"]},
            steps,
            tmp_path / "x.png",
            metrics=["peace"],
        )
    with pytest.raises(ValueError, match=r"\[S, U\]"):
        plots.plot_social_metrics(runs, np.arange(4), tmp_path / "x.png")
    with pytest.raises(ValueError, match="no 'social/<name>' metric"):
        plots.plot_social_metrics({"a": {"loss": np.ones((2, 5))}}, steps, tmp_path / "x.png")
    with pytest.raises(ValueError, match="no update in which every seed"):
        plots.plot_social_metrics(
            {"a": {"social/efficiency": np.full((2, 5), np.nan)}}, steps, tmp_path / "x.png"
        )


def test_swarm_snapshot_of_a_vicsek_state(tmp_path, captured):
    env, params = marljax.make("swarm/vicsek-v0", num_agents=12)
    key_reset, key_step = jax.random.split(jax.random.PRNGKey(0))
    first, _ = jax.jit(env.reset)(key_reset, params)
    last, _ = jax.jit(env.step)(key_step, first, np.zeros((12,), np.int32), params)
    pos0, head0 = plots.swarm_snapshot(first)
    pos1, head1 = plots.swarm_snapshot(last)
    np.testing.assert_array_equal(pos0, np.asarray(first.pos))
    np.testing.assert_array_equal(head1, np.asarray(last.heading))
    size = float(params.size)
    path = plots.plot_swarm_snapshot(
        np.stack([pos0, pos1]),
        tmp_path / "swarm.png",
        headings=np.stack([head0, head1]),
        size=size,
        titles=["t = 0", "t = 1"],
    )
    assert path.exists() and path.stat().st_size > 1000
    (fig,) = captured
    assert [ax.get_title() for ax in fig.axes] == ["t = 0", "t = 1"]
    quiver = fig.axes[1].collections[0]
    np.testing.assert_allclose(quiver.get_offsets(), pos1, rtol=1e-6)
    np.testing.assert_allclose(quiver.U, np.cos(head1), atol=1e-6)
    np.testing.assert_allclose(quiver.V, np.sin(head1), atol=1e-6)
    assert fig.axes[0].get_xlim() == (0.0, size)


def test_swarm_snapshot_without_headings_and_bad_input(tmp_path, captured):
    env, params = marljax.make("swarm/aggregation-v0", num_agents=6)
    state, _ = jax.jit(env.reset)(jax.random.PRNGKey(1), params)
    pos, head = plots.swarm_snapshot(state)
    assert head is None and pos.shape == (6, 2)
    plots.plot_swarm_snapshot(pos, tmp_path / "agg.png")
    np.testing.assert_allclose(captured[-1].axes[0].collections[0].get_offsets(), pos)
    with pytest.raises(ValueError, match="no `pos` field"):
        plots.swarm_snapshot(object())
    with pytest.raises(ValueError, match=r"positions must be \[A, 2\]"):
        plots.plot_swarm_snapshot(np.zeros((6, 3)), tmp_path / "x.png")
    with pytest.raises(ValueError, match="headings must be"):
        plots.plot_swarm_snapshot(pos, tmp_path / "x.png", headings=np.zeros(5))
    with pytest.raises(ValueError, match="one entry per frame"):
        plots.plot_swarm_snapshot(pos, tmp_path / "x.png", titles=["a", "b"])
    with pytest.raises(ValueError, match="size"):
        plots.plot_swarm_snapshot(pos, tmp_path / "x.png", size=0.0)


def test_plot_runs_adds_social_metric_curves(tmp_path, captured):
    import json

    rng = np.random.default_rng(1)
    runs = []
    for mode in ("shared", "independent"):
        d = tmp_path / mode
        d.mkdir()
        config = {
            "experiment": {"algo": f"ippo_{mode}", "env": "social/stag_hunt-v0"},
            "resolved": {"grid_settings": [{}], "seeds": [0, 1]},
        }
        (d / "config.json").write_text(json.dumps(config))
        coop = rng.uniform(size=(1, 2, 4))
        np.savez(
            d / "metrics.npz",
            episode_return=10 * coop,
            env_steps=np.broadcast_to(np.arange(1, 5) * 160, (1, 2, 4)),
            **{"social/cooperation_rate": coop, "social/efficiency": 2 + 2 * coop},
        )
        runs.append(d)
    written = plots.plot_runs(runs, tmp_path / "figs", num_resamples=100)
    assert "social_metrics.png" in {p.name for p in written}
    social = next(f for f in captured if [a.get_title() for a in f.axes][:1] == ["efficiency"])
    lines = social.axes[1].get_lines()
    assert [line.get_label() for line in lines] == ["ippo_shared", "ippo_independent"]
    with np.load(runs[1] / "metrics.npz") as m:
        expected = m["social/cooperation_rate"][0].mean(axis=0)
    np.testing.assert_allclose(lines[1].get_ydata(), expected, rtol=1e-5)
    # a run without social metrics: no social figure
    np.savez(
        runs[1] / "metrics.npz", episode_return=np.ones((1, 2, 4)), env_steps=np.ones((1, 2, 4))
    )
    assert plots._social_curves([plots.load_run(d) for d in runs]) is None
