"""`ragstream eval` end to end: options, the three formats, and errors."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragstream.cli import main

WriteFile = Callable[[str, str | bytes], Path]

QRELS = "q1 0 a 1\nq1 0 b 0\nq1 0 c 2\nq2 0 x 1\nq3 0 y 1\n"
# q1: z, b tie at 2 -> z, b, a: rr 1/3, P@2 0, ndcg@3 = (1/log2 4) / (2 + 1/log2 3) = 0.190;
# q2: w, x: rr 1/2, ndcg@3 = 1/log2 3 = 0.631.
RUN = "q1 Q0 a 1 1 t\nq1 Q0 b 2 2.0 t\nq1 Q0 z 3 2 t\nq2 Q0 w 1 -1 t\nq2 Q0 x 2 -2 t\n"


@pytest.fixture
def files(write: WriteFile) -> list[str]:
    return ["--qrels", str(write("qrels", QRELS)), "--run", str(write("run", RUN))]


def _invoke(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["eval", *args])
    return result.exit_code, result.output


def test_trec_format_is_trec_eval_q_layout(files: list[str]) -> None:
    code, out = _invoke([*files, "-q", "--format", "trec", "-m", "rr,P@2", "-m", "success@2"])
    assert code == 0
    assert out == (
        "recip_rank            \tq1\t0.3333\n"
        "P_2                   \tq1\t0.0000\n"
        "success_2             \tq1\t0.0000\n"
        "recip_rank            \tq2\t0.5000\n"
        "P_2                   \tq2\t0.5000\n"
        "success_2             \tq2\t1.0000\n"
        "recip_rank            \tall\t0.4167\n"
        "P_2                   \tall\t0.2500\n"
        "success_2             \tall\t0.5000\n"
    )


def test_trec_format_full_digits_and_c(files: list[str]) -> None:
    code, out = _invoke([*files, "--format", "trec", "-m", "rr", "-c", "--digits", "full"])
    assert code == 0
    assert out == f"recip_rank            \tall\t{(1 / 3 + 1 / 2) / 3!r}\n"


def test_table_format(files: list[str]) -> None:
    code, out = _invoke([*files, "-q", "-m", "rr,ndcg@3", "--digits", "3"])
    assert code == 0
    assert out == (
        "query     rr  ndcg@3\n"
        "q1     0.333   0.190\n"
        "q2     0.500   0.631\n"
        "all    0.417   0.410\n"
        "mean over 2 queries (queries in both files)\n"
    )


def test_json_format_has_full_precision(files: list[str]) -> None:
    code, out = _invoke([*files, "--format", "json", "-q", "-m", "rr"])
    assert code == 0
    assert json.loads(out) == {
        "metrics": ["rr"],
        "num_queries": 2,
        "num_evaluated": 2,
        "complete": False,
        "mean": {"rr": (1 / 3 + 1 / 2) / 2},
        "per_query": {"q1": {"rr": 1 / 3}, "q2": {"rr": 0.5}},
    }


def test_default_metrics(files: list[str]) -> None:
    code, out = _invoke([*files, "--format", "json"])
    assert code == 0
    assert json.loads(out)["metrics"] == [
        "rr",
        "precision@5",
        "precision@10",
        "recall@5",
        "recall@10",
        "ndcg@5",
        "ndcg@10",
    ]


@pytest.mark.parametrize(
    ("qrels", "run", "message"),
    [
        (QRELS, "q1 Q0 a 1 1 t\nq1 Q0 b 1\n", "run:2: expected 6 fields"),
        (QRELS, "q1 Q0 a 1 x t\n", "run:1: score 'x' is not a number"),
        ("q1 0 a one\n", RUN, "qrels:1: relevance 'one' is not an integer"),
        ("q1 0 a 1\nq1 0 a 1\n", RUN, "qrels:2: document 'a' judged twice"),
        (QRELS, "q1 Q0 a 1 1 t\nq1 Q0 a 2 1 t\n", "run:2: document 'a' repeated for query 'q1'"),
        (QRELS, "", "run: no run lines"),
    ],
)
def test_bad_files_exit_nonzero_with_file_and_line(
    write: WriteFile, qrels: str, run: str, message: str
) -> None:
    args = ["--qrels", str(write("qrels", qrels)), "--run", str(write("run", run))]
    code, out = _invoke(args)
    assert code == 1
    assert out.startswith("Error: ")
    assert message in out
    assert "Traceback" not in out


def test_keep_best_flag(write: WriteFile) -> None:
    run = write("run", "q1 Q0 a 1 0.5 t\nq1 Q0 b 2 2 t\nq1 Q0 a 3 3 t\n")
    args = ["--qrels", str(write("qrels", QRELS)), "--run", str(run), "-m", "rr"]
    assert _invoke([*args, "--format", "trec"])[0] == 1
    code, out = _invoke([*args, "--format", "trec", "--keep-best"])
    assert (code, out) == (0, "recip_rank            \tall\t1.0000\n")


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["-m", "nope@3"], "unknown metric"),
        (["-m", "ndcg_decayed@3"], "decayed metrics need document timestamps"),
        (["-m", "dcg@3", "--format", "trec"], "trec_eval has no measure for dcg@3"),
        (["--digits", "x"], "give 0 to 17, or 'full'"),
        (["--relevance-level", "0"], "0 is not in the range x>=1"),
    ],
)
def test_bad_options_are_usage_errors(files: list[str], option: list[str], message: str) -> None:
    code, out = _invoke([*files, *option])
    assert code == 2
    assert message in out


def test_real_process(files: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ragstream", "eval", *files, "--format", "trec", "-m", "rr"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, "recip_rank            \tall\t0.4167\n")
    bad = subprocess.run(
        [sys.executable, "-m", "ragstream", "eval", "--qrels", files[1], "--run", files[1]],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert bad.returncode == 1
    assert bad.stderr.startswith("Error: ")
    assert ":1: expected 6 fields" in bad.stderr
    per_query = subprocess.run(
        [sys.executable, "-m", "ragstream", "eval", *files, "-q", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert (per_query.returncode, per_query.stdout) == _invoke([*files, "-q", "--format", "json"])


def _after_the_command(
    files: list[str], then: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter runs `ragstream eval FILES` in-process, then the code `then`
    (which prints to stderr what it finds)."""
    script = (
        "import os, sys\n"
        "from ragstream.cli import main\n"
        "try:\n"
        f"    main(['eval', *{files!r}])\n"
        "except SystemExit as done:\n"
        "    assert not done.code, done.code\n"
        f"{then}"
    )
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env=env,
    )


def test_the_command_imports_only_what_it_reads_with(files: list[str]) -> None:
    # Start-up is part of every `ragstream eval`: the version (importlib.metadata) and the
    # configuration (pydantic), which the command does not read, stay unimported.
    then = (
        "unwanted = ['importlib.metadata', 'pydantic', 'ragstream.config']\n"
        "print(sorted(name for name in unwanted if name in sys.modules), file=sys.stderr)\n"
    )
    done = _after_the_command(files, then)
    assert done.returncode == 0, done.stderr
    assert "all" in done.stdout
    assert done.stderr == "[]\n"


def test_engines_print_the_same(files: list[str]) -> None:
    outputs = set()
    for engine in ("auto", "compiled", "numpy"):
        code, out = _invoke([*files, "-q", "--format", "trec", "--engine", engine])
        assert code == 0, out
        outputs.add(out)
    assert len(outputs) == 1
    assert "recip_rank            \tq1\t0.3333\n" in outputs.pop()


def test_a_grade_beyond_64_bits_is_named(write: WriteFile) -> None:
    qrels = write("qrels", "q1 0 a 1\nq1 0 b 99999999999999999999\n")
    for engine in ("auto", "numpy"):
        code, out = _invoke(
            ["--qrels", str(qrels), "--run", str(write("run", RUN)), "--engine", engine]
        )
        assert code != 0
        assert "qrels:2: relevance '99999999999999999999' is out of range" in out
