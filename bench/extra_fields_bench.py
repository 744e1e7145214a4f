"""Extra fields side by side: the same retrieval events plain, padded and with extra fields.

Usage: `python -m bench.extra_fields_bench [--events N] [--rounds R] [--traffic T]
[--engine-only]` (or `scripts/bench.sh extra_fields`). See docs/benchmarks.md, "Extra
fields".

Three streams of the same events (`bench.pipeline_data.DataConfig`):

- `plain`: as the schema writes them;
- `padded`: as long as with extra fields, the difference in spaces at the end of the query
  text (a known field): what the extra fields' bytes alone cost;
- `extra`: two fields the schema does not know at the top and two in each result.

First the engine alone (`Engine.apply`, no broker), the three streams' passes alternated in
this process, R passes each (`bench.engine_bench`). Then the whole path: it starts its own
Kafka broker, produces each stream to its own topic and, round after round with the
streams' order rotated, runs the agent's pipeline (`KafkaSource` + `Runner` + `Engine`) on
each in a fresh process (`bench.pipeline_stages`), and beside it a plain consumer
(aiokafka's `getmany` and `orjson.loads` of each value, with the agent's fetch size): what
the bytes cost any consumer. It prints the median events per CPU
second (process CPU time: other jobs on a shared machine move it less than wall time) and
the ratios: `extra / plain` is what a producer's extra fields cost in all, `extra / padded`
what they cost beyond their bytes, which every Kafka consumer pays (the fetch goes with the
bytes).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics

from bench.engine_bench import batches, cpu_pass
from bench.pipeline_bench import produce, run_stage, stage_args
from bench.pipeline_data import DataConfig
from bench.pipeline_report import TRAFFICS, Traffic
from bench.pipeline_stages import engine_config
from ragstream.config.settings import KafkaSettings
from ragstream.pipeline.gc_tuning import tune_gc
from tests.support import KafkaBroker, fetch_kafka_jars

__all__ = ["main"]

STREAMS: dict[str, tuple[bool, bool]] = {
    "plain": (False, False),
    "padded": (False, True),
    "extra": (True, False),
}
"""The three streams: `DataConfig`'s `extra_fields` and `padded` for each."""

Rates = dict[str, list[float]]

FETCH_BYTES = KafkaSettings.model_fields["fetch_partition_bytes"].default
"""The agent's fetch size a partition, which the plain consumer is given too."""


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.extra_fields_bench", description=__doc__)
    p.add_argument("--events", type=int, default=200_000, help="events per stream")
    p.add_argument("--rounds", type=int, default=4, help="runs of each stage per stream")
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--traffic", default="plain", choices=sorted(TRAFFICS))
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--rate", type=float, default=20.0)
    p.add_argument("--label-ttl", type=float, default=900.0)
    p.add_argument("--engine-only", action="store_true", help="no broker, no whole path")
    p.add_argument(
        "--streams",
        default=",".join(STREAMS),
        help="which streams (e.g. one, for valgrind's instruction counts)",
    )
    args = p.parse_args(argv)
    args.streams = [name for name in args.streams.split(",") if name]
    unknown = set(args.streams) - set(STREAMS)
    if unknown or not args.streams:
        p.error(f"--streams: one or more of {', '.join(STREAMS)}")
    return args


def _data(args: argparse.Namespace, traffic: Traffic, name: str) -> DataConfig:
    extra_fields, padded = STREAMS[name]
    return DataConfig(
        seed=args.seed,
        rate=args.rate,
        probe_share=traffic.probe_share,
        extra_fields=extra_fields,
        padded=padded,
    )


def _engine_alone(args: argparse.Namespace, traffic: Traffic) -> Rates:
    """Events per CPU second of `Engine.apply`, each stream's passes alternated."""
    streams = {
        name: batches(_data(args, traffic, name), args.events, args.partitions)
        for name in args.streams
    }
    config = engine_config({"label_keys": traffic.label_keys, "label_ttl": args.label_ttl})
    tune_gc()
    rates: Rates = {name: [] for name in args.streams}
    for _ in range(args.rounds):
        for name, stream in streams.items():
            rates[name].append(args.events / cpu_pass(config, stream))
    return rates


def _whole_path(
    args: argparse.Namespace, traffic: Traffic
) -> tuple[Rates, Rates, dict[str, float]]:
    """Events per CPU second of the pipeline process and of a plain consumer on each
    stream's topic, and each stream's bytes an event."""
    rates: Rates = {name: [] for name in args.streams}
    consumer: Rates = {name: [] for name in args.streams}
    sizes: dict[str, float] = {}
    with KafkaBroker(fetch_kafka_jars()) as broker:
        bootstrap = broker.bootstrap_servers
        common = stage_args(args, traffic, bootstrap)
        for name in args.streams:
            topic = f"xf-{name}"
            asyncio.run(broker.create_topic(topic, partitions=args.partitions))
            data = _data(args, traffic, name)
            size, *_ = asyncio.run(produce(bootstrap, topic, data, args.events, args.partitions))
            sizes[name] = size / args.events
        names = list(args.streams)
        for r in range(args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                stage = {**common, "topic": f"xf-{name}", "group": f"{name}-{r}"}
                result = run_stage("pipeline", stage)
                rates[name].append(float(result["events"]) / float(result["cpu_seconds"]))
                plain = {**stage, "group": f"orjson-{name}-{r}", "parser": "orjson"}
                result = run_stage("baseline", {**plain, "fetch_bytes": FETCH_BYTES})
                consumer[name].append(float(result["events"]) / float(result["cpu_seconds"]))
    return rates, consumer, sizes


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    traffic = TRAFFICS[args.traffic]
    print(f"traffic {traffic.name}: {traffic.describe()}; {args.events:,} events a stream")
    print(f"load average at the start: {os.getloadavg()[0]:.1f}", flush=True)
    measured = {"engine alone": _engine_alone(args, traffic)}
    sizes: dict[str, float] = {}
    if not args.engine_only:
        pipeline, consumer, sizes = _whole_path(args, traffic)
        measured["pipeline (Kafka in)"] = pipeline
        measured["`getmany` + `orjson.loads`"] = consumer
    print(f"load average at the end: {os.getloadavg()[0]:.1f}\n")
    if not args.rounds:  # valgrind's reference: the same process without a pass
        return 0
    print(f"median events per CPU second, [lowest-highest] of {args.rounds} runs\n")
    print("| stream | bytes an event | " + " | ".join(measured) + " |")
    print("|---|---|" + "---|" * len(measured))
    median = {
        (what, name): statistics.median(values)
        for what, rates in measured.items()
        for name, values in rates.items()
    }
    for name in args.streams:
        size = f"{sizes[name]:,.0f}" if name in sizes else "-"
        cells = [
            f"{median[what, name]:,.0f} [{min(r[name]):,.0f}-{max(r[name]):,.0f}]"
            for what, r in measured.items()
        ]
        print(f"| {name} | {size} | " + " | ".join(cells) + " |")
    print("\n| ratio of medians | " + " | ".join(measured) + " | target (the agent) |")
    print("|---|" + "---|" * len(measured) + "---|")
    for a, b in (("extra", "plain"), ("extra", "padded"), ("padded", "plain")):
        if a not in args.streams or b not in args.streams:
            continue
        cells = [f"{median[what, a] / median[what, b]:.3f}" for what in measured]
        target = ">= 0.9" if a == "extra" else ""
        print(f"| {a} / {b} | " + " | ".join(cells) + f" | {target} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
