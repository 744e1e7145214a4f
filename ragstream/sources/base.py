"""What every source hands the pipeline: batches of raw messages, and a way to commit them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Message", "Source"]


@dataclass(slots=True)
class Message:
    """One raw message, before decoding. Treat it as read-only; it is not frozen only
    because a frozen dataclass takes four times as long to build (~1 us more a message,
    on the hot path of every source)."""

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


class Source(Protocol):
    """A stream of message batches. Offsets are committed only after a batch is applied."""

    def batches(self) -> AsyncIterator[Sequence[Message]]:
        """Yield batches until the source ends or `stop()` is called."""
        ...

    async def commit(self, batch: Sequence[Message]) -> None:
        """Record that every message of `batch` (and all before it) has been applied."""
        ...

    async def stop(self) -> None:
        """Stop yielding; the current batch may still be committed."""
        ...
