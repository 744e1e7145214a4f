"""Hostile input to `ragstream eval`'s readers: results or a clear error, never a crash.

Generated files -- truncated lines, NUL bytes, invalid UTF-8, control bytes, huge fields,
NaN and infinite scores, absurd numbers, text after the last field -- give either values
or a `TrecFormatError` that names the file (and the line, for a line's fault); the
compiled scanner and the numpy reader give the same outcome; and the
memory used stays in proportion to the files' size (one long id among many short lines
once needed the longest id's length for every line: 4.6 GB for a 1.1 MB file).
"""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import sys
import textwrap
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragstream.trec import TrecFormatError, evaluate_files

WriteFile = Callable[[str, str | bytes], Path]

METRICS = ["rr", "ap", "precision@3", "ndcg@10"]
_WAYS: list[dict[str, str]] = [{"engine": "compiled"}, {"engine": "numpy"}]
# Errors about a whole file rather than one of its lines.
_FILE_ERRORS = ("no run lines", "no qrels lines", "no query id of the run appears")


def _outcome(qrels: Path, run: Path, keep_best: bool, **way: str) -> tuple[object, ...]:
    try:
        result = evaluate_files(
            qrels,
            run,
            METRICS,
            complete=True,
            keep_best=keep_best,
            **way,  # type: ignore[arg-type]
        )
    except TrecFormatError as error:
        return _named(error, qrels, run)
    values = {name: array.tobytes() for name, array in result.per_query.items()}
    means = {name: struct.pack("<d", value) for name, value in result.mean.items()}
    return ("ok", result.qids, values, means, result.num_queries)


def _named(error: TrecFormatError, qrels: Path, run: Path) -> tuple[object, ...]:
    """A clear error: `FILE:LINE: reason` (`FILE: reason` for a whole file's fault)."""
    where = f"{error.path}:{error.line}: " if error.line is not None else f"{error.path}: "
    assert str(error).startswith(where)
    assert error.path in (str(qrels), str(run))
    if error.line is None:
        assert error.reason.startswith(_FILE_ERRORS), error.reason
    assert len(str(error)) < 600  # a huge field is not quoted whole
    return ("error", str(error))


def _check(qrels: Path, run: Path, keep_best: bool = False) -> tuple[object, ...]:
    """The outcome, the same every way, with the numpy path's memory in proportion."""
    size = qrels.stat().st_size + run.stat().st_size
    tracemalloc.start()
    try:
        reference = _outcome(qrels, run, keep_best, engine="numpy")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the numpy reader's blocks (8 MiB) and a few arrays per line; never N x longest id
    assert peak < 40 * size + (48 << 20), (peak, size)
    for way in _WAYS:
        assert _outcome(qrels, run, keep_best, **way) == reference, way
    return reference


# -- hypothesis: the structure of lines ---------------------------------------------------

_NORMAL_ID = st.sampled_from([b"q1", b"q2", b"d1", b"d2", b"d3", b"D850476", b"\xc3\xa9", b"7"])
_ID = st.one_of(
    st.sampled_from([b"\xff\xfe", b"\xc3", b"a\x01b", b"\x1f", b"\x7f", b"#x", b"\xe2\x80\xa8"]),
    st.sampled_from([b"x" * 65, b"x" * 64 + b"y", b"l" * 300, b"h" * 5000]),
    st.binary(min_size=1, max_size=12).map(lambda b: bytes(c for c in b if c > 32) or b"e"),
)
_NORMAL_SCORE = st.sampled_from([b"1", b"0.5", b"-2e-1", b"1e22", b"1e23", b"-0", b"3.25", b".5"])
_SCORE = st.one_of(
    st.sampled_from([b"inf", b"-inf", b"Infinity", b"nan", b"NaN", b"-nan", b"1e999", b"1e-999"]),
    st.sampled_from([b"0x10", b"1_000", b"+", b"-", b".", b"1.2.3", b"1e", b"\xd9\xa1", b"1e+"]),
    st.sampled_from([b"9" * 400, b"0." + b"0" * 500 + b"1", b"1e99999999999999999999"]),
)
_NORMAL_GRADE = st.sampled_from([b"0", b"1", b"2", b"-1", b"+3", b"007"])
_GRADE = st.sampled_from(
    [
        b"000000000000000000001",
        b"99999999999999999999",
        b"-9223372036854775809",
        b"9223372036854775807",
        b"1.5",
        b"1_0",
        b"x",
        b"9" * 5000,
        b"1e3",
        b"\xff",
        b"0x1",
    ]
)
_SEP = st.sampled_from([b" ", b" ", b"\t", b"  ", b"\v", b"\f", b"\r", b" \t "])
_END = st.sampled_from([b"\n", b"\n", b"\r\n"])
_EXTRA = st.sampled_from([b" more junk at", b"\t\xff\xfe", b" # x", b" 1 2 3", b" \x00"])


@st.composite
def _hostile(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A qrels and a run file, each field and line hostile with a rate drawn per file."""
    rate = draw(st.sampled_from([0, 2, 10, 50]))  # percent

    def pick(normal: st.SearchStrategy[bytes], hostile: st.SearchStrategy[bytes]) -> bytes:
        return draw(hostile if draw(st.integers(0, 99)) < rate else normal)

    def score() -> bytes:
        return pick(_NORMAL_SCORE, _SCORE)

    def line(fields: list[bytes]) -> bytes:
        if draw(st.integers(0, 99)) < rate // 2:  # truncated
            fields = fields[: draw(st.integers(0, len(fields) - 1))]
        text = b"".join(field + draw(_SEP) for field in fields[:-1]) + b"".join(fields[-1:])
        if draw(st.integers(0, 99)) < rate // 4:
            at = draw(st.integers(0, len(text)))
            text = text[:at] + b"\x00" + text[at:]
        if draw(st.integers(0, 99)) < rate // 2:  # text after the last field
            text += draw(_EXTRA)
        return text + draw(_END)

    qrels = b"".join(
        line([pick(_NORMAL_ID, _ID), b"0", pick(_NORMAL_ID, _ID), pick(_NORMAL_GRADE, _GRADE)])
        for _ in range(draw(st.integers(1, 12)))
    )
    run = b"".join(
        line([pick(_NORMAL_ID, _ID), b"Q0", pick(_NORMAL_ID, _ID), b"1", score(), b"tag"])
        for _ in range(draw(st.integers(1, 20)))
    )
    if draw(st.booleans()):
        run = run.rstrip(b"\n")
    return qrels, run


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(files=_hostile(), keep_best=st.booleans())
def test_hostile_lines_give_results_or_a_named_error(
    write: WriteFile, files: tuple[bytes, bytes], keep_best: bool
) -> None:
    qrels_text, run_text = files
    _check(write("qrels", qrels_text), write("run", run_text), keep_best)


# -- a seeded generator: valid collections, then damage ----------------------------------


def _collection(rng: random.Random) -> tuple[list[bytes], list[bytes]]:
    qrels, run = [], []
    for q in range(rng.randrange(1, 8)):
        docs = [b"doc%d" % rng.randrange(50) for _ in range(rng.randrange(1, 30))]
        for doc in dict.fromkeys(docs):
            if rng.random() < 0.5:
                qrels.append(b"q%d 0 %s %d\n" % (q, doc, rng.choice([0, 1, 2, -1])))
            score = rng.choice([b"%d" % rng.randrange(9), b"%.3f" % rng.random(), b"1e-3"])
            run.append(b"q%d Q0 %s %d %s sys\n" % (q, doc, rng.randrange(100), score))
    if not qrels:
        qrels.append(b"q0 0 doc0 1\n")
    return qrels, run


def _damage(rng: random.Random, lines: list[bytes], run: bool) -> None:
    """One kind of damage to one line (or to the file)."""
    i = rng.randrange(len(lines)) if lines else 0
    line = lines[i] if lines else b""
    fields = line.split()
    kind = rng.randrange(11)
    if kind == 0 and line:  # truncated anywhere
        lines[i] = line[: rng.randrange(len(line))] + b"\n"
    elif kind == 1:  # a NUL byte
        at = rng.randrange(len(line) + 1)
        lines[i] = line[:at] + b"\x00" + line[at:]
    elif kind == 2 and fields:  # invalid UTF-8 or control bytes in an id
        fields[rng.choice([0, 2 % len(fields)])] += rng.choice([b"\xff", b"\xc3", b"\x01", b"\x7f"])
        lines[i] = b" ".join(fields) + b"\n"
    elif kind == 3 and len(fields) > 2:  # a huge id, for a query or a document
        fields[rng.choice([0, 2])] = b"x" * rng.choice([65, 4096, 100_000, 300_000])
        lines[i] = b" ".join(fields) + b"\n"
    elif kind == 4 and len(fields) >= (6 if run else 4):  # an absurd value
        absurd = [b"nan", b"inf", b"-inf", b"1e400", b"9" * 10_000, b"-0", b"0x1p3", b"1e"]
        fields[4 if run else 3] = rng.choice(absurd)
        lines[i] = b" ".join(fields) + b"\n"
    elif kind == 5:  # text after the last field
        lines[i] = line.rstrip(b"\n") + rng.choice([b" junk", b"\tmore junk at", b" 1 2 3"]) + b"\n"
    elif kind == 6:  # other whitespace
        lines[i] = line.replace(b" ", rng.choice([b"\t", b"\v", b"\f", b"\r", b"   "]))
    elif kind == 7:  # a blank line, a comment
        lines.insert(i, rng.choice([b"\n", b"   \n", b"# comment\n", b"  # indented\n"]))
    elif kind == 8 and lines:  # no newline at the end
        lines[-1] = lines[-1].rstrip(b"\n")
    elif kind == 9:  # a line repeated (a repeated document or judgment)
        lines.insert(rng.randrange(len(lines) + 1), line)
    elif kind == 10:  # many lines of one huge field: the file itself is large
        lines.append(b"q0 Q0 " + b"d" * 200_000 + b" 1 inf t\n" if run else b"q0 0 doc1 1\n")


@pytest.mark.parametrize("seed", range(60))
def test_damaged_collections_give_results_or_a_named_error(write: WriteFile, seed: int) -> None:
    rng = random.Random(seed)
    qrels, run = _collection(rng)
    for _ in range(rng.randrange(1, 4)):
        target = rng.random() < 0.7
        _damage(rng, run if target else qrels, run=target)
    _check(write("qrels", b"".join(qrels)), write("run", b"".join(run)), keep_best=seed % 2 == 1)


# -- memory: the cases that needed gigabytes, in a process with an address-space limit --

_CHILD = textwrap.dedent(
    """
    import json, resource, sys
    from ragstream.trec import evaluate_files

    qrels, run, budget = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open("/proc/self/statm") as statm:  # the address space in use now
        now = int(statm.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (now + budget, now + budget))
    out = {}
    for engine in ("compiled", "numpy"):
        result = evaluate_files(qrels, run, ["rr", "ndcg@10"], engine=engine)
        out[engine] = [result.qids, {k: v.tolist() for k, v in result.per_query.items()}]
    print(json.dumps(out))
    """
)


def _lines(queries: int, docs: int) -> list[str]:
    return [f"{q} Q0 d{d} {d} {docs - d} t\n" for q in range(queries) for d in range(docs)]


def _long_doc_run(length: int, queries: int) -> str:
    lines = _lines(queries, 100)
    lines[5] = "0 Q0 " + "x" * length + " 6 inf t\n"  # inf: the compiled scanner declines
    return "".join(lines)


def _score_run() -> str:
    lines = [f"{q} Q0 d{d} {d} {100 - d}e-1 t\n" for q in range(300) for d in range(100)]
    lines[5] = "0 Q0 dd 6 0." + "1" * 1_000_000 + " t\n"  # a 1 MB score among slow ones
    return "".join(lines)


_QRELS = "".join(f"{q} 0 d{d} 1\n" for q in range(300) for d in range(0, 100, 7))
_CASES = {  # name: (qrels, run), each 1-11 MB
    "1MB-doc-id": (_QRELS + "0 0 " + "x" * 1_000_000 + " 2\n", _long_doc_run(1_000_000, 50)),
    "10MB-doc-id": (_QRELS, _long_doc_run(10_000_000, 300)),
    "1MB-query-id": (_QRELS, "".join(_lines(300, 100)) + "x" * 1_000_000 + " Q0 d 1 inf t\n"),
    "1MB-score": (_QRELS, _score_run()),
    "1MB-qrels-doc-id": (_QRELS + "0 0 " + "y" * 1_000_000 + " 1\n", _long_doc_run(10, 300)),
}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and RLIMIT_AS")
@pytest.mark.parametrize("case", sorted(_CASES))
def test_one_huge_field_needs_memory_in_proportion(
    write: WriteFile, tmp_path: Path, case: str
) -> None:
    qrels_text, run_text = _CASES[case]
    qrels, run = write("qrels", qrels_text), write("run", run_text)
    budget = 1 << 30  # before: 4.6 GB for the 1 MB id, more than 24 GB for the 10 MB one
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(qrels), str(run), str(budget)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["compiled"] == out["numpy"]
    qids, values = out["numpy"]
    assert len(qids) == 300 if case != "1MB-doc-id" else len(qids) == 50
    if case == "1MB-doc-id":  # the long document ranks first (inf) and is judged 2
        assert values["rr"][0] == 1.0


# -- the command: a message, never a traceback --------------------------------------------


@pytest.mark.parametrize(
    ("qrels_text", "run_text", "named"),
    [
        (b"q 0 a 1\n", b"q Q0 a 1 1 t\nq Q0 \xff\x00 2 1 t\n", "run:2"),
        (b"q 0 a " + b"9" * 5000 + b"\n", b"q Q0 a 1 1 t\n", "qrels:1"),
        (b"q 0 a 1\n", b"q Q0 " + b"x" * 200_000 + b" 1 nan t\n", "run:1"),
        (b"q 0 a 1\n", b"q Q0 a 1\n", "run:1"),
        (b"q 0 a 1\n", b"\xff Q0 a 1 1 t\n", "run"),  # no query in common
    ],
)
def test_the_command_reports_hostile_files_without_a_traceback(
    write: WriteFile, qrels_text: bytes, run_text: bytes, named: str
) -> None:
    qrels, run = write("qrels", qrels_text), write("run", run_text)
    done = subprocess.run(
        [sys.executable, "-m", "ragstream", "eval", "--qrels", str(qrels), "--run", str(run)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(f"Error: {qrels.parent}/{named}")
    assert len(done.stderr) < 1000
