"""What the trace mapping reads: OpenInference attribute names (the defaults) and the rest of
its configuration, as one frozen record (`TraceMapping`) built by the wiring from the
`traces` settings.

The defaults are the names of the OpenInference semantic conventions
(`openinference-semantic-conventions`; a test holds them to that package):
`openinference.span.kind` says what a span is (`RETRIEVER`, `LLM`, `CHAIN`, ...),
`retrieval.documents.N.document.{id,score,content,metadata}` are a retriever's ranked
documents, `input.value` / `output.value` a span's input and output, and
`llm.input_messages.N.message.{role,content}` / `llm.output_messages...` a model's messages,
`reranker.output_documents.N.document.*` the documents a reranker passed on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "ANSWER_KINDS",
    "FORMATS",
    "OTLP_FORMATS",
    "SPAN_KINDS",
    "TraceMapping",
]

FORMATS = ("ragstream", "otlp_proto", "otlp_json")
"""What a topic carries: ragstream events (schema v1), or OpenTelemetry traces as the
Collector's Kafka exporter writes them (its `encoding`: `otlp_proto`, `otlp_json`)."""
OTLP_FORMATS = frozenset(FORMATS[1:])

SPAN_KINDS = (
    "LLM",
    "CHAIN",
    "RETRIEVER",
    "RERANKER",
    "EMBEDDING",
    "TOOL",
    "AGENT",
    "GUARDRAIL",
    "EVALUATOR",
    "PROMPT",
    "DECISION",
    "UNKNOWN",
)
"""OpenInference span kinds: the `kind` label values of the span counter (a span without
the attribute counts as `none`, one with another value as `other`)."""
ANSWER_KINDS = frozenset({"CHAIN", "AGENT", "LLM"})
"""The kinds whose input and output can be a request's question and answer."""


@dataclass(frozen=True, slots=True)
class TraceMapping:
    """How spans become events (docs/opentelemetry.md has the table; the defaults are the
    `traces` settings', from the OpenInference conventions)."""

    span_kind: str
    input_value: str
    input_mime_type: str
    output_value: str
    output_mime_type: str
    documents: str
    """Prefix of a retriever's documents: `<prefix>.N.document.id` (and `.score`,
    `.content`, `.metadata`, a JSON object)."""
    reranked_documents: str
    """Prefix of a reranker's output documents, as `documents`."""
    input_messages: str
    output_messages: str
    model_name: str
    query_id: str | None
    """A span attribute holding the query id; None: the trace id, 32 lowercase
    hex digits. A span without the attribute falls back to its trace id."""
    doc_id_keys: tuple[str, ...]
    """Metadata keys read, in order, for a document without `document.id`."""
    doc_time_key: str | None
    """The metadata key of a document's own time (Unix seconds or RFC 3339), for recency;
    None: documents date from the retrieval."""
    question_keys: tuple[str, ...]
    """Keys read, in order, when a span's input is a JSON object."""
    answer_keys: tuple[str, ...]
    """Keys read, in order, when a span's output is a JSON object."""
    labels: tuple[tuple[str, str], ...]
    """Event label key -> the span attribute (else resource attribute) it is read from. A
    configured label key not listed here is read from the attribute of the same name."""
    wait: float
    """Seconds a trace stays open past the latest end time of its spans (on the engine's
    clock), when its root span has not closed it."""
    max_open: int
    """Open traces kept per partition; beyond it the oldest closes early."""
    max_message_bytes: int
    """Largest OTLP message read (the Collector's `producer.max_message_bytes` defaults to
    1 MB)."""

    def __post_init__(self) -> None:
        if self.wait < 0:
            raise ValueError("wait must be >= 0")
        if self.max_open < 1 or self.max_message_bytes < 1:
            raise ValueError("max_open and max_message_bytes must be >= 1")

    def label_sources(self, keys: Sequence[str]) -> tuple[tuple[str, str], ...]:
        """(label key, attribute) for each configured label key (`labels.keys`)."""
        mapped = dict(self.labels)
        return tuple((key, mapped.get(key, key)) for key in keys)
