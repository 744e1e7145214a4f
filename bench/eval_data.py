"""Deterministic synthetic TREC collections for the `ragstream eval` benchmark.

The files look like real ones: numeric query ids in no particular order, MS MARCO style
document ids, graded qrels 0-3 where about half of the judgments are zero, judged documents
that were not retrieved, queries on only one side, queries whose judgments are all zero,
tied scores (rounded), negative scores (log-probabilities) and scores in exponent notation.
Run lines are written in rank order, with ties in arbitrary order (not trec_eval's).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["Collection", "generate"]

_GRADE_P = (0.5, 0.25, 0.15, 0.10)  # grades 0, 1, 2, 3
_JUDGED_RETRIEVED = 12  # judged documents taken from each query's ranking
_JUDGED_EXTRA = 8  # judged documents the run did not retrieve
_CHUNK = 20_000  # queries written per batch


@dataclass(frozen=True)
class Collection:
    """Paths of one generated qrels/run pair and its shape."""

    qrels: Path
    run: Path
    queries: int
    docs_per_query: int


def generate(directory: Path, queries: int, docs_per_query: int = 100, seed: int = 0) -> Collection:
    """Write (once) `qrels` and `run` files of the given size into `directory`.

    Files are cached by size and seed: a second call with the same arguments only returns
    the paths.
    """
    stem = f"q{queries}_d{docs_per_query}_s{seed}"
    qrels_path = directory / f"{stem}.qrels"
    run_path = directory / f"{stem}.run"
    shape = Collection(qrels_path, run_path, queries, docs_per_query)
    if qrels_path.exists() and run_path.exists():
        return shape
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    qids = rng.choice(9_000_000, size=queries, replace=False) + 1_000_000
    in_run = rng.random(queries) >= 0.02  # 2% of queries only in the qrels
    in_qrels = rng.random(queries) >= 0.02  # 2% only in the run
    in_qrels |= ~in_run
    all_zero = rng.random(queries) < 0.01  # judged, but nothing relevant
    tmp_q, tmp_r = qrels_path.with_suffix(".tmp1"), run_path.with_suffix(".tmp2")
    with tmp_q.open("w") as fq, tmp_r.open("w") as fr:
        for lo in range(0, queries, _CHUNK):
            hi = min(lo + _CHUNK, queries)
            run_lines, qrels_lines = _batch(
                rng, qids[lo:hi], in_run[lo:hi], in_qrels[lo:hi], all_zero[lo:hi], docs_per_query
            )
            fr.write(run_lines)
            fq.write(qrels_lines)
    tmp_q.rename(qrels_path)
    tmp_r.rename(run_path)
    return shape


def _batch(
    rng: np.random.Generator,
    qids: np.typing.NDArray[np.int64],
    in_run: np.typing.NDArray[np.bool_],
    in_qrels: np.typing.NDArray[np.bool_],
    all_zero: np.typing.NDArray[np.bool_],
    depth: int,
) -> tuple[str, str]:
    """Run and qrels text for one batch of queries."""
    n = len(qids)
    # Unique within a query: distinct residues modulo `depth`.
    docs = rng.integers(0, 40_000, size=(n, depth)) * depth + np.arange(depth)
    kind = rng.random(n)
    bm25 = np.round(rng.gamma(2.0, 4.0, size=(n, depth)), 2)
    logp = np.round(-rng.exponential(3.0, size=(n, depth)), 3)
    scores = np.where((kind < 0.5)[:, None], bm25, logp)
    order = np.argsort(-scores, axis=1, kind="stable")
    docs = np.take_along_axis(docs, order, axis=1)
    scores = np.take_along_axis(scores, order, axis=1)
    exp_notation = kind > 0.9
    run_parts: list[str] = []
    qrels_parts: list[str] = []
    for i in range(n):
        qid = str(qids[i])
        row_docs = docs[i]
        if in_run[i]:
            fmt = "{:.6e}" if exp_notation[i] else "{}"
            run_parts.extend(
                f"{qid} Q0 D{d} {r} {fmt.format(s)} bench\n"
                for r, (d, s) in enumerate(
                    zip(row_docs.tolist(), scores[i].tolist(), strict=True), 1
                )
            )
        if in_qrels[i]:
            ranks = np.unique(np.minimum(rng.geometric(0.06, _JUDGED_RETRIEVED), depth) - 1)
            judged = [f"D{d}" for d in row_docs[ranks].tolist()]
            stride = max(depth, _JUDGED_EXTRA)
            extra = rng.integers(40_000, 80_000, _JUDGED_EXTRA) * stride + np.arange(_JUDGED_EXTRA)
            judged += [f"D{d}" for d in extra.tolist()]
            grades = rng.choice(4, size=len(judged), p=_GRADE_P)
            if all_zero[i]:
                grades[:] = 0
            qrels_parts.extend(
                f"{qid} 0 {d} {g}\n" for d, g in zip(judged, grades.tolist(), strict=True)
            )
    return "".join(run_parts), "".join(qrels_parts)
