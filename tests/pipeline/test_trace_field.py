"""Exemplars whose trace ids come from a field of the retrieval events (`exemplars.trace_id_field`).

Query ids here are never trace ids; the events carry a `trace_id` field of their own, in
every spelling the two readers meet: a trace id (read by the compiled scanner), one written
with an escape or given twice (declined by the scanner, read by msgspec), and values that are
no trace id (a number, upper case, null, absent). An engine's exemplars are those of its
final queries by their fields' trace ids, computed from scratch; the same with msgspec
reading every message; across a snapshot and a resume, and when partitions move. Without
the setting, the same traffic has no exemplar.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

import pytest

from ragstream.events import Message
from ragstream.pipeline.engine import Engine
from ragstream.pipeline.exemplars import Exemplars, capture
from ragstream.pipeline.partition_tally import merge_exemplars_of
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from tests.pipeline.test_partition_state import PARTITIONS, START, WALL, _config, hand_over

FIELD = "trace_id"


def _trace_id(query_id: str) -> str:
    """A trace id of the query's own (32 lowercase hex digits, not all zero)."""
    return f"{zlib.crc32(query_id.encode()) | 1:08x}" * 4


def _with_field(value: bytes, index: int) -> tuple[bytes, str | None]:
    """A retrieval event's message with its trace field in one of seven spellings, and the
    trace id it gives its query (None: none)."""
    event = json.loads(value)
    trace = _trace_id(event["query_id"])
    kind = index % 7
    text = json.dumps(event, separators=(",", ":"))[:-1]  # without the closing brace
    if kind == 0:  # a trace id: the scanner's
        return f'{text},"{FIELD}":"{trace}"}}'.encode(), trace
    if kind == 1:  # escaped: msgspec's
        return f'{text},"{FIELD}":"\\u00{ord(trace[0]):02x}{trace[1:]}"}}'.encode(), trace
    if kind == 2:  # given twice: the last counts (msgspec's)
        return f'{text},"{FIELD}":"{"0" * 32}","{FIELD}":"{trace}"}}'.encode(), trace
    if kind == 3:  # not a string
        return f'{text},"{FIELD}":{int(trace[:8], 16)}}}'.encode(), None
    if kind == 4:  # upper case: no trace id
        return f'{text},"{FIELD}":"{trace.upper()}"}}'.encode(), None
    if kind == 5:  # null, first of the unknown fields
        return f'{text},"{FIELD}":null,"other":"{trace}"}}'.encode(), None
    return value, None  # absent


def _traffic(n: int) -> tuple[list[Message], dict[str, str | None]]:
    """Synthetic traffic (query ids `q-...`, a drop after 30 s) with trace fields, and each
    retrieval's trace id."""
    config = SyntheticConfig(seed=4, rate=5.0, start=START, drift_at=30.0)
    messages, traces = [], {}
    for i, e in enumerate(SyntheticTraffic(config).take(n)):
        value = e.value
        if json.loads(value)["type"] == "retrieval":
            value, traces[e.key.decode()] = _with_field(value, i)
        messages.append(Message(value, zlib.crc32(e.key) % PARTITIONS, i, "t", e.key))
    return messages, traces


def _engine(**overrides: Any) -> Engine:
    options: dict[str, Any] = {"trace_id_field": FIELD, **overrides}
    config = _config(report_final=True, final_unlabeled=False, label_ttl=20.0, **options)
    return Engine(config, wall=lambda: WALL)


def _run(engine: Engine, messages: list[Message], batch: int = 100) -> list[Any]:
    final = []
    for start in range(0, len(messages), batch):
        final += engine.apply(messages[start : start + batch]).final
    return final + engine.finish()


def test_exemplars_carry_the_fields_trace_ids_as_a_reference_computes_them() -> None:
    messages, traces = _traffic(900)
    engine = _engine()
    final = _run(engine, messages)
    layout = engine.layout
    columns = [i for i, c in enumerate(layout.plain) if c in layout.hist_columns]
    expected: dict[tuple[str, ...], Exemplars] = {}
    for query in final:  # from scratch: every final query with labels, one at a time
        assert query.contribution is not None
        row = query.contribution[None, : len(layout.plain)]
        held = expected.setdefault(query.labelset, {})
        capture([(held, row, [query.ts], [traces[query.query_id]])], columns, engine.spec.edges())
    assert engine.exemplars == expected
    exemplars = [e for held in expected.values() for e in held.values()]
    assert len(exemplars) > 3 * len(columns)  # several label sets and buckets
    given = {t for t in traces.values() if t is not None}
    assert {e.trace_id for e in exemplars} <= given
    by_kind = {i % 7 for i, t in enumerate(traces.values()) if t in {e.trace_id for e in exemplars}}
    assert by_kind & {1, 2}, "no exemplar of a message msgspec read"


def test_msgspec_alone_gives_the_same_exemplars() -> None:
    messages, _ = _traffic(600)
    scanned, decoded = _engine(), _engine(scan=False)
    _run(scanned, messages)
    _run(decoded, messages)
    assert scanned.exemplars
    assert decoded.exemplars == scanned.exemplars


def test_queries_without_a_field_trace_id_fall_back_to_ids_that_are_trace_ids() -> None:
    config = SyntheticConfig(seed=5, rate=5.0, start=START, drift_at=30.0, trace_ids=True)
    messages, fields = [], {}
    for i, e in enumerate(SyntheticTraffic(config).take(900)):
        value = e.value
        if json.loads(value)["type"] == "retrieval" and i % 2 == 0:  # half carry the field
            value, fields[e.key.decode()] = _with_field(value, 0)
        messages.append(Message(value, zlib.crc32(e.key) % PARTITIONS, i, "t", e.key))
    engine = _engine()
    final = _run(engine, messages)
    kept = {e.trace_id for held in engine.exemplars.values() for e in held.values()}
    by_field = set(fields.values())
    ids = {q.query_id for q in final} - fields.keys()
    assert kept & by_field  # both kinds of queries have exemplars
    assert kept & ids
    assert kept <= by_field | ids  # a query with a field trace id is never kept by its id
    assert not kept & fields.keys()


def test_without_the_setting_query_ids_that_are_no_trace_ids_give_no_exemplar() -> None:
    messages, _ = _traffic(600)
    engine = _engine(trace_id_field=None)
    _run(engine, messages)
    assert engine.exemplars == {}
    assert all(s.join is None or s.join.table.traces is None for s in engine.partitions.values())


def test_the_trace_ids_of_open_queries_survive_a_snapshot_and_a_resume() -> None:
    messages, _ = _traffic(900)
    straight = _engine()
    _run(straight, messages)
    first = _engine()
    for start in range(0, 500, 100):
        first.apply(messages[start : start + 100])
    snapshot = json.loads(json.dumps(first.snapshot(), allow_nan=False))
    joins = [record["join"] for record in snapshot["partitions"].values()]
    assert any(join is not None and join.get("traces") for join in joins)
    resumed = Engine.restore(first.config, snapshot, wall=lambda: WALL)
    _run(resumed, messages[500:])
    assert resumed.exemplars == straight.exemplars
    assert json.dumps(resumed.snapshot()) == json.dumps(straight.snapshot())


def test_the_trace_ids_of_open_queries_move_with_their_partitions() -> None:
    messages, _ = _traffic(900)
    reference = _engine()
    _run(reference, messages)
    first, second = _engine(), _engine()
    for start in range(0, 500, 100):
        first.apply(messages[start : start + 100])
    moved = hand_over(first, second, messages, 500)
    assert all(state["join"]["traces"] for state in moved)  # open queries' trace ids move
    first.finish()
    second.finish()
    by_replica = merge_exemplars_of([first.partitions[2].tally, *second._tallies()])
    assert by_replica == reference.exemplars


@pytest.mark.parametrize("name", ["query_id", "results", "type", ""])
def test_a_field_of_the_schema_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="trace id field"):
        _engine(trace_id_field=name)
