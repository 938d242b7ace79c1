"""Execute every notebook in `notebooks/` top to bottom; any cell error fails the test.

The kernel is launched with the interpreter running pytest (`sys.executable`), through a
temporary `python3` kernelspec, so the notebooks see this environment's marljax even when the
machine's default `python3` kernelspec points at another interpreter.

Notebooks are committed WITH their outputs (so readers see the results without running them);
refresh them after a change with `python tests/test_notebooks.py` (every notebook) or
`python tests/test_notebooks.py notebooks/swarms.ipynb`, which executes them as the test does
and writes the outputs back.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

# Hard imports: a broken `[test]` extra must fail the suite, not skip the notebooks.
import ipykernel  # noqa: F401
import nbclient
import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

NOTEBOOK_DIR = pathlib.Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT_S = 300


#: Notebooks whose run time outweighs their compile time: their kernels run with the XLA_FLAGS the
#: test run started with instead of the suite's compile-speed flags (tests/conftest.py). Measured
#: on 2 cores, with / without those flags: swarms 80 s / 55 s, population 57 s / 50 s; the others
#: are faster with them (custom_env 47 s / 88 s, matrix_games 62 s / 88 s).
RUN_TIME_BOUND = {"swarms.ipynb", "population.ipynb"}


def kernel_manager(kernels_dir: pathlib.Path, optimised: bool = False) -> KernelManager:
    """A manager for a `python3` kernel running `sys.executable` (this venv's interpreter);
    `optimised`: with the run's original XLA_FLAGS (see `RUN_TIME_BOUND`)."""
    spec_dir = kernels_dir / "python3"
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (marljax tests)",
        "language": "python",
    }
    base = os.environ.get("MARLJAX_TEST_BASE_XLA_FLAGS")
    if optimised and base is not None:
        spec["env"] = {"XLA_FLAGS": base}
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    specs = KernelSpecManager(kernel_dirs=[str(kernels_dir)])
    return KernelManager(kernel_name="python3", kernel_spec_manager=specs)


def test_there_are_notebooks():
    assert NOTEBOOKS, f"no notebooks found in {NOTEBOOK_DIR}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_committed_with_its_outputs(path):
    """Every code cell was run once, in order, without an error (`python
    tests/test_notebooks.py` refreshes them)."""
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{path.name}: run it top to bottom and save the outputs (python tests/test_notebooks.py "
        f"{path.relative_to(NOTEBOOK_DIR.parent)}); execution counts {counts}"
    )
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    assert any(c.outputs for c in code), f"{path.name}: no outputs stored"


def execute(path: pathlib.Path, tmp: pathlib.Path) -> nbformat.NotebookNode:
    """Run a notebook top to bottom in a fresh kernel of this interpreter (working directory
    `tmp/work`); raises `CellExecutionError` with the cell's traceback on any error."""
    nb = nbformat.read(path, as_version=4)
    workdir = tmp / "work"
    workdir.mkdir()
    client = nbclient.NotebookClient(
        nb,
        km=kernel_manager(tmp / "kernels", optimised=path.name in RUN_TIME_BOUND),
        kernel_name="python3",
        timeout=CELL_TIMEOUT_S,
        resources={"metadata": {"path": str(workdir)}},
    )
    client.execute()
    return nb


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path, tmp_path):
    nb = execute(path, tmp_path)
    errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"
    ]
    assert not errors


def test_kernel_runs_this_interpreter(tmp_path):
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("import sys; print(sys.executable)")]
    )
    nbclient.NotebookClient(
        nb, km=kernel_manager(tmp_path), kernel_name="python3", timeout=60
    ).execute()
    assert nb.cells[0].outputs[0]["text"].strip() == sys.executable


if __name__ == "__main__":  # refresh the stored outputs: python tests/test_notebooks.py [PATH ...]
    import tempfile

    for arg in sys.argv[1:] or [str(p) for p in NOTEBOOKS]:
        path = pathlib.Path(arg).resolve()
        with tempfile.TemporaryDirectory() as tmp:
            nb = execute(path, pathlib.Path(tmp))
        nb.metadata.pop("widgets", None)
        nbformat.write(nb, path)
        print(f"wrote {path}")
