"""The text writer that keeps label strings between scrapes: every rendering equals a fresh
one and prometheus_client's encoding, whatever changed since the last, and what it keeps is
only the latest rendering's series."""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from ragstream.exporter.family import Family, TextRenderer, to_metrics

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _families(apps: list[str], scale: float) -> list[Family]:
    gauge = Family("ragstream_retrieval_mrr", "MRR.", ("window", "app"))
    sums = Family("ragstream_window_sums", "Sums.", ("metric", "window", "app"))
    counts = Family("ragstream_window_counts", "Counts.", ("metric", "window", "app"))
    events = Family("ragstream_things", "Things.", ("app",), kind="counter")
    hist = Family(
        "ragstream_query_rr", "RR.", ("k", "app"), kind="histogram", bounds=("0.5", "+Inf")
    )
    for i, app in enumerate(apps):
        for window in ("5m", "1h"):
            gauge.rows.append(((window, app), scale * (i + 1) / 7))
            sums.rows.append((("rr", window, app), scale * i))
            counts.rows.append((("rr", window, app), float(i)))
        events.rows.append(((app,), 3.0 * i))
        hist.histograms.append((("10", app), [float(i), 2.0 * i], scale * i))
    gauge.rows.append((("5m", "inf"), math.inf))
    gauge.rows.append((("1h", "-inf"), -math.inf))
    return [gauge, sums, counts, events, hist]


def _samples(text: str) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def _reference(families: list[Family]) -> Samples:
    class _Fixed(Collector):
        def collect(self):  # type: ignore[no-untyped-def]
            return list(to_metrics(families))

    registry = CollectorRegistry()
    registry.register(_Fixed())
    return _samples(generate_latest(registry).decode())


def test_every_rendering_equals_a_fresh_one_as_series_come_and_go() -> None:
    renderer = TextRenderer()
    steps = [
        (["search", "support"], 1.0),
        (["search", "support"], 2.0),  # same series, new values
        (["search", 'he said "hi"\\', "billing"], 3.0),  # one gone, two new
        ([], 4.0),
        (["support"], 5.0),  # back after an absence
    ]
    for apps, scale in steps:
        families = _families(apps, scale)
        text = renderer.render(families)
        assert text == TextRenderer().render(families)  # as a fresh renderer writes them
        assert _samples(text) == _reference(families)
    infinite = ("ragstream_retrieval_mrr", frozenset({("window", "5m"), ("app", "inf")}))
    assert _samples(text)[infinite] == math.inf


def test_it_keeps_the_label_strings_of_the_latest_rendering_only() -> None:
    renderer = TextRenderer()
    for n in range(5):
        renderer.render(_families([f"app{n}-{i}" for i in range(100)], 1.0))
    kept = renderer._pairs  # the strings it holds between scrapes
    assert sum(len(strings) for strings in kept.values()) == 100 + 2 * 100 + 2 * 100 + 2 + 100
    assert all(
        labels[-1].startswith("app4-") or labels[-1] in ("inf", "-inf")
        for strings in kept.values()
        for labels in strings
    )
