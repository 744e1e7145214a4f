"""A real agent fed a quality drop through a real broker, scraped by a real Prometheus with
exemplar storage: `/api/v1/query_exemplars` returns the final-query histograms' exemplars,
and those of the dropped label set are its queries, the low ones among them after the drop.
Their trace ids are the query ids (trace ids themselves), or, with
`exemplars.trace_id_field`, the values of that field of the retrieval events (query ids that
are no trace ids). The text format 0.0.4 of the same agent carries none."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ragstream.sources.synthetic import LABEL_SETS, SyntheticConfig, SyntheticTraffic
from tests.support import KafkaBroker, produce_records
from tests.support.agent_process import AgentProcess, wait_ready
from tests.support.prometheus import PrometheusServer

pytestmark = [pytest.mark.prometheus, pytest.mark.kafka, pytest.mark.slow]

HISTORY = 900.0
"""Seconds of traffic before now; the quality of the first label set drops halfway."""
DROP = HISTORY / 2
DROPPED = LABEL_SETS[0]["app"]
SEED = 36
FIELD_PREFIX = f"{0xFEED:016x}"
"""The first half of the trace ids in the events' `trace_id` field (the index follows)."""

Scraped = tuple[PrometheusServer, AgentProcess, SyntheticTraffic, float]


def _traffic(start: float, trace_ids: bool = True) -> SyntheticTraffic:
    return SyntheticTraffic(
        SyntheticConfig(
            seed=SEED,
            start=start,
            rate=5.0,
            drift_at=DROP,
            probe_share=0.6,
            feedback_delay=(0.5, 4.0),
            trace_ids=trace_ids,
        )
    )


def _with_trace_field(value: bytes) -> bytes:
    """A retrieval event with a `trace_id` field of its own (`FIELD_PREFIX` and the query's
    index + 1, as 32 hex digits); other events as they are."""
    event = json.loads(value)
    if event["type"] != "retrieval":
        return value
    index = int(event["query_id"].rsplit("-", 1)[1])
    event["trace_id"] = f"{FIELD_PREFIX}{index + 1:016x}"
    return json.dumps(event).encode()


def _get(agent: AgentProcess, accept: str) -> str:
    request = urllib.request.Request(agent.url + "/metrics", headers={"Accept": accept})
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(response.read().decode())


def _scrape(
    kafka_broker: KafkaBroker, tmp_path_factory: pytest.TempPathFactory, field: bool
) -> Iterator[Scraped]:
    """An agent fed the traffic of the last `HISTORY` seconds and scraped by Prometheus
    (`field`: query ids that are no trace ids, the trace ids in the events' `trace_id`
    field, which the agent is told to read)."""
    topic = f"exemplars-{'field-' if field else ''}{int(time.time() * 1000)}"
    asyncio.run(kafka_broker.create_topic(topic, 1))
    now = time.time()
    traffic = _traffic(now - HISTORY, trace_ids=not field)
    events = list(itertools.takewhile(lambda e: e.arrival < now, traffic.stream()))
    values = [_with_trace_field(e.value) if field else e.value for e in events]
    env = {
        "RAGSTREAM_KAFKA__BOOTSTRAP_SERVERS": kafka_broker.bootstrap_servers,
        "RAGSTREAM_KAFKA__TOPICS": f'["{topic}"]',
    }
    if field:
        env["RAGSTREAM_EXEMPLARS__TRACE_ID_FIELD"] = "trace_id"
    args = ["run", "--group-id", topic]
    settings = {
        "http.host": "127.0.0.1",
        "kafka.auto_offset_reset": "earliest",
        "labels.keys": "[app]",
        "join.label_ttl": "5s",
    }
    for key, value in settings.items():
        args += ["--set", f"{key}={value}"]
    log: Path = tmp_path_factory.mktemp("agent") / "agent.log"
    with AgentProcess(args, log, env=env) as agent:
        wait_ready([agent])
        asyncio.run(
            produce_records(
                kafka_broker.bootstrap_servers,
                topic,
                [(e.key, value) for e, value in zip(events, values, strict=True)],
            )
        )
        with PrometheusServer([agent.target], features=["exemplar-storage"]) as prom:
            applied = 'sum(ragstream_events_total{outcome=~"processed|late|duplicate"})'
            prom.wait_for(applied, 120, until=lambda r: float(r[0]["value"][1]) >= len(events))
            time.sleep(3)  # scrapes after the last event: the newest exemplars stored
            yield prom, agent, traffic, now


@pytest.fixture(scope="module")
def scraped(
    kafka_broker: KafkaBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Scraped]:
    yield from _scrape(kafka_broker, tmp_path_factory, field=False)


@pytest.fixture(scope="module")
def scraped_field(
    kafka_broker: KafkaBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Scraped]:
    yield from _scrape(kafka_broker, tmp_path_factory, field=True)


def _query(trace_id: str, traffic: SyntheticTraffic) -> dict[str, Any]:
    """The retrieval event of the query with this trace id as its id (its index is in the
    id)."""
    index = int(trace_id[16:], 16) - 1
    assert trace_id == f"{SEED:016x}{index + 1:016x}"
    retrieval = traffic.query_events(index)[0].event
    assert retrieval["type"] == "retrieval"
    assert retrieval["query_id"] == trace_id
    return retrieval


def _query_of_field(trace_id: str, traffic: SyntheticTraffic) -> dict[str, Any]:
    """The retrieval event whose `trace_id` field is this trace id (its query id is none)."""
    index = int(trace_id[16:], 16) - 1
    assert trace_id == f"{FIELD_PREFIX}{index + 1:016x}"
    retrieval = traffic.query_events(index)[0].event
    assert retrieval["type"] == "retrieval"
    assert retrieval["query_id"] == f"q-{SEED}-{index}"
    return retrieval


def test_prometheus_returns_the_dropped_label_sets_low_queries_as_exemplars(
    scraped: Scraped,
) -> None:
    _check_exemplars(scraped, _query)


def test_with_a_trace_field_the_exemplars_trace_ids_are_its_values(
    scraped_field: Scraped,
) -> None:
    _check_exemplars(scraped_field, _query_of_field)


def _check_exemplars(
    scraped: Scraped, query_of: Callable[[str, SyntheticTraffic], dict[str, Any]]
) -> None:
    """The dropped label set's exemplars are its queries (`query_of` finds a trace id's),
    the low ones after the drop; every label set has some."""
    prom, _, traffic, now = scraped
    start = now - HISTORY
    params = [
        ("query", f'ragstream_query_ndcg_bucket{{app="{DROPPED}"}}'),
        ("start", f"{start - 60:.3f}"),
        ("end", f"{time.time():.3f}"),
    ]
    found = prom.api("/api/v1/query_exemplars", params)
    exemplars = [(s["seriesLabels"], e) for s in found for e in s["exemplars"]]
    assert exemplars, found
    for series, exemplar in exemplars:
        assert series["app"] == DROPPED
        retrieval = query_of(exemplar["labels"]["trace_id"], traffic)
        assert retrieval["labels"]["app"] == DROPPED  # a query of the dropped label set
        assert float(exemplar["timestamp"]) == pytest.approx(retrieval["ts"], abs=1e-3)
        assert float(exemplar["value"]) <= float(series["le"])  # in its bucket
    # what the latest scrape exposed, per bucket: the newest stored; the low ones are
    # queries after the drop (earlier scrapes may have stored older ones)
    newest = [max(s["exemplars"], key=lambda e: float(e["timestamp"])) for s in found]
    low = [query_of(e["labels"]["trace_id"], traffic) for e in newest if float(e["value"]) <= 0.3]
    assert low, newest
    assert all(r["ts"] >= start + DROP for r in low), low

    others = prom.api(
        "/api/v1/query_exemplars", [("query", "ragstream_query_ndcg_bucket"), *params[1:]]
    )
    apps = {s["seriesLabels"]["app"] for s in others if s["exemplars"]}
    assert apps == {ls["app"] for ls in LABEL_SETS}


def test_the_text_format_carries_no_exemplar_and_openmetrics_does(
    scraped: Scraped,
) -> None:
    _, agent, _, _ = scraped
    text = _get(agent, "text/plain;version=0.0.4")
    openmetrics = _get(agent, "application/openmetrics-text;version=1.0.0")
    assert "ragstream_query_ndcg_bucket{" in text
    assert " # {" not in text
    assert ' # {trace_id="' in openmetrics
