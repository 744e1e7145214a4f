"""From-scratch references the incremental windows are checked against."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragstream.windows import WindowSpec, WindowStore, WindowTotals
from ragstream.windows.spec import F64, I64


@dataclass
class Row:
    """One contribution as the caller sees it."""

    t: float
    values: tuple[float, ...]
    decayed: tuple[float, ...] = ()


@dataclass
class Plain:
    """Reference totals over a list of rows."""

    rows: int
    count: I64
    total: F64
    total_sq: F64
    hist: I64


def bin_of(value: float, bins: int) -> int:
    """Right-closed bins over [0, 1], found by plain comparison with each upper edge."""
    clipped = min(max(value, 0.0), 1.0)
    for j in range(bins):
        if clipped <= (j + 1) / bins:
            return j
    raise AssertionError("unreachable")


def plain(rows: list[Row], width: int, bins: int) -> Plain:
    count = np.zeros(width, dtype=np.int64)
    total = np.zeros(width)
    total_sq = np.zeros(width)
    hist = np.zeros((width, bins), dtype=np.int64)
    for row in rows:
        for c, v in enumerate(row.values):
            if math.isnan(v):
                continue
            count[c] += 1
            total[c] += v
            total_sq[c] += v * v
            hist[c, bin_of(v, bins)] += 1
    return Plain(len(rows), count, total, total_sq, hist)


def decayed(rows: list[Row], rates: F64, t: float) -> tuple[I64, F64, F64]:
    """(count, Σ v·exp(-λ(t - t_i)), Σ |v|·exp(-λ(t - t_i))) per decayed column, directly."""
    count = np.zeros(rates.size, dtype=np.int64)
    total = np.zeros(rates.size)
    scale = np.zeros(rates.size)
    for row in rows:
        for d, v in enumerate(row.decayed):
            if math.isnan(v):
                continue
            weight = math.exp(-float(rates[d]) * (t - row.t))
            count[d] += 1
            total[d] += v * weight
            scale[d] += abs(v) * weight
    return count, total, scale


@dataclass
class RefWindow:
    """A sliding window as its documentation states it, position driven by ``now``."""

    spec: WindowSpec
    length: float
    top: int | None = None
    rows: list[Row] = field(default_factory=list)
    ever: list[Row] = field(default_factory=list)

    @property
    def width(self) -> float:
        return self.length / self.spec.buckets

    @property
    def ahead(self) -> int:
        return math.ceil(self.spec.horizon / self.width)

    def key(self, t: float) -> int:
        return math.floor(t / self.width)

    def position(self, now: float) -> int:
        k = self.key(now)
        return k if self.top is None else max(self.top, k)

    def live(self, row: Row, now: float) -> bool:
        top = self.position(now)
        return top - self.spec.buckets <= self.key(row.t) <= top + self.ahead

    def visible(self, now: float) -> list[Row]:
        return [r for r in self.rows if self.live(r, now)]


def same_reads(x: WindowTotals, y: WindowTotals, tol: float = 1e-9, datol: float = 1e-9) -> None:
    """Two reads equal: counts and histograms exactly, sums to ``tol`` (decayed ones to
    ``tol`` relative and ``datol`` absolute)."""
    assert x.labelsets == y.labelsets
    for name in ("queries", "count", "decayed_count"):
        assert getattr(x, name).tolist() == getattr(y, name).tolist(), name
    if x.histograms is not None and y.histograms is not None:
        assert x.histograms.tolist() == y.histograms.tolist()
    np.testing.assert_allclose(x.total, y.total, rtol=tol, atol=tol)
    np.testing.assert_allclose(x.total_sq, y.total_sq, rtol=tol, atol=tol)
    np.testing.assert_allclose(x.decayed_total, y.decayed_total, rtol=tol, atol=datol)


def merged(parts: list[WindowTotals]) -> WindowTotals:
    """Reads of one label set in separate stores, added up (as one store merges them)."""
    fields = ("queries", "count", "total", "total_sq", "decayed_count", "decayed_total")
    sums = {f: sum(getattr(p, f) for p in parts) for f in fields}
    if all(p.histograms is not None for p in parts):
        sums["histograms"] = sum(p.histograms for p in parts if p.histograms is not None)
    return dataclasses.replace(parts[0], **sums)


def exported(store: WindowStore) -> list[dict[str, Any]]:
    """Every partition of a store as exported (`WindowStore.export_partition`), through
    strict JSON as it travels."""
    records = [store.export_partition(p) for p in store.partitions()]
    loaded: list[dict[str, Any]] = json.loads(json.dumps(records, allow_nan=False))
    return loaded


def moved(store: WindowStore) -> WindowStore:
    """A new store that imported every partition of ``store``: what a restart holds."""
    twin = WindowStore(store.spec)
    for record in exported(store):
        twin.import_partition(record)
    return twin
