"""The one error type of the TREC readers: a bad input file, located by file and line."""

from __future__ import annotations

__all__ = ["TrecFormatError", "quote"]


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


def quote(text: bytes | str, limit: int = 120) -> str:
    """`text` quoted for a message (invalid UTF-8 replaced), cut to `limit` characters
    with "..." when longer, so that a huge field gives a message of readable size."""
    cut = False
    if isinstance(text, bytes):
        cut = len(text) > 4 * limit
        text = text[: 4 * limit].decode("utf-8", "replace")
    if cut or len(text) > limit:
        text = text[: limit - 3] + "..."
    return repr(text)
