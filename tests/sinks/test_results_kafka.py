"""The results topic through a real Kafka broker: `ragstream run` with `results.topic` set
writes exactly the queries its engine finalizes, each once, keyed by query id, with the
values of an in-process engine on the same events and the record `replay --per-query`
writes."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import jsonschema
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from ragstream.cli import main
from ragstream.config.settings import load_settings
from ragstream.events import Message
from ragstream.pipeline.engine import Engine
from ragstream.sinks.results import query_record, result_json_schema
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from ragstream.wiring import engine_config
from tests.support import KafkaBroker, TopicFactory, produce_records, read_records
from tests.support.agent_process import AgentProcess, running_agent

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

SETTINGS = (
    "http.host=127.0.0.1",
    "kafka.auto_offset_reset=earliest",
    "labels.keys=[app]",
    "windows.clock=event",
    "join.label_ttl=150s",
    "judge.enabled=false",
)


def _events() -> list[tuple[bytes, bytes]]:
    """Retrieval and feedback events over ten minutes of event time, each label within
    the label TTL of its query (so no batching makes one late)."""
    traffic = SyntheticTraffic(
        SyntheticConfig(
            seed=36,
            start=time.time() - 900.0,
            rate=1.5,
            drift_at=300.0,
            answer_share=0.0,
            early_feedback_share=0.0,
        )
    )
    return [(e.key, e.value) for e in traffic.take(2000)]


def _consumed(agent: AgentProcess) -> float:
    return sum(
        s.value
        for family in text_string_to_metric_families(agent.metrics())
        for s in family.samples
        if s.name == "ragstream_events_total"
    )


def _outcomes(agent: AgentProcess) -> dict[str, float]:
    return {
        s.labels["outcome"]: s.value
        for family in text_string_to_metric_families(agent.metrics())
        for s in family.samples
        if s.name == "ragstream_results_records_total"
    }


def _reference(messages: list[tuple[bytes, bytes]]) -> dict[str, dict[str, object]]:
    """The records of the queries an in-process engine finalizes on the same events, in
    one batch, with the agent's settings."""
    settings = load_settings(
        overrides={
            "labels": {"keys": ["app"]},
            "windows": {"clock": "event"},
            "join": {"label_ttl": 150.0},
        }
    )
    engine = Engine(engine_config(settings))
    final = engine.apply([Message(v, key=k) for k, v in messages]).final
    return {q.query_id: query_record(engine, q) for q in final}


async def test_the_results_topic_holds_each_final_query_once(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory, tmp_path: Path
) -> None:
    topic, results = await kafka_topic_factory(1), await kafka_topic_factory(1)
    messages = _events()
    await produce_records(kafka_broker.bootstrap_servers, topic, messages)
    args, env = _command(kafka_broker, topic, results)
    expected = _reference(messages)
    assert 200 < len(expected) < len({k for k, _ in messages})  # some are still open
    async with running_agent(args, tmp_path / "agent.log", env) as agent:
        deadline = time.monotonic() + 90
        while await asyncio.to_thread(_consumed, agent) < len(messages):
            assert time.monotonic() < deadline, "the agent did not consume every event"
            await asyncio.sleep(0.5)
        await read_records(kafka_broker.bootstrap_servers, results, len(expected), within=30)
        await asyncio.sleep(1.0)  # time for a record too many, if one were sent
        outcomes = await asyncio.to_thread(_outcomes, agent)
    records = await read_records(kafka_broker.bootstrap_servers, results, len(expected))
    keys = [r.key for r in records]
    assert len(keys) == len(set(keys)) == len(expected)  # each once, nothing else
    got = {r.key.decode(): json.loads(r.value) for r in records}
    assert got == expected
    assert outcomes == {
        "sampled_out": 0,
        "sent": len(expected),
        "queue_full": 0,
        "failed": 0,
        "shutdown": 0,
    }
    schema = result_json_schema()
    for record in got.values():
        jsonschema.validate(record, schema)

    # `replay --per-query` writes the same record for each of these queries
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"\n".join(v for _, v in messages) + b"\n")
    per_query = tmp_path / "per-query.jsonl"
    set_args = (a for s in SETTINGS[2:] for a in ("--set", s))
    replay = ["replay", str(events), *set_args, "--per-query", str(per_query), "--format", "json"]
    outcome = await asyncio.to_thread(CliRunner().invoke, main, replay)
    assert outcome.exit_code == 0, outcome.output
    replayed = {r["query_id"]: r for r in map(json.loads, per_query.read_text().splitlines())}
    assert {q: replayed[q] for q in got} == got


async def _count(bootstrap: str, topic: str) -> int:
    """How many records the (one-partition) topic holds."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        return int((await consumer.end_offsets([tp]))[tp])
    finally:
        await consumer.stop()


async def _until_count(broker: KafkaBroker, topic: str, count: int, within: float = 90.0) -> None:
    deadline = time.monotonic() + within
    while await _count(broker.bootstrap_servers, topic) < count:
        assert time.monotonic() < deadline, f"fewer than {count} records in {topic}"
        await asyncio.sleep(0.5)


def _command(broker: KafkaBroker, topic: str, results: str) -> tuple[list[str], dict[str, str]]:
    # periodic snapshots off: a crash resumes from the partition's first (empty) snapshot
    overrides = [
        *SETTINGS,
        f"results.topic={results}",
        "kafka.max_batch=300",
        "state.checkpoint_interval=1h",
    ]
    env = {
        "RAGSTREAM_KAFKA__BOOTSTRAP_SERVERS": broker.bootstrap_servers,
        "RAGSTREAM_KAFKA__TOPICS": f'["{topic}"]',
    }
    return ["run", "--group-id", f"g-{topic}", *(a for s in overrides for a in ("--set", s))], env


@pytest.mark.parametrize("stop", ["sigterm", "sigkill"])
async def test_a_restart_writes_each_query_again_only_after_a_crash(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory, tmp_path: Path, stop: str
) -> None:
    """Half the events, a stop, the other half to a new agent: after a clean stop each
    final query is written once; after SIGKILL none is lost, and the queries written again
    (those finalized since the partition's last snapshot) carry the same record."""
    topic, results = await kafka_topic_factory(1), await kafka_topic_factory(1)
    messages = _events()
    expected = _reference(messages)
    first_half = _reference(messages[:1000])
    args, env = _command(kafka_broker, topic, results)
    await produce_records(kafka_broker.bootstrap_servers, topic, messages[:1000])
    agent = AgentProcess(args, tmp_path / "first.log", env=env)
    await asyncio.to_thread(agent.start)
    try:
        await _until_count(kafka_broker, results, len(first_half))
        sent_before = await asyncio.to_thread(_outcomes, agent)
    finally:
        await asyncio.to_thread(agent.kill if stop == "sigkill" else agent.stop)
    assert sent_before["sent"] == len(first_half)
    await produce_records(kafka_broker.bootstrap_servers, topic, messages[1000:])
    async with running_agent(args, tmp_path / "second.log", env):
        await _until_count(kafka_broker, results, len(expected))
        await asyncio.sleep(2.0)  # time for a record too many, if one were sent
        total = await _count(kafka_broker.bootstrap_servers, results)
    records = await read_records(kafka_broker.bootstrap_servers, results, total)
    assert len(records) == total
    assert {r.key.decode() for r in records} == set(expected)
    for r in records:
        assert json.loads(r.value) == expected[r.key.decode()]
    if stop == "sigterm":
        assert total == len(expected)
    else:  # the first agent's records again, each equal to its first copy
        assert total == len(expected) + len(first_half)
