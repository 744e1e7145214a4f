"""The msgspec decoding path: bytes to `DecodedEvent`, or None when msgspec rejects them.

Two steps, both in msgspec's C code except for RFC 3339 strings:

1. A typed decode into the Structs, where `ts` and `t_doc` are numbers: parsing and every
   check (types, lengths, ranges, finiteness) happen in one pass, with no Python call.
2. Only when step 1 met a string (a timestamp may be an RFC 3339 string): a generic decode,
   each RFC 3339 `ts`/`t_doc` string replaced by its Unix seconds (`rfc3339_seconds`, the
   models' parser with a shortcut for the usual shapes), then `msgspec.convert` into the
   same Structs, so the same bounds apply to both forms.

Before step 1, `readable` (`ragstream.events.guard`) makes sure the message is UTF-8
throughout and not nested too deeply: msgspec would skip invalid UTF-8 under a key the
schema does not know, and recurse on deep nesting there until Python's recursion limit.
Such a message is rejected here (None), and the reference names it `bad_json`. Should
msgspec still raise `RecursionError` (within the depth limit, but called on a nearly full
Python stack), the message is rejected the same way and the reference, whose parser does
not recurse on the Python stack, decides.

`fast_decode_many` runs step 1 over a whole batch in one loop (the hot path of the engine).
It never explains a rejection: `decode_event` asks the pydantic reference why, so reason
codes and details are the reference's.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ragstream.events.guard import readable
from ragstream.events.structs import DecodedEvent
from ragstream.events.timestamps import rfc3339_seconds

__all__ = ["fast_decode", "fast_decode_many"]

_TYPED = msgspec.json.Decoder(DecodedEvent)
_ANY = msgspec.json.Decoder()
_TIMED_LISTS = ("results", "qrels")


def fast_decode(data: bytes | bytearray) -> DecodedEvent | None:
    """The event in `data` (UTF-8 JSON), or None when it is not a valid event for msgspec."""
    if not readable(data):
        return None
    try:
        return _TYPED.decode(data)
    except msgspec.DecodeError as exc:  # ValidationError is a DecodeError too
        return _after_reject(data, exc)
    except RecursionError:
        return None


def fast_decode_many(
    messages: Sequence[bytes | bytearray | None], max_message_bytes: int
) -> list[DecodedEvent | None]:
    """`fast_decode` of each message, in order; None for an empty message, one over
    `max_message_bytes`, or one msgspec rejects (the caller asks the reference why)."""
    decode = _TYPED.decode
    events: list[DecodedEvent | None] = []
    append = events.append
    for data in messages:
        if not data or len(data) > max_message_bytes or not readable(data):
            append(None)
            continue
        try:
            append(decode(data))
        except msgspec.DecodeError as exc:
            append(_after_reject(data, exc))  # RFC 3339 times (step 2), or None
        except RecursionError:
            append(None)
    return events


def _after_reject(data: bytes | bytearray, exc: msgspec.DecodeError) -> DecodedEvent | None:
    """Step 2 when step 1 met a string where a number may be (an RFC 3339 time); else None."""
    if isinstance(exc, msgspec.ValidationError) and "got `str`" in str(exc):
        return _decode_with_text_times(data)
    return None


def _decode_with_text_times(data: bytes | bytearray) -> DecodedEvent | None:
    """Step 2: RFC 3339 strings in `ts` and `t_doc` to seconds, then validate as in step 1."""
    try:
        message = _ANY.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    if type(message) is not dict:
        return None
    _to_seconds(message, "ts")
    for name in _TIMED_LISTS:
        items = message.get(name)
        if type(items) is list:
            for item in items:
                if type(item) is dict:
                    _to_seconds(item, "t_doc")
    try:
        event: DecodedEvent = msgspec.convert(message, DecodedEvent)
    except (msgspec.ValidationError, RecursionError):
        return None
    return event


def _to_seconds(mapping: dict[str, object], key: str) -> None:
    """Replace a valid RFC 3339 string at `key` by Unix seconds; leave anything else.

    A malformed string stays a string, which the typed conversion then rejects; a date out
    of range becomes seconds out of range, rejected by the same bounds as numbers.
    """
    text = mapping.get(key)
    if type(text) is str:
        seconds = rfc3339_seconds(text)
        if seconds is not None:
            mapping[key] = seconds
