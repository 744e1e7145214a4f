"""The drift families and the window sums and counts, as a scrape shows them."""

from __future__ import annotations

import zlib
from collections import defaultdict
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from ragstream.events import Message
from ragstream.exporter.collector import EngineCollector
from ragstream.exporter.text import TextRenderer
from ragstream.pipeline.drift_config import DriftConfig
from ragstream.pipeline.engine import Engine, EngineConfig
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from tests.exporter.test_text_renderer import assert_written_as_prometheus_client
from tests.support import defaults
from tests.support.defaults import engine_config

START = 1_767_225_600.0
PARTITIONS = 4
DRIFT = defaults.drift_config(
    pairs=((60.0, 600.0),),
    settle=5.0,
    zscore=(("min_count", 100), ("min_reference", 300)),  # PSI at its floors: no signal
    page_hinkley=(("min_instances", 150),),
)
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _config(drift: DriftConfig | None = DRIFT) -> EngineConfig:
    return engine_config(
        cutoffs=(1, 10),
        half_lives=(3600.0, 604_800.0),
        windows=(60.0, 600.0, 3600.0),
        clock="event",
        label_keys=("app",),
        label_ttl=5.0,
        drift=drift,
    )


def _messages(n: int) -> list[Message]:
    traffic = SyntheticTraffic(
        SyntheticConfig(seed=6, rate=20.0, start=START, drift_at=300.0, feedback_delay=(0.5, 3))
    )
    return [
        Message(e.value, zlib.crc32(e.key) % PARTITIONS, i, "t", e.key)
        for i, e in enumerate(traffic.take(n))
    ]


MESSAGES = _messages(40_000)


def _engine(messages: list[Message], drift: DriftConfig | None = DRIFT) -> Engine:
    engine = Engine(_config(drift))
    for i in range(0, len(messages), 1000):
        engine.apply(messages[i : i + 1000])
    return engine


def _parse(text: str) -> Samples:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _scrape(engine: Engine, at: float) -> Samples:
    registry = CollectorRegistry()
    registry.register(EngineCollector(engine, clock=lambda: at))
    return _parse(generate_latest(registry).decode())


def _named(samples: Samples, name: str) -> dict[frozenset[tuple[str, str]], float]:
    return {labels: v for (n, labels), v in samples.items() if n == name}


def test_drift_families_and_their_labels() -> None:
    engine = _engine(MESSAGES)
    samples = _scrape(engine, engine.now())
    alarm = {dict(k)["detector"]: v for k, v in _named(samples, "ragstream_drift_alarm").items()}
    assert set(alarm) == {"zscore", "psi", "page_hinkley", "adwin"}
    labels = {tuple(sorted(dict(k))) for k in _named(samples, "ragstream_drift_detections_total")}
    assert labels == {("app", "detector", "metric", "reference", "window")}
    support = {
        (d["metric"], d["detector"], d["window"], d["reference"]): v
        for k, v in _named(samples, "ragstream_drift_alarm").items()
        if (d := dict(k))["app"] == "support"
    }
    assert support[("rr", "zscore", "1m", "10m")] == 1.0  # the drop, seen
    assert support[("rr", "page_hinkley", "", "")] in (0.0, 1.0)
    detections = _named(samples, "ragstream_drift_detections_total")
    for (metric, detector, window, reference), _ in support.items():
        key = frozenset(
            {
                "app": "support",
                "metric": metric,
                "detector": detector,
                "window": window,
                "reference": reference,
            }.items()
        )
        assert key in detections
    seen = [k for k, v in detections.items() if dict(k)["app"] == "support" and v > 0]
    assert {dict(k)["detector"] for k in seen} >= {"zscore", "page_hinkley", "adwin"}
    quiet = [k for k, v in detections.items() if dict(k)["app"] != "support" and v > 0]
    assert quiet == []
    scores = _named(samples, "ragstream_drift_score")
    z = scores[
        frozenset(
            {"app": "support", "metric": "rr", "detector": "zscore", "window": "1m"}.items()
            | {"reference": "10m"}.items()
        )
    ]
    assert z <= -5.0


def test_no_drift_families_when_drift_detection_is_off() -> None:
    engine = _engine(MESSAGES[:5000], drift=None)
    names = {name for name, _ in _scrape(engine, engine.now())}
    assert not any(name.startswith("ragstream_drift") for name in names)
    assert "ragstream_window_sums" in names


def test_the_drift_families_are_written_as_prometheus_client_writes_them() -> None:
    engine = _engine(MESSAGES[:20_000])
    families = EngineCollector(engine, clock=engine.now).families()
    assert any(f.name == "ragstream_drift_detections" and f.rows for f in families)
    assert_written_as_prometheus_client(TextRenderer(), families)


def _mean_gauges(engine: Engine, samples: Samples) -> dict[tuple[Any, ...], float]:
    """Every windowed retrieval mean, keyed (metric, half_life, window, app) as the sums
    and counts are: the layout says which gauge and labels each column has."""
    out: dict[tuple[Any, ...], float] = {}
    layout = engine.layout
    for column in layout.columns:
        if column.part == "event_time":
            continue
        head = {} if column.k is None else {"k": str(column.k)}
        half_life = ""
        if column.half_life is not None:
            half_life = head["half_life"] = layout.half_life_label(column.half_life)
        for labels, value in _named(samples, "ragstream_" + column.gauge).items():
            d = dict(labels)
            if all(d.get(k) == v for k, v in head.items()) and set(d) == {
                *head,
                "window",
                "app",
            }:
                out[(column.metric_name, half_life, d["window"], d["app"])] = value
    return out


def _sums(samples: Samples, name: str) -> dict[tuple[Any, ...], float]:
    return {
        (d["metric"], d.get("half_life", ""), d["window"], d["app"]): v
        for labels, v in _named(samples, name).items()
        for d in [dict(labels)]
    }


def test_every_mean_is_its_sum_over_its_count() -> None:
    engine = _engine(MESSAGES[:20_000])
    at = engine.now() + 30.0  # decayed sums and ages are valued at the scrape
    samples = _scrape(engine, at)
    means = _mean_gauges(engine, samples)
    sums = _sums(samples, "ragstream_window_sums")
    counts = _sums(samples, "ragstream_window_counts")
    assert sums.keys() == counts.keys()
    assert len(means) > 100
    assert {k[0] for k in means} >= {"rr", "ndcg@10", "ndcg_decayed@10", "rr_decayed"}
    assert any(k[0] == "doc_age_seconds@10" for k in means)
    for key, mean in means.items():
        assert counts[key] > 0
        assert sums[key] / counts[key] == pytest.approx(mean, rel=1e-9), key
    for key in counts.keys() - means.keys():  # no mean: nothing behind it
        assert counts[key] == 0, key
        assert sums[key] == 0, key


def test_two_replicas_sums_and_counts_give_the_mean_of_one_that_saw_everything() -> None:
    everything = _engine(MESSAGES, drift=None)
    first = _engine([m for m in MESSAGES if m.partition < 2], drift=None)
    second = _engine([m for m in MESSAGES if m.partition >= 2], drift=None)
    at = max(e.now() for e in (everything, first, second)) + 10.0
    one = _mean_gauges(everything, _scrape(everything, at))
    pooled_sum: dict[tuple[Any, ...], float] = defaultdict(float)
    pooled_count: dict[tuple[Any, ...], float] = defaultdict(float)
    for engine in (first, second):
        samples = _scrape(engine, at)
        for key, v in _sums(samples, "ragstream_window_sums").items():
            pooled_sum[key] += v
        for key, v in _sums(samples, "ragstream_window_counts").items():
            pooled_count[key] += v
    assert len(one) > 100
    for key, mean in one.items():
        # document ages: each replica's live age adds its own mean query time; pooled, the
        # mean of all ages up to rounding
        assert pooled_sum[key] / pooled_count[key] == pytest.approx(mean, rel=1e-9), key
