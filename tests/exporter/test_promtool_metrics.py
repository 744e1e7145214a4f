"""A real scrape of a running agent (the demo, with judging, gold verdicts and drift
detection) passes `promtool check metrics`: no name or type that Prometheus's linter flags."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.agent_process import AgentProcess
from tests.support.prometheus import PrometheusError

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]

# Families that appear only once the demo has joined labels, judged answers and compared
# gold verdicts: the scrape checked must hold every kind of family the agent exports.
_AWAITED = (
    "ragstream_window_sums{",
    "ragstream_window_counts{",
    "ragstream_drift_score{",
    "ragstream_query_ndcg_bucket{",
    "ragstream_judge_requests_total{",
    "ragstream_generation_judged_queries{",
    "ragstream_judge_gold_comparisons{",
)


def _check_metrics(text: str) -> subprocess.CompletedProcess[str]:
    path = shutil.which("promtool")
    if path is None:
        raise PrometheusError("promtool is not installed: run scripts/prometheus.sh")
    return subprocess.run(
        [path, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60
    )


def _scrape(tmp_path: Path) -> str:
    args = ["demo", "--duration", "120", "--rate", "60", "--label-ttl", "2", "--refresh", "60"]
    args += ["--judge-rate", "0.5", "--gold-share", "0.5", "--drift-at", "600"]
    with AgentProcess(args, tmp_path / "demo.log") as agent:
        deadline = time.monotonic() + 90
        while True:
            text = agent.metrics()
            missing = [name for name in _AWAITED if name not in text]
            if not missing:
                return text
            assert time.monotonic() < deadline, f"never scraped: {missing}"
            time.sleep(1)


def test_a_real_scrape_passes_promtool_check_metrics(tmp_path: Path) -> None:
    text = _scrape(tmp_path)
    done = _check_metrics(text)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout + done.stderr == ""


def test_promtool_flags_a_gauge_named_like_a_summarys_parts() -> None:
    """The check can fail: the names the window sums and counts had before."""
    text = (
        "# HELP ragstream_window_sum Sums.\n# TYPE ragstream_window_sum gauge\n"
        'ragstream_window_sum{metric="rr"} 1.0\n'
        "# HELP ragstream_window_count Counts.\n# TYPE ragstream_window_count gauge\n"
        'ragstream_window_count{metric="rr"} 2.0\n'
    )
    done = _check_metrics(text)
    assert done.returncode != 0
    assert 'ragstream_window_sum non-histogram and non-summary metrics should not have "_sum"' in (
        done.stdout + done.stderr
    )
