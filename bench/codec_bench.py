"""Compressed topics: the agent's pipeline on the same events, uncompressed and with each
codec Kafka has.

Usage: `python -m bench.codec_bench [--events N] [--repeat R]` (see docs/benchmarks.md,
"Compressed topics").

It starts its own single-node broker (`tests.support.KafkaBroker`), produces the same N
synthetic events to one single-partition topic per codec (aiokafka's producer,
`compression_type`, batches of up to 1 MiB; not measured), then runs the agent's source,
runner and engine (event clock, state off) on each topic from the start until every event
is counted, R times, and prints per codec the topic's bytes on disk, the best rate and its
ratio to the uncompressed topic's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from aiokafka import AIOKafkaProducer

from ragstream.cli._settings import settings_from_flags
from ragstream.pipeline.engine import Engine
from ragstream.pipeline.runner import Runner
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from ragstream.wiring import engine_config, kafka_source
from tests.support import KafkaBroker, fetch_kafka_jars
from tests.support.kafka_segments import segment_file

__all__ = ["main"]

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
Pair = tuple[bytes, bytes]


async def _produce(bootstrap: str, topic: str, codec: str, events: list[Pair]) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        compression_type=None if codec == "none" else codec,
        linger_ms=50,
        max_batch_size=1 << 20,
    )
    await producer.start()
    try:
        for key, value in events:
            await producer.send(topic, value=value, key=key, partition=0)
        await producer.flush()
    finally:
        await producer.stop()


async def _drain(bootstrap: str, topic: str, count: int, run: int) -> float:
    """Events a second, from the first event counted (the group joined) to the last."""
    flat = ("kafka.auto_offset_reset=earliest", "state.enabled=false", "windows.clock=event")
    group = f"bench-{topic}-{run}"
    settings = settings_from_flags(None, bootstrap, (topic,), group, None, flat)
    engine = Engine(engine_config(settings))
    source = kafka_source(settings, engine)
    runner = Runner(engine, source)
    await source.start()
    task = asyncio.create_task(runner.run())
    try:
        first = await _counted(engine, task, 1)
        start = time.perf_counter()
        await _counted(engine, task, count)
        return (count - first) / (time.perf_counter() - start)
    finally:
        runner.stop()
        await task
        await source.stop()


async def _counted(engine: Engine, task: asyncio.Task[None], count: int) -> int:
    """The engine's count of events once it reaches `count` (looked at every 10 ms)."""
    while True:
        seen = sum(engine.events.values())
        if seen >= count:
            return seen
        assert not task.done(), task
        await asyncio.sleep(0.01)


async def _bench(broker: KafkaBroker, events: int, repeat: int) -> None:
    traffic = SyntheticTraffic(SyntheticConfig(seed=11)).take(events)
    pairs = [(e.key, e.value) for e in traffic]
    raw = sum(len(v) for _, v in pairs)
    print(f"{events} events, {raw / 1e6:.1f} MB of values; load average {os.getloadavg()[0]:.2f}")
    sizes = {}
    for codec in CODECS:
        await broker.create_topic(f"codec-{codec}", 1)
        await _produce(broker.bootstrap_servers, f"codec-{codec}", codec, pairs)
        sizes[codec] = segment_file(broker.work_dir / "data", f"codec-{codec}", 0).stat().st_size
    rates: dict[str, list[float]] = {codec: [] for codec in CODECS}
    for run in range(repeat):  # the codecs in turn, so that the machine's load falls alike
        for codec in CODECS:
            rates[codec].append(
                await _drain(broker.bootstrap_servers, f"codec-{codec}", events, run)
            )
    print(f"{'codec':8} {'on disk':>9} {'events/s':>10} {'vs none':>8}")
    base = max(rates["none"])
    for codec in CODECS:
        best = max(rates[codec])
        print(f"{codec:8} {sizes[codec] / 1e6:7.1f}MB {best:10,.0f} {best / base:8.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with KafkaBroker(fetch_kafka_jars(), heap="1g") as broker:
        asyncio.run(_bench(broker, args.events, args.repeat))


if __name__ == "__main__":
    main()
