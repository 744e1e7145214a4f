"""Exposition: names, labels and values at scrape time, and the HTTP endpoints."""

from __future__ import annotations

import json

import aiohttp
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import choose_encoder
from prometheus_client.parser import text_string_to_metric_families

from ragstream.events import Message
from ragstream.exporter.collector import EngineCollector
from ragstream.exporter.http import Health, MetricsServer
from ragstream.exporter.text import TextRenderer
from ragstream.pipeline.engine import Engine
from tests.exporter.test_text_renderer import ACCEPTS, assert_written_as_prometheus_client
from tests.support import defaults
from tests.support.defaults import engine_config

T0 = 1_767_225_600.0
WALL = T0 + 30.0


def _engine(**overrides: object) -> Engine:
    config = engine_config(
        cutoffs=(1, 3),
        half_lives=(3600.0,),
        windows=(60.0, 3600.0),
        clock="wall",
        label_keys=("app",),
        max_label_values=2,
        **overrides,
    )
    return Engine(config, wall=lambda: WALL)


def _retrieval(
    qid: str, app: str, docs: list[tuple[str, float | None]], **extra: object
) -> Message:
    event = {
        "type": "retrieval",
        "query_id": qid,
        "ts": T0,
        "labels": {"app": app},
        "results": [{"doc_id": d, "rel": r, "t_doc": T0 - 3600.0} for d, r in docs],
        **extra,
    }
    return Message(json.dumps(event).encode())


def _samples(registry: CollectorRegistry) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = generate_latest(registry).decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def _key(name: str, **labels: str) -> tuple[str, frozenset[tuple[str, str]]]:
    return name, frozenset(labels.items())


def test_metric_names_follow_the_contract() -> None:
    layout = defaults.row_layout(cutoffs=(5, 10), half_lives=(3600.0,))

    def named(name: str) -> tuple[str, int | None]:  # the gauge after `ragstream_`, its `k`
        column = layout.column(name)
        return column.gauge, column.k

    assert named("rr") == ("retrieval_mrr", None)
    assert named("ndcg@10") == ("retrieval_ndcg", 10)
    assert named("precision_decayed@5|3600") == ("retrieval_precision_decayed", 5)
    assert named("rr_decayed|3600") == ("retrieval_mrr_decayed", None)
    assert named("doc_age_seconds@5") == ("retrieval_doc_age_seconds", 5)


def test_windowed_gauges_histograms_and_health_at_scrape_time() -> None:
    engine = _engine()
    engine.apply(
        [
            _retrieval("q1", "support", [("a", 0), ("b", 1), ("c", None)]),
            _retrieval("q2", "support", [("a", 1), ("b", 0)]),
            _retrieval("q3", "search", [("x", None)]),
            _retrieval("q4", "docs", [("y", None)]),
            _retrieval("q5", "billing", [("z", None)]),  # third value: collapses to other
            Message(b"{oops"),
        ]
    )
    now = [WALL]
    registry = CollectorRegistry()
    registry.register(EngineCollector(engine, clock=lambda: now[0]))
    s = _samples(registry)
    assert s[_key("ragstream_retrieval_mrr", app="support", window="1m")] == pytest.approx(0.75)
    assert s[_key("ragstream_retrieval_precision", app="support", window="1m", k="1")] == 0.5
    assert s[_key("ragstream_window_queries", app="support", window="1m", kind="all")] == 2
    assert s[_key("ragstream_window_queries", app="search", window="1m", kind="labeled")] == 0
    assert _key("ragstream_retrieval_mrr", app="search", window="1m") not in s  # no labels yet
    assert s[_key("ragstream_window_queries", app="other", window="1h", kind="all")] == 2
    assert s[_key("ragstream_label_values_collapsed_total", key="app", partition="0")] == 2
    # the documents are an hour old at ts, and 30 s more at the scrape
    age = s[_key("ragstream_retrieval_doc_age_seconds", app="support", window="1m", k="1")]
    assert age == pytest.approx(3630.0)
    # q1: first relevant at rank 2, q2 at rank 1; every document is one half-life old at ts
    # (weight 1/2) and 30 s older at the scrape
    mrr_decayed = _key(
        "ragstream_retrieval_mrr_decayed", app="support", window="1h", half_life="1h"
    )
    before = s[mrr_decayed]
    assert before == pytest.approx(0.5 * 0.75 * 2 ** (-30 / 3600), rel=1e-9)
    now[0] = WALL + 3600.0  # the windows are read at the later wall clock: decays by half
    assert _samples(registry)[mrr_decayed] == pytest.approx(before / 2, rel=1e-9)
    ndcg_decayed = _key(
        "ragstream_retrieval_ndcg_decayed", app="support", window="1h", half_life="1h", k="3"
    )
    assert ndcg_decayed in s
    assert (
        s[_key("ragstream_events_total", type="retrieval", outcome="processed", partition="0")] == 5
    )
    assert s[_key("ragstream_invalid_events_total", reason="bad_json", partition="0")] == 1
    assert s[_key("ragstream_open_queries")] == 5
    assert (
        s[
            _key(
                "ragstream_build_info",
                version=__import__("ragstream").__version__,
                python=__import__("platform").python_version(),
            )
        ]
        == 1
    )


def test_final_queries_fill_the_histograms() -> None:
    engine = _engine(label_ttl=0.0)
    engine.apply([_retrieval("q1", "support", [("a", 0), ("b", 1)])])
    engine.apply([_retrieval("q2", "support", [("a", 1)], ts=T0 + 1.0)])
    engine.finish()
    registry = CollectorRegistry()
    registry.register(EngineCollector(engine, clock=lambda: WALL))
    s = _samples(registry)
    assert s[_key("ragstream_query_rr_count", app="support")] == 2
    assert s[_key("ragstream_query_rr_sum", app="support")] == pytest.approx(1.5)
    assert s[_key("ragstream_query_rr_bucket", app="support", le="0.5")] == 1
    assert s[_key("ragstream_query_rr_bucket", app="support", le="0.45")] == 0
    assert s[_key("ragstream_query_rr_bucket", app="support", le="+Inf")] == 2
    assert s[_key("ragstream_query_ndcg_bucket", app="support", le="+Inf", k="3")] == 2


async def test_http_endpoints_and_content_negotiation() -> None:
    engine = _engine()
    engine.apply([_retrieval("q1", "support", [("a", 1)])])
    registry = CollectorRegistry()
    registry.register(EngineCollector(engine, clock=lambda: WALL))
    ready = [Health(False, "no partitions assigned")]
    collector = EngineCollector(engine, clock=lambda: WALL)
    server = MetricsServer(collector.families, host="127.0.0.1", port=0, ready=lambda: ready[0])
    async with server, aiohttp.ClientSession() as http:
        for accept in ACCEPTS:
            async with http.get(server.url + "/metrics", headers={"Accept": accept}) as response:
                assert response.status == 200
                # what prometheus_client answers for the same families, byte for byte
                body, content_type = await response.read(), response.headers["Content-Type"]
                encoder, expected_type = choose_encoder(accept)
                assert (body, content_type) == (encoder(registry), expected_type), accept
        async with http.get(server.url + "/metrics") as response:
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            text = await response.text()
            assert 'ragstream_retrieval_mrr{app="support",window="1m"} 1.0' in text
            assert 'ragstream_invalid_events_total{partition="0",reason="bad_json"} 0.0' in text
        headers = {"Accept": "application/openmetrics-text; version=1.0.0"}
        async with http.get(server.url + "/metrics", headers=headers) as response:
            assert response.headers["Content-Type"].startswith("application/openmetrics-text")
            text = await response.text()
            assert text.endswith("# EOF\n")
            assert "# TYPE ragstream_invalid_events counter\n" in text
        async with http.get(server.url + "/healthz") as response:
            assert response.status == 200
        async with http.get(server.url + "/readyz") as response:
            assert response.status == 503
            assert "no partitions assigned" in await response.text()
        ready[0] = Health(True, "ready")
        async with http.get(server.url + "/readyz") as response:
            assert response.status == 200


def test_the_engines_families_are_written_as_prometheus_client_writes_them() -> None:
    engine = _engine(label_ttl=0.0)
    engine.apply(
        [
            _retrieval("q1", 'sup"port\\x', [("a", 0), ("b", 1), ("c", 2)]),
            _retrieval("q2", "search", [("a", 1)], ts=T0 + 1.0),
            _retrieval("q3", "search", [("z", None)], ts=T0 + 2.0),
        ]
    )
    engine.finish()  # fills the histograms too
    engine.apply([_retrieval("q4", "search", [("a", 3), ("b", 1)], ts=T0 + 3.0)])
    families = EngineCollector(engine, clock=lambda: WALL).families()
    assert {f.kind for f in families} == {"gauge", "counter", "histogram"}
    assert sum(len(f.rows) + len(f.histograms) for f in families) > 100
    assert_written_as_prometheus_client(TextRenderer(), families)


def test_a_scrape_counts_once_either_way() -> None:
    collector = EngineCollector(_engine(), clock=lambda: WALL)
    registry = CollectorRegistry()
    registry.register(collector)
    generate_latest(registry)
    collector.families()
    assert collector.scrapes == 2
