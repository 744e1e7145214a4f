"""Windowed judge scores, Wilson intervals and judge labels."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.judging.model import JudgeError, Judgment
from ragstream.judging.results import judge_labels, wilson_interval
from tests.support import defaults

from ._helpers import item

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        (3, 10, 0.10779, 0.60323),
        (0, 10, 0.0, 0.27754),
        (10, 10, 0.72246, 1.0),
        (50, 100, 0.40383, 0.59617),
        (1, 1, 0.20654, 1.0),
    ],
)
def test_wilson_against_hand_computed_values(k: int, n: int, low: float, high: float) -> None:
    got = wilson_interval(k, n)
    assert got == pytest.approx((low, high), abs=1e-5)


def test_wilson_edge_cases() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(3, 2)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 10_000), st.data())
def test_wilson_bounds_solve_the_score_equation(n: int, data: st.DataObject) -> None:
    """Each bound p solves (p̂ - p)² = z² p (1 - p) / n (the interval's definition)."""
    k = data.draw(st.integers(1, n - 1)) if n > 1 else 0
    if n == 1:
        return
    p_hat, z = k / n, 1.96
    low, high = wilson_interval(k, n, z)
    assert low < p_hat < high
    for p in (low, high):
        assert (p_hat - p) ** 2 == pytest.approx(z * z * p * (1 - p) / n, rel=1e-9, abs=1e-15)


def _judgment(f: float | None, h: bool, ar: float = 1.0, cr: float | None = 0.5) -> Judgment:
    return Judgment(
        faithfulness=f,
        answer_relevance=ar,
        context_relevance=cr,
        hallucination=h,
        context_scores=(0.5, 0.5),
    )


def test_windows_hold_means_counts_and_the_hallucination_ratio() -> None:
    results = defaults.judge_results(
        labelset=lambda labels: (labels.get("app", ""),), windows=(60, 300)
    )
    x = item()
    at = [NOW - 200, NOW - 30, NOW - 10, NOW - 5]
    judgments = [
        _judgment(0.5, True),
        _judgment(1.0, False),
        _judgment(None, False, cr=None),  # no claims, no contexts: missing, not 0
        _judgment(0.0, True, ar=0.0),
    ]
    for ts, j in zip(at, judgments, strict=True):
        assert results.record(dataclasses.replace(x, ts=ts), j, NOW)
    results.record_failure(x, JudgeError("timeout"))
    reads = results.read(NOW, ("support",))
    one, five = reads["1m"], reads["5m"]
    assert one.judged == 3
    assert one.counts == {
        "faithfulness": 2,
        "answer_relevance": 3,
        "context_relevance": 2,
        "hallucination": 3,
        "refusal": 3,
    }
    assert one.refusals == 0
    assert one.refusal_ratio == 0.0
    assert one.means["faithfulness"] == pytest.approx(0.5)
    assert one.means["answer_relevance"] == pytest.approx(2 / 3)
    assert one.hallucinations == 1
    assert one.hallucination_ratio == pytest.approx(1 / 3)
    assert one.hallucination_interval == wilson_interval(1, 3)
    assert five.judged == 4
    assert five.means["faithfulness"] == pytest.approx(0.5)
    assert five.hallucination_ratio == 0.5
    assert results.failures == {"timeout": 1}  # counted, never averaged in
    assert results.read_all(NOW).keys() == {("support",)}


def test_empty_and_late() -> None:
    results = defaults.judge_results(windows=(60,))
    assert math.isnan(results.read(NOW, ())["1m"].hallucination_ratio)
    old = dataclasses.replace(item(), ts=NOW - 1000)
    assert results.record(old, _judgment(1.0, False), NOW) is False
    assert results.late == 1
    future = dataclasses.replace(item(), ts=NOW + 5)  # clamped to now
    assert results.record(future, _judgment(1.0, False), NOW)
    assert results.read(NOW, ())["1m"].judged == 1


def test_judge_labels_per_document() -> None:
    x = dataclasses.replace(item(), doc_ids=("d1", None, "d1", "d2"))
    j = dataclasses.replace(_judgment(1.0, False), context_scores=(0.2, 0.9, 0.7, 0.4))
    labels = judge_labels(x, j, threshold=0.5)
    assert [(lb.doc_id, lb.rel) for lb in labels] == [("d1", 1.0), ("d2", 0.0)]
    assert (labels[0].query_id, labels[0].ts) == ("q-1", x.ts)
