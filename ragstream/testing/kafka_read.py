"""Read back what was produced to a topic, for tests that check a producer's output."""

from __future__ import annotations

import time

from aiokafka import AIOKafkaConsumer, ConsumerRecord

__all__ = ["read_records"]


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
