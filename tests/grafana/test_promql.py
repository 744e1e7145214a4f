"""Every PromQL expression of the dashboard and of the rule file, on a real Prometheus that
scraped two real agents (tests/grafana/scraped.py): each returns data, each of its
selectors does, and none reads a series the agents do not export or the rules do not
record. Each test is named by the panel, query or rule it checks."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragstream.events.trace_ids import is_trace_id
from ragstream.judging.results import wilson_interval
from tests.grafana.generator import generator
from tests.grafana.scraped import (
    CLUSTER,
    RULES,
    Scraped,
    finite,
    metric_names,
    selectors,
    start,
    substitute,
    variable_values,
)
from tests.support import KafkaBroker

pytestmark = [pytest.mark.prometheus, pytest.mark.kafka, pytest.mark.slow]

ROOT = Path(__file__).parents[2]
DASHBOARD: dict[str, Any] = json.loads((ROOT / "grafana" / "ragstream-dashboard.json").read_text())
VARIABLES = {v["name"]: v for v in DASHBOARD["templating"]["list"]}


EXPRESSIONS = dict(generator().expressions(DASHBOARD))
SCOPE = {"cluster": CLUSTER, "job": "$__all"}
"""The scope variables as a user of the test's Prometheus sets them."""


def _rules() -> dict[str, tuple[str, str]]:
    """{"record ragstream:window_mean" | "alert RagstreamX": (kind, expr)} of the rule file."""
    if not RULES.exists():
        return {"the rule file": ("missing", "")}
    out = {}
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        for rule in group["rules"]:
            kind = "record" if "record" in rule else "alert"
            name = f"{kind} {rule[kind]}"
            key, n = name, 2
            while key in out:  # a recorded name may have several rules
                key, n = f"{name} #{n}", n + 1
            out[key] = (kind, str(rule["expr"]))
    return out


RULE_EXPRESSIONS = _rules()


@pytest.fixture(scope="module")
def scraped(
    kafka_broker: KafkaBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Scraped]:
    yield from start(kafka_broker, tmp_path_factory.mktemp("agents"))


@pytest.fixture(scope="module", params=["one value", "All"])
def values(scraped: Scraped, request: pytest.FixtureRequest) -> dict[str, str]:
    """Each query variable's value: one read from the data (`app=support`, its index, ...),
    then "All" for every multi-value variable."""
    chosen, _ = variable_values(DASHBOARD, scraped.prom)
    if request.param == "All":
        chosen = {n: "$__all" if VARIABLES[n].get("multi") else v for n, v in chosen.items()}
    return chosen


@pytest.fixture(scope="module")
def known(scraped: Scraped) -> set[str]:
    """Every series name a query may read: the agents', Prometheus's `up` of each scrape
    target, and the rule file's."""
    return scraped.exported() | {"up"} | scraped.recorded()


@pytest.mark.parametrize("name", [n for n, v in VARIABLES.items() if v["type"] == "query"])
def test_a_variable_offers_values_read_from_the_data(name: str, scraped: Scraped) -> None:
    _, offered = variable_values(DASHBOARD, scraped.prom)
    assert offered[name], f"{VARIABLES[name]['query']} offered nothing"
    current = VARIABLES[name].get("current", {}).get("value")
    if current not in (None, "$__all"):
        assert current in offered[name]


def test_the_label_variables_offer_the_label_sets_of_the_traffic(scraped: Scraped) -> None:
    _, offered = variable_values(DASHBOARD, scraped.prom)
    assert offered["cluster"] == [CLUSTER]
    assert offered["job"] == ["ragstream"]
    assert offered["app"] == ["docs", "search", "support"]
    assert offered["index"] == ["v7"]  # chained: the index of app=support
    assert offered["window"] == ["1h", "1m", "24h", "5m"]
    assert len(offered["instance"]) == 2


@pytest.mark.parametrize("where", EXPRESSIONS)
def test_a_dashboard_query_returns_data(
    where: str, scraped: Scraped, values: dict[str, str]
) -> None:
    expr = substitute(EXPRESSIONS[where], values, VARIABLES)
    result = scraped.prom.query(expr)
    assert finite(result), f"{expr} returned {result}"


@pytest.mark.parametrize("where", EXPRESSIONS)
def test_every_selector_of_a_dashboard_query_returns_data(
    where: str, scraped: Scraped, values: dict[str, str]
) -> None:
    expr = substitute(EXPRESSIONS[where], values, VARIABLES)
    for selector in selectors(expr):
        assert scraped.prom.query(selector), f"{selector} of {expr}"


EXEMPLAR_QUERIES = {
    f"panel {p['title']!r} {t['refId']}": t["expr"]
    for p in DASHBOARD["panels"]
    for t in p.get("targets", [])
    if t.get("exemplar")
}


@pytest.mark.parametrize("where", EXEMPLAR_QUERIES)
def test_prometheus_answers_the_exemplar_query_of_a_panel(
    where: str, scraped: Scraped, values: dict[str, str]
) -> None:
    """Grafana sends an exemplar query's expression to `/api/v1/query_exemplars`: Prometheus
    takes it, and what it returns is exemplars of the panel's histogram buckets, each with
    the `trace_id` the trace links read."""
    expr = substitute(EXEMPLAR_QUERIES[where], values, VARIABLES)
    now = time.time()
    params = [("query", expr), ("start", f"{now - 3600:.3f}"), ("end", f"{now:.3f}")]
    found = scraped.prom.api("/api/v1/query_exemplars", params)
    assert isinstance(found, list), found
    histograms = {name for name in metric_names(expr) if name.endswith("_bucket")}
    assert histograms, expr
    assert any(series["exemplars"] for series in found), found
    for series in found:
        assert series["seriesLabels"]["__name__"] in histograms, series
        for exemplar in series["exemplars"]:
            assert is_trace_id(exemplar["labels"].get("trace_id", "")), exemplar


@pytest.mark.parametrize("where", EXPRESSIONS)
def test_a_dashboard_query_reads_only_series_that_exist(where: str, known: set[str]) -> None:
    names = metric_names(EXPRESSIONS[where])
    assert names
    assert names <= known, names - known


@pytest.mark.parametrize("rule", RULE_EXPRESSIONS)
def test_a_rule_reads_only_series_that_exist_and_each_of_its_selectors_returns_data(
    rule: str, scraped: Scraped, known: set[str]
) -> None:
    kind, expr = RULE_EXPRESSIONS[rule]
    assert kind != "missing", f"{RULES} is missing"
    names = metric_names(expr)
    assert names <= known, names - known
    for selector in selectors(expr):
        assert scraped.prom.query(selector), f"{selector} of {expr}"
    if kind == "record":
        assert finite(scraped.prom.query(expr)), expr


def test_prometheus_evaluates_every_rule_without_error(scraped: Scraped) -> None:
    rules = [r for g in scraped.prom.rule_groups() for r in g["rules"]]
    assert len(rules) == len(RULE_EXPRESSIONS)
    for rule in rules:
        assert rule["health"] == "ok", (rule["name"], rule.get("lastError"))


def _by_replica(scraped: Scraped, name: str, app: str, at: float, **fixed: str) -> dict[str, float]:
    matchers = ",".join([f'app="{app}"', 'window="1h"', *(f'{k}="{v}"' for k, v in fixed.items())])
    result = scraped.prom.query(f"{name}{{{matchers}}}", at=at)
    return {r["metric"]["instance"] + r["metric"]["index"]: float(r["value"][1]) for r in result}


def test_the_band_is_the_wilson_interval_of_the_answers_of_every_replica(
    scraped: Scraped,
) -> None:
    """The hallucination panel's ratio and band equal the agent's own Wilson interval
    (ragstream.judging.results) of every replica's judged answers together: k and n summed
    from the samples Prometheus holds at one instant, at which the panel's queries run."""
    values = {**SCOPE, "app": "support", "index": "v7", "window": "1h"}  # support: one index
    panel = next(
        p for p in DASHBOARD["panels"] if p["title"].startswith("Hallucination ratio with")
    )
    exprs = {t["legendFormat"]: substitute(t["expr"], values, VARIABLES) for t in panel["targets"]}
    at = time.time() - 2
    ratio = _by_replica(scraped, "ragstream_generation_hallucination_ratio", "support", at)
    judged = _by_replica(scraped, "ragstream_generation_judged_queries", "support", at)
    lower = _by_replica(
        scraped, "ragstream_generation_hallucination_ratio_bound", "support", at, bound="lower"
    )
    assert len(ratio) == 2  # both replicas judge answers of app=support
    counts = {r: (round(ratio[r] * judged[r]), int(judged[r])) for r in ratio}
    for replica, (k, n) in counts.items():  # k recovered exactly: the replica's own bound
        assert lower[replica] == pytest.approx(wilson_interval(k, n)[0], abs=1e-12)
    k = sum(k for k, _ in counts.values())
    n = sum(n for _, n in counts.values())
    assert n > 50
    assert 0 < k < n
    shown = {name: scraped.prom.query(expr, at=at) for name, expr in exprs.items()}
    assert all(len(r) == 1 for r in shown.values())  # one line for the app, not one per replica
    got = {name: float(r[0]["value"][1]) for name, r in shown.items()}
    assert got["ratio"] == pytest.approx(k / n, abs=1e-12)
    assert (got["lower"], got["upper"]) == pytest.approx(wilson_interval(k, n), abs=1e-12)


def test_a_retrieval_panel_draws_one_line_per_label_set_however_many_replicas(
    scraped: Scraped,
) -> None:
    """Both replicas serve every label set: the per-replica gauge has two series per label
    set, the panel one."""
    values = {**SCOPE, "app": "$__all", "index": "$__all", "window": "5m"}
    panel = next(p for p in DASHBOARD["panels"] if p["title"] == "MRR")
    shown = scraped.prom.query(substitute(panel["targets"][0]["expr"], values, VARIABLES))
    per_replica = scraped.prom.query('ragstream_retrieval_mrr{window="5m"}')
    label_sets = {(r["metric"]["app"], r["metric"]["index"]) for r in per_replica}
    assert len(label_sets) == 3
    assert len(per_replica) == 2 * len(label_sets)
    assert sorted((r["metric"]["app"], r["metric"]["index"]) for r in shown) == sorted(label_sets)


def test_the_drift_alarms_draw_one_line_per_detector_and_window_pair(scraped: Scraped) -> None:
    """The z-score and PSI run on two window pairs (5m/1h, 1h/24h), each pair its own
    detector with its own alarm: the panel and the annotation keep them apart (and merge
    only the replicas)."""
    values = {**SCOPE, "app": "$__all", "index": "$__all", "drift_metric": "$__all"}
    keys = ("app", "index", "metric", "detector", "window", "reference")
    panel = next(p for p in DASHBOARD["panels"] if p["title"] == "Drift alarms")
    exported = scraped.prom.query("ragstream_drift_alarm")
    expected = sorted({tuple(r["metric"].get(k, "") for k in keys) for r in exported})
    assert {(e[3], e[4], e[5]) for e in expected} >= {
        ("zscore", "5m", "1h"),
        ("zscore", "1h", "24h"),
        ("adwin", "", ""),
    }
    for expr in (panel["targets"][0]["expr"], EXPRESSIONS["annotation 'Drift alarms'"]):
        shown = scraped.prom.query(substitute(expr, values, VARIABLES))
        assert sorted(tuple(r["metric"].get(k, "") for k in keys) for r in shown) == expected
