"""From a drop to the queries behind it: the quality panels ask for the exemplars of the
final-query histograms, trace ids link to the configured trace UI (the URL renders as
Grafana renders data links), and the worst-queries table is there only when asked for."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.grafana.generator import SCRIPT, generator

ROOT = Path(__file__).parents[2]
Json = dict[str, Any]

gen = generator()

# Grafana's template variable syntax (public/app/features/variables/utils.ts, variableRegex):
# $name, [[name:format]], ${name.fieldPath:format}.
GRAFANA_VARIABLE = re.compile(
    r"\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^\}]+))?(?::([^\}]+))?\}"
)
LINK_BUILTINS = {"__value", "__data", "__field", "__series", "__url_time_range", "__from", "__to"}
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"  # an OpenTelemetry trace id

# The presets of docs/dashboard.md#trace-links: (template, the URL of TRACE_ID).
PRESETS = {
    "jaeger": (
        "http://jaeger:16686/trace/${__value.raw}",
        f"http://jaeger:16686/trace/{TRACE_ID}",
    ),
    "phoenix": (
        "http://phoenix:6006/projects/UHJvamVjdDox/traces/${__value.raw}",
        f"http://phoenix:6006/projects/UHJvamVjdDox/traces/{TRACE_ID}",
    ),
    "with the time range": (
        "https://traces.example.com/trace/${__value.raw}?${__url_time_range}",
        f"https://traces.example.com/trace/{TRACE_ID}?from=1000&to=2000",
    ),
}


def render_link(url: str, variables: dict[str, str], value: str) -> str:
    """A data link's URL as Grafana renders it for a field value: one pass of its variable
    regex; `${__value.raw}` is the value, `${__url_time_range}` the time range."""
    scoped = {"__value": value, "__url_time_range": "from=1000&to=2000", **variables}

    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2) or match.group(4)
        assert name in scoped, f"{match.group(0)} is not a variable of the link"
        field = match.group(5)
        assert name != "__value" or field in ("raw", "text", "numeric"), match.group(0)
        return scoped[name]

    return GRAFANA_VARIABLE.sub(replace, url)


def _generate(tmp_path: Path, *args: str) -> Json:
    out = tmp_path / "dashboard.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--output", str(out), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded: Json = json.loads(out.read_text())
    return loaded


def _exemplar_panels(dashboard: Json) -> list[Json]:
    return [p for p in dashboard["panels"] if any(t.get("exemplar") for t in p.get("targets", []))]


def _links(panel: Json, field: str) -> list[Json]:
    found = [
        prop["value"]
        for override in panel["fieldConfig"]["overrides"]
        if override["matcher"]["options"] == field
        for prop in override["properties"]
        if prop["id"] == "links"
    ]
    assert len(found) <= 1, panel["title"]
    return found[0] if found else []


def test_every_final_query_histogram_is_read_with_its_exemplars() -> None:
    dashboard = gen.build(gen.DEFAULT_LABEL_KEYS)
    documented = set(
        re.findall(r"`(ragstream_query_[a-z]+)`", (ROOT / "docs" / "exposition.md").read_text())
    )
    assert documented == {
        "ragstream_query_rr", "ragstream_query_precision", "ragstream_query_recall",
        "ragstream_query_ndcg",
    }  # fmt: skip
    read = set()
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            names = set(re.findall(r"(ragstream_query_[a-z]+)_bucket", target.get("expr", "")))
            assert bool(names) == bool(target.get("exemplar")), (panel["title"], target)
            read |= names
    assert read == documented
    # the quality panels where a drop shows carry them, beside their means
    titles = [p["title"] for p in _exemplar_panels(dashboard)]
    assert titles == ["MRR", "nDCG@$k", "Precision@$k", "Recall@$k", "Median final nDCG@$k"]


def test_without_a_trace_ui_there_are_no_links_nor_worst_queries() -> None:
    """The checked-in dashboard (no options): exemplars are shown, nothing links them."""
    dashboard = json.loads((ROOT / "grafana" / "ragstream-dashboard.json").read_text())
    assert dashboard == gen.build(gen.DEFAULT_LABEL_KEYS)
    assert _exemplar_panels(dashboard)
    overrides = [
        o for p in dashboard["panels"] for o in p.get("fieldConfig", {}).get("overrides", [])
    ]
    assert not [o for o in overrides if any(prop["id"] == "links" for prop in o["properties"])]
    text = json.dumps(dashboard)
    assert "results_datasource" not in text
    assert "worst" not in text.lower()


@pytest.mark.parametrize("preset", PRESETS)
def test_the_trace_url_renders_into_the_exemplar_links(preset: str, tmp_path: Path) -> None:
    template, expected = PRESETS[preset]
    dashboard = _generate(tmp_path, "--trace-url", template, "--worst-queries")
    variables = {v["name"]: "x" for v in dashboard["templating"]["list"]}
    panels = _exemplar_panels(dashboard)
    assert len(panels) == 5
    for panel in panels:
        (override,) = [o for o in panel["fieldConfig"]["overrides"] if o["matcher"].get("scope")]
        assert override["matcher"] == {"id": "byName", "options": "trace_id", "scope": "exemplar"}
        (link,) = _links(panel, "trace_id")
        assert link["url"] == template
        assert link["targetBlank"] is True
        assert render_link(link["url"], variables, TRACE_ID) == expected
        assert render_link(link["title"], variables, TRACE_ID) == f"Trace {TRACE_ID}"
    # the worst queries' query id leads to the same place
    (table,) = [p for p in dashboard["panels"] if p["title"].startswith("Worst queries:")]
    (link,) = _links(table, "query_id")
    assert render_link(link["url"], variables, TRACE_ID) == expected


def test_a_tempo_data_source_is_an_internal_link(tmp_path: Path) -> None:
    dashboard = _generate(tmp_path, "--trace-datasource", "tempo-prod")
    for panel in _exemplar_panels(dashboard):
        (link,) = _links(panel, "trace_id")
        assert link["url"] == ""
        internal = link["internal"]
        assert internal["datasourceUid"] == "tempo-prod"
        assert internal["query"] == {"query": "${__value.raw}", "queryType": "traceql"}
        assert render_link(internal["query"]["query"], {}, TRACE_ID) == TRACE_ID


def test_the_render_check_can_fail() -> None:
    """What the link check refuses: an unknown variable, an unknown value field."""
    with pytest.raises(AssertionError, match="not a variable"):
        render_link("http://jaeger/trace/${trace_id}", {}, TRACE_ID)
    with pytest.raises(AssertionError):
        render_link("http://jaeger/trace/${__value.rawid}", {}, TRACE_ID)


def test_a_trace_url_without_the_id_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"__value\.raw"):
        gen.Traces("http://jaeger:16686/trace/{trace_id}")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--output", str(tmp_path / "d.json"), "--trace-url", "x"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "__value.raw" in done.stderr


@pytest.mark.parametrize("keys", [("app", "index"), ("tenant",), ()])
def test_the_worst_queries_table(keys: tuple[str, ...]) -> None:
    dashboard = gen.build(keys, results_table="analytics.query_results")
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    source = variables["results_datasource"]
    assert (source["type"], source["query"]) == ("datasource", "grafana-postgresql-datasource")
    metric = variables["worst_metric"]
    assert metric["datasource"]["uid"] == "${results_datasource}"
    assert "FROM analytics.query_results" in metric["query"]
    rows = [p["title"] for p in dashboard["panels"] if p["type"] == "row"]
    assert rows[-1] == "Worst queries"
    table = dashboard["panels"][-1]
    assert table["type"] == "table"
    assert table["datasource"] == {
        "type": "grafana-postgresql-datasource",
        "uid": "${results_datasource}",
    }
    (target,) = table["targets"]
    sql = target["rawSql"]
    assert target["format"] == "table"
    assert "FROM analytics.query_results\n" in sql
    assert "ORDER BY value ASC" in sql
    assert "(metrics ->> '$worst_metric')::double precision AS value" in sql
    for key in keys:
        assert f"coalesce(labels ->> '{key}', '') ~ '^(${{{key}:regex}})$'" in sql
    used = {m.group(1) or m.group(4) for m in GRAFANA_VARIABLE.finditer(sql + metric["query"])}
    assert used - {"__timeFilter"} <= set(variables), used
    # the rest of the dashboard is the plain one
    plain = gen.build(keys)
    assert dashboard["panels"][: len(plain["panels"])] == plain["panels"]


def test_a_results_table_must_be_a_table_name() -> None:
    for bad in ("results; DROP TABLE x", "1results", "a.b.c", "results--"):
        with pytest.raises(ValueError, match="table name"):
            gen.build(gen.DEFAULT_LABEL_KEYS, results_table=bad)


def test_the_charts_worst_queries_part_is_the_generators() -> None:
    """The Helm chart appends this file's panels and variables for worstQueries.enabled."""
    copied = ROOT / "deploy" / "helm" / "ragstream" / "files" / "ragstream-worst-queries.json"
    assert json.loads(copied.read_text()) == gen.worst_queries_part(gen.DEFAULT_LABEL_KEYS), (
        "scripts/grafana_dashboard.py --worst-queries-part "
        "--output deploy/helm/ragstream/files/ragstream-worst-queries.json"
    )
    plain = gen.build(gen.DEFAULT_LABEL_KEYS)
    part = gen.worst_queries_part(gen.DEFAULT_LABEL_KEYS)
    assert (
        plain["panels"] + part["panels"]
        == gen.build(gen.DEFAULT_LABEL_KEYS, results_table=gen.RESULTS_TABLE)["panels"]
    )
