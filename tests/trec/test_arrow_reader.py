"""The optional pyarrow reader gives exactly the numpy reader's tables, or declines."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragstream.trec import TrecFormatError, evaluate_files, read_qrels, read_run
from ragstream.trec._arrow import read_table_arrow
from ragstream.trec._ids import WIDTH
from ragstream.trec.qrels import QRELS_LAYOUT
from ragstream.trec.records import TrecTable
from ragstream.trec.run import RUN_LAYOUT

pytest.importorskip("pyarrow")

WriteFile = Callable[[str, str | bytes], Path]

_LONG = "clueweb12-0000tw-00-00000-" + "x" * 90
_RUN = (
    "q1 Q0 d1 1 2.5 t\n"
    "q1 Q0 d2 2 2.5 t\n"  # a tie
    "q1 Q0 d3 3 -1.25 t\n"
    "q1 Q0 d4 4 1e-05 t\n"
    "q1 Q0 d5 5 -3.5E+02 t\n"
    "q1 Q0 d6 6 .5 t\n"
    "q1 Q0 d7 7 5. t\n"
    "q1 Q0 d8 8 123456789.123456789 t\n"
    "q1 Q0 d9 9 -inf t\n"
    f"query-with-a-long-id Q0 {_LONG} 1 inf t\n"
    "query-with-a-long-id Q0 d1 2 0.1 t\n"
    "q1 Q0 d10 10 1.7976931348623157e308 t\n"  # q1 again: a second block
    "q\u00e9 Q0 d\u00e9 1 5e-324 t\n"
)
_QRELS = "q1 0 d1 2\nq1 0 d2 -1\nq1 0 d3 0\nq1 0 d4 007\nqx 0 a 3\n" + f"qx 0 {_LONG} 1\n"


def _same(a: TrecTable, b: TrecTable) -> None:
    assert a.path == b.path
    for ids in ("qids", "docs"):
        x, y = getattr(a, ids), getattr(b, ids)
        for name in ("words", "long_rows", "long_offsets", "long_bytes"):
            assert np.array_equal(getattr(x, name), getattr(y, name)), (ids, name)
            assert getattr(x, name).dtype == getattr(y, name).dtype, (ids, name)
    for name in ("block_starts", "values"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        assert x.shape == y.shape, name
        assert np.array_equal(x, y), name
    assert (a.lines is None) == (b.lines is None)
    if a.lines is not None and b.lines is not None:
        assert np.array_equal(a.lines, b.lines)


@pytest.mark.parametrize("delimiter", [" ", "\t"])
def test_uniform_files_are_read_by_pyarrow_as_by_numpy(write: WriteFile, delimiter: str) -> None:
    run = write("run", _RUN.replace(" ", delimiter))
    qrels = write("qrels", _QRELS.replace(" ", delimiter))
    fast_run = read_table_arrow(str(run), RUN_LAYOUT, "float")
    fast_qrels = read_table_arrow(str(qrels), QRELS_LAYOUT, "int")
    assert fast_run is not None
    assert fast_qrels is not None
    _same(fast_run, read_run(run, reader="numpy"))
    _same(fast_qrels, read_qrels(qrels, reader="numpy"))
    _same(read_run(run, reader="arrow"), fast_run)
    assert fast_run.values.tolist()[:3] == [2.5, 2.5, -1.25]
    assert fast_qrels.values.tolist()[:4] == [2, -1, 0, 7]


def test_a_last_line_without_newline_is_read_alike(write: WriteFile) -> None:
    run = write("run", _RUN.rstrip("\n"))
    fast = read_table_arrow(str(run), RUN_LAYOUT, "float")
    assert fast is not None
    _same(fast, read_run(run, reader="numpy"))


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("double space", "q Q0 d 1 1 t\nq Q0  e 2 1 t\n"),
        ("tab and space", "q\tQ0 d 1 1 t\nq Q0 e 2 1 t\n"),
        ("crlf", "q Q0 d 1 1 t\r\nq Q0 e 2 1 t\r\n"),
        ("bare cr", "q Q0 d 1 1 t\rq Q0 e 2 1 t\n"),
        ("comment", "# a b c d e\nq Q0 d 1 1 t\n"),
        ("comment with six fields", "#q Q0 d 1 1 t\nq Q0 e 2 1 t\n"),
        ("blank line", "q Q0 d 1 1 t\n\nq Q0 e 2 1 t\n"),
        ("leading space", " q Q0 d 1 1 t\n"),
        ("trailing space", "q Q0 d 1 1 t \n"),
        ("byte order mark", "\ufeffq Q0 d 1 1 t\n"),
        ("nan", "q Q0 d 1 nan t\n"),
        ("not a number", "q Q0 d 1 1.5x t\n"),
        ("seven fields", "q Q0 d 1 1 t extra\n"),
        ("text after the tag", "301 Q0 FBIS3-27619 99 2.138276 STANDARD more junk at\n"),
        ("empty", ""),
        ("vertical tab", "q Q0 d\x0b 1 1 t\n"),
        ("nul", "q Q0 d\x00 1 1 t\n"),
    ],
)
def test_the_fast_reader_declines_what_it_cannot_prove(
    write: WriteFile, name: str, text: str
) -> None:
    path = write("run", text)
    assert read_table_arrow(str(path), RUN_LAYOUT, "float") is None, name
    try:
        expected: TrecTable | str = read_run(path, reader="numpy")
    except TrecFormatError as error:
        expected = str(error)
    try:
        got: TrecTable | str = read_run(path, reader="arrow")
    except TrecFormatError as error:
        got = str(error)
    if isinstance(expected, str) or isinstance(got, str):
        assert got == expected  # the same precise FILE:LINE: reason
    else:
        _same(got, expected)


def test_a_huge_id_is_read_alike_without_widening_every_row(write: WriteFile) -> None:
    lines = [f"q{i // 100} Q0 d{i} 1 {i} t\n" for i in range(2000)]
    lines[7] = "q0 Q0 " + "x" * (1 << 20) + " 1 5 t\n"
    run = write("run", "".join(lines))
    fast = read_table_arrow(str(run), RUN_LAYOUT, "float")
    assert fast is not None
    _same(fast, read_run(run, reader="numpy"))
    assert fast.docs.words.shape == (2000, WIDTH)
    assert fast.docs.text(7) == b"x" * (1 << 20)


def test_bad_lines_keep_their_precise_errors(write: WriteFile) -> None:
    path = write("qrels", "q 0 d 1\nq 0 e 1.5\n")
    with pytest.raises(TrecFormatError, match=r":2: relevance '1\.5' is not an integer"):
        read_qrels(path, reader="arrow")
    path = write("run", "q Q0 d 1 1 t\nq Q0 e 2 nan t\n")
    with pytest.raises(TrecFormatError, match=r":2: score is NaN"):
        read_run(path, reader="arrow")


_ID = st.text(
    alphabet=st.characters(min_codepoint=33, max_codepoint=0x2FF, exclude_characters="#"),
    min_size=1,
    max_size=20,
)
_SCORE = st.one_of(
    st.floats(allow_nan=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: f"{x:.6e}"),
    st.floats(-1e6, 1e6).map(lambda x: f"{x:.3f}"),
    st.integers(-(10**20), 10**20).map(str),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(st.tuples(_ID, _ID, _SCORE, st.integers(-5, 5)), min_size=1, max_size=40),
    delimiter=st.sampled_from([" ", "\t"]),
)
def test_both_readers_agree_on_generated_files(
    write: WriteFile, rows: list[tuple[str, str, str, int]], delimiter: str
) -> None:
    run = write(
        "run", "".join(delimiter.join((q, "Q0", d, "1", s, "t")) + "\n" for q, d, s, _ in rows)
    )
    qrels = write(
        "qrels", "".join(delimiter.join((q, "0", d, str(g))) + "\n" for q, d, _, g in rows)
    )
    _same(read_run(run, reader="arrow"), read_run(run, reader="numpy"))
    _same(read_qrels(qrels, reader="arrow"), read_qrels(qrels, reader="numpy"))


def test_evaluation_is_the_same_with_either_reader(write: WriteFile) -> None:
    run, qrels = write("run", _RUN), write("qrels", _QRELS)
    fast = evaluate_files(qrels, run, ["ndcg@10", "rr", "ap"], reader="arrow")
    slow = evaluate_files(qrels, run, ["ndcg@10", "rr", "ap"], reader="numpy")
    assert fast.qids == slow.qids
    assert fast.mean == slow.mean
    for name, values in fast.per_query.items():
        assert np.array_equal(values, slow.per_query[name])


def test_without_pyarrow_the_numpy_reader_reads_everything(
    write: WriteFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = write("run", _RUN)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if the extra were not installed
    monkeypatch.setitem(sys.modules, "pyarrow.csv", None)
    assert read_table_arrow(str(run), RUN_LAYOUT, "float") is None
    _same(read_run(run, reader="arrow"), read_run(run, reader="numpy"))
