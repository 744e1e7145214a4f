"""Example messages shared by the decoder and schema tests (the same ones as docs/events.md)."""

from __future__ import annotations

import json
from typing import Any

RETRIEVAL: dict[str, Any] = {
    "type": "retrieval",
    "query_id": "q-7f3a",
    "ts": "2024-05-01T12:00:00.250Z",
    "labels": {"app": "support", "index": "v7"},
    "query": "how do I reset my password",
    "results": [
        {"doc_id": "kb-12", "score": 12.5, "t_doc": "2024-04-30T08:00:00+02:00"},
        {"doc_id": "kb-3", "score": 11.0, "t_doc": 1714000000},
        {"doc_id": "kb-12", "score": 9.25},
        {"doc_id": "kb-40", "rel": 0},
    ],
}
GOLDEN: dict[str, Any] = {
    "type": "retrieval",
    "query_id": "probe-001",
    "ts": 1714564800.25,
    "results": [{"doc_id": "d1"}, {"doc_id": "d2"}],
    "qrels": [{"doc_id": "d2", "rel": 2}, {"doc_id": "d9", "rel": 1, "t_doc": 1700000000}],
}
ANSWER: dict[str, Any] = {
    "type": "answer",
    "query_id": "q-7f3a",
    "ts": 1714564801,
    "question": "how do I reset my password",
    "answer": "Open Settings, then Security, then Reset password.",
    "contexts": [{"doc_id": "kb-12", "text": "To reset a password, open Settings > Security."}],
    "model": "gpt-4o-mini",
    "cited_doc_ids": ["kb-12"],
}
FEEDBACK: dict[str, Any] = {
    "type": "feedback",
    "query_id": "q-7f3a",
    "ts": "2024-05-01T12:03:10Z",
    "doc_id": "kb-12",
    "rel": 1,
    "source": "click",
}

VERDICT: dict[str, Any] = {
    "type": "feedback",
    "query_id": "q-7f3a",
    "ts": "2024-05-01T12:20:00Z",
    "answer": {"hallucination": False},
    "source": "annotator",
}

VALID: dict[str, dict[str, Any]] = {
    "retrieval": RETRIEVAL,
    "golden": GOLDEN,
    "answer": ANSWER,
    "feedback": FEEDBACK,
    "verdict": VERDICT,
}


def with_changes(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy of `base` with fields replaced (a value of `...` removes the field)."""
    out = dict(base)
    for key, value in changes.items():
        if value is ...:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def to_bytes(message: Any) -> bytes:
    """A message as a Kafka value: compact UTF-8 JSON."""
    return json.dumps(message, separators=(",", ":")).encode()


# Objects the decoder rejects with reason `schema` / `bad_timestamp` / `too_large` /
# `unknown_type` that are also JSON objects, so the published schema must reject them too.
INVALID_OBJECTS: dict[str, tuple[str, dict[str, Any]]] = {
    "query_id is a number": ("schema", with_changes(FEEDBACK, query_id=5)),
    "query_id empty": ("schema", with_changes(FEEDBACK, query_id="")),
    "query_id missing": ("schema", with_changes(FEEDBACK, query_id=...)),
    "rel is a string": ("schema", with_changes(FEEDBACK, rel="2")),
    "rel is a bool": ("schema", with_changes(FEEDBACK, rel=True)),
    "rel out of range": ("schema", with_changes(FEEDBACK, rel=1000)),
    "source missing": ("schema", with_changes(FEEDBACK, source=...)),
    "feedback with a label and a verdict": (
        "schema",
        with_changes(FEEDBACK, answer={"hallucination": True}),
    ),
    "feedback with neither": ("schema", with_changes(FEEDBACK, doc_id=..., rel=...)),
    "feedback doc_id without rel": ("schema", with_changes(FEEDBACK, rel=...)),
    "feedback rel without doc_id": ("schema", with_changes(FEEDBACK, doc_id=...)),
    "feedback null label": ("schema", with_changes(FEEDBACK, doc_id=None, rel=None)),
    "verdict with a doc_id": ("schema", with_changes(VERDICT, doc_id="kb-12")),
    "verdict with a rel": ("schema", with_changes(VERDICT, rel=1)),
    "verdict not a bool": ("schema", with_changes(VERDICT, answer={"hallucination": 1})),
    "verdict without hallucination": ("schema", with_changes(VERDICT, answer={})),
    "verdict not an object": ("schema", with_changes(VERDICT, answer=True)),
    "labels value not a string": ("schema", with_changes(FEEDBACK, labels={"app": 1})),
    "labels not an object": ("schema", with_changes(FEEDBACK, labels=["app"])),
    "type missing": ("schema", with_changes(FEEDBACK, type=...)),
    "results not a list": ("schema", with_changes(RETRIEVAL, results={"doc_id": "a"})),
    "result without doc_id": ("schema", with_changes(RETRIEVAL, results=[{"score": 1.0}])),
    "doc_id is a number": ("schema", with_changes(RETRIEVAL, results=[{"doc_id": 17}])),
    "score is a string": (
        "schema",
        with_changes(RETRIEVAL, results=[{"doc_id": "a", "score": "1"}]),
    ),
    "qrel without rel": ("schema", with_changes(GOLDEN, qrels=[{"doc_id": "a"}])),
    "context without text": ("schema", with_changes(ANSWER, contexts=[{"doc_id": "a"}])),
    "answer missing": ("schema", with_changes(ANSWER, answer=...)),
    "cited_doc_ids not strings": ("schema", with_changes(ANSWER, cited_doc_ids=[1])),
    "unknown type": ("unknown_type", with_changes(FEEDBACK, type="click")),
    "type is a number": ("unknown_type", with_changes(FEEDBACK, type=1)),
    "ts missing": ("schema", with_changes(FEEDBACK, ts=...)),
    "ts is a bool": ("bad_timestamp", with_changes(FEEDBACK, ts=True)),
    "ts negative": ("bad_timestamp", with_changes(FEEDBACK, ts=-1)),
    "ts in milliseconds": ("bad_timestamp", with_changes(FEEDBACK, ts=1714564800000)),
    "ts without offset": ("bad_timestamp", with_changes(FEEDBACK, ts="2024-05-01T12:00:00")),
    "ts date only": ("bad_timestamp", with_changes(FEEDBACK, ts="2024-05-01")),
    "ts not a date": ("bad_timestamp", with_changes(FEEDBACK, ts="yesterday")),
    "t_doc in milliseconds": (
        "bad_timestamp",
        with_changes(RETRIEVAL, results=[{"doc_id": "a", "t_doc": 1.7e12}]),
    ),
    "too many results": (
        "too_large",
        with_changes(RETRIEVAL, results=[{"doc_id": "a"}] * 1001),
    ),
    "query_id too long": ("too_large", with_changes(FEEDBACK, query_id="q" * 513)),
    "too many labels": (
        "too_large",
        with_changes(FEEDBACK, labels={f"k{i}": "v" for i in range(33)}),
    ),
}
