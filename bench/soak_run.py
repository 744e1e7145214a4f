"""One soak run: the agent of `ragstream run` on an in-memory synthetic source at full speed.

The agent is the real one (`ragstream.agent.Agent`: `Engine` + `Runner` + the HTTP server
+ the judging service, built by the same wiring as `ragstream run`, defaults everywhere
but two exported label keys and the event clock), fed by `SoakSource`: the events of
`bench.pipeline_data` with the soak's mix (retrievals of 20 documents, probes with qrels,
clicks as feedback seconds to half an hour later, a few before their retrieval, queries
never labeled, an answer for every query), spread over partitions as a topic would, in
batches of `kafka.max_batch`'s default. The event clock advances with the
stream (20 queries per event-second), so 10 M events cover about two days of windows and
every label TTL expires as it would in production.

Every `every` committed events the source takes a `Sample`: RSS (/proc/self/statm), open
queries, pending labels, window series and bytes, and the agent's events per second over
the interval. The agent's time excludes generating the events and taking the sample (the
source's own work); a `/metrics` scrape over HTTP is part of each sample, timed apart.
"""

from __future__ import annotations

import asyncio
import time
import tracemalloc
import zlib
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import pairwise, product
from typing import Any

import aiohttp

from bench.pipeline_data import DataConfig, blocks
from bench.scrape_timing import rss_bytes
from ragstream.agent import Agent
from ragstream.config import JoinSettings, LabelSettings, Settings, WindowSettings
from ragstream.config.settings import KafkaSettings
from ragstream.events import Message, Record
from ragstream.exporter.http import MetricsServer
from ragstream.judging.service import JudgingService
from ragstream.pipeline.engine import Engine
from ragstream.wiring import engine_config, engine_judging

__all__ = [
    "LABEL_KEYS",
    "SOAK_LABEL_SETS",
    "Sample",
    "SoakConfig",
    "SoakResult",
    "SoakSource",
    "run_soak",
    "soak_data",
]

LABEL_KEYS = ("app", "index")
SOAK_LABEL_SETS = tuple(
    {"app": app, "index": index}
    for app, index in product(
        ("support", "search", "docs", "billing", "onboarding"), ("v6", "v7", "v8")
    )
)
"""Fifteen label sets: five apps by three indexes, both keys exported."""
_TOPIC = "soak"
_TYPE_AT = slice(9, 12)
"""Where the event type starts in the generator's JSON (`{"type":"...`)."""
_TYPES = {b"ret": "retrieval", b"fee": "feedback", b"ans": "answer"}
_TRACE_FRAMES = 6


@dataclass(frozen=True, slots=True)
class SoakConfig:
    """What one soak run does."""

    events: int = 10_000_000
    every: int = 100_000
    """Events between samples (a multiple of `batch`)."""
    partitions: int = 3
    batch: int = KafkaSettings().max_batch
    """Messages per batch: `kafka.max_batch`'s default."""
    rate: float = 20.0
    """Queries per second of event time."""
    label_ttl: float = 900.0
    seed: int = 7
    scrape: bool = True
    """Scrape /metrics over HTTP at every sample, as Prometheus would."""
    trace_at: tuple[int, ...] = ()
    """Event counts at which tracemalloc starts (the first) and takes a snapshot (the
    others): what grows between two snapshots taken after every query of the first one's
    time has been finalized is what the agent keeps."""


def soak_data(config: SoakConfig) -> DataConfig:
    """The soak's traffic: 10 % probes, half the rest clicked (1-3 clicks, 2 % of them
    before their retrieval event, 3 % after the label TTL), an answer for every query."""
    return DataConfig(
        seed=config.seed,
        rate=config.rate,
        probe_share=0.1,
        label_sets=SOAK_LABEL_SETS,
        feedback_share=0.5,
        early_share=0.02,
        late_share=0.03,
        late_delay=(config.label_ttl + 100.0, 2 * config.label_ttl),
        answer_share=1.0,
    )


def soak_settings(config: SoakConfig) -> Settings:
    """`ragstream run`'s settings but for two exported label keys, the label TTL and the
    event clock."""
    return Settings(
        labels=LabelSettings(keys=list(LABEL_KEYS)),
        join=JoinSettings(label_ttl=config.label_ttl),
        windows=WindowSettings(clock="event"),
    )


@dataclass(frozen=True, slots=True)
class Sample:
    """The agent's state after `events` committed events."""

    events: int
    rss_mib: float
    open_queries: int
    pending_labels: int
    series: int
    """Window series of the engine (partition x label set)."""
    store_mib: float
    """Bytes of the engine's windows."""
    judge_store_mib: float
    """Bytes of the judge's windows."""
    agent_seconds: float
    """The agent's time since the start (generating and sampling excluded)."""
    rate: float
    """Events per agent second over the interval since the previous sample."""
    event_hours: float
    """Event time the engine's clock has covered since the first event."""
    scrape_ms: float
    scrape_kib: float


@dataclass(slots=True)
class SoakResult:
    """Everything a soak measured, JSON-friendly (`as_dict`)."""

    config: SoakConfig
    samples: list[Sample]
    generated: dict[str, int]
    """Events handed to the agent, by type."""
    delivered: int
    outcomes: dict[str, int]
    """The engine's (type/outcome) counts."""
    joins: dict[str, int]
    judge: dict[str, Any]
    bounds: dict[str, float]
    wall_seconds: float
    generate_seconds: float
    traces: list[list[str]] = field(default_factory=list)
    """Per pair of consecutive tracemalloc snapshots: the total and the top growths."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class SoakSource:
    """The soak's events as the runner's `Source`: batches of `batch` messages, offsets
    per partition, a sample every `every` committed events."""

    def __init__(self, config: SoakConfig, data: DataConfig) -> None:
        if config.every % config.batch:
            raise ValueError("every must be a multiple of batch")
        self.config, self.data = config, data
        self.engine: Engine | None = None
        self.judging: JudgingService | None = None
        self.server: MetricsServer | None = None
        self.generated: Counter[str] = Counter()
        self.committed = 0
        self.samples: list[Sample] = []
        self.generate_seconds = 0.0
        self.overhead_seconds = 0.0
        self.snapshots: list[tuple[int, tracemalloc.Snapshot]] = []
        self._stopped = False
        self._start = 0.0
        self._session: aiohttp.ClientSession | None = None

    async def batches(self) -> AsyncIterator[Sequence[Message]]:
        c, clock = self.config, time.perf_counter
        self._start = mark = clock()
        offsets = [0] * c.partitions
        pending: list[Message] = []
        types = self.generated
        for block in blocks(self.data, c.events):
            for key, value in block:
                p = zlib.crc32(key) % c.partitions
                pending.append(Message(value, p, offsets[p], _TOPIC, key))
                offsets[p] += 1
            types.update(_TYPES.get(value[_TYPE_AT], "other") for _, value in block)
            while len(pending) >= c.batch:
                chunk, pending = pending[: c.batch], pending[c.batch :]
                self.generate_seconds += clock() - mark
                yield chunk
                mark = clock()
                if self._stopped:
                    return
        self.generate_seconds += clock() - mark
        if pending and not self._stopped:
            yield pending

    async def commit(self, batch: Sequence[Record]) -> None:
        self.committed += len(batch)
        if self.committed % self.config.every == 0 or self.committed == self.config.events:
            start = time.perf_counter()
            await self._sample()
            self.overhead_seconds += time.perf_counter() - start

    async def stop(self) -> None:
        self._stopped = True
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _sample(self) -> None:
        engine, judging = self.engine, self.judging
        assert engine is not None
        events = self.committed
        if events in self.config.trace_at:  # the first point starts tracing
            if tracemalloc.is_tracing():
                self.snapshots.append((events, tracemalloc.take_snapshot()))
            else:
                tracemalloc.start(_TRACE_FRAMES)
        scrape_ms = scrape_kib = float("nan")
        if self.config.scrape and self.server is not None:
            if self._session is None:
                self._session = aiohttp.ClientSession()
            start = time.perf_counter()
            async with self._session.get(self.server.url + "/metrics") as response:
                body = await response.read()
            scrape_ms = (time.perf_counter() - start) * 1000
            scrape_kib = len(body) / 1024
        agent = time.perf_counter() - self._start - self.generate_seconds - self.overhead_seconds
        previous = self.samples[-1] if self.samples else None
        done = events - (previous.events if previous else 0)
        spent = agent - (previous.agent_seconds if previous else 0.0)
        judge_mib = 0.0 if judging is None else judging.results.store.nbytes / 2**20
        self.samples.append(
            Sample(
                events=events,
                rss_mib=rss_bytes() / 2**20,
                open_queries=engine.open_queries,
                pending_labels=engine.pending_labels,
                series=len(engine.store),
                store_mib=engine.store.nbytes / 2**20,
                judge_store_mib=judge_mib,
                agent_seconds=agent,
                rate=done / spent if spent > 0 else float("nan"),
                event_hours=(engine.now() - self.data.start) / 3600,
                scrape_ms=scrape_ms,
                scrape_kib=scrape_kib,
            )
        )


def _top_growth(
    before: tuple[int, tracemalloc.Snapshot], after: tuple[int, tracemalloc.Snapshot], n: int
) -> list[str]:
    """The `n` largest growths of live memory between two snapshots, by traceback."""
    keep = [tracemalloc.Filter(False, tracemalloc.__file__)]
    a, b = before[1].filter_traces(keep), after[1].filter_traces(keep)
    total = sum(t.size for t in b.statistics("filename")) - sum(
        t.size for t in a.statistics("filename")
    )
    lines = [f"tracemalloc, {before[0]:,} -> {after[0]:,} events: {total / 2**20:+.2f} MiB traced"]
    for stat in b.compare_to(a, "traceback")[:n]:
        frames = " <- ".join(f"{f.filename.split('/')[-1]}:{f.lineno}" for f in stat.traceback)
        lines.append(f"{stat.size_diff / 2**20:+8.2f} MiB {stat.count_diff:+9d} blocks  {frames}")
    return lines


def _bounds(config: SoakConfig, settings: Settings, engine: Engine) -> dict[str, float]:
    """The configured bounds and the levels the traffic sets."""
    label_sets = len(SOAK_LABEL_SETS)
    return {
        "max_open": float(settings.join.max_open * config.partitions),
        "open_level": config.rate * config.label_ttl,
        "max_pending": float(settings.join.max_pending * config.partitions),
        "series_level": float(config.partitions * label_sets),
        "max_series": float(
            config.partitions * (settings.labels.max_values + 1) ** len(LABEL_KEYS)
        ),
        "series_nbytes": float(engine.spec.series_nbytes()),
    }


def _judge_summary(judging: JudgingService | None) -> dict[str, Any]:
    if judging is None:
        return {}
    w = judging.workers
    return {
        "submitted": w.submitted,
        "outcomes": dict(w.outcomes),
        "dropped": dict(w.dropped),
        "recorded": judging.results.recorded,
        "late": judging.results.late,
        "in_flight": w.in_flight,
    }


async def _run(config: SoakConfig) -> SoakResult:
    settings = soak_settings(config)
    engine = Engine(  # as `ragstream run`
        engine_config(settings, final_unlabeled=False, report_final=False)
    )
    judging = engine_judging(settings, engine)
    source = SoakSource(config, soak_data(config))
    source.engine, source.judging = engine, judging
    agent = Agent(engine, source, host="127.0.0.1", port=0, judging=judging)
    start = time.perf_counter()
    source.server = agent.server  # serving before the first batch
    try:
        await agent.run()
    finally:
        await source.stop()
    wall = time.perf_counter() - start
    snapshots = source.snapshots
    traces = [_top_growth(a, b, 12) for a, b in pairwise(snapshots)]
    if tracemalloc.is_tracing():
        tracemalloc.stop()
    return SoakResult(
        config=config,
        samples=source.samples,
        generated=dict(source.generated),
        delivered=source.committed,
        outcomes={f"{t}/{o}": n for (t, o), n in sorted(engine.events.items())},
        joins=engine.join_counters(),
        judge=_judge_summary(judging),
        bounds=_bounds(config, settings, engine),
        wall_seconds=wall,
        generate_seconds=source.generate_seconds,
        traces=traces,
    )


def run_soak(config: SoakConfig) -> SoakResult:
    """Run one soak in this process (it installs the agent's signal handlers)."""
    return asyncio.run(_run(config))


def type_outcomes(outcomes: dict[str, int]) -> dict[str, int]:
    """Events the engine counted, by type (every outcome)."""
    totals: Counter[str] = Counter()
    for name, n in outcomes.items():
        totals[name.split("/")[0]] += n
    return dict(totals)


def iter_samples(result: SoakResult, after: int) -> Iterable[Sample]:
    """The samples taken after `after` events."""
    return (s for s in result.samples if s.events > after)
