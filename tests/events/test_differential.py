"""The decoder against the published contract: the same verdict and values on any input.

For every message: `decode_event` (the msgspec Structs) and the pydantic models that give
the JSON Schema and the producer helpers (`EVENT_ADAPTER`) both accept with equal field
values (floats compared by repr, so types and -0.0 count), or both reject; the reasons are
pinned by the tables. The compiled scanner, on each message, accepts only what
`decode_event` accepts, with its values.
"""

from __future__ import annotations

import json
import math
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from ragstream.events import (
    DEFAULT_LIMITS,
    EVENT_ADAPTER,
    DecodedEvent,
    DecodedRetrieval,
    DecodeError,
    Event,
    Limits,
    RetrievalEvent,
    decode_batch,
    decode_event,
)
from ragstream.events.scanner import AVAILABLE, bounds_of, scan_retrievals
from ragstream.events.timestamps import MAX_TS, MIN_DOC_TS

from ._examples import ANSWER, FEEDBACK, GOLDEN, INVALID_OBJECTS, RETRIEVAL, VALID, to_bytes
from ._examples import with_changes as changed
from .test_scan import _check as _scanned_as_msgspec


def _dump(event: Event | DecodedEvent) -> dict[str, Any]:
    """Field values; ranked documents and qrels without their None-valued keys, since the
    decoder's item Structs read an absent optional key as None (as `.get()` on the
    reference's dicts does) and do not remember whether it was absent or null. A retrieval
    event also gives its `ranking()`: documents, repeats and inline labels."""
    if isinstance(event, BaseModel):
        dumped = event.model_dump()
    else:
        dumped = {"type": event.type, **msgspec.structs.asdict(event)}
    for name in ("results", "qrels"):
        if dumped.get(name) is not None:
            dumped[name] = [_item(item) for item in dumped[name]]
    if isinstance(event, RetrievalEvent | DecodedRetrieval):
        docs, repeats, labels = event.ranking()
        dumped["ranking"] = [[_item(doc) for doc in docs], repeats, [list(x) for x in labels]]
    return dumped


def _item(item: Any) -> dict[str, Any]:
    pairs = msgspec.structs.asdict(item) if isinstance(item, msgspec.Struct) else item
    return {key: value for key, value in pairs.items() if value is not None}


def _canon(value: Any) -> Any:
    """A form where equal means the same JSON types and values (floats by repr)."""
    if isinstance(value, dict):
        return {key: _canon(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_canon(item) for item in value]
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)


def _verdict(decode: Any, data: bytes | None, limits: Limits) -> tuple[Any, ...]:
    try:
        return ("ok", _canon(_dump(decode(data, limits))))
    except DecodeError as exc:
        return ("error", exc.reason, exc.detail)


def _contract(data: bytes | None) -> tuple[Any, ...]:
    """The pydantic models' verdict: `("ok", values)` or `("error",)`."""
    if not data or len(data) > DEFAULT_LIMITS.max_message_bytes:
        return ("error",)
    try:
        return ("ok", _canon(_dump(EVENT_ADAPTER.validate_json(data))))
    except ValidationError:
        return ("error",)


def _agree(data: bytes | None, limits: Limits = DEFAULT_LIMITS) -> tuple[Any, ...]:
    """Assert the decoder agrees with the models on `data` (with the schema's caps), and the
    compiled scanner accepts it only with the decoder's values; the decoder's verdict."""
    verdict = _verdict(decode_event, data, limits)
    if limits is DEFAULT_LIMITS:
        assert (verdict if verdict[0] == "ok" else verdict[:1]) == _contract(data)
    _scanned_as_msgspec(data, limits)
    return verdict


# -- tables ----------------------------------------------------------------------------------

_RAW = [
    None,
    b"",
    b"{",
    b'{"type": "feedback",}',
    b"\xff\xfe{}",
    b"NaN",
    b"[]",
    b'[{"type": "feedback"}]',
    b"null",
    b"{}",
    b'{"type": null}',
    b'{"type": "Retrieval"}',
    b"\xef\xbb\xbf" + to_bytes(FEEDBACK),  # a byte order mark
    to_bytes(FEEDBACK) + b"\n ",
    to_bytes(FEEDBACK) + b" x",
    b'{"query_id": "\\ud800", "type": "feedback"}',  # a lone surrogate
    to_bytes(FEEDBACK).replace(b'"q-7f3a"', b'"q\\u0000"'),
    to_bytes(FEEDBACK).replace(b'"q-7f3a"', b'"q\x01"'),
    b'{"ts": "not a time", ' + to_bytes(FEEDBACK)[1:],  # a repeated key: the last one wins
    to_bytes(FEEDBACK)[:-1] + b', "rel": 2, "type": "answer"}',
    to_bytes(FEEDBACK)[:-1] + b', "rel": "2"}',
    # valid, but not for msgspec's typed pass: read in the second pass (`decode_event`)
    to_bytes(FEEDBACK)[:-1] + b', "extra": [NaN, -Infinity]}',
    b'{"type": "answer", ' + to_bytes(FEEDBACK)[1:],
    b'{"rel": [1], ' + to_bytes(changed(FEEDBACK, ts=1))[1:],
]


def _tricky() -> dict[str, dict[str, Any]]:
    """Edge cases of numbers, timestamps, lengths and nulls, valid and not."""
    cases: dict[str, dict[str, Any]] = {}
    for rel in [100, -100, 100.00000001, 1e-400, -0.0, 10**20, 10**308, 10**309, 1.5e308]:
        cases[f"rel={rel!r:.20}"] = changed(FEEDBACK, rel=rel)
    for score in [1e308, 10**309, -(10**400), 0, True, None, "1"]:
        doc = {"doc_id": "a", "score": score}
        cases[f"score={score!r:.20}"] = changed(RETRIEVAL, results=[doc])
    times: list[Any] = [
        0,
        -0.0,
        -1e-9,
        MAX_TS,
        math.nextafter(MAX_TS, 0),
        1714564800000,
        "1970-01-01T00:00:00Z",
        "1969-12-31T23:59:59.999999Z",
        "1970-01-01T00:59:59+01:00",
        "2999-12-31T23:59:59.9999999Z",
        "3000-01-01T00:00:00Z",
        "2999-12-31T23:00:00-01:00",
        "2016-12-31T23:59:60Z",
        "2016-12-31T23:59:61Z",
        "2023-02-29T00:00:00Z",
        "2024-02-29T00:00:00Z",
        "2024-05-01T24:00:00Z",
        "2024-05-01T12:00:00+24:00",
        "2024-05-01T12:00:00+23:59",
        "2024-05-01T12:00:00.Z",
        "2024-05-01T12:00:00Z\n",
        "2024-05-01T12:00:00",
        "2024-05-01",
        "20240501T120000Z",
        "2024-05-01T12:00:00." + "1" * 60 + "Z",
        "٢٠٢٤-05-01T12:00:00Z",
        "",
        None,
        True,
    ]
    doc_times: list[Any] = [
        *times,
        MIN_DOC_TS,
        math.nextafter(MIN_DOC_TS, -math.inf),
        "0001-01-01T00:00:00Z",
        "0001-01-01T00:00:00+00:01",
        "0001-01-01T00:00:00-00:01",
        "0000-12-31T23:59:59Z",
        "1066-10-14T09:00:00Z",
    ]
    for ts in times:
        cases[f"ts={ts!r:.40}"] = changed(FEEDBACK, ts=ts)
    for t_doc in doc_times:
        doc = {"doc_id": "a", "t_doc": t_doc}
        cases[f"t_doc={t_doc!r:.40}"] = changed(RETRIEVAL, results=[doc])
        cases[f"qrel t_doc={t_doc!r:.40}"] = changed(
            GOLDEN, qrels=[{"doc_id": "a", "rel": 1, "t_doc": t_doc}]
        )
    for n in [511, 512, 513]:
        cases[f"query_id {n} chars"] = changed(FEEDBACK, query_id="x" * n)
        cases[f"query_id {n} emoji"] = changed(FEEDBACK, query_id="😀" * n)
        cases[f"doc_id {n} chars"] = changed(RETRIEVAL, results=[{"doc_id": "é" * n}])
    for n in [255, 256, 257]:
        cases[f"label key {n}"] = changed(FEEDBACK, labels={"k" * n: "v"})
        cases[f"label value {n}"] = changed(FEEDBACK, labels={"k": "😀" * n})
    for n in [32, 33]:
        cases[f"{n} labels"] = changed(FEEDBACK, labels={f"k{i}": "" for i in range(n)})
    for n in [1000, 1001]:
        cases[f"{n} results"] = changed(RETRIEVAL, results=[{"doc_id": "a"}] * n)
        cases[f"{n} cited"] = changed(ANSWER, cited_doc_ids=["a"] * n)
    for n in [100, 101]:
        cases[f"{n} contexts"] = changed(ANSWER, contexts=[{"text": ""}] * n)
    for n in [100_000, 100_001]:
        cases[f"answer {n} chars"] = changed(ANSWER, answer="a" * n)
        cases[f"context {n} chars"] = changed(ANSWER, contexts=[{"text": "a" * n}])
    cases["10001 qrels"] = changed(GOLDEN, qrels=[{"doc_id": "a", "rel": 1}] * 10_001)
    cases["empty label key"] = changed(FEEDBACK, labels={"": "v"})
    cases["nulls everywhere"] = changed(
        ANSWER, model=None, cited_doc_ids=None, contexts=[{"doc_id": None, "text": "t"}]
    )
    cases["null labels"] = changed(FEEDBACK, labels=None)
    cases["null results"] = changed(RETRIEVAL, results=None)
    cases["null doc fields"] = changed(
        RETRIEVAL, results=[{"doc_id": "a", "score": None, "t_doc": None, "rel": None}]
    )
    cases["qrels with null rel"] = changed(GOLDEN, qrels=[{"doc_id": "a", "rel": None}])
    cases["retrieval fields on feedback"] = changed(FEEDBACK, results="not checked")
    cases["type after fields"] = {**changed(FEEDBACK, type=...), "type": "feedback"}
    return cases


_TRICKY = _tricky()


_REPEATED: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, float]]] = {
    # SPEC §2: a repeat counts once, at its first position; every inline rel is a label,
    # applied in list order (qrels first): (results, qrels, the labels once applied)
    "rel on the repeat only": (
        [{"doc_id": "a"}, {"doc_id": "b", "rel": 2}, {"doc_id": "a", "rel": 1}],
        [],
        {"b": 2.0, "a": 1.0},
    ),
    "several repeats, differing rel": (
        [
            {"doc_id": "a", "rel": 1},
            {"doc_id": "a", "rel": 3},
            {"doc_id": "b"},
            {"doc_id": "a", "rel": 2},
            {"doc_id": "b", "rel": None},
        ],
        [],
        {"a": 2.0},
    ),
    "rel on first and repeat": (
        [{"doc_id": "a", "rel": 3}, {"doc_id": "b"}, {"doc_id": "a", "rel": 1}],
        [],
        {"a": 1.0},
    ),
    "rel=0 on a repeat after rel=2": (
        [{"doc_id": "a", "rel": 2}, {"doc_id": "a", "rel": 0}],
        [],
        {"a": 0.0},
    ),
    "qrels, then inline repeats in order": (
        [{"doc_id": "a"}, {"doc_id": "c", "rel": 3}, {"doc_id": "a", "rel": 1}],
        [{"doc_id": "a", "rel": 0}, {"doc_id": "c", "rel": 2}, {"doc_id": "z", "rel": 1}],
        {"a": 1.0, "c": 3.0, "z": 1.0},
    ),
}


@pytest.mark.parametrize("case", _REPEATED.values(), ids=_REPEATED)
def test_inline_labels_of_repeated_documents_are_one_answer(
    case: tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, float]],
) -> None:
    """Every decoder gives the same ranking and inline labels, and they are the contract's;
    the compiled scanner declines the message (msgspec reads it)."""
    results, qrels, expected = case
    data = to_bytes(changed(RETRIEVAL, results=results, qrels=qrels))
    assert _agree(data)[0] == "ok"
    ids = list(dict.fromkeys(doc["doc_id"] for doc in results))
    for decode in (decode_event, EVENT_ADAPTER.validate_json):
        event = decode(data)
        assert isinstance(event, RetrievalEvent | DecodedRetrieval)
        docs, repeats, labels = event.ranking()
        assert [doc["doc_id"] for doc in docs] == ids
        assert repeats == len(results) - len(ids)
        applied = {q["doc_id"]: float(q["rel"]) for q in qrels}
        applied.update((doc_id, rel) for doc_id, rel, _ in labels)
        assert applied == expected
    if AVAILABLE:
        assert scan_retrievals([data], bounds_of(DEFAULT_LIMITS)) == [None]


@pytest.mark.parametrize("data", _RAW, ids=range(len(_RAW)))
def test_malformed_messages(data: bytes | None) -> None:
    _agree(data)


@pytest.mark.parametrize("data", _RAW[-3:])
def test_what_the_typed_pass_refuses_still_decodes(data: bytes) -> None:
    """NaN/Infinity literals in unknown fields, and repeated keys whose earlier value is
    invalid (the last one wins)."""
    assert decode_event(data).type == "feedback"


@pytest.mark.parametrize("message", INVALID_OBJECTS.values(), ids=INVALID_OBJECTS)
def test_invalid_objects(message: tuple[str, dict[str, Any]]) -> None:
    reason, body = message
    assert _agree(to_bytes(body))[:2] == ("error", reason)


@pytest.mark.parametrize("message", VALID.values(), ids=VALID)
def test_valid_examples(message: dict[str, Any]) -> None:
    assert _agree(to_bytes(message))[0] == "ok"


@pytest.mark.parametrize("message", _TRICKY.values(), ids=_TRICKY)
def test_edge_cases(message: dict[str, Any]) -> None:
    _agree(to_bytes(message))


def test_edge_cases_include_both_verdicts() -> None:
    verdicts = [_agree(to_bytes(message))[:2] for message in _TRICKY.values()]
    kinds = {v[0] if v[0] == "ok" else v[1] for v in verdicts}
    assert kinds >= {"ok", "schema", "bad_timestamp", "too_large"}


@pytest.mark.parametrize(
    "limits",
    [Limits(max_results=3), Limits(max_id_chars=5), Limits(max_labels=1, max_label_chars=3)],
)
@pytest.mark.parametrize("name", VALID)
def test_tighter_limits(limits: Limits, name: str) -> None:
    _agree(to_bytes(VALID[name]), limits)


def test_batches_agree_with_one_by_one() -> None:
    messages = [to_bytes(m) for m in _TRICKY.values()] + [m for m in _RAW if m is not None]
    events, errors = decode_batch(messages)
    verdicts = [_verdict(decode_event, m, DEFAULT_LIMITS) for m in messages]
    assert [("ok", _canon(_dump(e))) for e in events] == [v for v in verdicts if v[0] == "ok"]
    assert [(e.index, e.error.reason, e.error.detail) for e in errors] == [
        (i, *v[1:]) for i, v in enumerate(verdicts) if v[0] == "error"
    ]


# -- properties ------------------------------------------------------------------------------

_json: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_ids = st.text(min_size=0, max_size=4) | st.sampled_from(["x" * 512, "😀" * 513, "a"])
_numbers = st.floats(allow_nan=False) | st.integers() | st.sampled_from([0, -0.0, 1e400, 1e308])
_rel = st.floats(-101, 101) | st.integers(-101, 101) | st.sampled_from([100, -100, 100.0000001])
_rfc3339 = st.builds(
    "{:04d}-{:02d}-{:02d}{}{:02d}:{:02d}:{:02d}{}{}".format,
    st.integers(0, 3001) | st.sampled_from([1970, 2024, 2999]),
    st.integers(0, 13),
    st.integers(0, 32),
    st.sampled_from(["T", "t", " ", "_"]),
    st.integers(0, 25),
    st.integers(0, 61),
    st.integers(0, 61),
    st.sampled_from(["", ".5", ".123456789", ".", ",5", ".5.5", ".x"]),
    st.sampled_from(
        ["Z", "z", "", "+00:00", "-05:30", "+23:59", "+24:00", "Zx", "+0530", "+05", "+05:30:10"]
    ),
)
_times = (
    st.floats(-7e10, 4e10)
    | st.integers(-(10**11), 10**13)
    | _rfc3339
    | st.sampled_from([MAX_TS, MIN_DOC_TS, 0, -0.0, True])
)
_labels = st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=3) | st.sampled_from(
    [{f"k{i}": "v" for i in range(33)}, {"k" * 257: ""}]
)
_maybe = st.none  # optional fields may be null
_doc = st.fixed_dictionaries(
    {"doc_id": _ids},
    optional={
        "score": _maybe() | _numbers,
        "t_doc": _maybe() | _times,
        "rel": _maybe() | _rel,
        "extra": _json,
    },
)
_qrel = st.fixed_dictionaries(
    {"doc_id": _ids, "rel": _rel}, optional={"t_doc": _maybe() | _times, "extra": _json}
)
_context = st.fixed_dictionaries(
    {"text": st.text(max_size=5)}, optional={"doc_id": _maybe() | _ids}
)
_common = {"query_id": _ids, "ts": _times}
_common_optional = {"labels": _labels, "extra": _json, "trace_id": _json}
_events = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("retrieval"), **_common, "results": st.lists(_doc, max_size=4)},
        optional={
            **_common_optional,
            "query": _maybe() | st.text(max_size=5),
            "qrels": _maybe() | st.lists(_qrel, max_size=3),
        },
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("answer"),
            **_common,
            "question": st.text(max_size=5),
            "answer": st.text(max_size=5),
            "contexts": st.lists(_context, max_size=3),
        },
        optional={
            **_common_optional,
            "model": _maybe() | _ids,
            "cited_doc_ids": _maybe() | st.lists(_ids, max_size=3),
        },
    ),
    st.fixed_dictionaries(
        {"type": st.just("feedback"), **_common, "doc_id": _ids, "rel": _rel, "source": _ids},
        optional=_common_optional,
    ),
)
_FIELDS = ["type", "query_id", "ts", "labels", "results", "qrels", "contexts", "rel", "doc_id"]
_mutated = st.builds(
    lambda event, key, value, drop: (
        {k: v for k, v in event.items() if k != key} if drop else {**event, key: value}
    ),
    _events,
    st.sampled_from(_FIELDS),
    _json,
    st.booleans(),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_events, st.booleans())
def test_generated_events(message: dict[str, Any], ascii_only: bool) -> None:
    _agree(json.dumps(message, ensure_ascii=ascii_only).encode())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutated | _json.map(lambda v: json.dumps(v).encode()) | st.binary(max_size=40))
def test_mutated_and_arbitrary_input(message: Any) -> None:
    _agree(message if isinstance(message, bytes) else json.dumps(message).encode())


@settings(max_examples=100, deadline=None)
@given(_events, st.sampled_from(_FIELDS), _json)
def test_repeated_keys_last_wins_in_both(message: dict[str, Any], key: str, first: Any) -> None:
    body = json.dumps(message).encode()
    _agree(b"{" + json.dumps(key).encode() + b":" + json.dumps(first).encode() + b"," + body[1:])
