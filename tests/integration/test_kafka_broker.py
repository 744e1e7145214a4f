"""The real Kafka broker of the test suite, exercised with aiokafka as ragstream uses it."""

import time
from collections.abc import Iterable
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from tests.support import KafkaBroker, KafkaBrokerError, TopicFactory, fetch_kafka_jars

_MASK32 = 0xFFFFFFFF


def _murmur2(data: bytes) -> int:
    """Kafka's murmur2 (``Utils.murmur2`` of the Java client), as a signed 32-bit int."""
    m, r = 0x5BD1E995, 24
    h = (0x9747B28C ^ len(data)) & _MASK32
    whole = len(data) - len(data) % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & _MASK32
        k ^= k >> r
        k = (k * m) & _MASK32
        h = ((h * m) & _MASK32) ^ k
    rest = data[whole:]
    if len(rest) == 3:
        h ^= rest[2] << 16
    if len(rest) >= 2:
        h ^= rest[1] << 8
    if rest:
        h ^= rest[0]
        h = (h * m) & _MASK32
    h ^= h >> 13
    h = (h * m) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def _java_partition(key: bytes, partitions: int) -> int:
    """The partition Kafka's Java producer picks for a key: positive murmur2 mod count."""
    return (_murmur2(key) & 0x7FFFFFFF) % partitions


async def _drain(
    consumer: AIOKafkaConsumer, count: int, within: float = 20.0
) -> list[ConsumerRecord[bytes, bytes]]:
    """Read exactly ``count`` records with ``getmany``; fail on fewer in time or on extras."""
    records: list[ConsumerRecord[bytes, bytes]] = []
    deadline = time.monotonic() + within
    while len(records) < count:
        assert time.monotonic() < deadline, f"got {len(records)} of {count} records"
        batches = await consumer.getmany(timeout_ms=500, max_records=count - len(records))
        for batch in batches.values():
            records.extend(batch)
    assert not await consumer.getmany(timeout_ms=200), "more records than were produced"
    return records


async def _produce(bootstrap: str, topic: str, items: Iterable[tuple[bytes | None, bytes]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for key, value in items:
            await producer.send(topic, value, key=key)
        await producer.flush()
    finally:
        await producer.stop()


def test_murmur2_reference_matches_kafka_test_vectors() -> None:
    # Expected values from the Java client's own unit test of Utils.murmur2.
    assert _murmur2(b"21") == -973932308
    assert _murmur2(b"foobar") == -790332482
    assert _murmur2(b"a-little-bit-long-string") == -985981536
    assert _murmur2(b"a-little-bit-longer-string") == -1486304829
    assert _murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert _murmur2(b"abc") == 479470107


async def test_keyed_messages_come_back_whole_on_their_keys_partitions(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    topic = await kafka_topic_factory(partitions=3)
    keys = [f"query-{i}".encode() for i in range(12)]
    sent = [(keys[i % len(keys)], f"event-{i}".encode()) for i in range(120)]
    await _produce(kafka_broker.bootstrap_servers, topic, sent)

    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=f"{topic}-reader",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        got = await _drain(consumer, len(sent))
    finally:
        await consumer.stop()

    assert sorted((r.key, r.value) for r in got) == sorted(sent)
    for key in keys:
        on_key = [r for r in got if r.key == key]
        # One partition per key, the one a Java producer would pick, in send order.
        assert {r.partition for r in on_key} == {_java_partition(key, 3)}
        assert [r.value for r in on_key] == [v for k, v in sent if k == key]
    assert {r.partition for r in got} == {0, 1, 2}


async def test_committed_offsets_survive_a_consumer_restart(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    topic = await kafka_topic_factory()
    tp = TopicPartition(topic, 0)
    values = [f"v{i}".encode() for i in range(10)]
    await _produce(kafka_broker.bootstrap_servers, topic, [(None, v) for v in values])

    def consumer(group: str) -> AIOKafkaConsumer:
        return AIOKafkaConsumer(
            topic,
            bootstrap_servers=kafka_broker.bootstrap_servers,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )

    first = consumer("agent")
    await first.start()
    head: list[ConsumerRecord[bytes, bytes]] = []
    while len(head) < 4:
        batches = await first.getmany(timeout_ms=500, max_records=4 - len(head))
        head.extend(batches.get(tp, []))
    await first.commit({tp: head[-1].offset + 1})
    await first.stop()
    assert [r.value for r in head] == values[:4]

    second = consumer("agent")
    await second.start()
    try:
        assert await second.committed(tp) == 4
        rest = await _drain(second, 6)
    finally:
        await second.stop()
    assert [r.offset for r in rest] == list(range(4, 10))
    assert [r.value for r in rest] == values[4:]

    # The commit belongs to the group: another group starts from the beginning.
    other = consumer("other-agent")
    await other.start()
    try:
        assert [r.value for r in await _drain(other, 10)] == values
    finally:
        await other.stop()


_TOPICS_SEEN: set[str] = set()


@pytest.mark.parametrize("run", ["first", "second"])
async def test_each_test_gets_its_own_empty_topics(
    run: str, kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    one, two = await kafka_topic_factory(partitions=2), await kafka_topic_factory()
    assert one != two
    assert run in one
    assert _TOPICS_SEEN.isdisjoint({one, two})
    _TOPICS_SEEN.update({one, two})

    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap_servers)
    await admin.start()
    try:
        described = {t["topic"]: len(t["partitions"]) for t in await admin.describe_topics()}
    finally:
        await admin.close()
    assert described[one] == 2
    assert described[two] == 1

    consumer = AIOKafkaConsumer(bootstrap_servers=kafka_broker.bootstrap_servers)
    await consumer.start()
    try:
        tps = [TopicPartition(one, 0), TopicPartition(one, 1), TopicPartition(two, 0)]
        assert set((await consumer.end_offsets(tps)).values()) == {0}
    finally:
        await consumer.stop()


async def test_creating_an_existing_topic_is_an_error(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    topic = await kafka_topic_factory()
    with pytest.raises(KafkaBrokerError, match="TopicAlreadyExists"):
        await kafka_broker.create_topic(topic, 1)


@pytest.mark.kafka
@pytest.mark.slow
def test_a_broker_of_its_own_starts_serves_and_stops_without_trace() -> None:
    broker = KafkaBroker(fetch_kafka_jars(), heap="256m")
    with broker:
        assert broker.running
        assert broker.bootstrap_servers.startswith("127.0.0.1:")
        assert "Kafka Server started" in broker.log_path.read_text()
        work_dir = broker.work_dir
    assert not broker.running
    assert not work_dir.exists()
    with pytest.raises(KafkaBrokerError, match="not running"):
        _ = broker.bootstrap_servers


def test_a_missing_java_is_reported_before_anything_starts(tmp_path: Path) -> None:
    broker = KafkaBroker(tmp_path, work_dir=tmp_path, java=str(tmp_path / "no-java"))
    with pytest.raises(KafkaBrokerError, match="Java 17"):
        broker.start()
    assert not broker.running


def test_a_failing_storage_format_is_reported_with_its_output(tmp_path: Path) -> None:
    broker = KafkaBroker(tmp_path, work_dir=tmp_path, java="false")
    with pytest.raises(KafkaBrokerError, match="storage format failed"):
        broker.start()
    assert not broker.running
