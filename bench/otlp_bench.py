"""Benchmark of the trace source: OTLP messages through the engine against the same requests
sent as ragstream events, in the same run.

Usage: `python -m bench.otlp_bench [--requests N] [--repeat R] [--batch B] [--docs K]`
(or `scripts/bench.sh otlp`).

Each request is traced as the LangChain app of the trace tests traces it (tests/traces):
seven spans -- the root chain, a parallel step with the retriever (K documents with content
and metadata) and a pass-through, the prompt, the chat model (its messages, the contexts in
the system message), the output parser -- with the attributes and sizes OpenInference
gives them, built with the OpenTelemetry protobuf classes. The Collector's Kafka exporter
with `partition_traces_by_id` writes one `ExportTraceServiceRequest` per trace: that is a
message here, in `otlp_proto` and in `otlp_json` (OTLP/JSON, as protobuf's JSON mapping
writes it, ids in hex). The same requests as ragstream events are a retrieval event and an
answer event each (the events the traces map to). Each path is a fresh engine applying
batches of B messages (`Engine.apply`: decoding, the trace join, scoring, windows); rates are
per second of this process's CPU time (`time.process_time`), best of R runs, with the load
average alongside.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import time
from collections.abc import Sequence
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from ragstream.events import Message
from ragstream.pipeline.engine import Engine, EngineConfig
from tests.support.defaults import engine_config

__all__ = ["main"]

T0 = 1_700_000_000.0
TOPIC = "otlp_spans"
SPANS_PER_REQUEST = 7


def _value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=str(value))


def _span(
    trace_id: bytes,
    span_id: bytes,
    parent: bytes,
    name: str,
    start: float,
    end: float,
    attributes: dict[str, Any],
) -> Span:
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=int(start * 1e9),
        end_time_unix_nano=int(end * 1e9),
        attributes=[KeyValue(key=k, value=_value(v)) for k, v in attributes.items()],
    )


def request(i: int, rng: random.Random, docs: int) -> tuple[bytes, list[dict[str, Any]]]:
    """One traced request as an `otlp_proto` message, and the events it maps to."""
    trace_id = rng.randbytes(16)
    ids = [rng.randbytes(8) for _ in range(SPANS_PER_REQUEST)]
    root, parallel, retriever, passthrough, prompt, llm, parser = ids
    t = T0 + i * 0.05
    question = f"how do I configure feature {i % 97} for account {i}?"
    answer = f"To configure feature {i % 97}, open Settings, then Features, then {i}. " * 3
    chosen = rng.sample(range(5000), docs)
    documents = [
        {
            "doc_id": f"kb-{d}",
            "t_doc": T0 - 3600.0 * (d % 500),
            "score": round(1.0 - 0.05 * rank, 3),
            "text": f"Article {d}: " + "the quick brown fox jumps over the lazy dog. " * 7,
        }
        for rank, d in enumerate(chosen)
    ]
    as_json = json.dumps(
        {
            "documents": [
                {
                    "id": None,
                    "metadata": {"doc_id": d["doc_id"], "t_doc": d["t_doc"]},
                    "page_content": d["text"],
                    "type": "Document",
                }
                for d in documents
            ]
        }
    )
    retrieved: dict[str, Any] = {
        "openinference.span.kind": "RETRIEVER",
        "input.value": question,
        "output.value": as_json,
        "output.mime_type": "application/json",
    }
    for n, d in enumerate(documents):
        retrieved[f"retrieval.documents.{n}.document.content"] = d["text"]
        retrieved[f"retrieval.documents.{n}.document.score"] = d["score"]
        retrieved[f"retrieval.documents.{n}.document.metadata"] = json.dumps(
            {"doc_id": d["doc_id"], "t_doc": d["t_doc"]}
        )
    context = "Answer from these articles: " + " ".join(str(d["text"]) for d in documents)
    chain = "CHAIN"
    spans = [
        _span(trace_id, retriever, parallel, "VectorStoreRetriever", t + 0.01, t + 0.02, retrieved),
        _span(
            trace_id,
            passthrough,
            parallel,
            "RunnablePassthrough",
            t + 0.01,
            t + 0.011,
            {"openinference.span.kind": chain, "input.value": question, "output.value": question},
        ),
        _span(
            trace_id,
            parallel,
            root,
            "RunnableParallel<context,question>",
            t,
            t + 0.03,
            {
                "openinference.span.kind": chain,
                "input.value": question,
                "output.value": as_json,
                "output.mime_type": "application/json",
            },
        ),
        _span(
            trace_id,
            prompt,
            root,
            "ChatPromptTemplate",
            t + 0.03,
            t + 0.031,
            {
                "openinference.span.kind": "PROMPT",
                "input.value": as_json,
                "input.mime_type": "application/json",
                "output.value": context,
                "llm.prompt_template.template": "Answer from these articles: {context}",
            },
        ),
        _span(
            trace_id,
            llm,
            root,
            "ChatOpenAI",
            t + 0.031,
            t + 0.9,
            {
                "openinference.span.kind": "LLM",
                "input.value": context,
                "llm.input_messages.0.message.role": "system",
                "llm.input_messages.0.message.content": context,
                "llm.input_messages.1.message.role": "user",
                "llm.input_messages.1.message.content": question,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": answer,
                "output.value": answer,
                "llm.model_name": "gpt-4o-mini",
                "llm.token_count.prompt": 812,
                "llm.token_count.completion": 64,
            },
        ),
        _span(
            trace_id,
            parser,
            root,
            "StrOutputParser",
            t + 0.9,
            t + 0.901,
            {"openinference.span.kind": chain, "input.value": answer, "output.value": answer},
        ),
        _span(
            trace_id,
            root,
            b"",
            "RunnableSequence",
            t,
            t + 0.902,
            {"openinference.span.kind": chain, "input.value": question, "output.value": answer},
        ),
    ]
    message = ExportTraceServiceRequest()
    resource_spans = message.resource_spans.add()
    for key, value in (
        ("service.name", "support-bot"),
        ("telemetry.sdk.language", "python"),
        ("telemetry.sdk.name", "opentelemetry"),
        ("telemetry.sdk.version", "1.45"),
    ):
        resource_spans.resource.attributes.add(key=key, value=_value(value))
    scope = resource_spans.scope_spans.add()
    scope.scope.name = "openinference.instrumentation.langchain"
    scope.spans.extend(spans)
    query_id = trace_id.hex()
    labels = {"service": "support-bot"}
    events = [
        {
            "type": "retrieval",
            "query_id": query_id,
            "ts": t + 0.02,
            "labels": labels,
            "query": question,
            "results": [
                {"doc_id": d["doc_id"], "score": d["score"], "t_doc": d["t_doc"]} for d in documents
            ],
        },
        {
            "type": "answer",
            "query_id": query_id,
            "ts": t + 0.902,
            "labels": labels,
            "question": question,
            "answer": answer,
            "model": "gpt-4o-mini",
            "contexts": [{"doc_id": d["doc_id"], "text": d["text"]} for d in documents],
        },
    ]
    return message.SerializeToString(), events


def otlp_json(value: bytes) -> bytes:
    """The same request in OTLP/JSON: protobuf's JSON mapping with the ids in hex."""
    data = json_format.MessageToDict(ExportTraceServiceRequest.FromString(value))
    for resource_spans in data["resourceSpans"]:
        for scope in resource_spans["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(data, separators=(",", ":")).encode()


def _config(fmt: str | None) -> EngineConfig:
    formats = () if fmt is None else ((TOPIC, fmt),)
    return engine_config(clock="event", label_keys=("service",), formats=formats)


def _run(fmt: str | None, messages: Sequence[Message], batch: int) -> tuple[float, Engine]:
    engine = Engine(_config(fmt))
    start = time.process_time()
    for i in range(0, len(messages), batch):
        report = engine.apply(messages[i : i + batch])
        assert not report.invalid, report.invalid[:1]
    engine.finish()
    return time.process_time() - start, engine


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batch", type=int, default=250, help="trace messages per batch")
    parser.add_argument("--docs", type=int, default=5, help="documents per retrieval")
    args = parser.parse_args(argv)
    rng = random.Random(14)
    built = [request(i, rng, args.docs) for i in range(args.requests)]
    proto = [Message(v, 0, i, TOPIC, None) for i, (v, _) in enumerate(built)]
    as_json = [Message(otlp_json(m.value), 0, m.offset, TOPIC, None) for m in proto]
    events = [
        Message(json.dumps(e, separators=(",", ":")).encode(), 0, 2 * i + j, "events", None)
        for i, (_, pair) in enumerate(built)
        for j, e in enumerate(pair)
    ]
    paths: list[tuple[str, str | None, list[Message], int]] = [
        ("ragstream events (JSON)", None, events, 2 * args.batch),
        ("otlp_proto", "otlp_proto", proto, args.batch),
        ("otlp_json", "otlp_json", as_json, args.batch),
    ]
    n = args.requests
    print(
        f"{n} requests, {SPANS_PER_REQUEST} spans and {args.docs} documents each; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(f"{'path':<26}{'bytes/request':>14}{'requests/s':>12}{'spans/s':>10}{'events/s':>10}")
    reference: dict[tuple[str, str], int] | None = None
    for name, fmt, messages, batch in paths:
        runs = [_run(fmt, messages, batch) for _ in range(args.repeat)]
        seconds = min(s for s, _ in runs)
        counts = dict(runs[-1][1].events)
        if reference is None:
            reference = counts
        assert counts == reference, (name, counts, reference)  # the same events on every path
        size = sum(len(m.value) for m in messages) / n
        spans = f"{n * SPANS_PER_REQUEST / seconds:>10.0f}" if fmt else f"{'-':>10}"
        print(f"{name:<26}{size:>14.0f}{n / seconds:>12.0f}{spans}{2 * n / seconds:>10.0f}")


if __name__ == "__main__":
    main()
