"""The row layout: which columns a query's contribution row has, what each one means, and
how a series is named -- the one place that builds and reads column names.

A row holds, in order (see `RowLayout.window_columns`):

- `plain`: the streamed metric families of the registry without their decayed form,
  families without a cutoff first (`rr`), then per family each cutoff (`ndcg@10`);
- `ratio`, per half-life: the decayed forms of ratio families (`ndcg_decayed@10|604800`);
  they do not change with the read time, so they are plain window means;
- `doc_age`: per cutoff, the mean age of the top-k documents at the query's `ts`
  (`doc_age_seconds@10`); the live age at t adds `t - ts` (`live_age`);
- `event_time`: `ts - EVENT_TIME_BASE`, whose window mean gives that `t - ts`;
- then, outside the plain window columns, per half-life the decayed forms of sum families
  (`rr_decayed`, `dcg_decayed@10`) valued at `ts`, which the windows decay live.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ragstream.durations import format_duration
from ragstream.metrics import REGISTRY, MetricFamily, MetricSpec

__all__ = [
    "DOC_AGE_GAUGE",
    "EVENT_TIME",
    "EVENT_TIME_BASE",
    "Column",
    "Part",
    "RowLayout",
    "RowParts",
]

_F64 = NDArray[np.float64]
EVENT_TIME = "event_time"
"""Window column holding `ts - EVENT_TIME_BASE`, for the live mean document age."""
EVENT_TIME_BASE = 1_600_000_000.0
_DOC_AGE = "doc_age_seconds"
DOC_AGE_GAUGE = ("retrieval_doc_age_seconds", "Mean age of the top-k documents at scrape time.")
"""The document age's gauge (after `ragstream_`) and help."""

Part = Literal["plain", "ratio", "doc_age", "event_time", "decayed"]


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a contribution row, as the layout reads its name."""

    name: str
    """The column's name in the windows (`ndcg_decayed@10|604800`, `doc_age_seconds@5`)."""
    part: Part
    metric: MetricSpec | None = None
    """The metric of a plain, ratio or decayed column."""
    k: int | None = None
    """The cutoff, if any (also of a document-age column)."""
    half_life: float | None = None
    """Seconds, for ratio and decayed columns."""

    @property
    def family(self) -> MetricFamily | None:
        return None if self.metric is None else self.metric.row

    @property
    def metric_name(self) -> str:
        """The column's metric without its half-life, as the `metric` label of the window
        sums and counts shows it: `ndcg@10`, `ndcg_decayed@10`, `rr_decayed`,
        `doc_age_seconds@10`."""
        return self.name if self.metric is None else self.metric.name

    @property
    def gauge(self) -> str:
        """The Prometheus family after `ragstream_` (`retrieval_ndcg_decayed`)."""
        if self.part == "doc_age":
            return DOC_AGE_GAUGE[0]
        if self.metric is None:
            raise ValueError(f"column {self.name!r} is not exported")
        return self.metric.row.gauge(self.metric.decayed)

    @property
    def help(self) -> str:
        if self.part == "doc_age":
            return DOC_AGE_GAUGE[1]
        if self.metric is None:
            return self.name
        row = self.metric.row
        return row.decayed_help if self.metric.decayed else row.help


@dataclass(frozen=True, slots=True)
class RowParts:
    """One query's contribution row, by part."""

    plain: _F64
    ratio: _F64
    """(half-lives, ratio metrics)"""
    doc_age: _F64
    decayed: _F64
    """(half-lives, decayed metrics), valued at the query's ts"""


@dataclass(frozen=True)
class RowLayout:
    """The columns of the agent's rows for given cutoffs, half-lives and label keys (the
    `metrics` and `labels` settings)."""

    cutoffs: tuple[int, ...]
    half_lives: tuple[float, ...]
    label_keys: tuple[str, ...]
    """The configured service labels, in order: what a label set's values are of."""

    # -- names ---------------------------------------------------------------------------------

    def _specs(self, decay: str | None) -> tuple[MetricSpec, ...]:
        out: list[MetricSpec] = []
        for family in REGISTRY.streamed():
            if decay is not None and family.decay != decay:
                continue
            for k in self.cutoffs if family.cutoff else (None,):
                out.append(MetricSpec(family.name, k, decay is not None))
        return tuple(out)

    @cached_property
    def plain_metrics(self) -> tuple[MetricSpec, ...]:
        return self._specs(None)

    @cached_property
    def ratio_metrics(self) -> tuple[MetricSpec, ...]:
        return self._specs("ratio")

    @cached_property
    def decayed_metrics(self) -> tuple[MetricSpec, ...]:
        return self._specs("sum")

    @cached_property
    def plain(self) -> tuple[str, ...]:
        """Plain metric names, e.g. `("rr", "precision@1", ...)`."""
        return tuple(s.name for s in self.plain_metrics)

    @cached_property
    def ratio(self) -> tuple[str, ...]:
        """Ratio decayed metric names (the same for each half-life)."""
        return tuple(s.name for s in self.ratio_metrics)

    @cached_property
    def decayed(self) -> tuple[str, ...]:
        """Sum decayed metric names (the same for each half-life)."""
        return tuple(s.name for s in self.decayed_metrics)

    @cached_property
    def doc_age(self) -> tuple[str, ...]:
        return tuple(f"{_DOC_AGE}@{k}" for k in self.cutoffs)

    @cached_property
    def window_columns(self) -> tuple[str, ...]:
        """The plain window columns: plain metrics, ratio metrics per half-life, document
        ages, event time."""
        ratio = tuple(_with_half_life(n, h) for h in self.half_lives for n in self.ratio)
        return (*self.plain, *ratio, *self.doc_age, EVENT_TIME)

    @cached_property
    def hist_columns(self) -> tuple[str, ...]:
        """The plain metric columns that keep a window histogram: one per metric of the
        registry's histogram families (what quantiles and PSI are asked of)."""
        return tuple(s.name for s in self.plain_metrics if s.row.histogram)

    @cached_property
    def columns(self) -> tuple[Column, ...]:
        """Every column of a row, parsed, in row order (window columns, then decayed)."""
        out = [Column(s.name, "plain", s, s.k) for s in self.plain_metrics]
        for h in self.half_lives:
            out += [
                Column(_with_half_life(s.name, h), "ratio", s, s.k, h) for s in self.ratio_metrics
            ]
        out += [
            Column(n, "doc_age", None, k) for n, k in zip(self.doc_age, self.cutoffs, strict=True)
        ]
        out.append(Column(EVENT_TIME, "event_time"))
        for h in self.half_lives:
            out += [
                Column(_with_half_life(s.name, h), "decayed", s, s.k, h)
                for s in self.decayed_metrics
            ]
        return tuple(out)

    @cached_property
    def _by_name(self) -> Mapping[str, Column]:
        return {c.name: c for c in self.columns}

    def column(self, name: str) -> Column:
        """The column of a window column name (`KeyError` if the layout has none)."""
        return self._by_name[name]

    def index(self, name: str) -> int:
        """Position of a plain window column (`ValueError` if none)."""
        return self.window_columns.index(name)

    @property
    def width(self) -> int:
        """Plain window columns."""
        return len(self.window_columns)

    def half_life_label(self, half_life: float) -> str:
        """The `half_life` label value, e.g. `1w`."""
        return format_duration(half_life)

    # -- rows ----------------------------------------------------------------------------------

    def rows(self, ts: _F64, plain: _F64, ratio: _F64, doc_age: _F64, decayed: _F64) -> _F64:
        """One row per query: plain window columns, then decayed values (half-life-major).
        `ratio` and `decayed` are `(n, half-lives, metrics)`."""
        n = ts.shape[0]
        # the event time only serves the live document age: absent where the age is
        event_time = np.where(np.isnan(doc_age[:, :1]), np.nan, ts[:, None])
        event_time -= EVENT_TIME_BASE
        parts = [plain, ratio.reshape(n, -1), doc_age, event_time, decayed.reshape(n, -1)]
        return np.concatenate(parts, axis=1)

    def unpack(self, row: _F64) -> RowParts:
        """Split one contribution row back into its parts (the inverse of `rows`)."""
        h = len(self.half_lives)
        p, r, a = len(self.plain), h * len(self.ratio), len(self.doc_age)
        return RowParts(
            plain=row[:p],
            ratio=row[p : p + r].reshape(h, len(self.ratio)),
            doc_age=row[p + r : p + r + a],
            decayed=row[self.width :].reshape(h, len(self.decayed)),
        )

    def record_names(self) -> list[str]:
        """Names of a row's values in per-query output, in row order without the event
        time: plain metrics, then per half-life its ratio and decayed metrics (suffixed
        `/1w` when there are several half-lives), then document ages."""
        names = list(self.plain)
        several = len(self.half_lives) > 1
        for h in self.half_lives:
            suffix = f"/{format_duration(h)}" if several else ""
            names.extend(f"{n}{suffix}" for n in (*self.ratio, *self.decayed))
        names.extend(self.doc_age)
        return names

    def record_values(self, row: _F64) -> list[float]:
        """A row's values in the order of `record_names`."""
        parts = self.unpack(row)
        values: list[float] = parts.plain.tolist()
        for j in range(len(self.half_lives)):
            values.extend(parts.ratio[j].tolist())
            values.extend(parts.decayed[j].tolist())
        values.extend(parts.doc_age.tolist())
        return values

    @staticmethod
    def live_age(age_at_ts: float, event_time: float, now: float) -> float:
        """The mean document age at `now` from a window's means of a document-age column
        (the age at each query's ts) and of the event-time column: age + (now - mean ts),
        the second term never negative."""
        return age_at_ts + max(now - (event_time + EVENT_TIME_BASE), 0.0)

    # -- label sets ------------------------------------------------------------------------

    def labelset_name(self, labelset: Sequence[str]) -> str:
        """`app=docs,index=v8` (an empty value as `-`), or `all` without label keys."""
        if not self.label_keys:
            return "all"
        pairs = zip(self.label_keys, labelset, strict=True)
        return ",".join(f"{k}={v or '-'}" for k, v in pairs)

    def labelset_labels(self, labelset: Sequence[str]) -> dict[str, str]:
        """`{"app": "docs", "index": "v8"}`."""
        return dict(zip(self.label_keys, labelset, strict=True))


def _with_half_life(name: str, half_life: float) -> str:
    return f"{name}|{half_life:g}"
