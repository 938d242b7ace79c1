"""The API pages in `docs/` cannot drift from the code.

- every name in a module's table exists, and its text is the first paragraph of its docstring;
- every public name of the documented modules, every environment class of a family, every
  registered env id, every algorithm and every CLI subcommand and option is on its page (and
  every documented one exists).

Tables are read from the Markdown: a heading "### `marljax.module`" followed by a
"| name | what it is |" table whose first column holds `name`. `docs/api_table.py` prints a
module's table from the docstrings.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import pathlib
import re

import pytest

import marljax
import marljax.envs  # noqa: F401  (registers the built-in families)
from marljax.agents import ALGORITHMS
from marljax.core.registry import family_ids
from marljax.core.types import Environment
from marljax.shell.cli import build_parser

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"
PAGES = sorted(DOCS.glob("*.md"))
ENV_ID = re.compile(r"^[a-z0-9_]+/[A-Za-z0-9_\-.]+-v\d+$")

#: modules whose every public name (`__all__`, else the functions and classes they define) must
#: be in their table
COVERED = (
    "marljax",
    "marljax.core",
    "marljax.testing",
    "marljax.envs.adapters",
    "marljax.agents",
    "marljax.agents.common",
    "marljax.nn.losses",
    "marljax.nn.mixers",
    "marljax.nn.qvalues",
    "marljax.nn.replay",
    "marljax.training.train",
    "marljax.shell.experiment",
    "marljax.shell.sweep",
    "marljax.shell.tune",
    "marljax.training.tune",
    "marljax.training.execute",
    "marljax.training.checkpoint",
    "marljax.shell.rundir",
    "marljax.evaluation",
    "marljax.evaluation.social",
    "marljax.evaluation.rollout",
    "marljax.evaluation.plots",
    "marljax.evaluation.results",
    "marljax.shell.policy",
    "marljax.shell.loggers",
    "marljax.population",
    "marljax.benchmarks",
)
#: env families: their exported `Environment` classes must be in their table
FAMILIES = (
    "marljax.envs.matrix",
    "marljax.envs.social",
    "marljax.envs.grid",
    "marljax.envs.particle",
    "marljax.envs.swarm",
)
#: ids registered on import by test helpers or adapters, not built-in environments
NOT_BUILTIN_FAMILIES = ("testing", "jaxmarl")


def _api_table_module():
    spec = importlib.util.spec_from_file_location("api_table", DOCS / "api_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


api_table = _api_table_module()


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def _tables(header: str) -> list[tuple[str, str, list[str]]]:
    """`(page, heading, cells)` for every row of every table whose header row is `header`."""
    rows = []
    for page in PAGES:
        heading, inside = "", False
        for line in page.read_text().splitlines():
            if line.startswith("#"):
                heading, inside = line.lstrip("#").strip(), False
            elif line.strip() == header:
                inside = True
            elif inside and line.startswith("|"):
                if not line.startswith("|---"):
                    rows.append((page.name, heading, _cells(line)))
            else:
                inside = False
    return rows


def _name(cell: str) -> str:
    match = re.match(r"^`([^`]+)`", cell)
    assert match, f"the first cell {cell!r} must hold a `name`"
    return match.group(1)


def documented() -> dict[str, dict[str, tuple[str, str]]]:
    """`{module: {name: (text, page)}}` of every API table."""
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for page, heading, cells in _tables("| name | what it is |"):
        match = re.fullmatch(r"`(marljax[\w.]*)`", heading)
        assert match, f"{page}: an API table must follow a heading '### `marljax.module`'"
        out.setdefault(match.group(1), {})[_name(cells[0])] = (cells[1], page)
    return out


DOCUMENTED = documented()


def _normal(text: str) -> str:
    return " ".join(text.replace("\\|", "|").split())


def test_pages_exist():
    names = {p.name for p in PAGES}
    assert {"index.md", "envs.md", "agents.md", "training.md", "evaluation.md", "cli.md"} <= names
    assert len(DOCUMENTED) >= len(COVERED) + len(FAMILIES)


@pytest.mark.parametrize("module_name", sorted(DOCUMENTED))
def test_documented_names_exist_and_match_their_docstrings(module_name):
    module = importlib.import_module(module_name)
    for name, (text, page) in DOCUMENTED[module_name].items():
        assert hasattr(module, name), f"{page}: {module_name}.{name} does not exist"
        doc = api_table.summary(getattr(module, name))
        if doc is not None:
            assert _normal(text) == _normal(doc), (
                f"{page}: the line of {module_name}.{name} differs from its docstring; run "
                f"`python docs/api_table.py {module_name}` and paste the table"
            )
        else:
            assert text, f"{page}: {module_name}.{name} needs a one-line description"


@pytest.mark.parametrize("module_name", COVERED)
def test_every_public_name_is_documented(module_name):
    missing = set(api_table.public_names(module_name)) - set(DOCUMENTED.get(module_name, {}))
    assert not missing, (
        f"{sorted(missing)} of {module_name} are not in docs/; run "
        f"`python docs/api_table.py {module_name}` and paste the table"
    )


@pytest.mark.parametrize("module_name", FAMILIES)
def test_every_environment_class_is_documented(module_name):
    module = importlib.import_module(module_name)
    classes = {
        n
        for n in module.__all__
        if inspect.isclass(getattr(module, n)) and issubclass(getattr(module, n), Environment)
    }
    assert classes, f"{module_name} exports no environment class"
    missing = classes - set(DOCUMENTED.get(module_name, {}))
    assert not missing, f"environment classes {sorted(missing)} of {module_name} are not in docs/"


def test_registered_env_ids_are_listed():
    text = (DOCS / "envs.md").read_text()
    listed = {t for t in re.findall(r"`([^`\s]+)`", text) if ENV_ID.match(t)}
    builtin = {i for i in marljax.registered_envs() if i.split("/")[0] not in NOT_BUILTIN_FAMILIES}
    assert builtin - listed == set(), f"registered but not in docs/envs.md: {builtin - listed}"
    resolvable = builtin | set(family_ids())  # e.g. smax/3m-v0: examples of a family
    assert listed - resolvable == set(), f"in docs/envs.md but not registered: {listed - builtin}"


def test_algorithms_are_listed():
    rows = _tables("| name | config | hparams | what it is |")
    listed = {_name(cells[0]): cells for _, _, cells in rows}
    assert set(listed) == set(ALGORITHMS), (
        f"docs/agents.md lists {sorted(listed)}, the registry has {sorted(ALGORITHMS)}"
    )
    for name, spec in ALGORITHMS.items():
        assert listed[name][1] == f"`{spec.config_cls.__name__}`", name
        assert listed[name][2] == f"`{spec.hparams_cls.__name__}`", name


def _cli_documented() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for _, heading, cells in _tables("| option | meaning |"):
        match = re.fullmatch(r"`marljax (\w+)`", heading)
        assert match, f"docs/cli.md: an option table must follow '## `marljax COMMAND`' ({heading})"
        out.setdefault(match.group(1), set()).update(re.findall(r"`([^`]+)`", cells[0]))
    for heading in re.findall(r"^## `marljax (\w+)`", (DOCS / "cli.md").read_text(), re.M):
        out.setdefault(heading, set())
    return out


def test_cli_commands_and_options_are_documented():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    docs = _cli_documented()
    assert set(docs) == set(sub.choices), f"docs/cli.md: {sorted(docs)} vs {sorted(sub.choices)}"
    for name, command in sub.choices.items():
        options = set()
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            options.update(action.option_strings or [action.metavar or action.dest.upper()])
        assert docs[name] == options, f"marljax {name}: documented {docs[name]}, real {options}"
