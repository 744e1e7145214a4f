"""What an app would send as ragstream events for the requests it traced: the reference
the trace path is compared with. Built from the app's own knowledge of each request (its
question, the documents its store returned, its answer) and the SDK's span times, with the
producer helpers -- not from the spans' attributes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from opentelemetry.sdk.trace import ReadableSpan

from ragstream.events import (
    Context,
    Message,
    RetrievedDoc,
    answer_event,
    encode_event,
    feedback_event,
    retrieval_event,
)
from ragstream.pipeline.engine import Engine, EngineConfig
from tests.support import defaults
from tests.traces._rag import Request

__all__ = ["assert_same_state", "engine_config", "feedback_messages", "reference_messages"]

LABELS = {"service": "support-bot"}


def engine_config(traces: str | None = None, encoding: str = "otlp_proto") -> EngineConfig:
    """The engines compared: spans on the topic `traces` in `encoding`; None: the reference,
    which reads the app's own events."""
    return defaults.engine_config(
        cutoffs=(1, 3),
        half_lives=(86400.0,),
        windows=(60.0, 3600.0, 86400.0),
        clock="event",
        label_keys=("service",),
        formats=() if traces is None else ((traces, encoding),),
    )


def _times(spans: Sequence[ReadableSpan], trace_id: str) -> tuple[float, float]:
    """(the retriever span's end, the root span's end) of one trace, in seconds."""
    mine = [s for s in spans if s.context is not None and f"{s.context.trace_id:032x}" == trace_id]
    retriever = [
        s for s in mine if (s.attributes or {}).get("openinference.span.kind") == "RETRIEVER"
    ]
    root = [s for s in mine if s.parent is None]
    assert len(retriever) == 1
    assert len(root) == 1
    assert retriever[0].end_time is not None
    assert root[0].end_time is not None
    return retriever[0].end_time / 1e9, root[0].end_time / 1e9


def reference_messages(
    requests: Sequence[Request], spans: Sequence[ReadableSpan], topic: str = "events"
) -> list[Message]:
    out: list[Message] = []
    for request in requests:
        t_retrieval, t_answer = _times(spans, request.trace_id)
        docs = request.documents
        retrieval = retrieval_event(
            request.trace_id,
            [RetrievedDoc(doc_id=d.metadata["doc_id"], t_doc=d.metadata["t_doc"]) for d in docs],
            ts=t_retrieval,
            labels=LABELS,
            query=request.question,
        )
        answer = answer_event(
            request.trace_id,
            request.question,
            request.answer,
            [Context(doc_id=d.metadata["doc_id"], text=d.page_content) for d in docs],
            ts=t_answer,
            labels=LABELS,
        )
        for event in (retrieval, answer):
            out.append(Message(encode_event(event), 0, len(out), topic, request.trace_id.encode()))
    return out


def feedback_messages(
    requests: Sequence[Request], spans: Sequence[ReadableSpan], topic: str = "feedback"
) -> list[Message]:
    """A click on the second document of every other request, a thumb-down on the first of
    every third, a second after the answer: labels keyed by the trace id."""
    out: list[Message] = []
    for i, request in enumerate(requests):
        t = _times(spans, request.trace_id)[1] + 1.0
        ids = [d.metadata["doc_id"] for d in request.documents]
        labels = []
        if i % 2 == 0:
            labels.append((ids[1], 1.0, "click"))
        if i % 3 == 0:
            labels.append((ids[0], 0.0, "thumb"))
        for doc_id, rel, source in labels:
            event = feedback_event(request.trace_id, doc_id, rel, source, ts=t)
            out.append(Message(encode_event(event), 0, len(out), topic, request.trace_id.encode()))
    return out


def assert_same_state(ours: Engine, reference: Engine, invalid: int = 0) -> None:
    """Same windows (every column of every series) and counts of events by type and
    outcome (`invalid`: how many more invalid messages `ours` read)."""
    now = reference.now()
    assert ours.now() == now
    assert ours.store.labelsets() == reference.store.labelsets()
    assert ours.store.labelsets()  # something was read
    a, b = ours.store.read(now, exact=True), reference.store.read(now, exact=True)
    assert ours.spec.names == reference.spec.names
    assert a.queries.tolist() == b.queries.tolist()
    np.testing.assert_allclose(a.mean(), b.mean(), rtol=1e-12)
    np.testing.assert_allclose(a.decayed_mean(), b.decayed_mean(), rtol=1e-12)
    expected = reference.events.copy()
    if invalid:
        expected[("unknown", "invalid")] += invalid
    assert ours.events == expected
