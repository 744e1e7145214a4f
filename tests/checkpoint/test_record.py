"""State records: compressed, chunked, reassembled from a compacted log; bad ones refused."""

from __future__ import annotations

import json
import os
import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.checkpoint import PartitionSnapshot, RefusedSnapshotError, SnapshotLog, encode
from ragstream.checkpoint.record import Chunk, chunk_keys, head_key


def _snapshot(partition: int = 2, state: Any = None) -> PartitionSnapshot:
    return PartitionSnapshot(
        partition=partition,
        offsets={"events": 120, "feedback": 7},
        state={"series": list(range(50))} if state is None else state,
        taken_at=1_767_225_600.5,
        writer="replica-a",
    )


def _log(partitions: set[int], *records: list[Chunk]) -> SnapshotLog:
    log = SnapshotLog(partitions)
    for chunks in records:
        for c in chunks:
            log.add(c.key, c.value, c.headers)
    return log


def test_a_small_snapshot_is_one_head_record() -> None:
    chunks = encode(_snapshot(), "s1", 1 << 20)
    assert len(chunks) == 1
    head = chunks[0]
    assert head.key == b"2"
    assert dict(head.headers) == {"ragstream.snapshot": b"s1", "ragstream.chunks": b"1"}
    assert head.value is not None
    payload = json.loads(zlib.decompress(head.value))
    assert payload["format"] == 1
    assert payload["offsets"] == {"events": 120, "feedback": 7}
    assert _log({2}, chunks).snapshot(2) == _snapshot()


def test_a_large_snapshot_is_cut_into_chunks_written_before_the_head() -> None:
    state = {"noise": os.urandom(30_000).hex()}  # incompressible: ~60 kB of hex, ~30 kB zipped
    chunks = encode(_snapshot(state=state), "big", 4096)
    assert len(chunks) > 8
    assert all(len(c.value or b"") <= 4096 for c in chunks)
    assert chunks[-1].key == head_key(2)
    assert [c.key for c in chunks[:-1]] == chunk_keys(2, "big", len(chunks))
    assert chunks[0].key == b"2/big/1"
    assert _log({2}, chunks).snapshot(2) == _snapshot(state=state)


@settings(max_examples=60, deadline=None)
@given(
    state=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=30),
        lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
        max_leaves=40,
    ),
    chunk_bytes=st.integers(1, 300),
)
def test_any_state_round_trips_whatever_the_chunk_size(state: Any, chunk_bytes: int) -> None:
    snapshot = _snapshot(state={"x": state})
    chunks = encode(snapshot, "id", chunk_bytes)
    assert all(len(c.value or b"") <= chunk_bytes for c in chunks)
    assert _log({2}, chunks).snapshot(2) == snapshot


def test_the_latest_head_wins_and_other_partitions_are_ignored() -> None:
    old = encode(_snapshot(state={"v": 1}), "a", 8)
    new = encode(_snapshot(state={"v": 2}), "b", 8)
    elsewhere = encode(_snapshot(partition=5, state={"v": 3}), "c", 8)
    log = _log({2}, old, elsewhere, new)
    found = log.snapshot(2)
    assert found is not None
    assert found.state == {"v": 2}
    assert log.snapshot(5) is None  # not wanted, not kept
    assert set(log.heads()) == {2}
    assert log.heads()[2] == ("b", len(new))


def test_tombstones_of_superseded_chunks_leave_the_latest_intact() -> None:
    old = encode(_snapshot(state={"v": "x" * 400}), "a", 16)
    new = encode(_snapshot(state={"v": "y" * 400}), "b", 16)
    tombstones = [Chunk(c.key, None) for c in old[:-1]]
    log = _log({2}, old, new, tombstones)
    found = log.snapshot(2)
    assert found is not None
    assert found.state == {"v": "y" * 400}


def test_a_head_without_its_chunks_is_refused_as_incomplete() -> None:
    chunks = encode(_snapshot(state={"v": "z" * 500}), "a", 16)
    with pytest.raises(RefusedSnapshotError) as info:
        _log({2}, chunks[1:]).snapshot(2)  # the first chunk never arrived
    assert info.value.reason == "incomplete"


def test_a_deleted_head_means_no_snapshot() -> None:
    log = _log({2}, encode(_snapshot(), "a", 100), [Chunk(b"2", None)])
    assert log.snapshot(2) is None


ONE = (("ragstream.snapshot", b"a"), ("ragstream.chunks", b"1"))


@pytest.mark.parametrize(
    ("value", "headers", "reason"),
    [
        (b"not zlib", ONE, "corrupt"),
        (zlib.compress(b"[1, 2]"), ONE, "format"),
        (zlib.compress(b'{"format": 2}'), ONE, "format"),
        (zlib.compress(b'{"format": 1}'), ONE, "corrupt"),
        (zlib.compress(b'{"format": 1}'), (), "corrupt"),
        (  # a state that is not an object: refused here, not when it is adopted
            zlib.compress(
                b'{"format": 1, "partition": 0, "offsets": {}, "state": [1], "taken_at": 1}'
            ),
            ONE,
            "corrupt",
        ),
    ],
)
def test_unreadable_records_are_refused_with_a_reason(
    value: bytes, headers: tuple[tuple[str, bytes], ...], reason: str
) -> None:
    log = SnapshotLog({0})
    log.add(b"0", value, headers)
    with pytest.raises(RefusedSnapshotError) as info:
        log.snapshot(0)
    assert info.value.reason == reason
