"""The benchmark suite: cells, the runner (resumable), its statistics, bands and `marljax check`.

Budgets are tiny: the long runs live in `baselines/benchmarks/` with their commands.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil

import numpy as np
import pytest

from marljax.benchmarks import CELLS, TASKS, bands, cell, check_run, make_band, runner, scores
from marljax.core.config import ConfigError
from marljax.shell import cli
from marljax.shell.experiment import Experiment, run_experiment

# ----------------------------------------------------------------------------- the suite


def test_suite_covers_the_issue_tasks_and_algorithms():
    tasks = {c.task for c in CELLS.values()}
    need = {"smax/3m", "smax/2s3z", "lbf/8x8-2p-2f-coop", "lbf/10x10-3p-3f", "rware/tiny-2ag",
            "rware/tiny-4ag", "mpe/simple_spread", "overcooked_v2/cramped_room"}  # fmt: skip
    assert need <= tasks
    assert len([t for t in tasks if t.startswith("smax/")]) >= 4
    for t in ("smax/3m", "lbf/8x8-2p-2f-coop", "rware/tiny-2ag", "mpe/simple_spread"):
        assert {c.algo for c in CELLS.values() if c.task == t} >= {
            "ippo",
            "mappo",
            "qmix",
            "vdn",
            "iql",
            "pqn_vdn",
        }
    for c in CELLS.values():
        assert c.cpu_budget <= c.budget and c.source
        assert TASKS[c.task].metric in ("task/win_rate", "episode_return")


def test_every_cell_is_a_valid_experiment():
    from marljax.benchmarks.suite import experiment_kwargs

    for c in CELLS.values():
        exp = Experiment(seeds=1, **experiment_kwargs(c, c.cpu_budget))
        assert exp.train.total_env_steps == c.cpu_budget


def test_smax_happo_cell_is_the_mappo_cell_but_for_the_update_and_the_actors():
    """HAPPO vs MAPPO on SMAX is a side-by-side at equal settings: the HAPPO cell resolves to
    the MAPPO cell's configuration, with one actor per agent."""
    from marljax.agents import preset

    def resolved(c):
        p = preset(c.algo, c.preset) if c.preset else None
        return [{**(getattr(p, part) if p else {}), **getattr(c, mine)}
                for part, mine in (("config", "agent"), ("hparams", "hparams"),
                                   ("train", "train"))]  # fmt: skip

    for task in [t for t in TASKS if t.startswith("smax/")]:
        mappo = CELLS[f"{task}:mappo"]
        (h, hh, ht), (m, mh, mt) = resolved(CELLS[f"{task}:happo"]), resolved(mappo)
        assert mappo.preset == "jaxmarl" and hh == mh
        assert ht == {k: v for k, v in mt.items() if k != "total_env_steps"}
        assert h.pop("parameter_mode") == "independent" and m.pop("parameter_mode") == "shared"
        assert h == m
        assert CELLS[f"{task}:mat"].train == {"num_envs": 32, "rollout_len": 100}
    # Overcooked-v2: MAPPO is the IPPO cell with a centralised critic
    (m, mh, mt), (i, ih, it) = (resolved(CELLS[f"overcooked_v2/cramped_room:{a}"])
                                for a in ("mappo", "ippo"))  # fmt: skip
    assert mh == ih and mt == {k: v for k, v in it.items() if k != "total_env_steps"}
    assert m.pop("critic_input") == "global" and m == i
    assert "pqn_vdn" in {c.algo for c in CELLS.values() if c.task.startswith("overcooked")}


def test_bad_cells_and_budgets_fail_before_anything_is_built(tmp_path):
    with pytest.raises(KeyError, match="Unknown benchmark task 'smax/3n'.*smax/3m"):
        cell("smax/3n", "mappo")
    with pytest.raises(KeyError, match="Unknown algorithm 'mapo'.*mappo"):
        cell("smax/3m", "mapo")
    with pytest.raises(KeyError, match="No benchmark cell for 'maddpg' on smax/3m"):
        cell("smax/3m", "maddpg")  # continuous actions: no cell on SMAX
    with pytest.raises(ConfigError, match="budget"):
        runner.parse_budget("lots")
    with pytest.raises(ConfigError, match="budget"):
        runner.parse_budget("-5")
    assert runner.parse_budget("1e6") == "1000000" and runner.parse_budget("CPU") == "cpu"
    rc = cli.main(["benchmark", "--tasks", "smax/3m", "--algos", "maddpg", "--out",
                   str(tmp_path / "b")])  # fmt: skip
    assert rc == 2 and not (tmp_path / "b").exists()
    rc = cli.main(["benchmark", "--max-memory", "lots", "--out", str(tmp_path / "m")])
    assert rc == 2 and not (tmp_path / "m").exists()


# ------------------------------------------------------------------------------- statistics


def test_curve_points_are_window_means():
    values = np.array([[1.0, 3.0, np.nan, 5.0], [0.0, 0.0, 2.0, np.nan]])
    steps, curve = scores.curve_points(values, np.array([10, 20, 30, 40]), points=2)
    assert steps.tolist() == [20, 40]
    np.testing.assert_allclose(curve, [[2.0, 5.0], [0.0, 2.0]])
    _, one = scores.curve_points(values, np.arange(4), points=10)  # at most one point per update
    assert one.shape == (2, 4)
    iqm, low, high = scores.iqm_ci(np.array([0.0, 1.0, 2.0, 3.0, np.nan]))
    assert low <= iqm <= high and iqm == pytest.approx(1.5)
    assert scores.iqm_ci(np.array([0.7])) == (0.7, 0.7, 0.7)


# ----------------------------------------------------------------------------- the runner


def _tiny(monkeypatch):
    """The MPE simple spread cells with a 2-update budget and small networks."""
    small = {
        name: type(c)(**{**c.__dict__, "agent": {**c.agent, "hidden_sizes": (8,)},
                         "train": {**c.train, "num_envs": 4, "rollout_len": 25}})
        for name, c in CELLS.items()
        if c.task == "mpe/simple_spread"
    }  # fmt: skip
    monkeypatch.setattr("marljax.benchmarks.suite.CELLS", {**CELLS, **small})


def test_benchmark_runs_resumes_and_reports(tmp_path, monkeypatch):
    _tiny(monkeypatch)
    out = str(tmp_path / "bench")
    calls = []
    real = runner._run_cell

    def crash_on_mappo(exp, run_dir, *args):
        calls.append(exp.algo)
        if exp.algo == "mappo" and calls.count("mappo") == 1:
            raise KeyboardInterrupt  # killed during the second cell
        return real(exp, run_dir, *args)

    monkeypatch.setattr(runner, "_run_cell", crash_on_mappo)
    kwargs = dict(seeds=2, budget=200, progress=False)
    with pytest.raises(KeyboardInterrupt):
        runner.run_benchmark(["mpe/simple_spread"], ["ippo", "mappo"], out, **kwargs)
    with open(os.path.join(out, "benchmark.json")) as f:
        assert list(json.load(f)["cells"]) == ["mpe/simple_spread:ippo"]
    state = runner.run_benchmark(["mpe/simple_spread"], ["ippo", "mappo"], out, **kwargs)
    assert calls == ["ippo", "mappo", "mappo"]  # the finished cell is not run again
    ippo = state["cells"]["mpe/simple_spread:ippo"]
    assert ippo["seeds"] == 2 and len(ippo["final"]) == 2 and ippo["budget"] == 200
    assert ippo["low"] <= ippo["iqm"] <= ippo["high"]
    table = open(os.path.join(out, "results.md")).read()
    assert "| mpe/simple_spread | mappo | return | 200 | 2 |" in table
    assert "none found" in table
    assert os.path.exists(os.path.join(out, "performance_profile.png"))
    os.remove(os.path.join(out, "results.md"))
    assert cli.main(["benchmark", "--report", out]) == 0  # regenerated from benchmark.json
    assert open(os.path.join(out, "results.md")).read() == table
    with pytest.raises(ValueError, match="another plan"):
        runner.run_benchmark(["mpe/simple_spread"], ["ippo"], out, **kwargs)
    # bands of the finished cells; a cell whose run directory was moved away is named and skipped
    shutil.rmtree(os.path.join(out, ippo["run_dir"]))
    path = str(tmp_path / "bands.json")
    argv = ["benchmark", "--tasks", "mpe/simple_spread", "--algos", "ippo,mappo", "--seeds", "2",
            "--budget", "200", "--out", out, "--write-bands", path, "--no-progress"]  # fmt: skip
    assert cli.main(argv) == 0
    assert calls == ["ippo", "mappo", "mappo"]  # nothing trained again
    assert [b["name"] for b in bands.load_bands(path)] == ["mpe/simple_spread:mappo"]


def test_set_overrides_every_cell_and_is_part_of_the_plan(tmp_path, monkeypatch):
    _tiny(monkeypatch)
    out = str(tmp_path / "ablation")
    kwargs = dict(seeds=1, budget=200, progress=False)
    for bad, match in (({"lrr": "1e-3"}, "Unknown benchmark --set .*'lr'"),
                       ({"env.num_agents": "4"}, "env options are part of the task"),
                       ({"total_env_steps": "10"}, "--budget"),
                       ({"num_epochs": "many"}, "num_epochs")):  # fmt: skip
        with pytest.raises(ConfigError, match=match):
            runner.run_benchmark(["mpe/simple_spread"], ["ippo"], out, overrides=bad, **kwargs)
        assert not os.path.exists(out)  # refused before anything is written or compiled
    sets = {"num_epochs": "1", "lr": "1e-3"}
    state = runner.run_benchmark(["mpe/simple_spread"], ["ippo"], out, overrides=sets, **kwargs)
    assert state["plan"]["overrides"] == sets
    run_dir = os.path.join(out, state["cells"]["mpe/simple_spread:ippo"]["run_dir"])
    with open(os.path.join(run_dir, "config.json")) as f:
        resolved = json.load(f)["resolved"]
    assert resolved["agent"]["num_epochs"] == 1
    assert resolved["hparams"][0]["lr"] == pytest.approx(1e-3)  # one setting
    assert (
        "`lr=1e-3`, `num_epochs=1` over its published configuration"
        in open(os.path.join(out, "results.md")).read()
    )
    with pytest.raises(ValueError, match="another plan"):  # the same cells, unchanged
        runner.run_benchmark(["mpe/simple_spread"], ["ippo"], out, **kwargs)
    argv = ["benchmark", "--tasks", "mpe/simple_spread", "--algos", "ippo", "--budget", "200",
            "--set", "num_epochs=1", "--write-bands", str(tmp_path / "b.json")]  # fmt: skip
    assert cli.main(argv) == 2 and not (tmp_path / "b.json").exists()


def test_results_table_compares_with_the_published_number():
    state = {"cells": {"smax/2s3z:mappo": {"budget": 10_000_000, "seeds": 5, "iqm": 0.97,
                                            "low": 0.9, "high": 1.0}}}  # fmt: skip
    table = runner.results_table(state)
    assert "| smax/2s3z | mappo | win rate |" in table and "(read off a figure)" in table
    assert table.strip().endswith("| yes |")
    state["cells"]["smax/2s3z:mappo"].update(iqm=0.5, low=0.4, high=0.6)
    assert runner.results_table(state).strip().endswith("| no |")


# ------------------------------------------------------------------------- bands and check

_BAND_EXP = dict(  # baselines/mappo_penalty_game.py: every seed reaches the optimum 10
    algo="mappo", env="matrix/penalty_k0-v0", seeds=6,
    train={"num_envs": 16, "rollout_len": 4, "total_env_steps": 16 * 4 * 40},
    agent={"hidden_sizes": (32,), "num_minibatches": 2}, hparams={"lr": 3e-3},
)  # fmt: skip


def _run(tmp_path, name, **changes):
    exp = Experiment(out_dir=str(tmp_path), name=name, **{**_BAND_EXP, **changes})
    return run_experiment(exp, progress=False).run_dir


@pytest.fixture(scope="module")
def band(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("band")
    ref = _run(tmp, "ref")
    return [make_band(ref, "penalty:mappo", "episode_return", "marljax")], tmp


def test_a_faithful_rerun_stays_inside_its_band(band):
    bands_list, tmp = band
    rerun = _run(tmp, "rerun", seed=100)  # other seeds, same configuration
    report = check_run(rerun, bands_list)
    assert report.inside, str(report)
    assert report.differences == []
    assert cli.main(["check", rerun, "--bands", _write(bands_list, tmp)]) == 0


def test_a_hundredfold_learning_rate_leaves_the_band(band):
    bands_list, tmp = band
    run = _run(tmp, "lr100", hparams={"lr": 0.3})
    report = check_run(run, bands_list)
    assert not report.inside and report.first_exit is not None, str(report)
    assert any(d.startswith("hparams.lr:") for d in report.differences)
    assert "leaves the band" in str(report)
    assert cli.main(["check", run, "--bands", _write(bands_list, tmp)]) == 1


def test_a_sign_flipped_advantage_leaves_the_band(band, monkeypatch):
    import marljax.agents.ppo.agent as ppo_agent

    real = ppo_agent.ppo_loss
    sig = inspect.signature(real)

    def flipped(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.arguments["advantages"] = -bound.arguments["advantages"]
        return real(*bound.args, **bound.kwargs)

    monkeypatch.setattr(ppo_agent, "ppo_loss", flipped)
    bands_list, tmp = band
    report = check_run(_run(tmp, "flipped"), bands_list)
    assert not report.inside, str(report)
    assert report.differences == []  # the same configuration: only the code differs


def test_a_run_without_a_band_is_a_clear_error(band, capsys):
    bands_list, tmp = band
    other_budget = [{**bands_list[0], "total_env_steps": 999}]
    with pytest.raises(KeyError, match="No reference band for mappo on matrix/penalty_k0-v0 at 2,560 "
                       "env steps.*bands exist at 999"):  # fmt: skip
        check_run(str(tmp / "ref"), other_budget)
    with pytest.raises(KeyError, match="bands exist for: penalty:mappo"):
        check_run(str(tmp / "ref"), [{**bands_list[0], "algo": "ippo"}])
    assert cli.main(["check", str(tmp / "nope"), "--bands", _write(bands_list, tmp)]) == 2
    assert "not a run directory" in capsys.readouterr().err


def _write(bands_list, tmp) -> str:
    return bands.write_bands(bands_list, str(tmp / "bands.json"))


def test_published_tables_are_generated_from_the_stored_results():
    """README's and docs' benchmark rows are `results_table` of the stored benchmark.json files."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    stored = os.path.join(root, "bench", "results", "benchmark")
    readme = open(os.path.join(root, "README.md")).read()
    docs = open(os.path.join(root, "docs", "benchmark_suite.md")).read()
    dirs = sorted(d for d in os.listdir(stored) if os.path.isdir(os.path.join(stored, d)))
    ablations = [
        d for d in dirs if runner.read_state(os.path.join(stored, d))["plan"].get("overrides")
    ]
    dirs = [d for d in dirs if d not in ablations]  # `--set` runs are not the suite's cells
    assert dirs
    for d in dirs:
        rows = runner.results_table(runner.read_state(os.path.join(stored, d))).splitlines()[2:]
        assert rows, d
        for row in rows:
            assert row in readme and row in docs, row
    for name in bands.load_bands():  # every packaged band is one of the stored cells
        assert any(
            name["name"] in runner.read_state(os.path.join(stored, d))["cells"] for d in dirs
        )


def test_a_replay_capped_at_what_the_budget_collects_learns_the_same():
    """`experiment_kwargs` caps a Q-learner's replay at the budget's sequences: bitwise the
    same run as with the source's larger buffer (uniform sampling over the stored sequences)."""
    import dataclasses

    from marljax.benchmarks.suite import CELLS, experiment_kwargs
    from marljax.shell.experiment import Experiment, run_experiment

    rware = CELLS["rware/tiny-2ag:qmix"]
    assert experiment_kwargs(rware, rware.cpu_budget)["agent"]["buffer_size"] == 1000  # 500k / 500
    assert experiment_kwargs(rware, rware.budget)["agent"]["buffer_size"] == 5000
    steps, length = 4 * 5 * 12, 5  # 12 updates of 4 envs x 5 steps: 48 sequences
    cell = dataclasses.replace(
        CELLS["lbf/8x8-2p-2f-coop:vdn"], task="lbf/8x8-2p-2f-coop",
        agent={"buffer_size": 500, "sequence_len": length, "batch_size": 8, "hidden_sizes": (8,),
               "gru_size": 8, "learning_starts": 40},
        train={"num_envs": 4, "rollout_len": length},
    )  # fmt: skip
    capped = experiment_kwargs(cell, steps)
    assert capped["agent"]["buffer_size"] == steps // length
    metrics = []
    for kwargs in (capped, {**capped, "agent": cell.agent}):
        exp = Experiment(seeds=1, checkpoint=False, **kwargs)
        metrics.append(run_experiment(exp, progress=False).metrics)
    assert np.all(np.isfinite(metrics[0]["loss"]))
    for k, v in metrics[0].items():
        if k != "buffer_size":
            np.testing.assert_array_equal(v, metrics[1][k], err_msg=k)


def test_epsilon_anneals_over_the_sources_fraction_of_the_run():
    """JaxMARL's Q-learners anneal epsilon over `EPS_DECAY` of their updates: a cell keeps that
    fraction at any budget (1e6 of the published 1e7, 5e4 of the CPU budget's 5e5), and a cell
    without a fraction keeps its preset's schedule."""
    from marljax.benchmarks.suite import CELLS, experiment_kwargs

    for name, fraction in (("smax/3m:qmix", 0.1), ("smax/2s3z:pqn_vdn", 0.1),
                           ("mpe/simple_spread:vdn", 0.1),
                           ("overcooked_v2/cramped_room:pqn_vdn", 0.2)):  # fmt: skip
        c = CELLS[name]
        for steps in (c.budget, c.cpu_budget, 123_456):
            hp = experiment_kwargs(c, steps)["hparams"]
            assert hp["eps_anneal_steps"] == round(fraction * steps), (name, steps)
    assert (
        experiment_kwargs(CELLS["smax/3m:qmix"], 10_000_000)["hparams"]["eps_anneal_steps"] == 1e6
    )
    lbf = CELLS["lbf/8x8-2p-2f-coop:qmix"]
    assert "eps_anneal_steps" not in experiment_kwargs(lbf, lbf.cpu_budget)["hparams"]
