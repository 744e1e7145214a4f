"""Produce keyed records to a topic and wait until the broker has them all."""

from __future__ import annotations

from collections.abc import Iterable

from aiokafka import AIOKafkaProducer

__all__ = ["produce_records"]


async def produce_records(
    bootstrap: str, topic: str, records: Iterable[tuple[bytes | None, bytes | None]]
) -> None:
    """Send `(key, value)` pairs in order (keyed ones land on Kafka's partition; a value of
    None is a tombstone), then flush."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        for key, value in records:
            await producer.send(topic, value=value, key=key)
        await producer.flush()
    finally:
        await producer.stop()
