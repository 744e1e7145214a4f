"""A retrieval event's trace id: from a configured top-level field the schema does not know.

Exemplars link a query to its trace, so they need the query's OpenTelemetry trace id. A
query read from spans has it as its id; a producer that writes events itself often carries
it in a field of its own (`"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736"`), which the
schema ignores. `TraceField(name).of(event, message)` reads that field's value: the trace
id when it is a string that `is_trace_id`, else None (absent, null, another type, or not a
trace id: the event stays valid, its query just has no trace id). The compiled scanner
keeps the value of the field it is told about (`Scanned.trace_id`); a message it declined
is read here by msgspec, which keeps the last value of a key given twice, as it does for
the schema's own keys.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import msgspec

from ragstream.events.scanner import Scanned
from ragstream.events.structs import DecodedRetrieval

__all__ = ["SCHEMA_FIELDS", "TraceField", "is_trace_id"]

SCHEMA_FIELDS = frozenset({"type", *DecodedRetrieval.__struct_fields__})
"""The top-level keys of a retrieval event in the schema: none of them can be the field."""

_SCANNED_TRACE_ID = attrgetter("trace_id")
_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_ZERO = "0" * 32


def is_trace_id(value: str) -> bool:
    """Whether ``value`` is an OpenTelemetry trace id: 32 lowercase hex digits, not all
    zero (the W3C Trace Context's valid trace ids)."""
    return len(value) == 32 and value != _ZERO and _TRACE_ID.fullmatch(value) is not None


class TraceField:
    """Reads the trace id of retrieval events from the top-level field ``name``."""

    __slots__ = ("_decoder", "name")

    def __init__(self, name: str) -> None:
        """``name``: a top-level key that is not one of the schema's (`SCHEMA_FIELDS`)."""
        if not name or name in SCHEMA_FIELDS:
            known = ", ".join(sorted(SCHEMA_FIELDS))
            raise ValueError(
                f"the trace id field {name!r} is a field of the event schema ({known}): name"
                " a field of your own, e.g. trace_id"
            )
        self.name = name
        holder = msgspec.defstruct(
            "TraceFieldValue", [("value", object, None)], rename={"value": name}, gc=False
        )
        self._decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(holder)

    def of_each(
        self, events: Sequence[Scanned | DecodedRetrieval], messages: Sequence[bytes]
    ) -> list[str | None]:
        """`of` for each event and its message (a run of scanned ones in one step)."""
        try:
            return list(map(_SCANNED_TRACE_ID, events))
        except AttributeError:  # decoded events among them
            return list(map(self.of, events, messages))

    def of(self, event: Scanned | DecodedRetrieval, message: bytes) -> str | None:
        """The trace id of a retrieval event read from ``message``: the scanner's, or, for
        a decoded event, the field's value in the message."""
        if type(event) is not DecodedRetrieval:
            return event.trace_id  # type: ignore[union-attr]
        return self.of_message(message)

    def of_message(self, message: bytes) -> str | None:
        """The field's value in a message `decode_event` accepted, when it is a trace id."""
        try:
            value = self._decoder.decode(message).value
        except (msgspec.DecodeError, RecursionError):  # decoded already: not expected
            return None
        return value if type(value) is str and is_trace_id(value) else None
