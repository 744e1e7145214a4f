"""The dashboard is valid under Grafana's own dashboard and panel schemas (@grafana/schema)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.grafana.schema_check import errors, errors_of

ROOT = Path(__file__).parents[2]
DASHBOARD = ROOT / "grafana" / "ragstream-dashboard.json"

Json = dict[str, Any]


def _dashboard() -> Json:
    loaded: Json = json.loads(DASHBOARD.read_text())
    return loaded


def test_the_dashboard_satisfies_grafanas_schema() -> None:
    assert errors(_dashboard()) == []


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


@pytest.fixture(scope="module")
def rejected() -> dict[str, list[str]]:
    """The complaints about every mistaken dashboard, from one run of the compiler."""
    mistaken = {}
    for name, mistake in MISTAKES.items():
        dashboard = copy.deepcopy(_dashboard())
        mistake(dashboard)
        mistaken[name] = dashboard
    return errors_of(mistaken)


@pytest.mark.parametrize("mistake", MISTAKES)
def test_the_schema_check_rejects(mistake: str, rejected: dict[str, list[str]]) -> None:
    assert len(rejected[mistake]) >= 1, mistake
