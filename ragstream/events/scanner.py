"""The compiled first pass over retrieval events (`_event_scanner`), when built.

Most messages on a retrieval topic have one shape: a retrieval event with plain ids, a few
labels and tens of ranked documents. For those, `scan_retrievals` validates the message as
msgspec's `DecodedRetrieval` would and returns only what the engine reads at opening -- the
query id, the time, the values of the exported label keys, the times of the top documents,
and the ranking and labels when the event carries labels (or, `graded`, each document's
grade and time as the kernels read them) -- as one small `Scanned` record
instead of a Struct per document, and the value of a configured trace field when it is a
trace id (`Scanned.trace_id`). A field the schema does not know, at the top or in a
result or qrel, is skipped as msgspec skips it: its value may be any JSON (escapes,
non-ASCII, nested within the guard's depth), checked and not kept. Everything else is
declined (None), and the caller decodes it the usual way:

- another event type, a known key given twice, a repeated document id;
- an escape or non-ASCII byte in an id, label or the event's, a result's or a qrel's key
  (free text and the values of unknown fields may have both), or in the string value of
  the trace field (`trace_field`), or that field given twice;
- an RFC 3339 time; a number that is not finite as a double, an integer of more than 18
  digits; a message that is not `bytes`.

Declining is always safe: whatever the scanner accepts, msgspec accepts with the same
values (the differential tests compare both on generated and mutated messages), so counts,
reasons and values do not depend on which path read a message. Without a C compiler at
install time the module is absent and every message takes the msgspec path.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragstream.events.limits import Limits
from ragstream.events.models import MAX_ABS_REL
from ragstream.events.timestamps import MAX_TS, MIN_DOC_TS, MIN_EVENT_TS

try:
    from ragstream.events._event_scanner import Scanned, scan
except ImportError:  # pragma: no cover - built by every install with a C compiler
    AVAILABLE = False
    Scanned = tuple  # type: ignore[misc,assignment]
else:
    AVAILABLE = True

__all__ = ["AVAILABLE", "Scanned", "bounds_of", "scan_retrievals"]

Bounds = tuple[int, int, int, int, int, int, int, float, float, float, float]


def bounds_of(limits: Limits) -> Bounds:
    """The scanner's bounds: the limits, then the schema's time and grade bounds."""
    return (
        limits.max_message_bytes,
        limits.max_results,
        limits.max_qrels,
        limits.max_text_chars,
        limits.max_id_chars,
        limits.max_labels,
        limits.max_label_chars,
        MIN_EVENT_TS,
        MIN_DOC_TS,
        MAX_TS,
        MAX_ABS_REL,
    )


def scan_retrievals(
    values: Sequence[bytes | bytearray | None],
    bounds: Bounds,
    *,
    top: int = 10,
    label_keys: Sequence[str] | None = None,
    graded: bool = False,
    trace_field: str | None = None,
) -> list[Scanned | None]:
    """A `Scanned` per retrieval event of the common shape, None for every other value
    (all None when the scanner is not built). `top`: how many leading document times to
    keep; `label_keys`: the label keys whose values a record's `labels` holds, in order
    ("" where the event has none; None: no `labels`, validated either way); `graded`: an
    event with labels gets what the kernels read (`ranked`, `judged`) instead of its ids
    and labels as Python objects (`ids`, `times`, `qrels`, `inline` are then None);
    `trace_field`: a top-level key the schema does not know whose value a record keeps in
    `trace_id` when it is a trace id (None: none; see `ragstream.events.trace_ids`)."""
    if not AVAILABLE:
        return [None] * len(values)
    keys = None if label_keys is None else tuple(label_keys)
    return scan(values, bounds, top, keys, graded, trace_field)
