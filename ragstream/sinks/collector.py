"""The results topic's counters for /metrics: `ragstream_results_records_total{outcome}`
and `ragstream_results_flush_timeouts_total`."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from ragstream.sinks.results import ResultsSink

__all__ = ["ResultsCollector"]


class ResultsCollector(Collector):
    """Reads a `ResultsSink`'s counts at each scrape."""

    def __init__(self, sink: ResultsSink) -> None:
        self.sink = sink

    def collect(self) -> Iterator[CounterMetricFamily]:
        records = CounterMetricFamily(
            "ragstream_results_records",
            "Final queries for the results topic by outcome: sampled_out, sent, queue_full "
            "(dropped), failed (the brokers refused it), shutdown (queued at stop)",
            labels=["outcome"],
        )
        for outcome, n in self.sink.outcomes().items():
            records.add_metric([outcome], n)
        yield records
        yield CounterMetricFamily(
            "ragstream_results_flush_timeouts",
            "Batches committed before their records were acknowledged (results.flush_timeout)",
            value=self.sink.counts["flush_timeouts"],
        )
