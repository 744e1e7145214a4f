"""The differential checks of the fuzz targets of drift/_kernels.c, metrics/_ragged.c and
trec/_trec_reader.c: each takes the fuzzer's input bytes, runs the compiled code and its Python
twin on them, and raises AssertionError when they disagree (the libFuzzer harness in C,
tests/fuzz/harness.h, then aborts with the input saved).

Under scripts/fuzz.sh the compiled modules are the sanitized builds linked into the
fuzzer (registered as built-in modules before the interpreter starts); `one_input` and
`seeds` also run in plain Python against the installed extensions (tests/fuzz/test_fuzz.py
at a small size, before the sanitizer runs).

Input layouts (the seeds are valid ones; libFuzzer's mutations make the rest):
- drift: JSON `{"snapshot": <a detector snapshot>, "values": [...]}`, a snapshot as the
  state topic carries it, restored (or refused) and then fed the values;
- ragged: bytes read as a recipe for CSR rankings, metrics and cutoffs (`_Reader`);
- trec: a qrels file, the byte 0x1e, then a run file (and options in the first byte).
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import struct
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["TARGETS", "one_input", "seeds"]

_F64 = NDArray[np.float64]
_I64 = NDArray[np.int64]


def _same_float(a: float, b: float) -> bool:
    """The same double, NaN included."""
    return struct.pack("<d", a) == struct.pack("<d", b)


def _outcome(run: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", value) or ("raised", exception type name): what a call did."""
    try:
        return "ok", run()
    except (ValueError, TypeError, OverflowError, ZeroDivisionError, KeyError) as error:
        return "raised", type(error).__name__


# -- drift ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _python_loops(module: Any) -> Iterator[None]:
    """The detector module with its Python loop (the compiled one set aside)."""
    saved = vars(module)["_kernels"]
    module._kernels = None
    try:
        yield
    finally:
        module._kernels = saved


def drift(data: bytes) -> None:
    """Restore a (mutated) snapshot; when it is accepted, feed it the values by the compiled
    loop and by the Python one: the same offsets, state or exception."""
    import ragstream.drift.adwin as adwin_module
    import ragstream.drift.page_hinkley as ph_module
    from ragstream.drift import Adwin, PageHinkley

    try:
        snapshot, values = _json_case(data) if data[:1] == b"{" else _recipe_case(data)
        kind = snapshot["kind"]
    except (ValueError, TypeError, KeyError, IndexError, RecursionError):
        return
    cls: type[Adwin] | type[PageHinkley]
    module, cls = (adwin_module, Adwin) if kind == "adwin" else (ph_module, PageHinkley)
    if kind not in ("adwin", "page_hinkley") or not isinstance(values, list):
        return
    try:
        compiled = cls.restore(copy.deepcopy(snapshot))
    except Exception:  # refused: the hand-over counts whatever restore raises
        return
    python = cls.restore(copy.deepcopy(snapshot))
    ours = _outcome(lambda: compiled.update(values).tolist())
    # numpy's overflow warnings (errors under pytest) are not results: the compiled loop has none
    with _python_loops(module), np.errstate(over="ignore", invalid="ignore"):
        theirs = _outcome(lambda: python.update(values).tolist())
    assert ours == theirs, (ours, theirs)
    if ours[0] == "ok":
        state = json.dumps(compiled.snapshot())
        assert state == json.dumps(python.snapshot()), "state differs"
        if "Infinity" not in state and "NaN" not in state:  # sums past the doubles: refused
            cls.restore(json.loads(state))  # what the loop leaves restores


def _json_case(data: bytes) -> tuple[Any, Any]:
    """`{"snapshot": ..., "values": [...]}`."""
    doc = json.loads(data)
    return doc["snapshot"], doc["values"]


# what a recipe sets a field, a bucket or a value to
_SPECIAL: tuple[Any, ...] = (
    *(0, 1, -1, 2, 3, 1 << 53, (1 << 53) + 1, 1 << 62, (1 << 63) - 1, 1 << 63, 1 << 64),
    *(0.0, -0.0, 0.5, 1e-300, 1e300, 0.9e154, math.inf, -math.inf, math.nan, 5e-324),
    *(True, None, "x", [], {}, 2.5),
)
_VALUES = (0.0, 1.0, 0.5, 0.25, 0.75, 0.1, math.nan, -0.0, 1e300, -1e300, 0.9e154, 1e-300)


def _recipe_case(data: bytes) -> tuple[Any, Any]:
    """A valid snapshot (chosen by the first byte) changed by up to 7 operations of three
    bytes each (set a field, empty, drop or add a bucket row, add or drop a bucket, shift the
    width, set a bucket), then values (one byte each)."""
    read = _Reader(data)
    bases = _drift_bases()
    snapshot = copy.deepcopy(bases[read.byte() % len(bases)])
    keys = sorted(snapshot)
    for _ in range(read.byte() % 8):
        op, a, b = read.byte() % 8, read.byte(), read.byte()
        rows = snapshot.get("rows")
        if op == 0 or not isinstance(rows, list) or not rows:
            snapshot[keys[a % len(keys)]] = _SPECIAL[b % len(_SPECIAL)]
            continue
        row = rows[a % len(rows)]
        if op == 1:
            rows[a % len(rows)] = [[], []]
        elif op == 2:
            rows.pop()
        elif op == 3:
            rows.append([[_VALUES[b % len(_VALUES)]], [0.0]])
        elif op == 4:
            row[0].append(_VALUES[b % len(_VALUES)])
            row[1].append(0.0)
        elif op == 5 and row[0]:
            row[0].pop(0)
            row[1].pop(0)
        elif op == 6:
            snapshot["width"] = snapshot["width"] + (b % 5) - 2
        elif op == 7 and row[0]:
            row[b % 2][a % len(row[0])] = _SPECIAL[b % len(_SPECIAL)]
    values = [_VALUES[read.byte() % len(_VALUES)] for _ in range(len(data) - read.at)]
    return snapshot, values


_BASES: list[dict[str, Any]] = []


def _drift_bases() -> list[dict[str, Any]]:
    """The snapshots the seeds carry (made once)."""
    if not _BASES:
        _BASES.extend(json.loads(seed)["snapshot"] for seed in _drift_seeds())
    return _BASES


def _drift_seeds() -> Iterator[bytes]:
    from ragstream.drift import Adwin, PageHinkley
    from tests.support import defaults

    rng = np.random.default_rng(7)
    for i in range(24):
        det: Adwin | PageHinkley
        if i % 2:
            det = defaults.adwin(
                clock=int(rng.integers(1, 40)), max_buckets=int(rng.integers(2, 7))
            )
            if i % 3 == 0:
                det = defaults.adwin(max_window=int(rng.integers(20, 300)), direction="both")
        else:
            det = defaults.page_hinkley(min_instances=int(rng.integers(2, 60)), threshold=5.0)
        det.update(np.clip(rng.normal(0.6, 0.2, int(rng.integers(0, 400))), 0, 1))
        values = [round(float(v), 3) for v in rng.random(int(rng.integers(1, 60)))]
        yield json.dumps({"snapshot": det.snapshot(), "values": values}).encode()
    for i in range(24):  # recipes: a base snapshot, changes, values
        yield bytes([i, i % 3, i % 8, i * 7 % 256, i * 13 % 256, *range(i, i + 40)])


# -- ragged ---------------------------------------------------------------------------------

_GRADES = (0.0, 1.0, 2.0, 3.0, -1.0, 0.5, -0.0, 16.0, 17.0, 1e300, 5e-324, math.inf, math.nan)
_CUTOFFS = (1, 2, 3, 5, 10, 64, 1000, (1 << 61) + 1, (1 << 62), (1 << 63) - 1)


class _Reader:
    """The input's bytes one at a time (0 once they run out)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def byte(self) -> int:
        self.at += 1
        return self.data[self.at - 1] if self.at <= len(self.data) else 0


def ragged(data: bytes) -> None:
    """CSR rankings and metrics from the bytes; the compiled kernels' values against the
    numpy kernels' (same bits), or the same refusal; and straight calls with cutoffs far
    past memory, which must be refused, not sized."""
    from ragstream.metrics import RankingBatch, evaluate
    from ragstream.metrics import _ragged as compiled
    from ragstream.metrics.ragged import ragged_plan

    read = _Reader(data)
    families = compiled.FAMILIES
    metrics: list[str] = []
    for _ in range(1 + read.byte() % 4):
        family = families[read.byte() % len(families)]
        k = _CUTOFFS[read.byte() % 7]  # what a plan is made for: a discount of that length
        metrics.append(family if family in ("rr", "ap") else f"{family}@{k}")
    threshold = (1.0, 2.0, 0.5)[read.byte() % 3]
    queries = read.byte() % 9
    lengths = [read.byte() % 12 for _ in range(queries)]
    judged_lengths = [read.byte() % 8 for _ in range(queries)]
    rel = np.array([_GRADES[read.byte() % 13] for _ in range(sum(lengths))], dtype=np.float64)
    judged = np.array([_GRADES[read.byte() % 13] for _ in range(sum(judged_lengths))], dtype=float)
    rel_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    judged_offsets = np.concatenate([[0], np.cumsum(judged_lengths)]).astype(np.int64)
    plan = ragged_plan(metrics, threshold=threshold)
    assert plan is not None
    values = plan.values(
        rel.astype(np.float64), rel_offsets, judged.astype(np.float64), judged_offsets
    )
    if values is None:  # declined: only for a grade that is not finite
        assert not (np.isfinite(rel).all() and np.isfinite(judged).all()), "declined"
    else:
        batch = RankingBatch(*_padded(rel, rel_offsets), *_padded(judged, judged_offsets))
        reference = evaluate(batch, metrics, threshold=threshold)
        for row, name in enumerate(plan.names):
            got, want = values[row].tolist(), reference[name].tolist()
            assert all(map(_same_float, got, want)), (name, got, want)
    # a straight call with a cutoff past memory's sizes: refused before anything is sized
    huge = np.array([_CUTOFFS[7 + read.byte() % 3]], dtype=np.int64)
    code = bytes([families.index("precision")])
    out = np.empty(max(1, queries))
    try:
        compiled.ragged(
            rel.data, rel_offsets.data, judged.data, judged_offsets.data, code, huge.data,
            threshold, plan.discount.data, out.data, 0, queries,
        )  # fmt: skip
    except ValueError:
        pass
    else:
        raise AssertionError(f"cutoff {int(huge[0])} accepted")


def _padded(values: _F64, offsets: _I64) -> tuple[_F64, _I64]:
    lengths = np.diff(offsets)
    out = np.full((lengths.size, int(lengths.max(initial=0)) + 1), 7.0)
    for i, (start, n) in enumerate(zip(offsets[:-1], lengths, strict=True)):
        out[i, :n] = values[start : start + n]
    return out, lengths


def _ragged_seeds() -> Iterator[bytes]:
    rng = np.random.default_rng(11)
    for _ in range(32):
        yield bytes(rng.integers(0, 256, int(rng.integers(8, 200)), dtype=np.uint8))


# -- trec -----------------------------------------------------------------------------------

_METRICS = ["rr", "ap", "precision@5", "recall@10", "ndcg@10", "hit_rate@1", "dcg@3"]
_SEPARATOR = b"\x1e"


def trec(data: bytes) -> None:
    """A qrels and a run file evaluated by the compiled scanner (memory-mapped, as `ragstream
    eval` reads them) and by numpy: the same values, queries and missing queries, or the
    same error; and the scanner's join on buffers of exactly the files' sizes."""
    from ragstream.trec import _trec_reader, evaluate_files

    if _SEPARATOR not in data or not data:
        return
    options, body = data[0], data[1:]
    qrels_bytes, _, run_bytes = body.partition(_SEPARATOR)
    complete, keep_best, level = bool(options & 1), bool(options & 2), 1 + (options >> 2) % 3
    # exactly sized copies: a read one byte past a file's end is caught
    exact = [np.frombuffer(b, dtype=np.uint8).copy() for b in (qrels_bytes, run_bytes)]
    _outcome(lambda: _trec_reader.join(exact[0].data, exact[1].data, keep_best, 1 + options % 3))
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d:
        qrels, run = os.path.join(d, "qrels"), os.path.join(d, "run")
        with open(qrels, "wb") as f:
            f.write(qrels_bytes)
        with open(run, "wb") as f:
            f.write(run_bytes)
        results: list[tuple[Any, ...]] = []
        for engine in ("compiled", "numpy"):
            try:
                result = evaluate_files(
                    qrels, run, _METRICS, complete=complete, keep_best=keep_best,
                    relevance_level=level, engine=engine,
                )  # fmt: skip
            except (ValueError, OSError) as error:
                results.append(("raised", type(error).__name__, str(error)))
                continue
            values = {
                k: [struct.pack("<d", v) for v in a.tolist()] for k, a in result.per_query.items()
            }
            results.append(("ok", result.qids, result.missing, values, result.num_queries))
    assert results[0] == results[1], results


def _trec_seeds() -> Iterator[bytes]:
    from tests.trec.test_conformance import _collection

    for seed in range(12):  # the conformance tests' irregular files, their first lines
        qrels, run = (text.splitlines(keepends=True) for text in _collection(seed))
        size = 8 + 4 * seed
        head = "".join(qrels[:size]).encode() + _SEPARATOR + "".join(run[: 2 * size]).encode()
        yield bytes([seed % 16]) + head
    yield b"\x01q1 0 d1 1\nq2 0 d2 1\n" + _SEPARATOR + b"q1 Q0 d1 1 0." + b"0" * 200 + b"1e205 r\n"


TARGETS: dict[str, tuple[Callable[[bytes], None], Callable[[], Iterator[bytes]]]] = {
    "drift_kernels": (drift, _drift_seeds),
    "metrics_ragged": (ragged, _ragged_seeds),
    "trec_reader": (trec, _trec_seeds),
}
"""Target name -> (its check of one input, its seed inputs)."""


def one_input(target: str, data: bytes) -> None:
    """Run target's check on one input (AssertionError when compiled and Python differ)."""
    TARGETS[target][0](data)


def seeds(target: str) -> Iterator[bytes]:
    """The target's seed inputs."""
    return TARGETS[target][1]()
