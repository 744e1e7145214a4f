"""The engine's configuration from the settings: the one place an `EngineConfig` is built
(the commands and the benchmarks call it)."""

from __future__ import annotations

from ragstream.config import Settings
from ragstream.pipeline.engine import EngineConfig
from ragstream.pipeline.scoring import MetricLayout

__all__ = ["engine_config"]


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
