"""TREC qrels files: `qid iter docid rel` per line, as trec_eval reads them.

`iter` is ignored. `rel` is an integer grade; a negative grade means "in the pool but not
judged" to trec_eval: such a document is neither relevant nor gains anything. Lines whose
first byte is `#` are comments. Blank lines and lines with another number of fields (more
than four too) are errors, as in trec_eval. A document judged twice for one query is an
error too (trec_eval stops on it; pytrec_eval's parser asserts).
"""

from __future__ import annotations

import os

from ragstream.trec._tokenize import Layout
from ragstream.trec.records import TrecTable
from ragstream.trec.table import read_table

__all__ = ["QRELS_LAYOUT", "read_qrels"]

QRELS_LAYOUT = Layout(
    kind="qrels",
    fields=("qid", "iter", "docid", "rel"),
    blank_lines_ok=False,
    comment_after_space=False,
    extra_fields_ignored=False,
)
"""The shape of a qrels line."""


def read_qrels(path: str | os.PathLike[str]) -> TrecTable:
    """Parse a qrels file; `values` are the int64 grades. Raises TrecFormatError."""
    return read_table(path, QRELS_LAYOUT, "int")
