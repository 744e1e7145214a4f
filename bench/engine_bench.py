"""The engine alone, for side-by-side comparisons: CPU time per event, no broker.

Usage: `python -m bench.engine_bench [--events N] [--traffic plain|keys|labeled]
[--repeat R] [--interleaved] [--extra-fields] [--trace-id-field NAME] [--msgspec]` (or
`scripts/bench.sh engine`). See docs/benchmarks.md, "Streaming pipeline".

It generates the streaming benchmark's retrieval events (`bench.pipeline_data`, the
partition Kafka's partitioner gives each key), cuts them into batches of 5000 grouped by
partition as `KafkaSource` hands them over (`--interleaved`: in arrival order instead),
and applies them to a fresh `Engine` configured as the pipeline stage's (event clock,
labeled final queries only; `--trace-id-field`: with `exemplars.trace_id_field`), R
times, with the garbage collector tuned as `ragstream run` tunes it. It prints the CPU
time of `Engine.apply` alone: the best pass and the median, per event. Process CPU time
leaves out the other jobs of a shared machine better than wall time; alternate two trees'
runs to compare them.

For a figure that does not move with the machine, count instructions: valgrind's
callgrind, `--repeat 1` minus `--repeat 0` (the same process without a pass), divided by
the events, e.g. `valgrind --tool=callgrind --callgrind-out-file=/dev/null python -m
bench.engine_bench --events 30000 --repeat 1` (valgrind prints the total at the end).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

from bench.pipeline_data import DataConfig, blocks, partition_of
from bench.pipeline_report import TRAFFICS
from bench.pipeline_stages import BATCH, engine_config
from ragstream.events import Message
from ragstream.pipeline.engine import Engine, EngineConfig
from ragstream.pipeline.gc_tuning import tune_gc

__all__ = ["batches", "cpu_pass", "main"]


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.engine_bench", description=__doc__)
    p.add_argument("--events", type=int, default=100_000)
    p.add_argument("--traffic", choices=sorted(TRAFFICS), default="plain")
    p.add_argument("--repeat", type=int, default=4, help="passes, each with a fresh engine")
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument(
        "--interleaved",
        action="store_true",
        help="batches in arrival order (partitions mixed) instead of grouped by partition",
    )
    p.add_argument(
        "--extra-fields",
        action="store_true",
        help="retrieval events with fields the schema does not know, a trace_id among them",
    )
    p.add_argument(
        "--trace-id-field", default=None, help="exemplars.trace_id_field (e.g. trace_id)"
    )
    p.add_argument(
        "--msgspec", action="store_true", help="msgspec reads every message (no scanner)"
    )
    return p.parse_args(argv)


def batches(
    data: DataConfig, events: int, partitions: int, interleaved: bool = False
) -> list[list[Message]]:
    """The first `events` events of `data` in batches of `BATCH`, each grouped by partition
    as `KafkaSource` hands them over (`interleaved`: in arrival order)."""
    messages: list[Message] = []
    for block in blocks(data, events):
        for key, value in block:
            partition = partition_of(key, partitions)
            messages.append(Message(value, partition, len(messages), "bench", key))
    cut = [messages[i : i + BATCH] for i in range(0, len(messages), BATCH)]
    if not interleaved:  # one run per partition, in offset order, as getmany gives them
        cut = [sorted(batch, key=lambda m: m.partition) for batch in cut]
    return cut


def cpu_pass(config: EngineConfig, batches: list[list[Message]]) -> float:
    """CPU seconds of `Engine.apply` over every batch, on a fresh engine."""
    engine = Engine(config)
    cpu = 0.0
    for batch in batches:
        start = time.process_time()
        engine.apply(batch)
        cpu += time.process_time() - start
    return cpu


def _report(label: str, events: int, passes: list[float]) -> None:
    best, median = min(passes), statistics.median(passes)
    print(
        f"{label}best   {events / best:>9,.0f} events per CPU second "
        f"({best * 1e6 / events:.2f} us an event)\n"
        f"{label}median {events / median:>9,.0f} events per CPU second "
        f"({median * 1e6 / events:.2f} us an event)"
    )


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    traffic = TRAFFICS[args.traffic]
    data = DataConfig(
        seed=args.seed, probe_share=traffic.probe_share, extra_fields=args.extra_fields
    )
    streams = {"": batches(data, args.events, args.partitions, args.interleaved)}
    config = engine_config({"label_keys": traffic.label_keys, "label_ttl": 900.0})
    config = dataclasses.replace(config, trace_id_field=args.trace_id_field, scan=not args.msgspec)
    tune_gc()
    passes: dict[str, list[float]] = {label: [] for label in streams}
    for _ in range(args.repeat):
        for label, stream in streams.items():
            passes[label].append(cpu_pass(config, stream))
    shape = "interleaved" if args.interleaved else "grouped by partition"
    extra = ", extra fields" if args.extra_fields else ""
    field = f", trace id field {args.trace_id_field}" if args.trace_id_field else ""
    field += ", msgspec only" if args.msgspec else ""
    print(
        f"engine alone, traffic {args.traffic}{extra}{field}, {args.events:,} events in"
        f" batches of {BATCH} ({shape}), passes: {args.repeat}"
    )
    if args.repeat:
        for label, times in passes.items():
            _report(label, args.events, times)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
