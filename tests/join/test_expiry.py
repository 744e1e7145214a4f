"""The expiry queue against a sorted list: same ids, same order, whatever the push order."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.join.expiry import ExpiryQueue

# a step: push a time (mostly increasing, sometimes earlier), pop one, or pop all due at t
_PUSH = st.tuples(st.just("push"), st.integers(-5, 20))
_POP = st.tuples(st.just("pop"), st.just(0))
_STEPS = st.lists(
    st.one_of(_PUSH, _POP, st.tuples(st.just("due"), st.integers(-5, 40))), max_size=80
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
                assert queue.pop()[1] == reference.pop(0)[2]
        else:
            due = [entry[2] for entry in reference if entry[0] < value]
            assert queue.pop_due(float(value))[1] == due
            reference = reference[len(due) :]
        assert len(queue) == len(reference)


def test_ties_leave_in_push_order_across_both_parts() -> None:
    queue = ExpiryQueue()
    queue.push(5.0, "a")  # in order
    queue.push(3.0, "b")  # earlier than the last: the heap
    queue.push(5.0, "c")  # in order again
    queue.push(3.0, "d")  # the heap
    assert queue.pop_due(5.0) == ([3.0, 3.0], ["b", "d"])
    assert queue.pop() == (5.0, "a")
    assert queue.pop_due(6.0) == ([5.0], ["c"])
    assert len(queue) == 0


# a step as above, or a run of times pushed together (`push_many`), or a timed pop
_MORE_STEPS = st.lists(
    st.one_of(
        _PUSH,
        st.tuples(st.just("many"), st.lists(st.integers(-3, 6), max_size=12)),
        _POP,
        st.tuples(st.just("due"), st.integers(-5, 60)),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(steps=_MORE_STEPS)
def test_runs_pushed_together_pop_as_pushed_one_by_one(steps: list[tuple[str, Any]]) -> None:
    # push_many (in order or not), pop and pop_due with their times against a sorted list
    queue, reference = ExpiryQueue(), []
    clock, n = 0, 0
    for op, value in steps:
        if op in ("push", "many"):
            steps_of = [value] if op == "push" else value
            times, ids = [], []
            for step in steps_of:
                clock += max(step, 0) if step % 3 else -step
                times.append(float(clock))
                ids.append(f"q{n}")
                reference.append((float(clock), n, f"q{n}"))
                n += 1
            if op == "push":
                queue.push(times[0], ids[0])
            else:
                queue.push_many(times, ids)
            reference.sort()
        elif op == "pop":
            if reference:
                expires_at, _, query_id = reference.pop(0)
                assert queue.pop() == (expires_at, query_id)
        else:
            due = [entry for entry in reference if entry[0] < value]
            assert queue.pop_due(float(value)) == (
                [entry[0] for entry in due],
                [entry[2] for entry in due],
            )
            reference = reference[len(due) :]
        assert len(queue) == len(reference)
        assert queue.ids() == [entry[2] for entry in reference]


def test_the_fifo_is_cut_as_it_is_read_and_keeps_its_order() -> None:
    # many more entries than the compaction threshold, read in slices
    queue = ExpiryQueue()
    queue.push_many([float(t) for t in range(20_000)], [f"q{t}" for t in range(20_000)])
    for start in range(0, 20_000, 3_000):
        times, ids = queue.pop_due(float(start + 3_000))
        assert ids == [f"q{t}" for t in range(start, min(start + 3_000, 20_000))]
        assert times == [float(t) for t in range(start, min(start + 3_000, 20_000))]
    assert len(queue) == 0
    queue.push(5.0, "late")  # an empty FIFO takes any time
    assert queue.pop() == (5.0, "late")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 6), max_size=8), st.integers(0, 8)), max_size=30))
def test_many_overlapping_runs_with_ties_pop_in_time_then_push_order(
    steps: list[tuple[list[int], int]],
) -> None:
    # runs of a few times out of a handful, so that runs overlap and tie often
    queue, reference, n = ExpiryQueue(), [], 0
    for times, due in steps:
        ids = [f"q{n + i}" for i in range(len(times))]
        queue.push_many([float(t) for t in times], ids)
        reference += [(float(t), n + i, ids[i]) for i, t in enumerate(times)]
        n += len(times)
        reference.sort()
        out = [entry for entry in reference if entry[0] < due]
        assert queue.pop_due(float(due)) == ([e[0] for e in out], [e[2] for e in out])
        reference = reference[len(out) :]
        assert queue.ids() == [entry[2] for entry in reference]
        assert len(queue) == len(reference)
