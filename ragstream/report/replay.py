"""Readable results of a run: one record per final query, a summary of the windows, and
of the judged answers and the judge's agreement with gold verdicts."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ragstream.judging.agreement import Estimate
from ragstream.judging.gold import GOLD_OUTCOMES
from ragstream.judging.results import GENERATION_COLUMNS, JudgeResults
from ragstream.judging.service import JudgingService
from ragstream.judging.workers import DROP_REASONS
from ragstream.pipeline.engine import Engine
from ragstream.pipeline.row_layout import RowLayout

__all__ = ["judged_windows", "judging_summary", "summary", "window_means"]

_SUMMARY_METRICS = ("rr", "ndcg@10", "precision@5", "recall@10", "hit_rate@10")


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


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
    return {
        "t_now": now,
        "events": {f"{t}/{o}": n for (t, o), n in sorted(engine.events.items())},
        "invalid": dict(sorted(engine.invalid.items())),
        "open_queries": engine.open_queries,
        "final": final,
        "windows": window_means(engine, now, chosen),
    }


def window_means(engine: Engine, now: float, metrics: Sequence[str]) -> dict[str, Any]:
    """Per label set and window at ``now``: the queries, those labeled (with an ``rr``) and
    the means of ``metrics`` (window columns; None where undefined)."""
    layout = engine.layout
    windows: dict[str, Any] = {}
    totals = engine.store.read(now, exact=True)
    means, rr = totals.mean(), layout.index("rr")
    for li, labelset in enumerate(totals.labelsets):
        per_window: dict[str, Any] = {}
        for wi, window in enumerate(engine.spec.names):
            mean = dict(zip(layout.window_columns, means[li, wi].tolist(), strict=True))
            per_window[window] = {
                "queries": int(totals.queries[li, wi]),
                "labeled": int(totals.count[li, wi, rr]),
                **{m: _number(mean[m]) for m in metrics},
            }
        windows[layout.labelset_name(labelset)] = per_window
    return windows


def judging_summary(engine: Engine, service: JudgingService) -> dict[str, Any]:
    """The judged windows of every label set at the engine's t_now (means, the raw and the
    corrected hallucination ratio, the refusal ratio), the judge's agreement with gold
    verdicts over the gold window, and the judge's counts."""
    now = engine.now()
    layout = engine.layout
    results = service.results
    windows = judged_windows(results, layout, now)
    agreement: dict[str, Any] = {}
    for labelset, confusion in sorted(results.read_gold(now).items()):
        if confusion.n:
            agreement[layout.labelset_name(labelset)] = {
                "confusion": confusion.as_dict(),
                "sensitivity": confusion.sensitivity().as_dict(),
                "specificity": confusion.specificity().as_dict(),
                "balanced_accuracy": confusion.balanced_accuracy().as_dict(),
            }
    workers = service.workers
    return {
        "judge": service.judge.name,
        "samples": {str(k): v for k, v in sorted(service.sampler.counts.items())},
        "requests": dict(sorted(workers.outcomes.items())),
        "dropped": {reason: workers.dropped[reason] for reason in DROP_REASONS},
        "failures": dict(sorted(results.failures.items())),
        "windows": windows,
        "gold_window": results.gold_spec.names[0],
        "agreement": agreement,
        "gold": {outcome: service.gold.outcomes[outcome] for outcome in GOLD_OUTCOMES},
    }


def judged_windows(results: JudgeResults, layout: RowLayout, now: float) -> dict[str, Any]:
    """Per label set and window: the judged answers' means, the raw and the corrected
    hallucination ratio and the refusal ratio at `now`."""
    windows: dict[str, Any] = {}
    for labelset, reads in sorted(results.read_all(now).items()):
        per_window: dict[str, Any] = {}
        for window, read in reads.items():
            n = read.counts["hallucination"]
            per_window[window] = {
                "judged": read.judged,
                **{c: _number(read.means[c]) for c in GENERATION_COLUMNS[:3]},
                "hallucination_ratio": Estimate(
                    read.hallucination_ratio, *read.hallucination_interval, n
                ).as_dict(),
                "refusal_ratio": _number(read.refusal_ratio),
                "corrected_hallucination_ratio": (
                    None if read.corrected is None else read.corrected.as_dict()
                ),
            }
        windows[layout.labelset_name(labelset)] = per_window
    return windows
