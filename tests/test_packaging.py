"""The wheel ships every package: pyproject's explicit package list matches the source folders."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load_setuptools_table() -> dict:
    """`[tool.setuptools]` of pyproject.toml: tomllib (3.11+), tomli (3.10), else a mini-parser."""
    text = (ROOT / "pyproject.toml").read_text()
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            tomllib = None
    if tomllib is not None:
        return tomllib.loads(text)["tool"]["setuptools"]
    section = text.split("[tool.setuptools]", 1)[1].split("\n[", 1)[0]
    packages = re.search(r"packages\s*=\s*\[(.*?)\]", section, re.S).group(1)
    package_dir = re.search(r"package-dir\s*=\s*\{(.*?)\}", section, re.S).group(1)
    return {
        "packages": re.findall(r'"([^"]+)"', re.sub(r"#.*", "", packages)),
        "package-dir": dict(re.findall(r'"([^"]+)"\s*=\s*"([^"]+)"', package_dir)),
    }


def _packages_on_disk(folder: str, prefix: str) -> set[str]:
    """Dotted names of every folder under `folder` (itself included) holding an `__init__.py`."""
    base = ROOT / folder
    found = set()
    for init in base.rglob("__init__.py"):
        rel = init.parent.relative_to(base)
        if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
            continue
        found.add(".".join((prefix, *rel.parts)))
    return found


def test_package_dir_maps_envs_into_marljax():
    table = _load_setuptools_table()
    assert table["package-dir"].get("marljax.envs") == "envs", table["package-dir"]


def test_package_list_matches_folders():
    table = _load_setuptools_table()
    listed = set(table["packages"])
    on_disk = _packages_on_disk("marljax", "marljax") | _packages_on_disk("envs", "marljax.envs")
    missing = sorted(on_disk - listed)
    stale = sorted(listed - on_disk)
    assert not missing, (
        f"packages with an __init__.py but missing from [tool.setuptools] packages in "
        f"pyproject.toml (they would not be in the wheel): {missing}"
    )
    assert not stale, f"packages listed in pyproject.toml without a folder/__init__.py: {stale}"
    assert len(table["packages"]) == len(listed), "duplicate entries in the package list"


def test_mini_parser_agrees_with_toml(monkeypatch):
    """The 3.10 fallback parser reads the same list as a real TOML parser."""
    import builtins

    real = _load_setuptools_table()
    real_import = builtins.__import__

    def no_toml(name, *args, **kwargs):
        if name in ("tomllib", "tomli"):
            raise ModuleNotFoundError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_toml)
    mini = _load_setuptools_table()
    assert mini["packages"] == real["packages"]
    assert mini["package-dir"] == real["package-dir"]


def test_package_data_ships_the_benchmark_data():
    """The published numbers and reference bands are data files: package-data must list them."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import pytest

        tomllib = pytest.importorskip("tomli")
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    globs = data.get("package-data", {}).get("marljax.benchmarks", [])
    folder = ROOT / "marljax" / "benchmarks"
    files = [p.relative_to(folder) for p in (folder / "data").glob("*") if p.is_file()]
    assert files, "marljax/benchmarks/data is empty"
    for f in files:
        assert any(f.match(g) for g in globs), f"{f} is not in package-data {globs}"
