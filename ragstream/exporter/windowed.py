"""The windowed gauges and final-query histograms, built in one pass over the windows.

`build()` reads every label set at once (`WindowStore.read_matrix`) and groups the samples by
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

from ragstream.durations import format_duration
from ragstream.pipeline.engine import EVENT_TIME, EVENT_TIME_BASE, Engine

__all__ = ["PREFIX", "Family", "build", "metric_for_column", "render_text", "to_metrics"]

PREFIX = "ragstream_"
_FAMILY_NAMES = {
    "rr": "retrieval_mrr",
    "precision": "retrieval_precision",
    "recall": "retrieval_recall",
    "hit_rate": "retrieval_hit_rate",
    "dcg": "retrieval_dcg",
    "ndcg": "retrieval_ndcg",
    "doc_age_seconds": "retrieval_doc_age_seconds",
}
_HELP = {
    "retrieval_mrr": "Mean reciprocal rank of the first relevant document over the window.",
    "retrieval_precision": "Mean precision@k (relevant in the top k / k) over the window.",
    "retrieval_recall": "Mean recall@k (relevant in the top k / all judged relevant).",
    "retrieval_hit_rate": "Share of queries with a relevant document in the top k.",
    "retrieval_dcg": "Mean DCG@k (linear or exponential gain, log2 discount).",
    "retrieval_ndcg": "Mean NDCG@k (ideal ranking over all judged documents).",
    "retrieval_doc_age_seconds": "Mean age of the top-k documents at scrape time.",
    "retrieval_mrr_decayed": "Mean recency-weighted reciprocal rank, decayed live.",
    "retrieval_precision_decayed": "Mean recency-weighted precision@k, decayed live.",
    "retrieval_dcg_decayed": "Mean recency-weighted DCG@k, decayed live.",
    "retrieval_ndcg_decayed": "Mean recency-weighted NDCG@k (a ratio: constant in time).",
    "retrieval_recall_decayed": "Mean recency-weighted recall@k (a ratio: constant in time).",
    "window_queries": "Queries in the window: all of them, and those with at least one label.",
}
_HISTOGRAM_FAMILIES = ("rr", "precision", "recall", "ndcg")


def metric_for_column(column: str) -> tuple[str, dict[str, str]]:
    """`"ndcg@10"` -> (`"retrieval_ndcg"`, {"k": "10"}); `"rr_decayed"` -> mrr_decayed."""
    base, _, k = column.partition("@")
    decayed = base.endswith("_decayed")
    family = base.removesuffix("_decayed")
    name = _FAMILY_NAMES[family] + ("_decayed" if decayed else "")
    return name, ({"k": k} if k else {})


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
    keys = tuple(engine.config.label_keys)
    layout = engine.layout
    columns = engine.columns
    matrix = engine.store.read_matrix(now)
    if not matrix.labelsets:
        return []
    mean = matrix.mean()
    families: dict[str, Family] = {}

    def family(name: str, extra: Sequence[str]) -> Family:
        found = families.get(name)
        if found is None:
            labels = (*extra, "window", *keys)
            found = families[name] = Family(PREFIX + name, _HELP.get(name, name), labels)
        return found

    queries = family("window_queries", ("kind",))
    windows = engine.spec.names
    half_lives = [format_duration(h) for h in layout.half_lives]
    rr = columns.index("rr")
    event = columns.index(EVENT_TIME)
    plain = [(i, *metric_for_column(c)) for i, c in enumerate(layout.plain)]
    ratio = [metric_for_column(c) for c in layout.ratio]
    decayed = [metric_for_column(c) for c in layout.decayed]
    ages = [(columns.index(c), str(k)) for c, k in zip(layout.doc_age, layout.cutoffs, strict=True)]
    n_plain, n_ratio = len(layout.plain), len(layout.ratio)
    grid = matrix.decayed_mean() if half_lives else None
    ages_family = family("retrieval_doc_age_seconds", ("k",))
    for li, labelset in enumerate(matrix.labelsets):
        for wi, window in enumerate(windows):
            n = int(matrix.queries[li, wi])
            if n == 0:
                continue
            tail = (window, *labelset)
            values = mean[li, wi].tolist()
            queries.rows.append((("all", *tail), float(n)))
            queries.rows.append((("labeled", *tail), float(matrix.count[li, wi, rr])))
            for i, name, extra in plain:
                _row(family(name, tuple(extra)), (*extra.values(), *tail), values[i])
            for j, half_life in enumerate(half_lives):
                start = n_plain + j * n_ratio
                for c, (name, extra) in enumerate(ratio):
                    labels = (*extra.values(), half_life, *tail)
                    _row(family(name, (*extra, "half_life")), labels, values[start + c])
                if grid is not None:
                    row = grid[li, wi, j].tolist()
                    for c, (name, extra) in enumerate(decayed):
                        labels = (*extra.values(), half_life, *tail)
                        _row(family(name, (*extra, "half_life")), labels, row[c])
            # live age = mean age at the queries' ts + (now - their mean ts)
            since = max(now - (values[event] + EVENT_TIME_BASE), 0.0)
            for column, k in ages:
                _row(ages_family, (k, *tail), values[column] + since)
    return list(families.values())


def _row(family: Family, labels: tuple[str, ...], value: float) -> None:
    if not math.isnan(value):
        family.rows.append((labels, value))


def _histograms(engine: Engine) -> list[Family]:
    keys = tuple(engine.config.label_keys)
    edges = engine.spec.edges()
    bounds = (*(f"{e:.6g}" for e in edges[:-1]), "+Inf")
    families: dict[str, Family] = {}
    for labelset, aggregate in sorted(engine.final.items()):
        counts = np.cumsum(aggregate.histogram, axis=1).astype(np.float64)
        sums = aggregate.total
        for i, column in enumerate(engine.layout.plain):
            base = column.partition("@")[0]
            if base not in _HISTOGRAM_FAMILIES:
                continue
            _, extra = metric_for_column(column)
            name = PREFIX + "query_" + base
            found = families.get(name)
            if found is None:
                found = families[name] = Family(
                    name,
                    f"Final per-query {base} (after the label TTL).",
                    (*extra, *keys),
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
