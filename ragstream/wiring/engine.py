"""The engine's configuration from the settings: the one place an `EngineConfig` is built
(the commands and the benchmarks call it)."""

from __future__ import annotations

from ragstream.config import JoinSettings, LabelSettings, MetricSettings, Settings, WindowSettings
from ragstream.pipeline.engine import EngineConfig

__all__ = ["engine_config", "engine_config_of"]


def engine_config(settings: Settings, *, clock: str | None = None) -> EngineConfig:
    """The engine's configuration; `clock` overrides the configured one (replay: event)."""
    return engine_config_of(
        windows=settings.windows,
        metrics=settings.metrics,
        labels=settings.labels,
        join=settings.join,
        clock=clock,
    )


def engine_config_of(
    *,
    windows: WindowSettings | None = None,
    metrics: MetricSettings | None = None,
    labels: LabelSettings | None = None,
    join: JoinSettings | None = None,
    clock: str | None = None,
) -> EngineConfig:
    """The engine's configuration from settings sections (absent: their defaults), without
    reading the environment (the demo and the benchmarks)."""
    w = windows or WindowSettings()
    m = metrics or MetricSettings()
    lab = labels or LabelSettings()
    j = join or JoinSettings()
    return EngineConfig(
        cutoffs=tuple(m.cutoffs),
        half_lives=tuple(m.half_lives),
        windows=tuple(w.sizes),
        buckets=w.buckets,
        bins=m.histogram_bins,
        clock=clock or w.clock,
        future_tolerance=w.future_tolerance,
        label_keys=tuple(lab.keys),
        max_label_values=lab.max_values,
        label_ttl=j.label_ttl,
        pending_ttl=j.pending_ttl,
        max_open=j.max_open,
        max_pending=j.max_pending,
        gain=m.gain,
        relevance_threshold=m.relevance_threshold,
    )
