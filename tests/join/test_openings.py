"""`Openings`: the batch `LabelJoin.open` takes, cut as a whole."""

from __future__ import annotations

import json

from ragstream.events import DecodedRetrieval, decode_event
from ragstream.events.scanner import Scanned
from ragstream.join import Openings


def _events(n: int) -> tuple[list[Scanned | DecodedRetrieval], list[bytes]]:
    raws = [
        json.dumps({"type": "retrieval", "query_id": f"q{i}", "ts": i, "results": []}).encode()
        for i in range(n)
    ]
    events: list[Scanned | DecodedRetrieval] = [
        e for e in map(decode_event, raws) if isinstance(e, DecodedRetrieval)
    ]
    assert len(events) == n
    return events, raws


def test_a_slice_cuts_every_field_alike() -> None:
    events, raws = _events(5)
    labelsets: list[tuple[str, ...]] = [(f"app{i}",) for i in range(5)]
    times = [float(i) for i in range(5)]
    traces = [None, "a", None, "b", "c"]
    batch = Openings(events, labelsets, times, raws, traces)
    assert len(batch) == 5
    part = batch.slice(1, 4)
    assert len(part) == 3
    assert [e.query_id for e in part.events] == ["q1", "q2", "q3"]
    assert part.labelsets == labelsets[1:4]
    assert part.times == [1.0, 2.0, 3.0]
    assert part.raws == raws[1:4]
    assert part.traces == ["a", None, "b"]
    untraced = Openings(events, labelsets, times, raws, None).slice(3, 5)
    assert untraced.traces is None
    assert [e.query_id for e in untraced.events] == ["q3", "q4"]
    assert len(batch.slice(5, 5)) == 0
