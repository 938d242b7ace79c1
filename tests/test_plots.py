"""Plots of run directories, learning curves, social-metric curves and swarm snapshots
(`marljax.evaluation.plots`, `marljax.evaluation.plots.plot_setting_curves`, `marljax plot`).

The figures are inspected before they are closed (`_save` is wrapped), so the tests check what is
drawn, not only that a PNG appeared. Run directories are written by hand (config.json and
metrics.npz), without training. Other plot functions are tested in `test_stats.py` and
`test_crossplay.py`.
"""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

import marljax
import marljax.envs.swarm  # noqa: F401  (registers swarm/*)
from marljax.evaluation import plots
from marljax.shell import cli

# NaN returns (updates without a finished episode) must never reach numpy as an empty slice.
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

SEEDS, UPDATES = 3, 8
STEPS = np.arange(1, UPDATES + 1) * 16


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


# ----------------------------------------------------------------------------- run directories


def _run_dir(path, settings=({},), lr=3e-4, shift=0.0, seed=0, algo="mappo"):
    """A run directory as `marljax.shell.experiment` writes it: `[G, S, U]` returns, one per setting."""
    path.mkdir(parents=True)
    hparams = [{"lr": s.get("lr", lr), "ent_coef": s.get("ent_coef", 0.01)} for s in settings]
    config = {
        "experiment": {"algo": algo, "env": "matrix/climbing-v0", "env_kwargs": {}, "seeds": SEEDS,
                       "hparams": {"lr": lr}, "out_dir": str(path.parent), "name": path.name},
        "resolved": {"agent": {"hidden_sizes": [64, 64]}, "hparams": hparams,
                     "grid_settings": list(settings), "seeds": list(range(SEEDS))},
    }  # fmt: skip
    (path / "config.json").write_text(json.dumps(config))
    rng = np.random.default_rng(seed)
    G = len(settings)
    ret = (
        7.0 + shift + rng.normal(0.0, 1.0, (G, SEEDS, UPDATES)) + 5.0 * np.arange(G)[:, None, None]
    )
    ret[:, 1, ::3] = np.nan  # seed 1 finishes no episode in every third update
    steps = np.broadcast_to(STEPS, (G, SEEDS, UPDATES))
    np.savez(path / "metrics.npz", episode_return=ret, env_steps=steps)
    return path


def _curves(fig):
    """`{label: line}` of the learning curves (reference lines are horizontal, grey)."""
    return {
        ln.get_label(): ln for ax in fig.axes for ln in ax.get_lines() if ln.get_color() != "0.3"
    }


def test_two_runs_differing_in_lr_are_two_labelled_curves_and_rows(tmp_path, captured):
    a = _run_dir(tmp_path / "runs" / "a", lr=1e-3)
    b = _run_dir(tmp_path / "runs" / "b", lr=3e-4, shift=2.0, seed=1)
    out = tmp_path / "plots"
    written = plots.plot_runs([a, b], out, num_resamples=100)
    assert {p.parent for p in written} == {out}
    curves_fig, agg_fig = captured[0], captured[1]
    lines = _curves(curves_fig)
    assert list(lines) == ["mappo lr=1e-3", "mappo lr=3e-4"]
    # seed 1 has no episode in updates 0, 3, 6: its last value carries on, so the curve starts
    # at update 1 and has no gap; the line is the mean over seeds of the filled returns
    with np.load(a / "metrics.npz") as m:
        filled = plots.fill_forward(m["episode_return"][0])
    np.testing.assert_array_equal(lines["mappo lr=1e-3"].get_xdata(), STEPS[1:])
    np.testing.assert_allclose(lines["mappo lr=1e-3"].get_ydata(), filled[:, 1:].mean(axis=0))
    legend = curves_fig.legends[0]
    assert "mean over 3 seeds" in legend.get_title().get_text()
    assert "95% bootstrap CI" in legend.get_title().get_text()
    # the climbing game's references as dashed lines, named in the legend
    refs = [ln for ln in curves_fig.axes[0].get_lines() if ln.get_color() == "0.3"]
    assert sorted(ln.get_ydata()[0] for ln in refs) == [7.0, 11.0]
    texts = [t.get_text() for t in legend.get_texts()]
    assert "optimum (0, 0) = 11" in texts
    # two aggregate rows, not one pooled row
    rows = [t.get_text() for t in agg_fig.axes[0].get_yticklabels()]
    assert rows == ["mappo lr=1e-3", "mappo lr=3e-4"]
    # never into a run directory
    with pytest.raises(ValueError, match="inside the run directory"):
        plots.plot_runs([a, b], a / "figs")


def test_runs_that_differ_in_nothing_are_named_by_directory(tmp_path):
    runs = [plots.load_run(_run_dir(tmp_path / n, seed=i)) for i, n in enumerate("xy")]
    assert plots.label_runs(runs) == [["mappo (x)"], ["mappo (y)"]]
    other = plots.load_run(_run_dir(tmp_path / "z", algo="ippo"))
    assert plots.label_runs(runs[:1] + [other]) == [["mappo"], ["ippo"]]


def test_a_sweep_of_16_settings_shows_the_best_8_at_a_bounded_size(tmp_path, captured):
    settings = [{"lr": lr, "ent_coef": e} for lr in (1e-4, 3e-4, 1e-3, 3e-3) for e in (0.0, 0.1)]
    settings += [{"lr": lr, "ent_coef": 0.01} for lr in (1e-5, 3e-5, 1e-2, 3e-2, 0.1, 0.3, 1, 3)]
    sweep = _run_dir(tmp_path / "sweep", settings=settings)
    plots.plot_runs([sweep], tmp_path / "figs", num_resamples=100)
    for fig in captured:
        width, height = fig.get_size_inches()
        assert height <= plots.MAX_HEIGHT and width <= 16, (fig.axes[0].get_title(), width, height)
    lines = _curves(captured[0])
    # returns grow with the setting index: the best 8 are the last 8, best first
    assert list(lines) == [
        f"mappo lr={plots._fmt(float(lr))}, ent_coef=0.01"
        for lr in (3, 1, 0.3, 0.1, 3e-2, 1e-2, 3e-5, 1e-5)
    ]
    styles = {(ln.get_color(), ln.get_linestyle()) for ln in lines.values()}
    assert len(styles) == 8, "every curve has its own colour"
    assert "best 8 of 16" in captured[0]._suptitle.get_text()
    poi = captured[-1]
    assert len(poi.axes[0].get_yticklabels()) == 7  # the best against each other one


def test_run_learning_curve_band_and_references(tmp_path, captured):
    ret = np.full((1, 2, 5), np.nan)
    ret[0, 0, [1, 3]] = [1.0, 3.0]
    ret[0, 1, [2, 4]] = [2.0, 4.0]
    plots.plot_setting_curves(
        np.arange(5), ret, [""], tmp_path / "curve.png", references={"optimum": 11.0}
    )
    (fig,) = captured
    line, ref = fig.axes[0].get_lines()
    np.testing.assert_array_equal(line.get_xdata(), [2, 3, 4])  # both seeds have a value
    np.testing.assert_allclose(line.get_ydata(), [1.5, 2.5, 3.5])
    assert ref.get_ydata()[0] == 11.0
    assert "mean over 2 seeds" in fig.legends[0].get_title().get_text()


def test_curve_band_is_the_mean_with_its_bootstrap_interval():
    from marljax.evaluation import stats

    x = np.random.default_rng(0).normal(size=(6, 4))
    band = plots.curve_band(x, np.arange(4), num_resamples=4000)
    ref = stats.sample_efficiency_curves(
        jax.random.PRNGKey(0), x[:, None], "mean", num_resamples=4000
    )
    np.testing.assert_allclose(band.mean, ref.point, rtol=1e-5)
    np.testing.assert_allclose(band.low, ref.low, atol=0.1)
    np.testing.assert_allclose(band.high, ref.high, atol=0.1)
    assert plots.curve_band(np.full((2, 3), np.nan), np.arange(3)) is None


def test_a_band_over_few_seeds_says_what_it_is():
    """Two seeds' bootstrap band is the range between them: the legend says so."""
    two = plots.curve_band(np.array([[0.0, 1.0], [2.0, 3.0]]), np.arange(2))
    np.testing.assert_allclose([two.low[0], two.high[0]], [0.0, 2.0])
    assert "not a 95% CI" in plots.band_name([2]) and "not a" not in plots.band_name([8])
    assert plots.band_name([1]) == "1 seed (no confidence band)"


def test_cli_plot_writes_to_a_new_folder(tmp_path, monkeypatch, capsys):
    a = _run_dir(tmp_path / "runs" / "a", lr=1e-3)
    b = _run_dir(tmp_path / "runs" / "b", lr=3e-4)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["plot", str(a), str(b), "--top", "1"]) == 0
    written = capsys.readouterr().out.split()
    assert written and all(p.startswith("plots/a_vs_b/") for p in written), written
    assert sorted((tmp_path / "runs" / "a").iterdir()) == [a / "config.json", a / "metrics.npz"]
