"""`python -m marljax.shell.cli`: the `marljax` command."""

from marljax.shell.cli import entry

entry()
