"""Bytes to events, one message at a time: msgspec, then the reference for what it rejects.

`decode_event` returns the msgspec Structs of `ragstream.events.structs`. A message msgspec
rejects goes to the pydantic reference (`EVENT_ADAPTER`), which names the reason: rejected
messages are rare, and the reason codes and details stay exactly the reference's. (Should
the reference accept a message msgspec rejected, its event is returned: the two are meant
to agree on every input, which the differential tests check.)

The reasons are those of `ragstream.events.reasons`; `ragstream.events.batch` reads a
whole batch the way the engine does (with the compiled scanner first).
"""

from __future__ import annotations

from collections.abc import Sequence

from ragstream.events.limits import DEFAULT_LIMITS, Limits
from ragstream.events.models import Event
from ragstream.events.msgspec_decode import fast_decode
from ragstream.events.reasons import DecodeError, IndexedDecodeError
from ragstream.events.reference import check_limits, sized, validate
from ragstream.events.structs import DecodedEvent, to_decoded

__all__ = [
    "decode_batch",
    "decode_event",
    "decode_reference",
    "decode_rejected",
]


def decode_event(data: bytes | bytearray | None, limits: Limits = DEFAULT_LIMITS) -> DecodedEvent:
    """Validate one message (UTF-8 JSON object) into an event; raise `DecodeError` otherwise."""
    data = sized(data, limits)
    event = fast_decode(data)
    if event is None:  # invalid (or, should they ever disagree, valid for the reference)
        event = to_decoded(validate(data))
    if limits is not DEFAULT_LIMITS and not limits.is_default:
        check_limits(event, limits)
    return event


def decode_rejected(
    data: bytes | bytearray | None, limits: Limits = DEFAULT_LIMITS
) -> DecodedEvent:
    """`decode_event` for a message the msgspec path has already rejected (`fast_decode`
    gave None), with limits whose caps are the schema's (`Limits.is_default`): the reference
    names the reason, or, should the two ever disagree, accepts the message. Saves decoding
    it with msgspec a second time."""
    return to_decoded(validate(sized(data, limits)))


def decode_reference(data: bytes | bytearray | None, limits: Limits = DEFAULT_LIMITS) -> Event:
    """The pydantic reference decoder: the same checks and reasons, pydantic models out.

    Several times slower than `decode_event`; the differential tests and the benchmark
    compare the two.
    """
    data = sized(data, limits)
    event = validate(data)
    if limits is not DEFAULT_LIMITS and not limits.is_default:
        check_limits(event, limits)
    return event


def decode_batch(
    messages: Sequence[bytes | bytearray | None], limits: Limits = DEFAULT_LIMITS
) -> tuple[list[DecodedEvent], list[IndexedDecodeError]]:
    """Decode many messages; never raises on bad input.

    Events come back in input order; message `i` is an event unless `i` is among the errors.
    """
    events: list[DecodedEvent] = []
    errors: list[IndexedDecodeError] = []
    for index, data in enumerate(messages):
        try:
            events.append(decode_event(data, limits))
        except DecodeError as exc:
            errors.append(IndexedDecodeError(index=index, error=exc))
    return events, errors
