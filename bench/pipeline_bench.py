"""Streaming benchmark: Kafka in, windowed metrics out, against a plain consumer.

Usage: `python -m bench.pipeline_bench [--events N | --quick] [--partitions P]
[--processes N] ...`
(or `scripts/bench.sh pipeline`). See docs/benchmarks.md, "Streaming pipeline".

It starts its own single-node Kafka broker (`tests.support.KafkaBroker`) and measures each
kind of traffic asked for (`--traffic`: by default without exported label keys, with two,
and with every query labeled inline), each against its own baselines. For each it creates a
topic, produces N retrieval events keyed by query id (not measured, reported apart; two
kinds with the same events share the topic), then runs each measured stage in a fresh
process (`bench.pipeline_stages`): two plain-consumer baselines (`json.loads`,
`orjson.loads`, aiokafka's fetch defaults) and, for reference only, the `orjson.loads` one
with the agent's fetch size (`fetch_partition_bytes`, 4 MiB a partition), the pipeline
(`KafkaSource` + `Runner` + `Engine`, event clock), N such pipeline processes in one
consumer group (`bench.pipeline_group`, on a topic whose partitions split evenly between
them; stage `group`) right after N `orjson.loads` baseline consumers in one group on the
same topic (stage `baseline-group`: the like-for-like reference for a member of the
pipeline's group, since both groups share the cores with the broker), and the engine alone
on the same messages without Kafka; last, a cProfile of the engine. It prints per traffic
one table with targets and pass/miss and one for the N processes, with the load average
around every figure, and then one summary row per traffic. The broker is stopped on exit,
on errors and on Ctrl-C/SIGTERM.

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
from dataclasses import dataclass
from types import FrameType
from typing import Any

from aiokafka import AIOKafkaProducer

from bench.pipeline_data import DataConfig, blocks, partition_of
from bench.pipeline_group import run_group
from bench.pipeline_report import (
    PLAIN_PROBES,
    TRAFFICS,
    Run,
    Traffic,
    group_rate,
    render,
    render_summary,
)
from ragstream.config.settings import KafkaSettings
from tests.support import KafkaBroker, fetch_kafka_jars

__all__ = ["main", "produce", "run_stage", "stage_args"]

_TOPIC = "ragstream-bench"
_BATCH_BYTES = 512 * 1024

AGENT_FETCH_BYTES = KafkaSettings().fetch_partition_bytes
"""The agent's consumer's bytes per partition and fetch (the reference baseline's)."""


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
    p.add_argument(
        "--traffic",
        default="plain,keys,labeled",
        help="comma-separated kinds of traffic, each measured with its own baselines: plain "
        "(no exported label keys), keys (two: app,index), labeled (every query labeled "
        "inline: probe share 1.0)",
    )
    p.add_argument(
        "--label-keys",
        default=None,
        help="comma-separated exported label keys: one traffic of its own (with --probe-share) "
        "instead of --traffic",
    )
    p.add_argument(
        "--probe-share",
        type=float,
        default=None,
        help=f"share of queries with qrels ({PLAIN_PROBES}); with --label-keys, one traffic "
        "instead of --traffic",
    )
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--repeat", type=int, default=1, help="runs of the baselines and pipeline")
    p.add_argument("--profile-events", type=int, default=200_000, help="0: no profile")
    p.add_argument("--heap", default="512m", help="the broker's JVM heap")
    p.add_argument(
        "--stages",
        default="baseline,pipeline,baseline-group,group,engine,profile",
        help="which stages to run (baseline-group: N orjson baseline consumers in one group, "
        "the reference for each member of the pipeline's group)",
    )
    p.add_argument("--json", dest="json_out", help="also write the raw results here")
    args = p.parse_args(argv)
    if args.quick:
        args.events = 100_000
    if args.label_keys is not None or args.probe_share is not None:
        keys = [k for k in (args.label_keys or "").split(",") if k]
        probes = PLAIN_PROBES if args.probe_share is None else args.probe_share
        args.traffics = [Traffic("custom", keys, probes)]
    else:
        try:
            args.traffics = [TRAFFICS[name] for name in args.traffic.split(",") if name]
        except KeyError as e:
            p.error(f"unknown traffic {e}; known: {', '.join(TRAFFICS)}")
    n = args.processes
    if n and not args.group_partitions:
        args.group_partitions = -(-args.partitions // n) * n
    if n and args.group_partitions < n:
        p.error("--group-partitions must be at least --processes")
    return args


def run_stage(stage: str, args: dict[str, Any]) -> dict[str, Any]:
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


def stage_args(args: argparse.Namespace, traffic: Traffic, bootstrap: str) -> dict[str, Any]:
    """What every stage of one traffic is given (`bench.pipeline_stages`), but its topic:
    the events, the data's seed and rate, the partitions, the join's TTL and the traffic."""
    return {
        "events": args.events,
        "seed": args.seed,
        "rate": args.rate,
        "partitions": args.partitions,
        "label_ttl": args.label_ttl,
        "label_keys": traffic.label_keys,
        "probe_share": traffic.probe_share,
        "bootstrap": bootstrap,
    }


def _rate(result: dict[str, Any]) -> float:
    return float(result["events"]) / float(result["seconds"])


async def produce(bootstrap: str, topic: str, data: DataConfig, n: int, partitions: int) -> Any:
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
    print(f"uptime: {_uptime()}", flush=True)
    runs: list[Run] = []
    with KafkaBroker(fetch_kafka_jars(), heap=args.heap) as broker:
        topics: dict[float, _Topic] = {}
        for traffic in args.traffics:
            if traffic.probe_share not in topics:  # traffics with the same events share a topic
                topics[traffic.probe_share] = _topics(args, broker, traffic, len(topics))
            print(f"traffic {traffic.name}: {traffic.describe()}", flush=True)
            runs.append(_measure(args, broker, traffic, topics[traffic.probe_share]))
    print(f"uptime: {_uptime()}\n", flush=True)
    print("\n\n".join(render(run) for run in runs))
    if len(runs) > 1:
        print("\n\n" + render_summary(runs))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump([run.raw() for run in runs], f, indent=1)
    return 0


@dataclass(frozen=True, slots=True)
class _Topic:
    """A topic with one traffic's events, as produced."""

    name: str
    produced: tuple[int, float, float]
    """Bytes, seconds, of which generating."""
    load: tuple[float, float]
    group: tuple[str, dict[int, int]] | None
    """The group row's topic (the same events) and its records per partition."""


def _topics(args: argparse.Namespace, broker: KafkaBroker, traffic: Traffic, k: int) -> _Topic:
    """A topic with the traffic's events (and one for the group row when its partition count
    differs), produced now."""
    data = DataConfig(
        seed=args.seed,
        rate=args.rate,
        probe_share=traffic.probe_share,
    )
    topic = _TOPIC if k == 0 else f"{_TOPIC}-p{k}"
    bootstrap = broker.bootstrap_servers
    asyncio.run(broker.create_topic(topic, partitions=args.partitions))
    print(
        f"broker {bootstrap}, topic {topic} ({args.partitions} partitions, probe share "
        f"{traffic.probe_share:g}); producing {args.events:,} events ...",
        flush=True,
    )
    load = os.getloadavg()[0]
    size, seconds, generating, counts = asyncio.run(
        produce(bootstrap, topic, data, args.events, args.partitions)
    )
    stages = set(args.stages.split(","))
    grouped = stages & {"group", "baseline-group"}
    group = _group_topic(args, broker, topic, data, counts) if grouped else None
    return _Topic(topic, (size, seconds, generating), (load, os.getloadavg()[0]), group)


def _measure(
    args: argparse.Namespace,
    broker: KafkaBroker,
    traffic: Traffic,
    topic: _Topic,
) -> Run:
    """Every stage asked for, on one traffic's topic."""
    common = {"topic": topic.name, **stage_args(args, traffic, broker.bootstrap_servers)}
    run = Run(
        events=args.events,
        partitions=args.partitions,
        rate=args.rate,
        label_ttl=args.label_ttl,
        label_keys=traffic.label_keys,
        probe_share=traffic.probe_share,
        processes=args.processes,
        group_partitions=args.group_partitions,
        traffic=traffic.name,
    )
    run.produced_bytes, run.produce_seconds, run.generate_seconds = topic.produced
    run.produce_load = topic.load
    stages = set(args.stages.split(","))
    name = traffic.name
    for r in range(args.repeat):
        for parser in ("json", "orjson", "orjson-fetch") if "baseline" in stages else ():
            group = f"baseline-{name}-{parser}-{r}"
            # orjson-fetch: for reference, the plain consumer with the agent's fetch size
            fetch = {"fetch_bytes": AGENT_FETCH_BYTES} if parser == "orjson-fetch" else {}
            run.baselines[parser].append(
                run_stage(
                    "baseline",
                    {**common, "parser": parser.partition("-")[0], "group": group, **fetch},
                )
            )
        if "pipeline" in stages:
            run.pipelines.append(run_stage("pipeline", {**common, "group": f"pipeline-{name}-{r}"}))
        if topic.group is not None:
            group_topic, ends = topic.group
            on_group = {**common, "topic": group_topic}
            if "baseline-group" in stages:  # right before the pipeline's group, alike
                plain = {**on_group, "parser": "orjson"}
                run.baseline_groups.append(_group(args, "baseline", plain, ends, f"{name}-{r}"))
            if "group" in stages:
                run.groups.append(_group(args, "pipeline", on_group, ends, f"{name}-{r}"))
    if "engine" in stages:
        run.engine = run_stage("engine", common)
    if args.profile_events and "profile" in stages:
        n = min(args.profile_events, args.events)
        run.profile = run_stage("profile", {**common, "events": n, "top": 10})
    return run


def _group_topic(
    args: argparse.Namespace,
    broker: KafkaBroker,
    main: str,
    data: DataConfig,
    counts: dict[int, int],
) -> tuple[str, dict[int, int]] | None:
    """The group row's topic and its records per partition: the main topic if its partition
    count is the one asked for, else a new topic with the same events (produced apart)."""
    if not args.processes:
        return None
    if args.group_partitions == args.partitions:
        return main, counts
    topic = f"{main}-{args.group_partitions}"
    asyncio.run(broker.create_topic(topic, partitions=args.group_partitions))
    print(f"topic {topic} ({args.group_partitions} partitions) for the group row ...", flush=True)
    *_, counts = asyncio.run(
        produce(broker.bootstrap_servers, topic, data, args.events, args.group_partitions)
    )
    return topic, counts


def _group(
    args: argparse.Namespace,
    stage: str,
    stage_args: dict[str, Any],
    ends: dict[int, int],
    r: str,
) -> dict[str, Any]:
    """N processes of `stage` (pipeline or baseline) in one new group; the load average
    before and after."""
    n, before = args.processes, os.getloadavg()[0]
    timeout = 120.0 + args.events / 1000
    group = f"group-{r}" if stage == "pipeline" else f"{stage}-group-{r}"
    result = asyncio.run(run_group(stage, n, {**stage_args, "group": group}, ends, timeout))
    result["load"] = (before, os.getloadavg()[0])
    result["topic"] = stage_args["topic"]
    what = "processes" if stage == "pipeline" else f"{stage} consumers"
    print(
        f"  {n} {what} {group_rate(result):>8,.0f} events/s together  (load {before:.1f} -> "
        f"{result['load'][1]:.1f})",
        flush=True,
    )
    return result


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    raise SystemExit(main())
