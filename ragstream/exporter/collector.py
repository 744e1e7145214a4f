"""The Prometheus collector: every series computed at scrape time from the engine's state.

Windowed gauges are read from the windows at the scrape's clock (the wall clock for live
runs, so decayed gauges move between scrapes; `t_now` for the event clock). Nothing is
copied per event: a scrape costs O(label sets x windows x columns). See docs/exposition.md
for the table of names, types and labels.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from ragstream import __version__
from ragstream.events import DECODE_REASONS
from ragstream.exporter.family import PREFIX, TextRenderer, to_metrics
from ragstream.exporter.windowed import build, metric_for_column
from ragstream.pipeline.engine import Engine
from ragstream.pipeline.partitions import PartitionRead
from ragstream.traces.assembly import SKIP_REASONS, TRACE_OUTCOMES

__all__ = ["EngineCollector", "metric_for_column"]

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


class EngineCollector(Collector):
    """Reads one engine at every scrape; register it on a `CollectorRegistry`."""

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Callable[[], float] | None = None,
        lag: Callable[[], Mapping[tuple[str, int], int]] | None = None,
        extra: Callable[[], Iterable[Metric]] | None = None,
        windowed: bool = True,
    ) -> None:
        self.engine = engine
        self.windowed = windowed
        self._clock = clock
        self._lag = lag
        self._extra = extra
        self.scrapes = 0
        self._text = TextRenderer()

    def describe(self) -> list[Metric]:
        return []  # computed per scrape: nothing to check at registration

    def _now(self) -> float:
        if self._clock is not None:
            return self._clock()
        return self.engine.read_clock()()

    def collect(self) -> Iterator[Metric]:
        self.scrapes += 1
        if self.windowed:
            yield from to_metrics(build(self.engine, self._now()))
        yield from self._health()
        if self._extra is not None:
            yield from self._extra()

    def windowed_text(self) -> bytes:
        """The windowed gauges and histograms in the text format, written directly (fast).

        Counts as a scrape, like `collect()`: the server calls one or the other per scrape.
        """
        self.scrapes += 1
        return self._text.render(build(self.engine, self._now())).encode()

    def health_only(self) -> EngineCollector:
        """The same collector without the windowed families (they come from `windowed_text`)."""
        return EngineCollector(
            self.engine,
            clock=self._clock,
            lag=self._lag,
            extra=self._extra,
            windowed=False,
        )

    # -- self-health ---------------------------------------------------------------------------

    def _health(self) -> Iterator[Metric]:
        engine = self.engine
        held = [(str(p), read) for p, read in engine.read_partitions().items()]
        events = CounterMetricFamily(
            PREFIX + "events",
            "Events read, by type and outcome, per input partition.",
            labels=["type", "outcome", "partition"],
        )
        invalid = CounterMetricFamily(
            PREFIX + "invalid_events",
            "Malformed messages, by reason, per input partition.",
            labels=["reason", "partition"],
        )
        clamped = CounterMetricFamily(
            PREFIX + "events_clamped",
            "Events from the future (beyond the tolerance), clamped to t_now, per input partition.",
            labels=["type", "partition"],
        )
        collapsed = CounterMetricFamily(
            PREFIX + "label_values_collapsed",
            "Events with a label value beyond the cap, exported as 'other', per input partition.",
            labels=["key", "partition"],
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
                clamped.add_metric([kind, name], n)
            for (kind, outcome), n in sorted(known.items()):
                events.add_metric([kind, outcome, name], n)
            for reason, n in sorted(reasons.items()):
                invalid.add_metric([reason, name], n)
            for key, n in sorted(keys.items()):
                collapsed.add_metric([key, name], n)
        yield events
        yield invalid
        yield clamped
        yield collapsed
        yield from self._join_health(held)
        yield from self._trace_health(held)
        last = GaugeMetricFamily(
            PREFIX + "last_event_timestamp_seconds",
            "Event time of the newest event seen, by type.",
            labels=["type"],
        )
        for kind, ts in sorted(engine.last_event_time.items()):
            last.add_metric([kind], ts)
        yield last
        yield GaugeMetricFamily(
            PREFIX + "series",
            "Series (partition x label set) held in the windows.",
            len(engine.store),
        )
        yield CounterMetricFamily(
            PREFIX + "window_retracts_expired",
            "Label updates whose query had already left every window.",
            engine.store.expired_retracts,
        )
        if self._lag is not None:
            lag = GaugeMetricFamily(
                PREFIX + "consumer_lag",
                "Messages behind the partition's high watermark.",
                labels=["topic", "partition"],
            )
            for (topic, partition), n in sorted(self._lag().items()):
                lag.add_metric([topic, str(partition)], n)
            yield lag
        build = GaugeMetricFamily(
            PREFIX + "build_info", "Version of the agent.", labels=["version", "python"]
        )
        build.add_metric([__version__, platform.python_version()], 1)
        yield build

    def _trace_health(self, held: Sequence[tuple[str, PartitionRead]]) -> Iterator[Metric]:
        """Spans and traces of the OTLP topics (only when a topic carries traces)."""
        if self.engine.traces is None:
            return
        spans = CounterMetricFamily(
            PREFIX + "trace_spans",
            "Spans read from trace topics, by OpenInference kind and outcome, per input partition.",
            labels=["kind", "outcome", "partition"],
        )
        closed = CounterMetricFamily(
            PREFIX + "traces",
            "Traces closed, by outcome, per input partition.",
            labels=["outcome", "partition"],
        )
        skipped = CounterMetricFamily(
            PREFIX + "trace_records_skipped",
            "Records of trace topics skipped (another signal's, by its otelcol.signal header), "
            "by reason, per input partition.",
            labels=["reason", "partition"],
        )
        for name, read in held:
            counts = dict.fromkeys(_KNOWN_SPAN_OUTCOMES, 0) | dict(read.spans)
            for (kind, outcome), n in sorted(counts.items()):
                spans.add_metric([kind.lower(), outcome, name], n)
            for outcome in TRACE_OUTCOMES:
                closed.add_metric([outcome, name], read.traces.get(outcome, 0))
            for reason in SKIP_REASONS:
                skipped.add_metric([reason, name], read.skipped.get(reason, 0))
        yield spans
        yield closed
        yield skipped
        yield GaugeMetricFamily(
            PREFIX + "open_traces",
            "Traces waiting for more spans before their answer event.",
            self.engine.open_traces,
        )

    def _join_health(self, held: Sequence[tuple[str, PartitionRead]]) -> Iterator[Metric]:
        engine = self.engine
        labels = CounterMetricFamily(
            PREFIX + "labels",
            "Relevance labels (feedback) by outcome, per input partition.",
            labels=["outcome", "partition"],
        )
        finalized = CounterMetricFamily(
            PREFIX + "queries_finalized",
            "Queries whose label TTL ended (or that were evicted early), per input partition.",
            labels=["partition"],
        )
        evicted = CounterMetricFamily(
            PREFIX + "open_queries_evicted",
            "Queries finalized early because the cap on open queries was reached, per input "
            "partition.",
            labels=["partition"],
        )
        repeated = CounterMetricFamily(
            PREFIX + "repeated_documents",
            "Repeated doc ids in results (each counts once, at its first rank), per input "
            "partition.",
            labels=["partition"],
        )
        for name, read in held:
            counts = read.join
            for outcome, counter in _LABEL_OUTCOMES:
                labels.add_metric([outcome, name], counts.get(counter, 0))
            finalized.add_metric([name], counts.get("finalized", 0))
            evicted.add_metric([name], counts.get("open_evicted", 0))
            repeated.add_metric([name], counts.get("repeated_docs", 0))
        yield labels
        yield GaugeMetricFamily(
            PREFIX + "open_queries", "Queries whose labels may still change.", engine.open_queries
        )
        yield GaugeMetricFamily(
            PREFIX + "pending_labels",
            "Labels waiting for their retrieval event.",
            engine.pending_labels,
        )
        yield finalized
        yield evicted
        yield repeated
