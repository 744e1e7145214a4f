"""scripts/prometheus_rule.py: the PrometheusRule is the rule file, verbatim, and the
checked-in deploy/kubernetes/prometheusrule.yaml never drifts from the rule file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.deploy.schemas import check_rules, operator_errors

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "scripts" / "prometheus_rule.py"
RULES = ROOT / "deploy" / "prometheus" / "ragstream.rules.yml"
MANIFEST = ROOT / "deploy" / "kubernetes" / "prometheusrule.yaml"
FIXTURE = Path(__file__).parent / "fixtures" / "small.rules.yml"


def _generate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _generated(rules: Path) -> str:
    result = _generate("--rules", str(rules), "--output", "-")
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_spec_is_the_rule_file_with_its_comments() -> None:
    manifest = _generated(FIXTURE)
    doc = yaml.safe_load(manifest)
    assert doc["apiVersion"] == "monitoring.coreos.com/v1"
    assert doc["kind"] == "PrometheusRule"
    assert doc["spec"] == yaml.safe_load(FIXTURE.read_text())
    assert "        # fires when no event arrived for ten minutes" in manifest.splitlines()
    # the rule file's lines, each indented under spec, in order
    rule_lines = FIXTURE.read_text().splitlines()
    spec_lines = manifest.splitlines()[manifest.splitlines().index("spec:") + 1 :]
    assert spec_lines == [f"  {line}" if line else "" for line in rule_lines]
    assert operator_errors(doc) == []


@pytest.mark.prometheus
def test_the_generated_rules_are_ones_promtool_accepts() -> None:
    result = check_rules(yaml.safe_load(_generated(FIXTURE))["spec"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 2 rules found" in result.stdout


def test_check_says_when_the_manifest_is_out_of_date(tmp_path: Path) -> None:
    output = tmp_path / "prometheusrule.yaml"
    args = ("--rules", str(FIXTURE), "--output", str(output))
    assert _generate(*args, "--check").returncode == 1  # not written yet
    assert _generate(*args).returncode == 0
    assert output.read_text() == _generated(FIXTURE)
    assert _generate(*args, "--check").returncode == 0
    output.write_text(output.read_text().replace("for: 5m", "for: 1m"))
    stale = _generate(*args, "--check")
    assert stale.returncode == 1
    assert "is out of date" in stale.stderr
    assert "run scripts/prometheus_rule.py" in stale.stderr


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("groups: []\n", "`groups` is not a non-empty list"),
        ("- name: x\n", "a rule file holds only `groups` (found: list)"),
        (
            "groups: [{name: g, rules: []}]\nextra: 1\n",
            "a rule file holds only `groups` (found: ['extra', 'groups'])",
        ),
        ("groups: [\n", "is not YAML"),
        # a second document would be cut off by a YAML reader of the manifest
        (
            "groups: [{name: g, rules: []}]\n---\ngroups: []\n",
            "is not YAML",
        ),
    ],
)
def test_a_rule_file_that_cannot_be_embedded_is_refused(
    tmp_path: Path, text: str, reason: str
) -> None:
    rules = tmp_path / "bad.rules.yml"
    rules.write_text(text)
    result = _generate("--rules", str(rules), "--output", "-")
    assert result.returncode == 1
    assert reason in result.stderr
    assert result.stdout == ""


def test_a_leading_document_marker_is_dropped(tmp_path: Path) -> None:
    rules = tmp_path / "marked.rules.yml"
    rules.write_text("---\n" + FIXTURE.read_text())
    assert yaml.safe_load(_generated(rules))["spec"] == yaml.safe_load(FIXTURE.read_text())


def test_the_checked_in_prometheusrule_is_what_the_rule_file_makes() -> None:
    """The PrometheusRule exists exactly when the rule file does, and equals its generated
    form byte for byte: after changing the rule file, run scripts/prometheus_rule.py."""
    if not RULES.exists():
        assert not MANIFEST.exists(), f"{MANIFEST} without {RULES}"
        return
    assert MANIFEST.exists(), "run scripts/prometheus_rule.py"
    assert MANIFEST.read_text() == _generated(RULES), "run scripts/prometheus_rule.py"
    assert _generate("--check").returncode == 0


@pytest.mark.prometheus
def test_the_checked_in_rules_are_ones_promtool_accepts() -> None:
    if not MANIFEST.exists():
        pytest.skip(f"{RULES.relative_to(ROOT)} is not written yet")
    result = check_rules(yaml.safe_load(MANIFEST.read_text())["spec"])
    assert result.returncode == 0, result.stdout + result.stderr
