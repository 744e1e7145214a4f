"""TREC run files: `qid Q0 docid rank score tag` per line, as trec_eval reads them.

Only qid, docid and score are used: trec_eval ranks by score (descending, ties by docid
descending in byte order) and ignores the rank column, so its content is not checked; the
Q0 and tag columns are not checked either. Scores are any float spelling Python accepts
(`-3`, `0.25`, `1e-05`, `inf`); NaN is an error. Blank lines and lines starting with `#`
(after optional whitespace) are skipped, as trec_eval does. Every other line must have
at least six fields; whatever follows the sixth (the tag) is ignored, as trec_eval does.
"""

from __future__ import annotations

import os

from ragstream.trec._tokenize import Layout
from ragstream.trec.records import TrecTable
from ragstream.trec.table import read_table

__all__ = ["RUN_LAYOUT", "read_run"]

RUN_LAYOUT = Layout(
    kind="run",
    fields=("qid", "Q0", "docid", "rank", "score", "tag"),
    blank_lines_ok=True,
    comment_after_space=True,
    extra_fields_ignored=True,
)
"""The shape of a run line."""


def read_run(path: str | os.PathLike[str]) -> TrecTable:
    """Parse a run file; `values` are the float64 scores. Raises TrecFormatError."""
    return read_table(path, RUN_LAYOUT, "float")
