"""RankingBatch: padding, CSR input, validation."""

from __future__ import annotations

import numpy as np
import pytest

from ragstream.metrics import RankingBatch, evaluate


def test_from_lists_pads_with_zeros_and_records_lengths() -> None:
    b = RankingBatch.from_lists([[1, 2], [], [3]], [[1], [2, 0, 1], []])
    np.testing.assert_array_equal(b.rel, [[1, 2], [0, 0], [3, 0]])
    np.testing.assert_array_equal(b.length, [2, 0, 1])
    np.testing.assert_array_equal(b.judged, [[1, 0, 0], [2, 0, 1], [0, 0, 0]])
    np.testing.assert_array_equal(b.judged_length, [1, 3, 0])
    assert b.rel.dtype == np.float64
    assert b.length.dtype == np.int64
    assert b.weight is None
    assert b.judged_weight is None
    assert b.num_queries == 3
    assert not b.has_weights


def test_from_ragged_reads_rows_between_offsets_even_when_they_do_not_start_at_zero() -> None:
    rel = np.array([9.0, 1.0, 2.0, 3.0, 9.0])
    judged = np.array([4.0, 5.0])
    weight = np.array([9.0, 0.1, 0.2, 0.3, 9.0])
    b = RankingBatch.from_ragged(
        rel, [1, 3, 3, 4], judged, [0, 1, 1, 2], weight, np.array([0.4, 0.5])
    )
    np.testing.assert_array_equal(b.rel, [[1, 2], [0, 0], [3, 0]])
    np.testing.assert_array_equal(b.length, [2, 0, 1])
    np.testing.assert_array_equal(b.judged, [[4], [0], [5]])
    assert b.weight is not None
    assert b.judged_weight is not None
    np.testing.assert_array_equal(b.weight, [[0.1, 0.2], [0, 0], [0.3, 0]])
    np.testing.assert_array_equal(b.judged_weight, [[0.4], [0], [0.5]])


def test_empty_batch_gives_empty_results() -> None:
    b = RankingBatch.from_lists([], [])
    assert b.rel.shape == (0, 0)
    out = evaluate(b, ["rr", "ap", "precision@5", "recall@5", "hit_rate@5", "ndcg@5", "dcg@5"])
    assert all(v.shape == (0,) for v in out.values())


def test_with_weights_replaces_only_the_weights() -> None:
    b = RankingBatch.from_lists([[1, 0]], [[1]])
    w = b.with_weights([[0.5, 0.25]], [[0.5]])
    assert w.has_weights
    np.testing.assert_array_equal(w.rel, b.rel)
    assert w.weight is not None
    np.testing.assert_array_equal(w.weight, [[0.5, 0.25]])
    assert not w.with_weights(None, None).has_weights


def test_padding_content_is_never_read() -> None:
    rel = np.array([[0.0, 1.0], [2.0, 0.0]])
    judged = np.array([[1.0, 2.0], [2.0, 0.0]])
    lengths, judged_lengths = np.array([2, 1]), np.array([2, 1])
    clean = RankingBatch(rel, lengths, judged, judged_lengths)
    dirty = RankingBatch(
        np.array([[0.0, 1.0], [2.0, 7.0]]),
        lengths,
        np.array([[1.0, 2.0], [2.0, 5.0]]),
        judged_lengths,
    )
    names = ["rr", "ap", "precision@2", "recall@2", "hit_rate@2", "ndcg@2", "dcg@2"]
    a, b = evaluate(clean, names), evaluate(dirty, names)
    for name in names:
        np.testing.assert_array_equal(a[name], b[name], name)
    assert b["ndcg@2"][1] == 1.0


def test_batches_compare_by_identity() -> None:
    b = RankingBatch.from_lists([[1]], [[1]])
    assert b == b
    assert b != RankingBatch.from_lists([[1]], [[1]])
    assert len({b, b}) == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rel": np.zeros(3)}, "2-D"),
        ({"judged": np.zeros((3, 1))}, "rows"),
        ({"length": np.array([3, 0])}, r"\[0, 2\]"),
        ({"length": np.array([-1, 0])}, r"\[0, 2\]"),
        ({"length": np.array([1.0, 0.0])}, "integers"),
        ({"length": np.array([1])}, "shape"),
        ({"judged_length": np.array([2, 0])}, r"\[0, 1\]"),
        ({"weight": np.ones((2, 2))}, "both"),
        ({"weight": np.ones((2, 3)), "judged_weight": np.ones((2, 1))}, "weight has shape"),
        ({"weight": np.ones((2, 2)), "judged_weight": np.ones((2, 2))}, "judged_weight has"),
    ],
)
def test_constructor_rejects_inconsistent_arrays(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {
        "rel": np.zeros((2, 2)),
        "length": np.array([2, 1]),
        "judged": np.zeros((2, 1)),
        "judged_length": np.array([1, 0]),
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        RankingBatch(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("rel_offsets", "judged_offsets", "message"),
    [
        ([0, 2, 1], [0, 0, 0], "non-decreasing"),
        ([0, 1, 5], [0, 0, 0], "offsets end"),
        ([0, 1], [0, 0, 0], "rows"),
        ([], [], "Q \\+ 1"),
        ([0.0, 1.0], [0, 0], "integers"),
    ],
)
def test_from_ragged_rejects_bad_offsets(
    rel_offsets: list[float], judged_offsets: list[int], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        RankingBatch.from_ragged([1.0, 2.0], rel_offsets, [], judged_offsets)


def test_from_lists_needs_one_judged_list_per_ranking() -> None:
    with pytest.raises(ValueError, match="2 rankings but 1 judged"):
        RankingBatch.from_lists([[1], [2]], [[1]])
