"""`ragstream eval -q -c` prints a line of zeros for each qrels query the run lacks (as
trec_eval 10 does); number tokens are read as Python's float() reads them, by the compiled
scanner as by numpy; the scanner's `mapped` mode takes only read-only file mappings."""

from __future__ import annotations

import json
import mmap
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragstream.cli import main
from ragstream.trec import evaluate_files
from ragstream.trec._compiled import AVAILABLE

WriteFile = Callable[[str, str | bytes], Path]

QRELS = "q2 0 d1 1\nq2 0 d2 0\nq1 0 d1 1\nq3 0 d9 1\nq10 0 d1 1\n"
RUN = "q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\nq10 Q0 d3 1 1.0 r\n"


def _eval(qrels: Path, run: Path, *args: str) -> str:
    result = CliRunner().invoke(main, ["eval", "--qrels", str(qrels), "--run", str(run), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_q_c_prints_zero_lines_for_queries_missing_from_the_run(write: WriteFile) -> None:
    qrels, run = write("qrels", QRELS), write("run", RUN)
    out = _eval(qrels, run, "-m", "rr", "-m", "precision@5", "-q", "-c", "--format", "trec")
    assert out.splitlines() == [
        "recip_rank            \tq1\t1.0000",
        "P_5                   \tq1\t0.2000",
        "recip_rank            \tq10\t0.0000",
        "P_5                   \tq10\t0.0000",
        "recip_rank            \tq2\t0.0000",  # missing from the run
        "P_5                   \tq2\t0.0000",
        "recip_rank            \tq3\t0.0000",
        "P_5                   \tq3\t0.0000",
        "recip_rank            \tall\t0.2500",
        "P_5                   \tall\t0.0500",
    ]
    without_c = _eval(qrels, run, "-m", "rr", "-q", "--format", "trec")
    assert "\tq2\t" not in without_c
    assert "\tq3\t" not in without_c
    table = _eval(qrels, run, "-m", "rr", "-q", "-c")
    assert [line.split()[0] for line in table.splitlines()[1:6]] == [
        *("q1", "q10", "q2", "q3", "all")
    ]
    per_query = json.loads(_eval(qrels, run, "-m", "rr", "-q", "-c", "--format", "json"))
    assert per_query["per_query"] == {
        "q1": {"rr": 1.0},
        "q10": {"rr": 0.0},
        "q2": {"rr": 0.0},
        "q3": {"rr": 0.0},
    }


@pytest.mark.parametrize("engine", ["compiled", "numpy"])
def test_both_paths_name_the_missing_queries(write: WriteFile, engine: str) -> None:
    if engine == "compiled" and not AVAILABLE:
        pytest.skip("ragstream.trec._trec_reader is not built")
    qrels, run = write("qrels", QRELS), write("run", RUN)
    result = evaluate_files(qrels, run, ["rr"], complete=True, engine=engine)  # type: ignore[arg-type]
    assert result.missing == ("q2", "q3")
    assert evaluate_files(qrels, run, ["rr"], engine=engine).missing == ()  # type: ignore[arg-type]


# A score token of 100 000 digits whose value is infinite (a clamped exponent read it as
# 0.1), one whose value is 1e9 only when the exponent is clamped, and long spellings of
# ordinary values.
_ZEROS = "0" * 100_000
TOKENS = [
    f"0.{_ZEROS}1e1000009",
    f"0.{_ZEROS}1e10001000000",
    f"-0.{_ZEROS}1e1000009",
    f"2{_ZEROS}e-100000",
    f"0.{_ZEROS}5e100001",
    "1e" + "0" * 50_000 + "1",
]


@pytest.mark.parametrize("token", TOKENS, ids=range(len(TOKENS)))
def test_score_tokens_are_read_as_python_reads_them(write: WriteFile, token: str) -> None:
    """dB's score is the token: above or below dA's 1.0 as float(token) says, so rr is 0.5
    or 1.0 by both paths."""
    qrels = write("qrels", "q1 0 dA 1\nq1 0 dB 0\n")
    run = write("run", f"q1 Q0 dA 1 1.0 r\nq1 Q0 dB 2 {token} r\n")
    expected = 0.5 if float(token) > 1.0 else 1.0
    for engine in ("compiled", "numpy") if AVAILABLE else ("numpy",):
        result = evaluate_files(qrels, run, ["rr"], engine=engine)
        assert float(result.per_query["rr"][0]) == expected, engine


@pytest.mark.skipif(not AVAILABLE, reason="ragstream.trec._trec_reader is not built")
def test_mapped_takes_only_read_only_file_mappings(tmp_path: Path) -> None:
    """`mapped` drops pages as they are read: on other memory that would read back zeros."""
    from ragstream.trec import _trec_reader

    qrels = b"q1 0 d1 1\n"
    run = b"q1 Q0 d1 1 1.0 r\n"
    with pytest.raises(ValueError, match="read-only mmap"):
        _trec_reader.join(qrels, run, False, 1, None, True)
    with pytest.raises(ValueError, match="read-only mmap"):
        _trec_reader.join(bytearray(qrels), bytearray(run), False, 1, None, True)
    (tmp_path / "q").write_bytes(qrels)
    (tmp_path / "r").write_bytes(run)
    with (tmp_path / "q").open("rb") as q, (tmp_path / "r").open("rb") as r:
        qmap = mmap.mmap(q.fileno(), 0, access=mmap.ACCESS_READ)
        rmap = mmap.mmap(r.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            out = _trec_reader.join(qmap, rmap, False, 1, None, True)
            assert not isinstance(out, str)  # joined, not declined
        finally:
            qmap.close()
            rmap.close()
    assert _trec_reader.join(qrels, run, False) is not None  # bytes, not mapped: fine
