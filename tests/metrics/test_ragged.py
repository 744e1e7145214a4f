"""The compiled kernels over CSR rankings (`ragstream.metrics.ragged`) give the numpy
kernels' values bit for bit, on random rankings of every shape."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from ragstream.metrics import REGISTRY, MetricFamily, MetricSpec, RankingBatch, evaluate
from ragstream.metrics.ragged import ragged_plan
from ragstream.metrics.ranking import _precision

_F64 = NDArray[np.float64]
_I64 = NDArray[np.int64]

ALL = [
    "rr",
    "ap",
    *(
        f"{family}@{k}"
        for family in ("precision", "recall", "hit_rate", "dcg", "ndcg")
        for k in (1, 3, 5, 10, 20, 64)
    ),
]


def test_the_extension_is_built() -> None:
    assert ragged_plan(["rr"]) is not None


def test_the_compiled_families_are_the_rows_that_say_so() -> None:
    from ragstream.metrics import _ragged

    assert set(_ragged.FAMILIES) == {f.name for f in REGISTRY if f.compiled}


def _rankings(rng: np.random.Generator, queries: int, grades: str) -> tuple[_F64, _I64, _F64, _I64]:
    """CSR rankings: lengths 0-70 (some past every cutoff, some empty), judged 0-40."""
    lengths = rng.integers(0, 71, queries)
    lengths[rng.random(queries) < 0.1] = 0
    judged_lengths = rng.integers(0, 41, queries)

    def values(n: int) -> _F64:
        if grades == "levels":  # trec_eval's integer grades, negatives included
            return rng.integers(-2, 5, n).astype(np.float64)
        if grades == "quarters":  # ties between different documents' gains
            return rng.integers(-4, 13, n) / 4.0
        return rng.normal(1.0, 1.5, n)  # any double

    rel_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    judged_offsets = np.concatenate([[0], np.cumsum(judged_lengths)]).astype(np.int64)
    rel, judged = values(int(lengths.sum())), values(int(judged_lengths.sum()))
    return rel, rel_offsets, judged, judged_offsets


def _padded(values: _F64, offsets: _I64, extra: int) -> tuple[_F64, _I64]:
    """The rows as a matrix, `extra` columns wider than the longest, padding filled with
    values that would change any result that read them."""
    lengths = np.diff(offsets)
    width = int(lengths.max(initial=0)) + extra
    out = np.full((lengths.size, width), 7.0)
    for i, (start, n) in enumerate(zip(offsets[:-1], lengths, strict=True)):
        out[i, :n] = values[start : start + n]
    return out, lengths


def _numpy_values(
    arrays: tuple[_F64, _I64, _F64, _I64], metrics: list[str], threshold: float, extra: int
) -> dict[str, _F64]:
    rel, rel_offsets, judged, judged_offsets = arrays
    batch = RankingBatch(*_padded(rel, rel_offsets, extra), *_padded(judged, judged_offsets, extra))
    return evaluate(batch, metrics, threshold=threshold)


@pytest.mark.parametrize("grades", ["levels", "quarters", "normal"])
@pytest.mark.parametrize("threshold", [1.0, 2.0, 0.5])
def test_every_family_gives_numpys_bits(grades: str, threshold: float) -> None:
    rng = np.random.default_rng(hash((grades, threshold)) % 2**32)
    arrays = _rankings(rng, 400, grades)
    plan = ragged_plan(ALL, threshold=threshold)
    assert plan is not None
    compiled = plan.values(*arrays)
    assert compiled is not None
    for extra in (0, 9):  # the numpy kernels' padding does not change their values
        expected = _numpy_values(arrays, ALL, threshold, extra)
        for row, name in enumerate(plan.names):
            np.testing.assert_array_equal(
                compiled[row].view(np.int64), expected[name].view(np.int64), err_msg=name
            )


def test_metrics_in_any_order_and_one_at_a_time_agree() -> None:
    rng = np.random.default_rng(5)
    arrays = _rankings(rng, 200, "levels")
    together = ragged_plan(ALL[::-1])
    assert together is not None
    values = together.values(*arrays)
    assert values is not None
    for row, name in enumerate(together.names):
        alone = ragged_plan([name])
        assert alone is not None
        one = alone.values(*arrays)
        assert one is not None
        np.testing.assert_array_equal(one[0], values[row], err_msg=name)


def test_a_range_of_queries_is_the_slice_of_all() -> None:
    rng = np.random.default_rng(11)
    arrays = _rankings(rng, 300, "levels")
    plan = ragged_plan(["rr", "ndcg@10", "recall@5"])
    assert plan is not None
    whole = plan.values(*arrays)
    part = plan.values(*arrays, 37, 211)
    empty = plan.values(*arrays, 50, 50)
    assert whole is not None
    assert part is not None
    assert empty is not None
    np.testing.assert_array_equal(part, whole[:, 37:211])
    assert empty.shape == (3, 0)


def test_hand_computed_values() -> None:
    # one query: ranks grades 0, 2, 1, 0 (rank 2 first relevant); judged 2, 1, 3, 0
    rel = np.array([0.0, 2.0, 1.0, 0.0])
    judged = np.array([2.0, 1.0, 3.0, 0.0])
    offsets = np.array([0, 4], dtype=np.int64)
    metrics = ["rr", "ap", "precision@2", "recall@3", "hit_rate@1", "dcg@3", "ndcg@2"]
    plan = ragged_plan(metrics)
    assert plan is not None
    values = plan.values(rel, offsets, judged, offsets)
    assert values is not None
    dcg3 = 2 / np.log2(3) + 1 / np.log2(4)
    ndcg2 = (2 / np.log2(3)) / (3 + 2 / np.log2(3))
    expected = [0.5, (1 / 2 + 2 / 3) / 3, 1 / 2, 2 / 3, 0.0, dcg3, ndcg2]
    np.testing.assert_allclose(values[:, 0], expected, rtol=1e-15)


def test_a_grade_that_is_not_finite_declines() -> None:
    plan = ragged_plan(["ndcg@10"])
    assert plan is not None
    offsets = np.array([0, 2], dtype=np.int64)
    for bad in (np.nan, np.inf, -np.inf):
        assert plan.values(np.array([1.0, bad]), offsets, np.array([1.0, 0.0]), offsets) is None
        assert plan.values(np.array([1.0, 0.0]), offsets, np.array([bad, 0.0]), offsets) is None
    assert plan.values(np.array([1.0, 0.0]), offsets, np.array([1.0, 0.0]), offsets) is not None


def test_what_it_cannot_compute_is_left_to_numpy() -> None:
    assert ragged_plan(["ndcg@10"], gain="exponential") is None
    assert ragged_plan([MetricSpec("ndcg", 10, decayed=True)]) is None
    assert ragged_plan([]) is None
    family = MetricFamily("precision_twin", _precision, help="A family without a twin.")
    REGISTRY.add(family)
    try:
        assert ragged_plan(["precision_twin@5"]) is None
        assert ragged_plan(["precision@5"]) is not None
    finally:
        REGISTRY.remove("precision_twin")


def test_malformed_arrays_are_refused() -> None:
    from ragstream.metrics import _ragged

    plan = ragged_plan(["ndcg@10"])
    assert plan is not None
    rel = np.array([1.0, 0.0])
    with pytest.raises(ValueError, match="offsets"):
        plan.values(rel, np.array([0, 3], dtype=np.int64), rel, np.array([0, 2], dtype=np.int64))
    with pytest.raises(ValueError, match="offsets"):
        plan.values(rel, np.array([2, 1], dtype=np.int64), rel, np.array([0, 2], dtype=np.int64))
    out = np.empty(0)  # one metric of one query needs one value
    ks = np.array([10], dtype=np.int64)
    offsets = np.array([0, 2], dtype=np.int64).data
    arrays = (rel.data, offsets, rel.data, offsets)
    room = np.empty(2).data
    with pytest.raises(ValueError, match="too small"):
        _ragged.ragged(*arrays, plan.codes, ks.data, 1.0, plan.discount.data, out.data, 0, 1)
    with pytest.raises(ValueError, match="fewer discounts"):
        _ragged.ragged(*arrays, plan.codes, ks.data, 1.0, plan.discount[:3].data, room, 0, 1)
    no_cutoff = np.zeros(1, np.int64).data
    with pytest.raises(ValueError, match="takes a cutoff"):
        _ragged.ragged(*arrays, plan.codes, no_cutoff, 1.0, plan.discount.data, room, 0, 1)
    with pytest.raises(ValueError, match="unknown metric code"):
        _ragged.ragged(*arrays, b"\x63", ks.data, 1.0, plan.discount.data, room, 0, 1)
