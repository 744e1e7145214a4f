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
) -> Compiled | None:
    """Join the files in one compiled pass; None when the scanner is not built, a file
    cannot be memory-mapped (empty, missing, a pipe), or the scanner declines a line.

    Each file is read in `workers` parts at the same time (default: `default_workers`);
    the result does not depend on it. With `depth`, each ranking is kept only as far as
    metrics of that depth read (`ranking_depth`): its first `depth.k` grades, and on to
    its first grade >= `relevance_level` when `depth.to_relevant`; their values are
    those of the whole rankings, and the grades not kept are never written. `started`:
    the join of these files begun by `start_join` (with the same `keep_best`), which
    this one finishes."""
    if started is not None and started.keep_best != keep_best:
        raise ValueError("the started join has another keep_best")
    pending = started or start_join(qrels, run, keep_best=keep_best, workers=workers)
    if pending is None:
        return None
    if depth is not None:
        pending.cut(depth.k, relevance_level if depth.to_relevant else math.inf)
    out = pending.result()
    if out is None or isinstance(out, str):
        return None
    qrels_path, run_path = os.fspath(qrels), os.fspath(run)
    qids, n_common, n_qrels, parts, order, q_repeat, r_repeat = out
    ranked = Ranked(
        qids,
        tuple(
            Segment(_floats(rel), _ints(rel_offsets), _floats(judged), _ints(judged_offsets))
            for rel, rel_offsets, judged, judged_offsets in parts
        ),
        n_qrels,
        None if order is None else _ints(order),
    )
    error = None
    if n_common == 0 and not complete:
        error = no_common_query(run_path, qrels_path)
    elif q_repeat is not None:
        first, second, qid, doc = q_repeat
        error = repeated_judgment(qrels_path, (first, second), _text(qid), _text(doc))
    elif r_repeat is not None:
        first, second, qid, doc = r_repeat
        error = repeated_document(run_path, (first, second), _text(qid), _text(doc))
    return Compiled(ranked, error)


def _floats(buffer: Buffer) -> NDArray[np.float64]:
    """The scanner's float64 buffer as an array (no copy: the array keeps the buffer)."""
    return np.frombuffer(memoryview(buffer), dtype=np.float64)


def _ints(buffer: Buffer) -> NDArray[np.int64]:
    return np.frombuffer(memoryview(buffer), dtype=np.int64)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")
