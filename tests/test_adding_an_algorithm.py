"""docs/agents.md "Adding an algorithm": the worked example is one folder and one registry entry.

The example's code block is run as written; registered in `ALGORITHMS` (the one line it adds to
`marljax/agents/registry.py`), it trains through `run_experiment` and `marljax train` and runs
data-parallel, with nothing else in the package changed.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import jax
import numpy as np
import pytest

import marljax
from marljax.agents import ALGORITHMS, AlgoSpec
from marljax.shell.cli import main
from marljax.shell.experiment import Experiment, run_experiment
from marljax.training.execute import for_devices

DOC = Path(__file__).resolve().parents[1] / "docs" / "agents.md"


@pytest.fixture(scope="module")
def example():
    text = DOC.read_text().split("## Adding an algorithm", 1)[1]
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    module = types.ModuleType("reinforce_example")  # a module, as the folder's files would be
    sys.modules[module.__name__] = module
    exec(compile(code, str(DOC), "exec"), module.__dict__)
    yield module.__dict__
    sys.modules.pop(module.__name__, None)


@pytest.fixture()
def registered(example, monkeypatch):
    monkeypatch.setitem(ALGORITHMS, "reinforce", AlgoSpec(**example["REINFORCE"]))
    return example


def test_the_example_registers_and_trains_from_python_and_the_cli(registered, tmp_path, capsys):
    exp = Experiment(
        algo="reinforce",
        env="matrix/penalty_k0-v0",
        seeds=2,
        out_dir=str(tmp_path),
        name="reinforce",
        train={"num_envs": 8, "rollout_len": 4, "total_env_steps": 8 * 4 * 30},
        hparams={"lr": 0.05},
    )
    run = run_experiment(exp, progress=False)
    returns = run.metrics["episode_return"][0]  # [S, U]
    assert np.all(np.isfinite(returns[:, -5:]))
    assert np.nanmean(returns[:, -5:]) > np.nanmean(returns[:, :5])  # it learns
    assert marljax.load_policy(run.run_dir).agent is not None
    argv = ["train", "--algo", "reinforce", "--env", "matrix/climbing-v0", "--seeds", "1",
            "--steps", "256", "--set", "lr=0.02", "--out", str(tmp_path), "--name", "cli"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err


def test_the_example_runs_data_parallel(registered):
    env, params = marljax.make("matrix/penalty_k0-v0")
    agent = registered["make_reinforce"](registered["ReinforceConfig"](), env, params)
    assert for_devices(agent, 2) is agent  # no size to split; the axis comes with `update`
    hp = agent.default_hparams()
    state = agent.init(jax.random.PRNGKey(0), hp)
    assert jax.tree.leaves(agent.get_params(state).policy)
