"""The one error type of the TREC readers: a bad input file, located by file and line; and
the errors of a join, which both joins raise with these messages."""

from __future__ import annotations

__all__ = [
    "TrecFormatError",
    "no_common_query",
    "quote",
    "repeated_document",
    "repeated_judgment",
]


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


def no_common_query(run_path: str, qrels_path: str) -> TrecFormatError:
    """No query of the run is judged: nearly always mismatched id formats."""
    return TrecFormatError(
        run_path, None, f"no query id of the run appears in the qrels ({qrels_path})"
    )


def repeated_judgment(path: str, lines: tuple[int, int], qid: str, doc: str) -> TrecFormatError:
    """A document judged twice for one query (trec_eval stops on it too)."""
    first, second = lines
    return TrecFormatError(
        path,
        second,
        f"document {quote(doc)} judged twice for query {quote(qid)} (lines {first} and {second})",
    )


def repeated_document(path: str, lines: tuple[int, int], qid: str, doc: str) -> TrecFormatError:
    """A document repeated within one query of a run (without --keep-best)."""
    first, second = lines
    return TrecFormatError(
        path,
        second,
        f"document {quote(doc)} repeated for query {quote(qid)} (lines {first} and {second}); "
        "--keep-best keeps its best-scored line",
    )
