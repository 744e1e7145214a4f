"""Evaluate a TREC run against qrels with trec_eval's conventions.

Two paths join the files into the same `Ranked` arrays (the grades of each evaluated
query's documents in trec_eval's order, and its judged grades), which the batch kernels of
`ragstream.metrics` turn into per-query values:

- the compiled scanner (`_compiled`, a C extension): one pass over each file, the default
  whenever it is built;
- numpy (`read_qrels`/`read_run`, then `_join`): whole-array steps, the reference, and the
  fallback when the extension is missing or declines a file (a malformed line, an unusual
  number spelling); it raises the precise errors.

Queries in both files are evaluated; the mean is over them, or over every qrels query
(missing ones count 0) with `complete=True` (trec_eval `-c`). A qrels query without any
relevant document is evaluated like any other (its values are 0), as trec_eval does.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Literal, TypeVar

import numpy as np
from numpy.typing import NDArray

from ragstream.metrics import (
    Gain,
    MetricSpec,
    evaluate,
    parse_metric,
    ranking_depth,
)
from ragstream.metrics.ragged import RaggedPlan, ragged_plan
from ragstream.trec._chunks import Chunk, chunks, padded_cells
from ragstream.trec._compiled import AVAILABLE, join_files, usable_cpus
from ragstream.trec._join import join_tables
from ragstream.trec._ranked import Ranked, Segment
from ragstream.trec.table import read_qrels, read_run

__all__ = ["DEFAULT_METRICS", "Engine", "TrecEvaluation", "evaluate_files"]

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

Engine = Literal["auto", "compiled", "numpy"]
"""How `evaluate_files` joins the files: "compiled" (the C scanner; RuntimeError when it is
not built), "numpy" (the reference path), or "auto" (the default): compiled when built,
numpy otherwise. Every path gives the same results and errors: the compiled one hands
unusual files to numpy."""

_I64 = NDArray[np.int64]
_F64 = NDArray[np.float64]
_BATCH_CELLS = 1 << 19  # padded cells in the kernels at a time: temporaries reuse freed memory
_THREAD_CELLS = 1 << 20  # below this many cells the kernels run in one thread


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
    missing: tuple[str, ...] = ()
    """With `complete`: the qrels queries the run lacks, in byte order of their ids; each
    counts 0 in every metric (trec_eval 10 prints a line of zeros for each with -q -c)."""


def evaluate_files(
    qrels: str | os.PathLike[str],
    run: str | os.PathLike[str],
    metrics: Sequence[str | MetricSpec] = DEFAULT_METRICS,
    *,
    gain: Gain = "linear",
    relevance_level: int = 1,
    complete: bool = False,
    keep_best: bool = False,
    engine: Engine = "auto",
) -> TrecEvaluation:
    """Read both files and evaluate; `engine` as in `Engine`. A document repeated in one
    query of the run is an error (TrecFormatError with both lines) unless `keep_best`: then
    its best-scored line counts, the earliest line on equal scores. A document judged twice
    for one query is an error."""
    if engine == "compiled" and not AVAILABLE:
        raise RuntimeError("the compiled scanner ragstream.trec._trec_reader is not built")
    # before reading: a bad name costs no scan
    specs = tuple(parse_metric(m) if isinstance(m, str) else m for m in metrics)
    if relevance_level < 1:
        raise ValueError(f"relevance level must be >= 1, got {relevance_level}")
    ranked = None
    if engine in ("compiled", "auto"):
        # the metrics computed by the join's threads as they join each query, when the
        # compiled kernels can compute them; the rankings kept for numpy's otherwise
        plan = ragged_plan(specs, gain=gain, threshold=float(relevance_level))
        joined = join_files(
            qrels,
            run,
            keep_best=keep_best,
            complete=complete,
            depth=ranking_depth(specs),  # only what the metrics read is written
            relevance_level=relevance_level,
            plan=plan,
        )
        if joined is not None:
            if joined.error is not None:
                raise joined.error
            if joined.values is not None:
                result = _evaluation(specs, joined.ranked, joined.values, complete)
                return _with_missing(result, joined.ranked, qrels)
            ranked = joined.ranked
    if ranked is None:  # the numpy path
        ranked = join_tables(
            read_qrels(qrels), read_run(run), keep_best=keep_best, complete=complete
        )
    result = _evaluate(ranked, specs, gain, relevance_level, complete)
    return _with_missing(result, ranked, qrels)


def _with_missing(
    result: TrecEvaluation,
    ranked: Ranked,
    qrels: str | os.PathLike[str],
) -> TrecEvaluation:
    """`result` with its `missing` queries, when complete and the run lacks some: the
    qrels file's query ids are read again then (only then)."""
    if not result.complete or ranked.num_qrels_queries == len(ranked.qids):
        return result
    ids = read_qrels(qrels).qids
    evaluated = set(ranked.qids)
    raw = sorted(set(ids.texts(np.arange(ids.size, dtype=np.int64))))
    text = (qid.decode("utf-8", "replace") for qid in raw)  # as the joins decode them
    return replace(result, missing=tuple(qid for qid in text if qid not in evaluated))


def _evaluate(
    ranked: Ranked,
    specs: tuple[MetricSpec, ...],
    gain: Gain,
    relevance_level: int,
    complete: bool,
) -> TrecEvaluation:
    """Per-query values (queries in byte order) and means of the joined files."""
    per_query = _kernels(specs, ranked.segments, gain, relevance_level)
    if ranked.order is not None:  # stored in another order than the ids'
        per_query = {name: values[ranked.order] for name, values in per_query.items()}
    return _evaluation(specs, ranked, per_query, complete)


def _evaluation(
    specs: tuple[MetricSpec, ...], ranked: Ranked, per_query: dict[str, _F64], complete: bool
) -> TrecEvaluation:
    """The evaluation of per-query values aligned with `ranked.qids`: their means."""
    denominator = ranked.num_qrels_queries if complete else len(ranked.qids)
    mean = {
        name: (float(values.sum()) / denominator if denominator else 0.0)
        for name, values in per_query.items()
    }
    return TrecEvaluation(specs, ranked.qids, per_query, mean, denominator, complete)


def _kernels(
    specs: tuple[MetricSpec, ...],
    segments: Sequence[Segment],
    gain: Gain,
    relevance_level: int,
    threads: int | None = None,
    compiled: bool = True,
) -> dict[str, _F64]:
    """Per-query values of the queries of `segments`, end to end: by the compiled kernels
    (`ragstream.metrics.ragged`, the same bits) when `compiled` and they can compute these
    metrics; otherwise by numpy's, over chunks of queries (`_chunks`), so that padding
    stays bounded, `threads` chunks at a time (numpy releases the GIL in its loops; by
    default one thread per CPU from 1 Mi cells on). A query's values do not depend on its
    chunk."""
    segments = list(segments)
    n = sum(len(segment) for segment in segments)
    if n == 0:
        return {s.name: np.zeros(0, dtype=np.float64) for s in specs}
    plan = ragged_plan(specs, gain=gain, threshold=float(relevance_level)) if compiled else None
    if plan is not None:
        compiled_values = _compiled_kernels(plan, segments, n, threads)
        if compiled_values is not None:
            return compiled_values
    total = padded_cells(segments)
    if threads is None:
        threads = usable_cpus() if total >= _THREAD_CELLS else 1
    threads = max(1, min(threads, n))
    # as many cells at a time as one thread had: pieces of a thread's share
    work = chunks(segments, max(1, min(_BATCH_CELLS // threads, -(-total // threads))))

    def kernels(chunk: Chunk) -> dict[str, _F64]:
        return evaluate(chunk.batch(), specs, gain=gain, threshold=float(relevance_level))

    parts = _in_threads(kernels, work, threads)
    out = {s.name: np.empty(n, dtype=np.float64) for s in specs}
    for chunk, part in zip(work, parts, strict=True):
        for name, values in part.items():
            out[name][chunk.at] = values
    return out


def _compiled_kernels(
    plan: RaggedPlan, segments: list[Segment], n: int, threads: int | None
) -> dict[str, _F64] | None:
    """The kernels' values by the compiled kernels, each query evaluated where it lies in
    its segment (no padding), `threads` ranges of queries of like work at a time; None
    when they declined (a grade that is not finite), for numpy's kernels to decide."""
    cells = sum(int(g.rel.size + g.judged.size) for g in segments)
    if threads is None:
        threads = usable_cpus() if cells >= _THREAD_CELLS else 1
    threads = max(1, min(threads, n))
    work: list[tuple[Segment, int, int, int]] = []  # segment, its queries start..stop, at
    at = 0
    for g in segments:
        before = g.rel_offsets + g.judged_offsets  # the cells before each query
        cuts = np.searchsorted(before, np.linspace(0, before[-1], threads + 1)[1:-1])
        bounds = [0, *sorted({int(c) for c in cuts} - {0, len(g)}), len(g)]
        work += [(g, a, b, at + a) for a, b in pairwise(bounds) if b > a]
        at += len(g)

    def values(item: tuple[Segment, int, int, int]) -> _F64 | None:
        g, start, stop, _ = item
        return plan.values(g.rel, g.rel_offsets, g.judged, g.judged_offsets, start, stop)

    parts = _in_threads(values, work, threads)
    if any(part is None for part in parts):
        return None
    out = np.empty((len(plan.names), n), dtype=np.float64)
    for (_, start, stop, first), part in zip(work, parts, strict=True):
        out[:, first : first + stop - start] = part
    return {name: out[row] for row, name in enumerate(plan.names)}


_T = TypeVar("_T")
_R = TypeVar("_R")


def _in_threads(work: Callable[[_T], _R], items: list[_T], threads: int) -> list[_R]:
    """[work(item) for item in items], `threads` items at a time; the exception of the first
    item that fails is raised once all threads have stopped (items not begun are dropped)."""
    if threads <= 1 or len(items) <= 1:
        return [work(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(threads, len(items))) as pool:
        return list(pool.map(work, items))
