#!/usr/bin/env python3
"""Sends the demo's synthetic RAG traffic to a Kafka topic in real time, for trying
`ragstream run` against a broker (README, "Try it against Kafka").

    .venv/bin/python scripts/produce.py          # 127.0.0.1:9092, topic rag-events
    .venv/bin/python scripts/produce.py --bootstrap-servers HOST:PORT --topic T --rate 40

Three apps (label keys `app` and `index`) send retrieval, answer and feedback events keyed
by query id, as `ragstream demo` generates them; after --drift-at seconds the `support`
app's retrieval gets worse. The topic is created when missing (--partitions). Ctrl-C stops.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Sequence

from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaConnectionError, TopicAlreadyExistsError

from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic


async def ensure_topic(bootstrap: str, topic: str, partitions: int) -> str:
    """Create `topic` when the cluster lacks it; says which happened."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        if topic in await admin.list_topics():
            return f"topic {topic} exists"
        with contextlib.suppress(TopicAlreadyExistsError):  # created meanwhile
            await admin.create_topics([NewTopic(topic, partitions, replication_factor=1)])
        return f"topic {topic} created with {partitions} partition(s)"
    finally:
        await admin.close()


async def produce(args: argparse.Namespace) -> int:
    """Send events at their arrival times until --duration or a signal; the count sent."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    traffic = SyntheticTraffic(
        SyntheticConfig(
            seed=args.seed,
            start=time.time(),
            rate=args.rate,
            drift_at=args.drift_at,
            feedback_delay=(1.0, 15.0),  # as the demo's: well within a 60 s label TTL
            gold_share=args.gold_share,
            gold_delay=(1.0, 30.0),
        )
    )
    end = time.monotonic() + args.duration if args.duration > 0 else float("inf")
    producer = AIOKafkaProducer(bootstrap_servers=args.bootstrap_servers, linger_ms=20)
    await producer.start()
    sent = 0
    try:
        for event in traffic.stream():
            while (delay := event.arrival - time.time()) > 0:
                if stop.is_set() or time.monotonic() >= end:
                    return sent
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), min(delay, 0.2))
            if stop.is_set() or time.monotonic() >= end:
                return sent
            await producer.send(args.topic, value=event.value, key=event.key)
            sent += 1
    finally:
        await producer.stop()
    return sent


async def main_async(args: argparse.Namespace) -> int:
    try:
        print(await ensure_topic(args.bootstrap_servers, args.topic, args.partitions), flush=True)
    except KafkaConnectionError:
        print(
            f"produce.py: Kafka at {args.bootstrap_servers} unreachable"
            " (start one with scripts/kafka.sh start)",
            file=sys.stderr,
        )
        return 1
    drop = f", app=support drops at +{args.drift_at:g}s" if args.drift_at is not None else ""
    print(
        f"sending {args.rate:g} queries/s to {args.topic} at {args.bootstrap_servers}"
        f"{drop}; Ctrl-C stops",
        flush=True,
    )
    sent = await produce(args)
    print(f"sent {sent} events", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--bootstrap-servers", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="rag-events")
    parser.add_argument("--partitions", type=int, default=3, help="when the topic is created")
    parser.add_argument("--rate", type=float, default=40.0, help="queries per second")
    parser.add_argument(
        "--drift-at", type=float, default=60.0, help="seconds until app=support gets worse"
    )
    parser.add_argument("--gold-share", type=float, default=0.2, help="answers with gold")
    parser.add_argument("--duration", type=float, default=0.0, help="seconds (0: until Ctrl-C)")
    parser.add_argument("--seed", type=int, default=7)
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
