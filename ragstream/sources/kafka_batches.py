"""A Kafka record batch the consumer cannot read: which one, from the error `getmany` raised.

A batch aiokafka cannot decompress or check (a bad payload, a CRC mismatch, a codec without
its library) raises out of `getmany` on every retry, and the error names neither the
partition nor the offsets; the records already taken from other partitions in that call go
with it (`KafkaSource` seeks them back). aiokafka raises it from the frame that iterates the
partition's batches, whose locals hold the partition and the batch header: `undecodable_batch`
reads them from the traceback, at no cost until a batch fails
(tests/integration/test_kafka_codecs.py checks this against the installed aiokafka).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition, codec

__all__ = ["CODECS", "UndecodableBatch", "missing_codecs", "read_up_to", "undecodable_batch"]

CODECS = {0: "uncompressed", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
"""Kafka's codec ids (the low 3 bits of a record batch's attributes) and their names."""


def missing_codecs() -> list[str]:
    """The codecs the installed aiokafka cannot read (their libraries are missing): their
    batches would all be skipped as `bad_batch`. None, with ragstream's dependencies."""
    readable = {
        "gzip": codec.has_gzip,
        "snappy": codec.has_snappy,
        "lz4": codec.has_lz4,
        "zstd": codec.has_zstd,
    }
    return [name for name, has in readable.items() if not has()]


@dataclass(frozen=True, slots=True)
class UndecodableBatch:
    """A record batch `getmany` could not read."""

    tp: TopicPartition
    """Its topic and partition."""
    first_offset: int
    """The offset of its first record (the batch's base offset)."""
    next_offset: int
    """The offset after its last record: where consumption goes on."""
    codec: str
    """How it says it is compressed (`gzip`, `snappy`, `lz4`, `zstd`, `uncompressed`)."""
    error: str
    """What reading it raised, `Type: message`."""

    def describe(self) -> str:
        """One line for a log, a counter's dead letter and a person."""
        return (
            f"{self.codec} record batch at offsets {self.first_offset}-{self.next_offset - 1}"
            f" of {self.tp.topic}[{self.tp.partition}] cannot be read ({self.error})"
        )

    def same_as(self, other: UndecodableBatch | None) -> bool:
        """True when `other` is this batch (the error may differ in wording)."""
        return other is not None and (other.tp, other.first_offset, other.next_offset) == (
            self.tp,
            self.first_offset,
            self.next_offset,
        )


def undecodable_batch(error: BaseException) -> UndecodableBatch | None:
    """The batch `error` was raised while reading, or None when it was not raised from
    inside a record batch (a broker error, a stopped consumer: not ours to skip)."""
    tb = error.__traceback__
    found: UndecodableBatch | None = None
    while tb is not None:  # outermost to innermost: the innermost batch reader wins
        found = _batch_of(tb.tb_frame.f_locals, error) or found
        tb = tb.tb_next
    return found


def _batch_of(names: dict[str, object], error: BaseException) -> UndecodableBatch | None:
    """A partition and a record batch among one frame's locals, as `UndecodableBatch`."""
    tp = next((v for v in names.values() if isinstance(v, TopicPartition)), None)
    if tp is None:
        return None
    for value in names.values():
        first = getattr(value, "base_offset", None)
        after = getattr(value, "next_offset", None)
        kind = getattr(value, "compression_type", None)
        if isinstance(first, int) and isinstance(after, int) and after > first:
            codec = CODECS.get(kind, f"codec {kind}") if isinstance(kind, int) else "unknown"
            return UndecodableBatch(tp, first, after, codec, f"{type(error).__name__}: {error}")
    return None


async def read_up_to(
    consumer: AIOKafkaConsumer, bad: UndecodableBatch, timeout_ms: int
) -> tuple[list[Any], bool]:
    """The records of `bad`'s partition from the consumer's position up to `bad`, and
    whether they reach it (False: the broker did not answer, the partition was revoked).

    After the `getmany` that met `bad` the partition's position is still where that call
    began, and the records it read before the batch were dropped with the error. They are
    read again: as many as there are offsets before the batch at first (the most there can
    be: `getmany` stops right before it), then one at a time if that ran into the batch
    (offsets without a record: compaction, transaction markers)."""
    tp, idle = bad.tp, 0
    out: list[Any] = []
    step: int | None = None
    while idle < 3:
        try:
            left = bad.first_offset - await consumer.position(tp)
            if left <= 0:
                return out, True
            step = left if step is None else min(step, left)
            got = await consumer.getmany(tp, timeout_ms=timeout_ms, max_records=step)
        except Exception as error:
            if not bad.same_as(undecodable_batch(error)):
                break  # revoked, the broker went away, ...: the next poll goes on
            if step == 1:
                return out, True  # no record is left before it
            step = 1
            continue
        records = got.get(tp, [])
        idle = 0 if records else idle + 1
        out.extend(records)
    return out, False
