"""The instrumented app's traces through the real broker, in the Collector's format, beside
a topic of ragstream feedback events: the agent's windows and per-query rows are those of
the app's own events."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from ragstream.pipeline.engine import Engine
from ragstream.pipeline.runner import Runner
from ragstream.sources.kafka import KafkaSource
from tests.support import KafkaBroker, TopicFactory, produce_records
from tests.support.defaults import kafka_source_config
from tests.traces._rag import RagApp
from tests.traces._reference import (
    assert_same_state,
    engine_config,
    feedback_messages,
    reference_messages,
)

pytestmark = pytest.mark.filterwarnings("ignore:Calling .text\\(\\) as a method:DeprecationWarning")

QUESTIONS = [
    f"how do I {verb} my {thing}"
    for verb in ("reset", "change", "close")
    for thing in ("password", "email", "account", "plan")
]


async def test_traces_and_feedback_through_kafka_equal_the_apps_own_events(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory, rag_app: RagApp
) -> None:
    traces, feedback = await kafka_topic_factory(2), await kafka_topic_factory(2)
    rag_app.exporter.take()
    requests = [rag_app.ask(q) for q in QUESTIONS]
    spans = list(rag_app.exporter.spans)
    # every span its own message (SimpleSpanProcessor), keyed by the trace id in hex as the
    # Collector's exporter keys them with partition_traces_by_id, so a trace's spans and
    # its feedback (keyed by the same id) land on one partition
    messages = rag_app.exporter.messages("otlp_proto")
    assert len(messages) == 7 * len(QUESTIONS)
    junk = (b"junk", b"\xff\x00 not protobuf")
    labels = feedback_messages(requests, spans, feedback)
    bootstrap = kafka_broker.bootstrap_servers
    await produce_records(bootstrap, traces, [*messages[:20], junk, *messages[20:]])
    await produce_records(bootstrap, feedback, [(m.key, m.value) for m in labels])
    source = KafkaSource(
        kafka_source_config(
            bootstrap_servers=bootstrap,
            topics=(traces, feedback),
            group_id="g-traces",
            auto_offset_reset="earliest",
            max_batch=25,
            poll_timeout=0.2,
        )
    )
    await source.start()
    engine = Engine(engine_config(traces))
    runner = Runner(engine, source)
    expected = 2 * len(requests) + len(labels) + 1
    task = asyncio.create_task(runner.run())
    try:
        deadline = time.monotonic() + 60
        while sum(engine.events.values()) < expected:
            assert not task.done(), "the runner ended early"
            assert time.monotonic() < deadline, dict(engine.events)
            await asyncio.sleep(0.05)
        runner.stop()
        await asyncio.wait_for(task, 10)
    finally:
        await source.stop()
    assert engine.invalid == {"bad_protobuf": 1}
    assert set(engine.joins) == {0, 1}  # both partitions carried traces
    reference = Engine(engine_config())
    reference.apply(reference_messages(requests, spans))
    reference.apply(labels)
    assert_same_state(engine, reference, invalid=1)
    ours = {q.query_id: q.contribution for q in engine.finish()}
    theirs = {q.query_id: q.contribution for q in reference.finish()}
    assert ours.keys() == theirs.keys() == {r.trace_id for r in requests}
    labeled = 0
    for query_id, row in theirs.items():
        assert row is not None
        np.testing.assert_array_equal(ours[query_id], row)
        labeled += not np.isnan(row[0])
    assert labeled >= len(requests) // 2
