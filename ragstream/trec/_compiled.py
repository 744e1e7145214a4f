"""The compiled path of `ragstream eval`: both files joined in one C pass.

`ragstream.trec._scan` (built from `_scan.c` by `pip install`) reads the memory-mapped
files once each and returns the `Ranked` arrays directly: records, repeated documents,
trec_eval's order and the grade lookup happen per query in small in-cache tables, instead
of numpy's many passes over arrays of the whole file. It accepts a strict subset of the
files the numpy reader accepts and declines the rest (a malformed line, a score spelled
`inf`, ...); `join_files` then returns None and the caller reads the files with numpy,
which raises the precise error or accepts the spelling. So the two paths agree on every
file, errors included (tests/trec/test_compiled.py checks it).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ragstream.metrics import RankingDepth
from ragstream.metrics.ragged import RaggedPlan
from ragstream.trec._pending import (
    AVAILABLE,
    PendingJoin,
    default_workers,
    start_join,
    usable_cpus,
)
from ragstream.trec._ranked import (
    Ranked,
    Segment,
    no_common_query,
    repeated_document,
    repeated_judgment,
)
from ragstream.trec.errors import TrecFormatError

__all__ = ["AVAILABLE", "Compiled", "default_workers", "join_files", "usable_cpus"]

if TYPE_CHECKING:
    from typing_extensions import Buffer


@dataclass(frozen=True)
class Compiled:
    """The join of both files, or the error the numpy path raises after parsing them."""

    ranked: Ranked
    error: TrecFormatError | None
    values: dict[str, NDArray[np.float64]] | None = None
    """With a plan: its metrics' values (canonical name -> values aligned with
    `ranked.qids`), computed as each query was joined; `ranked` then holds no rankings
    (no segment)."""


def join_files(
    qrels: str | os.PathLike[str],
    run: str | os.PathLike[str],
    *,
    keep_best: bool,
    complete: bool,
    workers: int | None = None,
    depth: RankingDepth | None = None,
    relevance_level: float = 1.0,
    started: PendingJoin | None = None,
    plan: RaggedPlan | None = None,
) -> Compiled | None:
    """Join the files in one compiled pass; None when the scanner is not built, a file
    cannot be memory-mapped (empty, missing, a pipe), or the scanner declines a line.

    Each file is read in `workers` parts at the same time (default: `default_workers`);
    the result does not depend on it. With `depth`, each ranking is kept only as far as
    metrics of that depth read (`ranking_depth`): its first `depth.k` grades, and on to
    its first grade >= `relevance_level` when `depth.to_relevant`; their values are
    those of the whole rankings, and the grades not kept are never written. `started`:
    the join of these files begun by `start_join` (with the same `keep_best`), which
    this one finishes. With `plan` (of the same relevance level), each query is evaluated
    as soon as it is joined, and the result holds the values instead of the rankings:
    the same bits as `plan.values` over them."""
    if started is not None and started.keep_best != keep_best:
        raise ValueError("the started join has another keep_best")
    pending = started or start_join(qrels, run, keep_best=keep_best, workers=workers)
    if pending is None:
        return None
    if depth is not None or plan is not None:
        k = 0 if depth is None else depth.k
        level = relevance_level if depth is not None and depth.to_relevant else math.inf
        pending.cut(k, level, None if plan is None else plan.kernel)
    out = pending.result()
    if out is None or isinstance(out, str):
        return None
    qrels_path, run_path = os.fspath(qrels), os.fspath(run)
    qids, n_common, n_qrels, parts, order, q_repeat, r_repeat, values = out
    ranked = Ranked(
        qids,
        tuple(
            Segment(_floats(rel), _ints(rel_offsets), _floats(judged), _ints(judged_offsets))
            for rel, rel_offsets, judged, judged_offsets in parts or ()
        ),
        n_qrels,
        None if order is None else _ints(order),
    )
    per_query = None
    if values is not None:
        assert plan is not None  # values come only with a plan's kernel
        rows = _floats(values).reshape(len(plan.names), len(qids))
        per_query = {name: rows[i] for i, name in enumerate(plan.names)}
    error = None
    if n_common == 0 and not complete:
        error = no_common_query(run_path, qrels_path)
    elif q_repeat is not None:
        first, second, qid, doc = q_repeat
        error = repeated_judgment(qrels_path, (first, second), _text(qid), _text(doc))
    elif r_repeat is not None:
        first, second, qid, doc = r_repeat
        error = repeated_document(run_path, (first, second), _text(qid), _text(doc))
    return Compiled(ranked, error, per_query)


def _floats(buffer: Buffer) -> NDArray[np.float64]:
    """The scanner's float64 buffer as an array (no copy: the array keeps the buffer)."""
    return np.frombuffer(memoryview(buffer), dtype=np.float64)


def _ints(buffer: Buffer) -> NDArray[np.int64]:
    return np.frombuffer(memoryview(buffer), dtype=np.int64)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")
