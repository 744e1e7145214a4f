"""The rules' one source: the chart's rule template and its parameters' defaults in the
chart's values make the checked-in rule file; other values make other rule files."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.prometheus import promtool

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "scripts" / "prometheus_rule.py"
CHART = ROOT / "deploy" / "helm" / "ragstream"
TEMPLATE = CHART / "files" / "ragstream.rules.template.yml"
RULES = ROOT / "deploy" / "prometheus" / "ragstream.rules.yml"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _leaves(node: Any, prefix: str = "") -> set[str]:
    if not isinstance(node, dict):
        return {prefix}
    return {leaf for k, v in node.items() for leaf in _leaves(v, f"{prefix}{k}.")}


def _alerts(text: str) -> dict[str, dict[str, Any]]:
    groups = yaml.safe_load(text)["groups"]
    return {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}


def test_the_rule_file_is_what_the_template_makes_with_the_defaults() -> None:
    done = _run("--check")
    assert done.returncode == 0, done.stderr
    assert RULES.read_text() == _run("--output", "-").stdout
    assert "${" not in RULES.read_text()


def test_every_parameter_is_a_value_of_the_chart_and_every_value_a_parameter() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())["prometheusRule"]
    used = set(re.findall(r"\$\{([A-Za-z0-9_.]+)\}", TEMPLATE.read_text()))
    parameters = {leaf.rstrip(".") for leaf in _leaves(values)} - {"enabled", "labels"}
    assert used == parameters
    # each alert has its severity and `for:` among them
    alerts = _alerts(RULES.read_text())
    assert set(values["alerts"]) == set(alerts)
    for name, rule in alerts.items():
        assert rule["labels"]["severity"] == values["alerts"][name]["severity"]
        assert rule["for"] == values["alerts"][name]["for"]


def test_drift_and_freshness_are_warnings_by_default() -> None:
    alerts = _alerts(RULES.read_text())
    for name in ("RagstreamRetrievalQualityDrift", "RagstreamFreshnessDecay"):
        assert alerts[name]["labels"]["severity"] == "warning"
    assert alerts["RagstreamDown"]["labels"]["severity"] == "critical"


@pytest.mark.prometheus
def test_values_make_a_rule_file_with_other_severities_and_thresholds(tmp_path: Path) -> None:
    values = tmp_path / "mine.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "prometheusRule": {
                    "runbookBaseUrl": "https://wiki.example.com/ragstream",
                    "selector": 'job="rag/ragstream", namespace="rag"',
                    "alerts": {
                        "RagstreamRetrievalQualityDrift": {"severity": "critical"},
                        "RagstreamFreshnessDecay": {"for": "1h", "maxAgeDays": 30},
                        "RagstreamConsumerLagHigh": {"messages": 5000000},
                    },
                }
            }
        )
    )
    output = tmp_path / "mine.rules.yml"
    done = _run("--values", str(values), "--output", str(output))
    assert done.returncode == 0, done.stderr
    checked = promtool("check", "rules", str(output))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    alerts = _alerts(output.read_text())
    drift = alerts["RagstreamRetrievalQualityDrift"]
    assert drift["labels"]["severity"] == "critical"
    assert drift["for"] == "1m"  # the other parameters keep their defaults
    fresh = alerts["RagstreamFreshnessDecay"]
    assert fresh["for"] == "1h"
    assert "> 30 * 86400" in fresh["expr"]
    assert "over 30 days old for 1h" in fresh["annotations"]["description"]
    lag = alerts["RagstreamConsumerLagHigh"]["expr"]
    assert 'ragstream_consumer_lag{job="rag/ragstream", namespace="rag"}) > 5000000\n' in lag
    # every series the rules read carries the selector
    text = output.read_text()
    reads = re.findall(r"\bragstream_[a-z_]+(?:\{[^}]*\})?", text.split("groups:", 1)[1])
    assert reads
    assert all('{job="rag/ragstream", namespace="rag"' in read for read in reads), reads
    assert 'absent(up{job="rag/ragstream", namespace="rag"})' in alerts["RagstreamDown"]["expr"]
    for name, rule in alerts.items():
        assert rule["annotations"]["runbook_url"] == (
            f"https://wiki.example.com/ragstream#{name.lower()}"
        )


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        (
            {"alerts": {"RagstreamDown": None}},
            "prometheusRule.alerts.RagstreamDown: None is not of type 'object'",
        ),
        (
            {"alerts": {"RagstreamDown": {"for": ["5m"]}}},
            "prometheusRule.alerts.RagstreamDown.for: ['5m'] is not of type 'string'",
        ),
        (
            {"alerts": {"RagstreamDown": {"severity": "Critical"}}},
            "prometheusRule.alerts.RagstreamDown.severity: 'Critical' is not one of",
        ),
        (
            {"alerts": {"RagstreamDwn": {"severity": "critical"}}},
            "Additional properties are not allowed ('RagstreamDwn' was unexpected)",
        ),
        ({"alerts": {"RagstreamDown": {"for": "5 min"}}}, "does not match"),
        ({"prometheusRule": "x"}, "prometheusRule is not a mapping"),
    ],
)
def test_values_the_charts_schema_refuses_are_refused(
    tmp_path: Path, values: dict[str, Any], reason: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(values))
    done = _run("--values", str(path), "--output", "-")
    assert done.returncode == 1
    assert reason in done.stderr
    assert done.stdout == ""


def test_a_template_parameter_without_a_value_is_refused_by_name() -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        from prometheus_rule import RuleFileError, render
    finally:
        sys.path.remove(str(SCRIPT.parent))
    assert render("for: ${alerts.X.for}", {"alerts": {"X": {"for": "5m"}}}) == "for: 5m"
    with pytest.raises(RuleFileError, match=r"parameter alerts\.Y\.for has no value"):
        render("for: ${alerts.Y.for}", {"alerts": {"X": {"for": "5m"}}})
    with pytest.raises(RuleFileError, match=r"alerts\.X\.for is not a number or a string"):
        render("for: ${alerts.X.for}", {"alerts": {"X": {"for": None}}})


def test_the_charts_values_schema_knows_each_alerts_parameters() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    alerts = schema["properties"]["prometheusRule"]["properties"]["alerts"]["properties"]
    values = yaml.safe_load((CHART / "values.yaml").read_text())["prometheusRule"]["alerts"]
    assert {name: set(a["properties"]) for name, a in alerts.items()} == {
        name: set(parameters) for name, parameters in values.items()
    }
