"""Hostile messages: every decoding path gives an event or a reason, never an exception.

Two kinds of input that msgspec reads without validating, because it skips the values of
keys the schema does not know: deep nesting (msgspec recurses on the C stack until Python's
recursion limit, then raises `RecursionError`) and invalid UTF-8. Both are `bad_json`: no
value may be nested in more than 200 arrays or objects (the limit of jiter, the parser of
`decode_event`'s second pass), and the whole message must be UTF-8 (docs/events.md).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from ragstream.events import (
    DEFAULT_LIMITS,
    BatchReader,
    DecodedEvent,
    DecodeError,
    Limits,
    decode_batch,
    decode_event,
)
from ragstream.events.guard import MAX_DEPTH, readable, readable_reference
from ragstream.events.scanner import AVAILABLE, bounds_of, scan_retrievals

from ._examples import ANSWER, FEEDBACK, GOLDEN, to_bytes

_FEEDBACK = to_bytes({**FEEDBACK, "ts": 1714564990})  # numeric: msgspec's one-pass path
_TEXT_TIME = to_bytes(FEEDBACK)  # an RFC 3339 ts: decode_event's second pass


def _typed(data: bytes) -> DecodedEvent | None:
    """What `decode_event`'s first pass makes of `data` (the guard, then msgspec's typed
    decode), None when it leaves the message to the second pass."""
    if not readable(data):
        return None
    try:
        return msgspec.json.decode(data, type=DecodedEvent)
    except (msgspec.DecodeError, RecursionError):
        return None


def _with(base: bytes, member: bytes) -> bytes:
    """`base` (a JSON object) with one more member written as raw bytes, last."""
    return base[:-1] + b", " + member + b"}"


def _arrays(depth: int, inner: bytes = b"") -> bytes:
    return b"[" * depth + inner + b"]" * depth


def _objects(depth: int, inner: bytes = b"1") -> bytes:
    return b'{"k": ' * depth + inner + b"}" * depth


def _mixed(depth: int, inner: bytes = b"1") -> bytes:
    """Arrays and objects in turn, `depth` of them around `inner`."""
    for i in range(depth):
        inner = b"[" + inner + b"]" if i % 2 else b'{"k": ' + inner + b"}"
    return inner


def _deep_in_context(depth: int) -> bytes:
    head = to_bytes({**ANSWER, "contexts": []})
    return head.replace(
        b'"contexts":[]', b'"contexts":[{"text": "t", "x": ' + _arrays(depth) + b"}]"
    )


def _deep_in_result(depth: int) -> bytes:
    head = to_bytes({**GOLDEN, "results": []})
    return head.replace(
        b'"results":[]', b'"results":[{"doc_id": "d", "x": ' + _arrays(depth) + b"}]"
    )


# Nesting: the value of `x` is at depth 1, so 200 arrays put the innermost at depth 200.
_TOO_DEEP = {
    "1000 arrays under an unknown key": _with(_FEEDBACK, b'"x": ' + _arrays(1000)),
    "201 arrays under an unknown key": _with(_FEEDBACK, b'"x": ' + _arrays(201)),
    "a value in the 200th array": _with(_FEEDBACK, b'"x": ' + _arrays(200, b"1")),
    "200 objects and a value": _with(_FEEDBACK, b'"x": ' + _objects(200)),
    "100 000 arrays (200 KB)": _with(_FEEDBACK, b'"x": ' + _arrays(100_000)),
    "unterminated 100 000 arrays": _with(_FEEDBACK, b'"x": ' + b"[" * 100_000)[:-1],
    "1000 arrays in a context": _deep_in_context(1000),
    "1000 arrays in a result": _deep_in_result(1000),
    "1000 arrays under a known key": _with(_FEEDBACK, b'"labels": ' + _arrays(1000)),
    "1000 arrays, an RFC 3339 ts": _with(_TEXT_TIME, b'"x": ' + _arrays(1000)),
    "201 arrays, an RFC 3339 ts": _with(_TEXT_TIME, b'"x": ' + _arrays(201)),
}
_DEEP_ENOUGH = {
    "200 empty arrays": _with(_FEEDBACK, b'"x": ' + _arrays(200)),
    "a value in the 199th array": _with(_FEEDBACK, b'"x": ' + _arrays(199, b"1")),
    "199 objects and a value": _with(_FEEDBACK, b'"x": ' + _objects(199)),
    "brackets in strings": _with(_FEEDBACK, b'"x": "' + b"[" * 1000 + b'"'),
    "brackets in an escaped string": _with(_FEEDBACK, b'"x": "\\"' + b"{" * 1000 + b'"'),
    "198 arrays in a context (200 deep)": _deep_in_context(198),
    "200 arrays, an RFC 3339 ts": _with(_TEXT_TIME, b'"x": ' + _arrays(200)),
    "many shallow arrays": _with(_FEEDBACK, b'"x": [' + b",".join([b"[[]]"] * 1000) + b"]"),
}
_NOT_UTF8 = {
    "in an unknown value": _with(_FEEDBACK, b'"x": "\xff"'),
    "in an unknown key": _with(_FEEDBACK, b'"\xff": 1'),
    "an encoded surrogate": _with(_FEEDBACK, b'"x": "\xed\xa0\x80"'),
    "an overlong NUL": _with(_FEEDBACK, b'"x": "\xc0\x80"'),
    "above U+10FFFF": _with(_FEEDBACK, b'"x": "\xf4\x90\x80\x80"'),
    "a truncated sequence": _with(_FEEDBACK, b'"x": "\xe2\x82"'),
    "a lone continuation byte": _with(_FEEDBACK, b'"x": ["a\x80"]'),
    "deep in an unknown value": _with(_FEEDBACK, b'"x": [{"y": ["\xfe"]}]'),
    "in a context's unknown key": to_bytes(ANSWER).replace(b'"text"', b'"\xff": 1, "text"'),
    "in a result's unknown value": to_bytes(GOLDEN).replace(b'"d1"', b'"d1", "x": "\xc3"'),
    "latin-1 in the query": to_bytes(GOLDEN)[:-1] + b', "query": "caf\xe9"}',
    "an RFC 3339 ts": _with(_TEXT_TIME, b'"x": "\xff"'),
}
_SURROGATE_ESCAPES = {
    "a lone high surrogate": _with(_FEEDBACK, b'"x": "\\ud800"'),
    "a lone low surrogate": _with(_FEEDBACK, b'"x": "\\udc00"'),
    "a high surrogate and a letter": _with(_FEEDBACK, b'"x": "\\ud800\\u0041"'),
    "two high surrogates": _with(_FEEDBACK, b'"x": "\\ud800\\ud800"'),
    "a reversed pair": _with(_FEEDBACK, b'"x": "\\udc00\\ud800"'),
    "in a key": _with(_FEEDBACK, b'"\\udfff": 1'),
    "in a known id": _FEEDBACK.replace(b'"kb-12"', b'"\\ud83d"'),
}
_HOSTILE = {
    **{f"deep: {k}": v for k, v in _TOO_DEEP.items()},
    **{f"utf-8: {k}": v for k, v in _NOT_UTF8.items()},
    **{f"surrogate: {k}": v for k, v in _SURROGATE_ESCAPES.items()},
}
_ACCEPTED = {
    **_DEEP_ENOUGH,
    "a surrogate pair": _with(_FEEDBACK, b'"x": "\\ud83d\\ude00"'),
    "the same pair as UTF-8": _with(_FEEDBACK, b'"x": "\xf0\x9f\x98\x80"'),
    "U+10FFFF": _with(_FEEDBACK, b'"\xf4\x8f\xbf\xbf": "\\udbff\\udfff"'),
}

Decoder = Callable[[bytes], Any]
_DECODERS: dict[str, Decoder] = {
    "decode_event": decode_event,
    "BatchReader": lambda data: _only(_batch(BatchReader().read([data]))),
    "decode_event, tighter limits": lambda data: decode_event(data, Limits(max_results=10)),
    "decode_batch": lambda data: _only(decode_batch([data])),
}


def _batch(read: Any) -> tuple[list[Any], list[Any]]:
    return read.events, read.errors


def _only(batch: tuple[list[Any], list[Any]]) -> Any:
    events, errors = batch
    if errors:
        raise errors[0].error
    return events[0]


def _reason(decode: Decoder, data: bytes) -> str:
    try:
        decode(data)
    except DecodeError as exc:
        return exc.reason
    return "ok"


@pytest.mark.parametrize("decoder", _DECODERS)
@pytest.mark.parametrize("data", _HOSTILE.values(), ids=_HOSTILE)
def test_hostile_messages_are_bad_json_in_every_decoder(decoder: str, data: bytes) -> None:
    assert len(data) <= DEFAULT_LIMITS.max_message_bytes
    assert _reason(_DECODERS[decoder], data) == "bad_json"


@pytest.mark.parametrize("data", _HOSTILE.values(), ids=_HOSTILE)
def test_the_typed_pass_and_the_scanner_leave_hostile_messages_to_the_second(data: bytes) -> None:
    assert _typed(data) is None
    assert _typed(_FEEDBACK) is not None
    assert scan_retrievals([data], bounds_of(DEFAULT_LIMITS)) == [None]


@pytest.mark.parametrize("data", [*_TOO_DEEP.values(), *_NOT_UTF8.values()])
def test_the_guard_stops_what_msgspec_would_not(data: bytes) -> None:
    assert not readable(data)
    assert not readable_reference(data)


@pytest.mark.parametrize("data", _SURROGATE_ESCAPES.values(), ids=_SURROGATE_ESCAPES)
def test_msgspec_itself_refuses_unpaired_surrogates_anywhere(data: bytes) -> None:
    """RFC 8259 lets a string escape a lone surrogate; msgspec and the reference both
    refuse it, even under a key the schema does not know (it is not Unicode text)."""
    assert readable(data)  # ASCII and shallow: msgspec decides, and says no
    assert _typed(data) is None


@pytest.mark.parametrize("decoder", _DECODERS)
@pytest.mark.parametrize("data", _ACCEPTED.values(), ids=_ACCEPTED)
def test_what_is_nested_or_encoded_within_the_rules_is_an_event(decoder: str, data: bytes) -> None:
    assert _reason(_DECODERS[decoder], data) == "ok"
    text_time = data.startswith(_TEXT_TIME[:-1])  # the second pass reads RFC 3339 times
    assert text_time or _typed(data) is not None  # read in the first pass
    assert readable(data)
    assert readable_reference(data)


def test_the_depth_limit_is_the_parsers() -> None:
    """At MAX_DEPTH both passes accept, one more and both refuse (the guard, then jiter),
    whatever the kind of container."""
    for wrap in (_arrays, _objects, _mixed):
        at_limit = _with(_FEEDBACK, b'"x": ' + wrap(MAX_DEPTH - 1, b"1"))
        over = _with(_FEEDBACK, b'"x": ' + wrap(MAX_DEPTH, b"1"))
        assert _typed(at_limit) is not None
        assert _reason(decode_event, at_limit) == "ok"
        assert _typed(over) is None
        assert _reason(decode_event, over) == "bad_json"


def _at_depth(frames: int, call: Callable[[], Any]) -> Any:
    """`call()` with `frames` more Python frames on the stack."""
    if frames <= 0:
        return call()
    return _at_depth(frames - 1, call)


def test_no_recursion_error_escapes_on_a_nearly_full_stack() -> None:
    """Within the depth limit msgspec still recurses; called with the Python stack nearly
    full it may raise RecursionError, which sends the message to the second pass (whose
    parser does not use the Python stack): the event is decoded."""
    data = _with(_FEEDBACK, b'"x": ' + _arrays(MAX_DEPTH - 1, b"1"))
    headroom = 60
    frames = sys.getrecursionlimit() - len(_stack()) - headroom
    assert _at_depth(frames, lambda: _reason(decode_event, data)) == "ok"
    read = _at_depth(frames, lambda: BatchReader(scan=False).read([data]))
    assert (len(read.events), read.errors) == (1, [])


def _stack() -> list[Any]:
    frames = []
    frame = sys._getframe()
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back  # type: ignore[assignment]
    return frames


def test_text_is_left_to_the_second_pass_which_reads_it() -> None:
    text = _FEEDBACK.decode()
    assert not readable(text)
    assert not readable_reference(text)
    assert decode_event(text) == decode_event(_FEEDBACK)  # type: ignore[arg-type]


@pytest.mark.skipif(not AVAILABLE, reason="ragstream.events._event_scanner is not built")
def test_the_compiled_guard_is_the_reference_guard_on_every_table_entry() -> None:
    for data in [*_HOSTILE.values(), *_ACCEPTED.values(), _FEEDBACK, b"", b"[", b"]]]", b'"\\']:
        assert readable(data) == readable_reference(data), data[:60]
        assert readable(bytearray(data)) == readable(data)
