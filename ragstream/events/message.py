"""One raw message as the sources hand it over, before decoding: a `Message`, or any
`Record` with the same fields (a Kafka client's own record)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["Message", "Record", "value_of"]


class Record(Protocol):
    """What the engine, the runner and the sinks read of a message: `Message`'s fields,
    read-only, as aiokafka's `ConsumerRecord` has them. A value of None (a Kafka tombstone)
    reads as empty: `BatchReader` counts it `empty`, and `value_of` gives the bytes."""

    @property
    def value(self) -> bytes | None: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def topic(self) -> str: ...
    @property
    def key(self) -> bytes | None: ...


@dataclass(slots=True)
class Message:
    """One raw message, before decoding (read-only by convention)."""

    value: bytes
    """The message body: one JSON event (SPEC §1)."""
    partition: int = 0
    """The Kafka partition (0 for files and synthetic traffic)."""
    offset: int = 0
    """The Kafka offset, or the line number in a file."""
    topic: str = ""
    """The Kafka topic, or the file name."""
    key: bytes | None = None
    """The message key; should be the query id."""


def value_of(record: Record) -> bytes:
    """A record's value as bytes: a tombstone's (None) is empty, as `BatchReader` reads it."""
    return record.value or b""
