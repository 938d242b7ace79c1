"""`python as_terminal.py -m MODULE ARGS` (or `SCRIPT ARGS`): run it with Python's own Ctrl-C handler.

A process started by a background job of a non-interactive shell (a CI runner, `cmd &`)
inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler, so a test's
Ctrl-C would do nothing. This launcher puts the handler a terminal's process has back, then
runs the module or script as `python -m` / `python` would.
"""

from __future__ import annotations

import runpy
import signal
import sys

if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if sys.argv[1] == "-m":
        sys.argv = [sys.argv[2], *sys.argv[3:]]
        runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
    else:
        sys.argv = sys.argv[1:]
        runpy.run_path(sys.argv[0], run_name="__main__")
