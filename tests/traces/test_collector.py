"""The real OpenTelemetry Collector between instrumented apps and `ragstream run`.

Three apps of the trace tests, each instrumented by its real OpenInference package, run
their requests: the LangChain chain (`_rag.py`), the LangGraph graph and the Haystack
pipeline (`test_frameworks.py`), whose roots carry structures (the graph's state, a dict
per pipeline component). Their spans go in one export, with the OpenTelemetry SDK's own
OTLP/HTTP exporter, to one Collector (built by `scripts/otelcol.sh`), whose kafka exporters
write them to the real broker, each in one of the ways deployments do (`ROUTES`: encodings,
compression, the partitioner settings of the exporter, metrics and logs on the traces'
topic with `signal_header`). For each route, feedback keyed by the trace id is sent with
`EventProducer` and the partitioner that matches the exporter's; one `ragstream run`
process reads the two topics. It must land each feedback event on its trace's partition,
skip the other signals' records by their header, give the windowed retrieval gauges that
the apps' own events give (an in-process engine on the reference events), and judge every
answer as the judge does on the apps' own answers, questions and contexts (the judgments
topic).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiokafka import ConsumerRecord
from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from prometheus_client.parser import text_string_to_metric_families

from ragstream.config import LabelSettings, Settings, WindowSettings
from ragstream.config.judging import JudgeSettings
from ragstream.events import DecodedAnswer, decode_event
from ragstream.exporter.text import TextRenderer, negotiate
from ragstream.exporter.windowed import build
from ragstream.judging.collector import GENERATION_GAUGES
from ragstream.judging.model import JudgeInput
from ragstream.pipeline.engine import Engine
from ragstream.producer import EventProducer, Partitioner, partition_for
from ragstream.wiring.engine import engine_config
from ragstream.wiring.judging import build_judge
from tests.support import KafkaBroker, read_records
from tests.support.agent_process import AgentProcess
from tests.support.otelcol import Collector, fetch_otelcol, kafka_exporter
from tests.traces._rag import ANSWERS, CollectorFormat, RagApp, Request
from tests.traces._reference import feedback_messages, reference_messages
from tests.traces.test_frameworks import QUESTIONS as FRAMEWORK_QUESTIONS
from tests.traces.test_frameworks import GraphApp, HaystackApp
from tests.traces.test_langchain import QUESTIONS as LANGCHAIN_QUESTIONS

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:Calling .text\\(\\) as a method:DeprecationWarning"),
]

QUESTIONS = [*LANGCHAIN_QUESTIONS, "delete a project", "change the billing plan"]
HAYSTACK_QUESTIONS = [
    "how to invite a colleague",
    "how to delete a project",
    "how to export invoices",
]
"""Questions every article matches a little (BM25 returns only documents with a score)."""
PARTITIONS = 4
SERVICE = {"service": "support-bot"}


@dataclass(frozen=True)
class Route:
    """One kafka exporter of the Collector, and the partitioner feedback must use."""

    encoding: str
    compression: str
    hasher: str | None  # record_partitioner.sticky_key.hasher; None: the exporter's default
    partitioner: Partitioner
    shared: bool = False  # signal_header, with the app's metrics and logs on the same topic


ROUTES = {
    "proto_gzip_sarama": Route("otlp_proto", "gzip", "sarama_compat", "fnv1a"),
    "json_zstd_default": Route("otlp_json", "zstd", None, "fnv1a"),
    "json_shared_murmur2": Route("otlp_json", "none", "murmur2", "murmur2", shared=True),
    "proto_zstd_shared": Route("otlp_proto", "zstd", None, "fnv1a", shared=True),
}
OTHER_SIGNALS = ("metrics", "logs")
"""What a shared topic carries besides traces: one export of each, one record each."""


@dataclass
class Exported:
    """What the apps sent through the Collector, and where the routes' topics are."""

    requests: list[Request]
    spans: list[ReadableSpan]
    topics: dict[str, str]


def _create_topics(broker: KafkaBroker, names: Sequence[str], partitions: int) -> None:
    async def create() -> None:
        for name in names:
            await broker.create_topic(name, partitions)

    asyncio.run(create())  # a sync fixture: no event loop runs here


def _traced(
    exporter: CollectorFormat, ask: Callable[[str], Request], questions: Sequence[str]
) -> tuple[list[Request], list[ReadableSpan]]:
    """The app's requests and the spans it traced for them."""
    exporter.take()
    requests = [ask(q) for q in questions]
    return requests, exporter.take()


def _langchain() -> tuple[list[Request], list[ReadableSpan]]:
    app = RagApp(ANSWERS)
    try:
        return _traced(app.exporter, app.ask, QUESTIONS)
    finally:
        app.close()


def _langgraph() -> tuple[list[Request], list[ReadableSpan]]:
    app = GraphApp()
    try:
        return _traced(app.traced.exporter, app.ask, FRAMEWORK_QUESTIONS)
    finally:
        app.close()


def _haystack() -> tuple[list[Request], list[ReadableSpan]]:
    app = HaystackApp()
    try:
        return _traced(app.traced.exporter, app.request, HAYSTACK_QUESTIONS)
    finally:
        app.close()


SHAPES = {"RunnableSequence": _langchain, "LangGraph": _langgraph, "Pipeline.run": _haystack}
"""Each app by the name of its root span (one instrumentation of LangChain at a time)."""


def _structured(spans: Sequence[ReadableSpan]) -> bool:
    """Whether every root's input and output are JSON objects, not text."""
    roots = [s.attributes or {} for s in spans if s.parent is None]
    values = [str(a.get(key, "")) for a in roots for key in ("input.value", "output.value")]
    return bool(roots) and all(v.startswith("{") for v in values)


@pytest.fixture(scope="module")
def exported(kafka_broker: KafkaBroker) -> Iterator[Exported]:
    """One Collector with every route; the apps' requests exported to it once."""
    requests: list[Request] = []
    spans: list[ReadableSpan] = []
    for root, run in SHAPES.items():
        asked, traced = run()
        assert {s.name for s in traced if s.parent is None} == {root}
        assert _structured(traced) == (root != "RunnableSequence")  # the shapes this is about
        requests += asked
        spans += traced

    stamp = f"{time.time_ns():x}"
    topics = {name: f"otelcol-{name}-{stamp}" for name in ROUTES}
    _create_topics(kafka_broker, list(topics.values()), PARTITIONS)
    brokers = kafka_broker.bootstrap_servers
    exporters = {
        f"kafka/{name}": kafka_exporter(
            brokers,
            topics[name],
            encoding=route.encoding,
            compression=route.compression,
            hasher=route.hasher,
            signal_header=route.shared,
            metrics_topic=topics[name] if route.shared else None,
            logs_topic=topics[name] if route.shared else None,
        )
        for name, route in ROUTES.items()
    }
    shared = [f"kafka/{name}" for name, route in ROUTES.items() if route.shared]
    pipelines = {"traces": list(exporters), "metrics": shared, "logs": shared}
    with Collector(fetch_otelcol(), exporters, pipelines) as collector:
        # the SDK's own OTLP/HTTP exporters, as an app configured with
        # OTEL_EXPORTER_OTLP_ENDPOINT sends them: every app's spans in one export
        span_exporter = OTLPSpanExporter(endpoint=f"{collector.endpoint}/v1/traces")
        assert span_exporter.export(spans) == SpanExportResult.SUCCESS, collector.log_tail()
        span_exporter.shutdown()  # type: ignore[no-untyped-call]
        _export_metrics(f"{collector.endpoint}/v1/metrics")
        _export_logs(f"{collector.endpoint}/v1/logs")
        yield Exported(requests, spans, topics)


def _resource() -> Resource:
    return Resource.create({"service.name": "support-bot"})


def _export_metrics(endpoint: str) -> None:
    """The app's own metrics (a counter per question asked), through the Collector."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader], resource=_resource())
    counter = provider.get_meter("support-bot").create_counter("questions")
    for question in QUESTIONS:
        counter.add(1, {"topic": question.split()[-1]})
    data = reader.get_metrics_data()
    assert data is not None
    exporter = OTLPMetricExporter(endpoint=endpoint)
    assert exporter.export(data) == MetricExportResult.SUCCESS
    exporter.shutdown()
    provider.shutdown()


def _export_logs(endpoint: str) -> None:
    """The app's own logs (a record per question asked), through the Collector."""
    kept = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    provider = LoggerProvider(resource=_resource())
    provider.add_log_record_processor(SimpleLogRecordProcessor(kept))
    logger = provider.get_logger("support-bot")
    for question in QUESTIONS:
        logger.emit(LogRecord(body=f"asked: {question}", attributes={"topic": question}))
    exporter = OTLPLogExporter(endpoint=endpoint)
    assert exporter.export(kept.get_finished_logs()) == LogRecordExportResult.SUCCESS
    exporter.shutdown()  # type: ignore[no-untyped-call]
    provider.shutdown()


@pytest.mark.parametrize("name", list(ROUTES))
async def test_the_collectors_topic_gives_the_apps_events_metrics_and_judgments(
    kafka_broker: KafkaBroker, exported: Exported, name: str, tmp_path: Path
) -> None:
    route, topic = ROUTES[name], exported.topics[name]
    bootstrap = kafka_broker.bootstrap_servers
    feedback_topic, judgments = f"{topic}-feedback", f"{topic}-judgments"
    await kafka_broker.create_topic(feedback_topic, PARTITIONS)
    await kafka_broker.create_topic(judgments, 1)

    # Where the Collector put each trace: one partition a trace, the one its hasher gives
    # (with signal_header, the one export of metrics and of logs are one record each)
    others = len(OTHER_SIGNALS) * route.shared
    records = await read_records(bootstrap, topic, len(exported.requests) + others)
    traces = [r for r in records if _signal(r) in ("traces", None)]
    skipped = len(records) - len(traces)
    where = {r.key: r.partition for r in traces}
    assert len(traces) == len(where) == len(exported.requests)  # one message per trace
    assert where == {
        r.trace_id.encode(): partition_for(r.trace_id.encode(), PARTITIONS, route.partitioner)
        for r in exported.requests
    }
    if route.shared:
        assert sorted(_signal(r) or "" for r in records if r not in traces) == sorted(OTHER_SIGNALS)
    assert skipped == others

    # Feedback keyed by the trace id lands on its trace's partition
    feedback = [
        decode_event(m.value)
        for m in feedback_messages(exported.requests, exported.spans, feedback_topic)
    ]
    async with EventProducer(
        feedback_topic, bootstrap_servers=bootstrap, partitioner=route.partitioner
    ) as producer:
        sent = [await producer.send(event) for event in feedback]
    assert [m.partition for m in sent] == [where[e.query_id.encode()] for e in feedback]
    other: Partitioner = "murmur2" if route.partitioner != "murmur2" else "fnv1a"
    assert any(  # the other hasher would have split some of them from their trace
        partition_for(e.query_id.encode(), PARTITIONS, other) != where[e.query_id.encode()]
        for e in feedback
    )

    # The agent reads the two topics
    config = tmp_path / "ragstream.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "kafka": {
                    "bootstrap_servers": bootstrap,
                    "topics": [topic, feedback_topic],
                    "formats": {topic: route.encoding},
                    "group_id": f"{topic}-agent",
                    "auto_offset_reset": "earliest",
                },
                "windows": {"clock": "event"},
                "labels": {"keys": ["service"]},
                "drift": {"enabled": False},
                "state": {"enabled": False},
                "judge": {
                    "sampling": {"rate": 1.0, "max_per_second": None},
                    "publish_topic": judgments,
                },
                "http": {"host": "127.0.0.1"},
            }
        )
    )
    n = len(exported.requests)
    agent = AgentProcess(["run", "--config", str(config)], tmp_path / "agent.log")
    await asyncio.to_thread(agent.start)
    try:
        body = await _until(agent, n, len(feedback), skipped)
        published = await read_records(bootstrap, judgments, n, within=30)
    finally:
        await asyncio.to_thread(agent.stop)

    families = {f.name: f for f in text_string_to_metric_families(body)}
    assert _total(families, "ragstream_traces", outcome="answered") == n
    assert _total(families, "ragstream_events", type="retrieval", outcome="processed") == n
    assert _total(families, "ragstream_events", type="answer", outcome="processed") == n
    assert _total(families, "ragstream_events", type="feedback", outcome="processed") == len(
        feedback
    )
    assert _total(families, "ragstream_labels", outcome="applied") == len(feedback)
    assert _total(families, "ragstream_invalid_events") == 0
    # the metrics and logs records of a shared topic are skipped by their header, not read
    # as traces
    assert _total(families, "ragstream_trace_records_skipped") == skipped
    for signal in OTHER_SIGNALS:
        reason = f"signal_{signal}"
        assert _total(families, "ragstream_trace_records_skipped", reason=reason) == route.shared

    # The windowed retrieval gauges are those of the app's own events
    reference = Engine(
        engine_config(
            Settings(windows=WindowSettings(clock="event"), labels=LabelSettings(keys=["service"])),
            drift=False,
        )
    )
    reference_events = reference_messages(exported.requests, exported.spans)
    reference.apply(reference_events)
    reference.apply(feedback_messages(exported.requests, exported.spans))
    text = TextRenderer().render(build(reference, reference.now()), negotiate("")).decode()
    expected = _retrieval_gauges(text)
    assert expected  # labelled queries in every window
    assert _retrieval_gauges(body) == pytest.approx(expected, rel=1e-9, nan_ok=True)
    judged = _total(families, "ragstream_generation_judged_queries", window="1h")
    assert judged == n

    # Every answer judged as the judge judges the apps' own answers (question, answer and
    # contexts), at the answer's time, on the documents the model saw
    judge = build_judge(JudgeSettings())
    inputs = [
        JudgeInput.from_event(a)
        for a in map(decode_event, (m.value for m in reference_events))
        if isinstance(a, DecodedAnswer)
    ]
    by_query = {item.query_id: (item, (await judge.judge(item)).as_dict()) for item in inputs}
    await judge.close()
    got = {json.loads(r.value)["query_id"]: json.loads(r.value) for r in published}
    assert got.keys() == by_query.keys() == {r.trace_id for r in exported.requests}
    for query_id, (item, scores) in by_query.items():
        record = got[query_id]
        assert {k: record[k] for k in scores} == scores
        assert (record["ts"], record["doc_ids"]) == (item.ts, list(item.doc_ids))
        assert record["labels"] == SERVICE
    # and the generation gauges are the means of those judgments
    means = 0
    for column, gauge in GENERATION_GAUGES.items():
        values = [float(j[column]) for j in got.values() if j[column] is not None]
        exposed = _total(families, gauge, window="24h", **SERVICE)
        assert exposed == pytest.approx(sum(values) / len(values) if values else 0.0, rel=1e-9)
        means += bool(values)
    assert means >= 2


def _signal(record: ConsumerRecord[bytes, bytes]) -> str | None:
    return next((v.decode() for k, v in record.headers if k == "otelcol.signal"), None)


async def _until(
    agent: AgentProcess, answers: int, labels: int, skipped: int, within: float = 90.0
) -> str:
    """The agent's /metrics once it has applied every label, judged every answer and
    skipped every record of another signal."""
    deadline = time.monotonic() + within
    body = ""
    while time.monotonic() < deadline:
        assert agent.running, f"the agent exited:\n{agent.log.read_text()[-3000:]}"
        status, body = await asyncio.to_thread(agent.get, "/metrics")
        if status == 200:
            families = {f.name: f for f in text_string_to_metric_families(body)}
            if (
                _total(families, "ragstream_labels", outcome="applied") >= labels
                and _total(families, "ragstream_judge_requests", outcome="ok") >= answers
                and _total(families, "ragstream_trace_records_skipped") >= skipped
            ):
                return body
        await asyncio.sleep(0.3)
    raise AssertionError(f"the agent did not get there in {within} s:\n{body[-3000:]}")


def _total(families: dict[str, Any], family: str, **labels: str) -> float:
    """The sum of a family's samples (counters: their `_total`) with these label values."""
    if family not in families:
        return 0.0
    return sum(
        float(s.value)
        for s in families[family].samples
        if not s.name.endswith("_created") and all(s.labels.get(k) == v for k, v in labels.items())
    )


def _retrieval_gauges(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every `ragstream_retrieval_*` sample of an exposition, by name and labels."""
    return {
        (s.name, tuple(sorted((k, v) for k, v in s.labels.items() if k != "partition"))): s.value
        for family in text_string_to_metric_families(text)
        if family.name.startswith("ragstream_retrieval_")
        for s in family.samples
    }
