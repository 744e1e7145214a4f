#!/usr/bin/env python3
"""Writes grafana/ragstream-dashboard.json: the Grafana dashboard of ragstream's series,
built as typed code with Grafana's own builders (`grafana-foundation-sdk`).

The service label keys (the agent's `labels.keys`) are the one thing that differs between
installations: every key becomes a dashboard variable read from the data, a filter in
every per-label-set query, a `by` clause and a legend field. Give them here, once:

    scripts/grafana_dashboard.py                        # the demo's keys: app,index
    scripts/grafana_dashboard.py --labels app,region    # your agent's labels.keys
    scripts/grafana_dashboard.py --config ragstream.yaml   # read labels.keys from the file
    scripts/grafana_dashboard.py --runbook-url URL      # where your copy of docs/runbook.md is
    scripts/grafana_dashboard.py --trace-url 'http://jaeger:16686/trace/${__value.raw}'
    scripts/grafana_dashboard.py --worst-queries        # the worst-queries table (PostgreSQL)
    scripts/grafana_dashboard.py --check                # fail if the checked-in file differs

Every query is scoped by the `cluster` and `job` variables, as the monitoring mixins do.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.builders import common as gc
from grafana_foundation_sdk.builders import dashboard as gd
from grafana_foundation_sdk.builders import prometheus as gp
from grafana_foundation_sdk.builders import statetimeline, table, timeseries
from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.cog import variants as cogvariants
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.cog.runtime import UnknownDataquery
from grafana_foundation_sdk.models import common as mc
from grafana_foundation_sdk.models import dashboard as md
from grafana_foundation_sdk.models import prometheus as mp
from grafana_foundation_sdk.models import table as mt

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "grafana" / "ragstream-dashboard.json"
DEFAULT_LABEL_KEYS = ("app", "index")
"""The demo's service labels (`labels.keys` of deploy/ragstream.example.yaml)."""
RUNBOOK_URL = "https://github.com/ragstream/ragstream/blob/main/docs/runbook.md"
"""docs/runbook.md, as the rule file's `runbook_url` annotations name it."""

DATASOURCE = md.DataSourceRef(type_val="prometheus", uid="${datasource}")
WIDTH = 24  # Grafana's grid
Z = 1.96
"""The agent's Wilson interval is at 95% (ragstream/judging/results.py)."""
SCOPE = ("cluster", "job")
"""The variables every query is filtered by: which Prometheus job in which cluster."""
OWN_VARIABLES = {"datasource", *SCOPE, "window", "k", "half_life", "drift_metric", "instance"}

# The series the retrieval panels read: the recording rules over the agents'
# `ragstream_window_sum` / `ragstream_window_count` (a rename of those is the rule file's).
WINDOW_MEAN = "ragstream:window_mean"
WINDOW_COUNT = "ragstream:window_count"

Json = dict[str, Any]
PanelBuilder = timeseries.Panel | statetimeline.Panel | table.Panel


@dataclass(frozen=True, slots=True)
class Labels:
    """The service label keys and the PromQL fragments made from them; every selector
    begins with the `cluster` and `job` scope."""

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
        """A selector body: the scope, fixed labels, then the label-set matchers."""
        parts = [scope(), *(f'{k}="{v}"' for k, v in fixed.items())]
        if self.keys:
            parts.append(self.matchers())
        return ",".join(parts)


def scope() -> str:
    """`cluster=~"$cluster",job=~"$job"`: the matchers of every query."""
    return ",".join(f'{k}=~"${k}"' for k in SCOPE)


def runbook(base: str, alert: str) -> gd.DashboardLink:
    """A panel link to the runbook section of an alert (GitHub's heading anchor)."""
    return (
        gd.DashboardLink(f"Runbook: {alert}")
        .type(md.DashboardLinkType.LINK)
        .url(f"{base}#{alert.lower()}")
        .target_blank(True)
    )


@dataclass(frozen=True, slots=True)
class Query:
    """One Prometheus query of a panel: a range query, or an instant one as a table."""

    expr: str
    legend: str
    instant: bool = False
    exemplar: bool = False
    """Also ask for the exemplars of its series (a final-query histogram's buckets)."""

    def builder(self, ref: str) -> gp.Dataquery:
        query = (
            gp.Dataquery()
            .datasource(DATASOURCE)
            .editor_mode(mp.QueryEditorMode.CODE)
            .expr(self.expr)
            .legend_format(self.legend)
            .ref_id(ref)
        )
        if self.instant:
            return query.instant().format(mp.PromQueryFormat.TABLE)
        if self.exemplar:
            query.exemplar(True)
        return query.range()


def _legend() -> gc.VizLegendOptions:
    return (
        gc.VizLegendOptions()
        .display_mode(mc.LegendDisplayMode.LIST)
        .placement(mc.LegendPlacement.BOTTOM)
        .show_legend(True)
        .calcs([])
    )


def _tooltip() -> gc.VizTooltipOptions:
    return gc.VizTooltipOptions().mode(mc.TooltipDisplayMode.MULTI).sort(mc.SortOrder.DESCENDING)


def _targets(panel: PanelBuilder, queries: Sequence[Query]) -> None:
    for i, query in enumerate(queries):
        panel.with_target(query.builder(chr(ord("A") + i)))


def graph(
    title: str,
    description: str,
    queries: Sequence[Query],
    *,
    unit: str = "percentunit",
    width: int = 8,
    minimum: float | None = 0.0,
    maximum: float | None = None,
    links: Sequence[gd.DashboardLink] = (),
) -> timeseries.Panel:
    """A time series panel: one line per series, no points, nulls not bridged."""
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .span(width)
        .height(8)
        .legend(_legend())
        .tooltip(_tooltip())
        .draw_style(mc.GraphDrawStyle.LINE)
        .line_width(2)
        .fill_opacity(0)
        .show_points(mc.VisibilityMode.NEVER)
        .span_nulls(False)
        .axis_placement(mc.AxisPlacement.AUTO)
    )
    if minimum is not None:
        panel.min(minimum)
    if maximum is not None:
        panel.max(maximum)
    if links:
        panel.links(list(links))
    _targets(panel, queries)
    return panel


# --- the queries ---------------------------------------------------------------------------


def final_median(labels: Labels, histogram: str, **fixed: str) -> Query:
    """The median of the final per-query values over the rate interval, from a histogram
    summed over replicas, with its exemplars: each a query that landed in a bucket, drawn
    at its own value, with its `trace_id`."""
    sel = labels.select(**fixed)
    expr = (
        "histogram_quantile(0.5, "
        f"sum by ({labels.by('le')}) (rate({histogram}_bucket{{{sel}}}[$__rate_interval])))"
    )
    return Query(expr, f"{labels.legend()} final median", exemplar=True)


def window_mean(labels: Labels, metric: str, **fixed: str) -> str:
    """The mean over every replica's queries: the recording rule, one series per label set."""
    return f"{WINDOW_MEAN}{{{labels.select(metric=metric, window='$window', **fixed)}}}"


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


DRIFT_KEYS = ("metric", "detector", "window", "reference")
"""The labels of a drift series besides the service labels: one detector of one metric,
on one window pair (`window` against `reference`; both absent for a sequential one)."""


def drift_alarms(labels: Labels) -> str:
    """1 while the alarm of a detector is on in any replica, per label set and window pair."""
    return (
        f"max by ({labels.by(*DRIFT_KEYS)}) "
        f'(ragstream_drift_alarm{{{labels.select()},metric=~"$drift_metric"}})'
    )


# --- the rows ------------------------------------------------------------------------------


@dataclass(slots=True)
class Row:
    """A row's title and panels; the SDK lays them out left to right."""

    title: str
    panels: list[PanelBuilder]


def _retrieval(labels: Labels, base: str) -> Row:
    legend = labels.legend()
    drift = [runbook(base, "RagstreamRetrievalQualityDrift")]

    def mean_panel(
        title: str, metric: str, what: str, histogram: Query | None = None
    ) -> timeseries.Panel:
        queries = [Query(window_mean(labels, metric), legend)]
        text = (
            f"{what}, the mean over the labeled queries of the window `$window` of every "
            f"replica (recording rule `{WINDOW_MEAN}`: summed sums / summed counts)."
        )
        if histogram is not None:
            queries.append(histogram)
            text += (
                " Beside it the median of the final per-query values (after the label TTL) "
                "with their exemplars: one query per bucket, at its value, linked to its trace."
            )
        return graph(title, text, queries, maximum=1.0, links=drift)

    count = f"{WINDOW_COUNT}{{{labels.select(metric='rr', window='$window')}}}"
    every_sel = labels.select(kind="all", window="$window")
    every = f"sum by ({labels.by()}) (ragstream_window_queries{{{every_sel}}})"
    ndcg = final_median(labels, "ragstream_query_ndcg", k="$k")
    return Row(
        "Retrieval quality",
        [
            mean_panel(
                "MRR",
                "rr",
                "Mean reciprocal rank of the first relevant document",
                final_median(labels, "ragstream_query_rr"),
            ),
            mean_panel("nDCG@$k", "ndcg@$k", "Normalized DCG at cutoff $k", ndcg),
            mean_panel(
                "Precision@$k",
                "precision@$k",
                "Relevant documents in the top $k / $k",
                final_median(labels, "ragstream_query_precision", k="$k"),
            ),
            mean_panel(
                "Recall@$k",
                "recall@$k",
                "Relevant documents in the top $k / all relevant",
                final_median(labels, "ragstream_query_recall", k="$k"),
            ),
            mean_panel(
                "Hit rate@$k",
                "hit_rate@$k",
                "Share of queries with a relevant document in the top $k",
            ),
            graph(
                "Queries behind the means",
                "Labeled queries behind the retrieval means (summed over replicas), and every "
                "query of the window, labeled or not.",
                [Query(count, f"{legend} labeled"), Query(every, f"{legend} all")],
                unit="short",
            ),
            graph(
                "Median final nDCG@$k",
                "Median of the final per-query nDCG@$k (after the label TTL) from the "
                "histograms summed over replicas, over the rate interval, with the exemplars "
                "of its buckets: a query each, at its value, linked to its trace.",
                [Query(ndcg.expr, legend, exemplar=True)],
                width=WIDTH,
                maximum=1.0,
                links=drift,
            ),
        ],
    )


def _recency(labels: Labels, base: str) -> Row:
    legend = labels.legend()
    freshness = [runbook(base, "RagstreamFreshnessDecay")]

    def decayed_panel(title: str, decayed: str, plain: str | None, what: str) -> timeseries.Panel:
        queries = [Query(window_mean(labels, decayed, half_life="$half_life"), f"{legend} decayed")]
        if plain is not None:
            queries.append(Query(window_mean(labels, plain), f"{legend} plain"))
        return graph(
            title,
            f"{what}; every document weighted by exp(-ln 2 · age / $half_life). "
            f"From `{WINDOW_MEAN}`, over every replica.",
            queries,
            maximum=1.0,
            links=freshness,
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
            graph(
                "Mean age of the top $k documents",
                "Mean age of the top-$k retrieved documents at scrape time, over every "
                f"replica's queries (`{WINDOW_MEAN}`).",
                [Query(window_mean(labels, "doc_age_seconds@$k"), legend)],
                unit="s",
                width=WIDTH,
                links=freshness,
            ),
        ],
    )


def _fixed(color: str) -> md.DynamicConfigValue:
    return md.DynamicConfigValue(id_val="color", value={"mode": "fixed", "fixedColor": color})


def _generation(labels: Labels, base: str) -> Row:
    legend = labels.legend()
    sel = labels.select(window="$window")
    hallucination = [runbook(base, "RagstreamHallucinationRatioHigh")]
    head = labels.keys[:1]
    k, n = pooled_hallucinations(labels, head)
    band = graph(
        f"Hallucination ratio with its 95% interval: {f'${head[0]}' if head else 'all'}",
        "Share of judged answers with an unsupported claim, pooled over every replica "
        "(and over the selected label sets of this panel): k = Σ hallucinated answers, "
        "n = Σ judged answers. The band is the Wilson 95% interval of k/n, the interval "
        "the agent computes for its own share, here of the pooled sample.",
        [
            Query(f"({k}) / ({n})", "ratio"),
            Query(wilson(k, n, "-"), "lower"),
            Query(wilson(k, n, "+"), "upper"),
        ],
        maximum=1.0,
        width=WIDTH,  # Grafana divides the row among the repeated copies (at most 3 a line)
        links=hallucination,
    )
    band.override_by_name(
        "upper",
        [
            md.DynamicConfigValue(id_val="custom.fillBelowTo", value="lower"),
            md.DynamicConfigValue(id_val="custom.lineWidth", value=0),
            md.DynamicConfigValue(id_val="custom.fillOpacity", value=25),
            _fixed("orange"),
        ],
    )
    band.override_by_name(
        "lower", [md.DynamicConfigValue(id_val="custom.lineWidth", value=0), _fixed("orange")]
    )
    band.override_by_name("ratio", [_fixed("red")])
    if head:
        band.repeat(head[0]).repeat_direction("h").max_per_row(3)

    instance_legend = labels.legend("instance")
    bound = "ragstream_generation_hallucination_ratio_bound"
    per_replica = graph(
        "Hallucination ratio interval per replica",
        "Each replica's own Wilson 95% interval of its share (the exported bounds), one "
        "pair of lines per replica and label set: a replica that judges few answers shows "
        "a wide interval here.",
        [
            Query(
                f"{bound}{{{labels.select(bound='lower', window='$window')}}}",
                f"{instance_legend} lower",
            ),
            Query(
                f"{bound}{{{labels.select(bound='upper', window='$window')}}}",
                f"{instance_legend} upper",
            ),
        ],
        maximum=1.0,
        width=WIDTH,
        links=hallucination,
    )
    fixed = "ragstream_generation_hallucination_ratio_corrected"
    corrected = graph(
        "Corrected hallucination ratio per replica",
        "Each replica's hallucination ratio corrected for the judge's sensitivity and "
        "specificity measured on gold verdicts (Rogan-Gladen), with its 95% interval, which "
        "carries the window's sampling error and that of Se and Sp; the hallucination alert "
        "pages on its lower bound. No line and the interval [0, 1]: no gold verdicts of both "
        "kinds, or a judge whose verdict tells nothing (Se + Sp <= 1).",
        [
            Query(f"{fixed}{{{sel}}}", f"{instance_legend} corrected"),
            Query(
                f"{fixed}_bound{{{labels.select(bound='lower', window='$window')}}}",
                f"{instance_legend} lower",
            ),
            Query(
                f"{fixed}_bound{{{labels.select(bound='upper', window='$window')}}}",
                f"{instance_legend} upper",
            ),
        ],
        maximum=1.0,
        width=WIDTH,
        links=hallucination,
    )

    def weighted(metric: str) -> str:
        value = f"ragstream_generation_{metric}{{{sel}}}"
        judged = f"ragstream_generation_judged_queries{{{sel}}}"
        return (
            f"sum by ({labels.by()}) ({value} * {judged})"
            f" / sum by ({labels.by()}) ({judged} and {value})"
        )

    scores = graph(
        "Faithfulness and relevance",
        "Mean judge scores, each replica's mean weighted by its judged answers.",
        [
            Query(weighted("faithfulness"), f"{legend} faithfulness"),
            Query(weighted("answer_relevance"), f"{legend} answer relevance"),
            Query(weighted("context_relevance"), f"{legend} context relevance"),
        ],
        maximum=1.0,
        width=16,
        links=[runbook(base, "RagstreamFaithfulnessDrift"), runbook(base, "RagstreamRefusalSpike")],
    )
    judged = graph(
        "Judged answers",
        "Answers judged in the window, summed over replicas (recording rule "
        "`ragstream:generation_judged_queries`): the sample size behind the generation panels.",
        [
            Query(
                f"sum by ({labels.by()}) (ragstream:generation_judged_queries{{{sel}}})",
                legend,
            )
        ],
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


def _drift(labels: Labels, base: str) -> Row:
    links = [runbook(base, "RagstreamRetrievalQualityDrift")]
    panels: list[PanelBuilder] = []
    for detector, what in DETECTORS:
        sel = labels.select(detector=detector)
        expr = (
            f"max by ({labels.by('metric', 'window', 'reference')}) "
            f'(ragstream_drift_score{{{sel},metric=~"$drift_metric"}})'
        )
        panels.append(
            graph(
                f"Drift score: {detector}",
                f"{what}. The highest score over the replicas (each replica's detectors see "
                "its own partitions; scores do not add up).",
                [Query(expr, labels.legend("metric", "window", "reference"))],
                unit="short",
                width=12,
                minimum=None,
                links=links,
            )
        )
    alarms = (
        statetimeline.Panel()
        .title("Drift alarms")
        .description("1 while a detector's alarm is on in any replica (the highest over replicas).")
        .datasource(DATASOURCE)
        .unit("short")
        .span(WIDTH)
        .height(10)
        .min(0)
        .max(1)
        .legend(_legend())
        .tooltip(_tooltip())
        .show_value(mc.VisibilityMode.NEVER)
        .row_height(0.8)
        .merge_values(True)
        .align_value(mc.TimelineValueAlignment.LEFT)
        .fill_opacity(70)
        .line_width(0)
        .mappings(
            [
                md.ValueMap(
                    options={
                        "0": md.ValueMappingResult(text="quiet", color="green", index=0),
                        "1": md.ValueMappingResult(text="alarm", color="red", index=1),
                    }
                )
            ]
        )
        .links(list(links))
    )
    _targets(alarms, [Query(drift_alarms(labels), labels.legend(*DRIFT_KEYS))])
    panels.append(alarms)
    return Row("Drift", panels)


def _health(base: str) -> Row:
    inst = f'{scope()},instance=~"$instance"'

    def rate(name: str, extra: str = "") -> str:
        sel = f"{inst},{extra}" if extra else inst
        return f"rate({name}{{{sel}}}[$__rate_interval])"

    failed = rate("ragstream_judge_requests_total", 'outcome!="ok"')
    judge_failures = f"sum({failed}) / sum({rate('ragstream_judge_requests_total')})"
    latency = "sum by (le) ({})".format(rate("ragstream_judge_latency_seconds_bucket"))
    judge = [runbook(base, "RagstreamJudgeFailures")]
    build = (
        table.Panel()
        .title("Build")
        .description("Version and Python of every replica.")
        .datasource(DATASOURCE)
        .unit("short")
        .span(8)
        .height(8)
        .min(0)
        .show_header(True)
        .frame_index(0)
        .cell_height(mc.TableCellHeight.SM)
    )
    _targets(build, [Query(f"ragstream_build_info{{{inst}}}", "", instant=True)])
    return Row(
        "Agent health",
        [
            graph(
                "Events by outcome",
                "Events read per second by type and outcome (processed, late, duplicate, invalid).",
                [
                    Query(
                        f"sum by (type, outcome) ({rate('ragstream_events_total')})",
                        "{{type}} {{outcome}}",
                    )
                ],
                unit="reqps",
            ),
            graph(
                "Invalid events by reason",
                "Malformed messages per second by reason; each is counted and dead-lettered.",
                [
                    Query(
                        f"sum by (reason) ({rate('ragstream_invalid_events_total')})", "{{reason}}"
                    )
                ],
                unit="reqps",
                links=[runbook(base, "RagstreamInvalidEventsSpike")],
            ),
            graph(
                "Consumer lag",
                "Messages behind the high watermark per partition (the replica that owns it).",
                [
                    Query(
                        f"max by (topic, partition) (ragstream_consumer_lag{{{inst}}})",
                        "{{topic}} {{partition}}",
                    )
                ],
                unit="short",
                links=[runbook(base, "RagstreamConsumerLagHigh")],
            ),
            graph(
                "Age of the newest event",
                "Seconds since the event time of the newest event of each type, per replica: "
                "a line that climbs is stalled input.",
                [
                    Query(
                        "time() - max by (instance, type) "
                        f"(ragstream_last_event_timestamp_seconds{{{inst}}})",
                        "{{instance}} {{type}}",
                    )
                ],
                unit="s",
                links=[runbook(base, "RagstreamInputStalled")],
            ),
            graph(
                "Open queries and pending labels",
                "Queries whose labels may still change, and labels waiting for their "
                "retrieval event, per replica.",
                [
                    Query(
                        f"sum by (instance) (ragstream_open_queries{{{inst}}})", "{{instance}} open"
                    ),
                    Query(
                        f"sum by (instance) (ragstream_pending_labels{{{inst}}})",
                        "{{instance}} pending",
                    ),
                ],
                unit="short",
            ),
            graph(
                "Judge requests by outcome",
                "Finished judgments per second: ok or the failure reason; and the answers "
                "dropped unjudged, by reason.",
                [
                    Query(
                        f"sum by (outcome) ({rate('ragstream_judge_requests_total')})",
                        "{{outcome}}",
                    ),
                    Query(
                        f"sum by (reason) ({rate('ragstream_judge_dropped_total')})",
                        "dropped {{reason}}",
                    ),
                ],
                unit="reqps",
                links=judge,
            ),
            graph(
                "Judge failure ratio",
                "Share of judgments that failed (never averaged into the scores).",
                [Query(judge_failures, "failed")],
                maximum=1.0,
                links=judge,
            ),
            graph(
                "Judge latency",
                "Seconds per judgment (successful or not), from the latency histogram "
                "summed over replicas.",
                [
                    Query(f"histogram_quantile(0.5, {latency})", "p50"),
                    Query(f"histogram_quantile(0.95, {latency})", "p95"),
                ],
                unit="s",
                links=judge,
            ),
            build,
        ],
    )


# --- from a drop to the queries behind it --------------------------------------------------

TRACE_ID = "trace_id"
"""The exemplar label that holds a query's trace id (docs/exposition.md)."""
RESULTS = md.DataSourceRef(type_val="grafana-postgresql-datasource", uid="${results_datasource}")
"""The PostgreSQL data source of the per-query results (the variable `results_datasource`)."""
RESULTS_TABLE = "ragstream_results"
"""The default table of the per-query results: one row per finalized query."""
WORST_METRIC = "worst_metric"
WORST_LIMIT = 20


@dataclass(frozen=True, slots=True)
class Traces:
    """Where a query's trace id leads: a URL template in which Grafana puts the id for
    `${__value.raw}` (Jaeger, Phoenix, any trace UI), and/or a Tempo data source of the
    same Grafana (an internal link that opens the trace in Explore). Neither: no links."""

    url: str = ""
    tempo_uid: str = ""

    def __post_init__(self) -> None:
        if self.url and "${__value.raw}" not in self.url:
            raise ValueError(f"trace URL {self.url!r} lacks ${{__value.raw}}, where the id goes")

    def links(self) -> list[Json]:
        """The data links, as Grafana's field config writes them."""
        out: list[Json] = []
        if self.url:
            out.append({"title": "Trace ${__value.raw}", "url": self.url, "targetBlank": True})
        if self.tempo_uid:
            out.append(
                {
                    "title": "Trace ${__value.raw} in Tempo",
                    "url": "",
                    "internal": {
                        "datasourceUid": self.tempo_uid,
                        "datasourceName": "Tempo",
                        "query": {"query": "${__value.raw}", "queryType": "traceql"},
                    },
                }
            )
        return out


def link_traces(dashboard: Json, traces: Traces) -> None:
    """Link every trace id of the dashboard to `traces`: the exemplars' `trace_id` on the
    panels that ask for exemplars (a field override scoped to exemplars), and the
    `query_id` column of the worst-queries table."""
    links = traces.links()
    if not links:
        return
    for panel in dashboard["panels"]:
        if any(t.get("exemplar") for t in panel.get("targets", [])):
            matcher = {"id": "byName", "options": TRACE_ID, "scope": "exemplar"}
        elif panel.get("datasource", {}).get("uid") == RESULTS.uid:
            matcher = {"id": "byName", "options": "query_id"}
        else:
            continue
        override = {"matcher": matcher, "properties": [{"id": "links", "value": links}]}
        panel["fieldConfig"]["overrides"].append(override)


class SqlQuery(cogbuilder.Builder[cogvariants.Dataquery]):
    """A raw SQL query of Grafana's SQL data sources (the SDK has no builder for them)."""

    def __init__(self, sql: str) -> None:
        self._sql = sql

    def build(self) -> cogvariants.Dataquery:
        return UnknownDataquery(
            {
                "datasource": {"type": RESULTS.type_val, "uid": RESULTS.uid},
                "editorMode": "code",
                "format": "table",
                "rawQuery": True,
                "rawSql": self._sql,
                "refId": "A",
            }
        )


def worst_queries_sql(labels: Labels, results_table: str) -> str:
    """The lowest values of `$worst_metric` among the selected label sets' finalized
    queries of the time range, from the results table (docs/dashboard.md#worst-queries)."""
    where = [
        "$__timeFilter(time)",
        f"  AND metrics ->> '${WORST_METRIC}' IS NOT NULL",
        *(f"  AND coalesce(labels ->> '{k}', '') ~ '^(${{{k}:regex}})$'" for k in labels.keys),
    ]
    return (
        "SELECT time, query_id,"
        f" (metrics ->> '${WORST_METRIC}')::double precision AS value,"
        " labels::text AS labels, metrics::text AS metrics, verdicts::text AS verdicts\n"
        f"FROM {results_table}\n"
        f"WHERE {chr(10).join(where)}\n"
        f"ORDER BY value ASC, time DESC\nLIMIT {WORST_LIMIT}"
    )


def _worst_queries(labels: Labels, results_table: str) -> Row:
    panel = (
        table.Panel()
        .title("Worst queries: lowest $worst_metric")
        .description(
            f"The {WORST_LIMIT} finalized queries of the time range with the lowest "
            "`$worst_metric`, from the per-query results in the table "
            f"`{results_table}` (the data source `results_datasource`); the query id "
            "links to its trace when a trace UI is configured."
        )
        .datasource(RESULTS)
        .span(WIDTH)
        .height(10)
        .show_header(True)
        .cell_height(mc.TableCellHeight.SM)
        .decimals(3)
    )
    panel.with_target(SqlQuery(worst_queries_sql(labels, results_table)))
    return Row("Worst queries", [panel])


def worst_queries_variables(results_table: str) -> list[gd.QueryVariable | gd.DatasourceVariable]:
    """The results data source and the metric the worst-queries table sorts by."""
    return [
        gd.DatasourceVariable("results_datasource")
        .label("Results")
        .description("The PostgreSQL data source that holds the per-query results")
        .type(RESULTS.type_val or ""),
        gd.QueryVariable(WORST_METRIC)
        .label("worst by")
        .description("The metric the worst-queries table sorts by (lowest first)")
        .datasource(RESULTS)
        .query(
            f"SELECT DISTINCT jsonb_object_keys(metrics) FROM {results_table} "
            "WHERE $__timeFilter(time) ORDER BY 1"
        )
        .refresh(md.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(md.VariableSort.ALPHABETICAL_ASC)
        .multi(False)
        .include_all(False),
    ]


# --- variables, annotations and the dashboard ----------------------------------------------


def _query_variable(
    name: str,
    query: str,
    label: str,
    description: str,
    *,
    multi: bool,
    current: str | None = None,
    sort: md.VariableSort = md.VariableSort.ALPHABETICAL_ASC,
) -> gd.QueryVariable:
    variable = (
        gd.QueryVariable(name)
        .label(label)
        .description(description)
        .datasource(DATASOURCE)
        .query(query)
        .refresh(md.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(sort)
        .multi(multi)
        .include_all(multi)
    )
    if multi:
        # `.*` rather than Grafana's alternation of the values it knows: also matches a
        # series without the label (an event that lacked the key) and values new since
        # the variable was last refreshed.
        variable.all_value(".*").current(md.VariableOption(text="All", value="$__all"))
    elif current is not None:
        variable.current(md.VariableOption(text=current, value=current))
    return variable


def variables(labels: Labels) -> list[gd.QueryVariable | gd.DatasourceVariable]:
    out: list[gd.QueryVariable | gd.DatasourceVariable] = [
        gd.DatasourceVariable("datasource")
        .label("Prometheus")
        .type("prometheus")
        .current(md.VariableOption(text="Prometheus", value="prometheus")),
        _query_variable(
            "cluster",
            "label_values(ragstream_build_info, cluster)",
            "cluster",
            "The `cluster` label of the series (a target or external label); empty when "
            "the Prometheus has none, which matches every series",
            multi=False,
        ),
        _query_variable(
            "job",
            'label_values(ragstream_build_info{cluster=~"$cluster"}, job)',
            "job",
            "The Prometheus job that scrapes the agents",
            multi=True,
        ),
    ]
    for i, key in enumerate(labels.keys):
        # each key's values among the label sets the scope and the keys before it select
        matchers = ",".join([scope(), *(f'{k}=~"${k}"' for k in labels.keys[:i])])
        out.append(
            _query_variable(
                key,
                f"label_values(ragstream_window_queries{{{matchers}}}, {key})",
                key,
                f"Service label `{key}` (labels.keys of the agent)",
                multi=True,
            )
        )
    scoped = f"{{{scope()}}}"
    out += [
        _query_variable(
            "window",
            f"label_values(ragstream_window_queries{scoped}, window)",
            "window",
            "The agent's window behind every windowed value",
            multi=False,
            current="5m",
        ),
        _query_variable(
            "k",
            f"label_values(ragstream_retrieval_ndcg{scoped}, k)",
            "cutoff k",
            "Rank cutoff of the @k metrics (metrics.cutoffs)",
            multi=False,
            current="10",
            sort=md.VariableSort.NUMERICAL_ASC,
        ),
        _query_variable(
            "half_life",
            f"label_values(ragstream_retrieval_mrr_decayed{scoped}, half_life)",
            "half-life",
            "Recency half-life of the decayed metrics (metrics.half_lives)",
            multi=False,
            current="1w",
        ),
        _query_variable(
            "drift_metric",
            f"label_values(ragstream_drift_score{scoped}, metric)",
            "drift metric",
            "Metrics the drift detectors watch",
            multi=True,
        ),
        _query_variable(
            "instance",
            f"label_values(ragstream_build_info{scoped}, instance)",
            "replica",
            "Replicas, for the agent-health row",
            multi=True,
        ),
    ]
    return out


DRIFT_ANNOTATION = "Drift alarms"


def annotation_queries(labels: Labels) -> Sequence[gd.AnnotationQuery]:
    return [
        gd.AnnotationQuery()
        .name("Annotations & Alerts")
        .built_in(1)
        .datasource(md.DataSourceRef(type_val="grafana", uid="-- Grafana --"))
        .enable(True)
        .hide(True)
        .icon_color("rgba(0, 211, 255, 1)")
        .type("dashboard"),
        gd.AnnotationQuery()
        .name(DRIFT_ANNOTATION)
        .datasource(DATASOURCE)
        .enable(True)
        .hide(False)
        .icon_color("red")
        .expr(drift_alarms(labels)),
    ]


def _prometheus_annotation(annotation: Json, labels: Labels) -> None:
    """What the SDK's `AnnotationQuery` cannot say: the query as a Prometheus query in
    `target`, and the event fields Grafana's Prometheus data source reads beside it."""
    annotation["target"] = {"refId": "Anno", "expr": annotation.pop("expr"), "interval": "15s"}
    annotation["titleFormat"] = "Drift: {{detector}} on {{metric}}"
    annotation["textFormat"] = labels.legend("window", "reference")
    annotation["tagKeys"] = ",".join((*labels.keys, *DRIFT_KEYS))
    annotation["useValueForTime"] = False
    del annotation["builtIn"]


def rows(labels: Labels, base: str) -> list[Row]:
    return [
        _retrieval(labels, base),
        _recency(labels, base),
        _generation(labels, base),
        _drift(labels, base),
        _health(base),
    ]


def _check_keys(label_keys: Sequence[str]) -> None:
    for key in label_keys:
        if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", key) or key.startswith("__"):
            raise ValueError(f"{key!r} is not a Prometheus label name")
    if clash := OWN_VARIABLES & set(label_keys):
        raise ValueError(f"label keys {sorted(clash)} clash with the dashboard's own variables")
    if len(set(label_keys)) != len(label_keys):
        raise ValueError("label keys repeat")


def builder(
    label_keys: Sequence[str], runbook_url: str = RUNBOOK_URL, results_table: str = ""
) -> gd.Dashboard:
    """The dashboard for an agent whose `labels.keys` are `label_keys`, as SDK builders;
    with the worst-queries row over `results_table` when one is given."""
    _check_keys(label_keys)
    if results_table and not re.fullmatch(
        r"[a-zA-Z_][a-zA-Z0-9_]*(\.[a-zA-Z_][a-zA-Z0-9_]*)?", results_table
    ):
        raise ValueError(f"{results_table!r} is not a table name (schema.table)")
    labels = Labels(tuple(label_keys))
    extra = worst_queries_variables(results_table) if results_table else []
    dashboard = (
        gd.Dashboard("ragstream: RAG quality")
        .uid("ragstream")
        .description(
            "Retrieval and generation quality, recency, drift and agent health "
            "from ragstream's Prometheus series (docs/dashboard.md)."
        )
        .tags(["ragstream", "rag"])
        .editable()
        .tooltip(md.DashboardCursorSync.CROSSHAIR)
        .version(1)
        .refresh("30s")
        .time("now-3h", "now")
        .timezone("browser")
        .link(
            gd.DashboardLink("Runbook")
            .type(md.DashboardLinkType.LINK)
            .icon("doc")
            .tooltip("What each ragstream alert means and what to do (docs/runbook.md)")
            .url(runbook_url)
            .target_blank(True)
        )
        .variables([*variables(labels), *extra])
        .annotations(list(annotation_queries(labels)))
    )
    panel_id = 1
    every = rows(labels, runbook_url)
    if results_table:
        every.append(_worst_queries(labels, results_table))
    for row in every:
        dashboard.with_row(gd.Row(row.title).id(panel_id))
        panel_id += 1
        for panel in row.panels:
            dashboard.with_panel(panel.id(panel_id))
            panel_id += 1
    return dashboard


def _without_stale_defaults(model: md.Dashboard) -> md.Dashboard:
    """Leave out what the SDK writes by default and Grafana's current schema no longer
    has: the interval variable's `auto`, `auto_min` and `auto_count` on every variable,
    and the table's `footer` (Grafana 12 replaced it by per-field footers)."""
    for variable in model.templating.list_val or []:
        variable.auto = variable.auto_min = variable.auto_count = None
    for panel in model.panels or []:
        if isinstance(panel, md.Panel) and isinstance(panel.options, mt.Options):
            panel.options.footer = None
    return model


def build(
    label_keys: Sequence[str],
    runbook_url: str = RUNBOOK_URL,
    *,
    traces: Traces = Traces(),
    results_table: str = "",
) -> Json:
    """The dashboard's JSON model for an agent whose `labels.keys` are `label_keys`; trace
    ids linked to `traces`; the worst-queries row over `results_table` when one is given."""
    typed = _without_stale_defaults(builder(label_keys, runbook_url, results_table).build())
    model: Json = json.loads(json.dumps(typed, cls=JSONEncoder))
    labels = Labels(tuple(label_keys))
    for annotation in model["annotations"]["list"]:
        if annotation["name"] == DRIFT_ANNOTATION:
            _prometheus_annotation(annotation, labels)
    link_traces(model, traces)
    return model


def worst_queries_part(label_keys: Sequence[str]) -> Json:
    """What the worst-queries row adds to the dashboard (over the default table): its
    panels and variables, which the Helm chart appends when `worstQueries.enabled`."""
    plain = build(label_keys)
    full = build(label_keys, results_table=RESULTS_TABLE)
    return {
        "panels": full["panels"][len(plain["panels"]) :],
        "variables": full["templating"]["list"][len(plain["templating"]["list"]) :],
    }


def expressions(dashboard: Json) -> Iterator[tuple[str, str]]:
    """(where, PromQL) of every query of a dashboard: panels, annotations."""
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            if "expr" in target:  # a Prometheus query, not the worst queries' SQL
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
    parser.add_argument(
        "--runbook-url", default=RUNBOOK_URL, help="the runbook the panels link to (%(default)s)"
    )
    parser.add_argument(
        "--trace-url",
        default="",
        help="link trace ids to this URL template, ${__value.raw} for the id "
        "(e.g. http://jaeger:16686/trace/${__value.raw}); default: no links",
    )
    parser.add_argument(
        "--trace-datasource", default="", help="link trace ids to this Tempo data source (uid)"
    )
    parser.add_argument(
        "--worst-queries",
        nargs="?",
        const=RESULTS_TABLE,
        default="",
        metavar="TABLE",
        help=f"add the worst-queries table over this PostgreSQL table (default {RESULTS_TABLE})",
    )
    parser.add_argument(
        "--worst-queries-part",
        action="store_true",
        help="write only the worst-queries panels and variables (the Helm chart's copy)",
    )
    parser.add_argument("--output", type=Path, default=OUTPUT, help="default: %(default)s")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if --output differs from what it would be"
    )
    args = parser.parse_args(argv)
    if args.config is not None:
        keys = _keys_from_config(args.config)
    else:
        keys = [k.strip() for k in args.labels.split(",") if k.strip()]
    try:
        if args.worst_queries_part:
            text = render(worst_queries_part(keys))
        else:
            traces = Traces(args.trace_url, args.trace_datasource)
            model = build(keys, args.runbook_url, traces=traces, results_table=args.worst_queries)
            text = render(model)
    except ValueError as error:
        parser.error(str(error))
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
