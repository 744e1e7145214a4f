"""Judgments published to a real Kafka topic, keyed by query id, as JSON."""

from __future__ import annotations

import json

import pytest

from ragstream.judging.publisher import JudgmentPublisher
from tests.support import KafkaBroker, TopicFactory, read_records
from tests.support.defaults import lexical_judge

from ._helpers import item

pytestmark = pytest.mark.kafka


async def test_judgments_reach_the_topic(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    topic = await kafka_topic_factory(partitions=2)
    judge = lexical_judge()
    inputs = [item("q-1"), item("q-2", answer="Backups are encrypted with AES.")]
    async with JudgmentPublisher(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        queue_size=10,
        drain_timeout=30.0,
        wall=lambda: 42.0,
    ) as publisher:
        for x in inputs:
            assert publisher.offer(x, judge.evaluate(x.question, x.answer, x.contexts))
    assert publisher.counts == {"sent": 2}
    records = await read_records(kafka_broker.bootstrap_servers, topic, 2)
    by_key = {r.key: json.loads(r.value) for r in records}
    assert set(by_key) == {b"q-1", b"q-2"}
    first = by_key[b"q-1"]
    assert first["type"] == "judgment"
    assert first["query_id"] == "q-1"
    assert first["judged_at"] == 42.0
    assert first["labels"] == {"app": "support"}
    assert first["judge"] == "lexical"
    assert first["faithfulness"] == 1.0
    assert first["hallucination"] is False
    assert first["doc_ids"] == ["d1", "d2"]
    assert by_key[b"q-2"]["hallucination"] is True


async def test_a_full_queue_drops_and_counts(kafka_broker: KafkaBroker) -> None:
    publisher = JudgmentPublisher(
        "unused", bootstrap_servers=kafka_broker.bootstrap_servers, queue_size=1, drain_timeout=1.0
    )
    x = item()
    judgment = lexical_judge().evaluate(x.question, x.answer, x.contexts)
    assert publisher.offer(x, judgment)  # not started: queued
    assert not publisher.offer(x, judgment)
    await publisher.stop()
    assert publisher.counts == {"queue_full": 1, "shutdown": 1}
