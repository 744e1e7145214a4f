"""Readable results of a run: one record per final query, and a summary of the windows."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ragstream.durations import format_duration
from ragstream.join import OpenQuery
from ragstream.pipeline.engine import Engine

__all__ = ["query_record", "summary"]

_SUMMARY_METRICS = ("rr", "ndcg@10", "precision@5", "recall@10", "hit_rate@10")


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _metric_names(engine: Engine) -> list[str]:
    """Per-query output names: plain metrics, then per half-life the decayed ones."""
    layout = engine.layout
    names = list(layout.plain)
    several = len(layout.half_lives) > 1
    for h in layout.half_lives:
        suffix = f"/{format_duration(h)}" if several else ""
        names.extend(f"{n}{suffix}" for n in (*layout.ratio, *layout.decayed))
    names.extend(layout.doc_age)
    return names


def query_record(engine: Engine, query: OpenQuery) -> dict[str, Any]:
    """`{"query_id", "labels", "ts", "labeled", "metrics": {...}}` for one final query.

    Decayed sum metrics are valued at the query's own event time; unlabeled queries have
    null retrieval metrics.
    """
    values: list[float] = []
    if query.contribution is not None:
        parts = engine.unpack(query.contribution)
        values = parts.plain.tolist()
        for j in range(len(engine.layout.half_lives)):
            values.extend(parts.ratio[j].tolist())
            values.extend(parts.decayed[j].tolist())
        values.extend(parts.doc_age.tolist())
    names = _metric_names(engine)
    metrics = {name: _number(v) for name, v in zip(names, values, strict=True)} if values else {}
    keys = engine.config.label_keys
    return {
        "query_id": query.query_id,
        "labels": dict(zip(keys, query.labelset, strict=True)),
        "ts": query.ts,
        "labeled": query.labeled,
        "metrics": metrics,
    }


def summary(engine: Engine, metrics: Sequence[str] = _SUMMARY_METRICS) -> dict[str, Any]:
    """Counters, final-query means per label set, and every window at the engine's t_now."""
    now = engine.now()
    keys = engine.config.label_keys
    chosen = [m for m in metrics if m in engine.columns]
    final: dict[str, Any] = {}
    for labelset, aggregate in sorted(engine.final.items()):
        means = dict(zip(engine.layout.plain, aggregate.mean().tolist(), strict=True))
        final[_name(keys, labelset)] = {
            "queries": int(aggregate.rows),
            **{m: _number(means[m]) for m in chosen},
        }
    windows: dict[str, Any] = {}
    for labelset in engine.store.labelsets():
        per_window: dict[str, Any] = {}
        for window, read in engine.store.read(now, labelset).items():
            mean = dict(zip(engine.columns, read.mean().tolist(), strict=True))
            labeled = int(read.aggregate.count[engine.columns.index("rr")])
            per_window[window] = {
                "queries": read.queries,
                "labeled": labeled,
                **{m: _number(mean[m]) for m in chosen},
            }
        windows[_name(keys, labelset)] = per_window
    return {
        "t_now": now,
        "events": {f"{t}/{o}": n for (t, o), n in sorted(engine.events.items())},
        "invalid": dict(sorted(engine.invalid.items())),
        "open_queries": engine.open_queries,
        "final": final,
        "windows": windows,
    }


def _name(keys: Sequence[str], labelset: tuple[str, ...]) -> str:
    if not keys:
        return "all"
    return ",".join(f"{k}={v or '-'}" for k, v in zip(keys, labelset, strict=True))
