"""The compiled retrieval scanner against msgspec: never more accepting, always the same values.

For every message the scanner either declines (None) or returns a record whose values are
`decode_event`'s (with the same limits): the query id, the time,
the labels, the raw `t_doc` of the leading documents, and the ranking, times, qrels and
inline grades when the event carries labels. Floats compare by repr, so -0.0 and NaN count.
"""

from __future__ import annotations

import json
import math
from array import array
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ragstream.events.scanner as scan_module
from ragstream.events import (
    DEFAULT_LIMITS,
    EVENT_ADAPTER,
    DecodedRetrieval,
    DecodeError,
    Limits,
    RetrievalEvent,
    decode_event,
    encode_event,
    retrieval_event,
)
from ragstream.events.guard import MAX_DEPTH
from ragstream.events.scanner import AVAILABLE, bounds_of, scan_retrievals
from ragstream.events.timestamps import MAX_TS, MIN_DOC_TS
from ragstream.events.trace_ids import TraceField
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic

from ._scan_cases import CLEAN, INVALID, UNUSUAL, Case, cases

needs_scan = pytest.mark.skipif(
    not AVAILABLE, reason="ragstream.events._event_scanner is not built"
)
_BOUNDS = bounds_of(DEFAULT_LIMITS)
_SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


_KEYS = ("app", "k")
_TRACE = TraceField("trace_id")


def _scan(
    data: Any,
    limits: Limits = DEFAULT_LIMITS,
    top: int = 10,
    keys: tuple[str, ...] | None = _KEYS,
    trace: str | None = None,
) -> Any:
    records = scan_retrievals(
        [data], bounds_of(limits), top=top, label_keys=keys, trace_field=trace
    )
    assert len(records) == 1
    return records[0]


def _msgspec(data: bytes | bytearray | None, limits: Limits) -> DecodedRetrieval | None:
    """msgspec's retrieval event when `decode_event(data, limits)` accepts `data`, else None."""
    try:
        event = decode_event(data, limits)
    except DecodeError:
        return None
    return event if isinstance(event, DecodedRetrieval) else None


def _canon(value: Any) -> Any:
    """Equal means the same types and values (floats by repr, so -0.0 and NaN count)."""
    if isinstance(value, dict):
        return ("dict", [(_canon(k), _canon(v)) for k, v in value.items()])
    if isinstance(value, tuple | list):
        return (type(value).__name__, [_canon(item) for item in value])
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)


def _doubles(packed: object) -> list[str]:
    assert type(packed) is bytes
    assert len(packed) % 8 == 0
    return [repr(v) for v in array("d", packed)]


def _times(values: list[float | None]) -> list[str]:
    return [repr(math.nan if v is None else v) for v in values]


def _view(record: Any) -> dict[str, Any]:
    """A scanned record's fields in comparable form."""
    return {
        "query_id": _canon(record.query_id),
        "ts": _canon(record.ts),
        "labels": _canon(record.labels),
        "top": _doubles(record.top),
        "ids": _canon(record.ids),
        "times": None if record.times is None else _doubles(record.times),
        "qrels": _canon(record.qrels),
        "inline": _canon(record.inline),
    }


def _expected(
    event: DecodedRetrieval, top: int = 10, keys: tuple[str, ...] | None = _KEYS
) -> dict[str, Any]:
    """What the scanner must return for msgspec's `event`."""
    docs = event.results
    labelled = bool(event.qrels) or any(doc.rel is not None for doc in docs)
    inline = tuple((d.doc_id, d.rel, d.t_doc) for d in docs if d.rel is not None)
    qrels = tuple((q.doc_id, q.rel, q.t_doc) for q in event.qrels or ())
    return {
        "query_id": _canon(event.query_id),
        "ts": _canon(event.ts),
        "labels": _canon(None if keys is None else tuple(event.labels.get(k, "") for k in keys)),
        "top": _times([doc.t_doc for doc in docs[:top]]),
        "ids": _canon(tuple(doc.doc_id for doc in docs) if labelled else None),
        "times": _times([doc.t_doc for doc in docs]) if labelled else None,
        "qrels": _canon(qrels or None),
        "inline": _canon(inline or None),
    }


def _check(data: Any, limits: Limits = DEFAULT_LIMITS, top: int = 10, labels: bool = True) -> Any:
    """Scan `data`; when accepted, msgspec accepts it too, with the record's values. With
    `labels`, the keys asked for are the event's own (as msgspec reads them) and one it
    does not carry. Scanned once more with the trace field `trace_id`: accepted only when
    accepted without, with the same values and the field's trace id as msgspec reads it."""
    event = _msgspec(data if type(data) is bytes else None, limits)
    keys = None if not labels else (*(event.labels if event else ()), "absent")
    record = _scan(data, limits, top, keys)
    traced = _scan(data, limits, top, keys, _TRACE.name)
    if traced is not None:
        assert record is not None, f"declined without the trace field only: {data[:300]!r}"
        assert _view(traced) == _view(record)
        assert traced.trace_id == _TRACE.of_message(data), data[:300]
    if record is not None:
        assert record.trace_id is None
        assert event is not None, f"the scanner accepted what msgspec rejects: {data[:300]!r}"
        assert _view(record) == _expected(event, top, keys), data[:300]
        if record.ids is not None:  # the ranking and inline labels of the events' own rule
            docs, repeats, inline = event.ranking()
            assert (record.ids, repeats) == (tuple(doc["doc_id"] for doc in docs), 0)
            assert _canon(record.inline) == _canon(inline or None)
    return record


def _accepted(data: bytes, limits: Limits = DEFAULT_LIMITS) -> Any:
    record = _check(data, limits)
    assert record is not None, f"declined: {data[:300]!r}"
    return record


# -- the build and the fallback ----------------------------------------------------------


def test_the_extension_is_built() -> None:
    # `pip install -e .` compiles it (setup.py); without it every message takes msgspec.
    assert AVAILABLE


def test_without_the_extension_every_message_is_declined(monkeypatch: pytest.MonkeyPatch) -> None:
    values: list[bytes | bytearray | None] = [_hand(), None, b"{}"]
    monkeypatch.setattr(scan_module, "AVAILABLE", False)
    assert scan_retrievals(values, _BOUNDS) == [None, None, None]
    assert scan_retrievals([], _BOUNDS) == []


# -- hand-computed records ---------------------------------------------------------------


def _hand() -> bytes:
    return (
        b'{"type": "retrieval", "query_id": "q1", "ts": 1714564800.5,'
        b' "labels": {"app": "s", "k": ""}, "query": "caf\\u00e9 \\"x\\"",'
        b' "results": [{"doc_id": "a", "score": 2, "t_doc": 100},'
        b' {"doc_id": "b", "rel": 1}, {"doc_id": "c", "t_doc": -0.0, "rel": 0, "score": null}],'
        b' "qrels": [{"doc_id": "z", "rel": 3}, {"doc_id": "a", "rel": -1.5, "t_doc": 7e2}]}'
    )


@needs_scan
def test_a_record_by_hand() -> None:
    record = _accepted(_hand())
    assert record.query_id == "q1"
    assert repr(record.ts) == "1714564800.5"
    assert record.labels == ("s", "", "")  # app, k and a key it does not carry
    assert _doubles(record.top) == ["100.0", "nan", "-0.0"]
    assert record.ids == ("a", "b", "c")
    assert _doubles(record.times) == ["100.0", "nan", "-0.0"]
    assert _canon(record.qrels) == _canon((("z", 3.0, None), ("a", -1.5, 700.0)))
    assert _canon(record.inline) == _canon((("b", 1.0, None), ("c", 0.0, -0.0)))


@needs_scan
def test_an_unlabelled_record_by_hand() -> None:
    # -0.0 is a valid time (>= 0) and keeps its sign; the integer -0 reads as 0.0
    data = b'{"ts":-0.0,"results":[{"doc_id":"x","t_doc":-0},{"doc_id":"y","t_doc":-1e9}],'
    data += b'"qrels":[],"type":"retrieval","query_id":"7"}'
    record = _accepted(data)
    assert (record.query_id, repr(record.ts), record.labels) == ("7", "-0.0", ("",))
    assert _doubles(record.top) == ["0.0", "-1000000000.0"]
    assert (record.ids, record.times, record.qrels, record.inline) == (None, None, None, None)
    assert _doubles(_scan(data, top=1).top) == ["0.0"]


@needs_scan
def test_without_labels_and_with_any_top() -> None:
    full = _view(_scan(_hand()))
    for top, size in [(0, 0), (1, 1), (3, 3), (4, 3), (1000, 3)]:
        record = _check(_hand(), top=top, labels=False)
        assert record.labels is None
        assert _doubles(record.top) == full["top"][:size]
        assert {**_view(record), "labels": None, "top": None} == {
            **full,
            "labels": None,
            "top": None,
        }


@needs_scan
@pytest.mark.parametrize("labels", [b'{"k": 1}', b"null", b'{"": "v"}', b"[]"])
def test_bad_labels_are_declined_even_when_not_wanted(labels: bytes) -> None:
    data = b'{"type":"retrieval","query_id":"q","ts":1,"results":[],"labels":' + labels + b"}"
    assert _msgspec(data, DEFAULT_LIMITS) is None
    assert _scan(data, keys=None) is None


@needs_scan
def test_a_batch_keeps_length_and_order() -> None:
    feedback = b'{"type":"feedback","query_id":"q","ts":1,"doc_id":"a","rel":1,"source":"click"}'
    answer = (
        b'{"type":"answer","query_id":"q","ts":1,"question":"?","answer":"!",'
        b'"contexts":[{"text":"t"}]}'
    )
    values: list[bytes | bytearray | None] = [None, b"", feedback, answer, b'{"type":', _hand()]
    records = scan_retrievals(values, _BOUNDS, label_keys=_KEYS)
    assert len(records) == len(values)
    assert records[:5] == [None] * 5
    assert _view(records[5]) == _expected(_event(_hand()))


@needs_scan
def test_label_values_of_the_keys_asked_for_shared_within_a_call() -> None:
    def event(query_id: str, labels: str) -> bytes:
        return (
            f'{{"type":"retrieval","query_id":"{query_id}","ts":1,"labels":{labels},'
            '"results":[{"doc_id":"a"}]}'
        ).encode()

    values: list[bytes | bytearray | None] = [
        event("q1", '{"app":"a","index":"v1","other":"x"}'),
        event("q2", '{"index":"v1","app":"a"}'),  # the same values: the same tuple
        event("q3", '{"app":"a"}'),
        event("q4", "{}"),
        event("q5", '{"app":"ab","index":"v"}'),  # "a" + "bv" must not be "ab" + "v"
        event("q6", '{"app":"a","index":"bv"}'),
    ]
    records = scan_retrievals(values, _BOUNDS, label_keys=["app", "index"])
    labels = [r.labels for r in records if r is not None]
    assert labels == [("a", "v1"), ("a", "v1"), ("a", ""), ("", ""), ("ab", "v"), ("a", "bv")]
    assert labels[0] is labels[1]
    assert [r.labels for r in scan_retrievals(values[:1], _BOUNDS, label_keys=["index"]) if r] == [
        ("v1",)
    ]
    assert [r.labels for r in scan_retrievals(values[:1], _BOUNDS, label_keys=[]) if r] == [()]
    with pytest.raises(TypeError, match="tuple of str"):
        scan_retrievals(values, _BOUNDS, label_keys=[b"app"])  # type: ignore[list-item]


def _event(data: bytes) -> DecodedRetrieval:
    event = _msgspec(data, DEFAULT_LIMITS)
    assert event is not None
    return event


@needs_scan
def test_what_is_not_bytes_is_declined() -> None:
    assert _scan(bytearray(_hand())) is None
    others: list[Any] = [memoryview(_hand()), _hand().decode(), 1]
    assert scan_retrievals(others, _BOUNDS) == [None, None, None]


# -- what is declined --------------------------------------------------------------------

_BASE = b'{"type":"retrieval","query_id":"q","ts":1,"labels":{"k":"v"},"results":[{"doc_id":"a"}]}'
_DECLINED: dict[str, bytes] = {
    "escaped unknown key": _BASE[:-1] + b',"\\u0078":1}',
    "non-ASCII unknown key": _BASE[:-1] + ',"é":1}'.encode(),
    "escaped unknown doc key": _BASE.replace(b'"a"}', b'"a","\\n":1}'),
    "repeated key": _BASE[:-1] + b',"ts":2}',
    "repeated doc key": _BASE.replace(b'"a"}', b'"a","doc_id":"b"}'),
    "repeated doc_id": _BASE.replace(b'{"doc_id":"a"}', b'{"doc_id":"a"},{"doc_id":"a"}'),
    "escaped key": _BASE.replace(b'"ts"', b'"\\u0074s"'),
    "escaped type": _BASE.replace(b'"retrieval"', b'"retrieva\\u006c"'),
    "escaped query_id": _BASE.replace(b'"q"', b'"\\/q"'),
    "escaped doc_id": _BASE.replace(b'"a"', b'"a\\n"'),
    "escaped label key": _BASE.replace(b'"k"', b'"\\u006b"'),
    "escaped label value": _BASE.replace(b'"v"', b'"\\""'),
    "non-ASCII query_id": _BASE.replace(b'"q"', '"qé"'.encode()),
    "non-ASCII doc_id": _BASE.replace(b'"a"', '"文"'.encode()),
    "non-ASCII label": _BASE.replace(b'"v"', '"😀"'.encode()),
    "RFC 3339 ts": _BASE.replace(b'"ts":1', b'"ts":"2024-05-01T12:00:00Z"'),
    "RFC 3339 t_doc": _BASE.replace(b'"a"}', b'"a","t_doc":"1970-01-01T00:00:00+01:00"}'),
    "RFC 3339 qrel t_doc": _BASE[:-1]
    + b',"qrels":[{"doc_id":"a","rel":1,"t_doc":"2024-05-01T12:00:00Z"}]}',
    "19-digit integer": _BASE.replace(b'"a"}', b'"a","score":1234567890123456789}'),
}


@needs_scan
@pytest.mark.parametrize("data", _DECLINED.values(), ids=_DECLINED)
def test_documented_declines(data: bytes) -> None:
    assert _msgspec(data, DEFAULT_LIMITS) is not None  # valid: the caller decodes it
    assert _scan(data) is None
    assert _scan(_BASE) is not None


# Values of keys the schema does not know: every JSON type, nested, escapes, non-ASCII, any
# magnitude; and malformed ones, which msgspec rejects (it checks what it skips)
_UNKNOWN = [
    *[b"null", b"true", b"false", b"0", b"-0", b"1.5e-3", b"1E+400", b"-1e400", b"1e-400"],
    *[b"1" + b"0" * 400, b"123456789012345678901234567890.5e-10", b'""', b'"x"', b"[]", b"{}"],
    b'"\\u0000\\"\\\\\\/\\b\\f\\n\\r\\t\\ud83d\\ude00\\u00E9"',
    '"é 中 😀 \u2028 \x7f"'.encode(),
    b'"' + b"x" * 200_000 + b'"',  # longer than any text the schema allows: no limit
    b'{"a": [1, {"b": null, "c": [true, false, "s"]}], "": {}, "a": 2}',  # a repeated key
    '{"é\\u00e9": {"\\"": ["\\ud83d\\ude00", -1.0E-7]}}'.encode(),
    b' [ 1 , [ ] , { } , "x" ] ',
]
_MALFORMED = [b"NaN", b"-Infinity", b"tru", b"nul", b"[1,]", b"[,1]", b'{"a":1,}', b'{"a" 1}']
_MALFORMED += [b"{1:2}", b"[1 2]", b'{"a":1 "b":2}', b'"\\x"', b'"\\U0041"', b'"\\u12"']
_MALFORMED += [b'"\\ud800"', b'"\\udc00"', b'"\\ud83d\\u0041"', b'"\x01"', b'"\xff"']
_MALFORMED += [b'"\xed\xa0\x80"', b'{"\xff":1}', b'{"\x01":1}', b"01", b"1.", b".5", b"+1"]
_MALFORMED += [b"-", b"1e", b"1e+", b"0x1", b"'a'", b"[", b"{", b'"a', b"[]]", b"{}}", b"", b"]"]


def _with_unknown(value: bytes) -> list[bytes]:
    """`_BASE` with `value` under keys the schema does not know: at the top (first and
    last), in a result, and in a qrel (where `score` is unknown too)."""
    with_qrel = _BASE[:-1] + b',"qrels":[{"doc_id":"a","rel":1}]}'
    return [
        _BASE[:-1] + b',"trace_id":' + value + b"}",
        b'{"x-y": ' + value + b", " + _BASE[1:],
        _BASE.replace(b'"a"}', b'"a","chunk_id":' + value + b',"score":1}'),
        with_qrel.replace(b'"rel":1}', b'"score":' + value + b',"rel":1,"":' + value + b"}"),
    ]


@needs_scan
@pytest.mark.parametrize("value", _UNKNOWN, ids=range(len(_UNKNOWN)))
def test_unknown_keys_are_skipped(value: bytes) -> None:
    plain = [_BASE, _BASE, _BASE.replace(b'"a"}', b'"a","score":1}')]
    plain.append(_BASE[:-1] + b',"qrels":[{"doc_id":"a","rel":1}]}')
    for data, without in zip(_with_unknown(value), plain, strict=True):
        assert _view(_accepted(data)) == _view(_accepted(without))  # the same values


@needs_scan
@pytest.mark.parametrize("value", _MALFORMED, ids=range(len(_MALFORMED)))
def test_malformed_unknown_values_are_declined(value: bytes) -> None:
    literal = value in (b"NaN", b"-Infinity")  # not JSON, but read as floats (docs/events.md)
    for data in _with_unknown(value):
        assert (_msgspec(data, DEFAULT_LIMITS) is not None) == literal
        assert _scan(data) is None


@needs_scan
@pytest.mark.parametrize("extra", [-2, -1, 0, 1])
@pytest.mark.parametrize("inner", [b"0", b"[]", b'{"k":"v"}', b"{}"])
def test_unknown_values_nested_up_to_the_guard(extra: int, inner: bytes) -> None:
    """A value nested in more than MAX_DEPTH arrays or objects is too deep, as the guard
    counts: the top-level members are at depth 1, a result's at depth 3."""
    for depth, data in [(1, _with_unknown(b"@")[0]), (3, _with_unknown(b"@")[2])]:
        levels = MAX_DEPTH - depth + extra
        nested = b'[{"k":' * (levels // 2) + b"[" * (levels % 2)
        nested += inner + b"]" * (levels % 2) + b"}]" * (levels // 2)
        message = data.replace(b"@", nested)
        record = _check(message)
        assert (record is not None) == (_msgspec(message, DEFAULT_LIMITS) is not None)
        inside = inner.startswith(b"{") and inner != b"{}"  # its "v" one level deeper
        too_deep = depth + levels + inside > MAX_DEPTH
        assert (record is None) == too_deep, (depth, levels, inner)


_COMMON_THEN = {  # a result in the common shape, more members after it: accepted or not
    b',"rel":2': True,
    b',"x":[1],"rel":2,"y":"\\u00e9"': True,
    b' ,"x":1': True,
    b',"score":2': False,  # a known key repeated: declined (msgspec takes the last)
    b',"doc_id":"b"': False,
    b',"t_doc":null': False,
    b",": False,  # invalid
    b',"x"': False,
    # unknown members as the common shape writes them, then anything
    b',"chunk_id":"a#c1","page":3': True,
    b',"Rel":1,"dic":-2.5e3,"t_do":"","":0': True,  # short keys that are not an item's
    b',"page":3,"x":"y","rel":2': True,
    b',"page": 3,"x":1': True,
    b',"page":3 ,"x":1': True,
    b',"k":"\\u00e9","l":1': True,
    b',"k":{"a":[1]},"l":true': True,
    b',"chunk_id":"a","score":2': False,
    b',"page":3,"doc_id":"b"': False,
    b',"page":01': False,
    b',"page":1.': False,
    b',"k":"\\x01"': False,
    b',"k":1,': False,
    b',"k":"a': False,
}


@needs_scan
@pytest.mark.parametrize("more", _COMMON_THEN, ids=range(len(_COMMON_THEN)))
def test_members_after_the_common_shape(more: bytes) -> None:
    doc = b'{"doc_id":"a","score":1.5,"t_doc":5' + more + b"}"
    record = _check(_BASE.replace(b'{"doc_id":"a"}', doc + b',{"doc_id":"b"}'))
    assert (record is not None) == _COMMON_THEN[more]
    if record is not None and b"rel" in more:
        assert _canon(record.inline) == _canon((("a", 2.0, 5.0),))


@needs_scan
def test_size_limit_empty_and_none() -> None:
    assert _scan(_BASE, Limits(max_message_bytes=len(_BASE))) is not None
    assert _scan(_BASE, Limits(max_message_bytes=len(_BASE) - 1)) is None
    assert scan_retrievals([None, b"", b" "], _BOUNDS) == [None, None, None]


_REJECTED = [
    _BASE.replace(b"{", b"{\x0c", 1),  # form feed is not JSON whitespace
    _BASE.replace(b":1", b":\xc2\xa01"),  # nor is a no-break space
    _BASE.replace(b'"a"}]', b'"a"},]'),
    _BASE.replace(b'"v"}', b'"v",}'),
    _BASE.replace(b'"q"', b"'q'"),
    _BASE.replace(b'"a"}', b'"a","score":NaN}'),
    _BASE.replace(b'"a"}', b'"a","score":Infinity}'),
    _BASE.replace(b'"a"}', b'"a","score":1e309}'),
    _BASE.replace(b'"a"}', b'"a","rel":True}'),
    _BASE.replace(b'"a"}', b'"a","t_doc":NULL}'),
    _BASE.replace(b'"a"}', b'"a","score":"1"}'),
    _BASE.replace(b'"a"}', b'"a","score":01}'),
    _BASE.replace(b'"a"}', b'"a","score":-}'),
    _BASE.replace(b'"a"}', b'"a","score":1.}'),
    _BASE.replace(b'"a"}', b'"a","score":.1}'),
    _BASE.replace(b'"a"}', b'"a","score":+1}'),
    _BASE.replace(b'"a"}', b'"a","score":1e}'),
    _BASE.replace(b'"a"}', b'"a","rel":1e3}'),
    _BASE.replace(b'"ts":1', b'"ts":-1e-320'),
    _BASE.replace(b'"ts":1', b'"ts":32503680000'),
    _BASE.replace(b'"ts":1', b'"ts":1/2'),
    _BASE.replace(b'"a"', b'""'),
    _BASE.replace(b'"k"', b'""'),
    _BASE.replace(b'"v"', b"1"),
    _BASE.replace(b'"v"', b'"\x01"'),
    _BASE.replace(b'"q"', b'"q\ttab"'),  # a raw control character
    _BASE.replace(b'"query_id":"q",', b""),
    _BASE.replace(b',"results":[{"doc_id":"a"}]', b""),
    _BASE.replace(b'"type":"retrieval",', b""),
    _BASE.replace(b'"labels":{"k":"v"}', b'"labels":null'),
    _BASE[:-1] + b',"query":"\\ud800"}',
    _BASE[:-1] + b',"query":"\\udc00\\ud800"}',
    _BASE[:-1] + b',"query":"\\x41"}',
    _BASE[:-1] + b',"query":"\\u00e"}',
    _BASE[:-1] + b',"query":"\xed\xa0\x80"}',  # a surrogate in UTF-8
    _BASE[:-1] + b',"query":"\xc0\xaf"}',  # overlong
    _BASE[:-1] + b',"query":"\xf4\x90\x80\x80"}',  # above U+10FFFF
    _BASE[:-1] + b',"query":"\xe2\x82"}',  # cut short
    _BASE[:-1] + b',"query":1}',
    _BASE[:-1] + b',"qrels":[{"doc_id":"a"}]}',
    _BASE[:-1] + b',"qrels":[{"doc_id":"a","rel":null}]}',
    _BASE[:-1] + b',"qrels":{}}',
    _BASE + b"x",
    _BASE + b"{}",
    _BASE[:-1],
    b"\xef\xbb\xbf" + _BASE,
    b"[" + _BASE + b"]",
]


@needs_scan
@pytest.mark.parametrize("data", _REJECTED, ids=range(len(_REJECTED)))
def test_what_msgspec_rejects_is_declined(data: bytes) -> None:
    assert _msgspec(data, DEFAULT_LIMITS) is None
    assert _scan(data) is None


_NUMBERS = [
    *[b"1", b"-0", b"-0.0", b"0.1", b"1e5", b"1E+05", b"-2.5e-3", b"123.456e-2", b"0e9999"],
    *[b"123456789012345678", b"-999999999999999999", b"0.30000000000000004", b"1e-7"],
    *[b"5e-324", b"2.2250738585072011e-308", b"1.7976931348623157e308", b"32503679999.999996"],
    # rounding: ties, halfway cases and long spellings
    b"1.7976931348623158e308",
    b"2.4703282292062327e-324",
    b"2.4703282292062328e-324",
    b"9007199254740993",
    b"9007199254740993.0",
    b"1.00000000000000011102230246251565404236316680908203125",
    b"1.00000000000000011102230246251565404236316680908203126",
    b"0.1000000000000000055511151231257827021181583404541015625",
    b"1e0000000000000000000000001",
    b"100000000000000000000000e-20",
    b"0.00000000000000000000000000000000000000000000001",
    b"-62135596800.0000000001",
    b"-62135596800.00000001",
    b"1e-99999999999",
    b"-1e-0000000000000000000000000400",
    b"1." + b"0" * 60 + b"1",  # 63 characters
    b"1." + b"0" * 61 + b"1",  # 64
    # the lengths where a score stops being checked without conversion
    *[b"1234567890123456789", b"-123456789012345678", b"12345678901234567.5"],
    *[b"123456789012345678.5", b"-1234567890123456.75", b"0.000000000000000001"],
    # longer than the slow way's 64 bytes, yet read: a zero, and one the exponent brings back
    *[b"-0." + b"0" * 70, b"0." + b"0" * 70 + b"1e71", b"0." + b"0" * 70 + b"15e71"],
    # exponents far past the doubles after a long fraction: read whole, as float() reads
    # them (a clamped exponent made the first 1e9 and the second 0.1)
    b"0." + b"0" * 100_000 + b"1e10001000000",
    b"0." + b"0" * 100_000 + b"1e1000009",
    b"1e" + b"9" * 30,
    b"0." + b"0" * 20 + b"1e" + b"0" * 100_000 + b"25",
]


@needs_scan
@pytest.mark.parametrize("token", _NUMBERS)
@pytest.mark.parametrize("field", ["score", "t_doc", "rel", "ts", "qrel"])
def test_number_spellings(token: bytes, field: str) -> None:
    if field == "ts":
        data = _BASE.replace(b'"ts":1', b'"ts":' + token)
    elif field == "qrel":
        data = _BASE[:-1] + b',"qrels":[{"doc_id":"z","rel":0,"t_doc":' + token + b"}]}"
    else:
        data = _BASE.replace(b'"a"}', b'"a","' + field.encode() + b'":' + token + b"}")
    record = _check(data)
    if field == "score" and token in _NUMBERS[:17]:
        assert record is not None


# -- what must be accepted ---------------------------------------------------------------


@needs_scan
def test_every_benchmark_event_is_accepted() -> None:
    from bench.pipeline_data import DataConfig, blocks  # encodes with orjson (`test` extra)

    values = [value for block in blocks(DataConfig(), 3000) for _, value in block]
    records = scan_retrievals(values, _BOUNDS, top=10, label_keys=_KEYS)
    assert all(record is not None for record in records)
    for value, record in zip(values, records, strict=True):
        assert _view(record) == _expected(_event(value))
    assert sum(record is not None and record.qrels is not None for record in records) > 300


@needs_scan
def test_benchmark_events_with_extra_fields_are_the_same_records() -> None:
    """The extra-fields benchmark's events: the same events as without, two unknown fields
    at the top and two in each result added; every one scanned, to the same record."""
    from bench.pipeline_data import DataConfig, blocks

    plain = [value for block in blocks(DataConfig(), 2000) for _, value in block]
    extra = [value for block in blocks(DataConfig(extra_fields=True), 2000) for _, value in block]
    for without, with_extra in zip(plain, extra, strict=True):
        event = json.loads(with_extra)
        assert (event.pop("trace_id"), event.pop("retriever")["k"]) != ("", 0)
        assert all(
            len(doc) == 5 and doc.pop("chunk_id") and doc.pop("page") for doc in event["results"]
        )
        assert event == json.loads(without)
    for graded in (False, True):
        records = scan_retrievals(plain, _BOUNDS, label_keys=_KEYS, graded=graded)
        extra_records = scan_retrievals(extra, _BOUNDS, label_keys=_KEYS, graded=graded)
        assert all(record is not None for record in extra_records)
        same = [(_view(r), r and r.ranked, r and r.judged) for r in records]
        assert [(_view(r), r and r.ranked, r and r.judged) for r in extra_records] == same


@needs_scan
def test_benchmark_padded_events_are_as_long_as_with_extra_fields() -> None:
    """The extra-fields benchmark's control: the same events as without extra fields, as
    long as with them, the difference in blanks at the end of the query text."""
    from bench.pipeline_data import DataConfig, blocks

    def stream(extra_fields: bool = False, padded: bool = False) -> list[bytes]:
        data = DataConfig(extra_fields=extra_fields, padded=padded)
        return [value for block in blocks(data, 1000) for _, value in block]

    plain, padded, extra = stream(), stream(padded=True), stream(extra_fields=True)
    assert [len(value) for value in padded] == [len(value) for value in extra]
    assert sum(map(len, padded)) > 1.4 * sum(map(len, plain))
    for without, with_padding in zip(plain, padded, strict=True):
        event, control = json.loads(without), json.loads(with_padding)
        assert control.pop("query").rstrip(" ") == event.pop("query")
        assert control == event
    records = scan_retrievals(plain, _BOUNDS, label_keys=_KEYS)
    padded_records = scan_retrievals(padded, _BOUNDS, label_keys=_KEYS)
    assert all(record is not None for record in padded_records)
    assert [_view(r) for r in padded_records] == [_view(r) for r in records]


def _synthetic() -> list[dict[str, Any]]:
    traffic = SyntheticTraffic(SyntheticConfig(seed=3, probe_share=0.4, drift_at=5.0))
    events = [timed.event for timed in traffic.stream(150)]
    return [event for event in events if event["type"] == "retrieval"]


def _encodings(event: dict[str, Any]) -> list[bytes]:
    """The ways producers write an event: the helpers (pydantic), msgspec, json.dumps."""
    model = retrieval_event(
        event["query_id"],
        event["results"],
        ts=event["ts"],
        labels=event["labels"],
        query=event["query"],
        qrels=event.get("qrels"),
    )
    parsed = EVENT_ADAPTER.validate_json(json.dumps(event))
    assert isinstance(parsed, RetrievalEvent)
    decoded = _event(encode_event(parsed))
    compact = json.dumps(event, separators=(",", ":")).encode()
    return [encode_event(model), encode_event(decoded), compact, json.dumps(event).encode()]


@needs_scan
def test_every_synthetic_retrieval_is_accepted() -> None:
    events = _synthetic()
    assert len(events) == 150
    assert sum("qrels" in event for event in events) > 20
    for event in events:
        for data in _encodings(event):
            _accepted(data)


_COMMON: dict[str, dict[str, Any]] = {
    "inline rel": {
        "results": [{"doc_id": "a", "rel": 2}, {"doc_id": "b"}, {"doc_id": "c", "rel": 0}]
    },
    "qrels without t_doc": {"results": [{"doc_id": "a"}], "qrels": [{"doc_id": "a", "rel": 1}]},
    "empty results": {"results": []},
    "empty results, qrels": {"results": [], "qrels": [{"doc_id": "a", "rel": 1.5}]},
    "labels": {"labels": {"app": "support", "index": "v7", "e": ""}, "results": [{"doc_id": "a"}]},
    "nulls": {
        "results": [{"doc_id": "a", "score": None, "t_doc": None, "rel": None}],
        "query": None,
        "qrels": None,
    },
    "empty qrels": {"results": [{"doc_id": "a", "rel": None}], "qrels": []},
    "query text": {
        "query": 'naïve "q" \\ / \n\t\x00\x1f\u2028 😀 中文',
        "results": [{"doc_id": "a"}],
    },
    "old documents": {
        "results": [{"doc_id": "a", "t_doc": MIN_DOC_TS}, {"doc_id": "b", "t_doc": -1}]
    },
    "latest times": {
        "ts": math.nextafter(MAX_TS, 0),
        "results": [{"doc_id": "a", "t_doc": 3.2e10}],
    },
    "extreme numbers": {
        "results": [{"doc_id": "a", "score": -1.7976931348623157e308, "rel": -100}],
        "qrels": [{"doc_id": "a", "rel": 100, "t_doc": 5e-324}],
    },
}


@needs_scan
@pytest.mark.parametrize("ascii_only", [True, False])
@pytest.mark.parametrize("changes", _COMMON.values(), ids=_COMMON)
def test_common_shapes_are_accepted(changes: dict[str, Any], ascii_only: bool) -> None:
    event = {"type": "retrieval", "query_id": "q-1", "ts": 1714564800.25, **changes}
    _accepted(json.dumps(event, ensure_ascii=ascii_only).encode())


def _at_caps(over: str | None) -> bytes:
    """An event at every default cap (one of them one over)."""

    def size(name: str, cap: int) -> int:
        return cap + (name == over)

    event: dict[str, Any] = {
        "type": "retrieval",
        "query_id": "q" * size("query_id", 512),
        "ts": 0,
        "labels": {f"{i:0256d}": "v" * size("label", 256) for i in range(size("labels", 32))},
        "query": "é" * size("query", 100_000),
        "results": [{"doc_id": f"d{i}", "t_doc": i} for i in range(size("results", 1000))],
        "qrels": [{"doc_id": "d", "rel": 1}] * size("qrels", 10_000),
    }
    event["results"][0]["doc_id"] = "x" * size("doc_id", 512)
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode()


@needs_scan
@pytest.mark.parametrize(
    "over", [None, "query_id", "label", "labels", "query", "results", "qrels", "doc_id"]
)
def test_the_default_caps(over: str | None) -> None:
    data = _at_caps(over)
    if over is None:
        assert len(_accepted(data).ids) == 1000
    else:
        assert _msgspec(data, DEFAULT_LIMITS) is None
        assert _scan(data) is None
    tight = Limits(max_message_bytes=len(data) - 1)
    assert _scan(data, tight) is None


# -- properties --------------------------------------------------------------------------


@needs_scan
@_SETTINGS
@given(cases(), st.integers(0, 5), st.booleans())
def test_generated_messages(case: Case, top: int, labels: bool) -> None:
    """Differential: an accepted message is msgspec's, with its values, within the limits;
    and a clean message (no spelling the scanner may decline) is accepted."""
    event = _msgspec(case.data, case.limits)
    if case.grade <= UNUSUAL:  # the generator's own grading, checked against msgspec
        assert event is not None, case
    if case.grade == INVALID:
        assert event is None, case
    record = _check(case.data, case.limits, top, labels)
    if case.grade == CLEAN:
        assert record is not None, f"declined a clean message: {case}"


_BYTES = st.sampled_from(
    list(b'"\\{}[],:0123456789-+.eE \t\nnul\x00\x1f\x80\xc3\xff')
) | st.integers(0, 255)
_EDITS = st.lists(
    st.tuples(st.sampled_from(["flip", "insert", "delete", "set"]), st.integers(0), _BYTES),
    min_size=1,
    max_size=3,
)


def _edit(data: bytes, edits: list[tuple[str, int, int]]) -> bytes:
    out = bytearray(data)
    for how, where, byte in edits:
        at = where % (len(out) + 1)
        if how == "insert":
            out[at:at] = bytes([byte])
        elif out and how == "delete":
            del out[at % len(out)]
        elif out and how == "flip":
            out[at % len(out)] ^= 1 << (byte % 8)
        elif out:
            out[at % len(out)] = byte
    return bytes(out)


@needs_scan
@_SETTINGS
@given(cases().filter(lambda case: case.grade <= UNUSUAL) | st.just(None), _EDITS)
def test_mutated_messages(case: Case | None, edits: list[tuple[str, int, int]]) -> None:
    """A byte flipped, inserted, deleted or set in a valid message: never accepted unless
    msgspec accepts it, with the same values; never a crash."""
    data = _edit(_hand() if case is None else case.data, edits)
    _check(data, DEFAULT_LIMITS)
    _check_graded(data)


@needs_scan
@settings(max_examples=40, deadline=None)
@given(st.lists(cases(), max_size=6), st.integers(0, 4))
def test_a_batch_equals_one_by_one(batch: list[Case], top: int) -> None:
    values: list[bytes | bytearray | None] = [case.data for case in batch]
    records = scan_retrievals(values, _BOUNDS, top=top, label_keys=_KEYS)
    alone = [_scan(case.data, top=top) for case in batch]
    assert [r and _view(r) for r in records] == [r and _view(r) for r in alone]


# -- graded records ---------------------------------------------------------------------------


def _graded_reference(data: bytes, ts: float) -> tuple[list[float], list[float], list[float]]:
    """What the kernels read for a labeled event, from msgspec's decoding and the join's
    labels (`ragstream.join.label_map.labels_of`, independent of the scanner): per ranked
    document its grade and effective time, per judged document its grade and effective
    time."""
    from ragstream.join.label_map import decoded_again, labels_of  # the join is above events

    entry = labels_of(decoded_again(data), ts, ts + 60.0)[0]
    ids, times, grades = entry.doc_ids, entry.doc_times, entry.grades
    ranked = [grades[d][0] if d in grades else 0.0 for d in ids]
    ranked_times = [grades[d][1] if d in grades else t for d, t in zip(ids, times, strict=True)]
    judged = [*(g[0] for g in grades.values()), *(g[1] for g in grades.values())]
    return ranked, ranked_times, judged


def _check_graded(data: bytes) -> bool:
    """The graded record of `data` against the reference; True when it had labels."""
    plain = _scan(data)
    (graded,) = scan_retrievals([data], _BOUNDS, top=10, label_keys=_KEYS, graded=True)
    if plain is None:
        assert graded is None
        return False
    assert graded is not None
    same = ("query_id", "ts", "labels", "top")
    assert [_view(graded)[k] for k in same] == [_view(plain)[k] for k in same]
    if plain.ids is None:
        assert (graded.ranked, graded.judged) == (None, None)
        return False
    assert (graded.ids, graded.times, graded.qrels, graded.inline) == (None,) * 4
    assert graded.ranked is not None
    assert graded.judged is not None
    ts = plain.ts
    ranked = array("d", graded.ranked)
    judged = array("d", graded.judged)
    n, m = len(ranked) // 2, len(judged) // 2
    effective = [ts if t != t or t > ts else t for t in ranked[n:]]
    judged_times = [ts if t != t or t > ts else t for t in judged[m:]]
    want_ranked, want_times, want_judged = _graded_reference(data, ts)
    assert [repr(v) for v in ranked[:n]] == [repr(v) for v in want_ranked]
    assert [repr(v) for v in effective] == [repr(v) for v in want_times]
    got_judged = [*judged[:m], *judged_times]
    assert [repr(v) for v in got_judged] == [repr(v) for v in want_judged]
    return True


@needs_scan
def test_graded_record_by_hand() -> None:
    """qrels first, then inline labels in list order: the last grade of a document wins,
    its time the one sent with a label, else its time in the ranking, else ts."""
    data = _hand()
    assert _check_graded(data)
    (graded,) = scan_retrievals([data], _BOUNDS, top=10, label_keys=_KEYS, graded=True)
    assert graded is not None
    assert graded.judged is not None
    assert list(array("d", graded.judged))[:3] == [3.0, -1.5, 1.0]  # z, a (qrels), b, c
    assert len(graded.judged) // 16 == 4


@needs_scan
@_SETTINGS
@given(cases())
def test_graded_records_of_generated_messages(case: Case) -> None:
    if len(case.data or b"") <= DEFAULT_LIMITS.max_message_bytes and isinstance(case.data, bytes):
        _check_graded(case.data)


@needs_scan
def test_graded_records_of_synthetic_traffic() -> None:
    traffic = SyntheticTraffic(SyntheticConfig(seed=3, rate=5.0, click_share=0.2))
    labeled = sum(
        _check_graded(event.value)
        for event in traffic.take(2_000)
        if event.value.startswith(b'{"type":"retrieval"')
    )
    assert labeled > 50


# -- the trace field ---------------------------------------------------------------------

_TID = "4bf92f3577b34da6a3ce929d0e0e4736"
_ESCAPED_TID = "\\u0034" + _TID[1:]
_TRACE_VALUES: dict[bytes, tuple[bool, str | None]] = {  # value -> (scanned, trace id)
    f'"{_TID}"'.encode(): (True, _TID),
    f'"{_TID.upper()}"'.encode(): (True, None),
    f'"{"0" * 32}"'.encode(): (True, None),
    f'"{_TID[:31]}"'.encode(): (True, None),
    f'"{_TID}0"'.encode(): (True, None),
    f'"{_TID[:31]}g"'.encode(): (True, None),
    b'""': (True, None),
    b"null": (True, None),
    b"true": (True, None),
    b"1234": (True, None),
    b"-1.5e3": (True, None),
    f'["{_TID}"]'.encode(): (True, None),
    f'{{"trace_id":"{_TID}"}}'.encode(): (True, None),
    f'"{_ESCAPED_TID}"'.encode(): (False, _TID),  # escaped: msgspec reads it
    f'"{_TID}\\n"'.encode(): (False, None),
    '"é"'.encode(): (False, None),
}


@needs_scan
@pytest.mark.parametrize("value", _TRACE_VALUES, ids=range(len(_TRACE_VALUES)))
def test_the_trace_fields_values(value: bytes) -> None:
    """A trace id is kept; any other value is none; a string with an escape or a non-ASCII
    byte is declined, and msgspec's reading of it is the trace field's."""
    scanned, trace_id = _TRACE_VALUES[value]
    for data in (
        _BASE[:-1] + b',"trace_id":' + value + b"}",
        b'{"trace_id":' + value + b"," + _BASE[1:],
    ):
        assert _TRACE.of_message(data) == trace_id
        record = _check(data)
        assert record is not None  # without the trace field: an unknown key, skipped
        traced = _scan(data, trace=_TRACE.name)
        assert (traced is not None) == scanned
        if traced is not None:
            assert traced.trace_id == trace_id


@needs_scan
def test_the_trace_field_is_a_top_level_key_given_once() -> None:
    twice = _BASE[:-1] + f',"trace_id":"{_TID}","trace_id":"{"1" * 32}"}}'.encode()
    assert _scan(twice, trace=_TRACE.name) is None  # declined: msgspec keeps the last
    assert _TRACE.of_message(twice) == "1" * 32
    escaped_key = _BASE[:-1] + f',"trace\\u005fid":"{_TID}"}}'.encode()
    assert _scan(escaped_key, trace=_TRACE.name) is None
    assert _TRACE.of_message(escaped_key) == _TID
    in_result = _BASE.replace(b'"a"}', f'"a","trace_id":"{_TID}"}}'.encode())
    record = _scan(in_result, trace=_TRACE.name)
    assert record is not None
    assert record.trace_id is None  # not at the top: not the field
    assert _TRACE.of_message(in_result) is None
    other = _scan(_BASE[:-1] + f',"trace":"{_TID}"}}'.encode(), trace=_TRACE.name)
    assert other is not None
    assert other.trace_id is None  # another key


@needs_scan
def test_benchmark_events_keep_their_trace_ids() -> None:
    from bench.pipeline_data import DataConfig, blocks

    extra = [value for block in blocks(DataConfig(extra_fields=True), 500) for _, value in block]
    records = scan_retrievals(extra, _BOUNDS, label_keys=_KEYS, trace_field="trace_id")
    given = [json.loads(value)["trace_id"] for value in extra]
    assert given[0] == "0" * 32  # the first query's is all zero: no trace id
    assert [r.trace_id for r in records if r is not None] == [None, *given[1:]]
    assert len(set(given)) == len(given)


def test_the_schemas_own_fields_are_no_trace_field() -> None:
    for name in ("type", "query_id", "ts", "labels", "query", "results", "qrels", ""):
        with pytest.raises(ValueError, match="trace id field"):
            TraceField(name)
    assert TraceField("trace_id").of_message(b'{"trace_id": 1') is None  # not JSON
