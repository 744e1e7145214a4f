"""dcg and ndcg on hand-computed cases: linear and exponential gain, negative grades, ideal."""

from __future__ import annotations

from math import log2

import numpy as np
import pytest

from ragstream.metrics import RankingBatch, dcg, ndcg

MAIN = RankingBatch.from_lists([[0, 2, 0, 1, 3]], [[0, 2, 1, 3, 1]])


@pytest.mark.parametrize(
    ("k", "expected"),
    [
        (1, 0.0),
        (2, 2 / log2(3)),
        (4, 2 / log2(3) + 1 / log2(5)),
        (5, 2 / log2(3) + 1 / log2(5) + 3 / log2(6)),
        (10, 2 / log2(3) + 1 / log2(5) + 3 / log2(6)),
    ],
)
def test_dcg_linear_sums_grade_over_log2_rank_plus_one(k: int, expected: float) -> None:
    assert dcg(MAIN, k)[0] == pytest.approx(expected, rel=1e-15)


def test_dcg_exponential_uses_two_to_the_grade_minus_one() -> None:
    expected = 3 / log2(3) + 1 / log2(5) + 7 / log2(6)
    assert dcg(MAIN, 5, gain="exponential")[0] == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize(
    ("k", "ideal"),
    [
        (1, 3.0),
        (3, 3 + 2 / log2(3) + 1 / 2),
        (5, 3 + 2 / log2(3) + 1 / 2 + 1 / log2(5)),
        (10, 3 + 2 / log2(3) + 1 / 2 + 1 / log2(5)),
    ],
)
def test_ndcg_ideal_ranks_all_judged_documents_including_unretrieved_ones(
    k: int, ideal: float
) -> None:
    assert ndcg(MAIN, k)[0] == pytest.approx(dcg(MAIN, k)[0] / ideal, rel=1e-14)


def test_ndcg_exponential_uses_the_exponential_gain_for_the_ideal_too() -> None:
    ideal = 7 + 3 / log2(3) + 1 / 2 + 1 / log2(5)
    expected = (3 / log2(3) + 1 / log2(5) + 7 / log2(6)) / ideal
    assert ndcg(MAIN, 5, gain="exponential")[0] == pytest.approx(expected, rel=1e-14)


def test_negative_grades_give_no_gain_and_no_ideal_place_as_in_trec_eval() -> None:
    # The value trec_eval (pytrec_eval) gives for this query: ndcg_cut_5 = 0.6433224083306327.
    b = RankingBatch.from_lists([[-1, 2, 0, 1]], [[-1, 2, 1]])
    assert dcg(b, 5)[0] == pytest.approx(2 / log2(3) + 1 / log2(5), rel=1e-15)
    assert ndcg(b, 5)[0] == pytest.approx(0.6433224083306327, abs=1e-15)
    only_negative = RankingBatch.from_lists([[-3, 1]], [[-3, 1]])
    assert ndcg(only_negative, 2)[0] == pytest.approx(1 / log2(3))
    assert dcg(only_negative, 2, gain="exponential")[0] == pytest.approx(1 / log2(3))


def test_zero_and_unjudged_grades_add_nothing() -> None:
    b = RankingBatch.from_lists([[0, 0, 1]], [[0, 1]])
    assert dcg(b, 3)[0] == pytest.approx(1 / 2)
    assert ndcg(b, 3)[0] == pytest.approx(1 / 2)


@pytest.mark.parametrize(
    ("ranking", "judged"),
    [([0, 0], [0, -1]), ([], [2]), ([], []), ([1, 2], []), ([0], [0, 0, 0])],
)
def test_ndcg_is_zero_when_ideal_is_zero_or_nothing_is_retrieved(
    ranking: list[int], judged: list[int]
) -> None:
    b = RankingBatch.from_lists([ranking], [judged])
    assert ndcg(b, 5)[0] == 0.0
    assert ndcg(b, 5, gain="exponential")[0] == 0.0


def test_ndcg_is_one_for_the_ideal_ranking_and_k_beyond_the_list() -> None:
    b = RankingBatch.from_lists([[3, 2, 1, 1]], [[1, 3, 1, 2, 0]])
    np.testing.assert_array_equal(ndcg(b, 1), [1.0])
    np.testing.assert_array_equal(ndcg(b, 4), [1.0])
    np.testing.assert_array_equal(ndcg(b, 1000), [1.0])


def test_short_list_against_a_long_ideal_uses_k_ideal_positions() -> None:
    b = RankingBatch.from_lists([[1]], [[1, 1, 1]])
    assert ndcg(b, 1)[0] == 1.0
    assert ndcg(b, 10)[0] == pytest.approx(1 / (1 + 1 / log2(3) + 1 / 2))


def test_many_grade_levels_and_fractional_grades_sort_the_ideal_correctly() -> None:
    # Integer levels above 16 and fractional grades take the general sorting path.
    for judged in ([20, 1, 17, 3], [0.5, 2.5, 1.5, 0.25]):
        ideal_order = sorted(judged, reverse=True)
        b = RankingBatch.from_lists([ideal_order[:2]], [judged])
        assert ndcg(b, 2)[0] == pytest.approx(1.0, rel=1e-15)
        ideal = sum(g / log2(i + 2) for i, g in enumerate(ideal_order[:3]))
        assert ndcg(b, 3)[0] == pytest.approx(dcg(b, 3)[0] / ideal, rel=1e-15)


def test_ideal_uses_a_partial_sort_when_rows_are_much_longer_than_k() -> None:
    rng = np.random.default_rng(7)
    judged = rng.random((3, 200)) * 3
    b = RankingBatch(judged[:, :1].copy(), np.array([1, 1, 0]), judged, np.array([200, 150, 5]))
    for row in range(2):
        top = np.sort(judged[row, : b.judged_length[row]])[::-1][:3]
        ideal = sum(g / log2(i + 2) for i, g in enumerate(top))
        assert ndcg(b, 3)[row] == pytest.approx(judged[row, 0] / ideal, rel=1e-14)


def test_weighted_dcg_and_ndcg_rank_the_ideal_by_weighted_gain() -> None:
    # ranks: grade 1 (w 0.5), unjudged (w 1), grade 2 (w 0.25); one more judged doc, grade 3
    b = RankingBatch.from_lists([[1, 0, 2]], [[1, 2, 3]], [[0.5, 1.0, 0.25]], [[0.5, 0.25, 0.8]])
    assert dcg(b, 3)[0] == pytest.approx(0.5 + 0.5 / 2)
    ideal = 2.4 + 0.5 / log2(3) + 0.5 / 2  # weighted gains 0.5, 0.5, 2.4 sorted
    assert ndcg(b, 3)[0] == pytest.approx(0.75 / ideal)


def test_unknown_gain_is_rejected() -> None:
    with pytest.raises(ValueError, match="gain"):
        dcg(MAIN, 5, gain="cubic")  # type: ignore[arg-type]
