"""The numpy join of parsed qrels and run tables: the reference for the compiled scanner.

1. Query ids are factorized together (code order = byte order, as trec_eval reports).
2. Each (query, document) gets a 64-bit key: the query code in the high bits and a hash of
   the document words below (`_doc_keys`). One sort finds repeated run lines and repeated
   judgments, one binary search joins the run with the qrels. Equal pairs always get equal
   keys; a hash collision (different documents, same key) is detected by comparing the
   words of every pair a decision rests on, and then the keys are rebuilt exactly (dense
   ranks of the full rows), which is slower but never wrong.
3. Runs are ordered by score descending, ties by document id descending (`trec_order`;
   the rank column is ignored). Files are usually written query by query in rank order,
   so each step first checks whether the order already holds and only sorts what does
   not: whole query blocks, then scores within a query, then each tie group's documents.
4. The grades in rank order and the judged grades are regrouped query by query, queries in
   byte order, judgments in file order: the `Ranked` arrays the compiled scanner makes too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragstream.trec._ids import Ids, comparable, concat, factorize_rows, lex_greater
from ragstream.trec._ranked import Ranked, Segment, segments
from ragstream.trec.errors import no_common_query, repeated_document, repeated_judgment
from ragstream.trec.table import TrecTable

__all__ = ["join_tables", "trec_order"]

_I64 = NDArray[np.int64]
_U64 = NDArray[np.uint64]
_F64 = NDArray[np.float64]
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
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
    judged = qrels.values[judged_rows[judged_index]].astype(np.float64)
    segment = Segment(rel[index], rel_offsets, judged, judged_offsets)
    return Ranked(qids.texts(eval_codes), (segment,), int(np.count_nonzero(in_qrels)))


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
    q_keys = _doc_keys(q_codes, q_docs, n_names, exact)
    r_keys = _doc_keys(r_codes, r_docs, n_names, exact)
    q_order = np.argsort(q_keys, kind="stable").astype(np.int64)
    q_sorted = q_keys[q_order]
    same = np.flatnonzero(q_sorted[1:] == q_sorted[:-1])
    if same.size:
        first, second = q_order[same], q_order[same + 1]
        if not np.all(_rows_equal(q_docs[first], q_docs[second])):
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
        if not exact and not np.all(_rows_equal(r_docs[rows[hit]], q_docs[match])):
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
    if not np.all(_rows_equal(docs[rows], docs[group_first])):
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


def _rows_equal(a: _U64, b: _U64) -> NDArray[np.bool_]:
    """Row-wise equality of two word matrices of the same shape."""
    equal: NDArray[np.bool_] = np.all(a == b, axis=1)
    return equal


def _mix(x: _U64) -> _U64:
    """A cheap bijection of uint64 that spreads low input bits upwards (multiply, fold)."""
    x = x * _M1
    x ^= x >> np.uint64(29)
    return x


def _doc_keys(qcodes: _I64, words: _U64, n_queries: int, exact: bool) -> _U64:
    """One uint64 per (query, document): query code on top, document hash (or rank) below.

    `exact=True` replaces the hash by the document's dense rank among `words`, so equal keys
    mean equal pairs; it needs a sort of the rows.
    """
    query_bits = max(1, int(n_queries - 1).bit_length())
    if query_bits > 40:
        raise ValueError(f"too many distinct query ids ({n_queries})")
    low_bits = 64 - query_bits
    if exact:
        _, rank = factorize_rows(words)
        if rank.size and int(rank.max()).bit_length() > low_bits:
            raise ValueError("too many distinct document ids for exact keys")
        low = rank.astype(np.uint64)
    else:
        h = _mix(words[:, 0] ^ _GOLDEN)
        for column in range(1, words.shape[1]):
            h = _mix(h ^ words[:, column]) * _M2
        low = h >> np.uint64(query_bits)
    return (qcodes.astype(np.uint64) << np.uint64(low_bits)) | low


def trec_order(qcodes: _I64, scores: _F64, words: _U64) -> _I64:
    """The permutation that groups records by query, then sorts each query's records by
    score (descending), then document words (descending).

    Queries keep their file order when each is contiguous. Document ids must be unique
    within a query (duplicates are removed before).
    """
    perm = _group_queries(qcodes)
    q = qcodes[perm]
    s = scores[perm]
    same = q[1:] == q[:-1]
    if np.any(same & (s[1:] > s[:-1])):
        perm = perm[np.lexsort((-s, q))]  # (codes ascending; the order of queries is free)
        q = qcodes[perm]
        s = scores[perm]
        same = q[1:] == q[:-1]
    pairs = np.flatnonzero(same & (s[1:] == s[:-1]))
    if pairs.size == 0:
        return perm
    left, right = words[perm[pairs]], words[perm[pairs + 1]]
    if np.all(lex_greater(left, right)):
        return perm
    return _sort_ties(perm, pairs, words)


def _group_queries(qcodes: _I64) -> _I64:
    """A permutation that makes each query's records contiguous.

    Identity when they already are (queries may come in any order); otherwise a stable
    sort by query code.
    """
    n = qcodes.size
    heads = np.flatnonzero(np.concatenate(([True], qcodes[1:] != qcodes[:-1]))) if n else qcodes
    if np.unique(qcodes[heads]).size == heads.size:
        return np.arange(n, dtype=np.int64)
    perm: _I64 = np.argsort(qcodes, kind="stable").astype(np.int64)
    return perm


def _sort_ties(perm: _I64, pairs: _I64, words: _U64) -> _I64:
    """Reorder each run of equal (query, score) records by document id, descending."""
    in_tie = np.zeros(perm.size, dtype=bool)
    in_tie[pairs] = True
    in_tie[pairs + 1] = True
    starts = np.zeros(perm.size, dtype=bool)
    starts[pairs] = True
    starts[pairs[1:][pairs[1:] - 1 == pairs[:-1]]] = False  # continues the previous tie
    rows = np.flatnonzero(in_tie)
    group = np.cumsum(starts[rows])  # tie rows ascend, and every group starts at one
    tied = words[perm[rows]]
    keys = [~tied[:, c] for c in range(tied.shape[1] - 1, -1, -1)]
    order = np.lexsort((*keys, group))
    out = perm.copy()
    out[rows] = perm[rows][order]
    return out
