"""Hostile messages among valid ones: the engine counts each by reason and goes on.

A message nested a thousand levels deep under a key the schema does not know used to raise
`RecursionError` out of `Engine.apply` (it ended `ragstream replay`, and on Kafka it would
stop the agent at every restart); invalid UTF-8 there was accepted. Now both are `bad_json`
on every decoding path of the engine (scanner, msgspec, the reference with tighter limits),
and the valid events of the same batches are applied exactly as without them.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from ragstream.events import Limits, Message
from ragstream.events.guard import MAX_DEPTH
from ragstream.pipeline.engine import Engine
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from tests.support.defaults import engine_config

WALL = 1_900_000_000.0
_FEEDBACK = b'{"type":"feedback","query_id":"q","ts":1700000000,"doc_id":"d","rel":1,"source":"x"'
HOSTILE = [
    _FEEDBACK + b',"x":' + b"[" * 1000 + b"]" * 1000 + b"}",
    _FEEDBACK + b',"x":' + b"[" * 100_000 + b"}",
    _FEEDBACK + b',"x":"\xff"}',
    _FEEDBACK + b',"\xed\xa0\x80":1}',
    b'{"type":"retrieval","query_id":"r","ts":1700000000,"results":[{"doc_id":"a","x":'
    + b'{"k":' * 300
    + b"1"
    + b"}" * 300
    + b"}]}",
    b'{"type":"answer","query_id":"a","ts":1700000000,"question":"","answer":"",'
    + b'"contexts":[{"text":"t","\xc0\x80":1}]}',
]


def _stream(n: int) -> list[Message]:
    traffic = SyntheticTraffic(SyntheticConfig(seed=5, rate=5.0))
    return [Message(e.value, partition=i % 2, offset=i) for i, e in enumerate(traffic.take(n))]


def _engine(**options: Any) -> Engine:
    config = engine_config(
        cutoffs=(1, 5, 10),
        half_lives=(3600.0,),
        windows=(60.0, 3600.0),
        clock="event",
        label_keys=("app",),
        **options,
    )
    return Engine(config, wall=lambda: WALL)


def _interleaved(clean: list[Message]) -> list[Message]:
    mixed = list(clean)
    for i, value in enumerate(HOSTILE):
        mixed.insert(37 * (i + 1), Message(value, partition=i % 2, offset=-i))
    return mixed


@pytest.mark.parametrize(
    "options",
    [{}, {"scan": False}, {"limits": Limits(max_results=500)}],
    ids=["scanner", "msgspec", "tighter limits"],
)
def test_hostile_messages_are_counted_and_change_nothing_else(options: dict[str, Any]) -> None:
    clean = _stream(600)
    mixed = _interleaved(clean)
    engine, reference = _engine(**options), _engine(**options)
    reports = []
    for i in range(0, len(mixed), 100):
        batch = mixed[i : i + 100]
        reports.append(engine.apply(batch))
        reference.apply([m for m in batch if m.value not in HOSTILE])  # the same batches
    assert engine.invalid == {"bad_json": len(HOSTILE)}
    assert [m.value for r in reports for m, _ in r.invalid] == HOSTILE
    assert engine.events - reference.events == {("unknown", "invalid"): len(HOSTILE)}
    assert reference.events - engine.events == {}
    now = engine.now()
    assert now == reference.now()
    ours, theirs = engine.store.read(now, exact=True), reference.store.read(now, exact=True)
    assert ours.labelsets == theirs.labelsets
    assert ours.queries.tolist() == theirs.queries.tolist()
    np.testing.assert_array_equal(ours.mean(), theirs.mean())


def test_a_query_nested_to_the_limit_is_decoded_again_when_a_label_comes() -> None:
    """Within the depth limit an unknown member is skipped as before: the query opens, is
    released once scored, and decoded again from its message when a late label arrives."""
    member = b'"x":' + b"[" * (MAX_DEPTH - 1) + b"1" + b"]" * (MAX_DEPTH - 1)
    retrieval = {"type": "retrieval", "query_id": "q1", "ts": 1_800_000_000.0}
    docs = b'"results":[{"doc_id":"a"},{"doc_id":"b"}],'
    value = json.dumps(retrieval).encode()[:-1] + b"," + docs + member + b"}"
    feedback = {"type": "feedback", "query_id": "q1", "ts": 1_800_000_001.0}
    label = json.dumps({**feedback, "doc_id": "b", "rel": 1, "source": "click"}).encode()
    engine = _engine()
    engine.apply([Message(value, offset=0)])
    query = engine.find_query("q1")
    assert query is not None
    assert query.contribution is not None
    engine.apply([Message(label, offset=1)])
    assert engine.invalid == {}
    query = engine.find_query("q1")  # the lookup is a read: the query as it is now
    assert query is not None
    assert query.contribution is not None
    assert query.doc_ids == ("a", "b")
    assert engine.layout.unpack(query.contribution).plain[0] == 0.5  # rr: relevant at rank 2
