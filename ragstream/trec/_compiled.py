"""The compiled path of `ragstream eval`: both files joined in one C pass.

`ragstream.trec._trec_reader` (built from `_trec_reader.c` by `pip install`) reads the
memory-mapped files once each and returns the `Ranked` arrays directly: records, repeated
documents, trec_eval's order and the grade lookup happen per query in small in-cache
tables, instead of numpy's many passes over arrays of the whole file. It accepts a strict
subset of the files the numpy reader accepts and declines the rest (a malformed line, a
score spelled `inf`, ...); `join_files` then returns None and the caller reads the files
with numpy, which raises the precise error or accepts the spelling. So the two paths agree
on every file, errors included (tests/trec/test_compiled.py checks it).

The reader's threads map in the pages of the pieces they read, and drop the run's once
read (`_trec_reader.join`'s `mapped`), so that no thread maps the whole run in before
reading and nothing is left to unmap at the end.
"""

from __future__ import annotations

import math
import mmap
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ragstream.metrics import RankingDepth
from ragstream.metrics.ragged import RaggedPlan
from ragstream.trec._ranked import Ranked, Segment
from ragstream.trec.errors import (
    TrecFormatError,
    no_common_query,
    repeated_document,
    repeated_judgment,
)

if TYPE_CHECKING:
    from typing_extensions import Buffer  # in collections.abc from Python 3.12

    _Repeat = tuple[int, int, bytes, bytes]  # first line, repeated line, query id, document id
    _Buffers = tuple[Buffer, Buffer, Buffer, Buffer]  # rel, rel_offsets, judged, judged_offsets
    Out = tuple[
        tuple[str, ...],
        int,
        int,
        list[_Buffers] | None,
        Buffer | None,
        _Repeat | None,
        _Repeat | None,
        Buffer | None,
    ]
    """What `_trec_reader.join` returns when it joins the files."""

__all__ = ["AVAILABLE", "Compiled", "default_workers", "join_files", "usable_cpus"]

try:
    from ragstream.trec import _trec_reader
except ImportError:  # not built (no C compiler at install time): the numpy path serves
    _trec_reader = None  # type: ignore[assignment]

AVAILABLE: bool = _trec_reader is not None
"""True when the extension was built."""

_SMALL = 1 << 20


def default_workers(run_bytes: int) -> int:
    """Threads for a run of this size: one per CPU this process may use, one for runs
    under 1 MiB (where starting threads costs more than it saves)."""
    return 1 if run_bytes < _SMALL else usable_cpus()


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


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
    plan: RaggedPlan | None = None,
) -> Compiled | None:
    """Join the files in one compiled pass; None when the reader is not built, a file
    cannot be memory-mapped (empty, missing, a pipe), or the reader declines a line.

    Each file is read in `workers` parts at the same time (default: `default_workers`;
    the reader clamps it to 1-64); the result does not depend on it. With `depth`, each
    ranking is kept only as far as metrics of that depth read (`ranking_depth`): its
    first `depth.k` grades, and on to its first grade >= `relevance_level` when
    `depth.to_relevant`; their values are those of the whole rankings, and the grades not
    kept are never written. With `plan` (of the same relevance level), each query is
    evaluated as soon as it is joined, and the result holds the values instead of the
    rankings: the same bits as `plan.values` over them."""
    if _trec_reader is None:
        return None
    k = 0 if depth is None else depth.k
    level = relevance_level if depth is not None and depth.to_relevant else math.inf
    cut = _trec_reader.Cut(k, level, None if plan is None else plan.kernel)
    qrels_map, run_map = _map(qrels), _map(run)
    try:
        if qrels_map is None or run_map is None:
            return None
        n = default_workers(len(run_map)) if workers is None else workers
        out = _trec_reader.join(qrels_map, run_map, keep_best, n, cut, True)
    finally:
        for mapped in (qrels_map, run_map):
            if mapped is not None:
                mapped.close()
    if isinstance(out, str):
        return None
    return _from_output(out, qrels, run, complete=complete, plan=plan)


def _from_output(
    out: Out,
    qrels: str | os.PathLike[str],
    run: str | os.PathLike[str],
    *,
    complete: bool,
    plan: RaggedPlan | None,
) -> Compiled:
    """The reader's output for these files as arrays, and the error it found."""
    qids, n_common, n_qrels, parts, order, q_repeat, r_repeat, values = out
    ranked = Ranked(
        qids,
        tuple(
            Segment(_floats(rel), _ints(rel_offsets), _floats(judged), _ints(judged_offsets))
            for rel, rel_offsets, judged, judged_offsets in parts or ()  # None with a plan
        ),
        n_qrels,
        None if order is None else _ints(order),
    )
    per_query = None
    if values is not None:
        assert plan is not None  # values come only with a plan's kernel
        rows = _floats(values).reshape(len(plan.names), len(qids))
        per_query = {name: rows[i] for i, name in enumerate(plan.names)}
    qrels_path, run_path = os.fspath(qrels), os.fspath(run)
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
    """The reader's float64 buffer as an array (no copy: the array keeps the buffer)."""
    return np.frombuffer(memoryview(buffer), dtype=np.float64)


def _ints(buffer: Buffer) -> NDArray[np.int64]:
    return np.frombuffer(memoryview(buffer), dtype=np.int64)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _map(path: str | os.PathLike[str]) -> mmap.mmap | None:
    """The file mapped read-only and shared (the scanner maps its pages in), or None."""
    try:
        with open(path, "rb") as handle:
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError, OverflowError):  # missing, a directory, empty, too large
        return None
