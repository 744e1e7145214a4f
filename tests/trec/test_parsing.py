"""Reading qrels and run files: fields, skipped lines, number spellings, and bad lines."""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragstream.trec import TrecFormatError, read_qrels, read_run
from ragstream.trec._ids import Ids
from ragstream.trec.table import RUN_LAYOUT, TrecTable, read_table

WriteFile = Callable[[str, str | bytes], Path]


def _ids(ids: Ids) -> list[str]:
    return [b.decode() for b in ids.texts(np.arange(ids.size))]


def _qids_per_line(table: TrecTable) -> list[str]:
    return [
        q
        for q, n in zip(_ids(table.qids), np.diff(table.block_starts).tolist(), strict=True)
        for _ in range(n)
    ]


def test_run_fields_are_read_in_file_order(write: WriteFile) -> None:
    path = write("run", "q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 -1 t\nq2\tQ0  d1 9 1e-3 tag\r\n")
    table = read_run(path)
    assert _qids_per_line(table) == ["q1", "q1", "q2"]
    assert _ids(table.docs) == ["d1", "d2", "d1"]
    assert table.values.tolist() == [2.5, -1.0, 0.001]
    assert [table.line(i) for i in range(3)] == [1, 2, 3]


def test_qrels_fields_and_negative_grades(write: WriteFile) -> None:
    table = read_qrels(write("qrels", "7 0 a 2\n7 0 b -1\n10 1 c +3\n"))
    assert _qids_per_line(table) == ["7", "7", "10"]
    assert table.values.tolist() == [2, -1, 3]
    assert table.values.dtype == np.int64


def test_long_ids_keep_every_byte(write: WriteFile) -> None:
    long_doc = "clueweb12-0000tw-00-00000-" + "x" * 90
    table = read_run(write("run", f"query-with-a-long-id Q0 {long_doc} 1 3 t\nq Q0 d 2 1 t\n"))
    assert _ids(table.docs) == [long_doc, "d"]
    assert _qids_per_line(table) == ["query-with-a-long-id", "q"]


def test_text_after_the_sixth_run_field_is_ignored_as_trec_eval_does(write: WriteFile) -> None:
    # NIST's test runs have such lines; trec_eval reads six fields and skips the rest
    text = (
        "301 Q0 FBIS3-27619 99 2.138276 STANDARD more junk at\n"
        "301\tQ0 b 1 1.5 t\t# not a comment\r\n"
        "302 Q0 c 1 -1 t 1 2 3 4 5 6 7 8 9\n"
        "302 Q0 d 2 -2 t\n"
    )
    table = read_run(write("run", text))
    assert _ids(table.docs) == ["FBIS3-27619", "b", "c", "d"]
    assert _qids_per_line(table) == ["301", "301", "302", "302"]
    assert table.values.tolist() == [2.138276, 1.5, -1.0, -2.0]
    assert [table.line(i) for i in range(4)] == [1, 2, 3, 4]


def test_qrels_lines_have_exactly_four_fields_as_in_trec_eval(write: WriteFile) -> None:
    # trec_eval's get_qrels.c: anything but whitespace after the grade is a malformed line
    path = write("qrels", "q 0 a 1 \t\nq 0 b 1 extra\n")
    with pytest.raises(TrecFormatError, match=r"expected 4 fields .* found 5") as caught:
        read_qrels(path)
    assert caught.value.line == 2


def test_run_skips_blank_and_comment_lines_as_trec_eval_does(write: WriteFile) -> None:
    text = "# a comment\nq1 Q0 a 1 1 t\n\n   \n  # indented comment\nq1 Q0 b 2 0.5 t\n"
    table = read_run(write("run", text))
    assert _ids(table.docs) == ["a", "b"]
    assert [table.line(i) for i in range(2)] == [2, 6]


def test_qrels_comment_only_in_column_one(write: WriteFile) -> None:
    table = read_qrels(write("qrels", "# judged by x\nq 0 a 1\n"))
    assert _ids(table.docs) == ["a"]
    assert table.line(0) == 2


def test_last_line_without_newline(write: WriteFile) -> None:
    assert read_run(write("run", "q Q0 a 1 1 t\nq Q0 b 2 0 t")).size == 2


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("q 0 a 1\nq 0 b\n", 2, "expected 4 fields (qid iter docid rel), found 3: 'q 0 b'"),
        ("q 0 a 1\nq 0 b 1 x\n", 2, "expected 4 fields (qid iter docid rel), found 5"),
        ("q 0 a 1\n\nq 0 b 1\n", 2, "blank line; expected 4 fields"),
        ("q 0 a 1\nq 0 b 1.5\n", 2, "relevance '1.5' is not an integer"),
        ("q 0 a 1\nq 0 b high\n", 2, "relevance 'high' is not an integer"),
        ("q 0 a 1\n  # not a comment here\n", 2, "expected 4 fields"),
    ],
)
def test_malformed_qrels_lines_are_named(
    write: WriteFile, text: str, line: int, message: str
) -> None:
    path = write("qrels", text)
    with pytest.raises(TrecFormatError, match=re.escape(message)) as caught:
        read_qrels(path)
    assert caught.value.line == line
    assert str(caught.value).startswith(f"{path}:{line}: ")


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            "q Q0 a 1 1 t\nq Q0 b 2 1\n",
            2,
            "expected 6 fields (qid Q0 docid rank score tag), found 5",
        ),
        ("q Q0 a 1\n", 1, "expected 6 fields (qid Q0 docid rank score tag), found 4"),
        ("q Q0 a 1 1 t more \x00 text\n", 1, "NUL byte"),
        ("q Q0 a 1 1 t\nq Q0 b 2 one t\n", 2, "score 'one' is not a number"),
        ("q Q0 a 1 1 t\nq Q0 b 2 1,5 t\n", 2, "score '1,5' is not a number"),
        ("q Q0 a 1 nan t\n", 1, "score is NaN"),
        ("q Q0 a 1 1 t\nq Q0 b\x00 2 1 t\n", 2, "NUL byte"),
    ],
)
def test_malformed_run_lines_are_named(
    write: WriteFile, text: str, line: int, message: str
) -> None:
    path = write("run", text)
    with pytest.raises(TrecFormatError, match=re.escape(message)) as caught:
        read_run(path)
    assert caught.value.line == line


def test_bad_line_is_found_deep_in_a_large_file(write: WriteFile) -> None:
    good = "".join(f"q{i // 100} Q0 d{i} {i} {i * 0.5} t\n" for i in range(60_000))
    path = write("run", good + "q Q0 x 1 t\n" + good)
    with pytest.raises(TrecFormatError) as caught:
        read_run(path)
    assert caught.value.line == 60_001


@pytest.mark.parametrize(("name", "text"), [("empty", ""), ("comments", "# only\n# comments\n")])
def test_file_without_records_is_an_error(write: WriteFile, name: str, text: str) -> None:
    path = write(name, text)
    with pytest.raises(TrecFormatError, match="no run lines"):
        read_run(path)
    with pytest.raises(TrecFormatError, match=r"no qrels lines|blank line"):
        read_qrels(path)


_SPELLINGS = st.sampled_from(["{!r}", "{:.3f}", "{:.0f}", "{:e}", "{:.17g}", "{:+.2f}", "{:g}"])


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    values=st.lists(
        st.floats(allow_nan=False, allow_infinity=True, width=64), min_size=1, max_size=40
    ),
    spelling=_SPELLINGS,
)
def test_scores_parse_exactly_like_python_float(
    write: WriteFile, values: list[float], spelling: str
) -> None:
    texts = [spelling.format(v) for v in values]
    lines = "".join(f"q Q0 d{i} 0 {t} run\n" for i, t in enumerate(texts))
    parsed = read_run(write("run", lines)).values
    expected = [float(t) for t in texts]
    assert [struct.pack(">d", v) for v in parsed.tolist()] == [
        struct.pack(">d", v) for v in expected
    ]


def test_short_decimals_take_the_exact_fast_path(write: WriteFile) -> None:
    texts = ["0.1", "-0.3", "12.375", "99999.99", "-0", "7", "+.5", "1.", "0.0000001"]
    lines = "".join(f"q Q0 d{i} 0 {t} run\n" for i, t in enumerate(texts))
    parsed = read_run(write("run", lines)).values.tolist()
    assert parsed == [float(t) for t in texts]
    assert math.copysign(1.0, parsed[4]) == -1.0


@pytest.mark.parametrize("block_bytes", [16, 50, 1 << 20])
def test_blocks_join_seamlessly_and_lines_count_across_blocks(
    write: WriteFile, block_bytes: int
) -> None:
    lines = [f"q{i // 7} Q0 d{i} {i} {i / 4} t\n" for i in range(200)]
    lines[50:50] = ["# comment\n", "\n"]
    path = write("run", "".join(lines))
    table = read_table(path, RUN_LAYOUT, "float", block_bytes=block_bytes, workers=2)
    assert table.size == 200
    assert _ids(table.docs) == [f"d{i}" for i in range(200)]
    assert _qids_per_line(table) == [f"q{i // 7}" for i in range(200)]
    assert table.qids.size == len(range(0, 200, 7))  # one block per query
    assert [table.line(i) for i in (0, 49, 50, 199)] == [1, 50, 53, 202]
    bad = write("bad", "".join(lines[:150]) + "q Q0 x 1 t\n")
    with pytest.raises(TrecFormatError) as caught:
        read_table(bad, RUN_LAYOUT, "float", block_bytes=block_bytes)
    assert caught.value.line == 151


@pytest.mark.parametrize("block_bytes", [16, 64, 100])
def test_a_block_of_only_comments_still_counts_its_lines(
    write: WriteFile, block_bytes: int
) -> None:
    comments = "".join(f"# comment {i} " + "c" * 20 + "\n" for i in range(6))
    path = write("run", "q Q0 a 1 1 t\n" + comments + "\n\nq Q0 b 2 1 t\nq Q0 c 3 1 t\n")
    table = read_table(path, RUN_LAYOUT, "float", block_bytes=block_bytes, workers=2)
    assert [table.line(i) for i in range(3)] == [1, 10, 11]


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    separators=st.lists(st.sampled_from([" ", "\t", "  ", " \t "]), min_size=30, max_size=30),
    crlf=st.booleans(),
)
def test_any_whitespace_reads_like_single_spaces(
    write: WriteFile, separators: list[str], crlf: bool
) -> None:
    rows = [("q1", "Q0", f"doc{i}", str(i), f"{1.5 - i / 3:.4f}", "tag") for i in range(5)]
    plain = "".join(" ".join(r) + "\n" for r in rows)
    seps = iter(separators)
    end = "\r\n" if crlf else "\n"
    spaced = "".join("".join(f + next(seps) for f in r[:-1]) + r[-1] + end for r in rows)
    a, b = read_run(write("plain", plain)), read_run(write("spaced", spaced))
    assert np.array_equal(a.docs.words, b.docs.words)
    assert np.array_equal(a.qids.words, b.qids.words)
    assert a.values.tolist() == b.values.tolist()
