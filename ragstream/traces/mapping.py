"""OpenInference spans to ragstream events (schema v1 dicts), pure functions.

- A `RETRIEVER` span is a retrieval event: its documents
  (`retrieval.documents.N.document.*`, in the order of N) are the results, `document.id`
  the doc id (else a metadata key, else a digest of the content), `document.score` the
  score, the metadata key `doc_time_key` the document's time; `input.value` is the query.
- A `CHAIN`, `AGENT` or `LLM` span gives a request's question and answer (`Candidate`): a
  chain's `input.value` and `output.value` (the value under a question / answer key when
  it is a JSON object), a model's last user message and last output message.

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
from ragstream.traces.spans import Span

__all__ = [
    "Candidate",
    "Document",
    "candidate",
    "documents",
    "labels_of",
    "query_id_of",
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
    answer: str
    model: str | None
    query_id: str
    labels: dict[str, str]

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
        ]

    @classmethod
    def from_json(cls, data: Sequence[Any]) -> Candidate:
        span_id, parent_id, kind, end, question, answer, model, query_id, labels = data
        return cls(
            span_id, parent_id, kind, float(end), question, answer, model, query_id, dict(labels)
        )


def query_id_of(span: Span, mapping: TraceMapping) -> str:
    """The configured attribute's value, else the trace id."""
    if mapping.query_id is not None:
        value = span.attributes.get(mapping.query_id)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return span.trace_id


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


def documents(span: Span, mapping: TraceMapping) -> list[Document]:
    """The span's documents in the order of their index N."""
    prefix = mapping.documents + "."
    fields: dict[int, dict[str, Any]] = {}
    for key, value in span.attributes.items():
        if not key.startswith(prefix):
            continue
        number, _, name = key[len(prefix) :].partition(".")
        if not number.isdigit() or not name.startswith("document."):
            continue
        fields.setdefault(int(number), {})[name[9:]] = value
    out: list[Document] = []
    for index in sorted(fields):
        item = fields[index]
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
    query = span.attributes.get(mapping.input_value)
    if isinstance(query, str):
        event["query"] = query
    return event


def candidate(span: Span, mapping: TraceMapping, labels: dict[str, str]) -> Candidate | None:
    """The question and answer a CHAIN, AGENT or LLM span gives; None without an answer."""
    attributes = span.attributes
    question: str | None
    if span.kind == "LLM":
        question = _last_message(attributes, mapping.input_messages, role="user")
        answer = _last_message(attributes, mapping.output_messages, role=None)
        if question is None:
            question = _text(attributes, mapping.input_value, mapping.input_mime_type, ())
        if answer is None:
            answer = _text(attributes, mapping.output_value, mapping.output_mime_type, ())
    else:
        question = _text(
            attributes, mapping.input_value, mapping.input_mime_type, mapping.question_keys
        )
        answer = _text(
            attributes, mapping.output_value, mapping.output_mime_type, mapping.answer_keys
        )
    if answer is None:
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
    )


def _text(
    attributes: Mapping[str, Any], key: str, mime_key: str, keys: Sequence[str]
) -> str | None:
    """A span's input or output as text; for a JSON object, its value under the first of
    `keys` that holds a string."""
    value = attributes.get(key)
    if not isinstance(value, str):
        return None
    if keys and attributes.get(mime_key) == "application/json":
        try:
            data = msgspec.json.decode(value)
        except msgspec.DecodeError:
            return value
        if isinstance(data, dict):
            for name in keys:
                found = data.get(name)
                if isinstance(found, str):
                    return found
        elif isinstance(data, str):
            return data
    return value


def _last_message(attributes: Mapping[str, Any], prefix: str, *, role: str | None) -> str | None:
    """The content of the last message (of `role`, when given) under `prefix`."""
    head = prefix + "."
    messages: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(head):
            continue
        number, _, name = key[len(head) :].partition(".")
        if number.isdigit():
            messages.setdefault(int(number), {})[name] = value
    for index in sorted(messages, reverse=True):
        message = messages[index]
        if role is not None and message.get("message.role") != role:
            continue
        content = message.get("message.content")
        if isinstance(content, str):
            return content
        parts = [  # multimodal: message.contents.M.message_content.text, in order of M
            (int(name.split(".")[2]), value)
            for name, value in message.items()
            if name.startswith("message.contents.")
            and name.endswith(".message_content.text")
            and name.split(".")[2].isdigit()
            and isinstance(value, str)
        ]
        if parts:
            return "".join(text for _, text in sorted(parts))
    return None


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
        if isinstance(candidate_id, str) and candidate_id:
            return candidate_id
        if isinstance(candidate_id, int) and not isinstance(candidate_id, bool):
            return str(candidate_id)
    return None


def _content_id(text: str) -> str:
    """A stable id for a document that has none: the same chunk gets the same id."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
