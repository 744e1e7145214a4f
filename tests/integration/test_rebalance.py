"""Rebalances under load on the real broker: one replica, then three, then one again, while
the stream is written; the replicas' series together equal one replica that read it alone.

The counters are compared while three replicas share the partitions (summed over them),
and every series at the end, when one replica holds every partition again.

The event clock is one over the partitions a replica holds, so when a query's TTL ends
depends on how far the other partitions were read. So that no number depends on how the
replicas' fetches interleave, the label TTL is longer than the stream, no feedback comes
before its retrieval, and the stream ends with one retrieval a day later on each
partition, written once every replica has read the rest: every replica's clock reaches
that time and every query is final everywhere.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence

from aiokafka import AIOKafkaProducer
from prometheus_client import CollectorRegistry, generate_latest

from bench import series
from ragstream.checkpoint import Handover
from ragstream.exporter.collector import EngineCollector
from ragstream.pipeline.engine import Engine, EngineConfig
from ragstream.pipeline.runner import Runner
from ragstream.sources.kafka import KafkaSource
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from tests.support import KafkaBroker, TopicFactory
from tests.support.defaults import engine_config, kafka_source_config, state_topic

WALL = 1_900_000_000.0
START = 1_767_225_600.0
PARTITIONS = 3
Record = tuple[bytes, bytes, int | None]


def _config() -> EngineConfig:
    return engine_config(
        cutoffs=(1, 5, 10),
        half_lives=(3600.0,),
        windows=(60.0, 300.0, 3600.0, 86400.0),
        clock="event",
        label_keys=("app",),
        label_ttl=3600.0,  # longer than the stream: see the module docstring
    )


def _stream(n: int) -> list[Record]:
    traffic = SyntheticTraffic(
        SyntheticConfig(seed=31, rate=5.0, start=START, early_feedback_share=0.0)
    )
    out: list[Record] = []
    for i, event in enumerate(traffic.take(n)):
        out.append((event.key, event.value, None))
        if i % 97 == 0:
            out.append((event.key, b'{"type": "answer", "ts": "soon"', None))
    return out


def _markers() -> list[Record]:
    """One retrieval per partition, an hour after the stream: every clock moves there."""
    out: list[Record] = []
    for p in range(PARTITIONS):
        event = {
            "type": "retrieval",
            "query_id": f"marker-{p}",
            "ts": START + 86400.0,
            "labels": {"app": "marker"},
            "results": [{"doc_id": "d", "score": 1.0}],
        }
        out.append((f"marker-{p}".encode(), json.dumps(event).encode(), p))
    return out


async def _produce(bootstrap: str, topic: str, records: Sequence[Record]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        for key, value, partition in records:
            await producer.send(topic, value=value, key=key, partition=partition)
        await producer.flush()
    finally:
        await producer.stop()


class _Replica:
    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        self.engine = Engine(_config(), wall=lambda: WALL)
        state = state_topic(f"{group}-state", bootstrap)
        self.handover = Handover(
            self.engine, state, interval=0.5, chunk_bytes=8192, writer="ragstream"
        )
        self.source = KafkaSource(
            kafka_source_config(
                bootstrap_servers=bootstrap,
                topics=(topic,),
                group_id=group,
                auto_offset_reset="earliest",
                max_batch=100,
                poll_timeout=0.1,
                commit_interval=0.2,
            ),
            on_revoked=self.engine.drop_partitions,
            on_assigned=self.engine.hold_partitions,
            state=self.handover,
        )
        self.runner = Runner(self.engine, self.source)
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.source.start()
        self.task = asyncio.create_task(self.runner.run())

    async def stop(self) -> None:
        self.runner.stop()
        if self.task is not None:
            await asyncio.wait_for(self.task, 20)
        await self.source.stop()

    def total(self) -> int:
        return sum(self.engine.events.values())

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self.source.assignment()}

    def exported(self) -> series.Samples:
        registry = CollectorRegistry()
        registry.register(EngineCollector(self.engine))
        return series.parse(generate_latest(registry).decode())


async def _until(
    check: Callable[[], bool],
    what: str,
    within: float = 60.0,
    describe: Callable[[], str] = lambda: "",
) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what} {describe()}"
        await asyncio.sleep(0.05)


def _counters(samples: series.Samples) -> series.Samples:
    return {k: v for k, v in samples.items() if k[0].endswith("_total")}


async def test_one_three_one_replicas_mid_stream_sum_to_a_single_replica(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = await kafka_topic_factory(PARTITIONS)
    stream = _stream(3000)
    first, second, third = stream[:1000], stream[1000:2000], stream[2000:]
    single = _Replica(bootstrap, topic, f"single-{topic}")
    a, b, c = (_Replica(bootstrap, topic, f"group-{topic}") for _ in range(3))
    replicas = (a, b, c)
    try:
        await single.start()
        await a.start()
        await _produce(bootstrap, topic, first)
        await _until(lambda: a.total() == len(first), "A to read the first part")
        produced = asyncio.create_task(_produce(bootstrap, topic, second))
        await b.start()  # join while the second part is written
        await c.start()
        await produced
        await _until(
            lambda: all(len(r.partitions()) == 1 for r in replicas),
            "one partition each",
            describe=lambda: str([r.partitions() for r in replicas]),
        )
        upto = len(first) + len(second)
        await _until(lambda: sum(r.total() for r in replicas) == upto, "three to read two parts")
        await _until(lambda: single.total() == upto, "the single replica to read two parts")
        shared = series.combine(r.exported() for r in replicas)
        assert series.compare(_counters(single.exported()), _counters(shared)) == []
        assert sum(r.handover.counters.adopted for r in replicas) >= 2

        produced = asyncio.create_task(_produce(bootstrap, topic, third))
        await b.stop()  # both leave while the third part is written: A takes all back
        await c.stop()
        await produced
        await _until(lambda: len(a.partitions()) == PARTITIONS, "A to own every partition")
        await _until(lambda: a.total() == len(stream), "A to read everything")
        await _until(lambda: single.total() == len(stream), "the single one to read it")
        # only now: a marker read while another partition is behind would end its TTLs
        await _produce(bootstrap, topic, _markers())
        await _until(lambda: a.total() == len(stream) + PARTITIONS, "A to read the markers")
        await _until(lambda: single.total() == len(stream) + PARTITIONS, "the single one")
        await asyncio.sleep(0.5)  # an empty poll or two: nothing more may arrive
    finally:
        for replica in (*replicas, single):
            await replica.stop()
    # B and C are gone (their processes would have exited): A alone exports the stream
    expected = single.exported()
    assert series.compare(expected, a.exported()) == []
    assert expected[("ragstream_queries_finalized_total", frozenset({("partition", "0")}))] > 0
    assert sum(v for k, v in expected.items() if k[0] == "ragstream_invalid_events_total") > 0
    assert sum(r.handover.counters.written for r in replicas) > 0
    assert all(sum(r.handover.counters.refused.values()) == 0 for r in replicas)
