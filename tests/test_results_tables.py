"""Results as data: result files round-trip, and the README tables equal what the files give.

`baselines/tables.py` generates every table between `<!-- results:NAME -->` markers from the
per-seed files in `baselines/results/`; a result file changed without regenerating fails here.
"""

import importlib.util
import json
import os
import shutil

import numpy as np
import pytest

from marljax.shell import result_files as results

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def tables():
    spec = importlib.util.spec_from_file_location(
        "baseline_tables", os.path.join(ROOT, "baselines", "tables.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_tables_equal_the_stored_results(tables):
    assert tables.stale() == {}, "run: python baselines/tables.py"


def test_a_changed_result_file_makes_its_tables_stale(tables, tmp_path):
    shutil.copytree(tables.RESULTS, tmp_path, dirs_exist_ok=True)
    path = tmp_path / tables.PUNISHMENT["independent"]
    data = json.loads(path.read_text())
    row = next(r for r in data["rows"] if r["family"] == "Dasgupta pairs (2)")
    row["per_seed"][tables.COOP][0] = 1.0 - row["per_seed"][tables.COOP][0]
    path.write_text(json.dumps(data))
    stale = tables.stale(str(tmp_path))
    assert "punishment-paper" in stale["baselines/README.md"]
    assert "reproduced" in stale["README.md"]
    assert "punishment-pd2" not in stale["baselines/README.md"]  # other families untouched


def test_a_changed_benchmark_cell_makes_the_benchmark_table_stale(tables, tmp_path):
    shutil.copytree(tables.BENCHMARKS, tmp_path, dirs_exist_ok=True)
    path = tmp_path / "lbf8x8" / "benchmark.json"
    data = json.loads(path.read_text())
    data["cells"]["lbf/8x8-2p-2f-coop:qmix"]["iqm"] += 0.1
    path.write_text(json.dumps(data))
    stale = tables.stale(benchmarks=str(tmp_path))
    assert stale == {"README.md": ["benchmark"], "docs/benchmark_suite.md": ["benchmark"]}


def test_result_files_round_trip_with_provenance(tmp_path):
    path = str(tmp_path / "sub" / "r.json")
    rows = [{"condition": "a", "per_seed": {"x": np.array([1.0, np.nan]), "n": [1, 2]}}]
    written = results.write_results(path, "baselines/x.py", {"seeds": 2}, rows, ["--seeds", "2"])
    data = results.read_results(path)
    assert data == written
    assert data["command"] == "python baselines/x.py --seeds 2"
    assert {"jax", "marljax"} <= set(data["versions"]) and "git_commit" in data
    assert data["git_dirty"] in (True, False, None)
    np.testing.assert_array_equal(results.values(data["rows"][0], "x"), [1.0, np.nan])
    with pytest.raises(KeyError, match="no metric 'y'"):
        results.values(data["rows"][0], "y")
    with pytest.raises(ValueError, match="per_seed"):
        results.write_results(path, "baselines/x.py", {}, [{"condition": "a"}])
    data["rows"][0]["per_seed"]["n"] = [1]
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match="different seed counts"):
        results.read_results(str(tmp_path / "bad.json"))
    (tmp_path / "other.json").write_text("{}")
    with pytest.raises(ValueError, match="not a marljax result file"):
        results.read_results(str(tmp_path / "other.json"))


def test_statistics_are_computed_and_reproducible():
    x = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 10.0])
    assert results.mean_ci(x) == results.mean_ci(x)  # seeded resampling: same text every time
    mean, low, high = results.mean_ci(x)
    assert mean == pytest.approx(x.mean()) and low < mean < high
    assert results.iqm(x) == pytest.approx(np.mean([0.0, 1.0, 1.0, 1.0]))  # middle 4 of 8
    assert results.count(x, lambda v: v >= 1) == "5/8"
    assert results.p_greater(np.array([1.0, 2.0]), np.array([1.0])) == pytest.approx(0.75)
    with pytest.raises(ValueError, match="finite"):
        results.mean_ci(np.array([1.0, np.nan]))


def test_binomial_intervals_and_paired_test():
    low, high = results.wilson_interval(0, 16)
    assert low == 0.0 and high == pytest.approx(0.1936, abs=1e-4)  # not the Wald interval's 0
    low, high = results.wilson_interval(55, 64)
    assert low < 55 / 64 < high and (low, high) == pytest.approx((0.754, 0.924), abs=1e-3)
    assert results.wilson_interval(64, 64)[1] == 1.0
    with pytest.raises(ValueError, match="n >= 1"):
        results.wilson_interval(0, 0)
    assert results.mcnemar_exact(5, 1) == pytest.approx(14 / 64)  # 2 P(B(6, 1/2) <= 1)
    assert results.mcnemar_exact(1, 5) == results.mcnemar_exact(5, 1)
    assert results.mcnemar_exact(0, 0) == 1.0 and results.mcnemar_exact(3, 3) == 1.0


def test_blocks_are_filled_between_their_markers():
    text = "a\n<!-- results:t -->\nold\n<!-- /results:t -->\nb\n"
    assert results.block_names(text) == ["t"]
    new = results.fill_blocks(text, {"t": "| x |\n", "unused": "y"})
    assert new == "a\n<!-- results:t -->\n| x |\n<!-- /results:t -->\nb\n"
    assert results.stale_blocks(text, {"t": "| x |\n"}) == ["t"]
    assert results.stale_blocks(new, {"t": "| x |\n"}) == []
    with pytest.raises(KeyError, match="without a generator"):
        results.fill_blocks(text, {})
    table = results.markdown_table(["a", "b"], [[1, None]])
    assert table == "| a | b |\n|---|---|\n| 1 |  |\n"
    with pytest.raises(ValueError, match="cells"):
        results.markdown_table(["a"], [[1, 2]])


def test_baseline_main_writes_its_per_seed_results(tmp_path, capsys):
    """`baselines/` scripts built on `baseline_main` take `--results FILE`: every seed's final
    return and the script's verdict, with the experiment that produced them."""
    from marljax.shell.baseline import baseline_main
    from marljax.shell.experiment import Experiment, final_returns

    exp = Experiment(algo="mappo", env="matrix/penalty_k0-v0", seeds=2,
                     train={"num_envs": 4, "rollout_len": 4, "total_env_steps": 64},
                     agent={"hidden_sizes": (8,), "num_minibatches": 1})  # fmt: skip
    path = tmp_path / "r.json"
    argv = ["--out", str(tmp_path), "--results", str(path)]
    result = baseline_main("doc", exp, lambda r: "high" if r >= 5 else "low", argv=argv)
    data = results.read_results(str(path))
    (row,) = data["rows"]
    final = results.values(row, "final_return")
    np.testing.assert_array_equal(final, final_returns(result.metrics)[0])  # as printed
    assert row["verdict"] == ["high" if r >= 5 else "low" for r in final]
    assert row["parameter_mode"] == "shared_id" and data["config"]["algo"] == "mappo"
    assert data["config"]["seeds"] == 2 and final.shape == (2,)
    assert f"seed 0: final return {final[0]:.2f}" in capsys.readouterr().out
