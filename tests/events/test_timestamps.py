"""Timestamps: RFC 3339 strings and Unix seconds normalise to the same float seconds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.events import DecodedRetrieval, decode_event, format_rfc3339, parse_rfc3339
from ragstream.events.timestamps import MAX_TS, MIN_DOC_TS, rfc3339_seconds

from ._examples import FEEDBACK, to_bytes, with_changes

_BASE = 1714564800.0  # 2024-05-01T12:00:00Z


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2024-05-01T12:00:00Z", _BASE),
        ("2024-05-01t12:00:00z", _BASE),
        ("2024-05-01 12:00:00Z", _BASE),
        ("2024-05-01T12:00:00+00:00", _BASE),
        ("2024-05-01T12:00:00-00:00", _BASE),
        ("2024-05-01T14:30:00+02:30", _BASE),
        ("2024-05-01T07:00:00-05:00", _BASE),
        ("2024-05-02T01:59:00+13:59", _BASE),
        ("2024-05-01T12:00:00.5Z", _BASE + 0.5),
        ("2024-05-01T12:00:00.250+00:00", _BASE + 0.25),
        ("2024-05-01T12:00:00.123456789Z", _BASE + 0.123456789),
        ("1970-01-01T00:00:00Z", 0.0),
        ("1969-12-31T23:59:59Z", -1.0),
        ("2016-12-31T23:59:60Z", 1483228800.0),  # leap second = next minute's first instant
        ("2024-02-29T00:00:00Z", 1709164800.0),
    ],
)
def test_rfc3339_forms(text: str, seconds: float) -> None:
    assert parse_rfc3339(text) == pytest.approx(seconds, abs=1e-6)


@pytest.mark.parametrize(
    "text",
    [
        "2024-05-01T12:00:00",  # no offset: ambiguous
        "2024-05-01",
        "2024-05-01T12:00Z",  # seconds are required
        "20240501T120000Z",  # ISO 8601 basic format is not RFC 3339
        "2024-05-01T12:00:00+0200",
        "2024-05-01T12:00:00.Z",
        "2023-02-29T00:00:00Z",
        "2024-13-01T00:00:00Z",
        "2024-05-01T24:00:00Z",
        "2024-05-01T12:60:00Z",
        "2024-05-01T12:00:61Z",
        "2024-05-01T12:00:00+24:00",
        " 2024-05-01T12:00:00Z",
        "2024-05-01T12:00:00Z\n",
        "١٩٧٠-01-01T00:00:00Z",  # non-ASCII digits
    ],
)
def test_malformed_rfc3339_is_rejected(text: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the message varies by cause
        parse_rfc3339(text)
    assert rfc3339_seconds(text) is None
    with pytest.raises(ValueError, match="bad_timestamp"):
        decode_event(to_bytes(with_changes(FEEDBACK, ts=text)))


@pytest.mark.parametrize(
    "ts",
    [_BASE, int(_BASE), _BASE + 0.123, "2024-05-01T12:00:00Z", "2024-05-01T14:00:00+02:00"],
)
def test_both_forms_of_ts_give_float_seconds(ts: float | str) -> None:
    event = decode_event(to_bytes(with_changes(FEEDBACK, ts=ts)))
    assert type(event.ts) is float
    assert event.ts == pytest.approx(_BASE, abs=0.2)


@pytest.mark.parametrize(
    ("ts", "ok"),
    [
        (0, True),
        (-0.001, False),
        (MAX_TS - 1, True),
        (MAX_TS, False),
        ("2999-12-31T23:59:59Z", True),
        ("3000-01-01T00:00:00Z", False),
        ("1969-12-31T23:59:59Z", False),
    ],
)
def test_event_time_bounds(ts: float | str, ok: bool) -> None:
    data = to_bytes(with_changes(FEEDBACK, ts=ts))
    if ok:
        decode_event(data)
    else:
        with pytest.raises(ValueError, match="bad_timestamp"):
            decode_event(data)


def test_document_times_may_predate_1970() -> None:
    results = [
        {"doc_id": "a", "t_doc": "1066-10-14T09:00:00Z"},
        {"doc_id": "b", "t_doc": MIN_DOC_TS},
    ]
    event = decode_event(
        to_bytes({"type": "retrieval", "query_id": "q", "ts": _BASE, "results": results})
    )
    reference = datetime(1066, 10, 14, 9, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)
    assert isinstance(event, DecodedRetrieval)
    assert event.results[0].get("t_doc") == reference.total_seconds()
    assert event.results[1].get("t_doc") == MIN_DOC_TS


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2024-05-01T12:00:00.1234567Z", _BASE + 0.123456),
        ("2024-05-01T17:30:00.999999999+05:30", _BASE + 0.999999),
        ("0001-01-01T01:00:00+01:00", MIN_DOC_TS),
        ("2024-05-01T12:00:00.000001Z", _BASE + 0.000001),
    ],
)
def test_fast_and_slow_parsers_agree_to_the_microsecond(text: str, seconds: float) -> None:
    """Lowercase `t`/`z` forces the regex path; the uppercase form takes the C parser."""
    slow = text.replace("T", "t").replace("Z", "z")
    assert parse_rfc3339(slow) == parse_rfc3339(text) == pytest.approx(seconds, abs=1e-7)


def test_format_rfc3339() -> None:
    assert format_rfc3339(_BASE) == "2024-05-01T12:00:00Z"
    assert format_rfc3339(_BASE + 0.25) == "2024-05-01T12:00:00.25Z"
    assert format_rfc3339(-1.0) == "1969-12-31T23:59:59Z"


_moments = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(2999, 12, 30), timezones=st.just(UTC)
)
_offsets = st.integers(min_value=-(23 * 60 + 59), max_value=23 * 60 + 59)


@settings(max_examples=200, deadline=None)
@given(moment=_moments, offset_minutes=_offsets)
def test_parse_agrees_with_datetime_for_any_offset(moment: datetime, offset_minutes: int) -> None:
    """Reference: the stdlib's own arithmetic on an aware datetime."""
    local = moment.astimezone(timezone(timedelta(minutes=offset_minutes)))
    text = local.isoformat()
    expected = (moment - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds()
    assert parse_rfc3339(text) == pytest.approx(expected, abs=1e-6)


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=0, max_value=MAX_TS - 1))
def test_format_then_parse_is_exact_to_the_microsecond(seconds: float) -> None:
    # Microseconds, or the float's own resolution far from 1970 (about 4e-6 s in year 2999).
    assert parse_rfc3339(format_rfc3339(seconds)) == pytest.approx(seconds, abs=1e-6, rel=1e-15)


def _parsed(text: str) -> float | None:
    try:
        return parse_rfc3339(text)
    except (ValueError, OverflowError):
        return None


@settings(max_examples=300, deadline=None)
@given(
    st.builds(
        "{:04d}-{:02d}-{:02d}{}{:02d}:{:02d}:{:02d}{}{}".format,
        st.integers(0, 9999),
        st.integers(0, 13),
        st.integers(0, 32),
        st.sampled_from("Tt _x"),
        st.integers(0, 25),
        st.integers(0, 61),
        st.integers(0, 61),
        st.sampled_from(["", ".5", ".1234567", ".", ",5", ".5.5", "5"]),
        st.sampled_from(["Z", "z", "", "+01:30", "-23:59", "+24:00", "+0530", "+05", "+05:30:10"]),
    )
)
def test_the_decoders_parser_agrees_with_parse_rfc3339(text: str) -> None:
    assert rfc3339_seconds(text) == _parsed(text)
    assert rfc3339_seconds(text + "x" * 64) is None
