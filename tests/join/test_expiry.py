"""The expiry queue against a sorted list: same ids, same order, whatever the push order."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.join.expiry import ExpiryQueue

# a step: push a time (mostly increasing, sometimes earlier), pop one, or pop all due at t
_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("push"), st.integers(-5, 20)),
        st.tuples(st.just("pop"), st.just(0)),
        st.tuples(st.just("due"), st.integers(-5, 40)),
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(steps=_STEPS)
def test_same_order_as_a_sorted_list(steps: list[tuple[str, int]]) -> None:
    queue, reference = ExpiryQueue(), []
    clock = 0
    for i, (op, value) in enumerate(steps):
        if op == "push":
            clock += max(value, 0) if value % 3 else -value  # runs in order, some earlier
            queue.push(float(clock), f"q{i}")
            reference.append((float(clock), i, f"q{i}"))
            reference.sort()
        elif op == "pop":
            if reference:
                assert queue.pop() == reference.pop(0)[2]
        else:
            due = [entry[2] for entry in reference if entry[0] < value]
            assert queue.pop_due(float(value)) == due
            reference = reference[len(due) :]
        assert len(queue) == len(reference)


def test_ties_leave_in_push_order_across_both_parts() -> None:
    queue = ExpiryQueue()
    queue.push(5.0, "a")  # in order
    queue.push(3.0, "b")  # earlier than the last: the heap
    queue.push(5.0, "c")  # in order again
    queue.push(3.0, "d")  # the heap
    assert queue.pop_due(5.0) == ["b", "d"]
    assert queue.pop() == "a"
    assert queue.pop_due(6.0) == ["c"]
    assert len(queue) == 0
