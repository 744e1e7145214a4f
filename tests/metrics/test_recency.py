"""Recency weights, effective document times, mean document age, and live decay over t."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.metrics import (
    RankingBatch,
    decay_rate,
    effective_doc_time,
    evaluate,
    mean_doc_age,
    mean_doc_ages,
    recency_weight,
)

from ._reference import Query, batch_of, queries

NAN = float("nan")


def test_decay_rate_is_ln2_over_the_half_life() -> None:
    assert decay_rate(3600) == math.log(2) / 3600
    assert decay_rate(math.inf) == 0.0


@pytest.mark.parametrize("half_life", [0.0, -5.0, NAN])
def test_decay_rate_rejects_non_positive_half_lives(half_life: float) -> None:
    with pytest.raises(ValueError, match="half-life"):
        decay_rate(half_life)


def test_a_document_one_half_life_old_weighs_one_half() -> None:
    lam = decay_rate(60.0)
    w = recency_weight(np.array([[1000.0, 940.0, 880.0, 1060.0]]), 1000.0, lam)
    np.testing.assert_allclose(w, [[1.0, 0.5, 0.25, 1.0]], rtol=1e-15)


def test_effective_time_fills_missing_with_ts_and_clamps_future_to_ts() -> None:
    t_doc = np.array([[100.0, NAN, 300.0], [NAN, 50.0, 999.0]])
    out = effective_doc_time(t_doc, np.array([200.0, 60.0]))
    np.testing.assert_array_equal(out, [[100.0, 200.0, 200.0], [60.0, 50.0, 60.0]])
    np.testing.assert_array_equal(effective_doc_time([NAN, 5.0, 20.0], 10.0), [10.0, 5.0, 10.0])


def test_effective_time_needs_finite_event_times_of_a_matching_shape() -> None:
    with pytest.raises(ValueError, match="finite"):
        effective_doc_time([[1.0]], [NAN])
    with pytest.raises(ValueError, match="one value per row"):
        effective_doc_time([[1.0, 2.0, 3.0]], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="one value per row"):
        recency_weight([[1.0, 2.0]], [1.0, 2.0], 0.1)


def test_no_weight_exceeds_one_even_for_future_documents() -> None:
    eff = effective_doc_time(np.array([[5000.0, NAN, 10.0]]), np.array([100.0]))
    w = recency_weight(eff, 100.0, decay_rate(30.0))
    assert float(w.max()) == 1.0
    np.testing.assert_allclose(w, [[1.0, 1.0, 0.125]], rtol=1e-15)


def test_recency_weight_takes_one_read_time_per_row() -> None:
    lam = decay_rate(10.0)
    w = recency_weight(np.array([[0.0, 10.0], [0.0, 10.0]]), np.array([10.0, 20.0]), lam)
    np.testing.assert_allclose(w, [[0.5, 1.0], [0.25, 0.5]], rtol=1e-15)


def test_zero_rate_gives_weights_of_exactly_one() -> None:
    w = recency_weight(np.array([[0.0, -1e12, 7.0]]), 1e9, 0.0)
    np.testing.assert_array_equal(w, np.ones((1, 3)))


@pytest.mark.parametrize("lam", [-1.0, NAN, math.inf])
def test_recency_weight_rejects_bad_rates(lam: float) -> None:
    with pytest.raises(ValueError, match="decay rate"):
        recency_weight([[0.0]], 1.0, lam)


def test_mean_doc_age_averages_the_top_min_k_n_and_is_nan_without_documents() -> None:
    t_doc = np.array([[10.0, 20.0, 30.0], [5.0, 0.0, 0.0], [0.0, 0.0, 0.0], [50.0, 0.0, 0.0]])
    out = mean_doc_age(t_doc, np.array([3, 1, 0, 1]), 2, 40.0)
    np.testing.assert_array_equal(out[:2], [25.0, 35.0])
    assert math.isnan(out[2])
    assert out[3] == 0.0  # a document newer than the read time has age 0, not negative
    np.testing.assert_array_equal(
        mean_doc_age(t_doc[:2], np.array([3, 1]), 10, np.array([40.0, 6.0])), [20.0, 1.0]
    )


def test_mean_doc_age_of_a_batch_without_columns() -> None:
    out = mean_doc_age(np.zeros((2, 0)), np.array([0, 0]), 5, 1.0)
    assert out.shape == (2,)
    assert np.isnan(out).all()


@pytest.mark.parametrize(
    ("length", "k", "message"),
    [([1], 0, "cutoff"), ([1, 1], 1, "length"), ([2], 1, "length")],
)
def test_mean_doc_age_validates_inputs(length: list[int], k: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mean_doc_age(np.zeros((1, 1)), np.array(length), k, 1.0)


def test_hand_computed_decayed_metrics_from_document_times() -> None:
    # Retrieval event at ts = 900, read at t = 1000, half-life 100 s. Ranked: grade 1 dated
    # in the future (1200, clamped to 900: w 1/2), an unjudged doc without t_doc, grade 2
    # from 800 (w 1/4). One more judged doc, grade 3, without t_doc (dates from 900: w 1/2).
    lam = decay_rate(100.0)
    ts = np.array([900.0])
    ranked = effective_doc_time(np.array([[1200.0, NAN, 800.0]]), ts)
    judged = effective_doc_time(np.array([[1200.0, 800.0, NAN]]), ts)
    np.testing.assert_array_equal(ranked, [[900.0, 900.0, 800.0]])
    b = RankingBatch.from_lists([[1, 0, 2]], [[1, 2, 3]]).with_weights(
        recency_weight(ranked, 1000.0, lam), recency_weight(judged, 1000.0, lam)
    )
    names = ["rr_decayed", "precision_decayed@3", "recall_decayed@3"]
    out = evaluate(b, [*names, "dcg_decayed@3", "ndcg_decayed@3"])
    assert out["rr_decayed"][0] == pytest.approx(0.5, rel=1e-15)
    assert out["precision_decayed@3"][0] == pytest.approx(0.75 / 3, rel=1e-15)
    assert out["recall_decayed@3"][0] == pytest.approx(0.75 / 1.25, rel=1e-15)
    assert out["dcg_decayed@3"][0] == pytest.approx(0.5 + 0.5 / 2, rel=1e-15)
    ideal = 1.5 + 0.5 / math.log2(3) + 0.5 / 2  # weighted gains 0.5, 0.5, 1.5 sorted
    assert out["ndcg_decayed@3"][0] == pytest.approx(0.75 / ideal, rel=1e-15)


RATIO = ["ndcg_decayed@1", "ndcg_decayed@3", "ndcg_decayed@10", "recall_decayed@3"]
SUMS = ["dcg_decayed@3", "dcg_decayed@10", "precision_decayed@3", "rr_decayed"]


@st.composite
def _timed_queries(draw: st.DrawFn) -> tuple[list[Query], list[list[float]], list[list[float]]]:
    qs = draw(st.lists(queries(), min_size=1, max_size=6))
    times = st.floats(0.0, 5000.0)
    ranked_t = [draw(st.lists(times, min_size=len(q.rels), max_size=len(q.rels))) for q in qs]
    judged_t = [draw(st.lists(times, min_size=len(q.judged), max_size=len(q.judged))) for q in qs]
    return qs, ranked_t, judged_t


def _weighted(
    qs: list[Query], ranked_t: list[list[float]], judged_t: list[list[float]], t: float, lam: float
) -> RankingBatch:
    b = batch_of(qs)
    r = RankingBatch.from_lists(ranked_t, judged_t)
    return b.with_weights(recency_weight(r.rel, t, lam), recency_weight(r.judged, t, lam))


@settings(max_examples=60, deadline=None)
@given(
    data=_timed_queries(),
    half_life=st.floats(100.0, 1e5),  # at most 150 half-lives: weights stay normal floats
    dt=st.floats(0.0, 1e4),
)
def test_ratio_metrics_stay_put_over_read_time_while_sum_metrics_decay(
    data: tuple[list[Query], list[list[float]], list[list[float]]], half_life: float, dt: float
) -> None:
    qs, ranked_t, judged_t = data
    lam = decay_rate(half_life)
    t1 = 5000.0  # not before any document time, so every age grows by exactly dt
    early = evaluate(_weighted(qs, ranked_t, judged_t, t1, lam), RATIO + SUMS)
    late = evaluate(_weighted(qs, ranked_t, judged_t, t1 + dt, lam), RATIO + SUMS)
    factor = math.exp(-lam * dt)
    for name in RATIO:
        np.testing.assert_allclose(late[name], early[name], rtol=1e-9, atol=1e-12, err_msg=name)
    for name in SUMS:
        np.testing.assert_allclose(
            late[name], early[name] * factor, rtol=1e-9, atol=1e-300, err_msg=name
        )


def test_sum_metrics_halve_after_one_half_life_and_ratio_metrics_do_not_move() -> None:
    qs = [Query([2.0, 0.0, 1.0], [2.0, 1.0, 3.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0])]
    ranked_t, judged_t = [[100.0, 0.0, 400.0]], [[100.0, 400.0, 250.0]]
    lam = decay_rate(600.0)
    a = evaluate(_weighted(qs, ranked_t, judged_t, 1000.0, lam), RATIO + SUMS)
    b = evaluate(_weighted(qs, ranked_t, judged_t, 1600.0, lam), RATIO + SUMS)
    for name in SUMS:
        assert b[name][0] == pytest.approx(a[name][0] / 2, rel=1e-12)
        assert a[name][0] > 0
    for name in RATIO:
        assert b[name][0] == pytest.approx(a[name][0], rel=1e-12)
        assert 0 < a[name][0] < 1


@settings(max_examples=100, deadline=None)
@given(
    st.integers(0, 12),
    st.integers(0, 8),
    st.lists(st.integers(1, 15), min_size=1, max_size=5),
    st.integers(0, 2**32 - 1),
)
def test_mean_doc_ages_equal_one_call_per_cutoff(
    rows: int, width: int, cutoffs: list[int], seed: int
) -> None:
    """Every cutoff at once gives, bit for bit, what one cutoff at a time gives, and what
    the definition gives summed left to right in plain Python."""
    rng = np.random.default_rng(seed)
    doc = rng.uniform(0.0, 1_000.0, size=(rows, width))
    length = rng.integers(0, width + 1, size=rows)
    t = rng.uniform(500.0, 1_500.0, size=rows)
    together = mean_doc_ages(doc, length, cutoffs, t)
    assert together.shape == (rows, len(cutoffs))
    for c, k in enumerate(cutoffs):
        np.testing.assert_array_equal(together[:, c], mean_doc_age(doc, length, k, t))
        for q in range(rows):
            n = min(k, int(length[q]))
            total = 0.0
            for j in range(n):
                total += max(0.0, float(t[q]) - float(doc[q, j]))
            want = total / n if n else math.nan
            assert repr(float(together[q, c])) == repr(want)
