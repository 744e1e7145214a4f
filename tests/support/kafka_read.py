"""Read back what was produced to a topic, and what a group committed, for tests."""

from __future__ import annotations

import time

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

__all__ = ["committed_offsets", "read_records"]


async def read_records(
    bootstrap: str, topic: str, count: int, within: float = 20.0
) -> list[ConsumerRecord[bytes, bytes]]:
    """At least `count` records from the start of `topic`, by `getmany`, within `within` s."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    try:
        records: list[ConsumerRecord[bytes, bytes]] = []
        deadline = time.monotonic() + within
        while len(records) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"got {len(records)} of {count} records from {topic}")
            for batch in (await consumer.getmany(timeout_ms=500)).values():
                records.extend(batch)
        return records
    finally:
        await consumer.stop()


async def committed_offsets(
    bootstrap: str, group: str, topic: str, partitions: int
) -> dict[int, int | None]:
    """The offset `group` committed on each of the topic's first `partitions` partitions
    (None: nothing committed)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group)
    await consumer.start()
    try:
        return {p: await consumer.committed(TopicPartition(topic, p)) for p in range(partitions)}
    finally:
        await consumer.stop()
