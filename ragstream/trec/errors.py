"""The one error type of the TREC readers: a bad input file, located by file and line."""

from __future__ import annotations

__all__ = ["TrecFormatError"]


class TrecFormatError(ValueError):
    """A qrels or run file that cannot be evaluated, with the file name and line number.

    `str(error)` reads `PATH:LINE: reason` (or `PATH: reason` when no line applies), the
    form compilers use, so that editors can jump to the line.
    """

    def __init__(self, path: str, line: int | None, reason: str) -> None:
        self.path = path
        self.line = line
        self.reason = reason
        where = path if line is None else f"{path}:{line}"
        super().__init__(f"{where}: {reason}")
