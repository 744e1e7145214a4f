"""The Prometheus rule file: `promtool check rules`, `promtool test rules` on its unit tests,
the tests' power (each threshold and floor, loosened, makes them fail), what every alert
carries, and that the alerting example of docs/operations.md can fire."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from tests.support.prometheus import PrometheusError, PrometheusServer, promtool

ROOT = Path(__file__).parents[2]
RULES = ROOT / "deploy" / "prometheus" / "ragstream.rules.yml"
TESTS = ROOT / "deploy" / "prometheus" / "ragstream.rules.test.yml"
RUNBOOK = ROOT / "docs" / "runbook.md"
ALERTS = [
    "RagstreamDown",
    "RagstreamRetrievalQualityDrift",
    "RagstreamFreshnessDecay",
    "RagstreamHallucinationRatioHigh",
    "RagstreamFaithfulnessDrift",
    "RagstreamRefusalSpike",
    "RagstreamConsumerLagHigh",
    "RagstreamInputStalled",
    "RagstreamJudgeFailures",
    "RagstreamInvalidEventsSpike",
]


def test_promtool_checks_the_rules() -> None:
    done = promtool("check", "rules", str(RULES), cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 17 rules found" in done.stdout


def test_promtool_runs_the_rules_unit_tests() -> None:
    done = promtool("test", "rules", TESTS.name, cwd=TESTS.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_a_test_server_refuses_a_rule_file_that_does_not_exist(tmp_path: Path) -> None:
    """Prometheus reads a rule file as a glob: one that matches nothing loads no rules and
    raises no error, so a test server that needs the rules refuses to start without them."""
    server = PrometheusServer([], rule_files=[RULES, tmp_path / "ragstream.rules.yml"])
    try:
        with pytest.raises(PrometheusError, match=r"no such rule file: .*ragstream\.rules\.yml"):
            server.start()
    finally:
        server.stop()


def _groups() -> dict[str, list[dict[str, object]]]:
    data = yaml.safe_load(RULES.read_text())
    return {g["name"]: g["rules"] for g in data["groups"]}


def test_every_alert_carries_severity_annotations_for_and_its_runbook_section() -> None:
    groups = _groups()
    assert set(groups) == {"ragstream.recording", "ragstream.alerts"}
    recorded = {r["record"] for r in groups["ragstream.recording"]}
    assert {"ragstream:window_mean", "ragstream:window_count"} <= recorded
    rules = {str(r["alert"]): r for r in groups["ragstream.alerts"]}
    assert list(rules) == ALERTS
    runbook = RUNBOOK.read_text()
    headings = {
        re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
        for h in re.findall(r"^## (.+)$", runbook, re.MULTILINE)
    }
    tested = TESTS.read_text()
    for name, rule in rules.items():
        labels = rule["labels"]
        assert isinstance(labels, dict)
        assert labels["severity"] in ("critical", "warning"), name
        assert rule.get("for"), name
        annotations = rule["annotations"]
        assert isinstance(annotations, dict)
        assert set(annotations) == {"summary", "description", "runbook_url"}, name
        # static: Alertmanager groups by it, so it holds no template (no value, no label)
        assert "{{" not in annotations["summary"], name
        anchor = name.lower()
        assert annotations["runbook_url"] == (
            f"https://github.com/ragstream/ragstream/blob/main/docs/runbook.md#{anchor}"
        )
        assert anchor in headings, f"docs/runbook.md has no section {name}"
        # firing (an expected alert with its labels) and not firing (an empty list)
        assert tested.count(f"alertname: {name}\n        exp_alerts:\n          - ") >= 1, name
        assert tested.count(f"alertname: {name}\n        exp_alerts: []") >= 1, name


# Each threshold, volume floor and `for:` of the rules, loosened: the unit tests must fail.
LOOSENED = [
    ('{job="ragstream"', '{job=~".+"'),  # the selector: every job's series
    ('(up{job="ragstream"}) == 0', '(up{job="ragstream"}) <= 1'),
    ('absent(up{job="ragstream"})', 'absent(up{job="nothing"})'),
    ("ragstream:window_count >= 200", "ragstream:window_count >= 0"),
    (
        "min without (window) (ragstream:window_count) >= 10",
        "min without (window) (ragstream:window_count) >= 0",
    ),
    (
        'ragstream:window_count{metric="doc_age_seconds@10"} >= 100',
        'ragstream:window_count{metric="doc_age_seconds@10"} >= 0',
    ),
    ("> 90 * 86400", "> 70 * 86400"),
    ('judged_queries{job="ragstream"} >= 30', 'judged_queries{job="ragstream"} >= 0'),
    ('bound="lower"} > 0.1', 'bound="lower"} > 0.05'),
    (
        "            ragstream:judge_gold_comparisons >= 50\n",
        "            ragstream:judge_gold_comparisons >= 0\n",
    ),
    ("(ragstream:judge_gold_comparisons >= 50)", "(ragstream:judge_gold_comparisons >= 1000)"),
    (") < -0.1\n", ") < -0.01\n"),
    (") > 0.1\n", ") > 0.01\n"),
    (
        "ragstream:generation_judged_queries >= 50",
        "ragstream:generation_judged_queries >= 0",
    ),
    ("for: 15m", "for: 0m"),
    (
        'ragstream_consumer_lag{job="ragstream"}) > 100000',
        'ragstream_consumer_lag{job="ragstream"}) > 1000',
    ),
    (
        '(deriv(ragstream_consumer_lag{job="ragstream"}[10m])) >= 0',
        '(deriv(ragstream_consumer_lag{job="ragstream"}[10m])) >= -1e9',
    ),
    (
        '(rate(ragstream_events_total{job="ragstream"}[1d])) > 0.1',
        '(rate(ragstream_events_total{job="ragstream"}[1d])) > 0',
    ),
    ("> 0.2\n", "> 0.05\n"),
    (
        '(increase(ragstream_judge_requests_total{job="ragstream"}[10m])) >= 20',
        '(increase(ragstream_judge_requests_total{job="ragstream"}[10m])) >= 0',
    ),
    ("> 0.01\n", "> 0.001\n"),
    (
        '(increase(ragstream_invalid_events_total{job="ragstream"}[5m])) >= 10',
        '(increase(ragstream_invalid_events_total{job="ragstream"}[5m])) >= 0',
    ),
    ("for: 1m", "for: 0m"),
    ("for: 5m", "for: 0m"),
    ("for: 10m", "for: 0m"),
]


@pytest.mark.parametrize(("strict", "loose"), LOOSENED)
def test_the_unit_tests_fail_when_a_threshold_or_floor_is_loosened(
    strict: str, loose: str, tmp_path: Path
) -> None:
    text = RULES.read_text()
    assert strict in text
    (tmp_path / RULES.name).write_text(text.replace(strict, loose))
    shutil.copy(TESTS, tmp_path / TESTS.name)
    done = promtool("test", "rules", TESTS.name, cwd=tmp_path)
    assert done.returncode != 0, f"still passing with {loose!r}"
    assert "FAILED" in done.stdout + done.stderr


def _operations_examples() -> list[str]:
    """The PromQL expressions of docs/operations.md's "Alerting ideas" block."""
    text = (ROOT / "docs" / "operations.md").read_text()
    block = text.split("## Alerting ideas", 1)[1].split("```promql", 1)[1].split("```", 1)[0]
    expressions: list[str] = []
    current: list[str] = []
    for line in block.splitlines():
        if line.startswith("#") or not line.strip():
            if current:
                expressions.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        expressions.append("\n".join(current))
    return expressions


def test_the_drift_example_of_docs_operations_can_fire(tmp_path: Path) -> None:
    """Its two sides must match on their labels (they once differed in `window`)."""
    examples = _operations_examples()
    drift = next(e for e in examples if "ndcg" in e and "24h" in e)
    rules = {"groups": [{"name": "example", "rules": [{"alert": "Example", "expr": drift}]}]}
    (tmp_path / "example.yml").write_text(yaml.safe_dump(rules, sort_keys=False))
    (tmp_path / "ragstream.rules.yml").write_text(RULES.read_text())
    # nDCG@10 of app=support: 0.9 over the day, 0.6 over the last 5 minutes, as the agent
    # exports it (the mean gauges and the sums and counts)
    series = [
        ('ragstream_window_sums{metric="ndcg@10",window="24h"', "900x5"),
        ('ragstream_window_counts{metric="ndcg@10",window="24h"', "1000x5"),
        ('ragstream_window_sums{metric="ndcg@10",window="5m"', "60x5"),
        ('ragstream_window_counts{metric="ndcg@10",window="5m"', "100x5"),
        ('ragstream_retrieval_ndcg{k="10",window="24h"', "0.9x5"),
        ('ragstream_retrieval_ndcg{k="10",window="5m"', "0.6x5"),
        ('ragstream_window_queries{kind="labeled",window="24h"', "1000x5"),
        ('ragstream_window_queries{kind="labeled",window="5m"', "100x5"),
    ]
    tests = {
        "rule_files": ["ragstream.rules.yml", "example.yml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {
                        "series": f'{head},job="ragstream",instance="a",app="support"}}',
                        "values": v,
                    }
                    for head, v in series
                ],
                "alert_rule_test": [
                    {
                        "eval_time": "2m",
                        "alertname": "Example",
                        "exp_alerts": [
                            {
                                "exp_labels": {
                                    "job": "ragstream",
                                    "metric": "ndcg@10",
                                    "app": "support",
                                }
                            }
                        ],
                    }
                ],
            }
        ],
    }
    (tmp_path / "example.test.yml").write_text(yaml.safe_dump(tests, sort_keys=False))
    done = promtool("test", "rules", "example.test.yml", cwd=tmp_path)
    assert done.returncode == 0, drift + "\n" + done.stdout + done.stderr
