"""A cardinality attack: 100 000 distinct values of an exported label key, and 100 000
distinct query ids beyond the open-query cap. Series, memory and the scrape stay bounded;
what is cut is counted."""

from __future__ import annotations

import json
import time

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from ragstream.events import Message
from ragstream.exporter.collector import EngineCollector
from ragstream.pipeline.engine import Engine
from tests.support.defaults import engine_config

T0 = 1_767_225_600.0
N = 100_000


def _retrieval(i: int, app: str, labeled: bool = True) -> bytes:
    doc = {"doc_id": f"d{i}", "rel": 1} if labeled else {"doc_id": f"d{i}"}
    event = {
        "type": "retrieval",
        "query_id": f"q{i}",
        "ts": T0 + i * 0.001,
        "labels": {"app": app, "index": "v1"},
        "results": [doc, {"doc_id": "x"}],
    }
    return json.dumps(event).encode()


@pytest.mark.slow
def test_100k_label_values_collapse_to_other_and_the_scrape_stays_small() -> None:
    config = engine_config(
        label_keys=("app", "index"), max_label_values=50, clock="event", label_ttl=60.0
    )
    engine = Engine(config, wall=lambda: T0 + 1000)
    for start in range(0, N, 5000):
        batch = [
            Message(_retrieval(i, f"app-{i}"), partition=i % 3) for i in range(start, start + 5000)
        ]
        engine.apply(batch)
    labelsets = engine.store.labelsets()
    assert len(labelsets) == 51  # 50 values, then `other`
    assert ("other", "v1") in labelsets
    assert len(engine.store) <= 3 * 51  # partitions x label sets
    assert engine.labelsets.collapsed["app"] == N - 50
    assert engine.events[("retrieval", "processed")] == N  # nothing dropped

    registry = CollectorRegistry()
    registry.register(EngineCollector(engine))
    started = time.perf_counter()
    text = generate_latest(registry).decode()
    seconds = time.perf_counter() - started
    collapsed = [
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith('ragstream_label_values_collapsed_total{key="app",partition=')
    ]
    assert len(collapsed) == 3  # one series per partition
    assert sum(collapsed) == N - 50 == sum(engine.collapsed.values())
    apps = {line.split('app="')[1].split('"')[0] for line in text.splitlines() if 'app="' in line}
    assert len(apps) == 51
    # every series of the label sets, well within a scrape interval (15 s); generous
    # bound on a shared machine: about 0.1 s measured
    assert seconds < 5.0
    other = engine.store.read(engine.now(), ("other", "v1"), exact=True)
    assert other.queries[0, engine.spec.names.index("24h")] == N - 50


@pytest.mark.slow
def test_100k_query_ids_beyond_the_open_cap_are_finalized_early_and_counted() -> None:
    config = engine_config(clock="event", max_open=1000, label_ttl=3600.0)
    engine = Engine(config, wall=lambda: T0 + 1000)
    for start in range(0, N, 5000):
        engine.apply([Message(_retrieval(i, "a")) for i in range(start, start + 5000)])
    assert engine.open_queries == 1000
    counters = engine.join_counters()
    assert counters["open_evicted"] == N - 1000
    assert counters["finalized"] == N - 1000
    final = engine.final[()]
    assert final.rows == N - 1000  # every evicted query's final values are kept
    window = engine.store.read(engine.now(), (), exact=True)
    assert window.queries[0, engine.spec.names.index("1h")] == N  # and every query counts
