"""Spans made with the OpenTelemetry SDK directly (the attributes an instrumentation sets),
read through the Collector's formats: the mapping's rules one by one, bad input, late and
early spans, the bounds. docs/opentelemetry.md has the rules."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import openinference.semconv.trace as oi
import pytest
from opentelemetry import context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Span as OtelSpan

from ragstream.events import DECODE_REASONS, Message
from ragstream.pipeline.engine import BatchReport, Engine
from ragstream.traces import TraceMapping
from tests.support import defaults
from tests.support.defaults import engine_config
from tests.traces._rag import CollectorFormat
from tests.traces._traced import span_counts, trace_counts

T = 1_790_000_000.0  # in the past: later times would be clamped to the wall clock
TOPIC = "spans"
LABELS = (("env", "deployment.environment"), ("service", "service.name"))


class App:
    """A tracer whose spans are exported in the Collector's formats."""

    def __init__(self) -> None:
        self.exporter = CollectorFormat()
        provider = TracerProvider(
            resource=Resource.create({"service.name": "qa", "deployment.environment": "prod"})
        )
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer("test")
        self.clock = T

    @contextmanager
    def span(
        self, name: str, attributes: Mapping[str, Any], *, root: bool = False
    ) -> Iterator[OtelSpan]:

        self.clock += 1.0
        ctx = context.Context() if root else None
        with self.tracer.start_as_current_span(
            name,
            context=ctx,
            attributes=dict(attributes),
            start_time=int(self.clock * 1e9),
            end_on_exit=False,
        ) as span:
            yield span
            self.clock += 1.0
            span.end(end_time=int(self.clock * 1e9))

    def messages(self, encoding: str = "otlp_proto") -> list[Message]:
        """One message per span, in the order they ended; the exports are taken."""
        out = [
            Message(value, 0, i, TOPIC, key)
            for i, (key, value) in enumerate(self.exporter.messages(encoding))
        ]
        self.exporter.take()
        return out


def _retriever(docs: Sequence[Mapping[str, Any]], query: str = "q?") -> dict[str, Any]:
    attributes: dict[str, Any] = {"openinference.span.kind": "RETRIEVER", "input.value": query}
    for i, doc in enumerate(docs):
        for key, value in doc.items():
            attributes[f"retrieval.documents.{i}.document.{key}"] = value
    return attributes


def _llm(question: str, answer: str, model: str | None = "gpt-x") -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": "Use the context.",
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": question,
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": answer,
    }
    if model:
        attributes["llm.model_name"] = model
    return attributes


def _chain(question: str, answer: str) -> dict[str, Any]:
    return {"openinference.span.kind": "CHAIN", "input.value": question, "output.value": answer}


def _engine(mapping: TraceMapping | None = None, encoding: str = "otlp_proto") -> Engine:
    return Engine(
        engine_config(
            clock="event",
            label_keys=("service", "env"),
            formats=((TOPIC, encoding), ("events", "ragstream")),
            traces=mapping
            or defaults.trace_mapping(
                labels=(("env", "deployment.environment"), ("service", "service.name"))
            ),
        )
    )


def _apply(engine: Engine, messages: Sequence[Message]) -> BatchReport:
    return engine.apply(messages)


def test_an_llm_span_without_chains_answers_with_the_retrieval_query() -> None:
    """No chain instrumentation: the root is an HTTP server span (no OpenInference kind),
    the answer comes from the LLM span, its question is the retrieval's query."""
    app = App()
    with app.span("POST /ask", {"http.method": "POST"}, root=True):
        docs: list[dict[str, Any]] = [
            {
                "id": "a",
                "score": 0.9,
                "content": "A text",
                "metadata": json.dumps({"t_doc": T - 9}),
            },
            {"score": 0.5, "content": "B text", "metadata": json.dumps({"doc_id": "b"})},
            {"content": "C text"},
            {"id": 7},
        ]
        with app.span("retrieve", _retriever(docs, query="what is A?")):
            pass
        with app.span("generate", _llm("Context: ... Question: what is A?", "A is a letter.")):
            pass
    engine = _engine()
    report = _apply(engine, app.messages())
    assert report.invalid == []
    [(_, answer)] = report.answers
    assert answer.question == "what is A?"
    assert answer.answer == "A is a letter."
    assert answer.model == "gpt-x"
    assert answer.labels == {"service": "qa", "env": "prod"}
    digest = str(next(c["doc_id"] for c in answer.contexts if c["text"] == "C text"))
    assert digest.startswith("sha256:")
    assert [c["doc_id"] for c in answer.contexts] == ["a", "b", digest]
    [query] = [q for join in engine.joins.values() for q in [join.get(answer.query_id)] if q]
    assert query.doc_ids == ("a", "b", digest, "7")
    assert query.doc_times[0] == T - 9  # from the metadata key t_doc
    assert len(answer.query_id) == 32
    assert engine.events[("retrieval", "processed")] == 1


def test_a_chain_with_json_input_and_output_reads_the_configured_keys() -> None:
    app = App()
    chain = {
        "openinference.span.kind": "CHAIN",
        "input.value": json.dumps({"question": "why?", "chat_history": []}),
        "input.mime_type": "application/json",
        "output.value": json.dumps({"answer": "because", "context": ["..."]}),
        "output.mime_type": "application/json",
        "session.id": "s-1",
    }
    with app.span("qa", chain, root=True):
        with app.span("retrieve", _retriever([{"id": "d", "content": "text"}], query="why")):
            pass
        with app.span("llm", _llm("why?", "because (raw)")):
            pass
    engine = _engine(defaults.trace_mapping(query_id="session.id"))
    [(_, answer)] = _apply(engine, app.messages()).answers
    assert (answer.question, answer.answer) == ("why?", "because")
    assert answer.query_id == "s-1"  # the chain span carries the attribute
    assert answer.model == "gpt-x"  # from the LLM span below it
    # the retriever span lacks the attribute: its query is the trace id
    assert engine.open_queries == 1
    assert engine.find_query("s-1") is None


def test_other_span_kinds_are_counted_and_skipped() -> None:
    app = App()
    with app.span("agent", {"openinference.span.kind": "TOOL"}, root=True):
        with app.span("embed", {"openinference.span.kind": "EMBEDDING"}):
            pass
        with app.span("odd", {"openinference.span.kind": "TELEPORTER"}):
            pass
        with app.span("plain", {}):
            pass
    engine = _engine()
    report = _apply(engine, app.messages())
    assert report.invalid == []
    assert report.answers == []
    assert engine.traces is not None
    counts = span_counts(engine)
    assert counts == {
        ("TOOL", "skipped"): 1,
        ("EMBEDDING", "skipped"): 1,
        ("other", "skipped"): 1,
        ("none", "skipped"): 1,
    }
    assert sum(engine.events.values()) == 0


def test_a_trace_without_a_retriever_gives_no_answer_and_late_spans_are_counted() -> None:
    app = App()
    with (
        app.span("chat", _chain("hi", "hello"), root=True) as root,
        app.span("llm", _llm("hi", "hello")),
    ):
        pass
    trace_id = f"{root.get_span_context().trace_id:032x}"
    engine = _engine(defaults.trace_mapping(wait=10.0))
    assert _apply(engine, app.messages()).answers == []
    assert engine.traces is not None
    assert engine.open_traces == 1
    # time passes on the event clock (another trace's retrieval event)
    later = {"type": "retrieval", "query_id": "other", "ts": T + 60, "results": []}
    _apply(engine, [Message(json.dumps(later).encode(), 0, 0, "events")])
    assert _apply(engine, []).answers == []
    assert engine.open_traces == 0
    assert trace_counts(engine)["no_retrieval"] == 1
    # its retriever, late: still its retrieval event; an LLM span after that: late
    with app.span("retrieve", _retriever([{"id": "x"}])) as span:
        pass
    del span
    messages = app.messages()
    rewritten = _retrace(messages, trace_id)
    _apply(engine, rewritten)
    assert engine.find_query(trace_id) is not None
    counts = span_counts(engine)
    assert counts[("RETRIEVER", "retrieval")] == 1


def _retrace(messages: Sequence[Message], trace_id: str) -> list[Message]:
    """The messages with their spans moved into the trace `trace_id` (the protobuf's own
    classes rewrite them)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    out = []
    for m in messages:
        request = ExportTraceServiceRequest.FromString(m.value)
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    span.trace_id = bytes.fromhex(trace_id)
        out.append(Message(request.SerializeToString(), m.partition, m.offset, m.topic, m.key))
    return out


def test_the_oldest_open_trace_closes_early_beyond_max_open() -> None:
    app = App()
    for i in range(3):  # the retriever span is the root: each trace closes at once
        with (
            app.span(f"r{i}", _retriever([{"id": f"d{i}", "content": "t"}]), root=True),
            app.span("llm", _llm("q", f"a{i}")),
        ):
            pass
    engine = _engine(defaults.trace_mapping(max_open=2))
    assert len(_apply(engine, app.messages()).answers) == 3
    for i in range(3):
        with app.span("chain", {"openinference.span.kind": "CHAIN"}, root=True):
            with app.span(f"r{i}", _retriever([{"id": f"d{i}", "content": "t"}])):
                pass
            with app.span("llm", _llm("q", f"b{i}")):
                pass
    messages = list(app.messages())
    open_only = [m for i, m in enumerate(messages) if i % 3 != 2]  # the roots held back
    report = _apply(engine, open_only)
    assert [a.answer for _, a in report.answers] == ["b0"]  # closed early, answered all the same
    assert engine.traces is not None
    assert trace_counts(engine)["evicted"] == 1
    assert engine.open_traces == 2


def _open_trace(app: App, answer: str, partition: int) -> list[Message]:
    """The spans of a trace with a retrieval and an answer, without its root (the trace
    stays open until it has waited), on ``partition``."""
    with app.span("chain", {"openinference.span.kind": "CHAIN"}, root=True):
        with app.span("r", _retriever([{"id": "d", "content": "t"}])):
            pass
        with app.span("llm", _llm("q", answer)):
            pass
    held = [m for i, m in enumerate(app.messages()) if i != 2]  # the root ends last
    return [Message(m.value, partition, m.offset, m.topic, m.key) for m in held]


def _closing(engine: Engine) -> list[tuple[int, str]]:
    """(partition, answer) of the traces that close once the event clock has moved on."""
    later = {"type": "retrieval", "query_id": "later", "ts": T + 60, "results": []}
    _apply(engine, [Message(json.dumps(later).encode(), 2, 0, "events")])
    return [(p, a.answer) for p, a in _apply(engine, []).answers]


def test_traces_close_partition_by_partition_in_the_order_their_traces_began() -> None:
    """The order answers close in is seen by the event clock, so it is kept: the order in
    which the partitions' traces began, and an adopted partition's begin when adopted."""
    app = App()
    first, second = _open_trace(app, "a1", 1), _open_trace(app, "a0", 0)
    engine = _engine(defaults.trace_mapping(wait=10.0))
    _apply(engine, first)
    _apply(engine, second)
    assert _closing(engine) == [(1, "a1"), (0, "a0")]
    source = _engine(defaults.trace_mapping(wait=10.0))
    _apply(source, first)
    _apply(source, second)
    moved = json.loads(json.dumps(source.export_partitions({1})[1]))
    source.drop_partitions({1})
    source.adopt_partition(moved)
    assert engine.open_traces == 0
    assert source.open_traces == 2
    assert _closing(source) == [(0, "a0"), (1, "a1")]


def test_malformed_messages_are_counted_by_reason_and_the_rest_is_read() -> None:
    app = App()
    with (
        app.span("chain", _chain("q", "a"), root=True),
        app.span(
            "r",
            _retriever([{"id": "d", "content": "t", "metadata": json.dumps({"t_doc": T * 1000})}]),
        ),
    ):
        pass
    good = app.messages()
    valid = good[0].value
    junk = {
        b"": "empty",
        os.urandom(64): "bad_protobuf",
        valid[: len(valid) // 2]: "bad_protobuf",
        b'{"type": "feedback", "query_id": "q", "ts": 1}': "bad_protobuf",
        b"\x08\x01": "schema",  # a valid protobuf, but no resource spans
        b"\x00" * (5 * 1024 * 1024): "too_large",
    }
    engine = _engine()
    batch = [Message(v, 0, 100 + i, TOPIC) for i, v in enumerate(junk)]
    report = _apply(engine, [*batch[:3], *good, *batch[3:]])
    reasons = [error.reason for _, error in report.invalid]
    # the retrieval event's document time is in milliseconds: that event is invalid
    assert sorted(reasons) == sorted([*junk.values(), "bad_timestamp"])
    assert set(reasons) <= set(DECODE_REASONS)
    [(_, answer)] = report.answers  # the answer does not depend on the retrieval event's validity
    assert answer.answer == "a"
    assert engine.events[("unknown", "invalid")] == len(junk) + 1
    assert sum(engine.invalid.values()) == len(junk) + 1


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"{not json", "bad_json"),
        (b"[]", "not_object"),
        (b'{"resourceSpans": 5}', "schema"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}', "schema"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 5}]}]}]}', "schema"),
        (b'{"type": "feedback", "query_id": "q", "ts": 1, "doc_id": "d", "rel": 1}', "schema"),
        (b'{"resourceSpans": []}', "schema"),
        (b'{"x": "\xff"}', "bad_json"),
        (b'{"x": ' + b"[" * 300 + b"]" * 300 + b"}", "bad_json"),
    ],
)
def test_malformed_otlp_json_is_counted_by_reason(value: bytes, reason: str) -> None:
    engine = _engine(encoding="otlp_json")
    report = _apply(engine, [Message(value, 0, 0, TOPIC)])
    assert [error.reason for _, error in report.invalid] == [reason]
    assert engine.invalid == {reason: 1}


def test_otlp_json_reads_what_the_specification_allows() -> None:
    """Enums as names or integers, 64-bit integers as strings or numbers, unknown fields,
    a root without parentSpanId: the same events as the SDK's protobuf encoding."""
    app = App()
    with (
        app.span("chain", _chain("q", "a"), root=True),
        app.span("r", _retriever([{"id": "d", "content": "t", "score": 2}])),
    ):
        pass
    proto = app.exporter.messages("otlp_proto")
    data = [json.loads(v) for _, v in app.exporter.messages("otlp_json")]
    app.exporter.take()
    for request in data:
        request["somethingNew"] = {"x": 1}
        for rs in request["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    span["kind"] = "SPAN_KIND_INTERNAL"
                    span["endTimeUnixNano"] = int(span["endTimeUnixNano"])
                    if not span.get("parentSpanId"):
                        span.pop("parentSpanId", None)
    by_proto = _engine()
    a = _apply(by_proto, [Message(v, 0, i, TOPIC) for i, (_, v) in enumerate(proto)])
    by_json = _engine(encoding="otlp_json")
    b = _apply(by_json, [Message(json.dumps(d).encode(), 0, i, TOPIC) for i, d in enumerate(data)])
    assert b.invalid == []
    assert a.answers == b.answers
    assert len(a.answers) == 1
    held = [e.snapshot()["partitions"] for e in (by_json, by_proto)]
    assert {p: r["windows"] for p, r in held[0].items()} == {
        p: r["windows"] for p, r in held[1].items()
    }


def test_the_defaults_are_the_openinference_conventions() -> None:
    m = defaults.trace_mapping()
    attrs, docs, msgs = oi.SpanAttributes, oi.DocumentAttributes, oi.MessageAttributes
    assert m.span_kind == attrs.OPENINFERENCE_SPAN_KIND
    assert m.input_value == attrs.INPUT_VALUE
    assert m.input_mime_type == attrs.INPUT_MIME_TYPE
    assert m.output_value == attrs.OUTPUT_VALUE
    assert m.output_mime_type == attrs.OUTPUT_MIME_TYPE
    assert m.documents == attrs.RETRIEVAL_DOCUMENTS
    assert m.input_messages == attrs.LLM_INPUT_MESSAGES
    assert m.output_messages == attrs.LLM_OUTPUT_MESSAGES
    assert m.model_name == attrs.LLM_MODEL_NAME
    assert {
        docs.DOCUMENT_ID,
        docs.DOCUMENT_SCORE,
        docs.DOCUMENT_CONTENT,
        docs.DOCUMENT_METADATA,
    } == {"document.id", "document.score", "document.content", "document.metadata"}
    assert (msgs.MESSAGE_ROLE, msgs.MESSAGE_CONTENT) == ("message.role", "message.content")
    kinds = {k.value for k in oi.OpenInferenceSpanKindValues}
    from ragstream.traces import SPAN_KINDS

    assert set(SPAN_KINDS) <= kinds  # the counter's kind label values
