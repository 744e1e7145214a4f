"""A LangChain app instrumented with OpenInference, its traces in the Collector's Kafka
formats: the agent gets from them the events the app would have sent itself."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Sequence

import numpy as np
import pytest
from opentelemetry.sdk.trace import ReadableSpan

from ragstream.events import DecodedAnswer, Message
from ragstream.pipeline.engine import BatchReport, Engine
from tests.traces._rag import RagApp, Request, per_trace
from tests.traces._reference import (
    assert_same_state,
    engine_config,
    feedback_messages,
    reference_messages,
)
from tests.traces._traced import span_counts, trace_counts

pytestmark = pytest.mark.filterwarnings("ignore:Calling .text\\(\\) as a method:DeprecationWarning")

QUESTIONS = [
    "how do I reset my password",
    "change my email address",
    "close my account please",
    "where are my invoices",
    "turn on two-factor login",
    "invite a colleague to the team",
]
TRACES, FEEDBACK = "otlp_spans", "rag-feedback"


def _ask(app: RagApp, questions: Sequence[str]) -> tuple[list[Request], list[list[ReadableSpan]]]:
    app.exporter.take()
    requests = [app.ask(q) for q in questions]
    return requests, list(app.exporter.exports)


def _run(engine: Engine, batches: Sequence[Sequence[Message]]) -> list[DecodedAnswer]:
    answers: list[DecodedAnswer] = []
    for batch in batches:
        report: BatchReport = engine.apply(batch)
        assert report.invalid == []
        answers.extend(answer for _, answer in report.answers)
    return answers


def _messages(pairs: Sequence[tuple[bytes, bytes]], topic: str = TRACES) -> list[Message]:
    return [Message(value, 0, i, topic, key) for i, (key, value) in enumerate(pairs)]


@pytest.mark.parametrize("encoding", ["otlp_proto", "otlp_json"])
def test_traces_give_the_events_the_app_would_send(rag_app: RagApp, encoding: str) -> None:
    requests, exports = _ask(rag_app, QUESTIONS)
    spans = [s for export in exports for s in export]
    traces = _messages(per_trace(spans, encoding))  # one request per trace
    feedback = feedback_messages(requests, spans, FEEDBACK)
    ours = Engine(engine_config(TRACES, encoding))
    answers = _run(ours, [traces, feedback])
    reference = Engine(engine_config())
    expected = _run(reference, [reference_messages(requests, spans), feedback])
    assert_same_state(ours, reference)
    assert answers == expected
    assert [a.question for a in answers] == QUESTIONS
    assert ours.traces is not None
    assert trace_counts(ours) == {
        "answered": len(QUESTIONS),
        "no_answer": 0,
        "no_retrieval": 0,
        "evicted": 0,
    }
    counts = span_counts(ours)
    assert counts[("RETRIEVER", "retrieval")] == len(QUESTIONS)
    assert counts[("PROMPT", "skipped")] == len(QUESTIONS)  # counted and skipped
    final = {q.query_id: q.contribution for q in ours.finish()}
    expected_final = {q.query_id: q.contribution for q in reference.finish()}
    assert final.keys() == {r.trace_id for r in requests}
    for query_id, row in expected_final.items():
        assert row is not None
        assert final[query_id] is not None
        np.testing.assert_array_equal(final[query_id], row)  # NaN where unlabeled
    rr = ours.columns.index("rr")
    assert sum(row[rr] > 0 for row in expected_final.values() if row is not None) >= 2


def test_a_trace_split_across_messages_arrives_in_any_order(rag_app: RagApp) -> None:
    """SimpleSpanProcessor exports every span alone: seven messages a request. In order,
    reversed (the root first), shuffled, one batch each or all in one: the same events."""
    requests, exports = _ask(rag_app, QUESTIONS[:3])
    spans = [s for export in exports for s in export]
    single = _messages([m for export in exports for m in per_trace(export, "otlp_proto")])
    assert len(single) == 7 * 3
    reference = Engine(engine_config())
    expected = _run(reference, [reference_messages(requests, spans)])
    rng = random.Random(7)
    orders = [
        single,
        single[::-1],
        rng.sample(single, len(single)),
        rng.sample(single, len(single)),
    ]
    for order, one_batch in itertools.product(orders, [True, False]):
        ours = Engine(engine_config(TRACES))
        batches = [order] if one_batch else [[m] for m in order]
        answers = _run(ours, batches)
        assert sorted(answers, key=lambda a: a.query_id) == sorted(
            expected, key=lambda a: a.query_id
        )
        assert_same_state(ours, reference)
        assert ours.traces is not None
        assert ours.open_traces == 0


def test_state_moves_with_the_partition_between_the_spans_of_a_trace(rag_app: RagApp) -> None:
    """Half of every trace on one replica, the rest on another that adopted the partition;
    and a restart from a snapshot: the same answers as one engine reading it all."""
    _requests, exports = _ask(rag_app, QUESTIONS[:3])
    single = _messages([m for export in exports for m in per_trace(export, "otlp_proto")])
    names = [export[0].name for export in exports]  # one span an export
    assert len(names) == len(single)
    # the retriever spans come last: every trace waits on the replica that adopts it
    first = [m for m, name in zip(single, names, strict=True) if name != "VectorStoreRetriever"]
    rest = [m for m, name in zip(single, names, strict=True) if name == "VectorStoreRetriever"]
    whole = Engine(engine_config(TRACES))
    expected = _run(whole, [first, rest])
    assert len(expected) == 3
    before = Engine(engine_config(TRACES))
    _run(before, [first])
    assert before.traces is not None
    assert before.open_traces == 3
    state = json.loads(json.dumps(before.export_partitions({0})[0]))
    after = Engine(engine_config(TRACES))
    after.adopt_partition(state)
    assert _run(after, [rest]) == expected
    restored = Engine.restore(engine_config(TRACES), json.loads(json.dumps(before.snapshot())))
    assert _run(restored, [rest]) == expected
    assert_same_state(restored, whole)
