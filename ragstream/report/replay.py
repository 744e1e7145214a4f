"""Readable results of a run: one record per final query, and a summary of the windows."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ragstream.join import OpenQuery
from ragstream.pipeline.engine import Engine

__all__ = ["query_record", "summary"]

_SUMMARY_METRICS = ("rr", "ndcg@10", "precision@5", "recall@10", "hit_rate@10")


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def query_record(engine: Engine, query: OpenQuery) -> dict[str, Any]:
    """`{"query_id", "labels", "ts", "labeled", "metrics": {...}}` for one final query.

    Decayed sum metrics are valued at the query's own event time; unlabeled queries have
    null retrieval metrics.
    """
    layout = engine.layout
    metrics: dict[str, float | None] = {}
    if query.contribution is not None:
        values = layout.record_values(query.contribution)
        names = layout.record_names()
        metrics = {name: _number(v) for name, v in zip(names, values, strict=True)}
    return {
        "query_id": query.query_id,
        "labels": layout.labelset_labels(query.labelset),
        "ts": query.ts,
        "labeled": query.labeled,
        "metrics": metrics,
    }


def summary(engine: Engine, metrics: Sequence[str] = _SUMMARY_METRICS) -> dict[str, Any]:
    """Counters, final-query means per label set, and every window at the engine's t_now."""
    now = engine.now()
    layout = engine.layout
    chosen = [m for m in metrics if m in layout.window_columns]
    final: dict[str, Any] = {}
    for labelset, aggregate in sorted(engine.final.items()):
        means = dict(zip(layout.plain, aggregate.mean().tolist(), strict=True))
        final[layout.labelset_name(labelset)] = {
            "queries": int(aggregate.rows),
            **{m: _number(means[m]) for m in chosen},
        }
    windows: dict[str, Any] = {}
    for labelset in engine.store.labelsets():
        per_window: dict[str, Any] = {}
        for window, read in engine.store.read(now, labelset).items():
            mean = dict(zip(layout.window_columns, read.mean().tolist(), strict=True))
            labeled = int(read.aggregate.count[layout.index("rr")])
            per_window[window] = {
                "queries": read.queries,
                "labeled": labeled,
                **{m: _number(mean[m]) for m in chosen},
            }
        windows[layout.labelset_name(labelset)] = per_window
    return {
        "t_now": now,
        "events": {f"{t}/{o}": n for (t, o), n in sorted(engine.events.items())},
        "invalid": dict(sorted(engine.invalid.items())),
        "open_queries": engine.open_queries,
        "final": final,
        "windows": windows,
    }
