"""The engine's configuration from the settings: the one place an `EngineConfig` is built
(the commands and the benchmarks call it)."""

from __future__ import annotations

from ragstream.config import DriftSettings, Settings, TraceSettings
from ragstream.events import DEFAULT_LIMITS
from ragstream.pipeline.drift_config import DriftConfig
from ragstream.pipeline.engine import EngineConfig
from ragstream.traces import TraceMapping

__all__ = ["drift_config", "engine_config", "trace_mapping"]


def engine_config(
    settings: Settings,
    *,
    clock: str | None = None,
    drift: bool = True,
    final_unlabeled: bool = True,
    report_final: bool = True,
) -> EngineConfig:
    """The engine's configuration; `clock` overrides the configured one (replay: event);
    `drift=False` leaves drift detection off whatever the settings (replay reports none);
    `final_unlabeled=False`: the batch reports give labeled final queries only;
    `report_final=False`: they give none (the agent, which reads none; see
    `EngineConfig.report_final`)."""
    w, m, j = settings.windows, settings.metrics, settings.join
    return EngineConfig(
        cutoffs=tuple(m.cutoffs),
        half_lives=tuple(m.half_lives),
        windows=tuple(w.sizes),
        buckets=w.buckets,
        bins=m.histogram_bins,
        clock=clock or w.clock,
        future_tolerance=w.future_tolerance,
        label_keys=tuple(settings.labels.keys),
        max_label_values=settings.labels.max_values,
        label_ttl=j.label_ttl,
        pending_ttl=j.pending_ttl,
        max_open=j.max_open,
        max_pending=j.max_pending,
        gain=m.gain,
        relevance_threshold=m.relevance_threshold,
        limits=DEFAULT_LIMITS,
        scan=True,
        formats=tuple(sorted(settings.kafka.formats.items())),
        traces=trace_mapping(settings.traces),
        drift=drift_config(settings.drift) if drift else None,
        final_unlabeled=final_unlabeled,
        report_final=report_final,
        trace_id_field=settings.exemplars.trace_id_field,
    )


def drift_config(settings: DriftSettings) -> DriftConfig | None:
    """The engine's drift detection from the `drift` section (None when it is off)."""
    if not settings.enabled:
        return None
    return DriftConfig(
        metrics=tuple(settings.metrics),
        pairs=tuple((float(s), float(lo)) for s, lo in settings.window_pairs),
        settle=settings.settle,
        detectors=settings.detectors(),
    )


def trace_mapping(t: TraceSettings) -> TraceMapping:
    """How spans become events, from the `traces` settings."""
    values = t.model_dump(exclude={"query_id_attribute", "labels"})
    for key in ("doc_id_keys", "question_keys", "answer_keys"):
        values[key] = tuple(values[key])
    labels = tuple(sorted(t.labels.items()))
    return TraceMapping(**values, query_id=t.query_id_attribute, labels=labels)
