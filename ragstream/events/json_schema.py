"""The published JSON Schema (draft 2020-12) of the events, for producers in any language."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from ragstream.events.models import EVENT_ADAPTER, AnswerEvent, FeedbackEvent, RetrievalEvent

__all__ = ["DIALECT", "SchemaKind", "event_json_schema"]

DIALECT = "https://json-schema.org/draft/2020-12/schema"
SchemaKind = Literal["all", "retrieval", "answer", "feedback"]

_MODELS: dict[str, type[BaseModel]] = {
    "retrieval": RetrievalEvent,
    "answer": AnswerEvent,
    "feedback": FeedbackEvent,
}


def event_json_schema(kind: SchemaKind = "all") -> dict[str, Any]:
    """The JSON Schema of one event type, or of the union (`oneOf`, discriminated by `type`).

    It describes the wire form (what a producer sends): timestamps as a number or an RFC 3339
    string, optional fields omittable or null, unknown fields allowed. Range checks on RFC 3339
    strings (years 1970/0001 to 3000) are made by the decoder only.
    """
    if kind == "all":
        body = EVENT_ADAPTER.json_schema()
        title = "ragstream event"
        description = "One ragstream event (schema v1); the `type` field selects the kind."
    else:
        body = _MODELS[kind].model_json_schema()
        title = body.pop("title")
        description = body.pop("description", "")
    return {
        "$schema": DIALECT,
        "title": f"{title} (schema v1)",
        "description": description,
        **body,
    }
