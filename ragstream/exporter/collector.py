"""The Prometheus collector: every series computed at scrape time from the engine's state.

Windowed gauges are read from the windows at the scrape's clock (the wall clock for live
runs, so decayed gauges move between scrapes; `t_now` for the event clock). Nothing is
copied per event: a scrape costs O(label sets x windows x columns). See docs/exposition.md
for the table of names, types and labels.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterable, Iterator, Mapping

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
_KNOWN_SPAN_OUTCOMES = [
    ("RETRIEVER", "retrieval"),
    *((kind, "read") for kind in ("RETRIEVER", "CHAIN", "AGENT", "LLM")),
    *((kind, "late") for kind in ("RETRIEVER", "CHAIN", "AGENT", "LLM")),
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
        events = CounterMetricFamily(
            PREFIX + "events", "Events read, by type and outcome.", labels=["type", "outcome"]
        )
        counts = dict.fromkeys(_KNOWN_EVENT_OUTCOMES, 0) | dict(engine.events)
        for (kind, outcome), n in sorted(counts.items()):
            events.add_metric([kind, outcome], n)
        yield events
        invalid = CounterMetricFamily(
            PREFIX + "invalid_events", "Malformed messages, by reason.", labels=["reason"]
        )
        for reason, n in sorted((dict.fromkeys(DECODE_REASONS, 0) | dict(engine.invalid)).items()):
            invalid.add_metric([reason], n)
        yield invalid
        clamped = CounterMetricFamily(
            PREFIX + "events_clamped",
            "Events from the future (beyond the tolerance), clamped to t_now.",
            labels=["type"],
        )
        for kind, n in sorted(engine.clamped.items()):
            clamped.add_metric([kind], n)
        yield clamped
        yield from self._join_health()
        yield from self._trace_health()
        last = GaugeMetricFamily(
            PREFIX + "last_event_timestamp_seconds",
            "Event time of the newest event seen, by type.",
            labels=["type"],
        )
        for kind, ts in sorted(engine.last_event_time.items()):
            last.add_metric([kind], ts)
        yield last
        collapsed = CounterMetricFamily(
            PREFIX + "label_values_collapsed",
            "Label values beyond the cap, exported as 'other'.",
            labels=["key"],
        )
        for key, n in sorted(engine.labelsets.collapsed.items()):
            collapsed.add_metric([key], n)
        yield collapsed
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

    def _trace_health(self) -> Iterator[Metric]:
        """Spans and traces of the OTLP topics (only when a topic carries traces)."""
        traces = self.engine.traces
        if traces is None:
            return
        spans = CounterMetricFamily(
            PREFIX + "trace_spans",
            "Spans read from trace topics, by OpenInference kind and outcome.",
            labels=["kind", "outcome"],
        )
        counts = dict.fromkeys(_KNOWN_SPAN_OUTCOMES, 0) | dict(traces.span_counts())
        for (kind, outcome), n in sorted(counts.items()):
            spans.add_metric([kind.lower(), outcome], n)
        yield spans
        closed = CounterMetricFamily(
            PREFIX + "traces", "Traces closed, by outcome.", labels=["outcome"]
        )
        for outcome, n in traces.trace_counts().items():
            closed.add_metric([outcome], n)
        yield closed
        yield GaugeMetricFamily(
            PREFIX + "open_traces",
            "Traces waiting for more spans before their answer event.",
            traces.open_traces,
        )

    def _join_health(self) -> Iterator[Metric]:
        engine = self.engine
        totals = engine.join_counters()  # partitions handed over stay counted
        labels = CounterMetricFamily(
            PREFIX + "labels",
            "Relevance labels (feedback) by outcome.",
            labels=["outcome"],
        )
        for outcome, counter in (
            ("applied", "labels_applied"),
            ("waited", "labels_pending"),
            ("late", "labels_late"),
            ("expired", "pending_expired"),
            ("evicted", "pending_evicted"),
        ):
            labels.add_metric([outcome], totals.get(counter, 0))
        yield labels
        yield GaugeMetricFamily(
            PREFIX + "open_queries", "Queries whose labels may still change.", engine.open_queries
        )
        yield GaugeMetricFamily(
            PREFIX + "pending_labels",
            "Labels waiting for their retrieval event.",
            engine.pending_labels,
        )
        yield CounterMetricFamily(
            PREFIX + "queries_finalized",
            "Queries whose label TTL ended (or that were evicted early).",
            totals.get("finalized", 0),
        )
        yield CounterMetricFamily(
            PREFIX + "open_queries_evicted",
            "Queries finalized early because the cap on open queries was reached.",
            totals.get("open_evicted", 0),
        )
        yield CounterMetricFamily(
            PREFIX + "repeated_documents",
            "Repeated doc ids in results (each counts once, at its first rank).",
            totals.get("repeated_docs", 0),
        )
