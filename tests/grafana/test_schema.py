"""The dashboard is valid under Grafana's own dashboard and panel schemas (@grafana/schema)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.grafana.generator import generator
from tests.grafana.schema_check import errors, errors_of

ROOT = Path(__file__).parents[2]
DASHBOARD = ROOT / "grafana" / "ragstream-dashboard.json"

Json = dict[str, Any]


def _dashboard() -> Json:
    loaded: Json = json.loads(DASHBOARD.read_text())
    return loaded


def _with_every_option() -> Json:
    """The dashboard with trace links (a URL and Tempo) and the worst-queries table."""
    gen = generator()
    traces = gen.Traces("http://jaeger:16686/trace/${__value.raw}", "tempo")
    full: Json = gen.build(gen.DEFAULT_LABEL_KEYS, traces=traces, results_table="results")
    return full


def test_the_dashboard_satisfies_grafanas_schema() -> None:
    assert errors(_dashboard()) == []


def test_the_dashboard_with_every_option_satisfies_grafanas_schema() -> None:
    assert errors(_with_every_option()) == []


def _exemplar_links(dashboard: Json) -> list[Json]:
    panel = next(p for p in dashboard["panels"] if p["title"] == "MRR")
    links: list[Json] = panel["fieldConfig"]["overrides"][-1]["properties"][0]["value"]
    return links


def _sql_target(dashboard: Json) -> Json:
    target: Json = dashboard["panels"][-1]["targets"][0]
    return target


def _first(dashboard: Json, kind: str) -> Json:
    panel: Json = next(p for p in dashboard["panels"] if p["type"] == kind)
    return panel


def _put(node: Any, path: list[str | int], value: object) -> None:
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


def _set(path: list[str | int], value: object) -> Callable[[Json], None]:
    return lambda dashboard: _put(dashboard, path, value)


def _in_timeseries(path: list[str | int], value: object) -> Callable[[Json], None]:
    return lambda dashboard: _put(_first(dashboard, "timeseries"), path, value)


# Each is one mistake Grafana's schema forbids; the check must name it.
MISTAKES: dict[str, Callable[[Json], None]] = {
    "unknown dashboard key": _set(["schemaVersio"], 41),
    "variable type outside the enum": _set(["templating", "list", 1, "type"], "querry"),
    "variable refresh outside the enum": _set(["templating", "list", 1, "refresh"], 7),
    "unknown panel key": _in_timeseries(["titel"], "MRR"),
    "grid position as text": _in_timeseries(["gridPos", "w"], "8"),
    "legend mode outside the enum": _in_timeseries(["options", "legend", "displayMode"], "lst"),
    "unknown time-series option": _in_timeseries(["options", "legendd"], {}),
    "draw style outside the enum": _in_timeseries(
        ["fieldConfig", "defaults", "custom", "drawStyle"], "lines"
    ),
    "unknown Prometheus query field": _in_timeseries(["targets", 0, "exp"], "up"),
    "panel type without a schema": _in_timeseries(["type"], "graph"),
    "unknown annotation field": _set(["annotations", "list", 1, "titelFormat"], "x"),
    "table option of the wrong type": lambda d: _first(d, "table")["options"].update(
        showHeader="yes"
    ),
    "value mapping type outside the enum": lambda d: _first(d, "state-timeline")["fieldConfig"][
        "defaults"
    ]["mappings"][0].update(type="valu"),
}

# The same, in what the options add.
OPTION_MISTAKES: dict[str, Callable[[Json], None]] = {
    "data link without a url": lambda d: _exemplar_links(d)[0].pop("url"),
    "data link title of the wrong type": lambda d: _exemplar_links(d)[0].update(title=1),
    "internal link without its data source": lambda d: _exemplar_links(d)[1]["internal"].pop(
        "datasourceUid"
    ),
    "matcher scope outside the enum": lambda d: next(p for p in d["panels"] if p["title"] == "MRR")[
        "fieldConfig"
    ]["overrides"][-1]["matcher"].update(scope="exemplars"),
    "unknown SQL query field": lambda d: _sql_target(d).update(rawSQL="SELECT 1"),
    "SQL format outside the enum": lambda d: _sql_target(d).update(format="tables"),
    "query of a data source without types": lambda d: _sql_target(d)["datasource"].update(
        type="mysql"
    ),
}


@pytest.fixture(scope="module")
def rejected() -> dict[str, list[str]]:
    """The complaints about every mistaken dashboard, from one run of the compiler."""
    mistaken = {}
    for mistakes, base in ((MISTAKES, _dashboard()), (OPTION_MISTAKES, _with_every_option())):
        for name, mistake in mistakes.items():
            dashboard = copy.deepcopy(base)
            mistake(dashboard)
            mistaken[name] = dashboard
    return errors_of(mistaken)


@pytest.mark.parametrize("mistake", [*MISTAKES, *OPTION_MISTAKES])
def test_the_schema_check_rejects(mistake: str, rejected: dict[str, list[str]]) -> None:
    assert len(rejected[mistake]) >= 1, mistake
