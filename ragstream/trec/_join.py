"""The numpy join of parsed qrels and run tables: the reference for the compiled scanner.

1. Query ids are factorized together (code order = byte order, as trec_eval reports).
2. Each (query, document) gets a 64-bit key; one sort finds repeated run lines and repeated
   judgments, one binary search joins the run with the qrels (see `_keys`).
3. Runs are ordered by score descending, ties by document id descending (`_order`).
4. The grades in rank order and the judged grades are regrouped query by query, queries in
   byte order, judgments in file order: the `Ranked` arrays the compiled scanner makes too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragstream.trec._ids import Ids, comparable, concat
from ragstream.trec._keys import doc_keys, factorize_rows, rows_equal
from ragstream.trec._order import trec_order
from ragstream.trec._ranked import (
    Ranked,
    no_common_query,
    repeated_document,
    repeated_judgment,
    segments,
)
from ragstream.trec.records import TrecTable

__all__ = ["join_tables"]

_I64 = NDArray[np.int64]
_U64 = NDArray[np.uint64]
_F64 = NDArray[np.float64]
_Tables = tuple[TrecTable, TrecTable, _I64, _I64, _U64, _U64, "_QueryNames"]


class _CollisionError(Exception):
    """Two different documents of one query share a hash key; rebuild keys exactly."""


def join_tables(qrels: TrecTable, run: TrecTable, *, keep_best: bool, complete: bool) -> Ranked:
    """Rank the run's documents of every query in both tables and look up their grades.

    Raises TrecFormatError, in this order: no query in common (unless `complete`), a
    document judged twice, a document repeated within a query of the run (unless
    `keep_best`: its best-scored line counts, the earliest on equal scores).
    """
    q_qids, r_qids = comparable([qrels.qids, run.qids])
    names, codes = factorize_rows(np.concatenate([q_qids, r_qids]))
    n_blocks = qrels.qids.size
    q_codes = np.repeat(codes[:n_blocks], np.diff(qrels.block_starts))
    r_codes = np.repeat(codes[n_blocks:], np.diff(run.block_starts))
    q_docs, r_docs = comparable([qrels.docs, run.docs])
    n_names = names.shape[0]
    in_qrels = np.zeros(n_names, dtype=bool)
    in_qrels[q_codes] = True
    in_run = np.zeros(n_names, dtype=bool)
    in_run[r_codes] = True
    evaluated = in_qrels & in_run
    eval_codes = np.flatnonzero(evaluated)
    if eval_codes.size == 0 and not complete:
        raise no_common_query(run.path, qrels.path)
    qids = _QueryNames(concat([qrels.qids, run.qids]), codes, names.shape[0])
    tables = (qrels, run, q_codes, r_codes, q_docs, r_docs, qids)
    try:
        rows, rel = _rank(tables, evaluated, keep_best, exact=False)
    except _CollisionError:
        rows, rel = _rank(tables, evaluated, keep_best, exact=True)
    # rows come query by query (queries in file or code order): regroup in code order
    ranked_codes = r_codes[rows]
    change = np.ones(rows.size, dtype=bool)
    change[1:] = ranked_codes[1:] != ranked_codes[:-1]
    heads = np.flatnonzero(change)
    lengths = np.diff(np.append(heads, rows.size))
    by_code = np.argsort(ranked_codes[heads])
    index, rel_offsets = segments(heads[by_code], lengths[by_code])
    judged_rows = np.argsort(q_codes, kind="stable")  # by query, file order inside
    counts = np.bincount(q_codes, minlength=n_names)
    starts = np.cumsum(counts) - counts
    judged_index, judged_offsets = segments(starts[eval_codes], counts[eval_codes])
    return Ranked.of(
        qids.texts(eval_codes),
        rel[index],
        rel_offsets,
        qrels.values[judged_rows[judged_index]].astype(np.float64),
        judged_offsets,
        int(np.count_nonzero(in_qrels)),
    )


@dataclass(frozen=True)
class _QueryNames:
    """The query ids behind the query codes (for results and messages)."""

    ids: Ids
    """The query ids of the qrels blocks, then of the run blocks."""
    codes: _I64
    """The code of each of those."""
    n_codes: int

    def texts(self, codes: _I64) -> tuple[str, ...]:
        first = np.full(self.n_codes, -1, dtype=np.int64)
        first[self.codes[::-1]] = np.arange(self.codes.size - 1, -1, -1)  # first block
        return tuple(_text(raw) for raw in self.ids.texts(first[codes]))

    def text(self, code: int) -> str:
        return self.texts(np.array([code], dtype=np.int64))[0]


def _scores(run: TrecTable) -> _F64:
    return run.values.astype(np.float64, copy=False)


def _rank(
    tables: _Tables, evaluated: NDArray[np.bool_], keep_best: bool, exact: bool
) -> tuple[_I64, _F64]:
    """Check repeats, order the run, and look up grades.

    Returns the run rows to evaluate in rank order (query by query) and the grade of each
    (0 when unjudged). The lookup runs on the ranked rows, whose keys ascend by query: the
    binary searches stay in cache.
    """
    qrels, run, q_codes, r_codes, q_docs, r_docs, qids = tables
    n_names = qids.n_codes
    q_keys = doc_keys(q_codes, q_docs, n_names, exact)
    r_keys = doc_keys(r_codes, r_docs, n_names, exact)
    q_order = np.argsort(q_keys, kind="stable").astype(np.int64)
    q_sorted = q_keys[q_order]
    same = np.flatnonzero(q_sorted[1:] == q_sorted[:-1])
    if same.size:
        first, second = q_order[same], q_order[same + 1]
        if not np.all(rows_equal(q_docs[first], q_docs[second])):
            raise _CollisionError
        i = int(np.argmin(np.maximum(first, second)))
        a, b = sorted((int(first[i]), int(second[i])))
        lines = (qrels.line(a), qrels.line(b))
        doc = _text(qrels.docs.text(b))
        raise repeated_judgment(qrels.path, lines, qids.text(int(q_codes[b])), doc)
    keep = _deduplicate(run, r_keys, r_codes, r_docs, qids, keep_best)
    rows = np.flatnonzero(keep & evaluated[r_codes])
    rows = rows[trec_order(r_codes[rows], _scores(run)[rows], r_docs[rows])]
    keys = r_keys[rows]
    pos = np.minimum(np.searchsorted(q_sorted, keys), max(q_sorted.size - 1, 0))
    grade = np.zeros(rows.size, dtype=np.float64)
    if q_sorted.size:
        hit = np.flatnonzero(q_sorted[pos] == keys)
        match = q_order[pos[hit]]
        if not exact and not np.all(rows_equal(r_docs[rows[hit]], q_docs[match])):
            raise _CollisionError
        grade[hit] = qrels.values[match]
    return rows, grade


def _deduplicate(
    run: TrecTable,
    keys: _U64,
    codes: _I64,
    docs: _U64,
    qids: _QueryNames,
    keep_best: bool,
) -> NDArray[np.bool_]:
    """Rows of the run to keep: all, unless a document repeats within a query."""
    keep = np.ones(keys.size, dtype=bool)
    ordered = np.sort(keys)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if repeated.size == 0:
        return keep
    rows = np.flatnonzero(np.isin(keys, repeated))
    rows = rows[np.argsort(keys[rows], kind="stable")]  # grouped by key, file order inside
    heads = np.concatenate(([True], keys[rows][1:] != keys[rows][:-1]))
    group_first = rows[np.maximum.accumulate(np.where(heads, np.arange(rows.size), 0))]
    if not np.all(rows_equal(docs[rows], docs[group_first])):
        raise _CollisionError
    if not keep_best:
        seconds = rows[~heads]
        firsts = group_first[~heads]
        i = int(np.argmin(seconds))
        a, b = int(firsts[i]), int(seconds[i])
        lines = (run.line(a), run.line(b))
        doc = _text(run.docs.text(b))
        raise repeated_document(run.path, lines, qids.text(int(codes[b])), doc)
    scores = _scores(run)[rows]
    group = np.cumsum(heads)
    best = np.lexsort((rows, -scores, group))  # per group: best score, then earliest line
    winners = best[np.concatenate(([True], group[best][1:] != group[best][:-1]))]
    keep[rows] = False
    keep[rows[winners]] = True
    return keep


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")
