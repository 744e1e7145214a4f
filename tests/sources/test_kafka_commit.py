"""Offset commits of the Kafka source: next offsets per partition, and the commit interval."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence

from aiokafka import AIOKafkaProducer, TopicPartition

from ragstream.events import Message
from ragstream.sources.kafka import KafkaBatch, KafkaSource, next_offsets
from tests.support import KafkaBroker, TopicFactory, committed_offsets
from tests.support.defaults import kafka_source_config


def test_next_offsets_of_a_plain_sequence_take_the_max_per_partition_in_any_order() -> None:
    batch = [
        Message(b"", 0, 7, "a"),
        Message(b"", 1, 3, "a"),
        Message(b"", 0, 5, "a"),  # out of order: 7 still wins
        Message(b"", 0, 2, "b"),  # same partition number, another topic
        Message(b"", 1, 4, "a"),
    ]
    assert next_offsets(batch) == {
        TopicPartition("a", 0): 8,
        TopicPartition("a", 1): 5,
        TopicPartition("b", 0): 3,
    }
    assert next_offsets([]) == {}


def test_a_kafka_batch_carries_its_next_offsets_without_a_scan() -> None:
    batch = KafkaBatch()
    batch.extend([Message(b"", 0, 1, "a"), Message(b"", 0, 2, "a")])
    batch.next_offsets[TopicPartition("a", 0)] = 3
    assert next_offsets(batch) is batch.next_offsets
    assert list(batch) == [Message(b"", 0, 1, "a"), Message(b"", 0, 2, "a")]


async def _produce(bootstrap: str, topic: str, n: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for i in range(n):
            await producer.send(topic, value=b"x", partition=i % 3)
        await producer.flush()
    finally:
        await producer.stop()


async def _committed(bootstrap: str, group: str, topic: str) -> list[int | None]:
    return list((await committed_offsets(bootstrap, group, topic, 3)).values())


async def _consume(source: KafkaSource, n: int) -> list[Sequence[Message]]:
    """Hand out and commit batches until `n` messages were seen (as the runner does)."""
    batches: list[Sequence[Message]] = []
    seen = 0
    stream = source.batches()
    assert isinstance(stream, AsyncGenerator)
    try:
        async for batch in stream:
            await source.commit(batch)
            batches.append(batch)
            seen += len(batch)
            if seen >= n:
                break
    finally:
        await stream.aclose()
    return batches


def _source(bootstrap: str, topic: str, interval: float) -> KafkaSource:
    return KafkaSource(
        kafka_source_config(
            bootstrap_servers=bootstrap,
            topics=(topic,),
            group_id=f"g-{topic}",
            auto_offset_reset="earliest",
            max_batch=7,
            poll_timeout=0.1,
            commit_interval=interval,
        )
    )


async def test_commits_wait_for_the_interval_and_stop_commits_everything_applied(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = await kafka_topic_factory(3)
    await _produce(bootstrap, topic, 30)  # 10 a partition: offsets 0..9
    source = _source(bootstrap, topic, interval=3600.0)
    await source.start()
    try:
        batches = await _consume(source, 30)
        assert sum(len(b) for b in batches) == 30
        assert source.commits == 0  # applied, not yet committed
        assert await _committed(bootstrap, f"g-{topic}", topic) == [None, None, None]
    finally:
        await source.stop()
    assert source.commits == 1
    assert await _committed(bootstrap, f"g-{topic}", topic) == [10, 10, 10]


async def test_interval_zero_commits_after_every_batch(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = await kafka_topic_factory(3)
    await _produce(bootstrap, topic, 30)
    source = _source(bootstrap, topic, interval=0.0)
    await source.start()
    try:
        batches = await _consume(source, 30)
        assert source.commits == sum(1 for b in batches if b)
        assert source.commits >= 30 // 7 + 1  # at most 7 records a batch
        assert await _committed(bootstrap, f"g-{topic}", topic) == [10, 10, 10]
    finally:
        await source.stop()
