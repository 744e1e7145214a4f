"""The compiled scanner against the numpy path: same arrays, same values, same errors."""

from __future__ import annotations

import math
import re
import struct
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragstream.metrics import RankingDepth
from ragstream.metrics.ragged import RaggedPlan
from ragstream.trec import Engine, TrecFormatError, evaluate_files, read_qrels, read_run
from ragstream.trec._compiled import AVAILABLE, Compiled, _floats, _from_output, _ints, join_files
from ragstream.trec._join import join_tables
from ragstream.trec._ranked import Ranked, Segment

WriteFile = Callable[[str, str | bytes], Path]
Reference = Callable[..., dict[str, dict[str, float]]]

METRICS = ["rr", "ap", "precision@3", "recall@3", "ndcg@3", "ndcg@10", "hit_rate@2", "dcg@5"]
_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def test_the_extension_is_built() -> None:
    # `pip install -e .` compiles it (setup.py); without it everything still works, slower.
    assert AVAILABLE


def join_while_cut(
    qrels: Path,
    run: Path,
    delay: float | None,
    depth: RankingDepth,
    level: float = 1.0,
    plan: RaggedPlan | None = None,
    workers: int = 2,
) -> Compiled:
    """The reader's join run in a thread, its Cut set (`depth`, `level`, the plan's kernel)
    `delay` seconds after it began (None: never)."""
    from ragstream.trec._trec_reader import Cut, join

    cut = Cut()
    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(join, qrels.read_bytes(), run.read_bytes(), False, workers, cut)
        if delay is not None:
            time.sleep(delay)
            to_level = level if depth.to_relevant else math.inf
            cut.set(depth.k, to_level, None if plan is None else plan.kernel)
        out = future.result()
    assert not isinstance(out, str)
    return _from_output(out, qrels, run, complete=False, plan=plan)


def _join(
    qrels: Path,
    run: Path,
    keep_best: bool = False,
    complete: bool = False,
    workers: int | None = None,
) -> Ranked:
    joined = join_files(qrels, run, keep_best=keep_best, complete=complete, workers=workers)
    assert joined is not None, "the scanner declined"
    assert joined.error is None
    return joined.ranked


def test_arrays_by_hand(write: WriteFile) -> None:
    qrels = write("qrels", "q2 0 x 1\nq1 0 c 2\nq1 0 a 1\nq1 0 b 0\nq3 0 y 1\n")
    # q1: b and z tie at 2.0 (z first: byte order descending), c and ca tie at 1
    # (ca first); q2 has one unjudged document; q9 is not judged; q3 is not retrieved.
    run = write(
        "run",
        "q2 Q0 n 1 1 t\nq1 Q0 a 1 -1e-1 t\nq1 Q0 b 2 2.0 t\nq1 Q0 z 3 2 t\n"
        "q1 Q0 c 4 1 t\nq9 Q0 a 1 1 t\nq1 Q0 ca 5 1.0e0 t\n",
    )
    ranked = _join(qrels, run)
    assert ranked.qids == ("q1", "q2")
    assert ranked.rel.tolist() == [0.0, 0.0, 0.0, 2.0, 1.0, 0.0]  # z b ca c a | n
    assert ranked.rel_offsets.tolist() == [0, 5, 6]
    assert ranked.judged.tolist() == [2.0, 1.0, 0.0, 1.0]  # file order within a query
    assert ranked.judged_offsets.tolist() == [0, 3, 4]
    assert ranked.num_qrels_queries == 3


def test_keep_best_closes_the_gaps(write: WriteFile) -> None:
    qrels = write("qrels", "q1 0 a 1\nq2 0 b 2\n")
    run = write("run", "q1 Q0 a 1 1 t\nq1 Q0 a 2 3 t\nq1 Q0 c 3 2 t\nq2 Q0 b 1 1 t\n")
    ranked = _join(qrels, run, keep_best=True)
    assert ranked.rel.tolist() == [1.0, 0.0, 2.0]  # a (its 3), c | b
    assert ranked.rel_offsets.tolist() == [0, 2, 3]


@pytest.mark.parametrize(
    ("run", "why"),
    [
        ("q1 Q0 a 1 1 t\nq1 Q0 b 2 inf t\n", "run line 2: value spelling"),
        ("q1 Q0 a 1 nan t\n", "run line 1: value spelling"),
        ("q1 Q0 a 1 1_0 t\n", "run line 1: value spelling"),
        ("q1 Q0 a 1 1 t extra \x00 text\n", "run line 1: NUL byte"),
        ("q1 Q0 a 1 1\n", "run line 1: too few fields"),
        ("q1 Q0 a 1 1 t\nq1 Q0 b\x00 2 1 t\n", "run line 2: NUL byte"),
        ("# only a comment\n\n", "run line 1: no records"),
    ],
)
def test_the_scanner_declines_and_numpy_decides(write: WriteFile, run: str, why: str) -> None:
    from ragstream.trec._trec_reader import join

    qrels_text = b"q1 0 a 1\n"
    assert join(qrels_text, run.encode(), False) == why
    qrels, run_path = write("qrels", qrels_text), write("run", run)
    assert join_files(qrels, run_path, keep_best=False, complete=False) is None
    assert _outcome("compiled", qrels, run_path) == _outcome("numpy", qrels, run_path)


def test_blank_qrels_line_and_empty_files_decline(write: WriteFile) -> None:
    from ragstream.trec._trec_reader import join

    assert join(b"q1 0 a 1\n\nq1 0 b 1\n", b"q1 Q0 a 1 1 t\n", False) == (
        "qrels line 2: blank line"
    )
    assert join(b"q1 0 a 99999999999999999999\n", b"q1 Q0 a 1 1 t\n", False) == (
        "qrels line 1: value spelling"
    )
    assert join(b"q1 0 a 1 x\n", b"q1 Q0 a 1 1 t\n", False) == "qrels line 1: too many fields"
    empty = write("run", "")
    assert join_files(write("qrels", "q1 0 a 1\n"), empty, keep_best=False, complete=False) is None


def test_missing_file_is_the_same_error(write: WriteFile, tmp_path: Path) -> None:
    qrels = write("qrels", "q1 0 a 1\n")
    with pytest.raises(FileNotFoundError):
        evaluate_files(qrels, tmp_path / "missing", ["rr"], engine="compiled")


# -- differential tests: generated files, both paths ------------------------------------

_LONG = "a-query-id-longer-than-8-"
_QIDS = ["q1", "q10", "q2", "Q", "é", "7", _LONG + "a", _LONG + "b"]
_DOCS = ["a", "b", "B", "c", "ca", "D850476", "é", "z", "doc-" + "x" * 70, "doc-" + "x" * 69 + "y"]
# Spellings the scanner reads itself, with ties across spellings (1, 1.0, 10e-1, ...) and
# values that need the slow, correctly rounded conversion.
_SCORES = [
    "1", "1.0", "1.00", "10e-1", "+1", "-0", "0", "0.0", "-2.5e-1", "-0.25", "2.5E+3", "2500",
    ".5", "5.", "0.5", "1e-05", "0.00001", "-3", "1e22", "1e23", "1e-400", "1e999",
    "123456789012345678901234", "0.1000000000000000055511151231257827", "9007199254740993",
    "-1.5e-300",
]  # fmt: skip
_GRADES = ["0", "1", "2", "3", "-1", "+2", "02", "000000000000000003"]
_MESSY_SCORES = ["inf", "-Infinity", "nan", "1_0", "abc", "1e", "--1", "0x10"]
# Text after a run line's sixth field, which trec_eval ignores (NIST's own test runs have
# lines like `301 Q0 FBIS3-27619 99 2.138276 STANDARD more junk at`).
_TRAILING = st.sampled_from(
    ["", "", "", " more junk at", "\tx", " # not a comment", " 1 2 3", "  7\t", " \xe9\x01"]
)


@st.composite
def _files(draw: st.DrawFn, messy: bool) -> tuple[bytes, bytes, bool, bool]:
    """(qrels, run, keep_best, complete): text files with ties, repeats, exponent and
    negative scores, interleaved queries, varied whitespace; with `messy`, also lines the
    scanner declines (numpy decides)."""
    judged = draw(
        st.lists(
            st.tuples(st.sampled_from(_QIDS), st.sampled_from(_DOCS), st.sampled_from(_GRADES)),
            min_size=1,
            max_size=25,
            unique_by=lambda r: (r[0], r[1]),
        )
    )
    if judged and draw(st.integers(0, 4)) == 0:  # a document judged twice
        qid, doc, _ = draw(st.sampled_from(judged))
        judged.append((qid, doc, draw(st.sampled_from(_GRADES))))
    line = st.tuples(st.sampled_from(_QIDS), st.sampled_from(_DOCS), st.sampled_from(_SCORES))
    if draw(st.integers(0, 2)) > 0:
        ranked = draw(st.lists(line, min_size=1, max_size=40, unique_by=lambda r: (r[0], r[1])))
    else:  # documents repeated within a query: an error, or --keep-best
        ranked = draw(st.lists(line, min_size=1, max_size=40))
    if draw(st.booleans()):
        ranked = sorted(ranked, key=lambda r: r[0])  # one block per query, the usual form
    sep = st.sampled_from([" ", " ", "\t", "  ", " \t "])
    end = st.sampled_from(["\n", "\n", "\r\n"])
    qrels_lines = [f"{q}{draw(sep)}0{draw(sep)}{d}{draw(sep)}{g}{draw(end)}" for q, d, g in judged]
    run_lines = [
        f"{q}{draw(sep)}Q0{draw(sep)}{d}{draw(sep)}{i}{draw(sep)}{s}{draw(sep)}tag"
        f"{draw(_TRAILING)}{draw(end)}"
        for i, (q, d, s) in enumerate(ranked)
    ]
    if draw(st.booleans()):
        run_lines.insert(draw(st.integers(0, len(run_lines))), "# a comment\n")
    if draw(st.booleans()):
        run_lines.insert(draw(st.integers(0, len(run_lines))), "  \n")
    qrels_comment: bool = draw(st.booleans())
    if qrels_comment:
        qrels_lines.insert(draw(st.integers(0, len(qrels_lines))), "#comment 1 2\n")
    if messy:
        bad = draw(
            st.sampled_from(
                [
                    f"q1 Q0 a 1 {draw(st.sampled_from(_MESSY_SCORES))} t\n",
                    "q1 Q0 a 1 1\n",
                    "q1 Q0 a 1 1 t x\x00\n",
                    "q1 Q0 a\x00 1 1 t\n",
                ]
            )
        )
        run_lines.insert(draw(st.integers(0, len(run_lines))), bad)
        if draw(st.booleans()):
            qrels_bad = draw(st.sampled_from(["q1 0 b 1.5\n", "q1 0 b 1 x\n", "q1 0 b\n"]))
            qrels_lines.insert(draw(st.integers(0, len(qrels_lines))), qrels_bad)
    qrels_text, run_text = "".join(qrels_lines), "".join(run_lines)
    if draw(st.booleans()):
        run_text = run_text.rstrip("\n")  # a last line without newline
    return qrels_text.encode(), run_text.encode(), draw(st.booleans()), draw(st.booleans())


def _outcome(
    engine: Engine, qrels: Path, run: Path, keep_best: bool = False, complete: bool = False
) -> tuple[object, ...]:
    try:
        result = evaluate_files(
            qrels,
            run,
            METRICS,
            keep_best=keep_best,
            complete=complete,
            engine=engine,
        )
    except TrecFormatError as error:
        return ("error", str(error), error.path, error.line)
    values = {name: array.tobytes() for name, array in result.per_query.items()}
    means = {name: struct.pack("<d", value) for name, value in result.mean.items()}
    return ("ok", result.qids, values, means, result.num_queries)


def _numpy_join(
    qrels: Path, run: Path, keep_best: bool, complete: bool
) -> Ranked | TrecFormatError:
    tables = read_qrels(qrels), read_run(run)
    try:
        return join_tables(*tables, keep_best=keep_best, complete=complete)
    except TrecFormatError as error:
        return error


def _same_ranked(a: Ranked, b: Ranked) -> None:
    assert a.qids == b.qids
    assert a.num_qrels_queries == b.num_qrels_queries
    for field in ("rel", "rel_offsets", "judged", "judged_offsets"):
        x, y = getattr(a, field), getattr(b, field)
        assert x.dtype == y.dtype
        assert x.tobytes() == y.tobytes(), field


@_SETTINGS
@given(files=_files(messy=False))
def test_clean_files_are_scanned_and_equal_the_numpy_path(
    write: WriteFile, files: tuple[bytes, bytes, bool, bool]
) -> None:
    qrels_text, run_text, keep_best, complete = files
    qrels, run = write("qrels", qrels_text), write("run", run_text)
    joined = join_files(qrels, run, keep_best=keep_best, complete=complete)
    assert joined is not None  # every line is in the scanner's grammar
    reference = _numpy_join(qrels, run, keep_best, complete)
    if isinstance(reference, TrecFormatError):
        assert joined.error is not None
        assert (str(joined.error), joined.error.line) == (str(reference), reference.line)
    else:
        assert joined.error is None
        _same_ranked(joined.ranked, reference)
    compiled = _outcome("compiled", qrels, run, keep_best, complete)
    assert compiled == _outcome("numpy", qrels, run, keep_best, complete)


@_SETTINGS
@given(files=_files(messy=True))
def test_messy_files_give_the_same_values_and_errors(
    write: WriteFile, files: tuple[bytes, bytes, bool, bool]
) -> None:
    qrels_text, run_text, keep_best, complete = files
    qrels, run = write("qrels", qrels_text), write("run", run_text)
    compiled = _outcome("compiled", qrels, run, keep_best, complete)
    assert compiled == _outcome("numpy", qrels, run, keep_best, complete)


# -- scores: the scanner's doubles are Python's -----------------------------------------


def _spellings(x: float) -> list[str]:
    forms = [repr(x), f"{x:.17g}", f"{x:.3e}", f"{x:.20e}", f"{x:.6f}", f"{x:.25f}", f"{x:E}"]
    return [f for f in forms if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", f)]


@_SETTINGS
@given(
    x=st.floats(allow_nan=False, allow_infinity=False, width=64),
    step=st.sampled_from([0, 1, -1]),
    pick=st.integers(0, 100),
)
def test_score_comparisons_equal_pythons(write: WriteFile, x: float, step: int, pick: int) -> None:
    # Two documents whose scores are x and a neighbour of x (or x again, spelled another
    # way): the order of their grades shows how the scanner compared the parsed doubles.
    y = x if step == 0 else math.nextafter(x, math.inf * step)
    y = y if math.isfinite(y) else x
    xs, ys = _spellings(x), _spellings(y)
    sx, sy = xs[pick % len(xs)], ys[(pick // 7) % len(ys)]
    qrels = write("qrels", "q 0 m 1\nq 0 n 2\n")
    run = write("run", f"q Q0 m 1 {sx} t\nq Q0 n 2 {sy} t\n")
    ranked = _join(qrels, run)
    a, b = float(sx), float(sy)
    expected = [1.0, 2.0] if a > b else [2.0, 1.0]  # equal: n before m (byte order)
    assert ranked.rel.tolist() == expected, (sx, sy)


def test_numbers_the_fast_path_leaves_to_python(write: WriteFile) -> None:
    # 2^53 + 1 has no double: both spellings round to 2^53 and tie (n first); the long
    # decimal of 0.1 ties with 0.1; 1e23 (beyond 10^22) is not 1e22 * 10 in doubles.
    cases = [
        ("9007199254740993", "9007199254740992", [2.0, 1.0]),
        ("0.1000000000000000055511151231257827", "0.1", [2.0, 1.0]),
        ("1e23", "99999999999999991611392", [2.0, 1.0]),
        ("1e-400", "-0", [2.0, 1.0]),
        ("1e999", "1.7976931348623157e308", [1.0, 2.0]),
    ]
    for sx, sy, expected in cases:
        qrels = write("qrels", "q 0 m 1\nq 0 n 2\n")
        run = write("run", f"q Q0 m 1 {sx} t\nq Q0 n 2 {sy} t\n")
        assert _join(qrels, run).rel.tolist() == expected, (sx, sy)
        assert np.array_equal(
            evaluate_files(qrels, run, ["ndcg@2"], engine="compiled").per_query["ndcg@2"],
            evaluate_files(qrels, run, ["ndcg@2"], engine="numpy").per_query["ndcg@2"],
        )


@pytest.mark.parametrize("keep_best", [False, True])
def test_scrambled_long_queries_equal_the_numpy_path(write: WriteFile, keep_best: bool) -> None:
    # Hundreds of documents a query in random order, many ties: the scanner's insertion
    # sort gives up and sorts with qsort; queries interleave, so records are regrouped.
    rng = np.random.default_rng(7)
    docs = [f"d{i}" for i in range(400)]
    judged = {
        (q, str(d)): int(rng.integers(-1, 4)) for q in range(3) for d in rng.choice(docs, 150)
    }
    lines = [
        f"q{q} Q0 {d} 1 {rng.choice(['1', '1.0', '0.5', '-2e-1', '3', '4'])} t\n"
        for q in range(3)
        for d in docs[: 300 + 30 * q]
    ]
    if keep_best:  # repeats with other scores
        lines += [f"q1 Q0 d{i} 1 {rng.integers(0, 9)} t\n" for i in range(0, 300, 7)]
    rng.shuffle(lines)
    qrels = write("qrels", "".join(f"q{q} 0 {d} {g}\n" for (q, d), g in judged.items()))
    run = write("run", "".join(lines))
    ranked = _join(qrels, run, keep_best=keep_best)
    reference = _numpy_join(qrels, run, keep_best, complete=False)
    assert isinstance(reference, Ranked)
    _same_ranked(ranked, reference)
    assert ranked.rel_offsets.tolist() == [0, 300, 630, 990]


# -- parts read in parallel: the result does not depend on how the files are cut --------

_PARTS = (2, 3, 7)


def _joined(
    qrels: Path, run: Path, keep_best: bool, complete: bool, workers: int
) -> tuple[object, ...]:
    joined = join_files(qrels, run, keep_best=keep_best, complete=complete, workers=workers)
    if joined is None:
        return ("declined",)
    if joined.error is not None:
        return ("error", str(joined.error), joined.error.line)
    r = joined.ranked
    arrays = (r.rel, r.rel_offsets, r.judged, r.judged_offsets)
    return ("ok", r.qids, r.num_qrels_queries, *(a.tobytes() for a in arrays))


def _same_in_parts(
    write: WriteFile, files: tuple[bytes, bytes, bool, bool]
) -> tuple[Path, Path, tuple[object, ...]]:
    """Both files written, and joined in one part and in each of `_PARTS` with the same
    outcome: the files and that outcome."""
    qrels_text, run_text, keep_best, complete = files
    qrels, run = write("qrels", qrels_text), write("run", run_text)
    one = _joined(qrels, run, keep_best, complete, 1)
    for workers in _PARTS:
        assert _joined(qrels, run, keep_best, complete, workers) == one, workers
    return qrels, run, one


@_SETTINGS
@given(files=_files(messy=False))
def test_clean_files_in_parts_equal_one_part_and_numpy(
    write: WriteFile, files: tuple[bytes, bytes, bool, bool]
) -> None:
    # Tiny files cut in up to 7 parts: parts with one block, empty parts, parts that end
    # in a comment; repeats in several parts (the earliest is reported).
    qrels, run, one = _same_in_parts(write, files)
    assert one[0] != "declined"
    _, _, keep_best, complete = files
    reference = _numpy_join(qrels, run, keep_best, complete)
    if isinstance(reference, TrecFormatError):
        assert one == ("error", str(reference), reference.line)
    else:
        _same_ranked(_join(qrels, run, keep_best, complete, workers=3), reference)


@_SETTINGS
@given(files=_files(messy=True))
def test_messy_files_in_parts_decline_as_one_part(
    write: WriteFile, files: tuple[bytes, bytes, bool, bool]
) -> None:
    _same_in_parts(write, files)


_SLOW = "0.1000000000000000055511151231257827"  # a score that needs the slow conversion


def _collection(rng: np.random.Generator, queries: int, docs: int) -> tuple[str, str]:
    """A run of one block per query (queries in random order), ties and exponent scores,
    a few scores that need the slow conversion, comments; qrels with unjudged queries."""
    qrels_lines, run_lines = [], []
    for q in rng.permutation(queries):
        ids = rng.choice(10 * docs, size=docs, replace=False)
        scores = np.round(np.sort(rng.normal(size=docs))[::-1] * 10, 1)
        for rank, (d, score) in enumerate(zip(ids, scores, strict=True)):
            text = f"{score:.1f}" if rank % 17 else f"{score:e}"
            if rank == 5 and q % 50 == 0:
                text = _SLOW
            run_lines.append(f"q{q} Q0 D{d} {rank + 1} {text} tag\n")
        if q % 97 == 0:
            run_lines.append("# a comment between blocks\n")
        if q % 10:
            for d in rng.choice(ids, size=docs // 4, replace=False):
                qrels_lines.append(f"q{q} 0 D{d} {rng.integers(0, 4)}\n")
    return "".join(qrels_lines), "".join(run_lines)


def test_a_large_collection_is_read_in_parts_with_numpy_s_values(write: WriteFile) -> None:
    # Over 1 MiB: the default reads it in one part per CPU; 2, 3 and 5 parts, and the
    # command's default, give numpy's arrays and values exactly.
    from ragstream.trec._compiled import default_workers

    qrels_text, run_text = _collection(np.random.default_rng(3), 800, 60)
    qrels, run = write("qrels", qrels_text), write("run", run_text)
    assert run.stat().st_size > 1 << 20
    assert default_workers(run.stat().st_size) >= 1
    assert default_workers(1000) == 1
    reference = _numpy_join(qrels, run, keep_best=False, complete=False)
    assert isinstance(reference, Ranked)
    for workers in (1, 2, 3, 5):
        _same_ranked(_join(qrels, run, workers=workers), reference)
    assert _outcome("compiled", qrels, run) == _outcome("numpy", qrels, run)


def test_scores_of_every_length_rank_as_numpy_s_parse_of_them(write: WriteFile) -> None:
    # Pairs of close scores spelled with 0-17 decimals, leading and trailing zeros and
    # signs rank as numpy's parse of them ranks them: one misread digit swaps a pair (a
    # wrong power of ten in the scanner's fast path failed it). Past 19 digits they take
    # the slow conversion.
    rng = np.random.default_rng(17)

    def spelled(value: float) -> str:
        sign = "-" if value < 0 else str(rng.choice(["", "", "+"]))
        text = f"{abs(value):.{int(rng.integers(0, 18))}f}"
        if "." in text and rng.random() < 0.1:
            text += "0" * int(rng.integers(1, 7))
        if rng.random() < 0.1:
            text = "0" * int(rng.integers(1, 6)) + text
        return sign + text

    qrels_lines, run_lines = [], []
    for i in range(20_000):
        x = rng.uniform(-1e6, 1e6) if rng.random() < 0.5 else rng.uniform(-1, 1)
        y = x + float(rng.choice([0.0, 1e-9, -1e-9, 1e-3, -1e-3, 1e-12])) * rng.random()
        qrels_lines.append(f"q{i} 0 a{i} 1\n")
        run_lines.append(f"q{i} Q0 a{i} 1 {spelled(x)} t\nq{i} Q0 b{i} 2 {spelled(y)} t\n")
    qrels, run = write("qrels", "".join(qrels_lines)), write("run", "".join(run_lines))
    reference = _numpy_join(qrels, run, keep_best=False, complete=False)
    assert isinstance(reference, Ranked)
    for workers in (1, 2):
        _same_ranked(_join(qrels, run, workers=workers), reference)


def _mapped_rss(path: Path) -> int:
    """Bytes of `path`'s mappings in this process that are mapped in (/proc/self/smaps)."""
    rss, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            inside = fields[-1] == str(path)
        elif inside and fields[0] == "Rss:":
            rss += int(fields[1]) * 1024
    return rss


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="Linux's smaps")
def test_a_mapped_run_s_pages_are_dropped_once_read_with_the_same_result(
    write: WriteFile,
) -> None:
    # `mapped`: the threads map in the pieces they read and drop the run's once read (they
    # stay in the page cache). The result is the same as from unmapped memory, deferred
    # blocks (slow scores) and errors read again included; nearly none of the run is left
    # mapped in, where without `mapped` all of it is.
    import mmap

    from ragstream.trec import _trec_reader

    qrels_text, run_text = _collection(np.random.default_rng(5), 2500, 80)
    qrels, run = write("qrels", qrels_text), write("run", run_text)
    assert run.stat().st_size > 4 << 20  # many pieces

    def joined(mapped: bool, text: bytes | None = None) -> tuple[object, int]:
        """The join's output (its queries in byte order, as one set of CSR arrays, which
        do not depend on the pieces each thread read) and the run's bytes left mapped in."""
        if text is not None:
            run.write_bytes(text)
        with qrels.open("rb") as q, run.open("rb") as r:
            qmap = mmap.mmap(q.fileno(), 0, access=mmap.ACCESS_READ)
            rmap = mmap.mmap(r.fileno(), 0, access=mmap.ACCESS_READ)
            out = _trec_reader.join(qmap, rmap, False, 3, _trec_reader.Cut(), mapped)
            left = _mapped_rss(run)
            qmap.close()
            rmap.close()
        if isinstance(out, str):
            return out, left
        qids, n_common, n_qrels, parts, order, q_repeat, r_repeat, values = out
        assert parts is not None  # without a kernel: the rankings
        assert values is None
        ranked = Ranked(
            qids,
            tuple(Segment(_floats(a), _ints(b), _floats(c), _ints(d)) for a, b, c, d in parts),
            n_qrels,
            None if order is None else _ints(order),
        )
        arrays = (ranked.rel, ranked.rel_offsets, ranked.judged, ranked.judged_offsets)
        return (qids, n_common, n_qrels, q_repeat, r_repeat, *(a.tobytes() for a in arrays)), left

    plain, _ = joined(False)
    dropped, _ = joined(True)
    assert not isinstance(plain, str)
    assert dropped == plain
    # without the slow scores, whose blocks are read again (and so mapped in again)
    fast = run_text.replace(_SLOW, "0.1").encode()
    assert len(fast) > 4 << 20
    plain, left_plain = joined(False, fast)
    dropped, left_dropped = joined(True, fast)
    assert dropped == plain
    assert left_plain > len(fast) // 2
    assert left_dropped < len(fast) // 50, (left_dropped, len(fast))
    # a line that declines, late in the file: its line number counts the lines of pieces
    # already dropped, read again
    lines = run_text.splitlines(True)
    lines[len(lines) * 9 // 10] = "q1 Q0 D1 1\n"
    bad = "".join(lines).encode()
    declined_plain, _ = joined(False, bad)
    declined, _ = joined(True, bad)
    assert isinstance(declined, str)
    assert declined.startswith("run line")
    assert declined == declined_plain


def test_a_query_in_two_blocks_of_a_large_run_is_read_again_by_the_general_path(
    write: WriteFile,
) -> None:
    # The first query's lines again at the end of a run of many pieces: the block path
    # gives up after reading (and dropping) every piece, and the general path reads the
    # whole run again; numpy's arrays exactly.
    qrels_text, run_text = _collection(np.random.default_rng(8), 2500, 80)
    first = run_text.split(" ", 1)[0]
    again = "".join(f"{first} Q0 X{i} {i + 1} {-i - 100} tag\n" for i in range(5))
    qrels, run = write("qrels", qrels_text), write("run", run_text + again)
    assert run.stat().st_size > 4 << 20
    reference = _numpy_join(qrels, run, keep_best=False, complete=False)
    assert isinstance(reference, Ranked)
    _same_ranked(_join(qrels, run, workers=2), reference)


@pytest.mark.parametrize("workers", [2, 3])
def test_pieces_of_a_large_file_report_the_first_error_in_file_order(workers: int) -> None:
    # Over 1 MiB, each thread reads many pieces, handed out in file order: two malformed
    # lines in pieces far apart, and then a repeated document in two, are reported as in
    # one part, the earliest.
    from ragstream.trec._trec_reader import join

    qrels_text, run_text = _collection(np.random.default_rng(11), 2500, 80)
    lines = run_text.splitlines(True)
    assert len(run_text) > 4 << 20  # at least 4 pieces

    def outcome(text: str, n: int) -> str | tuple[object, object]:
        """The decline text, or the (qrels, run) repeats."""
        out = join(qrels_text.encode(), text.encode(), False, n)
        return out if isinstance(out, str) else (out[5], out[6])

    bad = list(lines)
    late, early = len(bad) * 4 // 5, len(bad) // 3
    bad[late] = "q1 Q0 D1 1\n"  # too few fields
    bad[early] = bad[early].rsplit(" ", 1)[0].replace(".", "..", 1) + "\n"  # a bad score
    declined = outcome("".join(bad), 1)
    assert isinstance(declined, str)
    assert declined.startswith(f"run line {early + 1}:"), declined
    assert outcome("".join(bad), workers) == declined

    def repeat_at(at: int) -> None:  # the line before, again: within its block
        assert lines[at].split()[0] == lines[at - 1].split()[0]
        lines.insert(at + 1, lines[at - 1])

    repeat_at(len(lines) * 3 // 4)
    repeat_at(len(lines) // 4 + 1)
    repeated = outcome("".join(lines), 1)
    assert isinstance(repeated, tuple)
    assert repeated[1] is not None
    assert outcome("".join(lines), workers) == repeated


def test_a_query_in_two_blocks_is_read_by_the_general_path(write: WriteFile) -> None:
    # q1's lines in two places (in different parts once cut in two): the same arrays as
    # numpy's, in one part or several.
    block = "".join(f"q1 Q0 d{i} {i} {100 - i} t\n" for i in range(40))
    other = "".join(f"q2 Q0 d{i} {i} {50 - i} t\n" for i in range(40))
    more = "".join(f"q1 Q0 e{i} {i} {60 - i} t\n" for i in range(40))
    qrels = write("qrels", "q1 0 d3 1\nq1 0 e5 2\nq2 0 d1 1\n")
    run = write("run", block + other + more)
    reference = _numpy_join(qrels, run, keep_best=False, complete=False)
    assert isinstance(reference, Ranked)
    for workers in (1, 2, 4):
        _same_ranked(_join(qrels, run, workers=workers), reference)


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_the_earliest_repeat_is_reported_whatever_the_parts(write: WriteFile, workers: int) -> None:
    # A repeated document in the first and the last of three blocks of each file (a part
    # starts at a block, so in two parts they are in different ones): the error names the
    # first block's.
    def block(q: str, n: int, again: int | None) -> list[str]:
        lines = [f"{q} Q0 d{i} {i} {n - i} t\n" for i in range(n)]
        if again is not None:
            lines.insert(again, lines[3])
        return lines

    run_lines = block("q1", 40, 20) + block("q2", 40, None) + block("q3", 40, 10)
    run = write("run", "".join(run_lines))
    judged = [f"q{q} 0 d{i} {i % 3}\n" for q in (1, 2, 3) for i in range(30)]
    qrels = write("qrels", "".join(judged))
    assert _joined(qrels, run, False, False, workers)[1:] == (
        f"{run}:21: document 'd3' repeated for query 'q1' (lines 4 and 21); --keep-best "
        "keeps its best-scored line",
        21,
    )
    judged.insert(12, judged[2])
    judged.insert(80, judged[70])
    qrels = write("qrels", "".join(judged))
    outcome = _joined(qrels, run, False, False, workers)
    assert outcome[0] == "error"
    assert outcome[2] == 13


@pytest.mark.parametrize("compiled", [True, False])
def test_the_kernels_in_threads_give_one_thread_s_values_and_trec_eval_s(
    write: WriteFile, trec_eval: Reference, compiled: bool
) -> None:
    # Slices of queries computed in threads at the same time, then put together: the
    # same bits as in one thread, and trec_eval's values; by the compiled kernels over
    # ranges of the segments, or by numpy's over padded chunks.
    from ragstream.metrics import parse_metric
    from ragstream.trec.evaluate import _kernels

    qrels_text, run_text = _collection(np.random.default_rng(5), 800, 60)
    run_text = "".join(line for line in run_text.splitlines(True) if line[0] != "#")
    qrels, run = write("qrels", qrels_text), write("run", run_text)  # pytrec_eval: no comments
    ranked = _join(qrels, run, workers=2)
    names = ["rr", "ap", "precision@5", "recall@10", "ndcg@10", "ndcg@3"]
    specs = tuple(parse_metric(name) for name in names)
    whole = (Segment(ranked.rel, ranked.rel_offsets, ranked.judged, ranked.judged_offsets),)
    one = _kernels(specs, whole, "linear", 1, threads=1, compiled=compiled)
    for threads in (2, 3, 8):
        several = _kernels(specs, whole, "linear", 1, threads=threads, compiled=compiled)
        assert {k: v.tobytes() for k, v in several.items()} == {
            k: v.tobytes() for k, v in one.items()
        }, threads
        # the segments as the scanner left them (one a part), put in byte order after
        assert len(ranked.segments) == 2
        assert ranked.order is not None
        stored = _kernels(specs, ranked.segments, "linear", 1, threads=threads, compiled=compiled)
        assert {k: v[ranked.order].tobytes() for k, v in stored.items()} == {
            k: v.tobytes() for k, v in one.items()
        }, threads
    expected = trec_eval(qrels, run, names)
    assert set(ranked.qids) == set(expected)
    for spec in specs:
        ours = dict(zip(ranked.qids, one[spec.name].tolist(), strict=True))
        assert ours == pytest.approx({q: v[spec.name] for q, v in expected.items()}, abs=1e-12)
