"""A small retrieval-augmented app, instrumented as real apps are, for the trace tests.

A LangChain chain (an in-memory vector store with LangChain's deterministic fake
embeddings, a prompt, LangChain's fake chat model, an output parser; no network) is
instrumented by the real `openinference-instrumentation-langchain` and traced by the real
OpenTelemetry SDK. `CollectorFormat` is the SDK span exporter that writes what the
Collector's Kafka exporter writes: each export split by trace (`partition_traces_by_id`),
one `ExportTraceServiceRequest` per trace from the SDK's own OTLP encoders (protobuf for
`otlp_proto`, OTLP/JSON for `otlp_json`), keyed by the trace id in hex.

`RagApp.ask` returns what the app itself knows of the request (`Request`): the documents
its vector store returns for the question (asked again without the chain, so without
spans), the answer the chain returned, and the trace id of the request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans as encode_json
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans as encode_proto
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

__all__ = ["ANSWERS", "CORPUS", "CollectorFormat", "RagApp", "Request", "encoders", "per_trace"]

T0 = 1_700_000_000.0
CORPUS = [
    Document(
        page_content=f"Article {i}: how to {topic}.",
        metadata={"doc_id": f"kb-{i}", "t_doc": T0 + 3600.0 * i},
    )
    for i, topic in enumerate(
        [
            "reset a password",
            "change an email address",
            "close an account",
            "export invoices",
            "enable two-factor login",
            "invite a colleague",
            "change the billing plan",
            "delete a project",
        ]
    )
]

ANSWERS = [f"Answer {i}: see the article." for i in range(50)]
"""The fake chat model's replies, in turn."""

Encoder = Callable[[Sequence[ReadableSpan]], bytes]


def encoders() -> dict[str, Encoder]:
    """The Collector's trace encodings, each from the SDK's own encoder."""
    return {
        "otlp_proto": lambda spans: encode_proto(spans).SerializeToString(),
        "otlp_json": lambda spans: encode_json(spans).to_json().encode(),
    }


def per_trace(spans: Sequence[ReadableSpan], encoding: str) -> list[tuple[bytes, bytes]]:
    """`(key, value)` messages as the Collector's exporter writes one export with
    `partition_traces_by_id`: one request per trace, keyed by the trace id in hex."""
    encode = encoders()[encoding]
    traces: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        assert span.context is not None
        traces.setdefault(span.context.trace_id, []).append(span)
    return [(f"{tid:032x}".encode(), encode(group)) for tid, group in traces.items()]


@dataclass
class CollectorFormat(SpanExporter):
    """Keeps every exported span; `messages` gives them in the Collector's format."""

    spans: list[ReadableSpan] = field(default_factory=list)
    exports: list[list[ReadableSpan]] = field(default_factory=list)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        self.exports.append(list(spans))
        return SpanExportResult.SUCCESS

    def messages(self, encoding: str) -> list[tuple[bytes, bytes]]:
        """One message per export and trace (with SimpleSpanProcessor: one per span)."""
        return [m for export in self.exports for m in per_trace(export, encoding)]

    def take(self) -> list[ReadableSpan]:
        spans, self.spans, self.exports = self.spans, [], []
        return spans


@dataclass(frozen=True)
class Request:
    """One request as the app knows it."""

    trace_id: str
    question: str
    documents: list[Document]
    answer: str


class RagApp:
    """The instrumented chain; `close()` removes the instrumentation."""

    def __init__(self, answers: Sequence[str], k: int = 4) -> None:
        self.exporter = CollectorFormat()
        provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.provider = provider
        self.instrumentor = LangChainInstrumentor()
        self.instrumentor.instrument(tracer_provider=provider)
        self.store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
        self.store.add_documents(CORPUS)
        self.k = k
        retriever = self.store.as_retriever(search_kwargs={"k": k})
        prompt = ChatPromptTemplate.from_messages(
            [("system", "Answer from these articles: {context}"), ("human", "{question}")]
        )
        model = FakeListChatModel(responses=list(answers))
        self.chain: Runnable[str, str] = (
            {"context": retriever, "question": RunnablePassthrough()}
            | prompt
            | model
            | StrOutputParser()
        )

    def ask(self, question: str) -> Request:
        before = len(self.exporter.spans)
        answer = self.chain.invoke(question)
        roots = [s for s in self.exporter.spans[before:] if s.parent is None]
        assert len(roots) == 1
        assert roots[0].context is not None
        documents = self.store.similarity_search(question, k=self.k)
        return Request(f"{roots[0].context.trace_id:032x}", question, documents, answer)

    def close(self) -> None:
        self.instrumentor.uninstrument()
        self.provider.shutdown()
