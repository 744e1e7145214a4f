"""Label sets: only configured keys, values capped to `other` and counted."""

from __future__ import annotations

from ragstream.pipeline.labelsets import OTHER, LabelSetMapper


def test_only_configured_keys_in_order_and_missing_as_empty() -> None:
    mapper = LabelSetMapper(["app", "index"])
    assert mapper({"index": "v7", "app": "support", "tenant": "x"}) == ("support", "v7")
    assert mapper({"app": "search"}) == ("search", "")
    assert mapper(None) == ("", "")
    assert LabelSetMapper([])({"app": "x"}) == ()


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
