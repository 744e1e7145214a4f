"""A command's request to end the process as soon as its output is out.

`ragstream eval` holds a hundred thousand query ids and hundreds of MB of arrays when it
has printed its result; the interpreter's teardown (freeing them one by one, the final
garbage collections, every module's objects) then takes tens of milliseconds, a tenth of
the command on a large collection. The console script (`ragstream.cli.entry`) ends such a
command with `os._exit` once stdout and stderr are flushed: the OS takes the memory back
at once. Only the console script does it; a command run in-process (click's CliRunner,
an embedding program) returns normally.

Such a command also leaves Python's garbage collector off at its end (`ending`): turned
on again, its first collection would go over every object the command made -- numpy's
modules among them, 8 ms here -- just before the process ends. And it hands its result
to `request`, which keeps it until then: freed when the command returns, a hundred
thousand ids and their arrays took 4-5 ms, for nothing.
"""

from __future__ import annotations

__all__ = ["console", "ending", "request", "requested"]

_REQUESTED = [False]
_CONSOLE = [False]
_KEPT: list[object] = []


def request(keep: object = None) -> None:
    """Ask for the process to end as soon as the command returns successfully; `keep` (the
    command's result) is not freed before, when the console script runs the command."""
    _REQUESTED[0] = True
    if _CONSOLE[0]:
        _KEPT.append(keep)


def requested() -> bool:
    """Whether the command asked for it."""
    return _REQUESTED[0]


def console() -> None:
    """Say that the console script runs the command: a requested end will be honoured."""
    _CONSOLE[0] = True


def ending() -> bool:
    """Whether the process ends as soon as the command returns: the console script runs
    it and it asked for that."""
    return _CONSOLE[0] and _REQUESTED[0]
