"""Print the API table of a module from its docstrings, in the format of the `docs/` pages.

    python docs/api_table.py marljax.training.train [marljax.nn.losses ...]

Each row is a public name and the first paragraph of its docstring (what `tests/test_docs.py`
checks the pages against). Paste the output over the module's table when a name is added or a
docstring changes; constants without a docstring get a hand-written line (`CONSTANTS` below).
"""

from __future__ import annotations

import importlib
import inspect
import sys

#: one-line descriptions of public constants (they have no docstring of their own)
CONSTANTS = {
    "ALGORITHMS": "Registry: algorithm name -> `AlgoSpec` (config class, hparams class, factory).",
    "AGGREGATES": "Names of the aggregate metrics (`median`, `iqm`, `mean`, `optimality_gap`).",
    "POSITIVE_MAPS": "Non-negative maps of the QMIX mixing weights, by name.",
    "RUNS_AXIS": "Mesh axis name of the runs (grid x seeds) axis.",
    "LAYOUTS": 'The device layouts of `execute`: `"runs"` and `"envs"`.',
    "CONFIG_VERSION": "Version of config.json's layout; a newer file is refused.",
    "ENVS_AXIS": "Mesh axis name of the environments axis.",
    "EPISODE_AVERAGES": "Runner metrics that are averages over the episodes finished in an "
    "update (NaN if none).",
    "PARAMETER_MODES": "The parameter modes every agent supports: `shared`, `shared_id`, "
    "`independent`.",
    "ExtraLoss": "`extra_loss(params, batch, hparams) -> scalar`: a term added to a learner's "
    "loss, reported as the metric `extra_loss`.",
    "RESUMABLE_KEYS": "Experiment keys a resume may change (with the budget); not hashed.",
    "__version__": "The package version.",
}


def public_names(module_name: str) -> list[str]:
    """`__all__`, or the functions and classes defined in the module (not starting with `_`)."""
    module = importlib.import_module(module_name)
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [
        n
        for n, o in vars(module).items()
        if not n.startswith("_")
        and (inspect.isfunction(o) or inspect.isclass(o))
        and getattr(o, "__module__", None) == module_name
    ]


def summary(obj) -> str | None:
    """First paragraph of the docstring of a function, class or module, on one line (or None)."""
    if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismodule(obj)):
        return None
    doc = inspect.getdoc(obj)
    if not doc:
        return None
    return " ".join(doc.strip().split("\n\n")[0].split()).replace("|", "\\|")


def table(module_name: str, names: list[str] | None = None) -> str:
    """The Markdown section of one module: a heading and a `name | what it is` table."""
    module = importlib.import_module(module_name)
    rows = ["| name | what it is |", "|---|---|"]
    for name in sorted(names or public_names(module_name), key=str.lower):
        text = summary(getattr(module, name)) or CONSTANTS.get(name, "")
        rows.append(f"| `{name}` | {text} |")
    return f"### `{module_name}`\n\n" + "\n".join(rows) + "\n"


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(table(arg))
