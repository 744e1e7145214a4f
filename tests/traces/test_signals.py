"""A topic the Collector's Kafka exporter shares between signals (`signal_header: true`):
metric and log records, marked by their `otelcol.signal` header, are skipped and counted
by reason -- not invalid, not dead-lettered -- and the traces around them give their
events. Metrics and logs are the SDK's own, encoded by the SDK's own OTLP encoders."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.structs import ConsumerRecord
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.json.common._log_encoder import encode_logs as logs_json
from opentelemetry.exporter.otlp.json.common.metrics_encoder import (
    encode_metrics as metrics_json,
)
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs as logs_proto
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import (
    encode_metrics as metrics_proto,
)
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from prometheus_client import CollectorRegistry, generate_latest

from ragstream.events import Record
from ragstream.exporter.collector import EngineCollector
from ragstream.pipeline.engine import Engine
from ragstream.pipeline.runner import Runner
from ragstream.sources.kafka import KafkaSource
from tests.support import KafkaBroker, TopicFactory
from tests.support.defaults import kafka_source_config
from tests.traces._rag import RagApp
from tests.traces._reference import assert_same_state, engine_config, reference_messages
from tests.traces._traced import skip_counts

pytestmark = pytest.mark.filterwarnings("ignore:Calling .text\\(\\) as a method:DeprecationWarning")

QUESTIONS = ["how do I reset my password", "change my email address", "where are my invoices"]
Headers = list[tuple[str, bytes]]


def _metrics_and_logs(encoding: str) -> tuple[bytes, bytes]:
    """One export of the SDK's metrics and one of its logs, as the Collector writes them."""
    reader = InMemoryMetricReader()
    meter = MeterProvider(metric_readers=[reader]).get_meter("support-bot")
    meter.create_counter("requests").add(3, {"route": "/ask"})
    meter.create_histogram("latency", unit="s").record(0.25)
    metrics = reader.get_metrics_data()
    assert metrics is not None
    exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    provider.get_logger("support-bot").emit(
        severity_number=SeverityNumber.WARN,
        severity_text="WARN",
        body="slow answer",
        attributes={"query_id": "q-1"},
    )
    logs = exporter.get_finished_logs()
    assert logs
    if encoding == "otlp_json":
        return metrics_json(metrics).to_json().encode(), logs_json(logs).to_json().encode()
    return metrics_proto(metrics).SerializeToString(), logs_proto(logs).SerializeToString()


def _record(
    topic: str, offset: int, key: bytes | None, value: bytes, headers: Headers
) -> ConsumerRecord[bytes, bytes]:
    """A record as aiokafka hands it over, headers and all."""
    return ConsumerRecord(
        topic, 0, offset, 0, 0, key, value, None, len(key or b""), len(value), headers
    )


def _shared_topic(
    app: RagApp, encoding: str, make: Callable[..., object]
) -> tuple[list[object], list[bytes]]:
    """The app's trace messages with `otelcol.signal: traces`, a metrics and a logs record
    after each: what one topic carries with `signal_header: true`."""
    metrics, logs = _metrics_and_logs(encoding)
    out: list[object] = []
    values: list[bytes] = []
    for key, value in app.exporter.messages(encoding):
        out.append(make(key, value, [("otelcol.signal", b"traces")]))
        out.append(make(None, metrics, [("otelcol.signal", b"metrics")]))
        out.append(make(None, logs, [("otelcol.signal", b"logs")]))
        values.append(value)
    return out, values


@pytest.mark.parametrize("encoding", ["otlp_proto", "otlp_json"])
def test_other_signals_on_a_trace_topic_are_skipped(rag_app: RagApp, encoding: str) -> None:
    rag_app.exporter.take()
    requests = [rag_app.ask(q) for q in QUESTIONS]
    spans = list(rag_app.exporter.spans)
    offsets = iter(range(10_000))

    def make(key: bytes | None, value: bytes, headers: Headers) -> object:
        return _record("otlp_spans", next(offsets), key, value, headers)

    records, _ = _shared_topic(rag_app, encoding, make)
    odd = _record("otlp_spans", 99_999, None, b"\x00", [("otelcol.signal", b"profiles")])
    rag_app.exporter.take()
    ours = Engine(engine_config("otlp_spans", encoding))
    batch: Sequence[Record] = [*records, odd]  # type: ignore[list-item]
    report = ours.apply(batch)
    assert report.invalid == []
    assert ours.invalid == {}
    assert ours.traces is not None
    n = len(records) // 3
    assert skip_counts(ours) == {
        "signal_metrics": n,
        "signal_logs": n,
        "signal_profiles": 1,
        "signal_other": 0,
    }
    reference = Engine(engine_config())
    reference.apply(reference_messages(requests, spans))
    assert_same_state(ours, reference)
    registry = CollectorRegistry()
    registry.register(EngineCollector(ours, clock=lambda: ours.now()))
    text = generate_latest(registry).decode()
    line = f'ragstream_trace_records_skipped_total{{partition="0",reason="signal_metrics"}} {n}.0'
    assert line in text


def test_without_the_header_a_metrics_record_is_invalid(rag_app: RagApp) -> None:
    """The header decides, not a guess at the bytes: with no header, or `traces`, a record
    is read as traces."""
    metrics, _ = _metrics_and_logs("otlp_proto")
    ours = Engine(engine_config("otlp_spans"))
    report = ours.apply(
        [
            _record("otlp_spans", 0, None, metrics, []),
            _record("otlp_spans", 1, None, metrics, [("otelcol.signal", b"traces")]),
        ]
    )
    assert len(report.invalid) == 2
    assert ours.traces is not None
    assert sum(skip_counts(ours).values()) == 0


async def test_a_shared_topic_through_kafka(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory, rag_app: RagApp
) -> None:
    topic = await kafka_topic_factory(2)
    rag_app.exporter.take()
    requests = [rag_app.ask(q) for q in QUESTIONS]
    spans = list(rag_app.exporter.spans)
    metrics, logs = _metrics_and_logs("otlp_proto")
    producer = AIOKafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers, linger_ms=5)
    await producer.start()
    try:
        for key, value in rag_app.exporter.messages("otlp_proto"):
            await producer.send(topic, value, key=key, headers=[("otelcol.signal", b"traces")])
            await producer.send(topic, metrics, key=key, headers=[("otelcol.signal", b"metrics")])
            await producer.send(topic, logs, key=key, headers=[("otelcol.signal", b"logs")])
        await producer.flush()
    finally:
        await producer.stop()
    source = KafkaSource(
        kafka_source_config(
            bootstrap_servers=kafka_broker.bootstrap_servers,
            topics=(topic,),
            group_id="g-signals",
            auto_offset_reset="earliest",
            max_batch=20,
            poll_timeout=0.2,
        )
    )
    await source.start()
    engine = Engine(engine_config(topic))
    runner = Runner(engine, source)
    task = asyncio.create_task(runner.run())
    n = 7 * len(QUESTIONS)  # one message a span
    try:
        deadline = time.monotonic() + 60
        while True:
            assert engine.traces is not None
            if skip_counts(engine)["signal_logs"] == n and engine.open_queries == 3:
                break
            assert not task.done(), "the runner ended early"
            assert time.monotonic() < deadline, skip_counts(engine)
            await asyncio.sleep(0.05)
        runner.stop()
        await asyncio.wait_for(task, 10)
    finally:
        await source.stop()
    assert engine.invalid == {}
    assert skip_counts(engine)["signal_metrics"] == n
    reference = Engine(engine_config())
    reference.apply(reference_messages(requests, spans))
    assert_same_state(engine, reference)
