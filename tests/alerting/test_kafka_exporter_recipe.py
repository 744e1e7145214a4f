"""docs/runbook.md's lag alert on kafka_exporter's `kafka_consumergroup_lag`, as written
there: `promtool check rules` and `promtool test rules`, firing and not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.prometheus import promtool

pytestmark = pytest.mark.prometheus

RUNBOOK = Path(__file__).parents[2] / "docs" / "runbook.md"
ALERT = "RagstreamConsumerGroupLagHigh"


def _recipe() -> str:
    section = RUNBOOK.read_text().split("## Consumer lag from kafka_exporter", 1)[1]
    return section.split("```yaml\n", 1)[1].split("```", 1)[0]


def _series(group: str, topic: str, partition: int, values: str) -> dict[str, str]:
    labels = f'consumergroup="{group}",topic="{topic}",partition="{partition}"'
    return {
        "series": f'kafka_consumergroup_lag{{job="kafka-exporter",{labels}}}',
        "values": values,
    }


def _write(tmp_path: Path, tests: list[dict[str, Any]]) -> None:
    (tmp_path / "recipe.rules.yml").write_text(_recipe())
    document = {"rule_files": ["recipe.rules.yml"], "evaluation_interval": "1m", "tests": tests}
    (tmp_path / "recipe.test.yml").write_text(yaml.safe_dump(document, sort_keys=False))


def test_the_recipe_is_a_rule_file_promtool_accepts(tmp_path: Path) -> None:
    path = tmp_path / "recipe.rules.yml"
    path.write_text(_recipe())
    done = promtool("check", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 1 rules found" in done.stdout


def test_a_growing_lag_fires_a_shrinking_or_small_one_does_not(tmp_path: Path) -> None:
    fired = {
        "exp_labels": {"severity": "warning", "consumergroup": "ragstream", "topic": "rag-events"},
        "exp_annotations": {
            "summary": "ragstream's consumer group falls behind its topic",
            "description": (
                "kafka_exporter reports the consumer group ragstream 130k messages behind on"
                " topic rag-events, not shrinking for 10 minutes: the agent does not run,"
                " does not keep up, or is stuck."
            ),
            "runbook_url": (
                "https://github.com/ragstream/ragstream/blob/main/docs/runbook.md"
                "#ragstreamconsumerlaghigh"
            ),
        },
    }
    _write(
        tmp_path,
        [
            {
                "interval": "1m",
                "input_series": [
                    # two partitions, growing by 2000 a minute together from 60 000
                    _series("ragstream", "rag-events", 0, "30000+1000x40"),
                    _series("ragstream", "rag-events", 1, "30000+1000x40"),
                    # a lag over the threshold that shrinks
                    _series("ragstream", "rag-feedback", 0, "400000-1000x40"),
                    # another group far behind
                    _series("billing", "rag-events", 0, "900000+1000x40"),
                ],
                "alert_rule_test": [
                    # 100 000 crossed after 20 minutes, pending for 10
                    {"eval_time": "20m", "alertname": ALERT, "exp_alerts": []},
                    {"eval_time": "30m", "alertname": ALERT, "exp_alerts": []},
                    {"eval_time": "35m", "alertname": ALERT, "exp_alerts": [fired]},
                ],
            },
            {
                "interval": "1m",
                "input_series": [_series("ragstream", "rag-events", 0, "90000+100x40")],
                "alert_rule_test": [{"eval_time": "40m", "alertname": ALERT, "exp_alerts": []}],
            },
        ],
    )
    done = promtool("test", "rules", "recipe.test.yml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
