"""Invariants of the kernels on random queries, against from-scratch one-query references."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.metrics import Gain, RankingBatch, evaluate

from ._reference import (
    Query,
    batch_of,
    gain_of,
    queries,
    ref_ap,
    ref_dcg,
    ref_hit_rate,
    ref_ndcg,
    ref_precision,
    ref_recall,
    ref_rr,
)

CUTOFFS = (1, 2, 3, 5, 10, 20)
PLAIN = ["rr", "ap"] + [f"{f}@{k}" for f in ("precision", "recall", "hit_rate") for k in CUTOFFS]
GRADED = [f"{f}@{k}" for f in ("dcg", "ndcg") for k in CUTOFFS]
DECAYED = ["rr_decayed"] + [
    f"{f}_decayed@{k}" for f in ("precision", "recall", "dcg", "ndcg") for k in CUTOFFS
]
RATIOS = ["rr", "ap", "rr_decayed"] + [
    n for n in PLAIN + GRADED + DECAYED if not n.startswith("dcg") and "@" in n
]
ALL = PLAIN + GRADED + DECAYED
batches = st.lists(queries(), min_size=0, max_size=8)
gains: st.SearchStrategy[Gain] = st.sampled_from(["linear", "exponential"])
thresholds = st.sampled_from([1.0, 2.0, 0.5])


def _reference(q: Query, name: str, gain: Gain, thr: float) -> float:
    base, _, cutoff = name.partition("@")
    decayed = base.endswith("_decayed")
    family = base.removesuffix("_decayed")
    k = int(cutoff) if cutoff else 0
    if family == "rr":
        return ref_rr(q, decayed, thr)
    if family == "ap":
        return ref_ap(q, thr)
    if family == "precision":
        return ref_precision(q, k, decayed, thr)
    if family == "recall":
        return ref_recall(q, k, decayed, thr)
    if family == "hit_rate":
        return ref_hit_rate(q, k, thr)
    if family == "dcg":
        return ref_dcg(q, k, decayed, gain)
    return ref_ndcg(q, k, decayed, gain)


@settings(max_examples=80, deadline=None)
@given(qs=batches, gain=gains, thr=thresholds)
def test_every_metric_equals_the_from_scratch_reference(
    qs: list[Query], gain: Gain, thr: float
) -> None:
    out = evaluate(batch_of(qs, weighted=True), ALL, gain=gain, threshold=thr)
    for name in ALL:
        expected = [_reference(q, name, gain, thr) for q in qs]
        np.testing.assert_allclose(out[name], expected, rtol=1e-12, atol=1e-15, err_msg=name)


@settings(max_examples=80, deadline=None)
@given(qs=batches, gain=gains)
def test_ratio_metrics_lie_in_zero_one(qs: list[Query], gain: Gain) -> None:
    out = evaluate(batch_of(qs, weighted=True), RATIOS, gain=gain)
    for name in RATIOS:
        assert np.all(out[name] >= 0.0), name
        assert np.all(out[name] <= 1.0 + 1e-12), name


@settings(max_examples=60, deadline=None)
@given(qs=batches, gain=gains, decayed=st.booleans())
def test_the_ideal_ranking_has_ndcg_one(qs: list[Query], gain: Gain, decayed: bool) -> None:
    ideal_qs = []
    for q in qs:
        w = q.judged_weights if decayed else [1.0] * len(q.judged)
        order = sorted(
            range(len(q.judged)), key=lambda j: gain_of(q.judged[j], gain) * w[j], reverse=True
        )
        ideal_qs.append(
            Query(
                [q.judged[j] for j in order],
                q.judged,
                [q.judged_weights[j] for j in order],
                q.judged_weights,
            )
        )
    names = [f"ndcg{'_decayed' if decayed else ''}@{k}" for k in CUTOFFS]
    out = evaluate(batch_of(ideal_qs, weighted=True), names, gain=gain)
    for name in names:
        k = int(name.partition("@")[2])
        for i, q in enumerate(ideal_qs):
            has_gain = any(
                gain_of(g, gain) * (w if decayed else 1.0) > 0
                for g, w in zip(q.rels[:k], q.weights[:k], strict=True)
            )
            assert out[name][i] == (1.0 if has_gain else 0.0), (name, q)


@settings(max_examples=60, deadline=None)
@given(qs=batches, gain=gains, thr=thresholds)
def test_weights_of_one_give_exactly_the_plain_metrics(
    qs: list[Query], gain: Gain, thr: float
) -> None:
    b = batch_of(qs)
    ones = b.with_weights(np.ones_like(b.rel), np.ones_like(b.judged))
    out = evaluate(ones, DECAYED + PLAIN + GRADED, gain=gain, threshold=thr)
    for name in DECAYED:
        np.testing.assert_array_equal(out[name], out[name.replace("_decayed", "")], name)


@settings(max_examples=60, deadline=None)
@given(qs=batches, gain=gains)
def test_a_batch_equals_its_queries_one_by_one(qs: list[Query], gain: Gain) -> None:
    out = evaluate(batch_of(qs, weighted=True), ALL, gain=gain)
    for i, q in enumerate(qs):
        alone = evaluate(batch_of([q], weighted=True), ALL, gain=gain)
        for name in ALL:
            if name.startswith("recall_decayed"):  # a row sum whose order may follow padding
                np.testing.assert_allclose(out[name][i], alone[name][0], rtol=1e-14)
            else:
                assert out[name][i] == alone[name][0], name


@settings(max_examples=60, deadline=None)
@given(qs=batches, data=st.data())
def test_from_ragged_equals_from_lists(qs: list[Query], data: st.DataObject) -> None:
    lead = data.draw(st.integers(0, 3))  # values before the first offset are not read
    rel = [7.0] * lead + [r for q in qs for r in q.rels]
    weight = [7.0] * lead + [w for q in qs for w in q.weights]
    offsets = np.cumsum([lead] + [len(q.rels) for q in qs])
    judged = [j for q in qs for j in q.judged]
    judged_weight = [w for q in qs for w in q.judged_weights]
    judged_offsets = np.cumsum([0] + [len(q.judged) for q in qs])
    a = RankingBatch.from_ragged(rel, offsets, judged, judged_offsets, weight, judged_weight)
    b = batch_of(qs, weighted=True)
    for field in ("rel", "length", "judged", "judged_length", "weight", "judged_weight"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), field)
