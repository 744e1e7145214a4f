"""`ragstream eval` equals trec_eval (pytrec_eval's C code) to 1e-9 on every query.

No real TREC qrels/run pair can be fetched from the package registries this project may
use (the packages that evaluate TREC runs ship code, not collections; pytrec_eval's source
downloads trec_eval at build time), so the collections here are generated to look real:
graded judgments with many zeros, judged documents that were not retrieved, unjudged
retrieved documents, negative grades, tied and negative scores in several spellings,
files not sorted by query or by score, and queries on one side only.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from ragstream.trec import Engine, evaluate_files

WriteFile = Callable[[str, str | bytes], Path]
Reference = Callable[..., dict[str, dict[str, float]]]

METRICS = [
    "rr",
    "ap",
    "precision@1",
    "precision@5",
    "precision@10",
    "precision@100",
    "recall@5",
    "recall@10",
    "recall@1000",
    "ndcg@1",
    "ndcg@5",
    "ndcg@10",
    "ndcg@1000",
    "hit_rate@1",
    "hit_rate@5",
    "hit_rate@10",
]


def _collection(seed: int) -> tuple[str, str]:
    rng = random.Random(seed)
    qrels: list[str] = []
    run: list[str] = []
    for q in range(60):
        qid = str(rng.choice([q, 1000 + q, f"q{q}"]))
        pool = [f"doc{rng.randrange(400)}" for _ in range(rng.randrange(0, 60))]
        pool = list(dict.fromkeys(pool))
        if rng.random() > 0.1:  # judged query
            for doc in rng.sample(pool, k=len(pool) // 2) + [f"other{q}-{i}" for i in range(3)]:
                grade = rng.choices([0, 1, 2, 3, -1], weights=[50, 25, 12, 8, 5])[0]
                qrels.append(f"{qid} 0 {doc} {grade}\n")
        if rng.random() > 0.1:  # retrieved query
            for rank, doc in enumerate(pool, 1):
                score = rng.choice([round(rng.uniform(-5, 5), 1), rng.uniform(-1e3, 1e3)])
                text = rng.choice(["{}", "{:.6e}", "{:.2f}", "{:g}"]).format(score)
                run.append(f"{qid} Q0 {doc} {rank} {text} sys\n")
    rng.shuffle(run)  # neither query nor rank order: the tool must sort
    return "".join(qrels), "".join(run)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("level", [1, 2])
@pytest.mark.parametrize("engine", ["compiled", "numpy"])
def test_per_query_values_equal_trec_eval(
    write: WriteFile, trec_eval: Reference, seed: int, level: int, engine: Engine
) -> None:
    qrels_text, run_text = _collection(seed)
    qrels, run = write("qrels", qrels_text), write("run", run_text)
    expected = trec_eval(qrels, run, METRICS, relevance_level=level)
    ours = evaluate_files(qrels, run, METRICS, relevance_level=level, engine=engine)
    assert set(ours.qids) == set(expected)
    for name in (spec.name for spec in ours.metrics):
        for i, qid in enumerate(ours.qids):
            assert ours.per_query[name][i] == pytest.approx(expected[qid][name], abs=1e-9), (
                name,
                qid,
            )
        mean = sum(v[name] for v in expected.values()) / len(expected)
        assert ours.mean[name] == pytest.approx(mean, abs=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_complete_mean_counts_missing_qrels_queries_as_zero(
    write: WriteFile, trec_eval: Reference, seed: int
) -> None:
    qrels_text, run_text = _collection(100 + seed)
    qrels, run = write("qrels", qrels_text), write("run", run_text)
    expected = trec_eval(qrels, run, METRICS)
    n_qrels = len({line.split()[0] for line in qrels_text.splitlines()})
    ours = evaluate_files(qrels, run, METRICS, complete=True)
    assert ours.num_queries == n_qrels
    for name in (spec.name for spec in ours.metrics):
        mean = sum(v[name] for v in expected.values()) / n_qrels
        assert ours.mean[name] == pytest.approx(mean, abs=1e-9)
