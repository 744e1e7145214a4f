"""A real Prometheus loads the real rule file and scrapes the demo: the drift and
hallucination alerts fire after the demo's scheduled quality drop, and no alert is
pending or firing before it.

Only the agent's configuration is shortened (windows of 20 s and 90 s, their pair for the
windowed detectors, labels final after 8 s) and Prometheus evaluates every second; the rule
file is the production one. Run alone (it prints the measured delays):

    .venv/bin/pytest tests/integration/test_alerts_e2e.py -s
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.agent_process import running_agent
from tests.support.prometheus import PrometheusServer

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]

RULES = Path(__file__).parents[2] / "deploy" / "prometheus" / "ragstream.rules.yml"
DRIFT_AT = 60.0
"""Seconds after the demo's start when app=support's quality drops."""
BOUND = 150.0
"""Seconds after the drop within which each alert must fire (`for: 1m` included)."""
ALERTS = ("RagstreamRetrievalQualityDrift", "RagstreamHallucinationRatioHigh")


def _first(series: list[dict[str, Any]]) -> float | None:
    """The earliest time any of the series has a sample."""
    times = [float(v[0]) for s in series for v in s["values"]]
    return min(times) if times else None


async def test_the_drift_and_hallucination_alerts_fire_after_the_drop_and_not_before(
    tmp_path: Path,
) -> None:
    args = [
        "demo",
        "--host",
        "127.0.0.1",
        "--rate",
        "100",
        "--refresh",
        "3600",
        "--label-ttl",
        "8",
        "--drift-at",
        str(DRIFT_AT),
        "--duration",
        "600",
        "--set",
        "windows.sizes=[20s, 90s]",
        "--set",
        "drift.window_pairs=[[20s, 90s]]",
        "--set",
        "drift.settle=8s",
        "--set",
        "drift.page_hinkley.min_instances=200",
    ]
    launched = time.time()  # the demo's traffic starts after this, the drop DRIFT_AT later
    async with running_agent(args, tmp_path / "demo.log") as agent:
        serving = time.time()  # ... and before this
        drop = launched + DRIFT_AT  # the earliest the drop can be
        with PrometheusServer([agent.target], evaluation_interval="1s", rule_files=[RULES]) as prom:
            deadline = serving + DRIFT_AT + BOUND + 30.0
            firing: dict[str, list[dict[str, Any]]] = {}
            while time.time() < deadline and len(firing) < len(ALERTS):
                await asyncio.sleep(2.0)
                for alert in await asyncio.to_thread(prom.alerts):
                    name = alert["labels"]["alertname"]
                    if name in ALERTS and alert["state"] == "firing":
                        firing.setdefault(name, []).append(alert["labels"])
            await asyncio.sleep(5.0)  # the samples of the latest evaluations are in the range
            end = time.time()
            history = await asyncio.to_thread(prom.query_range, "ALERTS", launched - 5.0, end, 1.0)
            log = prom.log_tail()
    # RagstreamDown is pending until Prometheus's first scrape of the agent (absent `up`);
    # its `for:` keeps it from firing
    before = [
        (s["metric"]["alertname"], s["metric"]["alertstate"])
        for s in history
        if any(float(t) < drop for t, _ in s["values"])
        and (s["metric"]["alertname"], s["metric"]["alertstate"]) != ("RagstreamDown", "pending")
    ]
    assert not [
        s
        for s in history
        if s["metric"]["alertname"] == "RagstreamDown" and s["metric"]["alertstate"] == "firing"
    ]
    assert before == [], f"alerts before the drop: {before}"
    assert set(firing) == set(ALERTS), f"firing: {firing}\n{log}"
    figures = {}
    for name in ALERTS:
        mine = [s for s in history if s["metric"]["alertname"] == name]
        assert {s["metric"].get("app") for s in mine} == {"support"}, mine  # the drifting app
        pending = _first([s for s in mine if s["metric"]["alertstate"] == "pending"])
        fired = _first([s for s in mine if s["metric"]["alertstate"] == "firing"])
        assert pending is not None
        assert fired is not None
        assert drop <= pending < fired <= drop + BOUND, (name, pending - drop, fired - drop)
        figures[name] = (pending - drop, fired - drop)
    drift = {s["metric"]["detector"] for s in history if "detector" in s["metric"]}
    assert drift <= {"zscore", "psi", "page_hinkley", "adwin"}
    assert drift, "the drift alert names its detector"
    uncertainty = serving - launched
    for name, (pending, fired) in figures.items():
        print(
            f"{name}: pending {pending:.0f} s, firing {fired:.0f} s after the drop "
            f"(the drop is known to {uncertainty:.1f} s: up to that much less)"
        )
