"""The table of open queries: rows by number, their contributions, the label map, the front
cut."""

from __future__ import annotations

import json
from array import array

import numpy as np
import pytest

from ragstream.events.limits import DEFAULT_LIMITS
from ragstream.events.scanner import AVAILABLE, Scanned, bounds_of, scan_retrievals
from ragstream.join import QueryTable, RowLabels

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="the compiled scanner is not built")

TS = 1_800_000_000.0


def _scanned(n: int, *, graded: bool = False) -> tuple[list[Scanned], list[bytes]]:
    raws = []
    for i in range(n):
        results = [{"doc_id": f"d{j}", "t_doc": TS - 10.0 * (i + j)} for j in range(3)]
        if graded and i % 2:
            results[1]["rel"] = 2
        event = {"type": "retrieval", "query_id": f"q{i}", "ts": TS + i, "results": results}
        raws.append(json.dumps(event).encode())
    records = scan_retrievals(raws, bounds_of(DEFAULT_LIMITS), graded=graded)
    assert all(r is not None for r in records)
    return records, raws  # type: ignore[return-value]


def _rows(table: QueryTable, n: int) -> int:
    events, raws = _scanned(n)
    ids = [e.query_id for e in events]
    tops = [e.top for e in events]
    return table.extend(ids, [()] * n, [TS + i for i in range(n)], raws, tops, events)


def test_rows_keep_their_numbers_and_contributions_through_the_cut() -> None:
    table = QueryTable(partition=4, ttl=60.0)
    first = _rows(table, 5000)
    assert first == 0
    fresh = table.take_fresh()
    assert fresh == range(5000)
    values = np.arange(5000 * 3, dtype=np.float64).reshape(5000, 3)
    table.store(fresh, values)
    later = _rows(table, 10)
    assert later == 5000
    assert table.contribution(later) is None  # not scored yet
    table.store(table.take_fresh(), np.full((10, 3), -1.0))
    table.close(list(range(4500)))
    table.compact()
    assert table.base == 4500
    assert len(table) == 510
    assert table.ids[0] == "q4500"
    contribution = table.contribution(4600)
    assert contribution is not None
    assert contribution.tolist() == values[4600].tolist()
    assert table.contribution(5003) is not None
    query = table.read(4600)  # read from its row: its id, time, expiry and row
    assert (query.query_id, query.ts, query.expires_at) == ("q4600", TS + 4600, TS + 4660)
    assert query.contribution is not None
    assert query.contribution.tolist() == values[4600].tolist()
    assert query.doc_ids == ("d0", "d1", "d2")  # decoded again from its message


def test_a_short_front_is_not_cut() -> None:
    table = QueryTable(partition=0, ttl=60.0)
    _rows(table, 100)
    table.store(table.take_fresh(), np.zeros((100, 2)))
    table.close(list(range(100)))
    table.compact()
    assert table.base == 0  # fewer closed rows than are worth a copy
    assert len(table) == 100


def test_rows_given_an_entry_are_not_scored_from_their_columns() -> None:
    table = QueryTable(partition=0, ttl=60.0)
    _rows(table, 3)
    entry = table.entry(1)
    entry.grade("d1", 1.0, None, "click")
    fresh = table.take_fresh()
    assert fresh == [0, 2]
    ts, tops, ranked, judged = table.columns(fresh)
    assert ts == [TS, TS + 2]
    assert [len(top) for top in tops] == [24, 24]  # three C doubles each
    assert ranked is None
    assert judged is None
    table.store(fresh, np.array([[1.0, 2.0], [5.0, 6.0]]))
    assert table.labels[1] is entry
    assert table.read(1).labels == {"d1": 1.0}
    assert table.labeled(1)
    assert not table.labeled(0)
    row = table.contribution(2)
    assert row is not None
    assert row.tolist() == [5.0, 6.0]


def test_graded_rows_are_labeled_and_decoded_with_their_labels() -> None:
    table = QueryTable(partition=0, ttl=60.0)
    events, raws = _scanned(4, graded=True)
    ids, tops = [e.query_id for e in events], [e.top for e in events]
    table.extend(ids, [()] * 4, [TS + i for i in range(4)], raws, tops, events)
    assert table.ranked is not None
    assert [table.labeled(row) for row in range(4)] == [False, True, False, True]
    assert table.read(1).labels == {"d1": 2.0}
    assert table.read(1).label_sources == {"inline": 1}
    added = table.add("x", (), b"", None, RowLabels(TS, TS + 60.0, (), array("d")))
    assert added == 4
    assert table.ranked[added] is None


def test_trace_ids_stay_with_their_rows_through_the_cut_and_entries() -> None:
    table = QueryTable(partition=1, ttl=60.0)
    _rows(table, 100)
    assert table.traces is None  # no row given one: no column
    assert table.trace(50) is None
    events, raws = _scanned(3000)
    traces = [None if i % 3 == 0 else f"{i + 1:032x}" for i in range(3000)]
    ids = [f"t{i}" for i in range(3000)]
    first = table.extend(
        ids, [()] * 3000, [TS] * 3000, raws, [e.top for e in events], events, traces
    )
    assert first == 100
    entry = RowLabels(TS, TS + 60.0, (), array("d"))
    row = table.add("x", (), b"", None, entry, "f" * 32)  # a row with its entry
    plain = table.add("y", (), b"", None, RowLabels(TS, TS + 60.0, (), array("d")))
    table.close(list(range(2000)))
    table.compact()
    assert table.base == 2000
    assert table.traces is not None
    assert len(table.traces) == len(table.ids)
    assert [table.trace(r) for r in range(2000, 3100)] == traces[1900:]
    assert (table.trace(row), table.trace(plain)) == ("f" * 32, None)
    table.entry(2500).grade("d1", 1.0, None, "click")  # a row given an entry keeps its trace
    assert table.trace(2500) == traces[2400]
