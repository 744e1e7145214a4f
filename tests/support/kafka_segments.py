"""Record batches as a producer compresses them and as the broker keeps them on disk.

`produce_batch` sends records as one record batch compressed with a given codec (aiokafka's
producer, `compression_type=`). `segment_batches` reads the headers of the batches in a
partition's log segment, and `corrupt_batch` damages one there, in place, as a failing disk
or a faulty writer would: the broker checks batches when they are produced, not when it
serves them, so a consumer receives the damaged bytes. Kafka's record batch (v2) header:

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 |
    crc uint32 (CRC-32C of everything after it) | attributes int16 (codec: bits 0-2) |
    lastOffsetDelta int32 | firstTimestamp int64 | maxTimestamp int64 | producerId int64 |
    producerEpoch int16 | baseSequence int32 | recordsCount int32 | records (compressed)
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from aiokafka import AIOKafkaProducer
from aiokafka.record.util import calc_crc32c

__all__ = [
    "CODEC_IDS",
    "Damage",
    "SegmentBatch",
    "corrupt_batch",
    "produce_batch",
    "segment_batches",
    "segment_file",
]

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
"""Kafka's codec ids, as the low bits of a batch's attributes carry them."""

_CRC_AT, _ATTRIBUTES_AT, _RECORDS_AT = 17, 21, 61

Damage = Literal["payload", "crc", "codec"]
"""What `corrupt_batch` breaks: the compressed payload's first bytes (the CRC made to match,
so that only decompression fails), the CRC alone, or the codec id (an id no Kafka client
knows, the CRC made to match: as a codec the consumer has no library for)."""


@dataclass(frozen=True)
class SegmentBatch:
    """One record batch in a log segment file."""

    position: int
    """Its byte position in the file."""
    base_offset: int
    """The offset of its first record."""
    size: int
    """Its size in bytes, header included."""
    codec: int
    """Its codec id (`CODEC_IDS`)."""
    records: int
    """How many records it holds."""

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.records - 1


async def produce_batch(
    bootstrap: str,
    topic: str,
    partition: int,
    records: Sequence[tuple[bytes | None, bytes]],
    codec: str,
) -> None:
    """Send `records` to one partition as a single batch compressed with `codec`."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        compression_type=None if codec == "none" else codec,
        linger_ms=1000,  # every record joins the batch; `flush` sends it
        max_batch_size=16 << 20,
        max_request_size=16 << 20,
    )
    await producer.start()
    try:
        for key, value in records:
            await producer.send(topic, value=value, key=key, partition=partition)
        await producer.flush()
    finally:
        await producer.stop()


def segment_file(data_dir: Path, topic: str, partition: int) -> Path:
    """The first (here: the only) log segment of a partition."""
    return data_dir / f"{topic}-{partition}" / "00000000000000000000.log"


def segment_batches(path: Path) -> list[SegmentBatch]:
    """The batches of a log segment, in order."""
    data = path.read_bytes()
    out: list[SegmentBatch] = []
    position = 0
    while position + _RECORDS_AT <= len(data):
        base, length = struct.unpack_from(">qi", data, position)
        (attributes,) = struct.unpack_from(">h", data, position + _ATTRIBUTES_AT)
        (count,) = struct.unpack_from(">i", data, position + _RECORDS_AT - 4)
        out.append(SegmentBatch(position, base, length + 12, attributes & 0x07, count))
        position += length + 12
    return out


def corrupt_batch(path: Path, batch: SegmentBatch, damage: Damage) -> None:
    """Damage `batch` in the segment file, in place (see `Damage`)."""
    with path.open("r+b") as file:
        file.seek(batch.position)
        raw = bytearray(file.read(batch.size))
        if damage == "payload":
            raw[_RECORDS_AT : _RECORDS_AT + 8] = b"\xff" * 8
        elif damage == "codec":
            (attributes,) = struct.unpack_from(">h", raw, _ATTRIBUTES_AT)
            struct.pack_into(">h", raw, _ATTRIBUTES_AT, (attributes & ~0x07) | 0x07)
        if damage == "crc":
            (crc,) = struct.unpack_from(">I", raw, _CRC_AT)
            struct.pack_into(">I", raw, _CRC_AT, crc ^ 0xFFFFFFFF)
        else:
            struct.pack_into(">I", raw, _CRC_AT, calc_crc32c(bytes(raw[_ATTRIBUTES_AT:])))
        file.seek(batch.position)
        file.write(raw)
