"""The demo's live terminal summary: a few key metrics per label set and window."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ragstream.judging.results import JudgeResults
from ragstream.pipeline.engine import Engine
from ragstream.pipeline.layout import EVENT_TIME, RowLayout

__all__ = ["render_generation", "render_summary"]

_DAY = 86_400.0
SUMMARY_METRICS = ("rr", "ndcg@10", "precision@5", "recall@10")
"""The metrics of the demo's table (those the engine keeps)."""
_AGE = "doc_age_seconds@10"


def _fmt(value: float, digits: int = 3) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def render_summary(
    engine: Engine,
    now: float,
    windows: Sequence[str] = ("1m", "5m"),
    metrics: Sequence[str] = SUMMARY_METRICS,
) -> str:
    """A fixed-width table: label set, window, queries, labeled share, metrics, doc age."""
    layout = engine.layout
    chosen = [layout.column(m) for m in metrics if m in layout.window_columns]
    titles = [c.metric.title for c in chosen if c.metric is not None]
    head = ["label set", "window", "queries", "labeled", *titles, "age@10 (d)"]
    rows: list[list[str]] = [head]
    age = layout.index(_AGE) if _AGE in layout.window_columns else None
    event = layout.index(EVENT_TIME)
    rr = layout.index("rr")
    for labelset in engine.store.labelsets():
        reads = engine.store.read(now, labelset)
        name = layout.labelset_name(labelset)
        for window in windows:
            read = reads.get(window)
            if read is None or read.queries == 0:
                continue
            mean = read.mean()
            labeled = int(read.aggregate.count[rr])
            cells = [_fmt(float(mean[layout.index(c.name)])) for c in chosen]
            days = math.nan
            if age is not None:
                days = layout.live_age(float(mean[age]), float(mean[event]), now) / _DAY
            share = f"{labeled / read.queries:.0%}"
            rows.append([name, window, str(read.queries), share, *cells, _fmt(days, 1)])
    return _table(rows)


def render_generation(
    results: JudgeResults, layout: RowLayout, now: float, window: str = "5m"
) -> str:
    """Judged answers per label set: faithfulness and the hallucination ratio with its
    Wilson 95% interval and sample size."""
    head = ["label set", "window", "judged", "faithful", "halluc.", "95% interval"]
    rows = [head]
    for labelset, reads in sorted(results.read_all(now).items()):
        read = reads.get(window)
        if read is None or read.judged == 0:
            continue
        name = layout.labelset_name(labelset)
        low, high = read.hallucination_interval
        rows.append(
            [
                name,
                window,
                str(read.judged),
                _fmt(read.means["faithfulness"]),
                _fmt(read.hallucination_ratio),
                f"[{low:.2f}, {high:.2f}]",
            ]
        )
    if len(rows) == 1:
        return "(no judged answers yet)"
    return _table(rows)


def _table(rows: list[list[str]]) -> str:
    """Rows under a rule: the first two columns left-aligned, numbers right-aligned."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            c.rjust(w) if i > 1 else c.ljust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
