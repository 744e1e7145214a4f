"""Prometheus exposition of the partition-state hand-over: snapshots by outcome, refusals
by reason, bytes written (`ragstream run` with `state.enabled`)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from ragstream.checkpoint.handover import REFUSAL_REASONS, HandoverCounters

__all__ = ["HandoverCollector"]


class HandoverCollector(Collector):
    """Reads a hand-over's counters at every scrape; register it on a `CollectorRegistry`."""

    def __init__(self, counters: HandoverCounters) -> None:
        self.counters = counters

    def describe(self) -> list[Metric]:
        return []  # computed per scrape

    def collect(self) -> Iterator[Metric]:
        counters = self.counters
        snapshots = CounterMetricFamily(
            "ragstream_state_snapshots",
            "Partition state snapshots: written, write_failed, adopted, fresh (none), refused.",
            labels=["outcome"],
        )
        for outcome, n in (
            ("written", counters.written),
            ("write_failed", counters.write_failed),
            ("adopted", counters.adopted),
            ("fresh", counters.fresh),
            ("refused", sum(counters.refused.values())),
        ):
            snapshots.add_metric([outcome], n)
        yield snapshots
        refused = CounterMetricFamily(
            "ragstream_state_snapshots_refused",
            "Partition state snapshots not adopted, by reason.",
            labels=["reason"],
        )
        for reason, n in sorted(
            (dict.fromkeys(REFUSAL_REASONS, 0) | dict(counters.refused)).items()
        ):
            refused.add_metric([reason], n)
        yield refused
        yield CounterMetricFamily(
            "ragstream_state_snapshot_bytes",
            "Compressed bytes of the partition state snapshots written.",
            counters.bytes_written,
        )
