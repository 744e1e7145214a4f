"""Metric families as the exporter builds them, and their two renderings: prometheus_client
metric families (`to_metrics`, for OpenMetrics and any registry user) and the Prometheus
text format written directly (`render_text`): at 10 000 series prometheus_client's generic
encoder costs several times the rest of a scrape, while these families have fixed, already
valid names.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

__all__ = ["PREFIX", "Family", "render_text", "to_metrics"]

PREFIX = "ragstream_"


@dataclass(slots=True)
class Family:
    """One metric family: gauge or counter rows `(label values, value)` (a counter's name
    without `_total`), or histogram rows `(label values, cumulative bucket counts, sum)`
    with the bucket bounds in `bounds`."""

    name: str
    help: str
    labels: tuple[str, ...]
    kind: str = "gauge"
    rows: list[tuple[tuple[str, ...], float]] = field(default_factory=list)
    histograms: list[tuple[tuple[str, ...], list[float], float]] = field(default_factory=list)
    bounds: tuple[str, ...] = ()


def to_metrics(families: Sequence[Family]) -> Iterator[Metric]:
    """The families as prometheus_client metric families."""
    for f in families:
        if f.kind == "histogram":
            histogram = HistogramMetricFamily(f.name, f.help, labels=list(f.labels))
            for labels, counts, total in f.histograms:
                buckets = list(zip(f.bounds, counts, strict=True))
                histogram.add_metric(list(labels), buckets, total)
            yield histogram
        elif f.kind == "counter":
            counter = CounterMetricFamily(f.name, f.help, labels=list(f.labels))
            for labels, value in f.rows:
                counter.add_metric(list(labels), value)
            yield counter
        else:
            gauge = GaugeMetricFamily(f.name, f.help, labels=list(f.labels))
            for labels, value in f.rows:
                gauge.add_metric(list(labels), value)
            yield gauge


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _value(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def render_text(families: Sequence[Family]) -> str:
    """The Prometheus text format (version 0.0.4) of the families (GC paused, see `build`)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return _render(families)
    finally:
        if paused:
            gc.enable()


def _render(families: Sequence[Family]) -> str:
    out: list[str] = []
    cache: dict[str, str] = {}
    pairs_cache: dict[tuple[str, ...], dict[tuple[str, ...], str]] = {}

    def quoted(value: str) -> str:
        found = cache.get(value)
        if found is None:
            found = cache[value] = '"' + _escape(value) + '"'
        return found

    for f in families:
        name = f.name + "_total" if f.kind == "counter" else f.name
        out.append(f"# HELP {name} {_escape(f.help)}\n# TYPE {name} {f.kind}\n")
        order = sorted(range(len(f.labels)), key=f.labels.__getitem__)  # as prometheus_client
        names = [f.labels[i] for i in order]
        if f.kind == "histogram":
            for labels, counts, total in f.histograms:
                values = [labels[i] for i in order]
                pairs = ",".join(f"{n}={quoted(v)}" for n, v in zip(names, values, strict=True))
                sep = "," if pairs else ""
                for bound, count in zip(f.bounds, counts, strict=True):
                    out.append(f'{f.name}_bucket{{{pairs}{sep}le="{bound}"}} {_value(count)}\n')
                out.append(f"{f.name}_sum{{{pairs}}} {_value(total)}\n")
                out.append(f"{f.name}_count{{{pairs}}} {_value(counts[-1])}\n")
            continue
        # families with the same label names (k, window, ...) share their label strings
        shared = pairs_cache.setdefault(f.labels, {})
        for labels, value in f.rows:
            text = shared.get(labels)
            if text is None:
                values = [labels[i] for i in order]
                text = shared[labels] = ",".join(
                    f"{n}={quoted(v)}" for n, v in zip(names, values, strict=True)
                )
            out.append(f"{name}{{{text}}} {_value(value)}\n")
    return "".join(out)
