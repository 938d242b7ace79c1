"""The package's layers: its import graph (lazy imports included) has no cycle and no upward edge.

Every `import` / `from ... import` statement of `marljax/` and `envs/` (installed as
`marljax.envs`) is read from the syntax tree, wherever it sits (module level, inside a function,
under `TYPE_CHECKING`), so a lazy import counts as much as an eager one. Implicit imports of a
parent package's `__init__` are not edges (Python runs them for any submodule).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: the layers, bottom first: a module may import its own layer or any layer below it
LAYERS = [
    ("core", ["marljax.core", "marljax.testing"]),
    ("nn", ["marljax.nn"]),
    ("envs", ["marljax.envs"]),
    ("agents", ["marljax.agents"]),
    ("training", ["marljax.training"]),
    ("evaluation", ["marljax.evaluation"]),
    ("population", ["marljax.population"]),
    ("shell", ["marljax.shell"]),
    ("benchmarks", ["marljax.benchmarks"]),
    ("cli", ["marljax.shell.cli"]),
    ("face", ["marljax", "marljax._moved"]),
]
#: what the package root may hold: the face, its moved-path aliases, the test kit
ROOT_FILES = {"__init__.py", "_moved.py", "testing.py"}
#: the shell's modules stay small, each one concern
SHELL_MAX_LINES = 500


def _modules() -> dict[str, Path]:
    mods = {}
    for folder, prefix in (("marljax", ["marljax"]), ("envs", ["marljax", "envs"])):
        for f in (ROOT / folder).rglob("*.py"):
            parts = list(f.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(prefix + parts)] = f
    return mods


def _resolve(name: str, mods: dict) -> str | None:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (every import statement, lazy ones included)."""
    mods = _modules()
    edges: dict[str, set[str]] = defaultdict(set)
    for m, f in mods.items():
        is_pkg = f.name == "__init__.py"
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = m.split(".") if is_pkg else m.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                # `from pkg import sub` imports the submodule; `from mod import name` the module
                targets = [
                    f"{mod}.{a.name}" if f"{mod}.{a.name}" in mods else mod for a in node.names
                ]
            else:
                continue
            for t in targets:
                r = _resolve(t, mods)
                if r is not None and r != m:
                    edges[m].add(r)
    for m in mods:
        edges.setdefault(m, set())
    return dict(edges)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def layer(module: str) -> int:
    """The rank of `module`'s layer (the longest matching prefix wins)."""
    best, rank = "", None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > len(best):
                best, rank = p, i
    assert rank is not None, f"{module} is in no layer; add it to LAYERS"
    return rank


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_the_import_graph_has_no_cycle(graph):
    found = cycles(graph)
    assert not found, "import cycles (lazy imports included):\n" + "\n".join(map(str, found))


def test_nothing_imports_upward(graph):
    upward = [
        f"{m} ({LAYERS[layer(m)][0]}) -> {t} ({LAYERS[layer(t)][0]})"
        for m, ts in graph.items()
        for t in ts
        if layer(t) > layer(m)
    ]
    assert not upward, "imports from a higher layer:\n" + "\n".join(sorted(upward))


def test_the_checks_catch_a_cycle_and_an_upward_import():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert (
        layer("marljax.core.registry")
        < layer("marljax.training.train")
        < layer("marljax.shell.cli")
    )
    assert (
        layer("marljax.shell.cli")
        > layer("marljax.benchmarks.runner")
        > layer("marljax.shell.experiment")
    )


def test_the_lazy_imports_are_in_the_graph(graph):
    # the CLI's commands import the benchmark runner inside their functions only
    assert "marljax.benchmarks.runner" in graph["marljax.shell.cli.commands"]
    # the face loads the built-in env families lazily (`registry.add_loader`)
    assert "marljax.envs" in graph["marljax"]
    assert not any(t.startswith("marljax.envs") for t in graph["marljax.core.registry"])


def test_the_root_holds_only_the_face():
    loose = sorted(p.name for p in (ROOT / "marljax").glob("*.py") if p.name not in ROOT_FILES)
    assert not loose, f"modules loose at the package root (put them in a layer folder): {loose}"


def test_no_shell_module_is_long():
    sizes = {
        str(p.relative_to(ROOT)): len(p.read_text().splitlines())
        for p in (ROOT / "marljax" / "shell").rglob("*.py")
    }
    long = {p: n for p, n in sizes.items() if n > SHELL_MAX_LINES}
    assert not long, f"shell modules over {SHELL_MAX_LINES} lines (split them by concern): {long}"


def test_moved_paths_still_import_with_a_warning():
    import importlib
    import sys

    from marljax import _moved

    for old, new in _moved.MOVED.items():
        sys.modules.pop(old, None)
        with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
            mod = importlib.import_module(old)
        assert mod is importlib.import_module(new), old
    from marljax.train import TrainConfig, sweep  # the old spelling of the quickstart

    assert sweep.__module__ == "marljax.training.execute" and TrainConfig.__name__ == "TrainConfig"
