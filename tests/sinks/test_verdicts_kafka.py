"""Judge verdicts in the results topic through a real Kafka broker: `ragstream run` with
`results.topic`, the lexical judge and `judge.publish_topic` writes, in each final query's
record, the verdict it published for that query when it judged the answer while the query
was open; null for the queries it did not judge, and for those it judged after they were
final (counted `not_open`)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import jsonschema
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ragstream.sinks.results import result_json_schema
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from tests.judging.test_verdicts import VERDICT_FIELDS
from tests.support import KafkaBroker, TopicFactory, produce_records, read_records
from tests.support.agent_process import AgentProcess, running_agent

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def _events() -> list[tuple[bytes, bytes]]:
    """Retrieval, feedback and answer events over about ten minutes of event time."""
    traffic = SyntheticTraffic(
        SyntheticConfig(
            seed=37, start=time.time() - 900.0, rate=1.5, answer_share=0.8, drift_at=None
        )
    )
    return [(e.key, e.value) for e in traffic.take(2000)]


def _samples(agent: AgentProcess) -> dict[tuple[str, str], float]:
    """The agent's samples by (name, outcome label or ''), summed over other labels."""
    out: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(agent.metrics()):
        for s in family.samples:
            key = (s.name, s.labels.get("outcome", ""))
            out[key] = out.get(key, 0.0) + s.value
    return out


def _consumed(samples: dict[tuple[str, str], float]) -> float:
    return sum(v for (name, _), v in samples.items() if name == "ragstream_events_total")


@pytest.mark.parametrize("ttl", [150.0, 1.0])
async def test_records_carry_the_verdicts_the_judge_published(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory, tmp_path: Path, ttl: float
) -> None:
    """With a label TTL of minutes the judge's verdicts come back while their queries are
    open; with one of a second most queries are final in the batch that brings their
    answer, and those verdicts are only on the judgments topic."""
    topic, results, judgments = [await kafka_topic_factory(1) for _ in range(3)]
    messages = _events()
    await produce_records(kafka_broker.bootstrap_servers, topic, messages)
    overrides = [
        "http.host=127.0.0.1",
        "kafka.auto_offset_reset=earliest",
        "kafka.max_batch=100",
        "labels.keys=[app]",
        "windows.clock=event",
        f"join.label_ttl={ttl}s",
        f"results.topic={results}",
        "judge.enabled=true",
        "judge.sampling.rate=0.5",
        "judge.sampling.max_per_second=null",
        f"judge.publish_topic={judgments}",
    ]
    env = {
        "RAGSTREAM_KAFKA__BOOTSTRAP_SERVERS": kafka_broker.bootstrap_servers,
        "RAGSTREAM_KAFKA__TOPICS": f'["{topic}"]',
    }
    args = ["run", "--group-id", f"g-{topic}", *(a for s in overrides for a in ("--set", s))]
    async with running_agent(args, tmp_path / "agent.log", env) as agent:
        deadline = time.monotonic() + 90
        while True:
            samples = await asyncio.to_thread(_samples, agent)
            idle = samples.get(("ragstream_judge_queue_depth", ""), 1) == 0 and (
                samples.get(("ragstream_judge_in_flight", ""), 1) == 0
            )
            if _consumed(samples) >= len(messages) and idle:
                break
            assert time.monotonic() < deadline, "the agent did not consume and judge every event"
            await asyncio.sleep(0.5)
        await asyncio.sleep(1.0)  # the last batch's records and judgments acknowledged
        samples = await asyncio.to_thread(_samples, agent)
    sent = int(samples[("ragstream_results_records_total", "sent")])
    judged = int(samples[("ragstream_judge_requests_total", "ok")])
    assert samples[("ragstream_results_records_total", "queue_full")] == 0
    records = {
        r.key.decode(): json.loads(r.value)
        for r in await read_records(kafka_broker.bootstrap_servers, results, sent)
    }
    published = {
        r.key.decode(): json.loads(r.value)
        for r in await read_records(kafka_broker.bootstrap_servers, judgments, judged)
    }
    assert len(records) == sent > 200
    assert len(published) == judged > 100

    schema = result_json_schema()
    with_verdict, judged_late = set(), set()
    for query_id, record in records.items():
        jsonschema.validate(record, schema)
        verdict = record["verdicts"]
        if query_id not in published:
            assert verdict is None, query_id  # not judged: null
        elif verdict is None:
            judged_late.add(query_id)
        else:
            assert verdict == {k: published[query_id][k] for k in VERDICT_FIELDS}, query_id
            with_verdict.add(query_id)
    if ttl > 100:
        assert len(with_verdict) > len(judged_late)
        assert any(records[q]["verdicts"]["hallucination"] for q in with_verdict)
    else:
        assert len(judged_late) > len(with_verdict)
    outcomes = {
        outcome: int(v)
        for (name, outcome), v in samples.items()
        if name == "ragstream_judge_verdicts_total"
    }
    assert outcomes["attached"] == len(with_verdict)
    assert outcomes["evicted"] == 0
    # judged after their query was final: only on the judgments topic
    assert outcomes["not_open"] == len(judged_late)
    kept = int(samples[("ragstream_judge_verdicts_kept", "")])
    assert outcomes["kept"] == outcomes["attached"] + kept  # the rest wait for their query
