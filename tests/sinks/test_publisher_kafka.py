"""The publisher on a real broker: every record offered is acknowledged by `flush`, in
order per key, and a queue that is never drained drops and counts."""

from __future__ import annotations

import json

import pytest

from ragstream.sinks.publisher import KafkaPublisher
from tests.support import KafkaBroker, TopicFactory, read_records

pytestmark = pytest.mark.kafka


async def test_flush_returns_once_every_record_is_acknowledged(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    topic = await kafka_topic_factory(2)
    n = 20_000
    async with KafkaPublisher(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        queue_size=n,
        drain_timeout=60.0,
        acks="all",
    ) as publisher:
        for i in range(n):
            assert publisher.offer_record(f"q-{i % 50}", {"i": i, "value": 0.5})
        assert await publisher.flush(60.0)
        assert publisher.counts == {"sent": n}
    records = await read_records(kafka_broker.bootstrap_servers, topic, n, within=60)
    assert len(records) == n
    per_key: dict[bytes | None, list[int]] = {}
    for r in records:
        per_key.setdefault(r.key, []).append(json.loads(r.value)["i"])
    assert len(per_key) == 50
    assert all(v == sorted(v) for v in per_key.values())  # in order per key


async def test_a_queue_never_drained_drops_and_counts() -> None:
    publisher = KafkaPublisher(
        "unused", bootstrap_servers="127.0.0.1:9", queue_size=3, drain_timeout=0.1
    )
    assert [publisher.offer_record("k", {"i": i}) for i in range(5)] == [True] * 3 + [False] * 2
    assert not await publisher.flush(0.1)  # not started: nothing leaves the queue
    await publisher.stop()
    assert publisher.counts == {"queue_full": 2, "shutdown": 3}
    with pytest.raises(ValueError, match="exactly one"):
        KafkaPublisher("t", queue_size=1, drain_timeout=1.0)
    with pytest.raises(ValueError, match="drain_timeout"):
        KafkaPublisher("t", bootstrap_servers="127.0.0.1:9", queue_size=1, drain_timeout=-1.0)
