"""Scrapes only read: the drift alarms advance on the engine's clock, so how often and by
how many servers the agent is scraped changes neither the alarms nor what a scrape shows."""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from ragstream.events import Message
from ragstream.exporter.collector import EngineCollector
from ragstream.exporter.text import TextRenderer, negotiate
from ragstream.pipeline.engine import Engine
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from tests.support import defaults
from tests.support.defaults import engine_config

START = 1_767_225_600.0
DRIFT = defaults.drift_config(
    pairs=((60.0, 600.0),),
    settle=5.0,
    zscore=(("min_count", 100), ("min_reference", 300)),
    psi=(("min_count", 100), ("min_reference", 300)),
    page_hinkley=(("min_instances", 150),),
)
CONFIG = engine_config(
    cutoffs=(1, 10),
    windows=(60.0, 600.0),
    clock="event",
    label_keys=("app",),
    label_ttl=5.0,
    drift=DRIFT,
)
_traffic = SyntheticTraffic(
    SyntheticConfig(seed=8, rate=20.0, start=START, drift_at=150.0, feedback_delay=(0.5, 3))
)
MESSAGES = [
    Message(e.value, zlib.crc32(e.key) % 3, i, "t", e.key)
    for i, e in enumerate(_traffic.take(30_000))
]
BATCH = 500


def _drift_samples(
    collector: EngineCollector,
) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    registry = CollectorRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("ragstream_drift")
    }


def _clock(engine: Engine, ahead: float) -> Callable[[], float]:
    """A scraping server's clock: the engine's, ``ahead`` seconds later."""
    return lambda: engine.now() + ahead


def _drift(engine: Engine) -> dict[str, Any]:
    """The drift detectors' state: the engine's and each partition's."""
    snapshot = engine.snapshot()
    held = {p: r["drift"] for p, r in snapshot["partitions"].items()}
    return {**snapshot["drift"], "partitions": held}


def _run(scrapes: int) -> tuple[Engine, dict[str, Any]]:
    """The traffic through an engine scraped ``scrapes`` times after each batch, by as many
    servers with clocks of their own (none: never until the end)."""
    engine = Engine(CONFIG)
    servers = [EngineCollector(engine, clock=_clock(engine, 7.0 * j)) for j in range(scrapes)]
    renderer, fmt = TextRenderer(), negotiate("application/openmetrics-text")
    for i in range(0, len(MESSAGES), BATCH):
        engine.apply(MESSAGES[i : i + BATCH])
        for server in servers:
            _drift_samples(server)
            renderer.render(server.families(), fmt)  # what the agent's /metrics runs
    return engine, _drift(engine)


def test_scraping_often_or_never_gives_the_same_alarms() -> None:
    never, never_state = _run(0)
    often, often_state = _run(5)
    assert often_state == never_state
    last = [_drift_samples(EngineCollector(e, clock=e.now)) for e in (never, often)]
    assert last[0] == last[1]
    again = _drift_samples(EngineCollector(often, clock=lambda: often.now() + 600.0))
    assert again == last[1]  # a scrape later than the engine's clock evaluates nothing
    assert _drift(often) == often_state
    detections: Counter[str] = Counter()
    for (name, labels), value in last[0].items():
        if name == "ragstream_drift_detections_total" and dict(labels)["app"] == "support":
            detections[dict(labels)["detector"]] += int(value)
    assert detections["zscore"] > 0  # the drop at 150 s raised the windowed alarm
    windowed = never_state["windowed"]["zscore"]
    assert sum(windowed["alarm"]) > 0


def test_the_engine_evaluates_once_per_step_of_its_clock() -> None:
    """A step is one bucket of the shortest short window (1 s for 1m in 60 buckets here):
    the first batch in a step evaluates, later ones in it do not."""
    engine = Engine(CONFIG)
    windowed = engine.windowed_drift
    assert windowed is not None
    step = engine.spec.width(60.0)
    assert step == 1.0
    now = START + 1000.0
    assert windowed.advance(engine.store, now)
    assert not windowed.advance(engine.store, now)
    assert not windowed.advance(engine.store, now + 0.4 * step)
    assert windowed.advance(engine.store, now + step)
    assert windowed.advance(engine.store, now + 30 * step)  # however many steps passed: one
    assert not windowed.advance(engine.store, now + 30.5 * step)
    assert not windowed.advance(engine.store, float("inf"))  # `finish`: no evaluation
