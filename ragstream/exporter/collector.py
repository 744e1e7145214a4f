"""The Prometheus collector: every series computed at scrape time from the engine's state.

Windowed gauges are read from the windows at the scrape's clock (the wall clock for live
runs, so decayed gauges move between scrapes; `t_now` for the event clock). Nothing is
copied per event: a scrape costs O(label sets x windows x columns). See docs/exposition.md
for the table of names, types and labels.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterator, Mapping, Sequence

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from ragstream import __version__
from ragstream.events import DECODE_REASONS
from ragstream.exporter.family import PREFIX, Family, to_metrics
from ragstream.exporter.windowed import build
from ragstream.pipeline.engine import Engine
from ragstream.pipeline.partitions import PartitionRead
from ragstream.traces.assembly import SKIP_REASONS, TRACE_OUTCOMES

__all__ = ["EngineCollector"]

# Exported at 0 from the start, so that rate() and alerts see the series before any event.
_KNOWN_EVENT_OUTCOMES = [
    *(
        (kind, outcome)
        for kind in ("retrieval", "answer", "feedback")
        for outcome in ("processed", "late")
    ),
    ("retrieval", "duplicate"),
    ("unknown", "invalid"),
]
_LABEL_OUTCOMES = (
    ("applied", "labels_applied"),
    ("waited", "labels_pending"),
    ("late", "labels_late"),
    ("expired", "pending_expired"),
    ("evicted", "pending_evicted"),
)
"""The `outcome` label of `ragstream_labels_total` and the join counter behind each."""
_KNOWN_SPAN_OUTCOMES = [
    ("RETRIEVER", "retrieval"),
    *((kind, "read") for kind in ("RETRIEVER", "RERANKER", "CHAIN", "AGENT", "LLM")),
    *((kind, "late") for kind in ("RETRIEVER", "RERANKER", "CHAIN", "AGENT", "LLM")),
]


def _counter(name: str, help: str, *labels: str) -> Family:
    """A counter family per input partition (`partition` its last label)."""
    return Family(PREFIX + name, help + ", per input partition.", (*labels, "partition"), "counter")


class EngineCollector(Collector):
    """Reads one engine at every scrape (at `clock`, by default the engine's read clock):
    `families()` for the exporter's renderer, `collect()` for a prometheus_client registry."""

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Callable[[], float] | None = None,
        lag: Callable[[], Mapping[tuple[str, int], int]] | None = None,
    ) -> None:
        self.engine = engine
        self._clock = clock or engine.read_clock()
        self._lag = lag
        self.scrapes = 0

    def describe(self) -> list[Metric]:
        return []  # computed per scrape: nothing to check at registration

    def families(self) -> list[Family]:
        """Every family of a scrape: the windowed gauges, drift and histograms, then the
        self-health counters and gauges."""
        self.scrapes += 1
        return [*build(self.engine, self._clock()), *self._health()]

    def collect(self) -> Iterator[Metric]:
        return to_metrics(self.families())

    # -- self-health ---------------------------------------------------------------------------

    def _health(self) -> Iterator[Family]:
        engine = self.engine
        held = [(str(p), read) for p, read in engine.read_partitions().items()]
        events = _counter("events", "Events read, by type and outcome", "type", "outcome")
        invalid = _counter("invalid_events", "Malformed messages, by reason", "reason")
        clamped = _counter(
            "events_clamped",
            "Events from the future (beyond the tolerance), clamped to t_now",
            "type",
        )
        collapsed = _counter(
            "label_values_collapsed",
            "Events with a label value beyond the cap, exported as 'other'",
            "key",
        )
        for name, read in held:
            known = dict.fromkeys(_KNOWN_EVENT_OUTCOMES, 0)
            reasons: dict[str, int] = dict.fromkeys(DECODE_REASONS, 0)
            keys = dict.fromkeys(engine.config.label_keys, 0)
            tally = read.tally
            known |= tally.events
            reasons |= tally.invalid
            keys |= tally.collapsed
            for kind, n in sorted(tally.clamped.items()):
                clamped.add(kind, name, value=n)
            for (kind, outcome), n in sorted(known.items()):
                events.add(kind, outcome, name, value=n)
            for reason, n in sorted(reasons.items()):
                invalid.add(reason, name, value=n)
            for key, n in sorted(keys.items()):
                collapsed.add(key, name, value=n)
        yield from (events, invalid, clamped, collapsed)
        yield from self._join_health(held)
        yield from self._trace_health(held)
        last = Family(
            PREFIX + "last_event_timestamp_seconds",
            "Event time of the newest event seen, by type.",
            ("type",),
        )
        for kind, ts in sorted(engine.last_event_time.items()):
            last.add(kind, value=ts)
        yield last
        yield Family.single(
            PREFIX + "series",
            "Series (partition x label set) held in the windows.",
            len(engine.store),
        )
        yield Family.single(
            PREFIX + "window_retracts_expired",
            "Label updates whose query had already left every window.",
            engine.store.expired_retracts,
            "counter",
        )
        if self._lag is not None:
            lag = Family(
                PREFIX + "consumer_lag",
                "Messages behind the partition's high watermark.",
                ("topic", "partition"),
            )
            for (topic, partition), n in sorted(self._lag().items()):
                lag.add(topic, str(partition), value=n)
            yield lag
        build = Family(PREFIX + "build_info", "Version of the agent.", ("version", "python"))
        build.add(__version__, platform.python_version(), value=1)
        yield build

    def _trace_health(self, held: Sequence[tuple[str, PartitionRead]]) -> Iterator[Family]:
        """Spans and traces of the OTLP topics (only when a topic carries traces)."""
        if self.engine.traces is None:
            return
        spans = _counter(
            "trace_spans",
            "Spans read from trace topics, by OpenInference kind and outcome",
            "kind",
            "outcome",
        )
        closed = _counter("traces", "Traces closed, by outcome", "outcome")
        skipped = _counter(
            "trace_records_skipped",
            "Records of trace topics skipped (another signal's, by its otelcol.signal header), "
            "by reason",
            "reason",
        )
        for name, read in held:
            counts = dict.fromkeys(_KNOWN_SPAN_OUTCOMES, 0) | dict(read.spans)
            for (kind, outcome), n in sorted(counts.items()):
                spans.add(kind.lower(), outcome, name, value=n)
            for outcome in TRACE_OUTCOMES:
                closed.add(outcome, name, value=read.traces.get(outcome, 0))
            for reason in SKIP_REASONS:
                skipped.add(reason, name, value=read.skipped.get(reason, 0))
        yield from (spans, closed, skipped)
        yield Family.single(
            PREFIX + "open_traces",
            "Traces waiting for more spans before their answer event.",
            self.engine.open_traces,
        )

    def _join_health(self, held: Sequence[tuple[str, PartitionRead]]) -> Iterator[Family]:
        engine = self.engine
        labels = _counter("labels", "Relevance labels (feedback) by outcome", "outcome")
        finalized = _counter(
            "queries_finalized", "Queries whose label TTL ended (or that were evicted early)"
        )
        evicted = _counter(
            "open_queries_evicted",
            "Queries finalized early because the cap on open queries was reached",
        )
        repeated = _counter(
            "repeated_documents",
            "Repeated doc ids in results (each counts once, at its first rank)",
        )
        for name, read in held:
            counts = read.join
            for outcome, counter in _LABEL_OUTCOMES:
                labels.add(outcome, name, value=counts.get(counter, 0))
            finalized.add(name, value=counts.get("finalized", 0))
            evicted.add(name, value=counts.get("open_evicted", 0))
            repeated.add(name, value=counts.get("repeated_docs", 0))
        yield labels
        yield Family.single(
            PREFIX + "open_queries", "Queries whose labels may still change.", engine.open_queries
        )
        yield Family.single(
            PREFIX + "pending_labels",
            "Labels waiting for their retrieval event.",
            engine.pending_labels,
        )
        yield from (finalized, evicted, repeated)
