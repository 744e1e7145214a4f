"""The `ragstream` command line: `main`, the click group (`ragstream.cli.group`), one module
per subcommand; and `entry`, the console script and `python -m ragstream`.

This module does not import click: the console script begins reading `ragstream eval`'s
files (`ragstream.cli._prefetch`) before click and the command are imported.
"""

from __future__ import annotations

import os
import sys

from ragstream.cli import _exit, _prefetch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ragstream.cli.group import main

__all__ = ["entry", "main"]


def __getattr__(name: str) -> object:
    """`main`, imported with click when first asked for."""
    if name != "main":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ragstream.cli.group import main

    return main


def entry() -> None:
    """The console script and `python -m ragstream`: `main`; then, when the command asked
    for it (`ragstream.cli._exit`) and succeeded, the process ends at once, its output
    flushed, without the interpreter's teardown."""
    _exit.console()
    _prefetch.begin(sys.argv[1:])
    from ragstream.cli.group import main

    try:
        main()
    except SystemExit as stop:
        if stop.code not in (None, 0) or not _exit.requested():
            raise
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:  # a closed pipe: as the interpreter does when its flush fails
            os._exit(120)
        os._exit(0)
