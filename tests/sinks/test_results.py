"""Result records: their JSON Schema, the sampling, and the bounded queue of the results
topic (drops counted, never blocking)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import pytest
from click.testing import CliRunner

from ragstream.cli import main
from ragstream.config.settings import load_settings
from ragstream.events import (
    Message,
    Qrel,
    RetrievedDoc,
    encode_event,
    feedback_event,
    retrieval_event,
)
from ragstream.join import LabelOutcome, QueryView
from ragstream.pipeline.engine import Engine
from ragstream.shares import share_point
from ragstream.sinks.publisher import KafkaPublisher
from ragstream.sinks.results import (
    ResultRecord,
    ResultSampler,
    ResultsSink,
    SampleMode,
    UnknownMetricError,
    query_record,
    result_json_schema,
)
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from ragstream.wiring import engine_config
from ragstream.wiring.results import results_sink
from tests.support.defaults import result_sampler


def _traffic() -> list[tuple[bytes, bytes]]:
    traffic = SyntheticTraffic(SyntheticConfig(seed=5, rate=2.0, answer_share=0.0))
    return [(e.key, e.value) for e in traffic.take(600)]


def _engine() -> Engine:
    settings = load_settings(overrides={"labels": {"keys": ["app"]}})
    return Engine(engine_config(settings, clock="event"))


def _final(engine: Engine) -> list[QueryView]:
    report = engine.apply([Message(v, key=k) for k, v in _traffic()])
    return report.final + engine.finish()


def test_records_are_valid_by_the_published_schema() -> None:
    schema = result_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    engine = _engine()
    records = [query_record(engine, q) for q in _final(engine)]
    assert any(r["labeled"] for r in records)
    assert not all(r["labeled"] for r in records)
    for record in records:
        jsonschema.validate(record, schema)
        assert ResultRecord.model_validate(record).model_dump() == record
    labeled = next(r for r in records if r["labeled"])
    assert set(labeled["metrics"]) == set(engine.layout.record_names())
    assert labeled["graded_docs"] > 0
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**labeled, "metrics": {"rr": "high"}}, schema)
    without_id = {k: v for k, v in labeled.items() if k != "query_id"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(without_id, schema)


def test_label_sources_count_the_latest_grade_of_each_document() -> None:
    """Each graded document counts once, under the source of its latest grade: qrels, then
    inline `rel`, then feedback in arrival order (the judge's labels are `judge`)."""
    ts = 1_700_000_000.0  # the event clock's first event: its now
    results: list[RetrievedDoc] = [
        {"doc_id": "a", "rel": 1.0},
        {"doc_id": "b"},
        {"doc_id": "c", "rel": 0.0},
        {"doc_id": "d"},
    ]
    qrels: list[Qrel] = [{"doc_id": "a", "rel": 2.0}, {"doc_id": "b", "rel": 1.0}]
    values = [
        encode_event(retrieval_event("q", results, ts=ts, qrels=qrels)),
        encode_event(retrieval_event("plain", ["x", "y"], ts=ts)),
        encode_event(feedback_event("q", "c", 1.0, "click", ts=ts + 1)),
        encode_event(feedback_event("q", "e", 1.0, "thumb", ts=ts + 2)),
    ]
    engine = _engine()
    engine.apply([Message(v) for v in values])
    assert engine.label("q", "d", 1.0, ts=ts + 3) is LabelOutcome.APPLIED
    engine.apply([])
    records = {r["query_id"]: r for r in (query_record(engine, q) for q in engine.finish())}
    assert records["q"]["label_sources"] == {
        "inline": 1,
        "qrels": 1,
        "click": 1,
        "thumb": 1,
        "judge": 1,
    }
    assert records["q"]["graded_docs"] == 5
    assert records["plain"]["label_sources"] == {}


def test_label_sources_add_up_to_the_graded_documents() -> None:
    engine = _engine()
    records = [query_record(engine, q) for q in _final(engine)]
    assert {source for r in records for source in r["label_sources"]} == {"click", "qrels"}
    for record in records:
        assert sum(record["label_sources"].values()) == record["graded_docs"]
        assert bool(record["label_sources"]) is record["labeled"]


def test_replay_per_query_writes_result_records(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"\n".join(v for _, v in _traffic()) + b"\n")
    out = tmp_path / "per-query.jsonl"
    args = ["replay", str(events), "--set", "labels.keys=[app]", "--per-query", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    engine = _engine()
    expected = sorted(
        (json.loads(json.dumps(query_record(engine, q))) for q in _final(engine)),
        key=lambda r: r["query_id"],
    )
    written = sorted(map(json.loads, out.read_text().splitlines()), key=lambda r: r["query_id"])
    assert written == expected
    assert all(set(r) == set(ResultRecord.model_fields) for r in written)


def test_a_share_is_chosen_by_query_id_the_same_every_time() -> None:
    ids = [f"q-{i}" for i in range(20_000)]
    third = result_sampler("share", share=0.3)
    chosen = [q for q in ids if third.chooses(q, None)]
    assert 0.28 < len(chosen) / len(ids) < 0.32
    again = result_sampler("share", share=0.3)
    assert chosen == [q for q in ids if again.chooses(q, None)]
    assert chosen == [q for q in ids if share_point(q) < 0.3]
    larger = {q for q in ids if result_sampler("share", share=0.5).chooses(q, None)}
    assert set(chosen) < larger  # a larger share keeps the smaller one's queries
    assert not any(result_sampler("share", share=0.0).chooses(q, 0.0) for q in ids)
    assert all(result_sampler("share", share=1.0).chooses(q, None) for q in ids)


def test_below_chooses_queries_under_the_threshold_on_the_metric() -> None:
    sampler = result_sampler("below", metric="ndcg@10", threshold=0.5)
    assert sampler.chooses("a", 0.2)
    assert not sampler.chooses("b", 0.5)
    assert not sampler.chooses("c", None)  # not defined, or unlabeled
    with pytest.raises(ValueError, match="needs a metric"):
        ResultSampler("below", share=1.0, metric=None, threshold=0.5)
    with pytest.raises(ValueError, match="share"):
        result_sampler("share", share=1.5)


async def test_sampling_below_in_the_sink_and_a_full_queue_drops_and_counts() -> None:
    engine = _engine()
    final = _final(engine)
    values = [query_record(engine, q)["metrics"].get("rr") for q in final]
    low = sum(v is not None and v < 0.5 for v in values)
    assert 10 < low < len(final)
    publisher = KafkaPublisher(
        "unused", bootstrap_servers="127.0.0.1:9", queue_size=5, drain_timeout=1.0
    )
    sampler = result_sampler("below", metric="rr", threshold=0.5)
    sink = ResultsSink(engine, publisher, sampler)
    sink.on_final(final)  # never started: nothing is sent, nothing blocks
    assert sink.counts["offered"] == low
    assert sink.outcomes()["sampled_out"] == len(final) - low
    assert publisher.counts["queue_full"] == low - 5
    await sink.stop()
    assert sink.outcomes() == {
        "sampled_out": len(final) - low,
        "sent": 0,
        "queue_full": low - 5,
        "failed": 0,
        "shutdown": 5,
    }


@pytest.mark.parametrize(
    ("mode", "overrides"),
    [("all", {}), ("share", {"share": 0.3}), ("below", {"metric": "rr", "threshold": 0.5})],
)
def test_the_sink_queues_the_records_of_the_chosen_queries_byte_for_byte(
    mode: SampleMode, overrides: dict[str, Any]
) -> None:
    """The sink decides before it builds a record: it queues, in order, the encoded
    `query_record` of each final query that the rule on the whole record chooses, and takes
    every final query's verdict once, sampled or not."""
    engine = _engine()
    final = _final(engine)
    asked: list[tuple[int, str]] = []

    def verdicts(partition: int, query_id: str) -> dict[str, Any] | None:
        asked.append((partition, query_id))
        point = share_point(query_id)
        return {"faithfulness": point, "hallucination": False} if point < 0.5 else None

    def chosen(record: dict[str, Any]) -> bool:  # the sampling rule, on the whole record
        if mode == "share":
            return share_point(record["query_id"]) < 0.3
        value = record["metrics"].get("rr")
        return mode == "all" or (value is not None and value < 0.5)

    expected = []
    for query in final:
        record = query_record(engine, query, verdicts(query.partition, query.query_id))
        if chosen(record):
            expected.append((query.query_id.encode(), msgspec.json.encode(record)))
    assert mode == "all" or 10 < len(expected) < len(final) - 10
    asked.clear()
    publisher = KafkaPublisher(
        "unused", bootstrap_servers="127.0.0.1:9", queue_size=10**6, drain_timeout=1.0
    )
    sampler = result_sampler(mode, **overrides)
    sink = ResultsSink(engine, publisher, sampler, verdicts=verdicts)
    sink.on_final(final)  # never started: the queue keeps what was offered
    queued = [publisher._queue.get_nowait() for _ in range(publisher._queue.qsize())]
    assert queued == expected
    assert asked == [(q.partition, q.query_id) for q in final]
    assert sink.counts["offered"] == len(expected)
    assert sink.outcomes()["sampled_out"] == len(final) - len(expected)


def test_an_unknown_metric_is_a_clear_error() -> None:
    engine = _engine()
    publisher = KafkaPublisher(
        "unused", bootstrap_servers="127.0.0.1:9", queue_size=1, drain_timeout=1.0
    )
    sampler = result_sampler("below", metric="ndcg@7")
    with pytest.raises(UnknownMetricError, match="no per-query metric 'ndcg@7'"):
        ResultsSink(engine, publisher, sampler)


def test_the_sink_is_off_without_a_topic_and_built_from_the_settings() -> None:
    engine = _engine()
    assert results_sink(load_settings(), engine) is None
    settings = load_settings(
        overrides={"results": {"topic": "results", "sample": "share", "share": 0.25}}
    )
    sink = results_sink(settings, engine)
    assert sink is not None
    assert sink.publisher.topic == "results"
    assert (sink.sampler.mode, sink.sampler.share, sink.sampler.metric) == ("share", 0.25, None)


def test_run_stops_with_the_known_metrics_when_the_sampling_names_another() -> None:
    args = ["run", "--set", "results.topic=r", "--set", "results.sample=below"]
    result = CliRunner().invoke(main, [*args, "--set", "results.metric=ndcg@7"])
    assert result.exit_code == 1
    assert "results.metric: no per-query metric 'ndcg@7'; known: rr," in result.output


def test_schema_command_prints_the_result_schema() -> None:
    result = CliRunner().invoke(main, ["schema", "--type", "result"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == result_json_schema()
    assert json.loads(result.output)["title"] == "ragstream result"
