"""Builds the library objects from the settings: the one place where configuration meets code."""

from __future__ import annotations

from typing import Any

from ragstream.checkpoint import Handover, StateTopic
from ragstream.config import Settings
from ragstream.judging.service import JudgingService, engine_label_sink, engine_lookup
from ragstream.pipeline.engine import Engine, EngineConfig
from ragstream.pipeline.scoring import MetricLayout

__all__ = ["engine_config", "judging_service", "state_handover"]


def engine_config(settings: Settings, *, clock: str | None = None) -> EngineConfig:
    """The engine's configuration; `clock` overrides the configured one (replay: event)."""
    return EngineConfig(
        layout=MetricLayout(
            cutoffs=tuple(settings.metrics.cutoffs),
            half_lives=tuple(settings.metrics.half_lives),
        ),
        windows=tuple(settings.windows.sizes),
        buckets=settings.windows.buckets,
        bins=settings.metrics.histogram_bins,
        clock=clock or settings.windows.clock,
        future_tolerance=settings.windows.future_tolerance,
        label_keys=tuple(settings.labels.keys),
        max_label_values=settings.labels.max_values,
        label_ttl=settings.join.label_ttl,
        pending_ttl=settings.join.pending_ttl,
        max_open=settings.join.max_open,
        max_pending=settings.join.max_pending,
        gain=settings.metrics.gain,
        relevance_threshold=settings.metrics.relevance_threshold,
    )


def judging_service(
    settings: Settings, engine: Engine, producer_options: dict[str, Any] | None = None
) -> JudgingService | None:
    """The judging service for this engine, or None when `judge.enabled` is false."""
    judge = settings.judge
    if not judge.enabled:
        return None
    metrics = [rule.metric for rule in judge.sampling.retrieval_rules]
    clock = engine.read_clock()
    return JudgingService.from_settings(
        judge,
        labelset=engine.labelsets,
        windows=settings.windows.sizes,
        buckets=settings.windows.buckets,
        bins=settings.metrics.histogram_bins,
        lookup=engine_lookup(engine, metrics),
        on_labels=engine_label_sink(engine)[0],
        bootstrap_servers=settings.kafka.bootstrap_servers,
        producer_options=producer_options,
        sampler_clock=clock,
        window_clock=clock,
    )


def state_handover(
    settings: Settings, engine: Engine, client_options: dict[str, Any] | None = None
) -> Handover | None:
    """The engine's partition-state hand-over, or None when `state.enabled` is false."""
    state, kafka = settings.state, settings.kafka
    if not state.enabled:
        return None
    topic = StateTopic(
        state.topic_for(kafka.group_id),
        bootstrap_servers=kafka.bootstrap_servers,
        client_id=kafka.client_id,
        client_options=client_options,
        replication_factor=state.replication_factor,
    )
    return Handover(
        engine,
        topic,
        interval=state.checkpoint_interval,
        chunk_bytes=state.chunk_bytes,
        writer=kafka.client_id,
    )
