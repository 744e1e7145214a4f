"""Spans as the mapping reads them: plain records, whatever format they came in."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ragstream.events import DecodeError

__all__ = ["Span", "SpanBatch"]


@dataclass(slots=True)
class Span:
    """One span the mapping reads, its ids in lowercase hex."""

    trace_id: str
    span_id: str
    parent_id: str
    """The parent's span id; empty for a root span."""
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
    """Spans of the kinds read (RETRIEVER, CHAIN, AGENT, LLM), in request order."""
    roots: list[str] = field(default_factory=list)
    """Trace ids of root spans not in `spans` (e.g. an HTTP server span)."""
    skipped: Counter[str] = field(default_factory=Counter)
    """Spans not read, by kind (`none` without one, `other` for an unknown value)."""
    errors: list[DecodeError] = field(default_factory=list)
    """Read spans that cannot be mapped (malformed ids)."""
