"""Label sets: only configured keys, values capped to `other` and counted."""

from __future__ import annotations

import pytest

from ragstream.pipeline.labelsets import OTHER, LabelSetMapper


def test_only_configured_keys_in_order_and_missing_as_empty() -> None:
    mapper = LabelSetMapper(["app", "index"], 50)
    assert mapper({"index": "v7", "app": "support", "tenant": "x"}) == ("support", "v7")
    assert mapper({"app": "search"}) == ("search", "")
    assert mapper(None) == ("", "")
    assert LabelSetMapper([], 50)({"app": "x"}) == ()


def test_values_beyond_the_cap_collapse_to_other_and_are_counted() -> None:
    mapper = LabelSetMapper(["app"], max_values=2)
    assert [mapper({"app": v}) for v in ["a", "b", "c", "a", "d", "b"]] == [
        ("a",),
        ("b",),
        (OTHER,),
        ("a",),
        (OTHER,),
        ("b",),
    ]
    assert mapper.collapsed == {"app": 2}


def test_snapshot_keeps_the_admitted_values() -> None:
    mapper = LabelSetMapper(["app"], max_values=1)
    mapper({"app": "a"})
    mapper({"app": "b"})
    restored = LabelSetMapper(["app"], max_values=1)
    restored.restore_state(mapper.snapshot())
    assert restored({"app": "b"}) == (OTHER,)
    assert restored({"app": "a"}) == ("a",)
    assert restored.collapsed == {"app": 2}


@pytest.mark.parametrize("max_values", [1, 3, 50])
def test_known_sets_give_what_the_values_give(
    max_values: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lookup of admitted label sets changes no result and no count: a mapper with it
    and one without map the same stream alike, restored state included."""
    import random

    from ragstream.pipeline import labelsets

    rng = random.Random(max_values)
    pool = ["a", "b", "c", "d", "other", ""]
    stream = [
        {k: rng.choice(pool) for k in ("app", "index", "x") if rng.random() < 0.8}
        for _ in range(3000)
    ]
    results = []
    for cap in (0, 4096):  # never remembered; remembered
        monkeypatch.setattr(labelsets, "_KNOWN_SETS", cap)
        mapper = LabelSetMapper(("app", "index"), max_values)
        partition: dict[str, int] = {}
        out = [mapper(labels, partition) for labels in stream[:2000]]
        restored = LabelSetMapper(("app", "index"), max_values)
        restored.restore_state(mapper.snapshot())
        out += [restored(labels, partition) for labels in stream[2000:]]
        results.append((out, dict(mapper.collapsed), dict(restored.collapsed), partition))
    assert results[0] == results[1]
    assert sum(results[1][3].values()) > 0 or max_values == 50  # the cap was reached


@pytest.mark.parametrize("max_values", [1, 3, 50])
def test_the_values_as_the_scanner_reads_them_give_what_the_labels_give(max_values: int) -> None:
    """`of_values` (the compiled scanner's tuple of the keys' values, "" where absent) maps
    a stream as `__call__` maps its labels: the same sets, the same counts."""
    import random

    rng = random.Random(max_values)
    pool = ["a", "b", "c", "d", "other", ""]
    stream = [
        {k: rng.choice(pool) for k in ("app", "index", "x") if rng.random() < 0.8}
        for _ in range(2000)
    ]
    keys = ("app", "index")
    by_labels, by_values = LabelSetMapper(keys, max_values), LabelSetMapper(keys, max_values)
    counted: tuple[dict[str, int], dict[str, int]] = ({}, {})
    out = [by_labels(labels, counted[0]) for labels in stream]
    values = [tuple(labels.get(k, "") for k in keys) for labels in stream]
    assert [by_values.of_values(v, counted[1]) for v in values] == out
    assert by_values.collapsed == by_labels.collapsed
    assert counted[0] == counted[1]
    assert by_values.snapshot() == by_labels.snapshot()
    assert sum(counted[0].values()) > 0 or max_values == 50  # the cap was reached
