"""Partition state moves between replicas through the state topic, on a real broker.

Every test compares with one engine that applied the whole stream in one go: after
rebalances, a clean stop and a crash, the replicas' windows together equal it, and every
event is counted once (or, after a crash, replayed from the checkpoint exactly once more).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections import Counter
from collections.abc import Callable

import numpy as np
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from prometheus_client import CollectorRegistry, generate_latest

from bench import series
from ragstream.checkpoint import Handover, PartitionSnapshot, encode
from ragstream.checkpoint.collector import HandoverCollector
from ragstream.events import Message
from ragstream.exporter.collector import EngineCollector
from ragstream.pipeline.engine import Engine, EngineConfig
from ragstream.pipeline.runner import Runner
from ragstream.sources.kafka import KafkaSource
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from tests.support import KafkaBroker, TopicFactory, committed_offsets, produce_records
from tests.support.defaults import engine_config, kafka_source_config, state_topic

WALL = 1_900_000_000.0
Pairs = list[tuple[bytes, bytes]]


def _config(buckets: int = 60) -> EngineConfig:
    return engine_config(
        cutoffs=(1, 5, 10),
        half_lives=(3600.0,),
        windows=(60.0, 300.0, 3600.0),
        buckets=buckets,
        clock="event",
        label_keys=("app",),
    )


def _events(n: int) -> Pairs:
    traffic = SyntheticTraffic(SyntheticConfig(seed=23, rate=5.0))
    return [(e.key, e.value) for e in traffic.take(n)]


def _exported(engine: Engine) -> series.Samples:
    """Every series of the engine, read at its own (event) clock, summed over partitions
    (the reference engine reads every message as partition 0; `ragstream_series` counts
    partitions x label sets, so it is left out)."""
    registry = CollectorRegistry()
    registry.register(EngineCollector(engine))
    samples = series.parse(generate_latest(registry).decode())
    samples.pop(("ragstream_series", frozenset()))
    return series.drop_label(samples, "partition")


def _direct(messages: Pairs) -> Engine:
    engine = Engine(_config(), wall=lambda: WALL)
    engine.apply([Message(v, key=k) for k, v in messages])
    return engine


class _Replica:
    """One agent: engine, source with hand-over, and the runner loop as a task."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        *,
        buckets: int = 60,
        interval: float = 3600.0,
        more_topics: tuple[str, ...] = (),
    ) -> None:
        self.engine = Engine(_config(buckets), wall=lambda: WALL)
        state = state_topic(f"{topic}-state", bootstrap)
        self.handover = Handover(
            self.engine, state, interval=interval, chunk_bytes=4096, writer="ragstream"
        )
        self.source = KafkaSource(
            kafka_source_config(
                bootstrap_servers=bootstrap,
                topics=(topic, *more_topics),
                group_id=f"g-{topic}",
                auto_offset_reset="earliest",
                max_batch=150,
                poll_timeout=0.1,
            ),
            on_revoked=self.engine.drop_partitions,
            state=self.handover,
        )
        self.runner = Runner(self.engine, self.source)
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.source.start()
        self.task = asyncio.create_task(self.runner.run())

    def total(self) -> int:
        return sum(self.engine.events.values())

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self.source.assignment()}

    async def stop(self) -> None:
        """A clean stop: finish the batch, commit, write the state, leave the group."""
        self.runner.stop()
        if self.task is not None:
            await asyncio.wait_for(self.task, 10)
        await self.source.stop()

    async def crash(self) -> None:
        """Gone without a revoke, a commit or a last snapshot: the loop dies mid-poll; the
        consumer leaves the group (so that the test need not wait for the session timeout)."""
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        await self.source.abort()


async def _until(check: Callable[[], bool], what: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def _assert_windows_equal(reference: Engine, *replicas: Engine) -> None:
    now = reference.now()
    labelsets = sorted({ls for r in replicas for ls in r.store.labelsets()})
    assert labelsets == reference.store.labelsets()
    for labelset in labelsets:
        want = reference.store.read(now, labelset, exact=True)
        parts = [r.store.read(now, labelset, exact=True) for r in replicas]
        fields = ("queries", "count", "total", "decayed_count", "decayed_total")
        got = dataclasses.replace(want, **{f: sum(getattr(p, f) for p in parts) for f in fields})
        assert got.queries.tolist() == want.queries.tolist(), labelset
        np.testing.assert_allclose(got.mean(), want.mean(), rtol=1e-9)
        np.testing.assert_allclose(got.decayed_mean(), want.decayed_mean(), rtol=1e-9)


async def test_partitions_move_on_join_and_on_clean_stop_counting_each_event_once(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = await kafka_topic_factory(3)
    messages = _events(2100)
    first, second, third = messages[:900], messages[900:1600], messages[1600:]
    a, b = _Replica(bootstrap, topic), _Replica(bootstrap, topic)
    try:
        await produce_records(bootstrap, topic, first)
        await a.start()
        await _until(lambda: a.total() == len(first), "A to read the first part")
        assert a.handover.counters.fresh == 3  # nothing to adopt yet

        await b.start()  # the group rebalances: A hands some partitions to B
        await _until(
            lambda: len(a.partitions()) + len(b.partitions()) == 3 and bool(b.partitions()),
            "the partitions to be shared",
        )
        assert a.partitions()
        assert a.partitions().isdisjoint(b.partitions())
        await produce_records(bootstrap, topic, second)
        await _until(lambda: a.total() + b.total() == 1600, "both to read the second part")
        _assert_windows_equal(_direct(messages[:1600]), a.engine, b.engine)
        assert set(a.engine.joins) | set(b.engine.joins) == {0, 1, 2}
        assert set(a.engine.joins).isdisjoint(b.engine.joins)

        await b.stop()  # B writes its state and leaves: A takes every partition back
        await _until(lambda: len(a.partitions()) == 3, "A to own every partition")
        await produce_records(bootstrap, topic, third)
        # B's counts came back with its partitions
        await _until(lambda: a.total() == len(messages), "the third part")
    finally:
        await a.stop()
        await b.stop()
    reference = _direct(messages)
    _assert_windows_equal(reference, a.engine)
    assert a.engine.open_queries == reference.open_queries
    assert a.engine.events == reference.events  # each event once
    assert series.compare(_exported(reference), _exported(a.engine)) == []  # every series

    counters = [a.handover.counters, b.handover.counters]
    assert sum(c.adopted for c in counters) >= 6  # 3 after B joined, 3 after B left
    assert sum(sum(c.refused.values()) for c in counters) == 0
    assert all(c.written > 0 and c.write_failed == 0 for c in counters)


async def test_a_crashed_replicas_partitions_resume_from_its_checkpoint(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = await kafka_topic_factory(3)
    messages = _events(1800)
    first, second, third = messages[:800], messages[800:1300], messages[1300:]
    a = _Replica(bootstrap, topic)
    await produce_records(bootstrap, topic, first)
    await a.start()
    try:
        await _until(lambda: a.total() == len(first), "A to read the first part")
        assert await a.source.checkpoint() == 3
        await produce_records(bootstrap, topic, second)
        await _until(lambda: a.total() == len(first) + len(second), "A to read the second part")
    finally:
        await a.crash()
    committed = await committed_offsets(bootstrap, f"g-{topic}", topic, 3)
    # commits never run ahead of the state that covers them
    assert sum(o or 0 for o in committed.values()) <= len(first)

    b = _Replica(bootstrap, topic)
    try:
        await b.start()
        # the first part's counts came with the checkpoint, the second is applied again
        await _until(lambda: b.total() == len(first) + len(second), "B to replay the second")
        assert b.handover.counters.adopted == 3
        await produce_records(bootstrap, topic, third)
        await _until(lambda: b.total() == len(messages), "B to read the third part")
    finally:
        await b.stop()
    reference = _direct(messages)
    _assert_windows_equal(reference, b.engine)
    assert b.engine.open_queries == reference.open_queries
    assert b.engine.events == reference.events  # the replayed events counted once
    assert series.compare(_exported(reference), _exported(b.engine)) == []
    committed = await committed_offsets(bootstrap, f"g-{topic}", topic, 3)
    assert sum(o or 0 for o in committed.values()) == len(messages)


async def test_periodic_checkpoints_bound_what_a_crash_replays(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = await kafka_topic_factory(3)
    messages = _events(900)
    first, second = messages[:500], messages[500:]
    a = _Replica(bootstrap, topic, interval=0.2)
    await produce_records(bootstrap, topic, first)
    try:
        await a.start()
        await _until(lambda: a.total() == len(first), "the first part")
        checkpointed = a.handover.last_written
        await _until(
            lambda: sum(sum(o.values()) for o in checkpointed.values()) == len(first),
            "a checkpoint at the end of the first part",
        )
        written = a.handover.counters.written
        await asyncio.sleep(0.5)
        assert a.handover.counters.written == written  # idle partitions are not rewritten
    finally:
        await a.crash()
    b = _Replica(bootstrap, topic)
    await produce_records(bootstrap, topic, second)
    try:
        await b.start()
        await _until(lambda: b.total() == len(messages), "the second part")
        await asyncio.sleep(0.3)  # nothing more arrives: the first part is not replayed
    finally:
        await b.stop()
    assert b.handover.counters.adopted == 3
    reference = _direct(messages)
    _assert_windows_equal(reference, b.engine)
    assert b.engine.events == reference.events


async def test_co_partitioned_topics_move_together(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    queries, labels = await kafka_topic_factory(3), await kafka_topic_factory(3)
    messages = _events(1200)

    async def produce(part: Pairs) -> None:  # retrievals to one topic, the rest to the other
        await produce_records(bootstrap, queries, [m for m in part if b'"retrieval"' in m[1]])
        await produce_records(bootstrap, labels, [m for m in part if b'"retrieval"' not in m[1]])

    a = _Replica(bootstrap, queries, more_topics=(labels,))
    b = _Replica(bootstrap, queries, more_topics=(labels,))
    try:
        await produce(messages[:600])
        await a.start()
        await _until(lambda: a.total() == 600, "A to read the first part")
        await b.start()
        await _until(
            lambda: len(a.partitions()) + len(b.partitions()) == 3 and bool(b.partitions()),
            "the partitions to be shared",
        )
        for replica in (a, b):  # the same partition numbers of both topics
            owned = replica.source.assignment()
            assert {tp.partition for tp in owned if tp.topic == queries} == replica.partitions()
            assert {tp.partition for tp in owned if tp.topic == labels} == replica.partitions()
        await produce(messages[600:])
        await _until(lambda: a.total() + b.total() == len(messages), "the second part")
    finally:
        await a.stop()
        await b.stop()
    assert a.handover.counters.adopted + b.handover.counters.adopted == 3
    assert a.engine.events + b.engine.events == _direct(messages).events  # each event once
    opened = a.engine.join_counters()["opened"] + b.engine.join_counters()["opened"]
    assert opened == sum(b'"retrieval"' in m[1] for m in messages)


async def test_a_snapshot_kept_with_other_windows_is_refused_and_counted(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = await kafka_topic_factory(3)
    messages = _events(900)
    first, second = messages[:400], messages[400:]
    other = _Replica(bootstrap, topic, buckets=30)
    await produce_records(bootstrap, topic, first)
    try:
        await other.start()
        await _until(lambda: other.total() == len(first), "the first part")
    finally:
        await other.stop()  # writes its three snapshots
    # an empty one of each partition at its assignment, and one at the stop
    assert other.handover.counters.written == 6

    replica = _Replica(bootstrap, topic)
    await produce_records(bootstrap, topic, second)
    try:
        await replica.start()
        await _until(lambda: replica.total() == len(second), "the second part")
    finally:
        await replica.stop()
    counters = replica.handover.counters
    assert counters.refused == Counter({"config": 3})
    assert counters.adopted == 0
    # it started afresh from the committed offsets: only the second part, all of it
    reference = _direct(second)
    _assert_windows_equal(reference, replica.engine)
    assert replica.engine.events == reference.events
    registry = CollectorRegistry()
    registry.register(EngineCollector(replica.engine))
    registry.register(HandoverCollector(counters))
    text = generate_latest(registry).decode()
    assert 'ragstream_state_snapshots_total{outcome="refused"} 3.0' in text
    assert 'ragstream_state_snapshots_refused_total{reason="config"} 3.0' in text
    assert 'ragstream_state_snapshots_refused_total{reason="expired"} 0.0' in text


async def test_the_state_topic_is_created_compacted(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    name = f"{await kafka_topic_factory(1)}-state"
    topic = state_topic(name, kafka_broker.bootstrap_servers)
    await topic.start()
    await topic.stop()
    assert topic.created
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap_servers)
    await admin.start()
    try:
        [response] = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])
    finally:
        await admin.close()
    entries = {e[0]: e[1] for e in response.resources[0][4]}
    assert entries["cleanup.policy"] == "compact"
    assert entries["segment.bytes"] == str(64 * 1024 * 1024)
    again = state_topic(name, kafka_broker.bootstrap_servers)
    await again.start()  # exists: used as it is
    await again.stop()
    assert not again.created


async def test_damaged_snapshots_are_refused_by_reason_and_their_partitions_start_afresh(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = await kafka_topic_factory(3)
    messages = _events(600)
    config = Engine(_config(), wall=lambda: WALL).state_config()
    damaged = {  # the right configuration, windows that cannot be loaded
        "version": 1,
        "partition": 0,
        "config": config,
        "clock_now": None,
        "windows": {"version": 1, "partition": 0, "spec": config["spec"], "series": [{}]},
        "join": None,
    }
    writer = state_topic(f"{topic}-state", bootstrap)
    await writer.start()
    try:
        await writer.write(
            [
                encode(PartitionSnapshot(0, {topic: 0}, damaged, 0.0), "d", 1 << 16),
                encode(PartitionSnapshot(1, {"elsewhere": 0}, damaged, 0.0), "t", 1 << 16),
                encode(PartitionSnapshot(2, {topic: 0}, damaged, 0.0), "i", 64)[-1:],  # head only
            ],
            [],
        )
    finally:
        await writer.stop()
    await produce_records(bootstrap, topic, messages)
    replica = _Replica(bootstrap, topic)
    try:
        await replica.start()
        await _until(lambda: replica.total() == len(messages), "every message")
    finally:
        await replica.stop()
    counters = replica.handover.counters
    assert counters.refused == Counter({"corrupt": 1, "topics": 1, "incomplete": 1})
    assert counters.adopted == 0
    reference = _direct(messages)
    _assert_windows_equal(reference, replica.engine)
    assert replica.engine.events == reference.events
