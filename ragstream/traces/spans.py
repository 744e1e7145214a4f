"""Spans as the mapping reads them: plain records, whatever format they came in.

A span is its trace's *root* here (`local_root`) when it has no parent, or when its parent
is in another service: the span's OTLP `flags` say so (0x100, the parent's remoteness is
known, and 0x200, it is remote: `SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK` and
`SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK`; OpenTelemetry SDKs set them from the parent's span
context, as a `traceparent` header gives it), or, when the flags do not tell (0x100
unset: older SDKs and other producers), the span is a `SERVER` span -- the entry span of a
service, whose parent is the caller's `CLIENT` span. A span whose flags say its parent is
local is not a root, whatever its kind.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ragstream.events import DecodeError
from ragstream.traces.conventions import ANSWER_KINDS, SPAN_KINDS

__all__ = [
    "READ_KINDS",
    "IdNames",
    "Span",
    "SpanBatch",
    "local_root",
]

READ_KINDS = ANSWER_KINDS | {"RETRIEVER", "RERANKER"}
"""The span kinds the mapping reads."""
_KNOWN_KINDS = frozenset(SPAN_KINDS)
_ZERO_TRACE_ID = "0" * 32

IdNames = tuple[str, str, str]
"""How a format spells the trace id, span id and parent span id fields."""

HAS_IS_REMOTE = 0x100
"""OTLP span flags: SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK (the parent's remoteness is known)."""
IS_REMOTE = 0x200
"""OTLP span flags: SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK (the parent is in another process)."""
SERVER = 2
"""OTLP SpanKind SPAN_KIND_SERVER."""


def local_root(parent_id: str | bytes, flags: int, kind: int) -> bool:
    """Whether a span is its trace's root in this service (see the module docstring)."""
    if not parent_id:
        return True
    if flags & HAS_IS_REMOTE:
        return bool(flags & IS_REMOTE)
    return kind == SERVER


@dataclass(slots=True)
class Span:
    """One span the mapping reads, its ids in lowercase hex."""

    trace_id: str
    span_id: str
    parent_id: str
    """The parent's span id; empty for a root span."""
    root: bool
    """Its trace's root in this service (`local_root`)."""
    kind: str | None
    """The OpenInference span kind; None without one."""
    end: float
    """End time in Unix seconds (the start when the end is missing; 0 when both are)."""
    attributes: dict[str, Any]
    resource: Mapping[str, Any]
    where: str
    """Its place in the request, for error details: `resource_spans.0.scope_spans.1.spans.4`."""


@dataclass(slots=True)
class SpanBatch:
    """What one request holds for the mapping."""

    spans: list[Span] = field(default_factory=list)
    """Spans of the kinds read (`READ_KINDS`), in request order."""
    roots: list[str] = field(default_factory=list)
    """Trace ids of root spans not in `spans` (e.g. an HTTP server span)."""
    skipped: Counter[str] = field(default_factory=Counter)
    """Spans not read, by kind (`none` without one, `other` for an unknown value)."""
    errors: list[DecodeError] = field(default_factory=list)
    """Read spans that cannot be mapped (malformed ids)."""

    def skip(self, kind: str | None, root_trace_id: str) -> None:
        """Count a span that is not read; `root_trace_id`: its trace id when it is a root
        span (else empty), kept when it is 32 hex digits."""
        self.skipped["none" if kind is None else kind if kind in _KNOWN_KINDS else "other"] += 1
        if len(root_trace_id) == 32:
            self.roots.append(root_trace_id)

    def ids_valid(
        self, trace_id: str, span_id: str, parent_id: str, where: str, names: IdNames
    ) -> bool:
        """Whether a read span's ids (hex) have OTLP's sizes, its trace id not all zero;
        when not, a `schema` error naming the fields (`names`, as the format spells them)
        is kept."""
        if len(trace_id) != 32 or trace_id == _ZERO_TRACE_ID:
            self.errors.append(DecodeError("schema", f"{where}: {names[0]} is not 16 bytes"))
            return False
        if len(span_id) != 16 or len(parent_id) not in (0, 16):
            detail = f"{where}: {names[1]} or {names[2]} not 8 bytes"
            self.errors.append(DecodeError("schema", detail))
            return False
        return True
