"""OpenInference spans to ragstream events (schema v1 dicts), pure functions.

- A `RETRIEVER` span is a retrieval event: its documents
  (`retrieval.documents.N.document.*`, in the order of N) are the results, `document.id`
  the doc id (else a metadata key, else a digest of the content), `document.score` the
  score, the metadata key `doc_time_key` the document's time; `input.value` is the query.
- A `RERANKER` span's output documents (`reranker.output_documents.N.document.*`, in the
  order of N, their ids found as a retriever's are) are what the steps after it were given.
- A `CHAIN`, `AGENT` or `LLM` span gives a request's question and answer (`Candidate`): a
  chain's `input.value` and `output.value` (read by `messages.json_text`: a configured key
  of a JSON object, the last human / AI message of a LangGraph state; None for another
  structure), a model's last user message and last output message with text (reasoning
  parts left out), and the text of all its input messages (the prompt).

Values are passed through as the spans carry them: the events are then decoded like any
other (`ragstream.events`), so a value that does not fit the schema gets the same reason
and detail it would in a JSON event.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from ragstream.traces.conventions import TraceMapping
from ragstream.traces.messages import (
    AI_ROLES,
    USER_ROLES,
    json_text,
    last_message,
    messages_of,
    prompt_text,
)
from ragstream.traces.spans import Span

__all__ = [
    "Candidate",
    "Document",
    "candidate",
    "documents",
    "labels_of",
    "query_id_of",
    "query_of",
    "retrieval_event",
]


@dataclass(frozen=True, slots=True)
class Document:
    """One retrieved document of a RETRIEVER span."""

    doc_id: str
    content: str | None
    score: Any = None
    t_doc: Any = None


@dataclass(frozen=True, slots=True)
class Candidate:
    """A span that may give its trace's answer event."""

    span_id: str
    parent_id: str
    kind: str
    end: float
    question: str | None
    answer: str | None
    """None: a chain's output is a structure without an answer of its own (the trace's last
    LLM answer stands in)."""
    model: str | None
    query_id: str
    labels: dict[str, str]
    prompt: str | None = None
    """An LLM span's input messages, joined: which documents the model was given."""

    def to_json(self) -> list[Any]:
        return [
            self.span_id,
            self.parent_id,
            self.kind,
            self.end,
            self.question,
            self.answer,
            self.model,
            self.query_id,
            self.labels,
            self.prompt,
        ]

    @classmethod
    def from_json(cls, data: Sequence[Any]) -> Candidate:
        span_id, parent_id, kind, end, question, answer, model, query_id, labels = data[:9]
        prompt = data[9] if len(data) > 9 else None
        return cls(
            span_id,
            parent_id,
            kind,
            float(end),
            question,
            answer,
            model,
            query_id,
            dict(labels),
            prompt,
        )


def query_id_of(span: Span, mapping: TraceMapping) -> str:
    """The configured attribute's value, else the trace id."""
    value = None if mapping.query_id is None else _id_text(span.attributes.get(mapping.query_id))
    return span.trace_id if value is None else value


def labels_of(span: Span, sources: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Service labels: each source attribute from the span, else from its resource."""
    out: dict[str, str] = {}
    for key, attribute in sources:
        value = span.attributes.get(attribute)
        if value is None:
            value = span.resource.get(attribute)
        if isinstance(value, str):
            out[key] = value
        elif isinstance(value, bool | int | float):
            out[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def documents(span: Span, mapping: TraceMapping, prefix: str | None = None) -> list[Document]:
    """The span's documents in the order of their index N (the rank), under `prefix`
    (default: a retriever's, `mapping.documents`)."""
    grouped = messages_of(span.attributes, mapping.documents if prefix is None else prefix)
    out: list[Document] = []
    for index, named in sorted(grouped.items()):
        item = {name[9:]: value for name, value in named.items() if name.startswith("document.")}
        if not item:
            continue
        metadata = _metadata(item.get("metadata"))
        content = item.get("content")
        text = content if isinstance(content, str) else None
        t_doc = metadata.get(mapping.doc_time_key) if mapping.doc_time_key else None
        doc_id = _doc_id(item.get("id"), metadata, mapping.doc_id_keys)
        if doc_id is None:
            doc_id = _content_id(text) if text else f"{span.span_id}:{index}"
        out.append(Document(doc_id, text, item.get("score"), t_doc))
    return out


def retrieval_event(
    span: Span, docs: Sequence[Document], mapping: TraceMapping, labels: dict[str, str]
) -> dict[str, Any]:
    """The retrieval event of a RETRIEVER span."""
    results: list[dict[str, Any]] = []
    for doc in docs:
        result: dict[str, Any] = {"doc_id": doc.doc_id}
        if doc.score is not None:
            result["score"] = doc.score
        if doc.t_doc is not None:
            result["t_doc"] = doc.t_doc
        results.append(result)
    event: dict[str, Any] = {
        "type": "retrieval",
        "query_id": query_id_of(span, mapping),
        "ts": span.end,
        "results": results,
    }
    if labels:
        event["labels"] = labels
    query = query_of(span, mapping)
    if query is not None:
        event["query"] = query
    return event


def query_of(span: Span, mapping: TraceMapping) -> str | None:
    """A retriever's query: its input, or the value under a question key of a JSON input
    (Haystack's `{"query": ..., "top_k": ...}`)."""
    return json_text(
        span.attributes,
        mapping.input_value,
        mapping.input_mime_type,
        mapping.question_keys,
        USER_ROLES,
    )


def candidate(span: Span, mapping: TraceMapping, labels: dict[str, str]) -> Candidate | None:
    """The question and answer a CHAIN, AGENT or LLM span gives; None for an LLM span
    without an answer, or a chain without an output."""
    attributes = span.attributes
    question = answer = prompt = None
    if span.kind == "LLM":
        given = messages_of(attributes, mapping.input_messages)
        question = last_message(given, USER_ROLES)
        answer = last_message(messages_of(attributes, mapping.output_messages), None)
        prompt = prompt_text(given) or None
    elif not isinstance(attributes.get(mapping.output_value), str):
        return None
    if question is None:
        question = query_of(span, mapping)
    if answer is None:
        answer = json_text(
            attributes,
            mapping.output_value,
            mapping.output_mime_type,
            mapping.answer_keys,
            AI_ROLES,
        )
        if answer is None and span.kind == "LLM":
            return None
    model = attributes.get(mapping.model_name)
    return Candidate(
        span_id=span.span_id,
        parent_id=span.parent_id,
        kind=span.kind or "",
        end=span.end,
        question=question,
        answer=answer,
        model=model if isinstance(model, str) and model else None,
        query_id=query_id_of(span, mapping),
        labels=labels,
        prompt=prompt,
    )


def _metadata(value: Any) -> Mapping[str, Any]:
    """A document's metadata: a JSON object as a string (OpenInference), or a map."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            data = msgspec.json.decode(value)
        except msgspec.DecodeError:
            return {}
        if isinstance(data, dict):
            return data
    return {}


def _doc_id(value: Any, metadata: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    for candidate_id in (value, *(metadata.get(key) for key in keys)):
        text = _id_text(candidate_id)
        if text is not None:
            return text
    return None


def _id_text(value: Any) -> str | None:
    """An id attribute as text: a non-empty string, or an integer; None otherwise."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _content_id(text: str) -> str:
    """A stable id for a document that has none: the same chunk gets the same id."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
