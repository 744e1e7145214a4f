"""Decoding: every kind of bad input gets its reason code; good input gives the right model."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.events import (
    DECODE_REASONS,
    DEFAULT_LIMITS,
    DecodedAnswer,
    DecodedDoc,
    DecodedFeedback,
    DecodedQrel,
    DecodedRetrieval,
    DecodeError,
    Limits,
    decode_batch,
    decode_event,
)

from ._examples import ANSWER, FEEDBACK, GOLDEN, INVALID_OBJECTS, RETRIEVAL, to_bytes, with_changes

_QREL_LONG_ID = {"doc_id": "doc-1", "rel": 1}


def _reason(data: bytes | None, limits: Limits = DEFAULT_LIMITS) -> str:
    with pytest.raises(DecodeError) as caught:
        decode_event(data, limits)
    assert caught.value.reason in DECODE_REASONS
    assert caught.value.detail
    return caught.value.reason


def test_examples_decode_to_their_types_with_normalised_values() -> None:
    retrieval = decode_event(to_bytes(RETRIEVAL))
    assert isinstance(retrieval, DecodedRetrieval)
    assert retrieval.type == "retrieval"
    assert retrieval.ts == 1714564800.25  # 2024-05-01T12:00:00.250Z
    assert retrieval.results[0] == DecodedDoc(doc_id="kb-12", score=12.5, t_doc=1714456800.0)
    assert retrieval.results[0].as_dict() == {
        "doc_id": "kb-12",
        "score": 12.5,
        "t_doc": 1714456800.0,
    }
    assert retrieval.results[0].get("rel") is None
    assert retrieval.results[1]["t_doc"] == 1714000000.0
    assert retrieval.results[3] == DecodedDoc(doc_id="kb-40", rel=0.0)
    assert retrieval.labels == {"app": "support", "index": "v7"}
    assert retrieval.ranking().repeats == 1

    golden = decode_event(to_bytes(GOLDEN))
    assert isinstance(golden, DecodedRetrieval)
    assert golden.qrels == [
        DecodedQrel(doc_id="d2", rel=2.0),
        DecodedQrel(doc_id="d9", rel=1.0, t_doc=1.7e9),
    ]
    assert golden.labels == {}

    answer = decode_event(to_bytes(ANSWER))
    assert isinstance(answer, DecodedAnswer)
    assert (answer.type, answer.ts) == ("answer", 1714564801.0)
    assert type(answer.ts) is float
    assert answer.contexts[0]["doc_id"] == "kb-12"
    assert answer.cited_doc_ids == ["kb-12"]

    feedback = decode_event(to_bytes(FEEDBACK))
    assert feedback == DecodedFeedback(
        query_id="q-7f3a", ts=1714564990.0, doc_id="kb-12", rel=1.0, source="click"
    )
    assert feedback.type == "feedback"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (None, "empty"),
        (b"", "empty"),
        (b"{", "bad_json"),
        (b'{"type": "feedback",}', "bad_json"),
        (b"\xff\xfe{}", "bad_json"),
        (b"NaN", "not_object"),
        (b"[]", "not_object"),
        (b'[{"type": "feedback"}]', "not_object"),
        (b"42", "not_object"),
        (b'"retrieval"', "not_object"),
        (b"null", "not_object"),
        (b"{}", "schema"),
        (b'{"type": null}', "unknown_type"),
        (b'{"type": "Retrieval"}', "unknown_type"),
    ],
)
def test_malformed_messages_get_their_reason(data: bytes | None, reason: str) -> None:
    assert _reason(data) == reason


@pytest.mark.parametrize(("reason", "message"), INVALID_OBJECTS.values(), ids=INVALID_OBJECTS)
def test_invalid_objects_get_their_reason(reason: str, message: dict[str, Any]) -> None:
    assert _reason(to_bytes(message)) == reason


@pytest.mark.parametrize(
    ("field", "value"),
    [("rel", float("nan")), ("rel", float("inf")), ("ts", float("inf"))],
)
def test_non_finite_numbers_are_rejected(field: str, value: float) -> None:
    raw = to_bytes(with_changes(FEEDBACK, **{field: value}))  # json.dumps writes NaN/Infinity
    assert _reason(raw) in ("schema", "bad_timestamp")
    assert _reason(raw) == ("bad_timestamp" if field == "ts" else "schema")


def test_detail_names_the_field_without_echoing_the_input() -> None:
    with pytest.raises(DecodeError) as caught:
        decode_event(to_bytes(with_changes(RETRIEVAL, results=[{"doc_id": "a"}, {"doc_id": 7}])))
    assert caught.value.detail.startswith("results.1.doc_id:")
    with pytest.raises(DecodeError) as caught:
        decode_event(to_bytes(with_changes(FEEDBACK, ts="2024-02-30T00:00:00Z")))
    assert caught.value.reason == "bad_timestamp"
    assert caught.value.detail.startswith("ts: invalid date")
    secret = "s3cr3t-" * 20
    with pytest.raises(DecodeError) as caught:
        decode_event(to_bytes(with_changes(FEEDBACK, rel=secret)))
    assert secret not in str(caught.value)
    assert len(caught.value.detail) <= 300


def test_unknown_fields_are_ignored_at_every_level() -> None:
    message = with_changes(
        RETRIEVAL,
        schema_version=2,
        trace={"span": "x"},
        results=[{"doc_id": "a", "page": 3, "chunk": {"i": 1}}],
    )
    event = decode_event(to_bytes(message))
    assert isinstance(event, DecodedRetrieval)
    assert event.results == [DecodedDoc(doc_id="a")]
    assert not hasattr(event, "schema_version")


def test_null_optional_fields_are_accepted_as_absent() -> None:
    message = with_changes(ANSWER, model=None, cited_doc_ids=None, labels={})
    event = decode_event(to_bytes(message))
    assert isinstance(event, DecodedAnswer)
    assert event.model is None
    assert event.cited_doc_ids is None


def test_message_size_is_checked_before_parsing() -> None:
    big = to_bytes(with_changes(ANSWER, answer="x" * 50_000))
    assert isinstance(decode_event(big), DecodedAnswer)
    assert _reason(big, Limits(max_message_bytes=len(big) - 1)) == "too_large"
    assert _reason(b"{" * (DEFAULT_LIMITS.max_message_bytes + 1)) == "too_large"


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        (Limits(max_results=3), with_changes(RETRIEVAL, results=[{"doc_id": "a"}] * 4)),
        (Limits(max_qrels=1), GOLDEN),
        (Limits(max_contexts=1), with_changes(ANSWER, contexts=[{"text": "a"}, {"text": "b"}])),
        (Limits(max_results=1), with_changes(ANSWER, cited_doc_ids=["a", "b"])),
        (Limits(max_text_chars=10), with_changes(ANSWER, answer="x" * 11)),
        (Limits(max_text_chars=10), with_changes(ANSWER, contexts=[{"text": "x" * 11}])),
        (Limits(max_text_chars=30), with_changes(RETRIEVAL, query="x" * 31)),
        (Limits(max_id_chars=4), with_changes(FEEDBACK, query_id="q" * 5)),
        (Limits(max_id_chars=4), with_changes(FEEDBACK, query_id="q", source="annotator")),
        (Limits(max_id_chars=4), with_changes(RETRIEVAL, query_id="q")),
        (Limits(max_id_chars=4), with_changes(GOLDEN, query_id="q", qrels=[_QREL_LONG_ID])),
        (
            Limits(max_id_chars=4),
            with_changes(ANSWER, query_id="q", model=None, cited_doc_ids=None),
        ),
        (Limits(max_id_chars=4), with_changes(ANSWER, query_id="q", model=None, contexts=[])),
        (Limits(max_id_chars=4), with_changes(ANSWER, query_id="q", contexts=[], cited_doc_ids=[])),
        (Limits(max_labels=1), with_changes(FEEDBACK, labels={"a": "1", "b": "2"})),
        (Limits(max_label_chars=3), with_changes(FEEDBACK, labels={"app": "1234"})),
        (Limits(max_label_chars=3), with_changes(FEEDBACK, labels={"service": "1"})),
    ],
)
def test_tighter_limits_reject_what_the_caps_accept(
    limits: Limits, message: dict[str, Any]
) -> None:
    data = to_bytes(message)
    decode_event(data)  # within the schema caps
    assert _reason(data, limits) == "too_large"


def test_tighter_limits_accept_events_within_them() -> None:
    limits = Limits(max_results=4, max_id_chars=9, max_labels=2, max_label_chars=7)
    for message in (RETRIEVAL, FEEDBACK):
        assert decode_event(to_bytes(message), limits) == decode_event(to_bytes(message))


@pytest.mark.parametrize(
    "kwargs",
    [{"max_results": 1001}, {"max_label_chars": 257}, {"max_qrels": 0}, {"max_message_bytes": 0}],
)
def test_limits_may_only_tighten_the_schema_caps(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        Limits(**kwargs)


def test_limits_may_raise_the_message_size() -> None:
    assert Limits(max_message_bytes=8 * 1024 * 1024).is_default
    assert not Limits(max_results=10).is_default


def test_decode_batch_keeps_order_and_indexes_every_error() -> None:
    messages: list[bytes | None] = [
        to_bytes(RETRIEVAL),
        b"not json",
        None,
        to_bytes(FEEDBACK),
        to_bytes(with_changes(FEEDBACK, type="nope")),
        to_bytes(ANSWER),
    ]
    events, errors = decode_batch(messages)
    assert [event.type for event in events] == ["retrieval", "feedback", "answer"]
    assert [(err.index, err.error.reason) for err in errors] == [
        (1, "bad_json"),
        (2, "empty"),
        (4, "unknown_type"),
    ]
    assert decode_batch([]) == ([], [])


def test_decode_error_is_a_value_error_that_pickles() -> None:
    error = DecodeError("schema", "rel: Input should be a valid number")
    assert isinstance(error, ValueError)
    assert str(error) == "schema: rel: Input should be a valid number"
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.reason, copy.detail) == (error.reason, error.detail)


_json = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_near_valid = st.builds(
    lambda base, key, value: {**base, key: value},
    st.sampled_from([RETRIEVAL, GOLDEN, ANSWER, FEEDBACK]),
    st.sampled_from(["type", "query_id", "ts", "labels", "results", "qrels", "contexts", "rel"]),
    _json,
)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64) | _json.map(to_bytes) | _near_valid.map(to_bytes))
def test_any_input_decodes_or_raises_a_decode_error(data: bytes) -> None:
    reason = "ok"
    try:
        decode_event(data)
    except DecodeError as exc:
        reason = exc.reason
    assert reason == "ok" or reason in DECODE_REASONS
