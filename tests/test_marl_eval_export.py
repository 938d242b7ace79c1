"""`marljax export`: runs with different logging schedules, one marl-eval step grid.

marl-eval (id-marl-eval 0.0.4) merges a folder of JSON files with `concatenate_json_files`
(every `*.json` under it) and reads `step_0 .. step_T` and the same metrics in every run; the
export is checked here on hand-written run directories (no training, no compile). The merge
itself was run with the real package (see docs/evaluation.md).
"""

import json

import numpy as np
import pytest

from marljax.evaluation.results import aligned_marl_eval
from marljax.shell.cli import main
from marljax.shell.outputs import export_marl_eval


def make_run(path, updates, seeds, algo="mappo", evals=True, grid=None):
    """A run directory as `run_experiment` writes it: config.json and metrics.npz."""
    path.mkdir()
    config = {"experiment": {"algo": algo, "env": "matrix/climbing-v0", "seed": 0}}
    if grid:
        config["resolved"] = {"grid_settings": grid}
    (path / "config.json").write_text(json.dumps(config))
    G = len(grid or [{}])
    steps = np.broadcast_to(np.arange(1, updates + 1) * 100, (G, seeds, updates))
    returns = np.arange(G * seeds * updates, dtype=np.float64).reshape(G, seeds, updates)
    returns[..., 1] = np.nan  # an update in which no episode ended
    metrics = {"env_steps": steps, "episode_return": returns}
    if evals:
        ev = np.full((G, seeds, updates), np.nan)
        ev[..., 2::3] = 7.0
        metrics["eval/episode_return"] = ev
    np.savez(path / "metrics.npz", **metrics)
    return path


def runs_of(path):
    data = json.loads(path.read_text())
    return data["matrix"]["climbing-v0"]


def test_runs_with_different_schedules_share_one_step_grid(tmp_path):
    a = make_run(tmp_path / "a", updates=12, seeds=2)
    b = make_run(tmp_path / "b", updates=30, seeds=3, algo="ippo",
                 grid=[{"lr": 0.001, "ent_coef": 0.0}, {"lr": 0.003, "ent_coef": 0.0}])  # fmt: skip
    out = tmp_path / "export"
    written = export_marl_eval([str(a), str(b)], str(out), points=4)
    assert (
        sorted(p.name for p in out.iterdir())
        == ["a.json", "b.json"]
        == sorted(p.rsplit("/", 1)[1] for p in written)
    )
    every = [run for f in ("a.json", "b.json") for algo in runs_of(out / f).values()
             for run in algo.values()]  # fmt: skip
    keys = {tuple(run) for run in every}
    assert keys == {("step_0", "step_1", "step_2", "step_3", "absolute_metrics")}
    assert {tuple(sorted(run["step_2"])) for run in every} == {
        ("eval_return", "return", "step_count")
    }
    # no comma in algorithm names (marl-eval refuses them)
    assert set(runs_of(out / "b.json")) == {
        "ippo[lr=1e-3 ent_coef=0]",
        "ippo[lr=3e-3 ent_coef=0]",
    }
    # window means of the finite values: run a, seed 0, updates 0-2 (update 1 is NaN)
    assert runs_of(out / "a.json")["mappo"]["seed_0"]["step_0"]["return"] == [1.0]
    assert runs_of(out / "a.json")["mappo"]["seed_1"]["absolute_metrics"]["return"] == [22.0]


def test_empty_windows_carry_the_last_value_and_the_grid_starts_where_all_have_one():
    values = np.array(
        [[np.nan, np.nan, 1.0, np.nan, 3.0, 5.0], [0.0, 2.0, np.nan, np.nan, 4.0, 6.0]]
    )
    steps = np.arange(1, 7) * 10
    out = aligned_marl_eval({"return": values}, steps, "matrix/x-v0", "a", ["s0", "s1"], points=6)
    runs = out["matrix"]["x-v0"]["a"]
    assert [runs["s0"][f"step_{t}"]["return"] for t in range(4)] == [[1.0], [1.0], [3.0], [5.0]]
    assert [runs["s1"][f"step_{t}"]["step_count"] for t in range(4)] == [30, 40, 50, 60]
    with pytest.raises(ValueError, match="no value in run s1"):
        aligned_marl_eval(
            {"return": np.array([[1.0], [np.nan]])}, steps[:1], "m/x", "a", ["s0", "s1"]
        )
    with pytest.raises(ValueError, match="commas"):
        aligned_marl_eval({"return": values}, steps, "m/x", "a[b=1,c=2]", ["s0", "s1"])


def test_the_cli_writes_a_folder_of_its_own(tmp_path, capsys):
    a = make_run(tmp_path / "a", updates=8, seeds=2)
    b = make_run(tmp_path / "b", updates=8, seeds=2, evals=False)
    out = tmp_path / "export"
    assert main(["export", str(a), str(b), "--to", str(out), "--points", "3"]) == 0
    captured = capsys.readouterr()
    assert "exported without them" in captured.out and "eval_return" in captured.out
    assert all(
        "eval_return" not in run["step_0"] for run in runs_of(out / "a.json")["mappo"].values()
    )
    assert main(["export", str(a), "--to", str(out)]) == 2  # not empty: marl-eval reads it all
    assert "needs a folder of its own" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "nothing"), "--to", str(tmp_path / "new")]) == 2
    assert "is not a run directory" in capsys.readouterr().err
