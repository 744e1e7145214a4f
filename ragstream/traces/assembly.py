"""The spans of one partition's traces, joined into events (pure, bounded, snapshotable).

A trace's first `RETRIEVER` span becomes its retrieval event at once. Its answer event
needs several spans -- the retrieved documents (the contexts) and the span that carries the
question and answer -- which may arrive in one message or several, in any order. So each
trace with a read span is *open* until:

- its root span has arrived and so has a RETRIEVER span: it closes at the end of that
  batch (a root span ends after all its descendants, so in order it comes last). A root is
  a span without a parent, or the service's entry span whose parent is in another service
  (`spans.local_root`);
- or the engine's clock is `wait` seconds past the latest end time of its spans (traces are
  looked at in the order their last span arrived);
- or more than `max_open` traces are open: the one that has waited longest closes early;
- or the stream ends (`close_all`, the end of a replay).

When it closes, a trace with a RETRIEVER span gets one answer event: the question and
answer of its top-most answer span (a CHAIN, AGENT or LLM span whose parent is not one of
the trace's read spans; the latest ending of them), else of its last LLM span with an
answer. An LLM's question is the retrieval's query when there is one; a chain whose input
or output is a structure without text of its own (Haystack's dict per component) takes
the retrieval's query as its question and the last LLM span's answer as its answer. The
contexts are the documents the model saw (`contexts.seen_contexts`): the last RERANKER
span's output, else the documents of its RETRIEVER spans that have content (in arrival
order, each doc id once), narrowed to those the answering LLM span's prompt quotes. A
closed trace is remembered (up to `max_open` of them), so that a span arriving after it
closed is counted as late and does not give a second event.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragstream.traces.contexts import seen_contexts
from ragstream.traces.conventions import TraceMapping
from ragstream.traces.mapping import (
    Candidate,
    Document,
    candidate,
    documents,
    labels_of,
    query_of,
    retrieval_event,
)
from ragstream.traces.spans import Span

__all__ = [
    "SKIP_REASONS",
    "TRACE_OUTCOMES",
    "Position",
    "TraceAssembler",
    "TraceRecord",
]

Position = tuple[str, int]
"""(topic, offset) of the message a span came in, for the events it gives."""

TRACE_OUTCOMES = ("answered", "no_answer", "no_retrieval", "evicted")
"""How a closed trace ended: an answer event, a RETRIEVER span but no span with an answer,
or no RETRIEVER span (not a retrieval-augmented request: no answer event); and `evicted`,
closed early (counted besides its outcome)."""
SKIP_REASONS = ("signal_metrics", "signal_logs", "signal_profiles", "signal_other")
"""Why a record of a trace topic is skipped: its `otelcol.signal` header names another
signal (one of the Collector's, else `other`)."""


@dataclass(slots=True)
class TraceRecord:
    """An open trace."""

    trace_id: str
    arrived: float
    """The latest end time of its spans (event time): it waits `wait` from there."""
    position: Position
    retrieved: bool = False
    """A RETRIEVER span has arrived (and gave the retrieval event)."""
    root: bool = False
    query: str | None = None
    """The first RETRIEVER span's input (the retrieval query)."""
    contexts: list[tuple[str, str]] = field(default_factory=list)
    span_ids: set[str] = field(default_factory=set)
    """The trace's read spans that have arrived."""
    candidates: dict[str, Candidate] = field(default_factory=dict)
    """Answer spans whose parent is not (yet) among the read spans."""
    last_llm: Candidate | None = None
    """The LLM span with an answer that ended last."""
    reranked: list[tuple[str, str]] | None = None
    """(doc id, text) of the output documents of the RERANKER span that ended last."""
    reranked_end: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "trace_id": self.trace_id,
            "arrived": self.arrived,
            "position": list(self.position),
            "retrieved": self.retrieved,
            "root": self.root,
            "query": self.query,
            "contexts": [list(c) for c in self.contexts],
            "span_ids": sorted(self.span_ids),
            "candidates": [c.to_json() for c in self.candidates.values()],
            "last_llm": None if self.last_llm is None else self.last_llm.to_json(),
            "reranked": None if self.reranked is None else [list(c) for c in self.reranked],
            "reranked_end": self.reranked_end,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TraceRecord:
        topic, offset = data["position"]
        candidates = [Candidate.from_json(c) for c in data["candidates"]]
        last = data.get("last_llm")
        reranked = data.get("reranked")
        return cls(
            trace_id=str(data["trace_id"]),
            arrived=float(data["arrived"]),
            position=(str(topic), int(offset)),
            retrieved=bool(data["retrieved"]),
            root=bool(data["root"]),
            query=data.get("query"),
            contexts=[(str(d), str(t)) for d, t in data["contexts"]],
            span_ids=set(data["span_ids"]),
            candidates={c.span_id: c for c in candidates},
            last_llm=None if last is None else Candidate.from_json(last),
            reranked=None if reranked is None else [(str(d), str(t)) for d, t in reranked],
            reranked_end=float(data.get("reranked_end", 0.0)),
        )


class TraceAssembler:
    """One partition's open traces (see the module docstring)."""

    def __init__(self, mapping: TraceMapping, label_keys: Sequence[str] = ()) -> None:
        self.mapping = mapping
        self.sources = mapping.label_sources(label_keys)
        self.open: dict[str, TraceRecord] = {}
        """Open traces, the one whose last span arrived longest ago first."""
        self.closed: dict[str, bool] = {}
        """Recently closed traces -> whether they had a RETRIEVER span."""
        self.spans: Counter[tuple[str, str]] = Counter()
        """(kind, outcome) -> spans: outcome `retrieval` (gave a retrieval event), `read`
        (joined its open trace), `late` (its trace had closed), `skipped` (not read)."""
        self.traces: Counter[str] = Counter()
        """Closed traces by outcome (`TRACE_OUTCOMES`)."""
        self.skipped: Counter[str] = Counter()
        """Records of the partition skipped, by reason (another signal on the topic)."""
        self._ready: set[str] = set()
        """Traces whose root and a RETRIEVER span have arrived: closed at the batch's end."""

    # -- spans in ---------------------------------------------------------------------------

    def add(self, span: Span, position: Position) -> dict[str, Any] | None:
        """Take one read span; returns its retrieval event, if it gives one."""
        kind = span.kind or "none"
        trace_id = span.trace_id
        retrieved = self.closed.get(trace_id)
        if retrieved is not None:  # its trace has closed
            if span.kind == "RETRIEVER" and not retrieved:
                self.closed[trace_id] = True
                self.spans[(kind, "retrieval")] += 1
                docs = documents(span, self.mapping)
                return retrieval_event(span, docs, self.mapping, labels_of(span, self.sources))
            self.spans[(kind, "late")] += 1
            return None
        record = self.open.pop(trace_id, None)
        if record is None:
            record = TraceRecord(trace_id, span.end, position)
        else:  # the event time of its latest span: the same on every clock and replica
            record.arrived, record.position = max(record.arrived, span.end), position
        self.open[trace_id] = record  # now the most recent
        record.span_ids.add(span.span_id)
        for child in [c for c in record.candidates.values() if c.parent_id == span.span_id]:
            del record.candidates[child.span_id]  # not top-most: its parent is read
        if span.root:
            record.root = True
        event: dict[str, Any] | None = None
        labels = labels_of(span, self.sources)
        if span.kind == "RETRIEVER":
            docs = documents(span, self.mapping)
            if not record.retrieved:
                record.retrieved = True
                event = retrieval_event(span, docs, self.mapping, labels)
                record.query = query_of(span, self.mapping)
            seen = {doc_id for doc_id, _ in record.contexts}
            for doc in docs:
                if doc.content is not None and doc.doc_id not in seen:
                    seen.add(doc.doc_id)
                    record.contexts.append((doc.doc_id, doc.content))
        elif span.kind == "RERANKER":
            if record.reranked is None or span.end >= record.reranked_end:
                docs = documents(span, self.mapping, self.mapping.reranked_documents)
                record.reranked, record.reranked_end = _texts(docs, record), span.end
        else:
            found = candidate(span, self.mapping, labels)
            if found is not None:
                if span.parent_id not in record.span_ids:
                    record.candidates[span.span_id] = found
                if (
                    span.kind == "LLM"
                    and found.answer is not None
                    and (record.last_llm is None or found.end >= record.last_llm.end)
                ):
                    record.last_llm = found
        self.spans[(kind, "retrieval" if event is not None else "read")] += 1
        if record.root and record.retrieved:
            self._ready.add(trace_id)
        return event

    def root(self, trace_id: str) -> None:
        """A root span that is not read (e.g. an HTTP server span) arrived."""
        record = self.open.get(trace_id)
        if record is None:
            return  # no read span of it (yet): nothing to close
        record.root = True
        if record.retrieved:
            self._ready.add(trace_id)

    def skip(self, counts: Mapping[str, int]) -> None:
        """Count spans that are not read, by kind."""
        for kind, n in counts.items():
            self.spans[(kind, "skipped")] += n

    # -- answers out ------------------------------------------------------------------------

    def close_due(self, now: float) -> list[tuple[dict[str, Any], Position]]:
        """Close the traces that are ready, have waited `wait`, or are beyond `max_open`;
        returns their answer events (with the position of each trace's last span)."""
        out: list[tuple[dict[str, Any], Position]] = []
        if self._ready:  # in the order their last spans arrived
            for trace_id in [t for t in self.open if t in self._ready]:
                self._close(self.open.pop(trace_id), out)
        self._ready.clear()
        limit = now - self.mapping.wait
        while self.open:
            record = next(iter(self.open.values()))
            if record.arrived > limit and len(self.open) <= self.mapping.max_open:
                break
            if record.arrived > limit:
                self.traces["evicted"] += 1
            del self.open[record.trace_id]
            self._close(record, out)
        return out

    def close_all(self) -> list[tuple[dict[str, Any], Position]]:
        """Close every open trace (the end of the stream)."""
        out: list[tuple[dict[str, Any], Position]] = []
        for record in list(self.open.values()):
            self._close(record, out)
        self.open.clear()
        self._ready.clear()
        return out

    def _close(self, record: TraceRecord, out: list[tuple[dict[str, Any], Position]]) -> None:
        self.closed[record.trace_id] = record.retrieved
        while len(self.closed) > self.mapping.max_open:
            del self.closed[next(iter(self.closed))]
        if not record.retrieved:
            self.traces["no_retrieval"] += 1
            return
        last = record.last_llm
        chosen: Candidate | None = None
        if record.candidates:
            chosen = max(record.candidates.values(), key=lambda c: c.end)
        if chosen is None:
            chosen = last
        if chosen is None:
            self.traces["no_answer"] += 1
            return
        question = chosen.question
        if question is None or (chosen.kind == "LLM" and record.query is not None):
            question = record.query or question or (last.question if last else None)
        answer = chosen.answer if chosen.answer is not None else (last.answer if last else None)
        if question is None or answer is None:
            self.traces["no_answer"] += 1
            return
        model = chosen.model or (last.model if last else None)
        prompt = last.prompt if last is not None else None
        contexts = seen_contexts(record.contexts, record.reranked, prompt)
        event: dict[str, Any] = {
            "type": "answer",
            "query_id": chosen.query_id,
            "ts": chosen.end,
            "question": question,
            "answer": answer,
            "contexts": [{"doc_id": d, "text": t} for d, t in contexts],
        }
        if model is not None:
            event["model"] = model
        if chosen.labels:
            event["labels"] = chosen.labels
        self.traces["answered"] += 1
        out.append((event, record.position))

    # -- state ------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """JSON-friendly state: open traces (in order), closed ones, counters."""
        return {
            "open": [r.to_json() for r in self.open.values()],
            "closed": [[t, r] for t, r in self.closed.items()],
            "ready": sorted(self._ready),
            "spans": [[k, o, n] for (k, o), n in sorted(self.spans.items())],
            "traces": dict(self.traces),
            "skipped": dict(self.skipped),
        }

    def restore(self, data: Mapping[str, Any]) -> None:
        """Continue from `snapshot` output."""
        self.open = {}
        for item in data["open"]:
            record = TraceRecord.from_json(item)
            self.open[record.trace_id] = record
        self.closed = {str(t): bool(r) for t, r in data["closed"]}
        self._ready = set(data.get("ready") or ())
        self.spans = Counter({(k, o): int(n) for k, o, n in data["spans"]})
        self.traces = Counter(data["traces"])
        self.skipped = Counter(data.get("skipped") or {})


def _texts(docs: list[Document], record: TraceRecord) -> list[tuple[str, str]]:
    """(doc id, text) of a reranker's documents, in its order; a document without content
    takes the text a retriever gave it (dropped when there is none)."""
    known = dict(record.contexts)
    out: list[tuple[str, str]] = []
    for doc in docs:
        text = doc.content if doc.content is not None else known.get(doc.doc_id)
        if text is not None:
            out.append((doc.doc_id, text))
    return out
