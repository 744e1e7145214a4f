"""What a join of qrels and run hands to the metric kernels, and the errors it can raise.

Both joins -- the numpy one (`_join`) and the compiled scanner (`_compiled`) -- produce the
same `Ranked` arrays, bit for bit, and raise the same errors with these messages.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragstream.trec.errors import TrecFormatError, quote

__all__ = ["Ranked", "no_common_query", "repeated_document", "repeated_judgment"]

_F64 = NDArray[np.float64]
_I64 = NDArray[np.int64]


@dataclass(frozen=True)
class Ranked:
    """The evaluated queries (in both files) in byte order of their ids, as CSR arrays.

    Query i ranks `rel[rel_offsets[i]:rel_offsets[i + 1]]` -- the grades of its documents
    in trec_eval's order (0 when unjudged) -- and has judged
    `judged[judged_offsets[i]:judged_offsets[i + 1]]` (all its judgments, in file order).
    """

    qids: tuple[str, ...]
    rel: _F64
    rel_offsets: _I64
    judged: _F64
    judged_offsets: _I64
    num_qrels_queries: int
    """Queries with at least one judgment (the denominator of trec_eval -c)."""


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
