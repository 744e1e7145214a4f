"""A command's request to end the process as soon as its output is out.

`ragstream eval` holds a hundred thousand query ids and hundreds of MB of arrays when it
has printed its result; the interpreter's teardown (freeing them one by one, the final
garbage collections, every module's objects) then takes tens of milliseconds, a tenth of
the command on a large collection. The console script (`ragstream.cli.entry`) ends such a
command with `os._exit` once stdout and stderr are flushed: the OS takes the memory back
at once. Only the console script does it; a command run in-process (click's CliRunner,
an embedding program) returns normally.
"""

from __future__ import annotations

__all__ = ["request", "requested"]

_REQUESTED = [False]


def request() -> None:
    """Ask for the process to end as soon as the command returns successfully."""
    _REQUESTED[0] = True


def requested() -> bool:
    """Whether the command asked for it."""
    return _REQUESTED[0]
