"""Judge verdicts in the result records: a query judged while open carries the verdict the
judge published for it, any other query null; the kept verdicts are partition state (they
move with a partition and come back from a snapshot, and an older snapshot without them is
read as none); they are bounded per partition, and every verdict is counted by outcome.

Every replica runs the real engine and the real lexical judge on synthetic traffic."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import zlib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from ragstream.cli import main
from ragstream.config.judging import JudgeSettings, SamplingSettings
from ragstream.config.settings import load_settings
from ragstream.events import DecodedAnswer, Message, decode_event
from ragstream.judging.collector import JudgeCollector
from ragstream.judging.model import JudgeInput
from ragstream.judging.partition import JudgePartition
from ragstream.judging.publisher import judgment_record
from ragstream.judging.sampler import sample_point
from ragstream.judging.service import JudgingService
from ragstream.judging.verdicts import VerdictKeeper
from ragstream.pipeline.engine import Engine, EngineConfig
from ragstream.sinks.results import ResultRecord, query_record, result_json_schema
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from ragstream.wiring import build_judge, judging_service
from ragstream.wiring.judging import query_open
from tests.support.defaults import agent_settings, engine_config

START = 1_767_225_600.0
PARTITIONS = 3
BATCH = 40
RATE = 0.5
VERDICT_FIELDS = (  # the fields of the published judgment a record's verdict repeats
    "judge",
    "model",
    "prompt_version",
    "faithfulness",
    "answer_relevance",
    "context_relevance",
    "hallucination",
    "refusal",
)
CONFIG = engine_config(clock="event", label_keys=("app",), label_ttl=60.0)


def _messages(n: int, seed: int = 11) -> list[Message]:
    traffic = SyntheticTraffic(
        SyntheticConfig(seed=seed, rate=5.0, start=START, answer_share=0.7, drift_at=None)
    )
    return [
        Message(e.value, zlib.crc32(e.key) % PARTITIONS, i, "t", e.key)
        for i, e in enumerate(traffic.take(n))
    ]


MESSAGES = _messages(1500)


def _answers(values: list[bytes]) -> dict[str, DecodedAnswer]:
    """The answer events among the messages, by query id (the last one wins)."""
    out: dict[str, DecodedAnswer] = {}
    for value in values:
        event = decode_event(value)
        if isinstance(event, DecodedAnswer):
            out[event.query_id] = event
    return out


async def _published(answers: dict[str, DecodedAnswer], salt: str = "") -> dict[str, Any]:
    """What the configured judge publishes for each sampled answer (`judge.publish_topic`'s
    record), by query id."""
    judge = build_judge(JudgeSettings())
    out: dict[str, Any] = {}
    for query_id, event in answers.items():
        if sample_point(query_id, salt) < RATE:
            item = JudgeInput.from_event(event)
            out[query_id] = judgment_record(item, await judge.judge(item), judged_at=0.0)
    return out


def _expected_verdict(published: dict[str, Any], query_id: str) -> dict[str, Any] | None:
    record = published.get(query_id)
    return None if record is None else {k: record[k] for k in VERDICT_FIELDS}


def _replica(
    max_verdicts: int = 10_000, config: EngineConfig = CONFIG
) -> tuple[Engine, JudgingService]:
    engine = Engine(config, wall=lambda: START)
    settings = JudgeSettings(
        sampling=SamplingSettings(rate=RATE, max_per_second=None), queue_size=100_000
    )
    service = judging_service(
        agent_settings(settings, CONFIG.windows, max_open=max_verdicts),
        labelset=engine.labelsets,
        sampler_clock=engine.now,
        window_clock=engine.now,
        is_open=query_open(engine),
    )
    engine.attach("judge", service)
    return engine, service


Records = dict[str, dict[str, Any]]


def _final(engine: Engine, service: JudgingService, queries: list[Any], into: Records) -> None:
    """The final queries' records, each with the verdict kept for it, as the results sink
    and `replay --per-query` build them."""
    for query in queries:
        into[query.query_id] = query_record(
            engine, query, service.take_verdict(query.partition, query.query_id)
        )


async def _feed(
    engine: Engine, service: JudgingService, messages: list[Message], into: Records
) -> None:
    """Batches as the runner applies them: the final queries' records, then the answers
    to the judge, judged before the next batch."""
    for i in range(0, len(messages), BATCH):
        report = engine.apply(messages[i : i + BATCH])
        _final(engine, service, report.final, into)
        service.on_answers(report.answers)
        await service.settle()


async def _run(
    engine: Engine, service: JudgingService, messages: list[Message], into: Records
) -> None:
    await service.start()
    await _feed(engine, service, messages, into)
    _final(engine, service, engine.finish(), into)
    await service.stop()


def _verdicts(records: Records) -> dict[str, Any]:
    """Each record's verdict by query id (a replica's event clock, which a hand-over
    restarts, may stamp a time otherwise)."""
    return {query_id: record["verdicts"] for query_id, record in records.items()}


def _moved(state: Any) -> Any:
    """As it travels: strict JSON and back."""
    return json.loads(json.dumps(state, allow_nan=False))


def _without_verdicts(state: Any) -> Any:
    """A state as an older version wrote it: no kept verdicts, and no count of them."""
    if isinstance(state, dict):
        return {k: _without_verdicts(v) for k, v in state.items() if k != "verdicts"}
    if isinstance(state, list):
        return [_without_verdicts(v) for v in state]
    return state


async def _reference() -> tuple[Records, JudgingService]:
    engine, service = _replica()
    records: Records = {}
    await _run(engine, service, MESSAGES, records)
    return records, service


async def test_records_carry_the_verdicts_the_judge_published() -> None:
    records, service = await _reference()
    published = await _published(_answers([m.value for m in MESSAGES]))
    schema = result_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    for query_id, record in records.items():
        jsonschema.validate(record, schema)
        assert ResultRecord.model_validate(record).model_dump() == record
        assert record["verdicts"] == _expected_verdict(published, query_id), query_id
    judged = [r for r in records.values() if r["verdicts"] is not None]
    answered = _answers([m.value for m in MESSAGES])
    assert 100 < len(judged) < len(records)
    assert any(r["query_id"] in answered and r["verdicts"] is None for r in records.values())
    assert any(r["verdicts"]["hallucination"] for r in judged)
    assert any(not r["verdicts"]["hallucination"] for r in judged)
    assert service.verdicts is not None
    outcomes = service.verdicts.outcomes
    assert outcomes["kept"] == outcomes["attached"] == len(judged)
    assert outcomes["not_open"] == outcomes["evicted"] == 0
    assert service.verdicts_kept == 0  # every final query took its verdict
    with pytest.raises(jsonschema.ValidationError):  # a verdict field the schema does not know
        jsonschema.validate({**judged[0], "verdicts": {**judged[0]["verdicts"], "x": 1}}, schema)


async def test_kept_verdicts_move_with_their_partitions() -> None:
    """Replica a reads every partition, then partitions 0 and 1 move to replica b with
    verdicts kept for their open queries: the records of both carry the reference's."""
    reference, _ = await _reference()
    (a, judge_a), (b, judge_b) = _replica(), _replica()
    await judge_a.start()
    await judge_b.start()
    cut = 700
    got: Records = {}
    await _feed(a, judge_a, MESSAGES[:cut], got)
    states = _moved(a.export_partitions({0, 1}))
    moved = {qid for s in states.values() for qid, _ in s["sides"]["judge"]["verdicts"]}
    assert moved  # the hand-over found verdicts kept for open queries
    for state in states.values():
        b.adopt_partition(state)
    a.drop_partitions({0, 1})
    assert judge_b.verdicts_kept == len(moved)
    rest = MESSAGES[cut:]
    await _feed(a, judge_a, [m for m in rest if m.partition == 2], got)
    await _feed(b, judge_b, [m for m in rest if m.partition != 2], got)
    _final(a, judge_a, a.finish(), got)
    _final(b, judge_b, b.finish(), got)
    await judge_a.stop()
    await judge_b.stop()
    assert _verdicts(got) == _verdicts(reference)
    assert all(got[qid]["verdicts"] is not None for qid in moved)


async def test_kept_verdicts_come_back_from_a_snapshot_and_an_older_one_has_none() -> None:
    """kill -9 in miniature: the replica's whole-engine snapshot holds the verdicts kept
    for open queries, so the records a restarted replica writes carry the reference's; a
    snapshot of an older version (no kept verdicts) is read, those queries' records null."""
    reference, _ = await _reference()
    crashed, judge_c = _replica()
    await judge_c.start()
    cut = 800
    before: Records = {}
    await _feed(crashed, judge_c, MESSAGES[:cut], before)
    saved = _moved(crashed.snapshot())
    shares = [r["sides"]["judge"] for r in saved["partitions"].values()]
    kept = {qid for share in shares for qid, _ in share["verdicts"]}
    assert kept
    await judge_c.stop()

    for snapshot, carries in ((saved, True), (_without_verdicts(saved), False)):
        judge_r = judging_service(
            agent_settings(
                JudgeSettings(sampling=SamplingSettings(rate=RATE, max_per_second=None)),
                CONFIG.windows,
            ),
            is_open=lambda q: False,  # bound to the restored engine below
        )
        restarted = Engine.restore(CONFIG, snapshot, wall=lambda: START, sides={"judge": judge_r})
        assert judge_r.verdicts is not None
        judge_r.verdicts.is_open = query_open(restarted)
        assert judge_r.verdicts_kept == (len(kept) if carries else 0)
        after: Records = {}
        await _run(restarted, judge_r, MESSAGES[cut:], after)
        assert before.keys().isdisjoint(after)
        got, want = _verdicts({**before, **after}), _verdicts(reference)
        if carries:
            assert got == want
            assert judge_r.verdicts.outcomes["attached"] >= len(kept)  # counted on
        else:
            assert got.keys() == want.keys()
            assert {q for q in got if got[q] != want[q]} == kept
            assert all(got[q] is None for q in kept)


def test_a_partitions_kept_verdicts_round_trip_and_an_older_export_has_none() -> None:
    _, service = _replica()
    share = JudgePartition(1, service.results)
    share.verdicts = {
        "q-1": dict.fromkeys(VERDICT_FIELDS) | {"judge": "lexical", "hallucination": True},
        "q-2": dict.fromkeys(VERDICT_FIELDS) | {"judge": "lexical", "faithfulness": 0.5},
    }
    exported = _moved(share.export())
    adopted, unjudged = JudgePartition.adopt(1, exported, service.results)
    assert adopted.verdicts == share.verdicts
    assert list(adopted.verdicts) == ["q-1", "q-2"]  # oldest first, as kept
    assert unjudged == []
    older = {k: v for k, v in exported.items() if k != "verdicts"}
    assert JudgePartition.adopt(1, older, service.results)[0].verdicts == {}
    assert JudgePartition.adopt(1, None, service.results)[0].verdicts == {}


async def test_the_cap_evicts_the_oldest_and_every_verdict_is_counted() -> None:
    """At most `max_verdicts` per partition: past it the oldest kept verdict is evicted
    (its record null), and the counts add up; /metrics shows them."""
    cap = 3
    engine, service = _replica(max_verdicts=cap)
    records: Records = {}
    await _run(engine, service, MESSAGES, records)
    reference, _ = await _reference()
    assert service.verdicts is not None
    outcomes = service.verdicts.outcomes
    nulled = [q for q in records if records[q]["verdicts"] != reference[q]["verdicts"]]
    assert outcomes["evicted"] == len(nulled) > 0
    assert all(records[q]["verdicts"] is None for q in nulled)
    assert outcomes["kept"] == outcomes["attached"] + outcomes["evicted"]
    assert outcomes["attached"] == sum(r["verdicts"] is not None for r in records.values())
    registry = CollectorRegistry()
    registry.register(JudgeCollector(service))
    samples = {
        (s.name, s.labels.get("outcome")): s.value
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        for s in family.samples
        if s.name.startswith("ragstream_judge_verdicts")
    }
    assert samples == {
        ("ragstream_judge_verdicts_total", "kept"): outcomes["kept"],
        ("ragstream_judge_verdicts_total", "attached"): outcomes["attached"],
        ("ragstream_judge_verdicts_total", "not_open"): 0,
        ("ragstream_judge_verdicts_total", "evicted"): outcomes["evicted"],
        ("ragstream_judge_verdicts_kept", None): 0,
    }


async def test_a_verdict_that_comes_after_its_query_is_final_is_not_kept() -> None:
    """With a label TTL shorter than a batch, many queries are final in the batch that
    brings their answer, before the judge sees it: their records are null and their
    judgments counted `not_open`; the others (open to the batch's end) carry theirs."""
    engine, service = _replica(config=dataclasses.replace(CONFIG, label_ttl=0.2))
    records: Records = {}
    await _run(engine, service, MESSAGES, records)
    assert service.verdicts is not None
    outcomes = service.verdicts.outcomes
    judged = service.workers.outcomes["ok"]
    carried = sum(r["verdicts"] is not None for r in records.values())
    assert outcomes["not_open"] + outcomes["kept"] == judged > 100
    assert outcomes["not_open"] > 50
    assert outcomes["kept"] == outcomes["attached"] == carried
    assert outcomes["evicted"] == service.verdicts_kept == 0


async def test_a_verdict_whose_query_is_not_open_is_not_kept() -> None:
    """The keeper itself: only open queries keep a verdict; a query judged again keeps its
    latest; the cap evicts the oldest; each is counted."""
    judge = build_judge(JudgeSettings())
    answers = list(_answers([m.value for m in MESSAGES]).values())[:6]
    judgments = [await judge.judge(JudgeInput.from_event(a)) for a in answers]
    ids = [a.query_id for a in answers]
    open_ids = set(ids[:4])
    keeper = VerdictKeeper(open_ids.__contains__, max_per_partition=3)
    kept: dict[str, dict[str, Any]] = {}
    results = [keeper.keep(kept, q, j) for q, j in zip(ids, judgments, strict=True)]
    assert results == [True, True, True, True, False, False]
    assert list(kept) == ids[1:4]  # the first one evicted
    assert keeper.keep(kept, ids[1], judgments[0])  # judged again: its latest, the newest
    assert list(kept) == [ids[2], ids[3], ids[1]]
    assert keeper.take({}, ids[1]) is None  # another partition's
    assert keeper.take(kept, ids[1]) == {
        k: judgment_record(JudgeInput.from_event(answers[0]), judgments[0], judged_at=0.0)[k]
        for k in VERDICT_FIELDS
    }
    assert keeper.take(kept, ids[1]) is None
    assert dict(keeper.outcomes) == {"kept": 5, "attached": 1, "not_open": 2, "evicted": 1}
    with pytest.raises(ValueError, match="max_per_partition"):
        VerdictKeeper(open_ids.__contains__, max_per_partition=0)


async def test_replay_per_query_carries_the_verdicts(tmp_path: Path) -> None:
    """`replay --per-query` judges (the agent's sampling and judge) and writes each judged
    query's verdict in its record; a replay without judging writes null."""
    values = [m.value for m in _messages(900, seed=5)]
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"\n".join(values) + b"\n")
    out = tmp_path / "per-query.jsonl"
    settings = [
        "labels.keys=[app]",
        "join.label_ttl=60s",
        f"judge.sampling.rate={RATE}",
    ]
    args = ["replay", str(events), "--per-query", str(out), "--batch-size", "40", "--format"]
    with_settings = [*args, "json", *(a for s in settings for a in ("--set", s))]
    result = await asyncio.to_thread(CliRunner().invoke, main, with_settings)
    assert result.exit_code == 0, result.output
    written = {r["query_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    published = await _published(_answers(values), load_settings().judge.sampling.salt)
    schema = result_json_schema()
    for query_id, record in written.items():
        jsonschema.validate(record, schema)
        assert record["verdicts"] == _expected_verdict(published, query_id), query_id
    assert sum(r["verdicts"] is not None for r in written.values()) > 50

    off = tmp_path / "off.jsonl"
    without = [*settings, "judge.enabled=false"]
    off_args = ["replay", str(events), "--per-query", str(off), "--batch-size", "40"]
    result = await asyncio.to_thread(
        CliRunner().invoke, main, [*off_args, *(a for s in without for a in ("--set", s))]
    )
    assert result.exit_code == 0, result.output
    unjudged = {r["query_id"]: r for r in map(json.loads, off.read_text().splitlines())}
    assert unjudged.keys() == written.keys()
    assert all(r["verdicts"] is None for r in unjudged.values())
    assert all({**r, "verdicts": None} == unjudged[q] for q, r in written.items())
