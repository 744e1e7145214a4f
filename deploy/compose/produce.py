"""The compose stack's demo producer: synthetic RAG traffic to Kafka, in real time.

    python produce.py --bootstrap-servers kafka:9092 --topic rag-events [--rate 20]
                      [--drift-at 600] [--duration 0] [--seed 7] [--partitions 3]

Three services' retrieval, answer and feedback events (`ragstream.sources.synthetic`, the
traffic of `ragstream demo`), keyed by query id, as they happen: event times start at the
wall clock, and the retrieval quality, freshness and faithfulness of app=support drop
`--drift-at` seconds after the start, so the stack's dashboard and alerts have something
to show. Runs in the ragstream image (it needs ragstream and aiokafka); waits for the
broker up to `--connect-timeout`; stops after `--duration` seconds (0: on SIGTERM/SIGINT).
With `--partitions N` it creates the topic when the cluster lacks it (the stack's
`kafka-init` creates it; the README's "Try it against Kafka" runs this on a bare broker).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import time

from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaConnectionError, TopicAlreadyExistsError

from ragstream.sources.paced import PacedSyntheticSource
from ragstream.sources.synthetic import SyntheticConfig


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap-servers", default="kafka:9092")
    parser.add_argument("--topic", default="rag-events")
    parser.add_argument("--rate", type=float, default=20.0, help="queries per second")
    parser.add_argument(
        "--drift-at", type=float, default=600.0, help="seconds until app=support degrades"
    )
    parser.add_argument("--duration", type=float, default=0.0, help="seconds (0: until stopped)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--connect-timeout", type=float, default=120.0)
    parser.add_argument(
        "--partitions", type=int, default=0, help="create the topic when missing (0: do not)"
    )
    args = parser.parse_args(argv)
    if args.rate <= 0 or args.drift_at < 0 or args.duration < 0 or args.partitions < 0:
        parser.error(
            "--rate must be positive, --drift-at, --duration and --partitions not negative"
        )
    return args


async def _connected(args: argparse.Namespace) -> AIOKafkaProducer:
    deadline = time.monotonic() + args.connect_timeout
    while True:
        producer = AIOKafkaProducer(
            bootstrap_servers=args.bootstrap_servers, client_id="ragstream-demo-producer"
        )
        try:
            await producer.start()
            return producer
        except KafkaConnectionError:
            await producer.stop()
            if time.monotonic() > deadline:
                raise
            print(f"produce.py: waiting for {args.bootstrap_servers}", file=sys.stderr)
            await asyncio.sleep(2.0)


async def _create_topic(args: argparse.Namespace) -> None:
    """The topic with `--partitions` partitions, unless the cluster has it."""
    admin = AIOKafkaAdminClient(bootstrap_servers=args.bootstrap_servers)
    await admin.start()
    try:
        if args.topic in await admin.list_topics():
            return
        with contextlib.suppress(TopicAlreadyExistsError):  # created meanwhile
            await admin.create_topics([NewTopic(args.topic, args.partitions, 1)])
        deadline = time.monotonic() + 30  # leaders elected: no first sends to retry
        while time.monotonic() < deadline:
            (topic,) = await admin.describe_topics([args.topic])
            partitions = topic.get("partitions", [])
            if partitions and all(p.get("leader", -1) >= 0 for p in partitions):
                break
            await asyncio.sleep(0.2)
        print(
            f"produce.py: created topic {args.topic} ({args.partitions} partitions)",
            file=sys.stderr,
        )
    finally:
        await admin.close()


async def produce(args: argparse.Namespace) -> int:
    """Send the traffic until the duration is over or a signal arrives; returns the number
    of messages sent (each acknowledged by the broker)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    producer = await _connected(args)
    traffic = SyntheticConfig(
        seed=args.seed, rate=args.rate, drift_at=args.drift_at, feedback_delay=(1.0, 15.0)
    )
    source = PacedSyntheticSource(traffic)
    end = None if args.duration == 0 else time.monotonic() + args.duration
    sent = 0
    try:
        if args.partitions:
            await _create_topic(args)
        async for batch in source.batches():
            pending = [
                await producer.send(args.topic, value=message.value, key=message.key)
                for message in batch
            ]
            for delivery in pending:
                await delivery
            sent += len(pending)
            if stop.is_set() or (end is not None and time.monotonic() >= end):
                break
    finally:
        with contextlib.suppress(Exception):
            await producer.stop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    return sent


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    try:
        sent = asyncio.run(produce(args))
    except KafkaConnectionError:
        print(
            f"produce.py: Kafka at {args.bootstrap_servers} unreachable for"
            f" {args.connect_timeout:g} s (start one with scripts/kafka.sh start)",
            file=sys.stderr,
        )
        return 1
    print(f"produce.py: sent {sent} events to {args.topic}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
