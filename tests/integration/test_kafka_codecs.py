"""Compressed topics on the real broker: every codec Kafka has is read by the agent's source,
and a record batch that cannot be read is counted, dead-lettered and skipped, the records
around it applied."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Sequence

import pytest

from ragstream.cli._settings import settings_from_flags
from ragstream.events import Message
from ragstream.pipeline.engine import Engine
from ragstream.pipeline.runner import Runner
from ragstream.sources.kafka_batches import missing_codecs
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from ragstream.wiring import dead_letters, engine_config, kafka_source
from tests.support import KafkaBroker, TopicFactory, committed_offsets, read_records
from tests.support.kafka_segments import (
    CODEC_IDS,
    Damage,
    corrupt_batch,
    produce_batch,
    segment_batches,
    segment_file,
)

pytestmark = pytest.mark.kafka

Records = list[tuple[bytes | None, bytes]]


def _events(n: int, seed: int) -> Records:
    return [(e.key, e.value) for e in SyntheticTraffic(SyntheticConfig(seed=seed)).take(n)]


def _agent(broker: KafkaBroker, topic: str, dead: str | None = None) -> tuple[Engine, Runner]:
    """The engine, source and dead letters as `ragstream run` builds them."""
    flat = [
        "kafka.auto_offset_reset=earliest",
        "kafka.poll_timeout=0.2s",
        "state.enabled=false",
        "windows.clock=event",
    ]
    if dead is not None:
        flat.append(f"kafka.dead_letter_topic={dead}")
    settings = settings_from_flags(
        None, broker.bootstrap_servers, (topic,), f"g-{topic}", None, tuple(flat)
    )
    engine = Engine(engine_config(settings))
    source = kafka_source(settings, engine)
    return engine, Runner(engine, source, dead_letters=dead_letters(settings))


async def _run(runner: Runner, until: int, within: float = 60.0) -> None:
    """Run until the engine has counted `until` messages, then stop it as SIGTERM does."""
    source, letters = runner.source, runner.dead_letters
    await asyncio.wait_for(source.start(), 30)  # type: ignore[attr-defined]
    if letters is not None:
        await letters.start()  # type: ignore[attr-defined]
    task = asyncio.create_task(runner.run())
    try:
        deadline = time.monotonic() + within
        while sum(runner.engine.events.values()) < until:
            assert not task.done(), task
            assert time.monotonic() < deadline, f"counted {runner.engine.events}"
            await asyncio.sleep(0.05)
    finally:
        runner.stop()
        await asyncio.wait_for(task, 30)
        await source.stop()
        if letters is not None:
            await letters.stop()  # type: ignore[attr-defined]


def _reference(records: Sequence[tuple[bytes | None, bytes]]) -> Counter[tuple[str, str]]:
    """The event counts of an in-process engine (the agent's settings) that saw `records`."""
    settings = settings_from_flags(None, None, ("t",), None, None, ("windows.clock=event",))
    engine = Engine(engine_config(settings))
    engine.apply([Message(v, 0, i, "t", k) for i, (k, v) in enumerate(records)])
    return engine.events


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
async def test_every_codec_is_read(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory, codec: str
) -> None:
    assert missing_codecs() == []  # installed with ragstream's own dependencies
    topic = await kafka_topic_factory(1)
    records = _events(600, seed=3)
    for start in range(0, len(records), 200):  # three batches
        await produce_batch(
            kafka_broker.bootstrap_servers, topic, 0, records[start : start + 200], codec
        )
    batches = segment_batches(segment_file(kafka_broker.work_dir / "data", topic, 0))
    assert [b.codec for b in batches] == [CODEC_IDS[codec]] * 3  # compressed as asked
    assert sum(b.records for b in batches) == len(records)

    engine, runner = _agent(kafka_broker, topic)
    await _run(runner, len(records))
    assert engine.events == _reference(records)
    assert not engine.invalid


async def test_an_undecodable_batch_is_counted_dead_lettered_and_skipped(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    """Partition 0: good, then a damaged batch of each codec, a CRC error and an unknown
    codec, then good again; partition 1: good throughout. All in one fetch, so that the
    records before a bad batch (its own partition's and the other's) were taken by the
    call that met it and must be read again."""
    topic, dead = await kafka_topic_factory(2), await kafka_topic_factory(1)
    bootstrap = kafka_broker.bootstrap_servers
    good_before, good_after, other = _events(150, 5), _events(150, 6), _events(300, 7)
    plan: list[tuple[str, Records, Damage | None]] = [
        ("lz4", good_before, None),
        *((codec, _events(40, 10 + i), "payload") for i, codec in enumerate(CODEC_IDS)
          if codec != "none"),
        ("zstd", _events(40, 20), "crc"),
        ("snappy", _events(40, 21), "codec"),
        ("gzip", good_after, None),
    ]  # fmt: skip
    for codec, records, _ in plan:
        await produce_batch(bootstrap, topic, 0, records, codec)
    await produce_batch(bootstrap, topic, 1, other, "zstd")
    path = segment_file(kafka_broker.work_dir / "data", topic, 0)
    batches = segment_batches(path)
    assert len(batches) == len(plan)
    damaged = [(b, damage) for b, (_, _, damage) in zip(batches, plan, strict=True) if damage]
    for batch, damage in damaged:
        corrupt_batch(path, batch, damage)

    engine, runner = _agent(kafka_broker, topic, dead)
    readable = len(good_before) + len(good_after) + len(other)
    await _run(runner, readable + len(damaged))

    assert engine.invalid == {"bad_batch": len(damaged)}
    valid = Counter({k: n for k, n in engine.events.items() if k[1] != "invalid"})
    kinds = Counter(k for k, _ in valid.elements())
    expected = _reference(good_before + good_after) + _reference(other)
    assert kinds == Counter(k for k, _ in expected.elements())  # every readable event, once
    assert sum(valid.values()) == readable

    letters = await read_records(bootstrap, dead, len(damaged), within=15)
    assert len(letters) == len(damaged)
    for letter, (batch, _) in zip(letters, damaged, strict=True):
        headers = dict(letter.headers)
        assert letter.value == b""
        assert headers["ragstream.reason"] == b"bad_batch"
        assert headers["ragstream.topic"] == topic.encode()
        assert headers["ragstream.partition"] == b"0"
        assert headers["ragstream.offset"] == str(batch.base_offset).encode()
        detail = headers["ragstream.detail"].decode()
        assert f"at offsets {batch.base_offset}-{batch.last_offset} of {topic}[0]" in detail
    details = [dict(r.headers)["ragstream.detail"].decode() for r in letters]
    assert "Invalid CRC" in details[-2]
    assert details[-1].startswith("codec 7 record batch")

    # consumption went past every bad batch: the group's offsets are at the ends
    assert await committed_offsets(bootstrap, f"g-{topic}", topic, 2) == {
        0: batches[-1].last_offset + 1,
        1: len(other),
    }
