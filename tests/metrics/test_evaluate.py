"""Batch evaluation: evaluate() against the kernels, and ranking_depth()."""

from __future__ import annotations

import numpy as np
import pytest

from ragstream.metrics import (
    REGISTRY,
    MetricFamily,
    MetricSpec,
    RankingBatch,
    RankingDepth,
    dcg,
    evaluate,
    ndcg,
    parse_metric,
    precision,
    ranking_depth,
    reciprocal_rank,
)

BATCH = RankingBatch.from_lists(
    [[0, 2, 0, 1, 3], [1], []],
    [[0, 2, 1, 3, 1], [1, 1], [2]],
    [[0.9, 0.8, 0.7, 0.6, 0.5], [0.5], []],
    [[0.9, 0.8, 0.4, 0.5, 0.3], [0.5, 1.0], [1.0]],
)


def test_evaluate_keys_by_canonical_name_in_the_given_order_and_matches_the_kernels() -> None:
    out = evaluate(BATCH, ["mrr", MetricSpec("ndcg", 3), "P@5", "dcg@10", "ndcg@3"])
    assert list(out) == ["rr", "ndcg@3", "precision@5", "dcg@10"]
    plain = BATCH.with_weights(None, None)
    np.testing.assert_array_equal(out["rr"], reciprocal_rank(plain))
    np.testing.assert_array_equal(out["ndcg@3"], ndcg(plain, 3))
    np.testing.assert_array_equal(out["precision@5"], precision(plain, 5))
    np.testing.assert_array_equal(out["dcg@10"], dcg(plain, 10))


def test_evaluate_uses_weights_only_for_decayed_metrics() -> None:
    out = evaluate(BATCH, ["dcg@5", "dcg_decayed@5", "ndcg_decayed@5", "rr_decayed"])
    np.testing.assert_array_equal(out["dcg@5"], dcg(BATCH.with_weights(None, None), 5))
    np.testing.assert_array_equal(out["dcg_decayed@5"], dcg(BATCH, 5))
    np.testing.assert_array_equal(out["ndcg_decayed@5"], ndcg(BATCH, 5))
    np.testing.assert_array_equal(out["rr_decayed"], reciprocal_rank(BATCH))
    assert not np.array_equal(out["dcg@5"], out["dcg_decayed@5"])


def test_evaluate_passes_gain_and_threshold() -> None:
    out = evaluate(BATCH, ["ndcg@5", "rr"], gain="exponential", threshold=3)
    plain = BATCH.with_weights(None, None)
    np.testing.assert_array_equal(out["ndcg@5"], ndcg(plain, 5, gain="exponential"))
    np.testing.assert_array_equal(out["rr"], reciprocal_rank(plain, threshold=3))


def test_evaluate_refuses_decayed_metrics_without_weights() -> None:
    with pytest.raises(ValueError, match="recency weights"):
        evaluate(BATCH.with_weights(None, None), ["ndcg@5", "ndcg_decayed@5"])
    with pytest.raises(ValueError, match="recency weights"):
        evaluate(BATCH.with_weights(None, None), ["rr_decayed"])


def test_evaluate_of_nothing_and_of_unknown_names() -> None:
    assert evaluate(BATCH, []) == {}
    with pytest.raises(ValueError, match="unknown metric"):
        evaluate(BATCH, ["ndcg@5", "bleu"])


def test_evaluate_results_do_not_share_memory() -> None:
    out = evaluate(BATCH, ["dcg@10", "dcg@20", "ndcg@10", "precision@10", "rr", "ap"])
    arrays = list(out.values())
    for i, a in enumerate(arrays):
        for b in arrays[i + 1 :]:
            assert not np.shares_memory(a, b)


def test_ranking_depth_reads_the_registry_rows() -> None:
    def depth(*names: str) -> RankingDepth | None:
        return ranking_depth([parse_metric(n) for n in names])

    assert depth("precision@5", "ndcg@10", "recall@3") == RankingDepth(10, False)
    assert depth("rr") == RankingDepth(1, True)
    assert depth("rr", "hit_rate@4", "dcg@2") == RankingDepth(4, True)
    assert depth("rr_decayed", "precision_decayed@3") == RankingDepth(3, True)
    assert depth("ap", "precision@5") is None  # average precision reads every rank
    assert depth() is None
    assert REGISTRY["rr"].reads == "to_first_relevant"
    assert REGISTRY["ap"].reads == "all"
    assert REGISTRY["ndcg"].reads == "top_k"
    with pytest.raises(ValueError, match="top k"):
        MetricFamily("nocut", REGISTRY["rr"].kernel, help="x", cutoff=False, reads="top_k")
