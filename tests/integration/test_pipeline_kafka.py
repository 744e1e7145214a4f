"""The pipeline on a real Kafka broker: same numbers as in-process, restarts, bad input, DLQ."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Sequence

import numpy as np
import pytest

from ragstream.events import Message, Record
from ragstream.pipeline.engine import Engine, EngineConfig
from ragstream.pipeline.runner import Runner
from ragstream.sinks.dead_letters import KafkaDeadLetters
from ragstream.sources.kafka import CoPartitionError, KafkaSource
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from tests.support import KafkaBroker, TopicFactory, produce_records, read_records
from tests.support.defaults import engine_config, kafka_source_config

WALL = 1_900_000_000.0
JUNK = [b"{not json", b'{"type": "retrieval"}', b'{"type": "teleport", "query_id": "x", "ts": 1}']


def _config() -> EngineConfig:
    return engine_config(
        cutoffs=(1, 5, 10),
        half_lives=(3600.0,),
        windows=(60.0, 300.0, 3600.0),
        clock="event",
        label_keys=("app",),
    )


def _events(n: int) -> list[tuple[bytes, bytes]]:
    traffic = SyntheticTraffic(SyntheticConfig(seed=17, rate=5.0, drift_at=120.0))
    return [(e.key, e.value) for e in traffic.take(n)]


def _source(bootstrap: str, topic: str, group: str, max_batch: int = 400) -> KafkaSource:
    return KafkaSource(
        kafka_source_config(
            bootstrap_servers=bootstrap,
            topics=(topic,),
            group_id=group,
            auto_offset_reset="earliest",
            max_batch=max_batch,
            poll_timeout=0.2,
        )
    )


def _total(engine: Engine) -> int:
    return sum(engine.events.values())


async def _consume(runner: Runner, until: int, within: float = 60.0) -> None:
    """Run until the engine has seen `until` messages, then stop and wait for the loop."""
    task = asyncio.create_task(runner.run())
    deadline = time.monotonic() + within
    while _total(runner.engine) < until:
        assert not task.done(), "the runner ended early"
        assert time.monotonic() < deadline, f"saw {_total(runner.engine)} of {until}"
        await asyncio.sleep(0.05)
    runner.stop()
    await asyncio.wait_for(task, 10)


class _StopAt:
    """A real source that ends its stream once the engine has seen `until` messages.

    Stopping from inside the loop is deterministic: polling from outside can miss the
    moment when the whole topic fits in a few fast batches.
    """

    def __init__(self, source: KafkaSource, engine: Engine, until: int) -> None:
        self.source, self.engine, self.until = source, engine, until

    async def batches(self) -> AsyncIterator[Sequence[Record]]:
        async for batch in self.source.batches():
            if _total(self.engine) >= self.until:
                return
            yield batch

    async def commit(self, batch: Sequence[Record]) -> None:
        await self.source.commit(batch)

    async def stop(self) -> None:
        await self.source.stop()


def _direct(messages: list[tuple[bytes, bytes]]) -> Engine:
    engine = Engine(_config(), wall=lambda: WALL)
    engine.apply([Message(v, key=k) for k, v in messages])
    return engine


def _assert_same_windows(a: Engine, b: Engine) -> None:
    now = a.now()
    assert b.now() == now
    assert a.store.labelsets() == b.store.labelsets()
    ra, rb = a.store.read(now, exact=True), b.store.read(now, exact=True)
    assert ra.queries.tolist() == rb.queries.tolist()
    np.testing.assert_allclose(ra.mean(), rb.mean(), rtol=1e-9)
    np.testing.assert_allclose(ra.decayed_mean(), rb.decayed_mean(), rtol=1e-9)


async def test_windows_from_kafka_equal_the_in_process_engine(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    topic = await kafka_topic_factory(3)
    messages = _events(3000)
    mixed = list(messages)
    for i, junk in enumerate(JUNK):
        mixed.insert(500 * (i + 1), (b"junk-%d" % i, junk))
    await produce_records(kafka_broker.bootstrap_servers, topic, mixed)
    source = _source(kafka_broker.bootstrap_servers, topic, "g-equal")
    await source.start()
    engine = Engine(_config(), wall=lambda: WALL)
    runner = Runner(engine, source)
    try:
        await _consume(runner, len(mixed))
    finally:
        await source.stop()
    assert engine.events[("unknown", "invalid")] == len(JUNK)
    assert sum(engine.invalid.values()) == len(JUNK)
    assert set(engine.joins) == {0, 1, 2}
    reference = _direct(messages)
    assert engine.events - reference.events == {("unknown", "invalid"): len(JUNK)}
    _assert_same_windows(reference, engine)


async def test_stop_and_restart_mid_stream_loses_and_doubles_nothing(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    topic = await kafka_topic_factory(3)
    messages = _events(2400)
    await produce_records(kafka_broker.bootstrap_servers, topic, messages)
    first_source = _source(kafka_broker.bootstrap_servers, topic, "g-restart", max_batch=150)
    await first_source.start()
    engine = Engine(_config(), wall=lambda: WALL)
    try:
        await asyncio.wait_for(Runner(engine, _StopAt(first_source, engine, 1000)).run(), 60)
    finally:
        await first_source.stop()  # commits what was applied, leaves the group
    seen = _total(engine)
    assert 1000 <= seen < len(messages)
    checkpoint = json.loads(json.dumps(engine.snapshot(), allow_nan=False))

    resumed = Engine.restore(_config(), checkpoint, wall=lambda: WALL)
    second_source = _source(kafka_broker.bootstrap_servers, topic, "g-restart", max_batch=150)
    await second_source.start()
    try:
        await _consume(Runner(resumed, second_source), until=len(messages))
        await asyncio.sleep(0.5)
    finally:
        await second_source.stop()
    assert _total(resumed) == len(messages)  # nothing lost, nothing twice
    reference = _direct(messages)
    assert resumed.events == reference.events
    _assert_same_windows(reference, resumed)


async def test_invalid_messages_go_to_the_dead_letter_topic_with_their_reason(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    topic, dead = await kafka_topic_factory(1), await kafka_topic_factory(1)
    messages = _events(200)
    mixed = [*messages[:50], (b"k0", JUNK[0]), (b"k1", JUNK[2]), *messages[50:]]
    await produce_records(kafka_broker.bootstrap_servers, topic, mixed)
    source = _source(kafka_broker.bootstrap_servers, topic, "g-dlq")
    await source.start()
    letters = KafkaDeadLetters(dead, bootstrap_servers=kafka_broker.bootstrap_servers)
    await letters.start()
    engine = Engine(_config(), wall=lambda: WALL)
    try:
        await _consume(Runner(engine, source, dead_letters=letters), len(mixed))
    finally:
        await source.stop()
        await letters.stop()
    assert letters.sent == 2
    records = await read_records(kafka_broker.bootstrap_servers, dead, 2, within=15)
    assert [(r.key, r.value) for r in records] == [(b"k0", JUNK[0]), (b"k1", JUNK[2])]
    reasons = [dict(r.headers)["ragstream.reason"] for r in records]
    assert reasons == [b"bad_json", b"unknown_type"]
    assert dict(records[0].headers)["ragstream.offset"] == b"50"


async def test_an_inline_label_on_a_repeated_document_counts_through_kafka(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    """SPEC §2 through the broker: a repeat counts once, at its first position, and every
    inline rel (a repeat's included) is a label, applied in list order after qrels."""
    topic = await kafka_topic_factory(1)
    cases = {
        "issue": ([{"doc_id": "a"}, {"doc_id": "b", "rel": 2}, {"doc_id": "a", "rel": 1}], [], 1.0),
        "last-wins": (
            [{"doc_id": "a", "rel": 2}, {"doc_id": "b", "rel": 1}, {"doc_id": "a", "rel": 0}],
            [],
            0.5,
        ),
        "after-qrels": (
            [{"doc_id": "x"}, {"doc_id": "a"}, {"doc_id": "x", "rel": 0}],
            [{"doc_id": "x", "rel": 3}, {"doc_id": "a", "rel": 1}],
            0.5,
        ),
    }
    messages = []
    for i, (qid, (results, qrels, _)) in enumerate(cases.items()):
        event = {"type": "retrieval", "query_id": qid, "ts": 1_767_225_600.0 + i}
        value = json.dumps({**event, "results": results, "qrels": qrels}).encode()
        messages.append((qid.encode(), value))
    await produce_records(kafka_broker.bootstrap_servers, topic, messages)
    source = _source(kafka_broker.bootstrap_servers, topic, "g-repeats")
    await source.start()
    engine = Engine(_config(), wall=lambda: WALL)
    try:
        await _consume(Runner(engine, source), len(messages))
    finally:
        await source.stop()
    assert engine.joins[0].counters.repeated_docs == 3
    rr = engine.columns.index("rr")
    final = {q.query_id: q.contribution for q in engine.finish()}
    assert {qid: None if row is None else row[rr] for qid, row in final.items()} == {
        qid: expected for qid, (_, _, expected) in cases.items()
    }


_FEEDBACK = b'{"type":"feedback","query_id":"q","ts":1700000000,"doc_id":"d","rel":1,"source":"x"'
POISON = [
    _FEEDBACK + b',"x":' + b"[" * 1000 + b"]" * 1000 + b"}",  # a RecursionError out of msgspec
    _FEEDBACK + b',"x":' + b"{" * 100_000 + b"}",
    _FEEDBACK + b',"x":"\xff"}',  # invalid UTF-8 that msgspec skipped
    _FEEDBACK + b',"\xed\xa0\x80":[{"y":"\xc0\x80"}]}',
    _FEEDBACK + b',"x":"\\ud800"}',
]


async def test_hostile_messages_are_dead_lettered_and_the_agent_goes_on(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    """Messages that used to stop the agent (at every restart: a poison pill) among valid
    ones: each is counted as bad_json and dead-lettered, every valid event is applied. A
    tombstone (a null value: the source hands Kafka's records over as they come) is an
    empty message, dead-lettered empty."""
    topic, dead = await kafka_topic_factory(2), await kafka_topic_factory(1)
    messages = _events(600)
    mixed: list[tuple[bytes | None, bytes | None]] = list(messages)
    for i, value in enumerate(POISON):
        mixed.insert(100 * (i + 1), (b"poison-%d" % i, value))
    mixed.insert(50, (b"tombstone", None))
    await produce_records(kafka_broker.bootstrap_servers, topic, mixed)
    source = _source(kafka_broker.bootstrap_servers, topic, "g-poison", max_batch=64)
    await source.start()
    letters = KafkaDeadLetters(dead, bootstrap_servers=kafka_broker.bootstrap_servers)
    await letters.start()
    engine = Engine(_config(), wall=lambda: WALL)
    try:
        await _consume(Runner(engine, source, dead_letters=letters), len(mixed))
    finally:
        await source.stop()
        await letters.stop()
    assert engine.invalid == {"bad_json": len(POISON), "empty": 1}
    reference = _direct(messages)
    assert engine.events - reference.events == {("unknown", "invalid"): len(POISON) + 1}
    assert reference.events - engine.events == {}
    _assert_same_windows(reference, engine)
    records = await read_records(kafka_broker.bootstrap_servers, dead, len(POISON) + 1, within=15)
    assert sorted((r.key, r.value) for r in records) == sorted(
        [(b"poison-%d" % i, value) for i, value in enumerate(POISON)] + [(b"tombstone", b"")]
    )
    reasons = {r.key: dict(r.headers)["ragstream.reason"] for r in records}
    assert reasons.pop(b"tombstone") == b"empty"
    assert set(reasons.values()) == {b"bad_json"}


async def test_topics_that_are_not_co_partitioned_are_refused(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    a, b = await kafka_topic_factory(3), await kafka_topic_factory(2)
    source = KafkaSource(
        kafka_source_config(bootstrap_servers=kafka_broker.bootstrap_servers, topics=(a, b))
    )
    with pytest.raises(CoPartitionError, match="not co-partitioned") as info:
        await source.start()
    await source.stop()
    assert f"{a} has 3" in str(info.value)
    assert f"{b} has 2" in str(info.value)


async def test_a_broker_that_is_down_is_retried_until_stopped() -> None:
    import socket

    with socket.socket() as sock:  # a port where nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    source = KafkaSource(
        kafka_source_config(
            bootstrap_servers=f"127.0.0.1:{port}", topics=("t",), retry_backoff_max=0.3
        )
    )
    task = asyncio.create_task(source.start())
    deadline = time.monotonic() + 20
    while source.connect_attempts < 3:
        assert time.monotonic() < deadline
        assert not task.done()
        await asyncio.sleep(0.1)
    # what /readyz says meanwhile
    assert source.unreachable is not None
    assert source.unreachable.startswith(f"Kafka at 127.0.0.1:{port} unreachable ("), (
        source.unreachable
    )
    await source.stop()
    await asyncio.wait_for(task, 10)
    assert not source.connected
