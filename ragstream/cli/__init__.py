"""The `ragstream` command line: `main`, the click group (`ragstream.cli.group`), one module
per subcommand; `main` is the console script and `python -m ragstream`."""

from ragstream.cli.group import main

__all__ = ["main"]
