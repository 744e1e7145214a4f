"""`partition_for`: each partitioner against the reference values of the client it follows,
and against the clients themselves (Kafka's Java producer, librdkafka through
confluent-kafka on the real broker)."""

from __future__ import annotations

import asyncio
import random
import subprocess
import zlib
from pathlib import Path

import pytest
from aiokafka.partitioner import murmur2

from ragstream.producer import PARTITIONERS, _fnv1a, partition_for
from tests.support import KafkaBroker, TopicFactory, fetch_kafka_jars

_JAVA = Path(__file__).parent / "java" / "KafkaPartitions.java"


def _keys(n: int, seed: int = 3) -> list[bytes]:
    """Keys as producers write them: trace ids in hex, query ids, and arbitrary bytes."""
    rng = random.Random(seed)
    keys = [f"{rng.getrandbits(128):032x}".encode() for _ in range(n)]
    keys += [f"q-{i}-ünï".encode() for i in range(n)]
    keys += [rng.randbytes(rng.randrange(1, 40)) for _ in range(n)]
    return keys


# Kafka's UtilsTest.testMurmur2 vectors (the Java int, signed).
_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize(("key", "signed"), _MURMUR2.items())
def test_murmur2_is_kafkas(key: bytes, signed: int) -> None:
    assert murmur2(key) == signed & 0xFFFFFFFF
    # the partition drops the sign bit (Utils.toPositive)
    assert partition_for(key, 1000, "murmur2") == (signed & 0x7FFFFFFF) % 1000


def test_murmur2_partitions_are_the_java_clients() -> None:
    """Kafka's own producer code (BuiltInPartitioner.partitionForKey, kafka-clients from the
    broker's jars) gives every key, for 1 to 13 partitions and 1000, our partition."""
    keys = _keys(60)
    counts = [*range(1, 14), 1000]
    cases = [(count, key) for key in keys for count in counts]
    done = subprocess.run(
        ["java", "-cp", f"{fetch_kafka_jars()}/*", str(_JAVA)],
        input="".join(f"{count} {key.hex()}\n" for count, key in cases),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    java = [int(line) for line in done.stdout.split()]
    assert java == [partition_for(key, count, "murmur2") for count, key in cases]
    assert len(set(java)) > 13  # the keys spread over the partitions


# Sarama's TestConsistentCRCHashPartitioner (NewConsistentCRCHashPartitioner, which it
# documents as librdkafka's consistent_random), 100 partitions. "SheetJS" has the high bit
# set: the unsigned hash gives 26, a signed one would give 70.
_CRC32_100 = {
    b"abc123def456": 57,
    b"SheetJS": 26,
    b"9e8c7f4cf45857cfff7645d6": 24,
    b"3900446192ff85a5f67da10c": 75,
    b"0f4407b7a67d6d27de372198": 50,
}


@pytest.mark.parametrize(("key", "partition"), _CRC32_100.items())
def test_crc32_is_librdkafkas_consistent_partitioner(key: bytes, partition: int) -> None:
    assert partition_for(key, 100, "crc32") == partition


# Go's hash/fnv golden values for New32a.
_FNV1A = {b"": 0x811C9DC5, b"a": 0xE40C292C, b"ab": 0x4D2505CA, b"abc": 0x1A47E90B}


def test_fnv1a_is_saramas_hash_partitioner() -> None:
    for key, value in _FNV1A.items():
        assert _fnv1a(key) == value
    # Sarama's TestHashPartitionerMinInt32 key: its hash is 2**31, int32's minimum
    assert _fnv1a(b"1468509572224") == 1 << 31
    assert partition_for(b"1468509572224", 50, "fnv1a") == (1 << 31) % 50 == 48
    # A hash with the high bit set is negative as an int32; Go's remainder keeps the
    # dividend's sign and Sarama negates it: |int32(h)| % n, not the unsigned h % n that
    # librdkafka's fnv1a partitioner takes.
    high = next(
        k
        for k in _keys(50)
        if _fnv1a(k) >> 31 and (_fnv1a(k) % 7) != (-(_fnv1a(k) - (1 << 32))) % 7
    )
    assert partition_for(high, 7, "fnv1a") == ((1 << 32) - _fnv1a(high)) % 7


def test_partitioners_disagree_and_reject_no_partitions() -> None:
    keys = _keys(20)
    spread = {name: [fn(k, 12) for k in keys] for name, fn in PARTITIONERS.items()}
    assert len({tuple(v) for v in spread.values()}) == 3
    assert all(set(v) <= set(range(12)) for v in spread.values())
    with pytest.raises(ValueError, match="at least one partition"):
        partition_for(b"k", 0)
    assert partition_for(b"k", 1, "crc32") == 0
    assert zlib.crc32(b"k") % 5 == partition_for(b"k", 5, "crc32")


@pytest.mark.kafka
async def test_crc32_partitions_are_confluent_kafkas(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    """confluent-kafka (librdkafka in its wheel) with its default partitioner, on the real
    broker: every keyed record lands where partition_for(..., "crc32") says."""
    from confluent_kafka import Producer

    partitions = 7
    topic = await kafka_topic_factory(partitions)
    keys = _keys(30)
    landed: dict[bytes, int] = {}

    def report(err: object, msg: object) -> None:
        assert err is None, err
        landed[msg.key()] = msg.partition()  # type: ignore[attr-defined]

    def produce() -> None:
        producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers})
        for key in keys:
            producer.produce(topic, value=b"x", key=key, on_delivery=report)
        assert producer.flush(30) == 0

    await asyncio.to_thread(produce)
    assert landed == {key: partition_for(key, partitions, "crc32") for key in keys}
    assert len(set(landed.values())) == partitions
