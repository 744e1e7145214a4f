"""The demo runs with drift detection on, configured like `run`; its summary shows the
alarms."""

from __future__ import annotations

import zlib

from click.testing import CliRunner

from ragstream.cli import main
from ragstream.config import load_settings
from ragstream.events import Message
from ragstream.events.trace_ids import is_trace_id
from ragstream.pipeline.engine import Engine
from ragstream.report.console import render_drift
from ragstream.sources.paced import PacedSyntheticSource
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from ragstream.wiring.demo import demo_agent
from tests.support import defaults
from tests.support.defaults import engine_config


def _demo(**settings: object) -> Engine:
    agent, _ = demo_agent(
        rate=10.0,
        drift_at=60.0,
        label_ttl=5.0,
        judge_rate=0.1,
        seed=1,
        host="127.0.0.1",
        port=0,
        settings=load_settings(overrides=settings) if settings else None,
    )
    return agent.engine


def test_the_demo_runs_with_drift_detection_on() -> None:
    engine = _demo()
    assert engine.sequential is not None
    assert engine.windowed_drift is not None
    assert engine.drift is not None
    assert [(p.short_name, p.long_name) for p in engine.drift.pairs] == [
        ("5m", "1h"),
        ("1h", "24h"),
    ]
    short = _demo(
        windows={"sizes": ["20s", "90s"]},
        drift={"window_pairs": [["20s", "90s"]], "settle": "8s", "adwin": {"enabled": False}},
    )
    assert short.spec.names == ("20s", "90s")
    assert short.drift is not None
    assert short.drift.config.params("adwin") is None
    assert short.drift.config.settle == 8.0


def test_demo_settings_that_do_not_fit_are_explained() -> None:
    result = CliRunner().invoke(main, ["demo", "--set", "drift.window_pairs=[[1m, 10m]]"])
    assert result.exit_code == 1
    assert "window pair 1m/10m: 10m not in windows.sizes" in result.output


def test_the_summary_lists_the_raised_alarms() -> None:
    drift = defaults.drift_config(
        pairs=((60.0, 600.0),),
        settle=5.0,
        zscore=(("min_count", 100), ("min_reference", 300)),
        page_hinkley=(("min_instances", 150),),
    )
    engine = Engine(
        engine_config(
            windows=(60.0, 600.0),
            clock="event",
            label_keys=("app",),
            label_ttl=5.0,
            drift=drift,
        )
    )
    assert render_drift(engine) == "(no drift alarm)"
    traffic = SyntheticTraffic(
        SyntheticConfig(seed=2, rate=20.0, drift_at=300.0, feedback_delay=(0.5, 3.0))
    )
    events = traffic.take(40_000)
    messages = [Message(e.value, zlib.crc32(e.key) % 2, i) for i, e in enumerate(events)]
    for i in range(0, len(messages), 1000):
        engine.apply(messages[i : i + 1000])
    text = render_drift(engine)
    lines = text.splitlines()
    assert lines[0].split() == ["label", "set", "metric", "detector", "windows", "score"]
    rows = [line.split() for line in lines[2:]]
    assert rows
    assert {row[0] for row in rows} == {"app=support"}
    assert ("zscore", "1m/10m") in {(row[2], row[3]) for row in rows}


def test_demo_trace_ids_make_query_ids_exemplar_trace_ids() -> None:
    """`ragstream demo --trace-ids` (what scripts/render_panels.py --exemplars runs): every
    event's query id is an OpenTelemetry trace id; without it none is."""
    for trace_ids in (True, False):
        agent, _ = demo_agent(
            rate=10.0, drift_at=60.0, label_ttl=5.0, judge_rate=0.1, seed=1,
            host="127.0.0.1", port=0, trace_ids=trace_ids,
        )  # fmt: skip
        assert isinstance(agent.source, PacedSyntheticSource)
        traffic = SyntheticTraffic(agent.source.config)
        ids = {e.event["query_id"] for i in range(20) for e in traffic.query_events(i)}
        assert len(ids) == 20
        assert {is_trace_id(i) for i in ids} == {trace_ids}
