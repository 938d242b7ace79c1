"""rliable / marl-eval statistics: hand-computed values, agreement with rliable, bad inputs,
marl-eval JSON round trips, and plots."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from marljax.evaluation import results
from marljax.evaluation import stats as S

#: the results and plotting code must not warn (an empty slice is handled, not averaged)
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

KEY = jax.random.PRNGKey(0)


def _scores(seed=0, runs=10, tasks=3, loc=0.6):
    return np.random.RandomState(seed).normal(loc, 0.3, (runs, tasks))


TAUS = np.linspace(-0.2, 1.4, 9)


def _curves(seed=0, runs=10, tasks=3, points=4):
    return np.cumsum(np.random.RandomState(seed).uniform(size=(runs, tasks, points)), axis=-1)


def _rliable_library():
    """Import `rliable.library`. arch 7.2 (its dependency) calls pandas' `deprecate_kwarg` with
    the pre-pandas-3 signature at import time; shim that one call for the import only."""
    pytest.importorskip("rliable")
    import pandas.util._decorators as decorators

    original = decorators.deprecate_kwarg

    def compat(*args, **kwargs):
        if args and isinstance(args[0], str):  # old signature (old_arg_name, new_arg_name)
            return original(FutureWarning, *args, **kwargs)
        return original(*args, **kwargs)

    decorators.deprecate_kwarg = compat
    try:
        from rliable import library
    except Exception as err:  # pragma: no cover - depends on the installed stack
        pytest.skip(f"rliable.library not importable: {err}")
    finally:
        decorators.deprecate_kwarg = original
    return library


# ----------------------------------------------------------------------------- hand-computed


@pytest.mark.parametrize("jit", [False, True])
def test_aggregates_by_hand(jit):
    # runs x tasks; per-task means (2, 5), sorted values 1 2 3 3 7 8 -> cut 1 from each end
    x = jnp.array([[1.0, 3.0], [3.0, 7.0], [2.0, 5.0 + 3.0]])
    f = (lambda g: jax.jit(g)) if jit else (lambda g: g)
    np.testing.assert_allclose(f(S.aggregate_mean)(x), (2.0 + 6.0) / 2)
    np.testing.assert_allclose(f(S.aggregate_median)(x), 4.0)
    np.testing.assert_allclose(f(S.aggregate_iqm)(x), (2 + 3 + 3 + 7) / 4)
    # min(x, 3) = 1 3 3 3 2 3 -> mean 15/6
    np.testing.assert_allclose(f(S.aggregate_optimality_gap)(x, 3.0), 3.0 - 15 / 6, rtol=1e-6)
    # task 0: x (1, 3) vs y (3, 0): pairs 1>3 n, 1>0 y, 3=3 half, 3>0 y -> 2.5 / 4
    # task 1: x (2, 4) vs y (2, 2): ties 0.5 * 2 + 4>2 twice -> 3 / 4
    px = jnp.array([[1.0, 2.0], [3.0, 4.0]])
    py = jnp.array([[3.0, 2.0], [0.0, 2.0]])
    np.testing.assert_allclose(f(S.probability_of_improvement)(px, py), (2.5 / 4 + 3 / 4) / 2)
    np.testing.assert_allclose(S.probability_of_improvement(px, px), 0.5)
    taus = jnp.array([0.0, 2.5, 10.0])
    np.testing.assert_allclose(S.score_distribution(x, taus), [1.0, 4 / 6, 0.0])
    np.testing.assert_allclose(S.average_score_distribution(x, taus), [1.0, 0.5, 0.0])


@pytest.mark.parametrize("n", [1, 3, 4, 7, 8, 30])
def test_iqm_is_scipy_trim_mean(n):
    x = np.random.RandomState(n).normal(size=(n, 1)) ** 3
    expected = scipy.stats.trim_mean(x, proportiontocut=0.25, axis=None)
    np.testing.assert_allclose(S.aggregate_iqm(x), expected, rtol=1e-5, atol=1e-6)


def test_stratified_resample_stays_within_task():
    x = jnp.arange(12.0).reshape(4, 3) * 10 + jnp.arange(3.0)  # task k values end in k
    r = S.stratified_resample(KEY, x)
    assert r.shape == x.shape
    np.testing.assert_array_equal(np.asarray(r) % 10, np.tile(np.arange(3.0), (4, 1)))
    # a [R, K, T] curve moves with its run
    c = jnp.broadcast_to(x[:, :, None], (4, 3, 5)) + jnp.arange(5.0) * 0.01
    rc = S.stratified_resample(KEY, c)
    np.testing.assert_allclose(rc[:, :, 3] - rc[:, :, 0], 0.03, atol=1e-5)


def test_constant_scores_give_degenerate_intervals():
    est = S.aggregate_metrics(KEY, np.full((10, 3), 0.7))
    for m in S.AGGREGATES:
        p, lo, hi = (float(v) for v in est[m])
        assert lo == pytest.approx(p) and hi == pytest.approx(p), m


def test_interval_contains_point_and_shrinks_with_confidence():
    x = _scores()
    wide = S.aggregate_metrics(KEY, x, confidence=0.99)["iqm"]
    narrow = S.aggregate_metrics(KEY, x, confidence=0.5)["iqm"]
    assert wide.low < narrow.low < narrow.point < narrow.high < wide.high
    # the interval is the percentile of the bootstrap replicates (same key, same resamples)
    stat = S._stacked_statistic(tuple(S.aggregate_fn(m) for m in S.AGGREGATES))
    reps = S.bootstrap_replicates(jax.random.fold_in(KEY, 0), stat, x, num_resamples=2000)
    assert reps.shape == (2000, len(S.AGGREGATES))
    iqm = np.asarray(reps[:, S.AGGREGATES.index("iqm")], np.float64)
    np.testing.assert_allclose([wide.low, wide.high], np.quantile(iqm, [0.005, 0.995]), rtol=1e-5)
    # batched evaluation (lax.map chunks) draws the same resamples as one vmap
    chunked = S.aggregate_metrics(KEY, x, confidence=0.99, batch_size=500)["iqm"]
    np.testing.assert_allclose(chunked, wide, rtol=1e-6)


# ----------------------------------------------------------------------------- against rliable


def test_point_estimates_equal_rliable():
    metrics = pytest.importorskip("rliable.metrics")

    for data in (_scores(0), _scores(1, runs=7, loc=0.5), _scores(2, runs=5, tasks=1)):
        np.testing.assert_allclose(S.aggregate_mean(data), metrics.aggregate_mean(data), rtol=1e-6)
        np.testing.assert_allclose(
            S.aggregate_median(data), metrics.aggregate_median(data), rtol=1e-6
        )
        np.testing.assert_allclose(S.aggregate_iqm(data), metrics.aggregate_iqm(data), rtol=1e-6)
        np.testing.assert_allclose(
            S.aggregate_optimality_gap(data, 0.8),
            metrics.aggregate_optimality_gap(data, 0.8),
            rtol=1e-5,
        )
    x, y = _scores(0), _scores(1, runs=7, loc=0.5)
    np.testing.assert_allclose(
        S.probability_of_improvement(x, y), metrics.probability_of_improvement(x, y), rtol=1e-6
    )
    # with ties (discrete scores), the Mann-Whitney 0.5 convention matters
    xi, yi = np.round(x * 4), np.round(y * 4)
    np.testing.assert_allclose(
        S.probability_of_improvement(xi, yi),
        metrics.probability_of_improvement(xi, yi),
        rtol=1e-6,
    )
    # the point of an interval estimate is the plain statistic
    est = S.aggregate_metrics(KEY, {"x": _scores(0)})
    np.testing.assert_allclose(est["x"]["iqm"].point, metrics.aggregate_iqm(_scores(0)), 1e-6)


def _cdf(samples, value):
    """Mid-rank empirical CDF of `samples` at `value`."""
    samples = np.asarray(samples)
    return (np.mean(samples < value) + np.mean(samples <= value)) / 2


def test_intervals_agree_with_rliable_within_bootstrap_noise():
    """Both CIs estimate the same quantiles of the same bootstrap distribution.

    Tolerance: our bootstrap distribution (B_ours resamples) is evaluated at rliable's endpoints
    (B_rl resamples). Where rliable's lower endpoint is its empirical alpha-quantile, our CDF there
    is alpha plus two independent binomial errors, sd = sqrt(alpha (1 - alpha)
    (1 / B_ours + 1 / B_rl)) = 0.0027 for alpha = 0.025, B_ours = 20000, B_rl = 4000. We allow
    4.5 sd (0.012): a false-failure rate below 1e-5 per endpoint. Measured on these scores,
    resampling without stratification (one run index shared by all tasks) puts the upper IQM,
    mean and optimality-gap endpoints 0.016 to 0.025 away in CDF units, so the test tells the
    two procedures apart.
    """
    library = _rliable_library()
    metrics = pytest.importorskip("rliable.metrics")

    x = _scores(0)
    b_ours, b_rl, alpha = 20000, 4000, 0.025
    tol = 4.5 * np.sqrt(alpha * (1 - alpha) * (1 / b_ours + 1 / b_rl))
    fns = {
        "median": metrics.aggregate_median,
        "iqm": metrics.aggregate_iqm,
        "mean": metrics.aggregate_mean,
        "optimality_gap": metrics.aggregate_optimality_gap,
    }
    np.random.seed(0)  # rliable draws from numpy's global generator
    _, rl = library.get_interval_estimates(
        {"x": x}, lambda s: np.array([f(s) for f in fns.values()]), reps=b_rl
    )
    stat = S._stacked_statistic(tuple(S.aggregate_fn(m) for m in fns))
    reps = np.asarray(S.bootstrap_replicates(KEY, stat, x, num_resamples=b_ours), np.float64)
    for i, m in enumerate(fns):
        assert abs(_cdf(reps[:, i], rl["x"][0, i]) - alpha) < tol, m
        assert abs(_cdf(reps[:, i], rl["x"][1, i]) - (1 - alpha)) < tol, m

    y = _scores(1, loc=0.5)
    np.random.seed(1)
    _, rl_poi = library.get_interval_estimates(
        {"xy": [x, y]}, metrics.probability_of_improvement, reps=1000
    )
    poi = S.probability_of_improvement_ci(KEY, x, y)  # 2000 resamples
    # endpoint noise (B = 2000 vs 1000) is ~0.006 in CDF units, ~2 % of the width here
    width = float(poi.high - poi.low)
    assert abs(float(poi.low) - rl_poi["xy"][0]) < 0.12 * width
    assert abs(float(poi.high) - rl_poi["xy"][1]) < 0.12 * width


def test_performance_profile_and_curves_agree_with_rliable_points():
    library = _rliable_library()
    x = _scores(0)
    taus = TAUS
    rl_prof, _ = library.create_performance_profile({"x": x}, taus, reps=5)
    ours = S.performance_profiles(KEY, {"x": x}, taus)
    np.testing.assert_allclose(ours["x"].point, rl_prof["x"], atol=1e-6)
    assert np.all(ours["x"].low <= ours["x"].point + 1e-6)
    assert np.all(ours["x"].high >= ours["x"].point - 1e-6)
    rl_avg, _ = library.create_performance_profile(
        {"x": x}, taus, use_score_distribution=False, reps=5
    )
    avg = S.performance_profiles(KEY, x, taus, per_task_mean=True, num_resamples=100)
    np.testing.assert_allclose(avg.point, rl_avg["x"], atol=1e-6)

    curves = _curves(2)
    est = S.sample_efficiency_curves(KEY, {"a": curves, "b": curves + 1.0})
    for t in range(curves.shape[-1]):
        expected = scipy.stats.trim_mean(curves[..., t], 0.25, axis=None)
        np.testing.assert_allclose(est["a"].point[t], expected, rtol=1e-5)
    np.testing.assert_allclose(est["b"].point, est["a"].point + 1.0, rtol=1e-5)
    assert np.all(np.diff(np.asarray(est["a"].point)) > 0)
    assert np.all(est["a"].low <= est["a"].point) and np.all(est["a"].point <= est["a"].high)


def test_pairwise_probability_of_improvement():
    d = {"a": _scores(0, loc=1.0), "b": _scores(1, loc=0.0), "c": _scores(2, loc=0.0)}
    out = S.pairwise_probability_of_improvement(KEY, d)
    assert set(out) == {("a", "b"), ("a", "c"), ("b", "c")}
    assert float(out[("a", "b")].low) > 0.9
    assert float(out[("b", "c")].low) < 0.5 < float(out[("b", "c")].high)
    with pytest.raises(KeyError, match="'z'"):
        S.pairwise_probability_of_improvement(KEY, d, pairs=[("a", "z")])


def test_format_comparison_prints_the_intervals_it_computes():
    d = {"x": np.array([3.0, 3.0, 3.0, 3.0]), "yy": np.array([1.0, 2.0, 1.0, 2.0])}
    text = S.format_comparison(KEY, d, metrics=("mean",), label="greedy")
    lines = text.splitlines()
    assert lines[0] == "greedy x  mean     3.00  95% CI [3.00, 3.00]"
    assert lines[1].startswith("greedy yy mean     1.50  95% CI [")
    assert lines[2] == "greedy P(x > yy) = 1.00  95% CI [1.00, 1.00]"
    assert len(lines) == 3


# ----------------------------------------------------------------------------- bad input


def test_bad_inputs_raise_clear_errors():
    good = _scores()
    nan = good.copy()
    nan[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"'b'.*NaN.*\(3, 1\)"):
        S.aggregate_metrics(KEY, {"a": good, "b": nan})
    with pytest.raises(ValueError, match="non-finite"):
        S.probability_of_improvement_ci(KEY, good, np.where(good > 0.5, np.inf, good))
    with pytest.raises(ValueError, match="unequal length"):
        S.aggregate_metrics(KEY, [[1.0, 2.0], [1.0]])
    with pytest.raises(ValueError, match=r"\[runs, tasks\]"):
        S.aggregate_metrics(KEY, np.ones(5))
    with pytest.raises(ValueError, match="disagree on tasks"):
        S.aggregate_metrics(KEY, {"a": good, "b": good[:, :2]})
    with pytest.raises(ValueError, match="T"):
        S.sample_efficiency_curves(KEY, good)
    with pytest.raises(ValueError, match="unknown aggregate"):
        S.aggregate_metrics(KEY, good, metrics=("iqr",))
    with pytest.raises(ValueError, match="confidence"):
        S.aggregate_metrics(KEY, good, confidence=95)


def test_stack_scores_names_what_is_missing():
    data = {
        "ippo": {"climb": [1.0, 2.0, 3.0], "penalty": [0.0, 1.0, 2.0]},
        "mappo": {"climb": [2.0, 2.0, 4.0, 5.0], "penalty": [1.0, 1.0, 1.0, 0.0]},
    }
    arrays, tasks = S.stack_scores(data)
    assert tasks == ["climb", "penalty"]
    assert arrays["ippo"].shape == (3, 2) and arrays["mappo"].shape == (4, 2)
    np.testing.assert_array_equal(arrays["ippo"][:, 1], [0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match=r"'mappo' is missing task\(s\) \['penalty'\]"):
        S.stack_scores({"ippo": data["ippo"], "mappo": {"climb": [1.0]}})
    with pytest.raises(ValueError, match=r"'ippo' has a different number of runs.*'penalty': 2"):
        S.stack_scores({"ippo": {"climb": [1.0, 2.0, 3.0], "penalty": [1.0, 2.0]}})
    with pytest.raises(ValueError, match="run 1: \\(2,\\)"):
        S.stack_scores({"a": {"t": [[1.0, 2.0, 3.0], [1.0, 2.0]]}})
    with pytest.raises(ValueError, match="NaN"):
        S.stack_scores({"a": {"t": [1.0, float("nan")]}})
    curves, _ = S.stack_scores({"a": {"t": [[1.0, 2.0], [3.0, 4.0]], "u": [[0.0, 0.0]] * 2}})
    assert curves["a"].shape == (2, 2, 2)


# ----------------------------------------------------------------------------- marl-eval JSON


def _ours(tmp_path):
    """What experiment.py writes: NaN where no episode finished in an update."""
    ret = np.array([[np.nan, 1.0, 2.0, 3.0], [0.5, 1.5, np.nan, 3.5], [0.0, 1.0, 2.0, 2.5]])
    steps = np.tile(np.array([128, 256, 384, 512]), (3, 1))
    data = results.to_marl_eval(
        {"episode_return": ret, "env_steps": steps},
        "matrix/climbing-v0",
        "mappo",
        ["seed_0", "seed_1", "seed_2"],
    )
    path = tmp_path / "metrics.json"
    results.write_json(path, data)
    return path, ret


def test_marl_eval_round_trip_of_our_runs(tmp_path):
    path, ret = _ours(tmp_path)
    raw = results.read_marl_eval(path)
    assert raw["matrix"]["climbing-v0"]["mappo"]["seed_0"]["absolute_metrics"] == {"return": [3.0]}
    loaded = results.load_marl_eval(path, align="step_count")
    assert loaded.tasks == ["matrix/climbing-v0"]
    np.testing.assert_allclose(loaded.final["mappo"][:, 0], [3.0, 3.5, 2.5])
    np.testing.assert_array_equal(loaded.step_counts, [256, 512])  # logged by every seed
    np.testing.assert_allclose(loaded.curves["mappo"][:, 0, :], ret[:, [1, 3]])
    with pytest.raises(ValueError, match="align='step_count'"):
        results.load_marl_eval(path)  # seeds skipped different updates


def test_marl_eval_arrays_round_trip(tmp_path):
    rng = np.random.RandomState(0)
    curves = {"ippo": rng.normal(size=(3, 2, 4)), "qmix": rng.normal(size=(5, 2, 4))}
    tasks = ["lbf/8x8-2p-v0", "lbf/10x10-3p-v0"]
    steps = np.array([10, 20, 30, 40])
    data = results.scores_to_marl_eval(curves, steps, tasks, metric="mean_episode_return")
    path = tmp_path / "m.json"
    results.write_json(path, data)
    back = results.load_marl_eval(path, metric="mean_episode_return")
    assert back.tasks == tasks
    np.testing.assert_array_equal(back.step_counts, steps)
    for algo, c in curves.items():
        np.testing.assert_allclose(back.curves[algo], c)
        np.testing.assert_allclose(back.final[algo], c[:, :, -1])
    assert back.runs["qmix"]["lbf/8x8-2p-v0"] == [f"seed_{r}" for r in range(5)]
    # the loaded arrays feed the statistics directly
    np.testing.assert_allclose(
        S.aggregate_iqm(back.final["qmix"]), scipy.stats.trim_mean(c[:, :, -1], 0.25, None), 1e-5
    )


def test_load_marl_eval_of_another_framework():
    """Mava-style file: several eval episodes per step, extra metrics, 10+ seeds."""

    def run(offset):
        entry = {
            f"step_{k}": {
                "step_count": 1000 * (k + 1),
                "elapsed_time": 1.5 * k,
                "mean_episode_return": [offset + k, offset + k + 1.0],
                "win_rate": [0.5],
            }
            for k in range(3)
        }
        entry["absolute_metrics"] = {"mean_episode_return": [offset + 10.0], "win_rate": [1.0]}
        return entry

    data = {
        "Smax": {
            "3m": {"ff_mappo": {f"seed_{s}": run(s) for s in (10, 2, 0)}},
        },
        "extra": {"ignored": True},
    }
    out = results.load_marl_eval(data, metric="mean_episode_return")
    assert out.runs["ff_mappo"]["Smax/3m"] == ["seed_0", "seed_2", "seed_10"]
    np.testing.assert_allclose(out.final["ff_mappo"][:, 0], [10.0, 12.0, 20.0])
    np.testing.assert_allclose(out.curves["ff_mappo"][0, 0], [0.5, 1.5, 2.5])
    last = results.load_marl_eval(data, metric="win_rate", final="last_step")
    np.testing.assert_allclose(last.final["ff_mappo"], 0.5)
    with pytest.raises(ValueError, match=r"'return' missing.*present: \['elapsed_time'"):
        results.load_marl_eval(data)
    with pytest.raises(ValueError, match="environment 'lbf' not in the data"):
        results.load_marl_eval(data, metric="win_rate", env="lbf")


def test_load_marl_eval_bad_files(tmp_path):
    base = {"e": {"t": {"a": {"seed_0": {"absolute_metrics": {"return": [1.0]}}}}}}
    two_algos = json.loads(json.dumps(base))
    two_algos["e"]["u"] = {"b": {"seed_0": {"absolute_metrics": {"return": [1.0]}}}}
    with pytest.raises(ValueError, match=r"'a' is missing task\(s\) \['e/u'\].*'b' is missing"):
        results.load_marl_eval(two_algos)
    no_abs = {"e": {"t": {"a": {"seed_0": {"step_0": {"step_count": 1, "return": [1.0]}}}}}}
    with pytest.raises(ValueError, match="e/t/a/seed_0 has no absolute_metrics"):
        results.load_marl_eval(no_abs)
    nan = json.loads(json.dumps(base))
    nan["e"]["t"]["a"]["seed_0"]["absolute_metrics"]["return"] = [float("nan")]
    path = tmp_path / "nan.json"
    results.write_json(path, nan)
    with pytest.raises(ValueError, match="NaN"):
        results.load_marl_eval(path)
    bad_key = json.loads(json.dumps(base))
    bad_key["e"]["t"]["a"]["seed_0"]["eval"] = {"return": [1.0]}
    with pytest.raises(ValueError, match="'eval'"):
        results.load_marl_eval(bad_key)


# ----------------------------------------------------------------------------- plots


def test_plot_functions_write_files(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from marljax.evaluation import plots

    d = {"a": _scores(0), "b": _scores(1, loc=0.4)}
    agg = S.aggregate_metrics(KEY, d)
    poi = S.pairwise_probability_of_improvement(KEY, d)
    taus = TAUS
    prof = S.performance_profiles(KEY, d, taus)
    eff = S.sample_efficiency_curves(KEY, {"a": _curves(0), "b": _curves(1)})
    paths = [
        plots.plot_interval_estimates(agg, tmp_path / "agg.png"),
        plots.plot_probability_of_improvement(poi, tmp_path / "poi.png"),
        plots.plot_performance_profiles(prof, taus, tmp_path / "prof.png"),
        plots.plot_sample_efficiency(eff, np.arange(4) * 100, tmp_path / "eff.png"),
        plots.plot_crossplay_heatmap(
            np.arange(9.0).reshape(3, 3), tmp_path / "xp.png", labels=["s0", "s1", "s2"]
        ),
    ]
    for p in paths:
        assert p.exists() and p.stat().st_size > 1000, p
