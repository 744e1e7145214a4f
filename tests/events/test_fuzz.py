"""Fuzzing the decoders and the engine with hostile input (`bench.hostile_data`, hypothesis).

On every message, whatever it holds: `decode_event` raises nothing but `DecodeError`, and
accepts exactly what the pydantic models (the published contract) accept, with the same
values; the compiled scanner accepts only what `decode_event` accepts, with the same query id
and time; the compiled guard is the Python one; a category's expected reason, when its
construction decides it, is the reason given. And the engine, fed the whole stream in
batches, never raises and counts every message once: processed, late, duplicate, or invalid
under `decode_event`'s reason.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.hostile_data import CATEGORIES, MAX_DEPTH, Hostile, hostile_messages, nested
from ragstream.events import (
    DecodeError,
    Limits,
    Message,
    decode_event,
    guard,
)
from ragstream.events.scanner import AVAILABLE, bounds_of, scan_retrievals
from ragstream.pipeline.engine import Engine
from tests.support.defaults import engine_config

from ._examples import ANSWER, FEEDBACK, GOLDEN, RETRIEVAL, to_bytes
from .test_differential import _contract, _verdict
from .test_scan import _check as _scanned_as_msgspec

_LIMITS = Limits(max_message_bytes=65_536)  # the schema's caps: msgspec's path, smaller input
_STREAM = list(hostile_messages(1500, seed=10, max_bytes=_LIMITS.max_message_bytes))


def _check(data: bytes, limits: Limits = _LIMITS) -> tuple[Any, ...]:
    """Every invariant on one message; the decoder's verdict."""
    verdict = _verdict(decode_event, data, limits)
    assert guard.readable(data) == guard.readable_reference(data)
    if len(data) > limits.max_message_bytes:
        return verdict
    assert (verdict if verdict[0] == "ok" else verdict[:1]) == _contract(data)
    scanned = scan_retrievals([data], bounds_of(limits))[0]
    if scanned is not None:
        assert verdict[0] == "ok"
        event = decode_event(data, limits)
        assert event.type == "retrieval"
        assert (scanned.query_id, repr(scanned.ts)) == (event.query_id, repr(event.ts))
        _scanned_as_msgspec(data, limits)  # every value, the ranking and labels
    return verdict


def test_the_stream_covers_every_category_and_both_verdicts() -> None:
    assert {m.category for m in _STREAM} == set(CATEGORIES)
    expected = Counter(m.expect for m in _STREAM)
    assert expected["ok"] > 0
    assert expected["bad_json"] > 0
    assert expected["too_large"] > 0
    assert expected[None] > 0


@pytest.mark.parametrize("category", CATEGORIES)
def test_every_decoder_agrees_on_the_generated_stream(category: str) -> None:
    messages = [m for m in _STREAM if m.category == category]
    for message in messages:
        verdict = _check(message.value)
        if message.expect is not None:
            got = verdict[0] if verdict[0] == "ok" else verdict[1]
            assert got == message.expect, (message.category, message.value[:120])


def _engine(scan: bool) -> Engine:
    config = engine_config(
        cutoffs=(1, 5),
        half_lives=(),
        windows=(60.0, 3600.0),
        clock="event",
        label_keys=("app",),
        limits=_LIMITS,
        scan=scan,
    )
    return Engine(config, wall=lambda: 1_900_000_000.0)


def _reasons(messages: list[Hostile]) -> Counter[str]:
    reasons: Counter[str] = Counter()
    for message in messages:
        try:
            decode_event(message.value, _LIMITS)
        except DecodeError as exc:
            reasons[exc.reason] += 1
    return reasons


@pytest.mark.parametrize("scan", [True, False], ids=["scanner", "msgspec"])
def test_the_engine_counts_every_message_of_the_stream_once(scan: bool) -> None:
    engine = _engine(scan)
    reported = 0
    for start in range(0, len(_STREAM), 97):
        batch = [Message(m.value, offset=i) for i, m in enumerate(_STREAM[start : start + 97])]
        reported += len(engine.apply(batch).invalid)
    engine.finish()
    assert sum(engine.events.values()) == len(_STREAM)
    assert engine.invalid == _reasons(_STREAM)
    assert engine.events[("unknown", "invalid")] == reported == sum(engine.invalid.values())
    valid = sum(n for (kind, _), n in engine.events.items() if kind != "unknown")
    assert valid >= sum(m.category == "valid" for m in _STREAM)


# -- structure (hypothesis) --------------------------------------------------------------------

_TOKENS = [
    b"NaN",
    b"-Infinity",
    b"1e999",
    b"-0",
    b"1" + b"9" * 400,
    b"0." + b"0" * 400 + b"1",
    b"true",
    b"null",
    b"\x00",
    b"\xff",
    b"tru",
    b"01",
    b"1.",
    b".5",
    b"+1",
]
_STRING_PARTS = [
    b"a",
    b"\xc3\xa9",
    b"\xf0\x9f\x98\x80",
    b"\xed\xa0\x80",
    b"\xc0\x80",
    b"\xff",
    b"\\ud800",
    b"\\udc00",
    b"\\ud83d\\ude00",
    b"\\u0000",
    b"\\",
    b"\\x",
    b"\x00",
    b"\x1f",
    b"\xef\xbb\xbf",
    b"[",
    b"{",
    b'\\"',
]


def _string(parts: list[bytes]) -> bytes:
    return b'"' + b"".join(parts) + b'"'


_strings = st.lists(st.sampled_from(_STRING_PARTS), max_size=4).map(_string) | st.sampled_from(
    [b'"retrieval"', b'"feedback"', b'"answer"', b'"2024-05-01T12:00:00Z"', b'"q1"', b'""']
)
_scalars = (
    st.sampled_from(_TOKENS)
    | st.integers(-(10**20), 10**20).map(lambda n: str(n).encode())
    | st.floats(allow_nan=False, allow_infinity=False).map(lambda x: repr(x).encode())
    | _strings
)


def _array(items: list[bytes]) -> bytes:
    return b"[" + b",".join(items) + b"]"


def _object(members: list[tuple[bytes, bytes]]) -> bytes:
    """Keys may repeat: the members are written as drawn."""
    return b"{" + b",".join(key + b":" + value for key, value in members) + b"}"


_keys = _strings | st.sampled_from(
    [b'"type"', b'"query_id"', b'"ts"', b'"results"', b'"doc_id"', b'"rel"', b'"labels"']
)
_values: st.SearchStrategy[bytes] = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4).map(_array)
        | st.lists(st.tuples(_keys, inner), max_size=4).map(_object)
        | st.builds(
            nested,
            st.integers(MAX_DEPTH - 3, MAX_DEPTH + 3) | st.integers(1, 3000),
            st.sampled_from(["array", "object", "mixed"]),
            inner,
        )
    ),
    max_leaves=12,
)
_BASES = [to_bytes(e) for e in (RETRIEVAL, GOLDEN, ANSWER, FEEDBACK)] + [
    to_bytes({**FEEDBACK, "ts": 1714564990}),
    to_bytes({**GOLDEN, "results": [{"doc_id": "a"}, {"doc_id": "b", "rel": 2}]}),
]
_FIELDS = [b"type", b"query_id", b"ts", b"labels", b"results", b"qrels", b"contexts", b"rel"]


@st.composite
def _messages(draw: st.DrawFn) -> bytes:
    """A valid event with members added (known keys: repeated, so wrong types; unknown
    keys: anything), or a value that is not an event at all, or one cut short."""
    base = draw(st.sampled_from(_BASES))
    roll = draw(st.integers(0, 9))
    if roll == 0:
        return draw(_values)
    members = draw(
        st.lists(
            st.tuples(st.sampled_from(_FIELDS).map(lambda k: b'"' + k + b'"') | _keys, _values),
            min_size=1,
            max_size=3,
        )
    )
    extra = b",".join(key + b":" + value for key, value in members)
    message = (
        base[:-1] + b"," + extra + b"}" if draw(st.booleans()) else b"{" + extra + b"," + base[1:]
    )
    if roll == 1:
        return message[: draw(st.integers(1, len(message)))]
    return message


_FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))


@_FUZZ
@given(_messages())
def test_any_structure_gets_one_verdict_from_every_decoder(data: bytes) -> None:
    _check(data)


_SHARED = _engine(scan=AVAILABLE)


@settings(_FUZZ, max_examples=60)
@given(st.lists(_messages(), min_size=1, max_size=8))
def test_the_engine_counts_any_batch_once(batch: list[bytes]) -> None:
    before, invalid_before = sum(_SHARED.events.values()), Counter(_SHARED.invalid)
    report = _SHARED.apply([Message(value) for value in batch])
    assert sum(_SHARED.events.values()) - before == len(batch)
    new_invalid = Counter(_SHARED.invalid)
    new_invalid.subtract(invalid_before)
    reported = Counter(error.reason for _, error in report.invalid)
    assert +new_invalid == reported == _reasons([Hostile("", value, None) for value in batch])


_soup = st.lists(
    st.sampled_from([b"[", b"]", b"{", b"}", b'"', b"\\", b"1", b" ", b":", b",", b"\xc3\xa9"]),
    max_size=60,
).map(b"".join)
# past the 200 opening brackets of the quick count, near the limit: the exact walk decides
_bracket_soup = st.builds(
    lambda opens, soup: opens + soup,
    st.integers(MAX_DEPTH - 10, MAX_DEPTH + 3).map(lambda n: b"[{"[n % 2 : n % 2 + 1] * n),
    _soup,
)


@_FUZZ
@given(st.binary(max_size=600) | _values | _bracket_soup)
def test_the_compiled_guard_is_the_python_rule(data: bytes) -> None:
    assert guard.readable(data) == guard.readable_reference(data)
