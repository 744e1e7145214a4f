"""Evaluate a TREC run against qrels with trec_eval's conventions, as whole-array steps.

1. Query ids are factorized together (code order = byte order, as trec_eval reports).
2. Each (query, document) gets a 64-bit key; one sort finds repeated run lines and repeated
   judgments, one binary search joins the run with the qrels (see `_keys`).
3. Runs are ordered by score descending, ties by document id descending (`_order`).
4. The grades in rank order and the judged grades go to the metric kernels in CSR form.

Queries in both files are evaluated; the mean is over them, or over every qrels query
(missing ones count 0) with `complete=True` (trec_eval `-c`). A qrels query without any
relevant document is evaluated like any other (its values are 0), as trec_eval does.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragstream.metrics import Gain, MetricSpec, RankingBatch, evaluate, parse_metric
from ragstream.trec._keys import doc_keys, factorize_rows, pad_words, rows_equal
from ragstream.trec._order import trec_order
from ragstream.trec.errors import TrecFormatError
from ragstream.trec.qrels import read_qrels
from ragstream.trec.run import read_run
from ragstream.trec.table import Reader, TrecTable

__all__ = ["DEFAULT_METRICS", "TrecEvaluation", "evaluate_files", "evaluate_tables"]

DEFAULT_METRICS: tuple[str, ...] = (
    "rr",
    "precision@5",
    "precision@10",
    "recall@5",
    "recall@10",
    "ndcg@5",
    "ndcg@10",
)
"""Metrics of `ragstream eval` when none are asked for."""

_I64 = NDArray[np.int64]
_U64 = NDArray[np.uint64]
_F64 = NDArray[np.float64]
_BATCH_CELLS = 1 << 24  # padded cells per kernel call: bounds memory on very long rankings


class _CollisionError(Exception):
    """Two different documents of one query share a hash key; rebuild keys exactly."""


@dataclass(frozen=True)
class TrecEvaluation:
    """Per-query values and means of several metrics over a qrels/run pair."""

    metrics: tuple[MetricSpec, ...]
    """The metrics, in the order asked."""
    qids: tuple[str, ...]
    """Evaluated queries (in both files), in byte order of their ids."""
    per_query: dict[str, _F64]
    """Canonical metric name -> values aligned with `qids`."""
    mean: dict[str, float]
    """Canonical metric name -> mean over `num_queries` queries."""
    num_queries: int
    """The mean's denominator: evaluated queries, or all qrels queries when complete."""
    complete: bool
    """True when missing qrels queries counted as 0 (trec_eval -c)."""


def evaluate_files(
    qrels: str | os.PathLike[str],
    run: str | os.PathLike[str],
    metrics: Sequence[str | MetricSpec] = DEFAULT_METRICS,
    *,
    gain: Gain = "linear",
    relevance_level: int = 1,
    complete: bool = False,
    keep_best: bool = False,
    reader: Reader = "numpy",
) -> TrecEvaluation:
    """Read both files and evaluate (see `evaluate_tables`); `reader` as in `read_table`."""
    return evaluate_tables(
        read_qrels(qrels, reader=reader),
        read_run(run, reader=reader),
        metrics,
        gain=gain,
        relevance_level=relevance_level,
        complete=complete,
        keep_best=keep_best,
    )


def evaluate_tables(
    qrels: TrecTable,
    run: TrecTable,
    metrics: Sequence[str | MetricSpec] = DEFAULT_METRICS,
    *,
    gain: Gain = "linear",
    relevance_level: int = 1,
    complete: bool = False,
    keep_best: bool = False,
) -> TrecEvaluation:
    """Evaluate parsed files. A document repeated in one query of the run is an error
    (TrecFormatError with both lines) unless `keep_best`: then its best-scored line counts,
    the earliest line on equal scores. A document judged twice for one query is an error.
    """
    specs = tuple(parse_metric(m) if isinstance(m, str) else m for m in metrics)
    if relevance_level < 1:
        raise ValueError(f"relevance level must be >= 1, got {relevance_level}")
    width = max(qrels.qid_words.shape[1], run.qid_words.shape[1])
    names, codes = factorize_rows(
        np.concatenate([pad_words(qrels.qid_words, width), pad_words(run.qid_words, width)])
    )
    n_blocks = qrels.qid_words.shape[0]
    q_codes = np.repeat(codes[:n_blocks], np.diff(qrels.block_starts))
    r_codes = np.repeat(codes[n_blocks:], np.diff(run.block_starts))
    width = max(qrels.doc_words.shape[1], run.doc_words.shape[1])
    q_docs, r_docs = pad_words(qrels.doc_words, width), pad_words(run.doc_words, width)
    n_names = names.shape[0]
    in_qrels = np.zeros(n_names, dtype=bool)
    in_qrels[q_codes] = True
    in_run = np.zeros(n_names, dtype=bool)
    in_run[r_codes] = True
    evaluated = in_qrels & in_run
    eval_codes = np.flatnonzero(evaluated)
    denominator = int(np.count_nonzero(in_qrels)) if complete else eval_codes.size
    if eval_codes.size == 0 and not complete:
        raise TrecFormatError(
            run.path, None, f"no query id of the run appears in the qrels ({qrels.path})"
        )
    tables = (qrels, run, q_codes, r_codes, q_docs, r_docs, names)
    try:
        q_order, rows, rel = _join(tables, evaluated, keep_best, exact=False)
    except _CollisionError:
        q_order, rows, rel = _join(tables, evaluated, keep_best, exact=True)
    ranked_codes = r_codes[rows]
    change = np.ones(ranked_codes.size, dtype=bool)
    change[1:] = ranked_codes[1:] != ranked_codes[:-1]
    heads = np.flatnonzero(change)
    sequence = ranked_codes[heads]  # the evaluated queries, in the order of `rows`
    rel_offsets = np.append(heads, rows.size).astype(np.int64)
    judged_rows, judged_offsets = _segments(q_order, q_codes[q_order], sequence, n_names)
    judged = qrels.values[judged_rows].astype(np.float64)

    values = _kernels(specs, rel, rel_offsets, judged, judged_offsets, gain, relevance_level)
    to_bytes_order = np.argsort(sequence)
    per_query = {name: array[to_bytes_order] for name, array in values.items()}
    mean = {
        name: (float(values.sum()) / denominator if denominator else 0.0)
        for name, values in per_query.items()
    }
    return TrecEvaluation(specs, _decode(names[eval_codes]), per_query, mean, denominator, complete)


def _scores(run: TrecTable) -> _F64:
    return run.values.astype(np.float64, copy=False)


def _segments(rows: _I64, codes: _I64, sequence: _I64, n_names: int) -> tuple[_I64, _I64]:
    """Rows (grouped by ascending code) rearranged into the query order `sequence`.

    Returns the rearranged rows and their CSR offsets (one segment per query of
    `sequence`, empty for a query without rows).
    """
    counts = np.bincount(codes, minlength=n_names)
    starts = np.cumsum(counts) - counts
    lengths = counts[sequence]
    offsets = np.zeros(sequence.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    index = np.repeat(starts[sequence] - offsets[:-1], lengths) + np.arange(offsets[-1])
    return rows[index], offsets


def _kernels(
    specs: tuple[MetricSpec, ...],
    rel: _F64,
    rel_offsets: _I64,
    judged: _F64,
    judged_offsets: _I64,
    gain: Gain,
    relevance_level: int,
) -> dict[str, _F64]:
    """Run the kernels over slices of queries, so that padding stays bounded."""
    n = rel_offsets.size - 1
    if n == 0:
        return {s.name: np.zeros(0, dtype=np.float64) for s in specs}
    longest = int(max(np.diff(rel_offsets).max(initial=0), np.diff(judged_offsets).max(initial=0)))
    step = max(1, _BATCH_CELLS // max(1, longest))
    parts: dict[str, list[_F64]] = {s.name: [] for s in specs}
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        r0, r1 = rel_offsets[lo], rel_offsets[hi]
        j0, j1 = judged_offsets[lo], judged_offsets[hi]
        batch = RankingBatch.from_ragged(
            rel[r0:r1],
            rel_offsets[lo : hi + 1] - r0,
            judged[j0:j1],
            judged_offsets[lo : hi + 1] - j0,
        )
        values = evaluate(batch, specs, gain=gain, threshold=float(relevance_level))
        for name, array in values.items():
            parts[name].append(array)
    return {name: np.concatenate(arrays) for name, arrays in parts.items()}


def _decode(words: _U64) -> tuple[str, ...]:
    if words.shape[0] == 0:
        return ()
    raw = words.astype(">u8").view(f"S{8 * words.shape[1]}").ravel()
    return tuple(b.decode("utf-8", "replace") for b in raw.tolist())


_Tables = tuple[TrecTable, TrecTable, _I64, _I64, _U64, _U64, _U64]


def _join(
    tables: _Tables, evaluated: NDArray[np.bool_], keep_best: bool, exact: bool
) -> tuple[_I64, _I64, _F64]:
    """Check duplicates, order the run, and look up grades.

    Returns the qrels rows sorted by key (so grouped by query), the run rows to evaluate in
    rank order, and the grade of each of them (0 when unjudged). The lookup runs on the
    ranked rows, whose keys ascend by query: the binary searches stay in cache.
    """
    qrels, run, q_codes, r_codes, q_docs, r_docs, names = tables
    n_names = names.shape[0]
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
        raise TrecFormatError(
            qrels.path,
            qrels.line(b),
            f"document {_text(q_docs[b])!r} judged twice for query "
            f"{_text(names[q_codes[b]])!r} (lines {qrels.line(a)} and {qrels.line(b)})",
        )
    keep = _deduplicate(run, r_keys, r_codes, r_docs, names, keep_best)
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
    return q_order, rows, grade


def _deduplicate(
    run: TrecTable,
    keys: _U64,
    codes: _I64,
    docs: _U64,
    names: _U64,
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
        raise TrecFormatError(
            run.path,
            run.line(b),
            f"document {_text(docs[b])!r} repeated for query {_text(names[codes[b]])!r} "
            f"(lines {run.line(a)} and {run.line(b)}); --keep-best keeps its best-scored line",
        )
    scores = _scores(run)[rows]
    group = np.cumsum(heads)
    best = np.lexsort((rows, -scores, group))  # per group: best score, then earliest line
    winners = best[np.concatenate(([True], group[best][1:] != group[best][:-1]))]
    keep[rows] = False
    keep[rows[winners]] = True
    return keep


def _text(words: _U64) -> str:
    return bytes(words.astype(">u8").tobytes()).rstrip(b"\0").decode("utf-8", "replace")
