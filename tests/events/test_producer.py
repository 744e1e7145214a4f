"""Producer helpers: encoding round-trips, the message key, and EventProducer without a broker."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.events import (
    EVENT_ADAPTER,
    MAX_ABS_REL,
    Context,
    Event,
    Qrel,
    RetrievedDoc,
    answer_event,
    decode_event,
    encode_event,
    feedback_event,
    message_key,
    retrieval_event,
    to_decoded,
    verdict_event,
)
from ragstream.events.timestamps import MAX_TS, MIN_DOC_TS
from ragstream.producer import EventProducer

from ._examples import VALID, to_bytes

_EXAMPLES: list[Event] = [
    retrieval_event(
        "q-1",
        [
            RetrievedDoc(doc_id="a", score=2.5, t_doc=1714000000.5, rel=2),
            RetrievedDoc(doc_id="b"),
            RetrievedDoc(doc_id="a", score=-1e-300),
        ],
        ts="2024-05-01T12:00:00.123456Z",
        labels={"app": "support", "index": "v7"},
        query="what is ünïcode? 🙂",
        qrels=[Qrel(doc_id="a", rel=2), Qrel(doc_id="z", rel=0.5, t_doc=-86400.0)],
    ),
    retrieval_event("q-2", [], ts=0),
    answer_event(
        "q-1",
        "question",
        'answer with "quotes" and \\ and \n newlines',
        [Context(doc_id="a", text="chunk"), Context(text="")],
        ts=1714564800,
        model="m-1",
        cited_doc_ids=["a"],
    ),
    answer_event("q-3", "", "", [], ts=1.5),
    feedback_event("q-1", "a", -1, "annotator", ts=1714564999.999999),
    verdict_event("q-1", True, "annotator", ts=1714565000, labels={"app": "support"}),
]


def test_a_verdict_is_a_feedback_event_with_answer_and_no_document() -> None:
    data = encode_event(verdict_event("q-9", False, "annotator", ts=0))
    assert json.loads(data) == {
        "type": "feedback",
        "query_id": "q-9",
        "ts": 0.0,
        "labels": {},
        "answer": {"hallucination": False},
        "source": "annotator",
    }
    event = decode_event(data)
    assert event.type == "feedback"
    assert (event.answer, event.doc_id, event.rel) == ({"hallucination": False}, None, None)


@pytest.mark.parametrize("event", _EXAMPLES, ids=lambda e: f"{e.type}-{e.query_id}")
def test_encode_then_decode_is_the_identity(event: Event) -> None:
    assert EVENT_ADAPTER.validate_json(encode_event(event)) == event
    assert decode_event(encode_event(event)) == to_decoded(event)
    decoded = to_decoded(event)
    assert decode_event(encode_event(decoded)) == decoded


@pytest.mark.parametrize("name", VALID)
def test_decode_encode_decode_is_stable(name: str) -> None:
    event = decode_event(to_bytes(VALID[name]))
    again = decode_event(encode_event(event))
    assert again == event
    assert encode_event(again) == encode_event(event)


def test_encoding_is_compact_json_with_numeric_times_and_no_nulls() -> None:
    event = retrieval_event("q", ["a"], ts="2024-05-01T12:00:00Z")
    data = encode_event(event)
    assert data == (
        b'{"type":"retrieval","query_id":"q","ts":1714564800.0,"labels":{},'
        b'"results":[{"doc_id":"a"}]}'
    )
    assert json.loads(data)["ts"] == 1714564800.0


def test_message_key_is_the_utf8_query_id() -> None:
    assert message_key(feedback_event("qü-1", "d", 1, "click", ts=0)) == "qü-1".encode()


_ids = st.text(min_size=1, max_size=12)
_text = st.text(max_size=40)
_rel = st.floats(min_value=-MAX_ABS_REL, max_value=MAX_ABS_REL)
_ts = st.floats(min_value=0, max_value=MAX_TS, exclude_max=True)
_t_doc = st.floats(min_value=MIN_DOC_TS, max_value=MAX_TS, exclude_max=True)
_labels = st.dictionaries(st.text(min_size=1, max_size=8), st.text(max_size=8), max_size=4)
_score = st.floats(allow_nan=False, allow_infinity=False)


@st.composite
def _retrieved(draw: st.DrawFn) -> RetrievedDoc:
    doc = RetrievedDoc(doc_id=draw(_ids))
    if draw(st.booleans()):
        doc["score"] = draw(_score)
    if draw(st.booleans()):
        doc["t_doc"] = draw(_t_doc)
    if draw(st.booleans()):
        doc["rel"] = draw(_rel)
    return doc


_events = st.one_of(
    st.builds(
        retrieval_event,
        _ids,
        st.lists(_retrieved(), max_size=5),
        ts=_ts,
        labels=_labels,
        query=st.none() | _text,
        qrels=st.none()
        | st.lists(st.builds(lambda d, r: Qrel(doc_id=d, rel=r), _ids, _rel), max_size=3),
    ),
    st.builds(
        answer_event,
        _ids,
        _text,
        _text,
        st.lists(
            _text | st.builds(lambda d, t: Context(doc_id=d, text=t), _ids, _text), max_size=3
        ),
        ts=_ts,
        labels=_labels,
        model=st.none() | _ids,
        cited_doc_ids=st.none() | st.lists(_ids, max_size=3),
    ),
    st.builds(feedback_event, _ids, _ids, _rel, _ids, ts=_ts, labels=_labels),
)


@settings(max_examples=150, deadline=None)
@given(_events)
def test_any_valid_event_round_trips(event: Event) -> None:
    decoded = decode_event(encode_event(event))
    assert decoded == to_decoded(event)
    assert EVENT_ADAPTER.validate_json(encode_event(event)) == event
    assert math.isfinite(decoded.ts)


def test_event_producer_needs_exactly_one_connection() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        EventProducer("events")
    with pytest.raises(ValueError, match="exactly one"):
        EventProducer("events", bootstrap_servers="localhost:9092", producer=object())
    with pytest.raises(ValueError, match="producer options"):
        EventProducer("events", producer=object(), acks="all")


def test_event_producer_routes_by_type() -> None:
    single = EventProducer("events", bootstrap_servers="localhost:9092")
    routed = EventProducer({"retrieval": "r", "feedback": "f"}, bootstrap_servers="localhost:9092")
    feedback, answer = _EXAMPLES[-1], _EXAMPLES[2]
    assert single.topic_for(feedback) == single.topic_for(answer) == "events"
    assert routed.topic_for(feedback) == "f"
    with pytest.raises(KeyError):
        routed.topic_for(answer)


async def test_sending_before_start_is_an_error() -> None:
    producer = EventProducer("events", bootstrap_servers="localhost:9092")
    with pytest.raises(RuntimeError, match="not started"):
        await producer.send(_EXAMPLES[0])
