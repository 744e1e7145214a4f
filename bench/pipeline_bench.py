"""Streaming benchmark: Kafka in, windowed metrics out, against a plain consumer.

Usage: `python -m bench.pipeline_bench [--events N | --quick] [--partitions P]
[--processes N] ...`
(or `scripts/bench.sh pipeline`). See docs/benchmarks.md, "Streaming pipeline".

It starts its own single-node Kafka broker (`tests.support.KafkaBroker`), creates one
topic, produces N retrieval events keyed by query id (not measured, reported apart), then
runs each measured stage in a fresh process (`bench.pipeline_stages`): two plain-consumer
baselines (`json.loads`, `orjson.loads`), the pipeline (`KafkaSource` + `Runner` +
`Engine`, event clock), N such pipeline processes in one consumer group
(`bench.pipeline_group`, on a topic whose partitions split evenly between them), and the
engine alone on the same messages without Kafka; last, a cProfile of the engine. It prints
one table with targets and pass/miss and one for the N processes, with the load average
around every figure. The broker is stopped on exit, on errors and on Ctrl-C/SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from types import FrameType
from typing import Any

from aiokafka import AIOKafkaProducer

from bench.pipeline_data import DataConfig, blocks, partition_of
from bench.pipeline_group import run_group
from bench.pipeline_report import Run, group_rate, render
from tests.support import KafkaBroker, fetch_kafka_jars

__all__ = ["main"]

_TOPIC = "ragstream-bench"
_BATCH_BYTES = 512 * 1024


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.pipeline_bench", description=__doc__)
    p.add_argument("--events", type=int, default=1_000_000, help="events to produce and consume")
    p.add_argument("--quick", action="store_true", help="100 000 events (overrides --events)")
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument(
        "--processes", type=int, default=2, help="pipeline processes in one group (0: none)"
    )
    p.add_argument(
        "--group-partitions",
        type=int,
        default=0,
        help="partitions of the group row's topic (0: the smallest multiple of --processes "
        "that is at least --partitions)",
    )
    p.add_argument("--rate", type=float, default=20.0, help="queries per second of event time")
    p.add_argument("--label-ttl", type=float, default=900.0, help="seconds a query stays open")
    p.add_argument("--label-keys", default="", help="comma-separated exported label keys")
    p.add_argument("--probe-share", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--repeat", type=int, default=1, help="runs of the baselines and pipeline")
    p.add_argument("--profile-events", type=int, default=200_000, help="0: no profile")
    p.add_argument("--heap", default="512m", help="the broker's JVM heap")
    p.add_argument(
        "--stages", default="baseline,pipeline,group,engine,profile", help="which stages to run"
    )
    p.add_argument("--json", dest="json_out", help="also write the raw results here")
    args = p.parse_args(argv)
    if args.quick:
        args.events = 100_000
    n = args.processes
    if n and not args.group_partitions:
        args.group_partitions = -(-args.partitions // n) * n
    if n and args.group_partitions < n:
        p.error("--group-partitions must be at least --processes")
    return args


def _stage(stage: str, args: dict[str, Any]) -> dict[str, Any]:
    """Run one stage in a fresh interpreter; the load average before and after it."""
    before = os.getloadavg()[0]
    cmd = [sys.executable, "-m", "bench.pipeline_stages", stage, json.dumps(args)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        out, _ = proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode != 0:
        raise RuntimeError(f"stage {stage} failed with exit code {proc.returncode}")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result["load"] = (before, os.getloadavg()[0])
    print(
        f"  {stage:<9} {_rate(result):>10,.0f} events/s  (load {before:.1f} -> "
        f"{result['load'][1]:.1f})",
        flush=True,
    )
    return result


def _rate(result: dict[str, Any]) -> float:
    return float(result["events"]) / float(result["seconds"])


async def _produce(bootstrap: str, topic: str, data: DataConfig, n: int, partitions: int) -> Any:
    """Produce pre-encoded records in 512 KiB batches per partition; bytes, seconds,
    seconds generating, and the records per partition."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, max_batch_size=_BATCH_BYTES, linger_ms=20, acks=1
    )
    await producer.start()
    start, total = time.perf_counter(), 0
    generate = 0.0
    counts = dict.fromkeys(range(partitions), 0)
    try:
        mark = time.perf_counter()
        for block in blocks(data, n):
            generate += time.perf_counter() - mark
            by_partition: dict[int, list[tuple[bytes, bytes]]] = {}
            for key, value in block:
                by_partition.setdefault(partition_of(key, partitions), []).append((key, value))
                total += len(value)
            futures = []
            for partition, records in by_partition.items():
                counts[partition] += len(records)
                batch = producer.create_batch()
                for key, value in records:
                    if batch.append(key=key, value=value, timestamp=None) is None:
                        futures.append(await producer.send_batch(batch, topic, partition=partition))
                        batch = producer.create_batch()
                        batch.append(key=key, value=value, timestamp=None)
                futures.append(await producer.send_batch(batch, topic, partition=partition))
            await asyncio.gather(*futures)
            mark = time.perf_counter()
    finally:
        await producer.stop()
    return total, time.perf_counter() - start, generate, counts


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # so that the broker's `with` block unwinds
    data = DataConfig(seed=args.seed, rate=args.rate, probe_share=args.probe_share)
    label_keys = [k for k in args.label_keys.split(",") if k]
    common = {
        "topic": _TOPIC,
        "events": args.events,
        "seed": args.seed,
        "rate": args.rate,
        "partitions": args.partitions,
        "label_ttl": args.label_ttl,
        "label_keys": label_keys,
        "probe_share": args.probe_share,
    }
    run = Run(
        events=args.events,
        partitions=args.partitions,
        rate=args.rate,
        label_ttl=args.label_ttl,
        label_keys=label_keys,
        probe_share=args.probe_share,
        processes=args.processes,
        group_partitions=args.group_partitions,
    )
    print(f"uptime: {_uptime()}", flush=True)
    with KafkaBroker(fetch_kafka_jars(), heap=args.heap) as broker:
        bootstrap = broker.bootstrap_servers
        asyncio.run(broker.create_topic(_TOPIC, partitions=args.partitions))
        print(
            f"broker {bootstrap}, topic {_TOPIC} ({args.partitions} partitions); "
            f"producing {args.events:,} events ...",
            flush=True,
        )
        load = os.getloadavg()[0]
        run.produced_bytes, run.produce_seconds, run.generate_seconds, counts = asyncio.run(
            _produce(bootstrap, _TOPIC, data, args.events, args.partitions)
        )
        run.produce_load = (load, os.getloadavg()[0])
        common["bootstrap"] = bootstrap
        stages = set(args.stages.split(","))
        scale_out = _group_topic(args, broker, data, counts) if "group" in stages else None
        for r in range(args.repeat):
            for parser in ("json", "orjson") if "baseline" in stages else ():
                group = f"baseline-{parser}-{r}"
                run.baselines[parser].append(
                    _stage("baseline", {**common, "parser": parser, "group": group})
                )
            if "pipeline" in stages:
                run.pipelines.append(_stage("pipeline", {**common, "group": f"pipeline-{r}"}))
            if scale_out is not None:
                topic, ends = scale_out
                run.groups.append(_group(args, {**common, "topic": topic}, ends, r))
        if "engine" in stages:
            run.engine = _stage("engine", common)
        if args.profile_events and "profile" in stages:
            n = min(args.profile_events, args.events)
            run.profile = _stage("profile", {**common, "events": n, "top": 10})
    print(f"uptime: {_uptime()}\n", flush=True)
    print(render(run))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(run.raw(), f, indent=1)
    return 0


def _group_topic(
    args: argparse.Namespace, broker: KafkaBroker, data: DataConfig, counts: dict[int, int]
) -> tuple[str, dict[int, int]] | None:
    """The group row's topic and its records per partition: the main topic if its partition
    count is the one asked for, else a new topic with the same events (produced apart)."""
    if not args.processes:
        return None
    if args.group_partitions == args.partitions:
        return _TOPIC, counts
    topic = f"{_TOPIC}-{args.group_partitions}"
    asyncio.run(broker.create_topic(topic, partitions=args.group_partitions))
    print(f"topic {topic} ({args.group_partitions} partitions) for the group row ...", flush=True)
    *_, counts = asyncio.run(
        _produce(broker.bootstrap_servers, topic, data, args.events, args.group_partitions)
    )
    return topic, counts


def _group(
    args: argparse.Namespace, stage_args: dict[str, Any], ends: dict[int, int], r: int
) -> dict[str, Any]:
    """N pipeline processes in one new group; the load average before and after."""
    n, before = args.processes, os.getloadavg()[0]
    timeout = 120.0 + args.events / 1000
    result = asyncio.run(run_group(n, {**stage_args, "group": f"group-{r}"}, ends, timeout))
    result["load"] = (before, os.getloadavg()[0])
    result["topic"] = stage_args["topic"]
    print(
        f"  {n} processes {group_rate(result):>8,.0f} events/s together  (load {before:.1f} -> "
        f"{result['load'][1]:.1f})",
        flush=True,
    )
    return result


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    raise SystemExit(main())
