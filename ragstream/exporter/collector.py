"""The Prometheus collector: every series computed at scrape time from the engine's state.

Windowed gauges are read from the windows at the scrape's clock (the wall clock for live
runs, so decayed gauges move between scrapes; `t_now` for the event clock). Nothing is
copied per event: a scrape costs O(label sets x windows x columns). See docs/exposition.md
for the table of names, types and labels.
"""

from __future__ import annotations

import math
import platform
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from ragstream import __version__
from ragstream.durations import format_duration
from ragstream.events import DECODE_REASONS
from ragstream.pipeline.engine import EVENT_TIME, EVENT_TIME_BASE, Engine
from ragstream.windows import WindowRead

__all__ = ["EngineCollector", "metric_for_column"]

PREFIX = "ragstream_"
_FAMILY_NAMES = {
    "rr": "retrieval_mrr",
    "precision": "retrieval_precision",
    "recall": "retrieval_recall",
    "hit_rate": "retrieval_hit_rate",
    "dcg": "retrieval_dcg",
    "ndcg": "retrieval_ndcg",
    "doc_age_seconds": "retrieval_doc_age_seconds",
}
_HELP = {
    "retrieval_mrr": "Mean reciprocal rank of the first relevant document over the window.",
    "retrieval_precision": "Mean precision@k (relevant in the top k / k) over the window.",
    "retrieval_recall": "Mean recall@k (relevant in the top k / all judged relevant).",
    "retrieval_hit_rate": "Share of queries with a relevant document in the top k.",
    "retrieval_dcg": "Mean DCG@k (linear or exponential gain, log2 discount).",
    "retrieval_ndcg": "Mean NDCG@k (ideal ranking over all judged documents).",
    "retrieval_doc_age_seconds": "Mean age of the top-k documents at scrape time.",
    "retrieval_mrr_decayed": "Mean recency-weighted reciprocal rank, decayed live.",
    "retrieval_precision_decayed": "Mean recency-weighted precision@k, decayed live.",
    "retrieval_dcg_decayed": "Mean recency-weighted DCG@k, decayed live.",
    "retrieval_ndcg_decayed": "Mean recency-weighted NDCG@k (a ratio: constant in time).",
    "retrieval_recall_decayed": "Mean recency-weighted recall@k (a ratio: constant in time).",
}
_HISTOGRAM_FAMILIES = ("rr", "precision", "recall", "ndcg")
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


def metric_for_column(column: str) -> tuple[str, dict[str, str]]:
    """`"ndcg@10"` -> (`"retrieval_ndcg"`, {"k": "10"}); `"rr_decayed"` -> mrr_decayed."""
    base, _, k = column.partition("@")
    decayed = base.endswith("_decayed")
    family = base.removesuffix("_decayed")
    name = _FAMILY_NAMES[family] + ("_decayed" if decayed else "")
    return name, ({"k": k} if k else {})


class EngineCollector(Collector):
    """Reads one engine at every scrape; register it on a `CollectorRegistry`."""

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Callable[[], float] | None = None,
        lag: Callable[[], Mapping[tuple[str, int], int]] | None = None,
        extra: Callable[[], Iterable[Metric]] | None = None,
    ) -> None:
        self.engine = engine
        self._clock = clock
        self._lag = lag
        self._extra = extra
        self.scrapes = 0

    def describe(self) -> list[Metric]:
        return []  # computed per scrape: nothing to check at registration

    def _now(self) -> float:
        if self._clock is not None:
            return self._clock()
        return self.engine.now() if self.engine.config.clock == "event" else time.time()

    def collect(self) -> Iterator[Metric]:
        self.scrapes += 1
        now = self._now()
        yield from self._windowed(now)
        yield from self._histograms()
        yield from self._health()
        if self._extra is not None:
            yield from self._extra()

    # -- windowed gauges ---------------------------------------------------------------------

    def _windowed(self, now: float) -> Iterator[Metric]:
        engine = self.engine
        keys = list(engine.config.label_keys)
        layout = engine.layout
        columns = engine.columns
        half_lives = [format_duration(h) for h in layout.half_lives]
        families: dict[str, GaugeMetricFamily] = {}

        def gauge(name: str, labels: Sequence[str]) -> GaugeMetricFamily:
            family = families.get(name)
            if family is None:
                family = families[name] = GaugeMetricFamily(
                    PREFIX + name, _HELP.get(name, name), labels=[*labels, "window", *keys]
                )
            return family

        queries = GaugeMetricFamily(
            PREFIX + "window_queries",
            "Queries in the window: all of them, and those with at least one label.",
            labels=["kind", "window", *keys],
        )
        rr_column = columns.index("rr")
        age_columns = [columns.index(c) for c in layout.doc_age]
        event_column = columns.index(EVENT_TIME)
        plain_columns = [(i, *metric_for_column(c)) for i, c in enumerate(layout.plain)]
        ratio_names = [metric_for_column(c) for c in layout.ratio]
        decayed_names = [metric_for_column(c) for c in layout.decayed]
        n_plain, n_ratio = len(layout.plain), len(layout.ratio)
        for labelset in engine.store.labelsets():
            reads = engine.store.read(now, labelset)
            for window, read in reads.items():
                if read.queries == 0:
                    continue
                tail = [window, *labelset]
                labeled = int(read.aggregate.count[rr_column])
                queries.add_metric(["all", *tail], read.queries)
                queries.add_metric(["labeled", *tail], labeled)
                mean = read.mean()
                for i, name, extra in plain_columns:
                    _add(gauge(name, list(extra)), [*extra.values(), *tail], mean[i])
                for j, half_life in enumerate(half_lives):
                    start = n_plain + j * n_ratio
                    for c, (name, extra) in enumerate(ratio_names):
                        labels = [*extra.values(), half_life, *tail]
                        _add(gauge(name, [*extra, "half_life"]), labels, mean[start + c])
                self._decayed(read, decayed_names, half_lives, tail, gauge)
                self._ages(mean, age_columns, event_column, now, layout.cutoffs, tail, gauge)
        yield queries
        yield from families.values()

    @staticmethod
    def _decayed(
        read: WindowRead,
        names: Sequence[tuple[str, dict[str, str]]],
        half_lives: Sequence[str],
        tail: list[str],
        gauge: Callable[[str, Sequence[str]], GaugeMetricFamily],
    ) -> None:
        if not half_lives:
            return
        grid = read.decayed_mean()
        for j, half_life in enumerate(half_lives):
            for c, (name, extra) in enumerate(names):
                labels = [*extra.values(), half_life, *tail]
                _add(gauge(name, [*extra, "half_life"]), labels, grid[j, c])

    @staticmethod
    def _ages(
        mean: NDArray[np.float64],
        age_columns: Sequence[int],
        event_column: int,
        now: float,
        cutoffs: Sequence[int],
        tail: list[str],
        gauge: Callable[[str, Sequence[str]], GaugeMetricFamily],
    ) -> None:
        """Mean age at `now` = mean age at the queries' ts + (now - mean ts)."""
        since = now - (mean[event_column] + EVENT_TIME_BASE)
        family = gauge("retrieval_doc_age_seconds", ["k"])
        for k, column in zip(cutoffs, age_columns, strict=True):
            _add(family, [str(k), *tail], mean[column] + max(since, 0.0))

    # -- final per-query histograms -------------------------------------------------------------

    def _histograms(self) -> Iterator[Metric]:
        engine = self.engine
        keys = list(engine.config.label_keys)
        edges = engine.spec.edges()
        bounds = [_le(e) for e in edges[:-1]] + ["+Inf"]
        families: dict[str, HistogramMetricFamily] = {}
        for labelset, aggregate in sorted(engine.final.items()):
            counts = aggregate.histogram
            sums = aggregate.total
            for i, column in enumerate(engine.layout.plain):
                family_name = column.partition("@")[0]
                if family_name not in _HISTOGRAM_FAMILIES:
                    continue
                _, extra = metric_for_column(column)
                name = "query_" + family_name
                family = families.get(name)
                if family is None:
                    family = families[name] = HistogramMetricFamily(
                        PREFIX + name,
                        f"Final per-query {column.partition('@')[0]} (after the label TTL).",
                        labels=[*extra, *keys],
                    )
                cumulative = np.cumsum(counts[i]).tolist()
                buckets = list(zip(bounds, (float(c) for c in cumulative), strict=True))
                family.add_metric([*extra.values(), *labelset], buckets, float(sums[i]))
        yield from families.values()

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

    def _join_health(self) -> Iterator[Metric]:
        engine = self.engine
        totals: dict[str, int] = {}
        for join in engine.joins.values():
            for name, n in join.counters.as_dict().items():
                totals[name] = totals.get(name, 0) + n
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


def _add(family: GaugeMetricFamily, labels: Sequence[str], value: float) -> None:
    if not math.isnan(value):
        family.add_metric(list(labels), float(value))


def _le(edge: float) -> str:
    return f"{edge:.6g}"
