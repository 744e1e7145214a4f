"""The measured stages of the streaming benchmark, each run in its own fresh process.

`python -m bench.pipeline_stages STAGE '<json arguments>'` runs one stage and prints one
JSON object. A fresh process per stage keeps the stages from sharing heap: the resident
memory a stage reports is its own, not what the producer or an earlier stage left behind.

- `baseline`: a plain aiokafka consumer (its own new group, aiokafka defaults, `getmany` of
  up to 5000 records, no commits) that parses every value (`json.loads` or `orjson.loads`)
  and does nothing else. With a `member` argument it is one of N such consumers in one
  group (`bench.pipeline_group`, the range assignor as the agent has it): it reports each
  `getmany` batch parsed as applied, starts on `go` and stops on `stop`, and returns the
  fields a pipeline member returns (first and last batch, CPU seconds between them, runs
  of offsets, assignments, memory).
- `pipeline`: `KafkaSource` + `Runner` + `Engine` (a new group), as `ragstream run` wires
  them: decode, validate, join, score, windows, and commits (`kafka.commit_interval`). With a
  `member` argument it is one of N processes in one group (`bench.pipeline_group`): it
  starts on `go` and stops on `stop` from the parent instead of after `events`.
- `engine`: the same `Engine` fed the same messages in-process (regenerated from the seed,
  with the partition Kafka's partitioner gave each key), batches of 5000: no broker.
- `profile`: the `engine` stage under cProfile; the top functions by cumulative time.

Throughput is events from the first message received to the last one applied (the group
join before the first message is not counted). Memory is read from /proc/self/status.
"""

from __future__ import annotations

import asyncio
import cProfile
import dataclasses
import io
import json
import logging
import os
import pstats
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from itertools import chain
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.coordinator.assignors.range import RangePartitionAssignor

from bench.pipeline_data import DataConfig, blocks, partition_of
from bench.pipeline_group import GroupMember
from ragstream.config import JoinSettings, LabelSettings, Settings
from ragstream.config.settings import KafkaSettings
from ragstream.events import Message, Record
from ragstream.pipeline.engine import Engine, EngineConfig
from ragstream.pipeline.gc_tuning import tune_gc
from ragstream.pipeline.runner import Runner
from ragstream.sources.kafka import KafkaSource
from ragstream.wiring import engine_config as wiring_engine_config
from ragstream.wiring.kafka import source_config

__all__ = ["BATCH", "engine_config", "rss_mib"]

BATCH = KafkaSettings().max_batch
"""Records per batch everywhere: the agent's (`kafka.max_batch`'s default)."""
_CHECK_EVERY = 100_000

Args = dict[str, Any]


def rss_mib() -> float:
    """Resident set size of this process now (VmRSS), in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def engine_config(args: Args) -> EngineConfig:
    """The default engine configuration on the event clock (a replay: reproducible), as
    the agent has it otherwise: no final query reported (the engine keeps their
    histograms)."""
    settings = Settings(
        labels=LabelSettings(keys=list(args["label_keys"])),
        join=JoinSettings(label_ttl=float(args["label_ttl"])),
    )
    return wiring_engine_config(
        settings,
        clock="event",
        final_unlabeled=False,
        report_final=False,
    )


class _Probe:
    """Memory checkpoints every 100k applied events: RSS, window bytes, open queries."""

    def __init__(self, engine: Engine | None) -> None:
        self.engine = engine
        self.points: list[dict[str, float]] = []
        self._next = _CHECK_EVERY

    def seen(self, count: int, last: bool = False) -> None:
        if (count < self._next and not last) or (
            self.points and self.points[-1]["events"] == count
        ):
            return
        while self._next <= count:
            self._next += _CHECK_EVERY
        point = {"events": float(count), "rss_mib": rss_mib()}
        if self.engine is not None:
            point["store_mib"] = self.engine.store.nbytes / 2**20
            point["open_queries"] = float(self.engine.open_queries)
            point["pending_labels"] = float(self.engine.pending_labels)
        self.points.append(point)


def _loads(args: Args) -> Callable[[bytes], Any]:
    """The baseline's parser: `orjson.loads` or the standard library's `json.loads`."""
    return orjson.loads if args["parser"] == "orjson" else json.loads


def _plain_consumer(args: Args, *topics: str, **options: Any) -> AIOKafkaConsumer:
    """The baseline's consumer: aiokafka's defaults (or `fetch_bytes` a partition), no
    commits, batches of up to `BATCH`."""
    fetch = {"max_partition_fetch_bytes": args["fetch_bytes"]} if "fetch_bytes" in args else {}
    return AIOKafkaConsumer(
        *topics,
        bootstrap_servers=args["bootstrap"],
        group_id=args["group"],
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_poll_records=BATCH,
        **fetch,
        **options,
    )


async def _baseline(args: Args) -> Args:
    if args.get("member") is not None:
        return await _baseline_member(args)
    loads = _loads(args)
    consumer = _plain_consumer(args, args["topic"])
    await consumer.start()
    probe, n, count, first, cpu_first = _Probe(None), int(args["events"]), 0, 0.0, 0.0
    try:
        while count < n:
            data = await consumer.getmany(timeout_ms=500, max_records=BATCH)
            if data and not first:
                first, cpu_first = time.perf_counter(), time.process_time()
            for records in data.values():
                for record in records:
                    loads(record.value)
                count += len(records)
            probe.seen(count)
        seconds, cpu_seconds = time.perf_counter() - first, time.process_time() - cpu_first
    finally:
        await consumer.stop()
    probe.seen(count, last=True)
    return {
        "events": count,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "memory": probe.points,
    }


class _MemberListener(ConsumerRebalanceListener):  # type: ignore[misc]
    """Tells the group member of the partitions its consumer gets and loses."""

    def __init__(self, member: GroupMember) -> None:
        self._member = member

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self._member.revoked({tp.partition for tp in revoked})

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self._member.assigned({tp.partition for tp in assigned})


class _PlainMember:
    """The baseline's loop as one member of a group: `getmany` and parse until stopped,
    each batch reported as applied once parsed (the baseline commits nothing), timed like
    the pipeline member (first and last batch, CPU between them)."""

    def __init__(self, consumer: AIOKafkaConsumer, args: Args, member: GroupMember) -> None:
        self.consumer, self.loads, self.member = consumer, _loads(args), member
        self.probe = _Probe(None)
        self.stopping = False
        self.count = self.batches = 0
        self.first = self.last = 0.0
        self.cpu_first = self.cpu_last = 0.0

    async def work(self) -> None:
        """Consume until `stop()`; the polls that time out after the end apply nothing."""
        while not self.stopping:
            data = await self.consumer.getmany(timeout_ms=500, max_records=BATCH)
            if not any(data.values()):
                continue
            if not self.first:
                self.first, self.cpu_first = time.perf_counter(), time.process_time()
            for records in data.values():
                for record in records:
                    self.loads(record.value)
                self.count += len(records)
            self.last, self.cpu_last = time.perf_counter(), time.process_time()
            self.batches += 1
            self.probe.seen(self.count)
            self.member.applied(chain.from_iterable(data.values()))

    def stop(self) -> None:
        """Return from `work` after the batch in hand."""
        self.stopping = True

    def result(self) -> Args:
        """The fields a pipeline member returns, as far as a plain consumer has them."""
        self.probe.seen(self.count, last=True)
        return {
            **_timed(self.first, self.last, self.cpu_first, self.cpu_last, self.count),
            **self.member.result(),
            "batches": self.batches,
            "processed": self.count,
            "memory": self.probe.points,
        }


def _timed(first: float, last: float, cpu_first: float, cpu_last: float, events: int) -> Args:
    """A stage's events and its span: first and last batch (perf_counter), the seconds and
    CPU seconds between them."""
    return {
        "first": first,
        "last": last,
        "cpu_seconds": cpu_last - cpu_first,
        "events": events,
        "seconds": last - first,
    }


async def _baseline_member(args: Args) -> Args:
    """The baseline as one of N consumers in one group (`bench.pipeline_group`), with the
    agent's partition assignor so that both groups split the partitions alike."""
    member = GroupMember()
    consumer = _plain_consumer(args, partition_assignment_strategy=(RangePartitionAssignor,))
    await consumer.start()
    plain = _PlainMember(consumer, args, member)
    try:
        consumer.subscribe([args["topic"]], listener=_MemberListener(member))
        await member.run(plain.work, plain.stop)
    finally:
        await consumer.stop()
    return plain.result()


class _TimedSource:
    """Wraps the Kafka source: times fetch / apply / commit and stops the runner at `n`
    (None: when told to); `on_commit` sees every batch once it is committed."""

    def __init__(
        self,
        source: KafkaSource,
        n: int | None,
        probe: _Probe,
        on_commit: Callable[[Sequence[Record]], None] | None = None,
    ) -> None:
        self.source, self.n, self.probe, self.on_commit = source, n, probe, on_commit
        self.runner: Runner | None = None
        self.count = 0
        self.batches_seen = 0
        self.first = self.last = 0.0
        self.cpu_first = self.cpu_last = 0.0
        self.fetch = self.apply = self.commit_s = 0.0

    async def batches(self) -> AsyncIterator[Sequence[Record]]:
        mark = time.perf_counter()
        async for batch in self.source.batches():
            now = time.perf_counter()
            if batch and not self.first:
                self.first, mark = now, now
                self.cpu_first = time.process_time()
            if self.first:
                self.fetch += now - mark
            self._yielded = now
            yield batch
            mark = time.perf_counter()

    async def commit(self, batch: Sequence[Record]) -> None:
        start = time.perf_counter()
        if self.first:
            self.apply += start - self._yielded
        await self.source.commit(batch)
        end = time.perf_counter()
        if self.first:
            self.commit_s += end - start
        if batch:  # the polls that time out after the end are not applying anything
            self.last, self.cpu_last = end, time.process_time()
        self.count += len(batch)
        self.batches_seen += 1 if batch else 0
        self.probe.seen(self.count)
        if self.on_commit is not None:
            self.on_commit(batch)
        if self.n is not None and self.count >= self.n and self.runner is not None:
            self.runner.stop()

    async def stop(self) -> None:
        await self.source.stop()


async def _pipeline(args: Args) -> Args:
    engine = Engine(engine_config(args))
    member = GroupMember() if args.get("member") is not None else None
    source = KafkaSource(
        source_config(
            KafkaSettings(
                bootstrap_servers=args["bootstrap"],
                topics=[args["topic"]],
                group_id=args["group"],
                auto_offset_reset="earliest",
            ),
            {},
        ),
        on_assigned=None if member is None else member.assigned,
        on_revoked=None if member is None else member.revoked,
    )
    probe = _Probe(engine)
    if member is None:
        timed = _TimedSource(source, int(args["events"]), probe)
    else:
        timed = _TimedSource(source, None, probe, on_commit=member.applied)
    await source.start()
    try:
        timed.runner = Runner(engine, timed)
        runner = timed.runner
        await (runner.run() if member is None else member.run(runner.run, runner.stop))
    finally:
        await source.stop()
    probe.seen(timed.count, last=True)
    return {
        **_timed(timed.first, timed.last, timed.cpu_first, timed.cpu_last, timed.count),
        **({} if member is None else member.result()),
        "fetch_seconds": timed.fetch,
        "apply_seconds": timed.apply,
        "commit_seconds": timed.commit_s,
        "batches": timed.batches_seen,
        "processed": sum(engine.events.values()),
        "memory": probe.points,
        **_summary(engine),
    }


def _summary(engine: Engine) -> Args:
    labeled = sum(a.rows for a in engine.final.values())
    return {
        "outcomes": {f"{t}/{o}": n for (t, o), n in sorted(engine.events.items())},
        "final_labeled_queries": labeled,
        "series": len(engine.store.labelsets()),
    }


def _engine(args: Args, profiler: cProfile.Profile | None = None) -> Args:
    engine = Engine(engine_config(args))
    data = DataConfig(
        seed=int(args["seed"]),
        rate=float(args["rate"]),
        extra_fields=bool(args.get("extra_fields", False)),
    )
    if "probe_share" in args:  # else DataConfig's
        data = dataclasses.replace(data, probe_share=float(args["probe_share"]))
    partitions, topic = int(args["partitions"]), str(args["topic"])
    probe, count, seconds = _Probe(engine), 0, 0.0
    for block in blocks(data, int(args["events"])):
        messages = [
            Message(value, partition_of(key, partitions), count + i, topic, key)
            for i, (key, value) in enumerate(block)
        ]
        for i in range(0, len(messages), BATCH):
            batch = messages[i : i + BATCH]
            if profiler is not None:
                profiler.enable()
            start = time.perf_counter()
            engine.apply(batch)
            seconds += time.perf_counter() - start
            if profiler is not None:
                profiler.disable()
            count += len(batch)
            probe.seen(count)
    probe.seen(count, last=True)
    return {"events": count, "seconds": seconds, "memory": probe.points, **_summary(engine)}


def _profile(args: Args) -> Args:
    profiler = cProfile.Profile()
    result = _engine(args, profiler)
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(int(args.get("top", 10)))
    result["profile"] = out.getvalue()
    return result


def main(argv: list[str]) -> None:
    stage, args = argv[0], json.loads(argv[1])
    level = os.environ.get("RAGSTREAM_BENCH_LOG")  # e.g. INFO: the clients' group joins
    if level:
        logging.basicConfig(level=level.upper(), format="%(asctime)s %(name)s %(message)s")
    tune_gc()  # as `ragstream run` does at start-up; the baselines get it too, to be fair
    if stage == "baseline":
        result = asyncio.run(_baseline(args))
    elif stage == "pipeline":
        result = asyncio.run(_pipeline(args))
    elif stage == "engine":
        result = _engine(args)
    elif stage == "profile":
        result = _profile(args)
    else:
        raise SystemExit(f"unknown stage {stage!r}")
    if args.get("member") is not None:  # the lines before it are the group protocol's
        result = {"result": result}
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
