"""The checked-in dashboard is the generator's, for the label keys it was given; its queries
use only variables it defines and series the docs and the rule file name."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.grafana.generator import SCRIPT, generator
from tests.grafana.scraped import selectors

ROOT = Path(__file__).parents[2]
DASHBOARD = ROOT / "grafana" / "ragstream-dashboard.json"
BUILTINS = {"__rate_interval", "__interval", "__range"}
SCOPE = 'cluster=~"$cluster",job=~"$job"'
RUNBOOK = ROOT / "docs" / "runbook.md"


gen = generator()


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False
    )


def test_the_checked_in_dashboard_is_what_the_generator_writes() -> None:
    result = _run("--check")
    assert result.returncode == 0, result.stderr
    assert json.loads(DASHBOARD.read_text()) == gen.build(gen.DEFAULT_LABEL_KEYS)


def test_check_fails_when_the_file_differs(tmp_path: Path) -> None:
    out = tmp_path / "dashboard.json"
    assert _run("--labels", "app", "--output", str(out)).returncode == 0
    assert _run("--labels", "app", "--output", str(out), "--check").returncode == 0
    result = _run("--labels", "app,index", "--output", str(out), "--check")
    assert result.returncode == 1
    assert "is not what" in result.stderr


def test_label_keys_from_an_agent_config(tmp_path: Path) -> None:
    config = tmp_path / "ragstream.yaml"
    config.write_text("labels:\n  keys: [tenant, region]\n")
    out = tmp_path / "dashboard.json"
    assert _run("--config", str(config), "--output", str(out)).returncode == 0
    assert json.loads(out.read_text()) == gen.build(["tenant", "region"])


def _variables(dashboard: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in dashboard["templating"]["list"]}


def _label_set_queries(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """Queries of the per-label-set rows (all but agent health, whose series have none)."""
    out, row = [], ""
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            row = panel["title"]
            continue
        if row != "Agent health":
            out += [(panel["title"], t["expr"]) for t in panel["targets"]]
    return out


@pytest.mark.parametrize("keys", [("app", "index"), ("tenant",), ("app", "index", "region"), ()])
def test_every_label_key_is_a_variable_read_from_the_data_and_a_filter(
    keys: tuple[str, ...],
) -> None:
    dashboard = gen.build(keys)
    variables = _variables(dashboard)
    for i, key in enumerate(keys):
        variable = variables[key]
        assert variable["type"] == "query"
        assert variable["multi"]
        assert variable["includeAll"]
        assert variable["allValue"] == ".*"
        # chained: each key's values among the label sets the scope and the keys before
        # it select
        matchers = ",".join([SCOPE, *(f'{k}=~"${k}"' for k in keys[:i])])
        assert variable["query"] == f"label_values(ragstream_window_queries{{{matchers}}}, {key})"
    assert (
        variables["window"]["query"] == f"label_values(ragstream_window_queries{{{SCOPE}}}, window)"
    )
    queries = _label_set_queries(dashboard)
    assert len(queries) >= 25
    for title, expr in queries:
        for key in keys:
            assert f'{key}=~"${key}"' in expr, (title, expr)
        for other in {"app", "index", "region", "tenant"} - set(keys):
            assert f"${other}" not in expr, (title, expr)


def test_label_keys_are_label_names_and_do_not_clash() -> None:
    for bad in (["app-name"], ["__name__"], ["window"], ["job"], ["app", "app"], ["1app"]):
        with pytest.raises(ValueError, match=r"label|clash|repeat"):
            gen.build(bad)


def test_queries_use_only_defined_variables() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    defined = set(_variables(dashboard)) | BUILTINS
    texts = [expr for _, expr in gen.expressions(dashboard)]
    texts += [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    texts += [p["title"] for p in dashboard["panels"]]
    used = {m.group(1) or m.group(2) for t in texts for m in re.finditer(r"\$\{(\w+)\}|\$(\w+)", t)}
    assert used
    assert used <= defined, used - defined
    # and every variable but the data source is used somewhere
    assert defined - BUILTINS - {"datasource"} <= used


def test_panels_tile_the_grid_without_overlap_and_have_unique_ids() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    cells: dict[tuple[int, int], str] = {}
    for panel in dashboard["panels"]:
        pos = panel["gridPos"]
        assert pos["x"] >= 0, panel["title"]
        assert pos["x"] + pos["w"] <= 24, panel["title"]
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                assert (x, y) not in cells, (panel["title"], cells.get((x, y)))
                cells[(x, y)] = panel["title"]


def test_rows_are_the_five_of_the_dashboard() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    rows = [p["title"] for p in dashboard["panels"] if p["type"] == "row"]
    assert rows == ["Retrieval quality", "Recency", "Generation quality", "Drift", "Agent health"]


def _documented() -> set[str]:
    names = set(re.findall(r"`(ragstream_[a-z_]+)", (ROOT / "docs" / "exposition.md").read_text()))
    names |= set(
        re.findall(r"`(ragstream_judge_[a-z_]+)", (ROOT / "docs" / "judging.md").read_text())
    )
    return names


def test_every_series_is_documented() -> None:
    """Each agent series a query reads is listed in docs/exposition.md or docs/judging.md;
    each recorded one is a rule of deploy/prometheus/ragstream.rules.yml."""
    dashboard = json.loads(DASHBOARD.read_text())
    documented = _documented()
    rules = (ROOT / "deploy" / "prometheus" / "ragstream.rules.yml").read_text()
    recorded = set(re.findall(r"record:\s*(\S+)", rules))
    for where, expr in gen.expressions(dashboard):
        for name in re.findall(r"ragstream[a-z_:@]*", expr):
            if ":" in name:
                assert name in recorded, (where, name)
            else:
                base = re.sub(r"_(bucket|count|sum)$", "", name)
                assert name in documented or base in documented, (where, name)


def test_every_selector_of_every_query_is_scoped_by_cluster_and_job() -> None:
    """The mixins' convention: one dashboard for every cluster and job, chosen above."""
    dashboard = json.loads(DASHBOARD.read_text())
    variables = _variables(dashboard)
    assert variables["cluster"]["type"] == "query"
    assert not variables["cluster"]["multi"]  # one cluster at a time: no pooling across them
    assert variables["job"]["multi"]
    assert variables["job"]["allValue"] == ".*"
    queries = list(gen.expressions(dashboard))
    assert len(queries) > 40
    for where, expr in queries:
        found = selectors(expr)
        assert found, where
        for selector in found:
            assert SCOPE in selector, (where, selector)
    assert variables["cluster"]["query"] == "label_values(ragstream_build_info, cluster)"
    assert variables["job"]["query"] == (
        'label_values(ragstream_build_info{cluster=~"$cluster"}, job)'
    )
    for name, variable in variables.items():
        if variable["type"] == "query" and name not in ("cluster", "job"):
            assert SCOPE in variable["query"], (name, variable["query"])


def _sections() -> set[str]:
    """The anchors of docs/runbook.md's alert sections, as GitHub writes them."""
    return {h.lower() for h in re.findall(r"^## (\w+)$", RUNBOOK.read_text(), re.MULTILINE)}


def test_panels_link_to_runbook_sections_that_exist() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    sections = _sections()
    linked: dict[str, set[str]] = {}
    for panel in dashboard["panels"]:
        for link in panel.get("links", []):
            base, _, anchor = link["url"].partition("#")
            assert base == gen.RUNBOOK_URL, link
            assert anchor in sections, (panel["title"], anchor)
            assert link["title"].lower() == f"runbook: {anchor}"
            linked.setdefault(panel["title"], set()).add(anchor)
    assert linked["MRR"] == {"ragstreamretrievalqualitydrift"}
    assert linked["Consumer lag"] == {"ragstreamconsumerlaghigh"}
    assert linked["Age of the newest event"] == {"ragstreaminputstalled"}
    # every alert about what the panels show is reachable from one of them
    every = set().union(*linked.values())
    assert every >= {
        "ragstreamretrievalqualitydrift", "ragstreamfreshnessdecay",
        "ragstreamhallucinationratiohigh", "ragstreamfaithfulnessdrift", "ragstreamrefusalspike",
        "ragstreamconsumerlaghigh", "ragstreaminputstalled", "ragstreamjudgefailures",
        "ragstreaminvalideventsspike",
    }  # fmt: skip
    assert [link["url"] for link in dashboard["links"]] == [gen.RUNBOOK_URL]


def test_the_runbook_url_is_a_flag(tmp_path: Path) -> None:
    out = tmp_path / "dashboard.json"
    base = "https://wiki.example.com/ragstream/runbook"
    assert _run("--runbook-url", base, "--output", str(out)).returncode == 0
    urls = [
        link["url"] for p in json.loads(out.read_text())["panels"] for link in p.get("links", [])
    ]
    assert urls
    assert all(url.startswith(base + "#") for url in urls)
