"""Invalid messages to a Kafka dead-letter topic, unchanged, with the reason in headers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiokafka import AIOKafkaProducer

from ragstream.events import DecodeError, Record, value_of

__all__ = ["KafkaDeadLetters", "dead_letter_headers"]


def dead_letter_headers(message: Record, error: DecodeError) -> list[tuple[str, bytes]]:
    """Headers that say why and where from: reason, detail, topic, partition, offset."""
    return [
        ("ragstream.reason", error.reason.encode()),
        ("ragstream.detail", error.detail.encode()[:1000]),
        ("ragstream.topic", message.topic.encode()),
        ("ragstream.partition", str(message.partition).encode()),
        ("ragstream.offset", str(message.offset).encode()),
    ]


class KafkaDeadLetters:
    """Sends each invalid message's original key and value to `topic`."""

    def __init__(self, topic: str, *, bootstrap_servers: str, **client: Any) -> None:
        self.topic = topic
        self.sent = 0
        self._producer = AIOKafkaProducer(bootstrap_servers=bootstrap_servers, acks="all", **client)

    async def start(self) -> None:
        await self._producer.start()

    async def stop(self) -> None:
        await self._producer.stop()

    async def send(self, invalid: Sequence[tuple[Record, DecodeError]]) -> None:
        """Send and wait for the broker's acknowledgements (before the batch is committed)."""
        futures = [
            await self._producer.send(
                self.topic,
                value=value_of(message),
                key=message.key,
                headers=dead_letter_headers(message, error),
            )
            for message, error in invalid
        ]
        for future in futures:
            await future
        self.sent += len(futures)
