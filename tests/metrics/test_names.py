"""Metric names: parsing, canonical names, trec_eval names."""

from __future__ import annotations

import pytest

from ragstream.metrics import DEFAULT_CUTOFFS, MetricSpec, parse_metric, trec_name


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
