"""The windowed gauges and final-query histograms, built in one pass over the windows.

`build()` reads every label set at once (`WindowStore.read_totals`) and groups the samples by
family. Two renderers share it: `to_metrics()` for prometheus_client (OpenMetrics and any
registry user), and `render_text()`, which writes the Prometheus text format directly —
at 10 000 series prometheus_client's generic encoder costs several times the rest of a
scrape, while these families have fixed, already valid names.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric

from ragstream.pipeline.engine import Engine
from ragstream.pipeline.layout import EVENT_TIME, Column

__all__ = ["PREFIX", "Family", "build", "metric_for_column", "render_text", "to_metrics"]

PREFIX = "ragstream_"
_QUERIES_HELP = "Queries in the window: all of them, and those with at least one label."


def metric_for_column(column: Column) -> tuple[str, dict[str, str]]:
    """A column's gauge (after `ragstream_`) and its `k` label: `ndcg@10` ->
    (`retrieval_ndcg`, {"k": "10"}); `rr_decayed` -> (`retrieval_mrr_decayed`, {})."""
    return column.gauge, ({} if column.k is None else {"k": str(column.k)})


@dataclass(slots=True)
class Family:
    """One metric family: gauge rows `(label values, value)`, or histogram rows
    `(label values, cumulative bucket counts, sum)` with the bucket bounds in `bounds`."""

    name: str
    help: str
    labels: tuple[str, ...]
    kind: str = "gauge"
    rows: list[tuple[tuple[str, ...], float]] = field(default_factory=list)
    histograms: list[tuple[tuple[str, ...], list[float], float]] = field(default_factory=list)
    bounds: tuple[str, ...] = ()


def build(engine: Engine, now: float) -> list[Family]:
    """Every windowed gauge at `now` and every final-query histogram, grouped by family.

    The cyclic garbage collector is paused meanwhile: a scrape allocates tens of thousands
    of small tuples that hold no cycles, and collections triggered by them would otherwise
    cost more than the scrape itself.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        return [*_gauges(engine, now), *_histograms(engine)]
    finally:
        if paused:
            gc.enable()


def _gauges(engine: Engine, now: float) -> list[Family]:
    layout = engine.layout
    keys = layout.label_keys
    totals = engine.store.read_totals(now)
    if not totals.labelsets:
        return []
    mean = totals.mean()
    families: dict[str, Family] = {}

    def family(column: Column, extra: Sequence[str]) -> Family:
        name = column.gauge
        found = families.get(name)
        if found is None:
            labels = (*extra, "window", *keys)
            found = families[name] = Family(PREFIX + name, column.help, labels)
        return found

    queries = families["window_queries"] = Family(
        PREFIX + "window_queries", _QUERIES_HELP, ("kind", "window", *keys)
    )
    windows = engine.spec.names
    rr = layout.index("rr")
    event = layout.index(EVENT_TIME)
    width = layout.width
    # (value index, family, label values before the window); decayed values index the
    # decayed grid of the totals, flattened half-life-major after the window columns
    plain: list[tuple[int, Family, tuple[str, ...]]] = []
    ages: list[tuple[int, Family, tuple[str, ...]]] = []
    decayed: list[tuple[int, Family, tuple[str, ...]]] = []
    for i, column in enumerate(layout.columns):
        if column.part == "event_time":
            continue
        extra = {} if column.k is None else {"k": str(column.k)}
        values = tuple(extra.values())
        if column.half_life is not None:
            extra["half_life"] = ""
            values = (*values, layout.half_life_label(column.half_life))
        entry = (i, family(column, tuple(extra)), values)
        if column.part == "doc_age":
            ages.append(entry)
        elif column.part == "decayed":
            decayed.append((i - width, *entry[1:]))
        else:
            plain.append(entry)
    grid = totals.decayed_mean() if decayed else None
    for li, labelset in enumerate(totals.labelsets):
        for wi, window in enumerate(windows):
            n = int(totals.queries[li, wi])
            if n == 0:
                continue
            tail = (window, *labelset)
            values = mean[li, wi].tolist()
            queries.rows.append((("all", *tail), float(n)))
            queries.rows.append((("labeled", *tail), float(totals.count[li, wi, rr])))
            for i, fam, head in plain:
                _row(fam, (*head, *tail), values[i])
            if grid is not None:
                flat = grid[li, wi].reshape(-1).tolist()
                for i, fam, head in decayed:
                    _row(fam, (*head, *tail), flat[i])
            for i, fam, head in ages:
                _row(fam, (*head, *tail), layout.live_age(values[i], values[event], now))
    return list(families.values())


def _row(family: Family, labels: tuple[str, ...], value: float) -> None:
    if not math.isnan(value):
        family.rows.append((labels, value))


def _histograms(engine: Engine) -> list[Family]:
    layout = engine.layout
    edges = engine.spec.edges()
    bounds = (*(f"{e:.6g}" for e in edges[:-1]), "+Inf")
    exported = [
        (i, layout.column(name))
        for i, name in enumerate(layout.plain)
        if name in layout.hist_columns
    ]
    families: dict[str, Family] = {}
    for labelset, aggregate in sorted(engine.final.items()):
        counts = np.cumsum(aggregate.histogram, axis=1).astype(np.float64)
        sums = aggregate.total
        for i, column in exported:
            family = column.family
            assert family is not None
            name = f"{PREFIX}query_{family.name}"
            extra = {} if column.k is None else {"k": str(column.k)}
            found = families.get(name)
            if found is None:
                found = families[name] = Family(
                    name,
                    f"Final per-query {family.name} (after the label TTL).",
                    (*extra, *layout.label_keys),
                    kind="histogram",
                    bounds=bounds,
                )
            found.histograms.append(
                ((*extra.values(), *labelset), counts[i].tolist(), float(sums[i]))
            )
    return list(families.values())


def to_metrics(families: Sequence[Family]) -> Iterator[Metric]:
    """The families as prometheus_client metric families."""
    for f in families:
        if f.kind == "histogram":
            histogram = HistogramMetricFamily(f.name, f.help, labels=list(f.labels))
            for labels, counts, total in f.histograms:
                buckets = list(zip(f.bounds, counts, strict=True))
                histogram.add_metric(list(labels), buckets, total)
            yield histogram
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
        out.append(f"# HELP {f.name} {_escape(f.help)}\n# TYPE {f.name} {f.kind}\n")
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
            out.append(f"{f.name}{{{text}}} {_value(value)}\n")
    return "".join(out)
