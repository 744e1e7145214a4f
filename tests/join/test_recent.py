"""The final-id memory against the ordered dict it replaces: same ids, times and order."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.join.recent import RecentFinal

_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(st.integers(-4, 10), max_size=10)),
        st.tuples(st.just("forget"), st.integers(-5, 80)),
    ),
    max_size=50,
)


@settings(max_examples=300, deadline=None)
@given(steps=_STEPS, cap=st.integers(1, 25))
def test_same_as_an_ordered_dict_with_running_close_times(
    steps: list[tuple[str, Any]], cap: int
) -> None:
    recent, reference = RecentFinal(cap), OrderedDict[str, float]()
    clock, n = 0, 0
    for op, value in steps:
        if op == "add":
            ids, times = [], []
            for step in value:
                clock += step  # mostly later, sometimes earlier
                ids.append(f"q{n}")
                times.append(float(clock))
                n += 1
            recent.add(ids, times)
            last = next(reversed(reference.values()), float("-inf"))
            for query_id, closed in zip(ids, times, strict=True):  # the old loop
                last = max(last, closed)
                reference[query_id] = last
            while len(reference) > cap:
                reference.popitem(last=False)
        else:
            while reference and next(iter(reference.values())) < value:
                reference.popitem(last=False)
            recent.forget_before(float(value))
        assert recent.items() == list(reference.items())
        assert len(recent) == len(reference)
        assert all(query_id in recent for query_id in reference)
        assert recent.last() == next(reversed(reference.values()), float("-inf"))


def test_many_ids_leave_from_the_front_past_the_compaction_threshold() -> None:
    recent = RecentFinal(100_000)
    recent.add([f"q{t}" for t in range(10_000)], [float(t) for t in range(10_000)])
    recent.forget_before(9_000.0)
    assert len(recent) == 1_000
    assert "q8999" not in recent
    assert "q9000" in recent
    assert recent.items()[0] == ("q9000", 9000.0)
