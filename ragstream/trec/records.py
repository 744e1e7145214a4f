"""The records of one TREC file as arrays: what the numpy reader returns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragstream.trec._ids import Ids

__all__ = ["TrecTable"]

_I64 = NDArray[np.int64]


@dataclass(frozen=True)
class TrecTable:
    """The records of one qrels or run file, in file order.

    Consecutive records with the same query id form a *block*; files are normally one
    block per query, so query ids are kept once per block, not once per line.
    """

    path: str
    """The file, as given (for messages)."""
    qids: Ids
    """(B,) the query id of each block."""
    block_starts: _I64
    """(B + 1,) first record of each block, then the number of records."""
    docs: Ids
    """(N,) the document id of each record."""
    values: NDArray[np.float64] | _I64
    """(N,) the score (run, float64) or relevance grade (qrels, int64) of each record."""
    lines: _I64 | None
    """(N,) 1-based line number of each record; None when record i is on line i + 1."""

    @property
    def size(self) -> int:
        """Number of records."""
        return self.docs.size

    def line(self, record: int) -> int:
        """The 1-based line number of a record."""
        return record + 1 if self.lines is None else int(self.lines[record])
