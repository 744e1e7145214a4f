"""trec_eval's conventions, checked on hand-computed cases."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragstream.trec import TrecFormatError, evaluate_files
from ragstream.trec._join import trec_order

WriteFile = Callable[[str, str | bytes], Path]

QRELS = "q1 0 a 1\nq1 0 b 0\nq1 0 c 2\nq2 0 x 1\nq3 0 y 1\n"


def _rr(write: WriteFile, run: str, keep_best: bool = False) -> dict[str, float]:
    result = evaluate_files(write("qrels", QRELS), write("run", run), ["rr"], keep_best=keep_best)
    return dict(zip(result.qids, result.per_query["rr"].tolist(), strict=True))


def test_ties_break_by_doc_id_descending_and_rank_is_ignored(write: WriteFile) -> None:
    # b and z tie at 2.0: z ranks first (byte order descending), then b, then a (relevant).
    # The rank column says the opposite and is ignored.
    run = "q1 Q0 a 1 1.0 t\nq1 Q0 b 2 2.0 t\nq1 Q0 z 3 2.0 t\n"
    assert _rr(write, run) == {"q1": pytest.approx(1 / 3)}


def test_tie_order_is_byte_order_not_alphabetical(write: WriteFile) -> None:
    # "c" (relevant) vs "B" and "ca": bytes descending -> "ca" > "c" > "B".
    run = "q1 Q0 B 1 5 t\nq1 Q0 c 2 5 t\nq1 Q0 ca 3 5 t\n"
    assert _rr(write, run) == {"q1": pytest.approx(1 / 2)}


def test_negative_and_exponent_scores_order_numerically(write: WriteFile) -> None:
    run = "q1 Q0 a 1 -2.5e-1 t\nq1 Q0 b 2 -3 t\nq1 Q0 z 3 -0.3 t\n"
    # order: a (-0.25), z (-0.3), b (-3): a is relevant at rank 1
    assert _rr(write, run) == {"q1": 1.0}


def test_unsorted_interleaved_run_is_ordered(write: WriteFile) -> None:
    run = "q2 Q0 n 1 1 t\nq1 Q0 c 1 0.1 t\nq2 Q0 x 2 0.5 t\nq1 Q0 m 2 0.2 t\n"
    assert _rr(write, run) == {"q1": 0.5, "q2": 0.5}


def test_repeated_document_names_both_lines(write: WriteFile) -> None:
    path = write("run", "q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\nq1 Q0 a 3 1 t\n")
    message = f"{path}:3: document 'a' repeated for query 'q1' (lines 1 and 3)"
    with pytest.raises(TrecFormatError, match=re.escape(message)):
        evaluate_files(write("qrels", QRELS), path, ["rr"])


def test_keep_best_keeps_the_best_scored_repeat(write: WriteFile) -> None:
    # a appears with 0.5 and 3: the 3 counts, so a (relevant) ranks first.
    run = "q1 Q0 a 1 0.5 t\nq1 Q0 b 2 2 t\nq1 Q0 a 3 3 t\n"
    assert _rr(write, run, keep_best=True) == {"q1": 1.0}


def test_keep_best_on_equal_scores_keeps_the_earliest_line(write: WriteFile) -> None:
    # Both a lines score 2 and one is kept (the earliest). a and b tie at 2: b ranks first
    # (byte order descending), a second, and a counts once in precision.
    run = "q1 Q0 a 1 2 t\nq1 Q0 b 2 2 t\nq1 Q0 a 3 2 t\n"
    result = evaluate_files(
        write("qrels", QRELS), write("run", run), ["rr", "precision@3"], keep_best=True
    )
    assert result.per_query["rr"].tolist() == [0.5]
    assert result.per_query["precision@3"].tolist() == [pytest.approx(1 / 3)]


def test_repeated_judgment_is_an_error(write: WriteFile) -> None:
    path = write("qrels", "q1 0 a 1\nq1 0 b 0\nq1 0 a 2\n")
    with pytest.raises(TrecFormatError, match=re.escape(f"{path}:3: document 'a' judged twice")):
        evaluate_files(path, write("run", "q1 Q0 a 1 1 t\n"), ["rr"])


def test_mean_over_queries_in_both_files_and_with_c(write: WriteFile) -> None:
    # q1: rr 1; q2: rr 0.5; q3 missing from the run; q9 missing from the qrels.
    run = "q1 Q0 a 1 9 t\nq2 Q0 w 1 9 t\nq2 Q0 x 2 8 t\nq9 Q0 a 1 1 t\n"
    qrels, run_path = write("qrels", QRELS), write("run", run)
    plain = evaluate_files(qrels, run_path, ["rr"])
    assert plain.qids == ("q1", "q2")
    assert plain.num_queries == 2
    assert plain.mean["rr"] == pytest.approx(0.75)
    complete = evaluate_files(qrels, run_path, ["rr"], complete=True)
    assert complete.qids == ("q1", "q2")
    assert complete.num_queries == 3
    assert complete.mean["rr"] == pytest.approx(1.5 / 3)


def test_query_without_relevant_documents_counts_zero(write: WriteFile) -> None:
    qrels = write("qrels", "q1 0 a 1\nq2 0 b 0\n")
    run = write("run", "q1 Q0 a 1 1 t\nq2 Q0 b 1 1 t\n")
    result = evaluate_files(qrels, run, ["rr", "recall@5", "ndcg@5"])
    assert result.qids == ("q1", "q2")
    assert {k: v.tolist() for k, v in result.per_query.items()} == {
        "rr": [1.0, 0.0],
        "recall@5": [1.0, 0.0],
        "ndcg@5": [1.0, 0.0],
    }
    assert result.mean["rr"] == 0.5


def test_relevance_level_and_exponential_gain(write: WriteFile) -> None:
    qrels = write("qrels", "q 0 a 1\nq 0 b 3\n")
    run = write("run", "q Q0 a 1 2 t\nq Q0 b 2 1 t\n")
    level2 = evaluate_files(qrels, run, ["rr"], relevance_level=2)
    assert level2.per_query["rr"].tolist() == [0.5]
    exp = evaluate_files(qrels, run, ["ndcg@2"], gain="exponential")
    dcg = 1 / np.log2(2) + 7 / np.log2(3)
    ideal = 7 / np.log2(2) + 1 / np.log2(3)
    assert exp.per_query["ndcg@2"][0] == pytest.approx(dcg / ideal, abs=1e-12)


def test_no_common_query_is_an_error(write: WriteFile) -> None:
    with pytest.raises(TrecFormatError, match="no query id of the run appears in the qrels"):
        evaluate_files(write("qrels", QRELS), write("run", "other Q0 a 1 1 t\n"), ["rr"])


_DOC = st.text(alphabet="abAB09-é", min_size=1, max_size=10)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(
        st.tuples(st.integers(0, 3), _DOC, st.sampled_from([-1.5, 0.0, 0.25, 2.0, 1e300])),
        min_size=1,
        max_size=60,
        unique_by=lambda r: (r[0], r[1]),
    )
)
def test_order_equals_a_sort_by_trec_rules(rows: list[tuple[int, str, float]]) -> None:
    codes = np.array([r[0] for r in rows], dtype=np.int64)
    scores = np.array([r[2] for r in rows], dtype=np.float64)
    raw = [r[1].encode() for r in rows]
    width = -(-max(len(b) for b in raw) // 8)
    words = np.array(
        [np.frombuffer(b.ljust(8 * width, b"\0"), dtype=">u8").astype(np.uint64) for b in raw]
    ).reshape(len(rows), width)
    order = trec_order(codes, scores, words).tolist()
    assert sorted(order) == list(range(len(rows)))
    runs = [codes[i] for k, i in enumerate(order) if k == 0 or codes[order[k - 1]] != codes[i]]
    assert len(runs) == len(set(runs))  # each query's records are contiguous
    for code in set(runs):
        mine = [i for i in order if codes[i] == code]
        assert mine == sorted(mine, key=lambda i: (-scores[i], _Desc(raw[i])))


class _Desc:
    """Sort key that reverses byte order."""

    def __init__(self, value: bytes) -> None:
        self.value = value

    def __lt__(self, other: _Desc) -> bool:
        return self.value > other.value


def test_complete_without_common_query_means_zero(write: WriteFile) -> None:
    result = evaluate_files(
        write("qrels", QRELS), write("run", "other Q0 a 1 1 t\n"), ["rr"], complete=True
    )
    assert result.qids == ()
    assert result.num_queries == 3
    assert result.mean == {"rr": 0.0}
