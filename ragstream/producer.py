"""Sending events to Kafka from a Python service: `EventProducer`, keyed by `query_id`.

The events themselves are built and encoded by the helpers in `ragstream.events`
(`retrieval_event`, `encode_event`, `message_key`, ...); this module only adds the Kafka
client around them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, get_args

from aiokafka import AIOKafkaProducer

from ragstream.events import DecodedEvent, Event, EventType, encode_event, message_key

__all__ = ["EventProducer"]

_EVENT_TYPES: tuple[EventType, ...] = get_args(EventType)


class EventProducer:
    """Sends events to Kafka with `aiokafka`, keyed by `query_id`.

    Give either `bootstrap_servers` (the producer is created, started and stopped here; extra
    keyword arguments such as `security_protocol` or `sasl_mechanism` go to
    `AIOKafkaProducer`) or an existing `producer`, whose lifecycle stays with the caller.
    `topic` is one topic for every type or a mapping from type to topic (co-partitioned).
    """

    def __init__(
        self,
        topic: str | Mapping[EventType, str],
        *,
        bootstrap_servers: str | Sequence[str] | None = None,
        producer: Any = None,
        **producer_options: Any,
    ) -> None:
        if (bootstrap_servers is None) == (producer is None):
            raise ValueError("give exactly one of bootstrap_servers or producer")
        if producer is not None and producer_options:
            raise ValueError("producer options only apply when the producer is created here")
        self._topics: dict[EventType, str] = (
            dict.fromkeys(_EVENT_TYPES, topic) if isinstance(topic, str) else dict(topic)
        )
        self._bootstrap_servers = bootstrap_servers
        self._options = producer_options
        self._producer: Any = producer
        self._owned = producer is None

    def topic_for(self, event: Event | DecodedEvent) -> str:
        """The topic an event goes to; `KeyError` when its type has no topic."""
        return self._topics[event.type]

    async def start(self) -> None:
        """Create and start the producer (when owned); connects to the cluster."""
        if self._owned and self._producer is None:
            producer = AIOKafkaProducer(bootstrap_servers=self._bootstrap_servers, **self._options)
            await producer.start()
            self._producer = producer

    async def stop(self) -> None:
        """Flush pending messages and stop the producer (when owned)."""
        if self._owned and self._producer is not None:
            producer, self._producer = self._producer, None
            await producer.stop()

    async def send(self, event: Event | DecodedEvent) -> Any:
        """Send one event and wait for the broker's acknowledgement; returns its RecordMetadata."""
        if self._producer is None:
            raise RuntimeError("EventProducer is not started (use `async with` or start())")
        return await self._producer.send_and_wait(
            self.topic_for(event), value=encode_event(event), key=message_key(event)
        )

    async def __aenter__(self) -> EventProducer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
