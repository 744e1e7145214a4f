"""Bytes to events: the one decoder, msgspec into the Structs of `ragstream.events.structs`.

`decode_event` reads a message in one typed pass of msgspec's C code when it can: the
Structs carry every constraint of the schema, so parsing and validation are one step. Two
checks come first: the size (`rejections.sized`) and the guard (`guard.readable`: UTF-8
throughout, no value nested deeper than the limit), because msgspec skips the values of
unknown fields without looking inside them. Any message that pass does not accept takes a
second one: parsed as plain JSON (`rejections.parse`), RFC 3339 times turned into seconds,
and converted by msgspec into the same Structs; what still fails gets its reason from
`rejections.rejection`. So a message with text times, or whose repeated key has an invalid
earlier value (the last one wins), is an event; every other message decodes in the first
pass. With limits tighter than the schema's caps every message takes the second pass,
which checks them (`rejections.oversize`).

`ragstream.events.batch` reads a whole batch the way the engine does, with the compiled
scanner in front of this decoder.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ragstream.events.guard import readable
from ragstream.events.limits import DEFAULT_LIMITS, Limits
from ragstream.events.reasons import DecodeError, IndexedDecodeError
from ragstream.events.rejections import oversize, parse, rejection, sized, times_to_seconds
from ragstream.events.structs import DecodedEvent

__all__ = ["decode_batch", "decode_event"]

_TYPED = msgspec.json.Decoder(DecodedEvent)


def decode_event(data: bytes | bytearray | None, limits: Limits = DEFAULT_LIMITS) -> DecodedEvent:
    """Validate one message (UTF-8 JSON object) into an event; raise `DecodeError` otherwise."""
    data = sized(data, limits.max_message_bytes)
    default = limits is DEFAULT_LIMITS or limits.is_default
    guarded = readable(data)
    if default and guarded:
        try:
            return _TYPED.decode(data)
        except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
            pass
    message = parse(data, guarded)
    if type(message) is dict:
        times_to_seconds(message)
    try:
        event: DecodedEvent = msgspec.convert(message, DecodedEvent)
    except msgspec.ValidationError as error:
        raise rejection(message, error) from None
    if not default:
        problem = oversize(message, limits)
        if problem is not None:
            raise DecodeError("too_large", problem)
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
