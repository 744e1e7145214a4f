"""rr, precision, recall, hit rate and average precision on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from ragstream.metrics import (
    RankingBatch,
    average_precision,
    hit_rate,
    precision,
    recall,
    reciprocal_rank,
)

# Ranks 1..5: a judged non-relevant doc (0), a 2, an unjudged doc, a 1, a 3. The query has
# one more relevant doc (grade 1) that was not retrieved: 4 judged relevant in all.
MAIN = ([0, 2, 0, 1, 3], [0, 2, 1, 3, 1])
NEGATIVE = ([-1, 2, 0, 1], [-1, 2, 1])  # a negative grade at rank 1
NONE_RELEVANT = ([0, 0, -1], [0, -1])
EMPTY_RANKING: tuple[list[int], list[int]] = ([], [2, 1])
NOTHING_JUDGED: tuple[list[int], list[int]] = ([0, 0, 0], [])
SHORT = ([1], [1])


def _batch(*cases: tuple[list[int], list[int]]) -> RankingBatch:
    return RankingBatch.from_lists([c[0] for c in cases], [c[1] for c in cases])


ALL = _batch(MAIN, NEGATIVE, NONE_RELEVANT, EMPTY_RANKING, NOTHING_JUDGED, SHORT)


def test_reciprocal_rank_is_one_over_the_first_relevant_rank_without_cutoff() -> None:
    np.testing.assert_array_equal(reciprocal_rank(ALL), [1 / 2, 1 / 2, 0, 0, 0, 1])
    late = _batch(([0] * 40 + [1], [1]))
    np.testing.assert_array_equal(reciprocal_rank(late), [1 / 41])


@pytest.mark.parametrize(
    ("k", "expected"),
    [
        (1, [0, 0, 0, 0, 0, 1]),
        (3, [1 / 3, 1 / 3, 0, 0, 0, 1 / 3]),
        (5, [3 / 5, 2 / 5, 0, 0, 0, 1 / 5]),
        (10, [3 / 10, 2 / 10, 0, 0, 0, 1 / 10]),
    ],
)
def test_precision_divides_by_k_even_when_fewer_were_retrieved(
    k: int, expected: list[float]
) -> None:
    np.testing.assert_allclose(precision(ALL, k), expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize(
    ("k", "expected"),
    [
        (1, [0, 0, 0, 0, 0, 1]),
        (3, [1 / 4, 1 / 2, 0, 0, 0, 1]),
        (5, [3 / 4, 1, 0, 0, 0, 1]),
        (100, [3 / 4, 1, 0, 0, 0, 1]),
    ],
)
def test_recall_counts_all_judged_relevant_and_is_zero_without_any(
    k: int, expected: list[float]
) -> None:
    np.testing.assert_allclose(recall(ALL, k), expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize(
    ("k", "expected"),
    [(1, [0, 0, 0, 0, 0, 1]), (2, [1, 1, 0, 0, 0, 1]), (50, [1, 1, 0, 0, 0, 1])],
)
def test_hit_rate_is_one_when_any_relevant_is_in_the_top_k(k: int, expected: list[float]) -> None:
    np.testing.assert_array_equal(hit_rate(ALL, k), expected)


def test_average_precision_divides_by_the_number_of_judged_relevant() -> None:
    # MAIN: relevant at ranks 2, 4, 5 -> (1/2 + 2/4 + 3/5) / 4
    # NEGATIVE: relevant at ranks 2, 4 -> (1/2 + 2/4) / 2
    expected = [(1 / 2 + 2 / 4 + 3 / 5) / 4, (1 / 2 + 2 / 4) / 2, 0, 0, 0, 1]
    np.testing.assert_allclose(average_precision(ALL), expected, rtol=1e-15)


def test_a_higher_threshold_makes_lower_grades_non_relevant() -> None:
    b = _batch(MAIN)
    assert reciprocal_rank(b, threshold=3)[0] == 1 / 5
    assert precision(b, 5, threshold=2)[0] == 2 / 5
    assert recall(b, 5, threshold=2)[0] == 1.0  # judged with grade >= 2: the 2 and the 3
    assert hit_rate(b, 4, threshold=3)[0] == 0.0
    assert average_precision(b, threshold=2)[0] == pytest.approx((1 / 2 + 2 / 5) / 2)


def test_fractional_grades_are_compared_with_the_threshold() -> None:
    b = RankingBatch.from_lists([[0.5, 1.5]], [[0.5, 1.5]])
    assert reciprocal_rank(b)[0] == 0.5
    assert reciprocal_rank(b, threshold=0.5)[0] == 1.0


@pytest.mark.parametrize("threshold", [0.0, -1.0, float("nan"), float("inf")])
def test_threshold_must_be_positive_because_unjudged_documents_have_grade_zero(
    threshold: float,
) -> None:
    with pytest.raises(ValueError, match="threshold"):
        precision(ALL, 5, threshold=threshold)


@pytest.mark.parametrize("k", [0, -1, True, 2.0])
def test_cutoff_must_be_a_positive_integer(k: int) -> None:
    with pytest.raises(ValueError, match="cutoff"):
        precision(ALL, k)
    with pytest.raises(ValueError, match="cutoff"):
        recall(ALL, k)


def test_weighted_forms_use_the_weights_of_the_relevant_documents() -> None:
    # ranks: grade 1 (w 0.5), unjudged (w 1), grade 2 (w 0.25); one more judged doc, grade 3
    b = RankingBatch.from_lists([[1, 0, 2]], [[1, 2, 3]], [[0.5, 1.0, 0.25]], [[0.5, 0.25, 0.8]])
    assert reciprocal_rank(b)[0] == 0.5
    assert precision(b, 2)[0] == 0.25
    assert precision(b, 3)[0] == pytest.approx(0.75 / 3)
    assert recall(b, 3)[0] == pytest.approx(0.75 / 1.55)
    assert hit_rate(b, 1)[0] == 1.0  # weights ignored
    assert average_precision(b)[0] == pytest.approx((1 + 2 / 3) / 3)  # weights ignored


def test_weighted_rr_takes_the_weight_at_the_first_relevant_rank() -> None:
    b = RankingBatch.from_lists([[0, 2, 1]], [[2, 1]], [[0.9, 0.3, 1.0]], [[0.3, 1.0]])
    assert reciprocal_rank(b)[0] == 0.3 / 2
