"""A service whose request comes from another service: its entry span (a SERVER span) has
a parent, in the caller's process. It is the trace's root here, so the answer goes out with
it instead of waiting `traces.wait`. The LangChain app of `_rag.py` runs inside the SDK's
SERVER span, started with the parent context a `traceparent` header carries."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ragstream.events import Message
from tests.traces._rag import RagApp
from tests.traces._traced import TOPIC, answers, engine

pytestmark = pytest.mark.filterwarnings("ignore:Calling .text\\(\\) as a method:DeprecationWarning")

CALLER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
"""The caller's trace and span: W3C Trace Context, as its HTTP client sent it."""


def _serve(app: RagApp, question: str, *, remote: bool = True) -> str:
    """Handle one request as an instrumented web framework does; returns the answer."""
    tracer = app.provider.get_tracer("web")
    if remote:
        parent = TraceContextTextMapPropagator().extract({"traceparent": CALLER})
    else:  # a parent in this process: a span of the same app around the handler
        outer = tracer.start_span("worker")
        parent = trace.set_span_in_context(outer)
    with tracer.start_as_current_span("POST /ask", context=parent, kind=SpanKind.SERVER):
        answer = app.chain.invoke(question)
    if not remote:
        outer.end()
    return answer


def _messages(app: RagApp, encoding: str = "otlp_proto") -> list[Message]:
    out = [Message(v, 0, i, TOPIC, k) for i, (k, v) in enumerate(app.exporter.messages(encoding))]
    app.exporter.take()
    return out


def _without_flags(messages: Sequence[Message]) -> list[Message]:
    """The messages as an SDK that does not set span flags writes them (protobuf's own
    classes rewrite them)."""
    out = []
    for m in messages:
        request = ExportTraceServiceRequest.FromString(m.value)
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    span.flags = 0
        out.append(Message(request.SerializeToString(), m.partition, m.offset, m.topic, m.key))
    return out


@pytest.mark.parametrize("encoding", ["otlp_proto", "otlp_json"])
def test_a_server_span_with_a_remote_parent_closes_its_trace(
    rag_app: RagApp, encoding: str
) -> None:
    rag_app.exporter.take()
    said = _serve(rag_app, "how do I reset my password")
    spans = list(rag_app.exporter.spans)
    [server] = [s for s in spans if s.name == "POST /ask"]
    assert server.parent is not None
    assert server.parent.is_remote
    assert server.context is not None
    assert f"{server.context.trace_id:032x}" == CALLER[3:35]
    ours = engine(encoding)
    [answer] = answers(ours, [_messages(rag_app, encoding)])  # with the batch, no waiting
    assert answer.answer == said
    assert answer.question == "how do I reset my password"
    assert answer.query_id == CALLER[3:35]
    assert ours.traces is not None
    assert ours.open_traces == 0


def test_without_span_flags_a_server_span_with_a_parent_is_a_root(rag_app: RagApp) -> None:
    """Older SDKs do not say whether a parent is remote: the SERVER kind does."""
    rag_app.exporter.take()
    said = _serve(rag_app, "close my account please")
    [answer] = answers(engine(), [_without_flags(_messages(rag_app))])
    assert answer.answer == said


def test_a_span_whose_parent_is_local_waits_for_the_root(rag_app: RagApp) -> None:
    """A SERVER span under a span of its own process is not a root: the trace closes with
    that span, its real root, after the handler."""
    rag_app.exporter.take()
    said = _serve(rag_app, "where are my invoices", remote=False)
    messages = _messages(rag_app)
    ours = engine()
    assert answers(ours, [messages[:-1]]) == []  # the handler's spans: still open
    assert ours.traces is not None
    assert ours.open_traces == 1
    [answer] = answers(ours, [messages[-1:]])  # the worker span, the root
    assert answer.answer == said


def test_an_internal_span_with_a_remote_parent_is_a_root(rag_app: RagApp) -> None:
    """An app without a web framework's instrumentation: the chain itself continues the
    caller's trace, and its flags say the parent is remote."""
    rag_app.exporter.take()
    parent = TraceContextTextMapPropagator().extract({"traceparent": CALLER})
    token = otel_context.attach(parent)
    try:
        said = rag_app.chain.invoke("invite a colleague to the team")
    finally:
        otel_context.detach(token)
    [answer] = answers(engine(), [_messages(rag_app)])
    assert answer.answer == said


def test_the_rule() -> None:
    from ragstream.traces.spans import HAS_IS_REMOTE, IS_REMOTE, local_root

    parent = "b7ad6b7169203331"
    internal, server = 1, 2
    assert local_root("", 0, internal)
    assert local_root(parent, HAS_IS_REMOTE | IS_REMOTE, internal)
    assert not local_root(parent, HAS_IS_REMOTE, server)  # known local, whatever the kind
    assert local_root(parent, 0, server)  # unknown: the entry span of a service
    assert not local_root(parent, 0, internal)
    assert not local_root(parent, IS_REMOTE, internal)  # the bit means nothing without 0x100
