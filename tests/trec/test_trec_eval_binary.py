"""`ragstream eval --format trec -q` prints byte for byte what NIST's trec_eval prints.

The program itself runs here (trec_eval 9.0.4, fetched once by ``scripts/trec_eval.sh``)
on the same files, with the same options, for every measure both have, including runs
whose lines carry text after their sixth field (which both skip). Its output has
four decimals, so this checks the layout, the set and order of queries and measures, and
every value to 5e-5; the per-query values to 1e-9 are checked against trec_eval's C code
through pytrec_eval in test_conformance.py.
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.eval_data import generate
from ragstream.trec import evaluate_files
from ragstream.trec.report import render
from tests.support import TrecEvalError, fetch_trec_eval, run_trec_eval
from tests.trec.test_conformance import _collection

WriteFile = Callable[[str, str | bytes], Path]

_COMMAND = [sys.executable, "-m", "ragstream", "eval"]

METRICS = [  # in no particular order: the output follows trec_eval's measure table
    "hit_rate@10",
    "ndcg@5",
    "rr",
    "precision@100",
    "recall@10",
    "hit_rate@1",
    "ap",
    "ndcg@1000",
    "precision@1",
    "recall@1000",
    "ndcg@1",
    "precision@10",
    "hit_rate@5",
    "recall@5",
    "ndcg@10",
    "precision@5",
]
MEASURES = [
    "map",
    "recip_rank",
    "P.1,5,10,100",
    "recall.5,10,1000",
    "ndcg_cut.1,5,10,1000",
    "success.1,5,10",
]
OPTIONS = [
    pytest.param({}, id="default"),
    pytest.param({"complete": True}, id="c"),
    pytest.param({"relevance_level": 2}, id="l2"),
    pytest.param({"complete": True, "relevance_level": 3}, id="c-l3"),
]

# Hand-made corner cases: q1 ties at 2 (two spellings) and a negative score; q2 fewer
# documents than every cutoff; q3 judged all zero; q4 no judged document retrieved; q5 only
# in the run; q6 only in the qrels; q10 and q9 sort as bytes ("10" < "9"); grades above 1.
EDGE_QRELS = (
    "q1 0 a 1\nq1 0 b 0\nq1 0 c 2\nq1 0 d 3\n"
    "q2 0 x 1\nq2 0 y 2\n"
    "q3 0 n 0\nq3 0 m 0\n"
    "q4 0 k 1\n"
    "q6 0 u 1\n"
    "q10 0 t 2\nq9 0 t 1\n"
)
EDGE_RUN = (
    "q1 Q0 a 1 2 t\nq1 Q0 b 2 2.0 t\nq1 Q0 z 3 2e0 t\nq1 Q0 c 4 -1.5 t\nq1 Q0 d 5 -1.5e1 t\n"
    "q2 Q0 y 1 0.1 t\n"
    "q3 Q0 n 1 5 t\nq3 Q0 m 2 4 t\n"
    "q4 Q0 j 1 1 t\nq4 Q0 i 2 1 t\n"
    "q5 Q0 e 1 1 t\n"
    "q9 Q0 t 1 3 t\nq10 Q0 s 1 3 t\nq10 Q0 t 2 1e-3 t\n"
)


@pytest.fixture(scope="module")
def trec_eval_binary() -> Path:
    return fetch_trec_eval()


@pytest.fixture(scope="module")
def shaped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The benchmark's generator at 3 000 queries x 100 documents (294 000 run lines)."""
    collection = generate(tmp_path_factory.mktemp("shaped"), queries=3_000, seed=5)
    return collection.qrels, collection.run


def _ours(qrels: Path, run: Path, **options: int | bool | str) -> str:
    result = evaluate_files(qrels, run, METRICS, **options)  # type: ignore[arg-type]
    return render(result, "trec", per_query=True)


def _theirs(binary: Path, qrels: Path, run: Path, **options: int | bool) -> str:
    return run_trec_eval(binary, qrels, run, MEASURES, per_query=True, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("options", OPTIONS)
def test_shaped_collection(
    trec_eval_binary: Path, shaped: tuple[Path, Path], options: dict[str, int | bool]
) -> None:
    qrels, run = shaped
    theirs = _theirs(trec_eval_binary, qrels, run, **options)
    assert theirs.count("\n") > 2_500 * len(METRICS)  # per-query lines of every query
    assert _ours(qrels, run, **options) == theirs


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("options", OPTIONS)
def test_irregular_collections(
    trec_eval_binary: Path, write: WriteFile, seed: int, options: dict[str, int | bool]
) -> None:
    qrels_text, run_text = _collection(seed)
    qrels, run = write("qrels", qrels_text), write("run", run_text)
    assert _ours(qrels, run, **options) == _theirs(trec_eval_binary, qrels, run, **options)


@pytest.mark.parametrize("options", OPTIONS)
def test_corner_cases(
    trec_eval_binary: Path, write: WriteFile, options: dict[str, int | bool]
) -> None:
    qrels, run = write("qrels", EDGE_QRELS), write("run", EDGE_RUN)
    theirs = _theirs(trec_eval_binary, qrels, run, **options)
    assert "recip_rank            \tq10\t" in theirs  # the case is really there
    assert _ours(qrels, run, **options) == theirs


# Text after a run line's sixth field, which trec_eval skips (NIST's own test collection
# has lines like `301 Q0 FBIS3-27619 99 2.138276 STANDARD more junk at`). No `#`: trec_eval
# 9.0.4 counts the lines of its buffer skipping from a `#` to the end of the line, so a `#`
# after the tag makes it allocate one line too few.
_JUNK = ["more junk at", "STANDARD x", "1 2 3 4 5", "\t7", "\u00e9 \x01 z"]


def _with_trailing_text(run_text: str, seed: int, share: float = 0.5) -> str:
    rng = random.Random(seed)
    return "".join(
        line
        + (rng.choice([" ", "\t", "  "]) + rng.choice(_JUNK) if rng.random() < share else "")
        + rng.choice(["\n", "\n", " \r\n"])
        for line in run_text.splitlines()
    )


_WAYS = [
    pytest.param({}, id="compiled"),
    pytest.param({"engine": "numpy"}, id="numpy"),
]


@pytest.mark.parametrize("way", _WAYS)
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("options", OPTIONS)
def test_text_after_the_sixth_field_is_skipped_as_trec_eval_does(
    trec_eval_binary: Path,
    write: WriteFile,
    seed: int,
    options: dict[str, int | bool],
    way: dict[str, str],
) -> None:
    qrels_text, run_text = _collection(seed)
    qrels, plain = write("qrels", qrels_text), write("plain", run_text)
    run = write("run", _with_trailing_text(run_text, seed))
    assert plain.read_text() != run.read_text()
    theirs = _theirs(trec_eval_binary, qrels, run, **options)
    assert theirs == _theirs(trec_eval_binary, qrels, plain, **options)
    assert _ours(qrels, run, **options, **way) == theirs


def test_text_after_the_sixth_field_on_every_line_of_a_large_run(
    trec_eval_binary: Path, shaped: tuple[Path, Path], tmp_path: Path
) -> None:
    qrels, plain = shaped
    run = tmp_path / "run"
    run.write_text(_with_trailing_text(plain.read_text(), seed=1, share=1.0))
    assert _ours(qrels, run, complete=True) == _theirs(trec_eval_binary, qrels, run, complete=True)


def test_the_command(trec_eval_binary: Path, shaped: tuple[Path, Path]) -> None:
    """The command, in its own process, against the program."""
    qrels, run = shaped
    args = ["--qrels", str(qrels), "--run", str(run), "-q", "-c", "--metrics", ",".join(METRICS)]
    ours = subprocess.run(
        [*_COMMAND, *args, "--format", "trec"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert ours == _theirs(trec_eval_binary, qrels, run, complete=True)


@pytest.mark.parametrize(
    ("qrels_text", "run_text", "named"),
    [
        pytest.param(
            "q1 0 a 1\n", "q1 Q0 a 1 1 t\nq1 Q0 a 2 0.5 t\n", "run:2", id="duplicate-run-doc"
        ),
        pytest.param("q1 0 a 1\nq1 0 a 2\n", "q1 Q0 a 1 1 t\n", "qrels:2", id="duplicate-judgment"),
        pytest.param("q1 0 a 1\n", "q1 Q0 a 1 t\n", "run:1", id="short-run-line"),
        pytest.param("q1 0 a 1 x\n", "q1 Q0 a 1 1 t\n", "qrels:1", id="five-field-qrels-line"),
    ],
)
def test_both_refuse_bad_files(
    trec_eval_binary: Path, write: WriteFile, qrels_text: str, run_text: str, named: str
) -> None:
    """trec_eval stops on these; so does the command, naming the file and line."""
    qrels, run = write("qrels", qrels_text), write("run", run_text)
    with pytest.raises(TrecEvalError):
        _theirs(trec_eval_binary, qrels, run)
    ours = subprocess.run(
        [*_COMMAND, "--qrels", str(qrels), "--run", str(run), "--format", "trec"],
        capture_output=True,
        text=True,
    )
    assert ours.returncode != 0
    assert ours.stdout == ""
    assert f"{qrels.parent}/{named}" in ours.stderr
