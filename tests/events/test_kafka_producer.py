"""EventProducer against the real broker: keys, values, partitions and per-type topics."""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaProducer

from ragstream.events import (
    Event,
    answer_event,
    decode_event,
    feedback_event,
    message_key,
    retrieval_event,
    to_decoded,
)
from ragstream.producer import EventProducer, Partitioner, partition_for
from tests.support import KafkaBroker, TopicFactory, read_records

pytestmark = pytest.mark.kafka


async def test_events_arrive_keyed_by_query_id(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    topic = await kafka_topic_factory(partitions=3)
    events: list[Event] = [
        retrieval_event("q-1", ["a", "b"], ts=1714564800, labels={"app": "x"}),
        answer_event("q-1", "why?", "because", ["chunk"], ts=1714564801),
        feedback_event("q-1", "a", 1, "click", ts=1714564802),
        feedback_event("q-2", "b", 0, "thumb", ts=1714564803),
    ]
    async with EventProducer(topic, bootstrap_servers=kafka_broker.bootstrap_servers) as sink:
        sent = [await sink.send(event) for event in events]
    assert [meta.topic for meta in sent] == [topic] * 4

    records = await read_records(kafka_broker.bootstrap_servers, topic, len(events))
    records.sort(key=lambda r: decode_event(r.value).ts)
    assert [r.key for r in records] == [b"q-1", b"q-1", b"q-1", b"q-2"]
    assert [decode_event(r.value) for r in records] == [to_decoded(e) for e in events]
    assert len({r.partition for r in records[:3]}) == 1  # one query, one partition


async def test_per_type_topics_and_an_injected_producer(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    retrievals, feedback = await kafka_topic_factory(), await kafka_topic_factory()
    kafka = AIOKafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    await kafka.start()
    try:
        sink = EventProducer({"retrieval": retrievals, "feedback": feedback}, producer=kafka)
        async with sink:
            await sink.send(retrieval_event("q", ["a"], ts=1))
            await sink.send(feedback_event("q", "a", 2, "annotator", ts=2))
        # The caller's producer outlives the EventProducer.
        await kafka.send_and_wait(feedback, b"{}", key=b"other")
    finally:
        await kafka.stop()
    (retrieval,) = await read_records(kafka_broker.bootstrap_servers, retrievals, 1)
    assert decode_event(retrieval.value).type == "retrieval"
    records = await read_records(kafka_broker.bootstrap_servers, feedback, 2)
    assert [r.key for r in records] == [b"q", b"other"]


@pytest.mark.parametrize("partitioner", ["murmur2", "crc32", "fnv1a"])
async def test_the_partitioner_chooses_each_events_partition(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory, partitioner: Partitioner
) -> None:
    partitions = 5
    topic = await kafka_topic_factory(partitions)
    events = [feedback_event(f"{7**i:032x}", "a", 1, "thumb", ts=1714564800 + i) for i in range(40)]
    kafka = AIOKafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    await kafka.start()
    try:
        async with (
            EventProducer(
                topic, bootstrap_servers=kafka_broker.bootstrap_servers, partitioner=partitioner
            ) as own,
            EventProducer(topic, producer=kafka, partitioner=partitioner) as given,
        ):
            sent = [await sink.send(event) for event in events for sink in (own, given)]
    finally:
        await kafka.stop()
    expected = [partition_for(message_key(e), partitions, partitioner) for e in events]
    assert [meta.partition for meta in sent] == [p for p in expected for _ in range(2)]
    assert len(set(expected)) > 1
    records = await read_records(kafka_broker.bootstrap_servers, topic, len(sent))
    assert {(r.key, r.partition) for r in records} == {
        (message_key(e), p) for e, p in zip(events, expected, strict=True)
    }


def test_an_unknown_partitioner_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown partitioner 'crc'"):
        EventProducer("t", bootstrap_servers="x:9092", partitioner="crc")  # type: ignore[arg-type]
