"""Metric families as the exporter builds them, and their two renderings: prometheus_client
metric families (`to_metrics`, for OpenMetrics and any registry user) and the Prometheus
text format written directly (`TextRenderer`, what `/metrics` serves for the text format):
prometheus_client's generic encoder validates and escapes every sample, while these
families have fixed, already valid names.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

__all__ = ["PREFIX", "Family", "TextRenderer", "to_metrics"]

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
    text = repr(float(value))
    return _SPECIAL.get(text, text)


# the text format's spellings of the values that `repr` spells otherwise
_SPECIAL = {"inf": "+Inf", "-inf": "-Inf", "nan": "NaN"}
_Pairs = dict[tuple[str, ...], dict[tuple[str, ...], str]]


class TextRenderer:
    """Writes families in the Prometheus text format (version 0.0.4), keeping each series'
    label string from one rendering to the next: between two scrapes the series are nearly
    all the same and only their values change, so a scrape formats numbers and little else.

    The strings kept are those of the latest rendering only (each rendering starts a new
    generation and takes over the strings it uses), so the memory follows the series
    exported now, never the series exported once.
    """

    __slots__ = ("_pairs",)

    def __init__(self) -> None:
        self._pairs: _Pairs = {}

    def render(self, families: Sequence[Family]) -> str:
        """The text format of the families (the cyclic GC paused meanwhile, see `build`)."""
        paused = gc.isenabled()
        gc.disable()
        try:
            current: _Pairs = {}
            text = _render(families, self._pairs, current)
            self._pairs = current
            return text
        finally:
            if paused:
                gc.enable()


def _pairs_text(
    labels: tuple[str, ...], order: list[int], names: list[str], quoted: Callable[[str], str]
) -> str:
    """`name="value",...` of one series, the names in prometheus_client's (sorted) order."""
    return ",".join(f"{names[j]}={quoted(labels[i])}" for j, i in enumerate(order))


def _render(families: Sequence[Family], previous: _Pairs, current: _Pairs) -> str:
    out: list[str] = []
    cache: dict[str, str] = {}

    def quoted(value: str) -> str:
        found = cache.get(value)
        if found is None:
            found = cache[value] = '"' + _escape(value) + '"'
        return found

    special = _SPECIAL.get
    for f in families:
        name = f.name + "_total" if f.kind == "counter" else f.name
        out.append(f"# HELP {name} {_escape(f.help)}\n# TYPE {name} {f.kind}\n")
        order = sorted(range(len(f.labels)), key=f.labels.__getitem__)  # as prometheus_client
        names = [f.labels[i] for i in order]
        # families with the same label names (k, window, ...) share their label strings
        old = previous.get(f.labels, {})
        new = current.setdefault(f.labels, {})
        if f.kind == "histogram":
            for labels, counts, total in f.histograms:
                pairs = new.get(labels) or old.get(labels)
                if pairs is None:
                    pairs = _pairs_text(labels, order, names, quoted)
                new[labels] = pairs
                sep = "," if pairs else ""
                for bound, count in zip(f.bounds, counts, strict=True):
                    out.append(f'{f.name}_bucket{{{pairs}{sep}le="{bound}"}} {_value(count)}\n')
                out.append(f"{f.name}_sum{{{pairs}}} {_value(total)}\n")
                out.append(f"{f.name}_count{{{pairs}}} {_value(counts[-1])}\n")
            continue
        for labels, value in f.rows:
            found = new.get(labels) or old.get(labels)
            if found is None:
                found = _pairs_text(labels, order, names, quoted)
            new[labels] = found
            text = repr(float(value))
            out.append(f"{name}{{{found}}} {special(text, text)}\n")
    return "".join(out)
