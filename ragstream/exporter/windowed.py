"""The windowed gauges, the window sums and counts, the drift families and the final-query
histograms, built in one pass over the windows.

`build()` reads every label set at once from the running totals (`WindowStore.read`) and
groups the samples by family; `ragstream.exporter.family` renders them (prometheus_client's
families or the text format written directly).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ragstream.exporter.drift import drift_families
from ragstream.exporter.family import PREFIX, Family
from ragstream.pipeline.engine import Engine
from ragstream.pipeline.exemplars import Exemplar
from ragstream.pipeline.row_layout import EVENT_TIME, Column
from ragstream.windows import WindowTotals

__all__ = ["build"]

_QUERIES_HELP = "Queries in the window: all of them, and those with at least one label."
_SUM_HELP = (
    "Sum of the values behind each windowed retrieval mean (decayed sums and document ages "
    "valued at scrape time): summed over replicas and divided by the summed counts, the "
    "mean of all their queries."
)
_COUNT_HELP = "Number of values behind each windowed retrieval mean."
_Entry = tuple[int, Family, tuple[str, ...], tuple[str, str]]


def build(engine: Engine, now: float) -> list[Family]:
    """Every windowed gauge at `now` and every final-query histogram, grouped by family."""
    totals = engine.store.read(now)
    return [*_gauges(engine, totals, now), *drift_families(engine), *_histograms(engine)]


def _gauges(engine: Engine, totals: WindowTotals, now: float) -> list[Family]:
    layout = engine.layout
    keys = layout.label_keys
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
    sum_labels = ("metric", "half_life", "window", *keys)
    sums = Family(PREFIX + "window_sums", _SUM_HELP, sum_labels)
    counts = Family(PREFIX + "window_counts", _COUNT_HELP, sum_labels)
    windows = engine.spec.names
    rr = layout.index("rr")
    event = layout.index(EVENT_TIME)
    width = layout.width
    # (value index, family, label values before the window, metric and half-life labels);
    # decayed values index the decayed grid of the totals, flattened half-life-major after
    # the window columns
    plain: list[_Entry] = []
    ages: list[_Entry] = []
    decayed: list[_Entry] = []
    for i, column in enumerate(layout.columns):
        if column.part == "event_time":
            continue
        extra = {} if column.k is None else {"k": str(column.k)}
        values = tuple(extra.values())
        half_life = ""
        if column.half_life is not None:
            extra["half_life"] = ""
            half_life = layout.half_life_label(column.half_life)
            values = (*values, half_life)
        entry = (i, family(column, tuple(extra)), values, (column.metric_name, half_life))
        if column.part == "doc_age":
            ages.append(entry)
        elif column.part == "decayed":
            decayed.append((i - width, *entry[1:]))
        else:
            plain.append(entry)
    grid = totals.decayed_mean() if decayed else None
    add_sum, add_count = sums.rows.append, counts.rows.append
    for li, labelset in enumerate(totals.labelsets):
        for wi, window in enumerate(windows):
            tail = (window, *labelset)
            n = int(totals.queries[li, wi])
            count = totals.count[li, wi].tolist()
            total = totals.total[li, wi].tolist()
            values = mean[li, wi].tolist()
            for i, _, _, metric in plain:  # zeros too: a volume floor must see 0
                labels = (*metric, *tail)
                add_sum((labels, total[i]))
                add_count((labels, float(count[i])))
            # each age column's mean age at `now`, for its sum and its gauge (NaN: no value)
            lives = [
                layout.live_age(values[i], values[event], now) if count[i] else math.nan
                for i, _, _, _ in ages
            ]
            for (i, _, _, metric), live in zip(ages, lives, strict=True):
                labels = (*metric, *tail)
                k = count[i]
                add_sum((labels, k * live if k else 0.0))
                add_count((labels, float(k)))
            if decayed:
                dcount = totals.decayed_count[li, wi].tolist()
                dtotal = totals.decayed_total[li, wi].tolist()
                for i, _, _, metric in decayed:
                    labels = (*metric, *tail)
                    add_sum((labels, dtotal[i]))
                    add_count((labels, float(dcount[i])))
            if n == 0:
                continue
            queries.rows.append((("all", *tail), float(n)))
            queries.rows.append((("labeled", *tail), float(count[rr])))
            for i, fam, head, _ in plain:
                _row(fam, (*head, *tail), values[i])
            if grid is not None:
                flat = grid[li, wi].reshape(-1).tolist()
                for i, fam, head, _ in decayed:
                    _row(fam, (*head, *tail), flat[i])
            for (_, fam, head, _), live in zip(ages, lives, strict=True):
                _row(fam, (*head, *tail), live)
    return [*families.values(), sums, counts]


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
    exemplars = engine.exemplars
    for labelset, aggregate in sorted(engine.final.items()):
        by_bucket: dict[int, dict[int, Exemplar]] = {}  # column -> bucket -> exemplar
        for (column_index, bucket), exemplar in exemplars.get(labelset, {}).items():
            by_bucket.setdefault(column_index, {})[bucket] = exemplar
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
            values = (*extra.values(), *labelset)
            found.histograms.append((values, counts[i].tolist(), float(sums[i])))
            if i in by_bucket:
                found.exemplars[values] = by_bucket[i]
    return list(families.values())
