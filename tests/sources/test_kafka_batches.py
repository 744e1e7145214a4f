"""Locating a record batch aiokafka cannot read, from the error its fetcher raises: batches
built and damaged here, read by the installed aiokafka's own record reader (the real
broker's case is tests/integration/test_kafka_codecs.py)."""

from __future__ import annotations

import struct

import pytest
from aiokafka import TopicPartition
from aiokafka.consumer.fetcher import PartitionRecords
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.memory_records import MemoryRecords
from aiokafka.record.util import calc_crc32c

from ragstream.sources.kafka_batches import (
    CODECS,
    UndecodableBatch,
    missing_codecs,
    undecodable_batch,
)
from tests.support.kafka_segments import CODEC_IDS

TP = TopicPartition("rag-events", 3)


def _batch(base: int, n: int, codec: int) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=0, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )  # fmt: skip
    for i in range(n):
        builder.append(i, timestamp=1_700_000_000_000, key=None, value=b"x" * 200, headers=[])
    raw = bytearray(builder.build())
    struct.pack_into(">q", raw, 0, base)  # the broker assigns the base offset
    struct.pack_into(">I", raw, 17, calc_crc32c(bytes(raw[21:])))
    return bytes(raw)


def _damaged(raw: bytes) -> bytes:
    out = bytearray(raw)
    out[61:69] = b"\xff" * 8
    struct.pack_into(">I", out, 17, calc_crc32c(bytes(out[21:])))
    return bytes(out)


def _read(data: bytes) -> list[int]:
    records = PartitionRecords(TP, MemoryRecords(data), [], 0, None, None, True, 0)
    return [r.offset for r in records]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_the_damaged_batch_is_named_by_partition_offsets_and_codec(codec: str) -> None:
    good = _batch(0, 5, CODEC_IDS[codec])
    assert _read(good) == [0, 1, 2, 3, 4]
    bad = _damaged(_batch(5, 7, CODEC_IDS[codec]))
    with pytest.raises(Exception) as raised:  # noqa: PT011 (whatever the codec raises)
        _read(good + bad + _batch(12, 3, CODEC_IDS[codec]))
    found = undecodable_batch(raised.value)
    assert found is not None
    assert (found.tp, found.first_offset, found.next_offset) == (TP, 5, 12)
    assert found.codec == codec
    assert found.describe().startswith(f"{codec} record batch at offsets 5-11 of rag-events[3]")


def test_a_crc_error_is_named_too() -> None:
    raw = bytearray(_batch(40, 4, CODEC_IDS["zstd"]))
    raw[-1] ^= 0xFF
    with pytest.raises(Exception) as raised:  # noqa: PT011
        _read(bytes(raw))
    found = undecodable_batch(raised.value)
    assert found is not None
    assert (found.first_offset, found.next_offset) == (40, 44)
    assert "Invalid CRC" in found.error


def test_an_error_raised_elsewhere_names_no_batch() -> None:
    def fails(tp: TopicPartition) -> None:
        raise ValueError(f"not a batch of {tp}")

    with pytest.raises(ValueError, match="not a batch") as raised:
        fails(TP)
    assert undecodable_batch(raised.value) is None
    assert undecodable_batch(RuntimeError("no traceback")) is None


def test_a_batch_is_the_same_whatever_the_wording_of_its_error() -> None:
    one = UndecodableBatch(TP, 5, 12, "zstd", "DecompressionError: a")
    assert one.same_as(UndecodableBatch(TP, 5, 12, "zstd", "DecompressionError: b"))
    assert not one.same_as(UndecodableBatch(TP, 12, 20, "zstd", "DecompressionError: a"))
    assert not one.same_as(None)


def test_every_codec_is_installed_and_named() -> None:
    assert missing_codecs() == []
    assert {CODECS[i] for i in CODEC_IDS.values()} == {"uncompressed", *CODEC_IDS} - {"none"}
