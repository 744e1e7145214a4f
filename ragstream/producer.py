"""Sending events to Kafka from a Python service: `EventProducer`, keyed by `query_id`.

The events themselves are built and encoded by the helpers in `ragstream.events`
(`retrieval_event`, `encode_event`, `message_key`, ...); this module only adds the Kafka
client around them, and the partition of a key as each family of Kafka producers computes
it (`partition_for`), so that feedback lands on the partition of its query's other records
whichever client wrote those (docs/opentelemetry.md, "Partitioning").
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, get_args

from aiokafka import AIOKafkaProducer
from aiokafka.partitioner import murmur2

from ragstream.events import DecodedEvent, Event, EventType, encode_event, message_key

__all__ = ["PARTITIONERS", "EventProducer", "Partitioner", "partition_for"]

_EVENT_TYPES: tuple[EventType, ...] = get_args(EventType)

Partitioner = Literal["murmur2", "crc32", "fnv1a"]
"""How a key's partition is computed: `murmur2` as the Java client, aiokafka, franz-go and
librdkafka's `murmur2_random` do; `crc32` as librdkafka's default `consistent_random` does
(confluent-kafka); `fnv1a` as Sarama's default hash partitioner, and the Collector's kafka
exporter by default, do."""

_FNV_OFFSET, _FNV_PRIME = 0x811C9DC5, 0x01000193


def _fnv1a(data: bytes) -> int:
    """32-bit FNV-1a (Go's `hash/fnv` New32a)."""
    h = _FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return h


def _kafka(key: bytes, count: int) -> int:
    # Java's Utils.toPositive(Utils.murmur2(key)) % count: the sign bit dropped.
    h: int = murmur2(key)
    return (h & 0x7FFFFFFF) % count


def _librdkafka(key: bytes, count: int) -> int:
    # librdkafka's rd_kafka_msg_partitioner_consistent: the unsigned CRC-32 modulo count.
    return zlib.crc32(key) % count


def _sarama(key: bytes, count: int) -> int:
    # Sarama's hashPartitioner: int32(hash) % count (Go truncates towards zero), negated
    # when negative; that is |int32(hash)| % count.
    h = _fnv1a(key)
    return abs(h - (1 << 32) if h & 0x80000000 else h) % count


PARTITIONERS: Mapping[Partitioner, Callable[[bytes, int], int]] = {
    "murmur2": _kafka,
    "crc32": _librdkafka,
    "fnv1a": _sarama,
}
"""Each partitioner as a function of (key, number of partitions)."""


def partition_for(key: bytes, partitions: int, partitioner: Partitioner = "murmur2") -> int:
    """The partition, of `partitions`, that `partitioner` gives a non-empty `key`."""
    if partitions < 1:
        raise ValueError(f"a topic has at least one partition, not {partitions}")
    return PARTITIONERS[partitioner](key, partitions)


class EventProducer:
    """Sends events to Kafka with `aiokafka`, keyed by `query_id`.

    Give either `bootstrap_servers` (the producer is created, started and stopped here; extra
    keyword arguments such as `security_protocol` or `sasl_mechanism` go to
    `AIOKafkaProducer`) or an existing `producer`, whose lifecycle stays with the caller.
    `topic` is one topic for every type or a mapping from type to topic (co-partitioned).
    `partitioner` chooses each event's partition from its key as the producers of the
    query's other records do (`Partitioner`; `murmur2`, Kafka's and aiokafka's own, by
    default), for a created and a given producer alike.
    """

    def __init__(
        self,
        topic: str | Mapping[EventType, str],
        *,
        bootstrap_servers: str | Sequence[str] | None = None,
        producer: Any = None,
        partitioner: Partitioner = "murmur2",
        **producer_options: Any,
    ) -> None:
        if (bootstrap_servers is None) == (producer is None):
            raise ValueError("give exactly one of bootstrap_servers or producer")
        if partitioner not in PARTITIONERS:
            raise ValueError(f"unknown partitioner {partitioner!r}: one of {sorted(PARTITIONERS)}")
        if producer is not None and producer_options:
            raise ValueError("producer options only apply when the producer is created here")
        self._topics: dict[EventType, str] = (
            dict.fromkeys(_EVENT_TYPES, topic) if isinstance(topic, str) else dict(topic)
        )
        self._bootstrap_servers = bootstrap_servers
        self._options = producer_options
        self._producer: Any = producer
        self._owned = producer is None
        self._partitioner: Partitioner = partitioner

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
        """Send one event to its key's partition and wait for the broker's acknowledgement;
        returns its RecordMetadata."""
        if self._producer is None:
            raise RuntimeError("EventProducer is not started (use `async with` or start())")
        topic, key = self.topic_for(event), message_key(event)
        partitions = await self._producer.partitions_for(topic)
        partition = partition_for(key, len(partitions), self._partitioner)
        return await self._producer.send_and_wait(
            topic, value=encode_event(event), key=key, partition=partition
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
