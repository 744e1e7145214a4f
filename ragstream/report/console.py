"""Tables for people: the demo's live summary and replay's final one, in one vocabulary.

Both head the metrics with their titles (`MRR`, `nDCG@10`, `P@5`, `R@10`, from the metric
registry); machine formats (JSON, per-query records, Prometheus series, trec_eval names)
keep the metric names.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ragstream.judging.results import JudgeResults
from ragstream.metrics import parse_metric
from ragstream.pipeline.engine import Engine
from ragstream.pipeline.row_layout import EVENT_TIME, RowLayout
from ragstream.report.replay import judged_windows, window_means

__all__ = ["SUMMARY_METRICS", "render_generation", "render_replay", "render_summary"]

_DAY = 86_400.0
SUMMARY_METRICS = ("rr", "ndcg@10", "precision@5", "recall@10")
"""The metrics of the demo's and replay's tables (those the engine keeps)."""
_AGE = "doc_age_seconds@10"


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.{digits}f}"


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
    ages = (_AGE, EVENT_TIME) if _AGE in layout.window_columns else ()
    for name, reads in window_means(engine, now, [c.name for c in chosen] + list(ages)).items():
        for window in windows:
            read = reads.get(window)
            if read is None or read["queries"] == 0:
                continue
            cells = [_fmt(read[c.name]) for c in chosen]
            days = math.nan
            if ages and read[_AGE] is not None and read[EVENT_TIME] is not None:
                days = layout.live_age(read[_AGE], read[EVENT_TIME], now) / _DAY
            share = f"{read['labeled'] / read['queries']:.0%}"
            rows.append([name, window, str(read["queries"]), share, *cells, _fmt(days, 1)])
    return _table(rows)


def render_generation(
    results: JudgeResults, layout: RowLayout, now: float, window: str = "5m"
) -> str:
    """Judged answers per label set in `window`: faithfulness, the raw hallucination ratio
    with its Wilson 95% interval, and the ratio corrected for the judge's error on gold
    verdicts with its 95% interval and the gold verdicts behind it ("-" when the
    correction is undefined)."""
    windows = {
        labelset: {window: reads[window]}
        for labelset, reads in judged_windows(results, layout, now).items()
        if window in reads
    }
    rows = _judged_rows(windows, refusals=False)
    return _table(rows) if len(rows) > 1 else "(no judged answers yet)"


def render_drift(engine: Engine) -> str:
    """The drift alarms raised: the windowed detectors' last evaluation on the engine's
    clock, the sequential ones as their partitions hold them (a read only)."""
    rows = [["label set", "metric", "detector", "windows", "score"]]
    layout = engine.layout
    if engine.windowed_drift is not None:
        read = engine.windowed_drift.read()
        for result in read.results:
            for li, labelset in enumerate(read.labelsets):
                for pi, pair in enumerate(read.pairs):
                    for mi, metric in enumerate(result.metrics):
                        if result.alarm[li, pi, mi]:
                            rows.append(
                                [
                                    layout.labelset_name(labelset),
                                    metric,
                                    result.detector,
                                    f"{pair.short_name}/{pair.long_name}",
                                    _fmt(float(result.score[li, pi, mi]), 2),
                                ]
                            )
    if engine.sequential is not None:
        for r in engine.sequential.read():
            if r.alarm:
                name = layout.labelset_name(r.labelset)
                rows.append([name, r.metric, r.detector, "-", _fmt(r.score, 2)])
    if len(rows) == 1:
        return "(no drift alarm)"
    return _table(rows)


def render_replay(result: Mapping[str, Any], metrics: Sequence[str] = SUMMARY_METRICS) -> str:
    """Replay's summary (`ragstream.report.replay.summary`) as a table: every window at the
    end of the file, then each label set's final queries; the event counts below."""
    titles = [parse_metric(m).title for m in metrics]
    head = ["label set", "window", "queries", "labeled", *titles]
    rows = [head]
    for labelset, windows in result["windows"].items():
        for window, values in windows.items():
            rows.append(_replay_row(labelset, window, values, values["labeled"], metrics))
    for labelset, values in result["final"].items():
        rows.append(_replay_row(labelset, "final", values, values["queries"], metrics))
    events = ", ".join(f"{k} {v}" for k, v in result["events"].items()) or "none"
    invalid = ", ".join(f"{k} {v}" for k, v in result["invalid"].items()) or "none"
    text = f"{_table(rows)}\n\nevents: {events}\ninvalid: {invalid}"
    read = result.get("lines")
    if read is not None:
        text += f"\nlines: {read['read']} read, {read['blank']} blank (skipped)"
    judging = result.get("judging")
    if judging is not None:
        text += "\n\n" + _render_judging(judging)
    return text


def _interval(estimate: Mapping[str, Any] | None) -> str:
    if estimate is None:
        return "-"
    return f"[{estimate['lower']:.2f}, {estimate['upper']:.2f}]"


def _value(estimate: Mapping[str, Any] | None, digits: int = 3) -> str:
    if estimate is None or estimate["value"] is None:
        return "-"
    return f"{estimate['value']:.{digits}f}"


def _render_judging(judging: Mapping[str, Any]) -> str:
    """Replay's judged windows (raw and corrected hallucination ratios, refusals), the
    judge's agreement with gold verdicts, and its counts."""
    rows = _judged_rows(judging["windows"], refusals=True)
    name = judging["judge"]
    text = f"answers judged by the {name} judge:\n"
    text += _table(rows) if len(rows) > 1 else "(no judged answers)"
    agreement = judging["agreement"]
    if agreement:
        rows = [["label set", "gold window", "tp", "fp", "fn", "tn"]]
        rows[0] += ["sensitivity", "95% interval", "specificity", "95% interval"]
        for labelset, values in agreement.items():
            c = values["confusion"]
            se, sp = values["sensitivity"], values["specificity"]
            cells = [str(c[k]) for k in ("tp", "fp", "fn", "tn")]
            rates = [_value(se), _interval(se), _value(sp), _interval(sp)]
            rows.append([labelset, judging["gold_window"], *cells, *rates])
        text += f"\n\nthe {name} judge against gold verdicts:\n{_table(rows)}"
    counts = ", ".join(f"{k} {v}" for k, v in judging["gold"].items() if v) or "none"
    samples = ", ".join(f"{k} {v}" for k, v in judging["samples"].items() if v) or "none"
    return f"{text}\njudge samples: {samples}\ngold verdicts: {counts}"


def _judged_rows(windows: Mapping[str, Any], refusals: bool) -> list[list[str]]:
    """The judged windows (`ragstream.report.replay.judged_windows`) as table rows."""
    head = ["label set", "window", "judged", "faithful", "halluc.", "95% interval"]
    rows = [head + ["corrected", "95% interval", "gold"] + (["refusals"] if refusals else [])]
    for labelset, per_window in windows.items():
        for window, values in per_window.items():
            if not values["judged"]:
                continue
            raw, fixed = values["hallucination_ratio"], values["corrected_hallucination_ratio"]
            faithful = values["faithfulness"]
            row = [labelset, window, str(values["judged"])]
            row += ["-" if faithful is None else f"{faithful:.3f}", _value(raw), _interval(raw)]
            row += [_value(fixed), _interval(fixed), "0" if fixed is None else str(fixed["n_gold"])]
            if refusals:
                refusal = values["refusal_ratio"]
                row.append("-" if refusal is None else f"{refusal:.3f}")
            rows.append(row)
    return rows


def _replay_row(
    labelset: str, window: str, values: Mapping[str, Any], labeled: int, metrics: Sequence[str]
) -> list[str]:
    cells = ["-" if values.get(m) is None else f"{values[m]:.4f}" for m in metrics]
    return [labelset, window, str(values["queries"]), str(labeled), *cells]


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
