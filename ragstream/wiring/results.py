"""The results topic from the `results` section: a `ResultsSink`, or None when it is off."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ragstream.config import Settings
from ragstream.pipeline.engine import Engine
from ragstream.sinks.publisher import KafkaPublisher
from ragstream.sinks.results import ResultSampler, ResultsSink
from ragstream.wiring.kafka import client_security

__all__ = ["results_sink"]


def results_sink(
    settings: Settings,
    engine: Engine,
    client_options: dict[str, Any] | None = None,
    verdicts: Callable[[int, str], Mapping[str, Any] | None] | None = None,
) -> ResultsSink | None:
    """The sink of `results.topic` (None while unset); `client_options` as for
    `kafka_source`; `verdicts` takes a final query's judge verdict (`ResultsSink`). Raises
    `UnknownMetricError` when `results.metric` names no per-query metric."""
    r, k = settings.results, settings.kafka
    if not r.topic:
        return None
    publisher = KafkaPublisher(
        r.topic,
        bootstrap_servers=k.bootstrap_servers,
        queue_size=r.queue_size,
        drain_timeout=r.flush_timeout,
        name="results-publisher",
        client_id=k.client_id,
        acks="all",
        **(client_security(k.security) if client_options is None else client_options),
    )
    metric = r.metric if r.sample == "below" else None
    sampler = ResultSampler(r.sample, share=r.share, metric=metric, threshold=r.threshold)
    return ResultsSink(engine, publisher, sampler, verdicts=verdicts)
