"""Conformance with trec_eval itself (pytrec_eval wraps its C code) on random graded data."""

from __future__ import annotations

import numpy as np
import pytest
import pytrec_eval

from ragstream.metrics import RankingBatch, evaluate, parse_metric, trec_name

CUTOFFS = (1, 3, 5, 10, 15, 20, 30, 100)
MEASURES = {
    "recip_rank",
    "map",
    "P." + ",".join(map(str, CUTOFFS)),
    "recall." + ",".join(map(str, CUTOFFS)),
    "ndcg_cut." + ",".join(map(str, CUTOFFS)),
    "success." + ",".join(map(str, CUTOFFS)),
}
NAMES = ["rr", "ap"] + [
    f"{family}@{k}" for family in ("precision", "recall", "ndcg", "hit_rate") for k in CUTOFFS
]
DEFAULT_MEASURES = {"recip_rank", "P", "recall", "ndcg_cut", "success", "map"}
DEFAULT_NAMES = ["rr", "ap", "hit_rate@1"] + [
    f"{family}@{k}" for family in ("precision", "recall", "ndcg") for k in (5, 10, 15, 20, 30, 100)
]

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]


def _random_collection(seed: int, queries: int) -> tuple[Qrels, Run, RankingBatch]:
    """Random qrels (grades -1..4, some queries without judgments or without relevant docs)
    and runs (0..120 docs, judged and unjudged mixed), with our batch built from them."""
    rng = np.random.default_rng(seed)
    qrels: Qrels = {}
    run: Run = {}
    rankings: list[list[float]] = []
    judged: list[list[float]] = []
    for q in range(queries):
        qid = f"q{q}"
        pool = [f"d{i}" for i in range(int(rng.integers(0, 150)))]
        n_judged = int(rng.integers(0, len(pool) + 1))
        judged_ids = rng.permutation(len(pool))[:n_judged]
        top_grade = int(rng.integers(0, 5))
        grades = {pool[i]: int(rng.integers(-1, top_grade + 1)) for i in judged_ids}
        ranked = [pool[i] for i in rng.permutation(len(pool))[: int(rng.integers(0, 121))]]
        if grades:
            qrels[qid] = grades
        run[qid] = {doc: float(len(ranked) - r) for r, doc in enumerate(ranked)}  # rank order
        rankings.append([float(grades.get(doc, 0)) for doc in ranked])
        judged.append([float(g) for g in grades.values()])
    return qrels, run, RankingBatch.from_lists(rankings, judged)


def _compare(
    qrels: Qrels, run: Run, batch: RankingBatch, measures: set[str], names: list[str]
) -> int:
    reference = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    ours = evaluate(batch, names)
    compared = 0
    for row, qid in enumerate(run):
        if qid not in reference:  # trec_eval skips queries without judgments; ours give 0
            assert all(ours[name][row] == 0.0 for name in names)
            continue
        for name in names:
            expected = reference[qid][trec_name(parse_metric(name))]
            assert ours[name][row] == pytest.approx(expected, abs=1e-9), (qid, name)
            compared += 1
    return compared


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_all_measures_agree_with_trec_eval_per_query(seed: int) -> None:
    qrels, run, batch = _random_collection(seed, 150)
    assert _compare(qrels, run, batch, MEASURES, NAMES) > 100 * len(NAMES)


def test_trec_eval_default_cutoffs_agree_too() -> None:
    qrels, run, batch = _random_collection(3, 150)
    assert _compare(qrels, run, batch, DEFAULT_MEASURES, DEFAULT_NAMES) > 100


def test_the_means_over_queries_agree_with_trec_eval() -> None:
    qrels, run, batch = _random_collection(4, 200)
    reference = pytrec_eval.RelevanceEvaluator(qrels, MEASURES).evaluate(run)
    ours = evaluate(batch, NAMES)
    judged_rows = np.array([qid in qrels for qid in run])
    for name in NAMES:
        trec = trec_name(parse_metric(name))
        expected = np.mean([reference[qid][trec] for qid in reference])
        assert float(ours[name][judged_rows].mean()) == pytest.approx(expected, abs=1e-9), name


@pytest.mark.parametrize(
    ("grades", "ranking"),
    [
        ({"a": -1, "b": 2, "c": 1}, ["a", "b", "x", "c"]),  # negative grade retrieved first
        ({"a": -3, "b": 2}, ["b"]),  # a negative grade in the ideal
        ({"a": 0, "b": -1}, ["a", "b"]),  # nothing relevant
        ({"a": 1}, []),  # nothing retrieved
        ({"a": 0, "b": 1}, ["a", "b"]),  # a zero grade at the top
    ],
)
def test_edge_cases_agree_with_trec_eval(grades: dict[str, int], ranking: list[str]) -> None:
    run = {"q": {doc: float(len(ranking) - r) for r, doc in enumerate(ranking)}}
    batch = RankingBatch.from_lists(
        [[float(grades.get(doc, 0)) for doc in ranking]], [[float(g) for g in grades.values()]]
    )
    assert _compare({"q": grades}, run, batch, MEASURES, NAMES) == len(NAMES)
