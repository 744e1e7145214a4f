"""Metric names: parsing, canonical names, trec_eval names, and evaluate()."""

from __future__ import annotations

import numpy as np
import pytest

from ragstream.metrics import (
    DEFAULT_CUTOFFS,
    MetricSpec,
    RankingBatch,
    dcg,
    evaluate,
    ndcg,
    parse_metric,
    precision,
    reciprocal_rank,
    trec_name,
)


@pytest.mark.parametrize(
    ("text", "family", "k", "decayed", "canonical"),
    [
        ("ndcg@10", "ndcg", 10, False, "ndcg@10"),
        (" NDCG@10 ", "ndcg", 10, False, "ndcg@10"),
        ("ndcg_decayed@10", "ndcg", 10, True, "ndcg_decayed@10"),
        ("precision@5", "precision", 5, False, "precision@5"),
        ("P@5", "precision", 5, False, "precision@5"),
        ("p@5", "precision", 5, False, "precision@5"),
        ("P_5", "precision", 5, False, "precision@5"),
        ("precision_decayed@1", "precision", 1, True, "precision_decayed@1"),
        ("recall@10", "recall", 10, False, "recall@10"),
        ("recall_10", "recall", 10, False, "recall@10"),
        ("recall_decayed@3", "recall", 3, True, "recall_decayed@3"),
        ("hit_rate@3", "hit_rate", 3, False, "hit_rate@3"),
        ("success@1", "hit_rate", 1, False, "hit_rate@1"),
        ("success_5", "hit_rate", 5, False, "hit_rate@5"),
        ("hits@3", "hit_rate", 3, False, "hit_rate@3"),
        ("dcg@5", "dcg", 5, False, "dcg@5"),
        ("dcg_decayed@5", "dcg", 5, True, "dcg_decayed@5"),
        ("ndcg_cut_10", "ndcg", 10, False, "ndcg@10"),
        ("ndcg_cut@10", "ndcg", 10, False, "ndcg@10"),
        ("rr", "rr", None, False, "rr"),
        ("mrr", "rr", None, False, "rr"),
        ("MRR", "rr", None, False, "rr"),
        ("recip_rank", "rr", None, False, "rr"),
        ("rr_decayed", "rr", None, True, "rr_decayed"),
        ("mrr_decayed", "rr", None, True, "rr_decayed"),
        ("ap", "ap", None, False, "ap"),
        ("map", "ap", None, False, "ap"),
    ],
)
def test_parse_metric_accepts_canonical_names_and_common_aliases(
    text: str, family: str, k: int | None, decayed: bool, canonical: str
) -> None:
    spec = parse_metric(text)
    assert spec == MetricSpec(family, k, decayed)
    assert spec.name == canonical
    assert str(spec) == canonical
    assert parse_metric(spec.name) == spec


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ndcg", "needs a cutoff"),
        ("P", "needs a cutoff"),
        ("ndcg@", "invalid cutoff"),
        ("ndcg@0", "invalid cutoff"),
        ("ndcg@-1", "invalid cutoff"),
        ("ndcg@x", "invalid cutoff"),
        ("ndcg@1.5", "invalid cutoff"),
        ("ndcg@\u0661", "invalid cutoff"),  # a non-ASCII digit
        ("rr@10", "takes no cutoff"),
        ("map@10", "takes no cutoff"),
        ("foo@5", "unknown metric"),
        ("", "unknown metric"),
        ("ndcg_decayed_decayed@5", "unknown metric"),
        ("hit_rate_decayed@5", "no decayed form"),
        ("ap_decayed", "no decayed form"),
    ],
)
def test_parse_metric_rejects_bad_names_clearly(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_metric(text)


def test_unknown_names_list_what_is_accepted() -> None:
    with pytest.raises(ValueError, match=r"accepted: rr \(mrr\), ap \(map\), precision@k"):
        parse_metric("bleu")


@pytest.mark.parametrize(
    ("family", "k", "decayed", "message"),
    [
        ("ndcg", None, False, "needs an integer cutoff"),
        ("ndcg", 0, False, "needs an integer cutoff"),
        ("ndcg", True, False, "needs an integer cutoff"),
        ("rr", 5, False, "takes no cutoff"),
        ("ap", None, True, "no decayed form"),
        ("mrr", None, False, "unknown metric family"),
    ],
)
def test_metric_spec_validates_its_fields(
    family: str, k: int | None, decayed: bool, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        MetricSpec(family, k, decayed)


@pytest.mark.parametrize(
    ("text", "trec"),
    [
        ("rr", "recip_rank"),
        ("precision@5", "P_5"),
        ("recall@10", "recall_10"),
        ("ndcg@10", "ndcg_cut_10"),
        ("hit_rate@5", "success_5"),
        ("ap", "map"),
    ],
)
def test_trec_name(text: str, trec: str) -> None:
    assert trec_name(parse_metric(text)) == trec
    assert trec_name(text) == trec


@pytest.mark.parametrize("text", ["dcg@5", "ndcg_decayed@5", "rr_decayed", "recall_decayed@3"])
def test_trec_name_rejects_metrics_trec_eval_lacks(text: str) -> None:
    with pytest.raises(ValueError, match="trec_eval has no measure"):
        trec_name(text)


def test_default_cutoffs() -> None:
    assert DEFAULT_CUTOFFS == (1, 3, 5, 10)


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
    from ragstream.metrics import REGISTRY, MetricFamily, RankingDepth, ranking_depth

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
