"""The demo's live terminal summary: a few key metrics per label set and window."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ragstream.judging.results import JudgeResults
from ragstream.pipeline.engine import EVENT_TIME, EVENT_TIME_BASE, Engine

__all__ = ["render_generation", "render_summary"]

_DAY = 86_400.0
_COLUMNS = (("MRR", "rr"), ("nDCG@10", "ndcg@10"), ("P@5", "precision@5"), ("R@10", "recall@10"))


def _fmt(value: float, digits: int = 3) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def render_summary(engine: Engine, now: float, windows: Sequence[str] = ("1m", "5m")) -> str:
    """A fixed-width table: label set, window, queries, labeled share, metrics, doc age."""
    keys = engine.config.label_keys
    columns = engine.columns
    head = ["label set", "window", "queries", "labeled", *(n for n, _ in _COLUMNS), "age@10 (d)"]
    rows: list[list[str]] = [head]
    age = columns.index("doc_age_seconds@10") if "doc_age_seconds@10" in columns else None
    event = columns.index(EVENT_TIME)
    rr = columns.index("rr")
    for labelset in engine.store.labelsets():
        reads = engine.store.read(now, labelset)
        name = ",".join(f"{k}={v or '-'}" for k, v in zip(keys, labelset, strict=True)) or "all"
        for window in windows:
            read = reads.get(window)
            if read is None or read.queries == 0:
                continue
            mean = read.mean()
            labeled = int(read.aggregate.count[rr])
            cells = [_fmt(float(mean[columns.index(c)])) for _, c in _COLUMNS if c in columns]
            days = math.nan
            if age is not None:
                days = (mean[age] + max(0.0, now - mean[event] - EVENT_TIME_BASE)) / _DAY
            share = f"{labeled / read.queries:.0%}"
            rows.append([name, window, str(read.queries), share, *cells, _fmt(days, 1)])
    return _table(rows)


def render_generation(
    results: JudgeResults, keys: Sequence[str], now: float, window: str = "5m"
) -> str:
    """Judged answers per label set: faithfulness and the hallucination ratio with its
    Wilson 95% interval and sample size."""
    head = ["label set", "window", "judged", "faithful", "halluc.", "95% interval"]
    rows = [head]
    for labelset, reads in sorted(results.read_all(now).items()):
        read = reads.get(window)
        if read is None or read.judged == 0:
            continue
        name = ",".join(f"{k}={v or '-'}" for k, v in zip(keys, labelset, strict=True)) or "all"
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
