#!/usr/bin/env python3
"""Writes grafana/ragstream-dashboard.json: the Grafana dashboard of ragstream's series.

The service label keys (the agent's `labels.keys`) are the one thing that differs between
installations: every key becomes a dashboard variable read from the data, a filter in
every per-label-set query, a `by` clause and a legend field. Give them here, once:

    scripts/grafana_dashboard.py                        # the demo's keys: app,index
    scripts/grafana_dashboard.py --labels app,region    # your agent's labels.keys
    scripts/grafana_dashboard.py --config ragstream.yaml   # read labels.keys from the file
    scripts/grafana_dashboard.py --check                # fail if the checked-in file differs

Retrieval means come from the recording rule `ragstream:window_mean` (deploy/prometheus/
ragstream.rules.yml), which divides the replicas' summed sums by their summed counts, so a
label set is one line however many replicas serve it. See docs/dashboard.md.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "grafana" / "ragstream-dashboard.json"
DEFAULT_LABEL_KEYS = ("app", "index")
"""The demo's service labels (`labels.keys` of deploy/ragstream.example.yaml)."""

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
WIDTH = 24  # Grafana's grid
Z = 1.96
"""The agent's Wilson interval is at 95% (ragstream/judging/results.py)."""

Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Labels:
    """The service label keys and the PromQL fragments made from them."""

    keys: tuple[str, ...]

    def matchers(self) -> str:
        """`app=~"$app",index=~"$index"`: every label set the variables select."""
        return ",".join(f'{k}=~"${k}"' for k in self.keys)

    def by(self, *extra: str) -> str:
        """`app, index` (and the extra labels): one series per label set."""
        return ", ".join((*self.keys, *extra))

    def legend(self, *extra: str) -> str:
        """`{{app}} {{index}}` (and the extra labels)."""
        return " ".join(f"{{{{{k}}}}}" for k in (*self.keys, *extra))

    def select(self, **fixed: str) -> str:
        """A selector body: fixed labels first, then the label-set matchers."""
        parts = [f'{k}="{v}"' for k, v in fixed.items()]
        if self.keys:
            parts.append(self.matchers())
        return ",".join(parts)


@dataclass(frozen=True, slots=True)
class Target:
    expr: str
    legend: str
    ref: str = "A"
    instant: bool = False
    table: bool = False

    def json(self) -> Json:
        out: Json = {
            "datasource": DATASOURCE,
            "editorMode": "code",
            "expr": self.expr,
            "legendFormat": self.legend,
            "range": not self.instant,
            "instant": self.instant,
            "refId": self.ref,
        }
        if self.table:
            out["format"] = "table"
        return out


def targets(*pairs: tuple[str, str]) -> list[Target]:
    """Targets A, B, ... from (expr, legend) pairs."""
    return [Target(expr, legend, chr(ord("A") + i)) for i, (expr, legend) in enumerate(pairs)]


@dataclass(slots=True)
class Panel:
    title: str
    description: str
    targets: list[Target]
    unit: str = "percentunit"
    kind: str = "timeseries"
    width: int = 8
    height: int = 8
    minimum: float | None = 0.0
    maximum: float | None = None
    overrides: list[Json] = field(default_factory=list)
    repeat: str | None = None
    mappings: list[Json] = field(default_factory=list)
    custom: Json = field(default_factory=dict)


@dataclass(slots=True)
class Row:
    title: str
    panels: list[Panel]


def _timeseries_custom(extra: Json) -> Json:
    custom: Json = {
        "drawStyle": "line",
        "lineWidth": 2,
        "fillOpacity": 0,
        "showPoints": "never",
        "spanNulls": False,
        "axisPlacement": "auto",
    }
    custom.update(extra)
    return custom


def _options(kind: str) -> Json:
    legend = {"displayMode": "list", "placement": "bottom", "showLegend": True, "calcs": []}
    tooltip = {"mode": "multi", "sort": "desc"}
    if kind == "timeseries":
        return {"legend": legend, "tooltip": tooltip}
    if kind == "state-timeline":
        return {
            "legend": legend,
            "tooltip": tooltip,
            "showValue": "never",
            "rowHeight": 0.8,
            "mergeValues": True,
            "alignValue": "left",
        }
    if kind == "table":
        return {"showHeader": True, "frameIndex": 0, "cellHeight": "sm"}
    raise ValueError(f"no options for panel type {kind!r}")


def _panel_json(panel: Panel, pid: int, x: int, y: int) -> Json:
    defaults: Json = {"unit": panel.unit}
    if panel.minimum is not None:
        defaults["min"] = panel.minimum
    if panel.maximum is not None:
        defaults["max"] = panel.maximum
    if panel.mappings:
        defaults["mappings"] = panel.mappings
    if panel.kind == "timeseries":
        defaults["custom"] = _timeseries_custom(panel.custom)
    elif panel.custom:
        defaults["custom"] = panel.custom
    out: Json = {
        "id": pid,
        "type": panel.kind,
        "title": panel.title,
        "description": panel.description,
        "datasource": DATASOURCE,
        "gridPos": {"x": x, "y": y, "w": panel.width, "h": panel.height},
        "fieldConfig": {"defaults": defaults, "overrides": panel.overrides},
        "options": _options(panel.kind),
        "targets": [t.json() for t in panel.targets],
    }
    if panel.repeat is not None:
        out["repeat"] = panel.repeat
        out["repeatDirection"] = "h"
        out["maxPerRow"] = 3
    return out


def _layout(rows: Sequence[Row]) -> list[Json]:
    """Rows and their panels on Grafana's 24-column grid, left to right, top to bottom."""
    out: list[Json] = []
    pid, y = 1, 0
    for row in rows:
        out.append(
            {
                "id": pid,
                "type": "row",
                "title": row.title,
                "collapsed": False,
                "gridPos": {"x": 0, "y": y, "w": WIDTH, "h": 1},
                "panels": [],
            }
        )
        pid, y = pid + 1, y + 1
        x, line_height = 0, 0
        for panel in row.panels:
            if x + panel.width > WIDTH:
                x, y, line_height = 0, y + line_height, 0
            out.append(_panel_json(panel, pid, x, y))
            pid, x = pid + 1, x + panel.width
            line_height = max(line_height, panel.height)
        y += line_height
    return out


# --- the queries ---------------------------------------------------------------------------


def window_mean(labels: Labels, metric: str, **fixed: str) -> str:
    """The mean over every replica's queries: the recording rule, one series per label set."""
    return f"ragstream:window_mean{{{labels.select(metric=metric, window='$window', **fixed)}}}"


def _retrieval(labels: Labels) -> Row:
    legend = labels.legend()

    def mean_panel(title: str, metric: str, what: str) -> Panel:
        return Panel(
            title,
            f"{what}, the mean over the labeled queries of the window `$window` of every "
            "replica (recording rule `ragstream:window_mean`: summed sums / summed counts).",
            targets((window_mean(labels, metric), legend)),
            maximum=1.0,
        )

    count = f"ragstream:window_count{{{labels.select(metric='rr', window='$window')}}}"
    every_sel = labels.select(kind="all", window="$window")
    every = f"sum by ({labels.by()}) (ragstream_window_queries{{{every_sel}}})"
    median = (
        "histogram_quantile(0.5, "
        f"sum by ({labels.by('le')}) "
        f"(rate(ragstream_query_ndcg_bucket{{{labels.select(k='$k')}}}[$__rate_interval])))"
    )
    return Row(
        "Retrieval quality",
        [
            mean_panel("MRR", "rr", "Mean reciprocal rank of the first relevant document"),
            mean_panel("nDCG@$k", "ndcg@$k", "Normalized DCG at cutoff $k"),
            mean_panel("Precision@$k", "precision@$k", "Relevant documents in the top $k / $k"),
            mean_panel("Recall@$k", "recall@$k", "Relevant documents in the top $k / all relevant"),
            mean_panel(
                "Hit rate@$k",
                "hit_rate@$k",
                "Share of queries with a relevant document in the top $k",
            ),
            Panel(
                "Queries behind the means",
                "Labeled queries behind the retrieval means (summed over replicas), and every "
                "query of the window, labeled or not.",
                targets((count, f"{legend} labeled"), (every, f"{legend} all")),
                unit="short",
            ),
            Panel(
                "Median final nDCG@$k",
                "Median of the final per-query nDCG@$k (after the label TTL) from the "
                "histograms summed over replicas, over the rate interval.",
                targets((median, legend)),
                width=WIDTH,
                maximum=1.0,
            ),
        ],
    )


def _recency(labels: Labels) -> Row:
    legend = labels.legend()

    def decayed_panel(title: str, decayed: str, plain: str | None, what: str) -> Panel:
        pairs = [(window_mean(labels, decayed, half_life="$half_life"), f"{legend} decayed")]
        if plain is not None:
            pairs.append((window_mean(labels, plain), f"{legend} plain"))
        return Panel(
            title,
            f"{what}; every document weighted by exp(-ln 2 · age / $half_life). "
            "From `ragstream:window_mean`, over every replica.",
            targets(*pairs),
            maximum=1.0,
        )

    return Row(
        "Recency",
        [
            decayed_panel(
                "nDCG@$k decayed (half-life $half_life) and plain",
                "ndcg_decayed@$k",
                "ndcg@$k",
                "nDCG@$k on decayed gains beside the plain nDCG@$k",
            ),
            decayed_panel("MRR decayed (half-life $half_life)", "rr_decayed", "rr", "Mean w_r / r"),
            decayed_panel(
                "Precision@$k decayed (half-life $half_life)",
                "precision_decayed@$k",
                "precision@$k",
                "Mean of the relevant top-$k documents' weights / $k",
            ),
            Panel(
                "Mean age of the top $k documents",
                "Mean age of the top-$k retrieved documents at scrape time, over every "
                "replica's queries (`ragstream:window_mean`).",
                targets((window_mean(labels, "doc_age_seconds@$k"), legend)),
                unit="s",
                width=WIDTH,
            ),
        ],
    )


def pooled_hallucinations(labels: Labels, keys: Sequence[str]) -> tuple[str, str]:
    """(k, n) pooled over replicas (and over every label not in `keys`): k = Σ round(ratio·n),
    n = Σ judged answers; exact, because the replicas judge disjoint answers."""
    sel = labels.select(window="$window")
    by = ", ".join(keys)
    k = (
        f"sum by ({by}) (round(ragstream_generation_hallucination_ratio{{{sel}}}"
        f" * ragstream_generation_judged_queries{{{sel}}}))"
    )
    n = (
        f"sum by ({by}) (ragstream_generation_judged_queries{{{sel}}}"
        f" and ragstream_generation_hallucination_ratio{{{sel}}})"
    )
    return k, n


def wilson(k: str, n: str, sign: str) -> str:
    """The Wilson score bound of k/n in PromQL, written with counts:
    (k + z²/2 ∓ z·sqrt(k(n-k)/n + z²/4)) / (n + z²), clipped to [0, 1] as the agent does."""
    z2 = Z * Z
    root = f"sqrt(clamp_min(({k}) * (({n}) - ({k})) / ({n}), 0) + {z2 / 4:.4f})"
    bound = f"(({k}) + {z2 / 2:.4f} {sign} {Z} * {root}) / (({n}) + {z2:.4f})"
    return f"clamp_max(clamp_min({bound}, 0), 1)"


def _generation(labels: Labels) -> Row:
    legend = labels.legend()
    sel = labels.select(window="$window")
    head = labels.keys[:1]
    k, n = pooled_hallucinations(labels, head)
    band_name = f"${head[0]}" if head else "all"
    band = Panel(
        f"Hallucination ratio with its 95% interval: {band_name}",
        "Share of judged answers with an unsupported claim, pooled over every replica "
        "(and over the selected label sets of this panel): k = Σ hallucinated answers, "
        "n = Σ judged answers. The band is the Wilson 95% interval of k/n, the interval "
        "the agent computes for its own share, here of the pooled sample.",
        targets(
            (f"({k}) / ({n})", "ratio"),
            (wilson(k, n, "-"), "lower"),
            (wilson(k, n, "+"), "upper"),
        ),
        maximum=1.0,
        repeat=head[0] if head else None,
        overrides=[
            {
                "matcher": {"id": "byName", "options": "upper"},
                "properties": [
                    {"id": "custom.fillBelowTo", "value": "lower"},
                    {"id": "custom.lineWidth", "value": 0},
                    {"id": "custom.fillOpacity", "value": 25},
                    {"id": "color", "value": {"mode": "fixed", "fixedColor": "orange"}},
                ],
            },
            {
                "matcher": {"id": "byName", "options": "lower"},
                "properties": [
                    {"id": "custom.lineWidth", "value": 0},
                    {"id": "color", "value": {"mode": "fixed", "fixedColor": "orange"}},
                ],
            },
            {
                "matcher": {"id": "byName", "options": "ratio"},
                "properties": [
                    {"id": "color", "value": {"mode": "fixed", "fixedColor": "red"}},
                ],
            },
        ],
    )
    instance_legend = labels.legend("instance")
    bound = "ragstream_generation_hallucination_ratio_bound"
    lower = f"{bound}{{{labels.select(bound='lower', window='$window')}}}"
    upper = f"{bound}{{{labels.select(bound='upper', window='$window')}}}"
    per_replica = Panel(
        "Hallucination ratio interval per replica",
        "Each replica's own Wilson 95% interval of its share (the exported bounds), one "
        "pair of lines per replica and label set: a replica that judges few answers shows "
        "a wide interval here.",
        targets((lower, f"{instance_legend} lower"), (upper, f"{instance_legend} upper")),
        maximum=1.0,
        width=WIDTH,
    )

    fixed = "ragstream_generation_hallucination_ratio_corrected"
    corrected = Panel(
        "Corrected hallucination ratio per replica",
        "Each replica's hallucination ratio corrected for the judge's sensitivity and "
        "specificity measured on gold verdicts (Rogan-Gladen), with its 95% interval, which "
        "carries the window's sampling error and that of Se and Sp; the hallucination alert "
        "pages on its lower bound. No line and the interval [0, 1]: no gold verdicts of both "
        "kinds, or a judge whose verdict tells nothing (Se + Sp <= 1).",
        targets(
            (f"{fixed}{{{sel}}}", f"{instance_legend} corrected"),
            (
                f"{fixed}_bound{{{labels.select(bound='lower', window='$window')}}}",
                f"{instance_legend} lower",
            ),
            (
                f"{fixed}_bound{{{labels.select(bound='upper', window='$window')}}}",
                f"{instance_legend} upper",
            ),
        ),
        maximum=1.0,
        width=WIDTH,
    )

    def weighted(metric: str) -> str:
        value = f"ragstream_generation_{metric}{{{sel}}}"
        judged = f"ragstream_generation_judged_queries{{{sel}}}"
        return (
            f"sum by ({labels.by()}) ({value} * {judged})"
            f" / sum by ({labels.by()}) ({judged} and {value})"
        )

    scores = Panel(
        "Faithfulness and relevance",
        "Mean judge scores, each replica's mean weighted by its judged answers.",
        targets(
            (weighted("faithfulness"), f"{legend} faithfulness"),
            (weighted("answer_relevance"), f"{legend} answer relevance"),
            (weighted("context_relevance"), f"{legend} context relevance"),
        ),
        maximum=1.0,
        width=16,
    )
    judged = Panel(
        "Judged answers",
        "Answers judged in the window, summed over replicas (recording rule "
        "`ragstream:generation_judged_queries`): the sample size behind the generation panels.",
        targets(
            (
                f"sum by ({labels.by()}) (ragstream:generation_judged_queries{{{sel}}})",
                legend,
            )
        ),
        unit="short",
    )
    return Row("Generation quality", [band, per_replica, corrected, scores, judged])


DETECTORS = (
    ("zscore", "Signed Welch z of the short window against the rest of the long one"),
    ("psi", "Population stability index between the two windows' histograms"),
    (
        "page_hinkley",
        "Page-Hinkley statistic on final per-query values, over its alarm level (1 = alarm)",
    ),
    (
        "adwin",
        "ADWIN's largest cut statistic on final per-query values, over its alarm level (1 = alarm)",
    ),
)


DRIFT_KEYS = ("metric", "detector", "window", "reference")
"""The labels of a drift series besides the service labels: one detector of one metric,
on one window pair (`window` against `reference`; both absent for a sequential one)."""


def drift_alarms(labels: Labels) -> str:
    """1 while the alarm of a detector is on in any replica, per label set and window pair."""
    sel = labels.select()
    body = f'{sel},metric=~"$drift_metric"' if sel else 'metric=~"$drift_metric"'
    return f"max by ({labels.by(*DRIFT_KEYS)}) (ragstream_drift_alarm{{{body}}})"


def _drift(labels: Labels) -> Row:
    panels = []
    for detector, what in DETECTORS:
        sel = labels.select(detector=detector)
        expr = (
            f"max by ({labels.by('metric', 'window', 'reference')}) "
            f'(ragstream_drift_score{{{sel},metric=~"$drift_metric"}})'
        )
        panels.append(
            Panel(
                f"Drift score: {detector}",
                f"{what}. The highest score over the replicas (each replica's detectors see "
                "its own partitions; scores do not add up).",
                targets((expr, labels.legend("metric", "window", "reference"))),
                unit="short",
                width=12,
                minimum=None,
            )
        )
    panels.append(
        Panel(
            "Drift alarms",
            "1 while a detector's alarm is on in any replica (the highest over replicas).",
            targets((drift_alarms(labels), labels.legend(*DRIFT_KEYS))),
            unit="short",
            kind="state-timeline",
            width=WIDTH,
            height=10,
            mappings=[
                {
                    "type": "value",
                    "options": {
                        "0": {"text": "quiet", "color": "green", "index": 0},
                        "1": {"text": "alarm", "color": "red", "index": 1},
                    },
                }
            ],
            custom={"fillOpacity": 70, "lineWidth": 0},
            maximum=1.0,
        )
    )
    return Row("Drift", panels)


def _health() -> Row:
    inst = 'instance=~"$instance"'

    def rate(name: str, extra: str = "") -> str:
        sel = f"{inst},{extra}" if extra else inst
        return f"rate({name}{{{sel}}}[$__rate_interval])"

    failed = rate("ragstream_judge_requests_total", 'outcome!="ok"')
    judge_failures = f"sum({failed}) / sum({rate('ragstream_judge_requests_total')})"
    latency = "sum by (le) ({})".format(rate("ragstream_judge_latency_seconds_bucket"))
    return Row(
        "Agent health",
        [
            Panel(
                "Events by outcome",
                "Events read per second by type and outcome (processed, late, duplicate, invalid).",
                targets(
                    (
                        f"sum by (type, outcome) ({rate('ragstream_events_total')})",
                        "{{type}} {{outcome}}",
                    )
                ),
                unit="reqps",
            ),
            Panel(
                "Invalid events by reason",
                "Malformed messages per second by reason; each is counted and dead-lettered.",
                targets(
                    (f"sum by (reason) ({rate('ragstream_invalid_events_total')})", "{{reason}}")
                ),
                unit="reqps",
            ),
            Panel(
                "Consumer lag",
                "Messages behind the high watermark per partition (the replica that owns it).",
                targets(
                    (
                        f"max by (topic, partition) (ragstream_consumer_lag{{{inst}}})",
                        "{{topic}} {{partition}}",
                    )
                ),
                unit="short",
            ),
            Panel(
                "Age of the newest event",
                "Seconds since the event time of the newest event of each type, per replica: "
                "a line that climbs is stalled input.",
                targets(
                    (
                        "time() - max by (instance, type) "
                        f"(ragstream_last_event_timestamp_seconds{{{inst}}})",
                        "{{instance}} {{type}}",
                    )
                ),
                unit="s",
            ),
            Panel(
                "Open queries and pending labels",
                "Queries whose labels may still change, and labels waiting for their "
                "retrieval event, per replica.",
                targets(
                    (f"sum by (instance) (ragstream_open_queries{{{inst}}})", "{{instance}} open"),
                    (
                        f"sum by (instance) (ragstream_pending_labels{{{inst}}})",
                        "{{instance}} pending",
                    ),
                ),
                unit="short",
            ),
            Panel(
                "Judge requests by outcome",
                "Finished judgments per second: ok or the failure reason; and the answers "
                "dropped unjudged, by reason.",
                targets(
                    (f"sum by (outcome) ({rate('ragstream_judge_requests_total')})", "{{outcome}}"),
                    (
                        f"sum by (reason) ({rate('ragstream_judge_dropped_total')})",
                        "dropped {{reason}}",
                    ),
                ),
                unit="reqps",
            ),
            Panel(
                "Judge failure ratio",
                "Share of judgments that failed (never averaged into the scores).",
                targets((judge_failures, "failed")),
                maximum=1.0,
            ),
            Panel(
                "Judge latency",
                "Seconds per judgment (successful or not), from the latency histogram "
                "summed over replicas.",
                targets(
                    (f"histogram_quantile(0.5, {latency})", "p50"),
                    (f"histogram_quantile(0.95, {latency})", "p95"),
                ),
                unit="s",
            ),
            Panel(
                "Build",
                "Version and Python of every replica.",
                [Target(f"ragstream_build_info{{{inst}}}", "", instant=True, table=True)],
                unit="short",
                kind="table",
            ),
        ],
    )


# --- variables and the dashboard -----------------------------------------------------------


def _query_variable(
    name: str,
    query: str,
    label: str,
    *,
    multi: bool,
    current: str | None = None,
    sort: int = 1,
    description: str = "",
) -> Json:
    variable: Json = {
        "name": name,
        "label": label,
        "description": description,
        "type": "query",
        "datasource": DATASOURCE,
        "query": query,
        "refresh": 2,
        "sort": sort,
        "multi": multi,
        "includeAll": multi,
    }
    if multi:
        # `.*` rather than Grafana's alternation of the values it knows: also matches a
        # series without the label (an event that lacked the key) and values new since
        # the variable was last refreshed.
        variable["allValue"] = ".*"
        variable["current"] = {"text": "All", "value": "$__all"}
    elif current is not None:
        variable["current"] = {"text": current, "value": current}
    return variable


def variables(labels: Labels) -> list[Json]:
    out: list[Json] = [
        {
            "name": "datasource",
            "label": "Prometheus",
            "type": "datasource",
            "query": "prometheus",
            "current": {"text": "Prometheus", "value": "prometheus"},
        }
    ]
    for i, key in enumerate(labels.keys):
        # each key's values among the label sets the keys before it select
        scope = Labels(labels.keys[:i]).matchers()
        metric = f"ragstream_window_queries{{{scope}}}" if scope else "ragstream_window_queries"
        out.append(
            _query_variable(
                key,
                f"label_values({metric}, {key})",
                key,
                multi=True,
                description=f"Service label `{key}` (labels.keys of the agent)",
            )
        )
    out += [
        _query_variable(
            "window",
            "label_values(ragstream_window_queries, window)",
            "window",
            multi=False,
            current="5m",
            description="The agent's window behind every windowed value",
        ),
        _query_variable(
            "k",
            "label_values(ragstream_retrieval_ndcg, k)",
            "cutoff k",
            multi=False,
            current="10",
            sort=3,
            description="Rank cutoff of the @k metrics (metrics.cutoffs)",
        ),
        _query_variable(
            "half_life",
            "label_values(ragstream_retrieval_mrr_decayed, half_life)",
            "half-life",
            multi=False,
            current="1w",
            description="Recency half-life of the decayed metrics (metrics.half_lives)",
        ),
        _query_variable(
            "drift_metric",
            "label_values(ragstream_drift_score, metric)",
            "drift metric",
            multi=True,
            description="Metrics the drift detectors watch",
        ),
        _query_variable(
            "instance",
            "label_values(ragstream_build_info, instance)",
            "replica",
            multi=True,
            description="Replicas, for the agent-health row",
        ),
    ]
    return out


def dashboard_annotations(labels: Labels) -> list[Json]:
    return [
        {
            "builtIn": 1,
            "datasource": {"type": "grafana", "uid": "-- Grafana --"},
            "enable": True,
            "hide": True,
            "iconColor": "rgba(0, 211, 255, 1)",
            "name": "Annotations & Alerts",
            "type": "dashboard",
        },
        {
            "datasource": DATASOURCE,
            "enable": True,
            "hide": False,
            "iconColor": "red",
            "name": "Drift alarms",
            "target": {"refId": "Anno", "expr": drift_alarms(labels), "interval": "15s"},
            "titleFormat": "Drift: {{detector}} on {{metric}}",
            "textFormat": labels.legend("window", "reference"),
            "tagKeys": ",".join((*labels.keys, *DRIFT_KEYS)),
            "useValueForTime": False,
        },
    ]


def rows(labels: Labels) -> list[Row]:
    return [_retrieval(labels), _recency(labels), _generation(labels), _drift(labels), _health()]


def build(label_keys: Sequence[str]) -> Json:
    """The dashboard for an agent whose `labels.keys` are `label_keys`."""
    for key in label_keys:
        if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", key) or key.startswith("__"):
            raise ValueError(f"{key!r} is not a Prometheus label name")
    reserved = {"window", "k", "half_life", "drift_metric", "instance", "datasource"}
    if clash := reserved & set(label_keys):
        raise ValueError(f"label keys {sorted(clash)} clash with the dashboard's own variables")
    if len(set(label_keys)) != len(label_keys):
        raise ValueError("label keys repeat")
    labels = Labels(tuple(label_keys))
    return {
        "uid": "ragstream",
        "title": "ragstream: RAG quality",
        "description": "Retrieval and generation quality, recency, drift and agent health "
        "from ragstream's Prometheus series (docs/dashboard.md).",
        "tags": ["ragstream", "rag"],
        "editable": True,
        "graphTooltip": 1,
        "schemaVersion": 41,
        "version": 1,
        "refresh": "30s",
        "time": {"from": "now-3h", "to": "now"},
        "timepicker": {},
        "timezone": "browser",
        "links": [],
        "annotations": {"list": dashboard_annotations(labels)},
        "templating": {"list": variables(labels)},
        "panels": _layout(rows(labels)),
    }


def expressions(dashboard: Json) -> Iterator[tuple[str, str]]:
    """(where, PromQL) of every query of a dashboard: panels, annotations, variables."""
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield f"panel {panel['title']!r} {target['refId']}", target["expr"]
    for annotation in dashboard["annotations"]["list"]:
        if "target" in annotation and "expr" in annotation["target"]:
            yield f"annotation {annotation['name']!r}", annotation["target"]["expr"]


def render(dashboard: Json) -> str:
    return json.dumps(dashboard, indent=2, ensure_ascii=False) + "\n"


def _keys_from_config(path: Path) -> list[str]:
    sys.path.insert(0, str(ROOT))
    from ragstream.config import load_settings

    return list(load_settings(path).labels.keys)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--labels",
        default=",".join(DEFAULT_LABEL_KEYS),
        help="the agent's labels.keys, comma-separated (default: %(default)s)",
    )
    source.add_argument("--config", type=Path, help="read labels.keys from this agent config")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="default: %(default)s")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if --output differs from what it would be"
    )
    args = parser.parse_args(argv)
    if args.config is not None:
        keys = _keys_from_config(args.config)
    else:
        keys = [k.strip() for k in args.labels.split(",") if k.strip()]
    text = render(build(keys))
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is not what scripts/grafana_dashboard.py writes", file=sys.stderr)
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(f"wrote {args.output} (label keys: {', '.join(keys) or 'none'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
