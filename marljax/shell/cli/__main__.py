"""`python -m marljax.shell.cli`: the `marljax` command."""

import sys

from marljax.shell.cli import main

sys.exit(main())
