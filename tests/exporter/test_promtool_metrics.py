"""Real scrapes of a running agent (the demo, with judging, gold verdicts and drift
detection) in both formats: `promtool check metrics` flags no name or type, prometheus_client's
parsers read both to the same families and series, and a real Prometheus, which asks for
OpenMetrics first, scrapes it as OpenMetrics and holds every family."""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator

import pytest
from prometheus_client.core import Metric
from prometheus_client.openmetrics import parser
from prometheus_client.parser import text_string_to_metric_families

from tests.support.agent_process import AgentProcess
from tests.support.prometheus import PrometheusError, PrometheusServer

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
# what Prometheus asks for unless its scrape job says otherwise
_OPENMETRICS = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)
Series = set[tuple[str, frozenset[tuple[str, str]]]]
openmetrics_families: Callable[[str], Iterator[Metric]] = parser.text_string_to_metric_families


def _check_metrics(text: str) -> subprocess.CompletedProcess[str]:
    path = shutil.which("promtool")
    if path is None:
        raise PrometheusError("promtool is not installed: run scripts/prometheus.sh")
    return subprocess.run(
        [path, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60
    )


def _get(agent: AgentProcess, accept: str) -> tuple[str, str]:
    """(Content-Type, body) of a scrape of the agent's /metrics."""
    request = urllib.request.Request(agent.url + "/metrics", headers={"Accept": accept})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["Content-Type"], response.read().decode()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentProcess]:
    args = ["demo", "--duration", "300", "--rate", "60", "--label-ttl", "2", "--refresh", "60"]
    args += ["--judge-rate", "0.5", "--gold-share", "0.5", "--drift-at", "600"]
    log = tmp_path_factory.mktemp("demo") / "demo.log"
    with AgentProcess(args, log) as agent:
        deadline = time.monotonic() + 90
        while missing := [name for name in _AWAITED if name not in agent.metrics()]:
            assert time.monotonic() < deadline, f"never scraped: {missing}"
            time.sleep(1)
        yield agent


def test_a_real_scrape_passes_promtool_check_metrics_in_both_formats(demo: AgentProcess) -> None:
    content_type, text = _get(demo, "")
    assert content_type == "text/plain; version=0.0.4; charset=utf-8"
    done = _check_metrics(text)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout + done.stderr == ""
    content_type, om = _get(demo, _OPENMETRICS)
    assert content_type == (
        "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores"
    )
    # promtool reads the text format only: to it, an OpenMetrics counter's `# HELP` names a
    # family without `_total`, its samples one with it; nothing else may be flagged (the
    # counters with samples)
    counters = {f.name for f in openmetrics_families(om) if f.type == "counter" and f.samples}
    assert "ragstream_events" in counters
    done = _check_metrics(om)
    flagged = set((done.stdout + done.stderr).splitlines())
    assert flagged == {f"{name}_total no help text" for name in counters}


def _series(families: Iterable[Metric]) -> tuple[set[tuple[str, str]], Series]:
    names: set[tuple[str, str]] = set()
    series: Series = set()
    for family in families:
        names.add((family.name, family.type))
        for s in family.samples:
            series.add((s.name, frozenset(s.labels.items())))
    return names, series


def test_both_formats_read_back_to_the_same_families_and_series(demo: AgentProcess) -> None:
    for _ in range(10):  # the demo is live: until no series came or went between scrapes
        om = _series(openmetrics_families(_get(demo, _OPENMETRICS)[1]))
        text = _series(text_string_to_metric_families(_get(demo, "")[1]))
        if om == _series(openmetrics_families(_get(demo, _OPENMETRICS)[1])):
            break
    assert om == text
    names, series = om
    assert {("ragstream_events", "counter"), ("ragstream_query_ndcg", "histogram")} <= names
    assert ("ragstream_build_info", "gauge") in names
    assert len(series) > 1000


def test_a_real_prometheus_scrapes_it_as_openmetrics(demo: AgentProcess) -> None:
    with PrometheusServer([demo.target]) as prom:
        prom.wait_for('ragstream_query_ndcg_bucket{le="+Inf"}', within=60)
        prom.wait_for("ragstream_judge_requests_total", within=30)
        assert prom.query("up")[0]["value"][1] == "1"
        # OpenMetrics names a counter's family without `_total` (the text format with it):
        # the metadata Prometheus keeps says which format it read
        metadata = prom.api("/api/v1/metadata", [("metric", "ragstream_events")])
        assert metadata["ragstream_events"][0]["type"] == "counter"
        assert prom.api("/api/v1/metadata", [("metric", "ragstream_events_total")]) == {}
        held = set(prom.label_values("__name__", '{job="ragstream"}'))
        _, served = _series(openmetrics_families(_get(demo, _OPENMETRICS)[1]))
        assert {name for name, _ in served} <= held


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
