"""The provisioning files are Grafana's format (the keys of its provisioning config, version
1) and agree with the dashboard: the data source's uid is the one the dashboard defaults to,
the dashboard provider is a file provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).parents[2]
PROVISIONING = ROOT / "grafana" / "provisioning"

# The fields of Grafana's provisioning files, version 1 (pkg/services/provisioning:
# datasources/types.go upsertDataSourceFromConfigV1, dashboards/types.go configV1).
DATASOURCE_KEYS = {
    "name", "type", "access", "orgId", "uid", "url", "user", "database", "basicAuth",
    "basicAuthUser", "withCredentials", "isDefault", "jsonData", "secureJsonData", "version",
    "editable",
}  # fmt: skip
PROVIDER_KEYS = {
    "name", "orgId", "folder", "folderUid", "type", "disableDeletion",
    "updateIntervalSeconds", "allowUiUpdates", "options",
}  # fmt: skip
PROVIDER_OPTIONS = {"path", "foldersFromFilesStructure"}


def _load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def test_the_datasource_is_the_dashboards_prometheus() -> None:
    config = _load(PROVISIONING / "datasources" / "ragstream.yml")
    assert set(config) <= {"apiVersion", "datasources", "deleteDatasources"}
    assert config["apiVersion"] == 1
    (source,) = config["datasources"]
    assert set(source) <= DATASOURCE_KEYS, set(source) - DATASOURCE_KEYS
    assert source["type"] == "prometheus"
    assert source["access"] == "proxy"
    assert source["url"].startswith("http")
    dashboard = json.loads((ROOT / "grafana" / "ragstream-dashboard.json").read_text())
    variable = next(v for v in dashboard["templating"]["list"] if v["type"] == "datasource")
    assert variable["query"] == source["type"]
    assert variable["current"]["value"] == source["uid"]


def test_the_dashboard_provider_loads_files() -> None:
    config = _load(PROVISIONING / "dashboards" / "ragstream.yml")
    assert set(config) <= {"apiVersion", "providers"}
    assert config["apiVersion"] == 1
    (provider,) = config["providers"]
    assert set(provider) <= PROVIDER_KEYS, set(provider) - PROVIDER_KEYS
    assert provider["type"] == "file"
    assert set(provider["options"]) <= PROVIDER_OPTIONS
    assert provider["options"]["path"].startswith("/")
    assert isinstance(provider["updateIntervalSeconds"], int)
