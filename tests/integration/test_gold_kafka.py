"""Gold verdicts through a real Kafka broker: `ragstream run` compares them with its judge
and exports the agreement counts, the judge's sensitivity and specificity and the corrected
hallucination ratio, equal to a reference computed from scratch with the same judge on the
same answers."""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections import Counter
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bench.judge_ragtruth import (
    TASKS,
    answer_line,
    corrected_check,
    has_gold,
    judge_records,
    load_records,
    ragtruth_path,
)
from ragstream.config.judging import JudgeSettings
from ragstream.events import AnswerEvent
from ragstream.judging.agreement import Confusion, corrected_rate
from ragstream.judging.gold import verdict_of
from ragstream.judging.model import JudgeInput
from ragstream.judging.sampler import Sampler
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from ragstream.wiring import build_judge
from tests.support import KafkaBroker, TopicFactory, produce_records
from tests.support.agent_process import AgentProcess, running_agent, wait_ready

RATE = 0.3
_Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _samples(agent: AgentProcess) -> _Samples:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(agent.metrics())
        for s in family.samples
    }


def _agent_command(
    broker: KafkaBroker, topic: str, *, group: str, label: str, rate: float
) -> tuple[dict[str, str], list[str]]:
    """The environment and arguments of a `ragstream run` reading `topic` from the start,
    exporting the `label` key and judging a share `rate` of the answers without a rate
    limit (every answer with a gold verdict is judged whatever the rate)."""
    env = {
        "RAGSTREAM_KAFKA__BOOTSTRAP_SERVERS": broker.bootstrap_servers,
        "RAGSTREAM_KAFKA__TOPICS": f'["{topic}"]',
    }
    settings = (
        "http.host=127.0.0.1",
        "kafka.auto_offset_reset=earliest",
        f"labels.keys=[{label}]",
        f"judge.sampling.rate={rate}",
        "judge.sampling.max_per_second=100000",
        "judge.sampling.burst=100000",
    )
    return env, ["run", "--group-id", group, *(a for s in settings for a in ("--set", s))]


async def _reference(
    answers: list[AnswerEvent], gold: dict[str, bool]
) -> dict[str, tuple[Confusion, int, int, Counter[tuple[str, str]]]]:
    """Per app: the confusion against gold, the sampled answers flagged and judged, and the
    (gold, verdict) counts, from the judge the agent runs, on every answer."""
    judge = build_judge(JudgeSettings())
    sampler = Sampler(RATE, salt=JudgeSettings().sampling.salt)
    out: dict[str, tuple[Confusion, int, int, Counter[tuple[str, str]]]] = {}
    per_app: dict[str, list[tuple[AnswerEvent, str]]] = {}
    for answer in answers:
        verdict = verdict_of(await judge.judge(JudgeInput.from_event(answer)))
        per_app.setdefault(answer.labels["app"], []).append((answer, verdict))
    for app, judged in per_app.items():
        pairs = [(gold[a.query_id], v == "hallucination") for a, v in judged if a.query_id in gold]
        sampled = [v for a, v in judged if sampler.decide(a.query_id, a.labels, 0.0).sampled]
        cells = Counter(
            ("hallucination" if gold[a.query_id] else "faithful", v)
            for a, v in judged
            if a.query_id in gold
        )
        flagged = sum(v == "hallucination" for v in sampled)
        out[app] = (Confusion.from_pairs(pairs), flagged, len(sampled), cells)
    return out


async def test_gold_verdicts_through_kafka_give_agreement_and_corrected_ratios(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory, tmp_path: Path
) -> None:
    topic = await kafka_topic_factory(2)
    start = time.time() - 40.0
    traffic = SyntheticTraffic(
        SyntheticConfig(
            seed=12,
            start=start,
            rate=15.0,
            drift_at=10.0,
            gold_share=0.5,
            gold_delay=(0.5, 5.0),
            early_feedback_share=0.05,
        )
    )
    events = [e for e in traffic.stream(500) if e.event["ts"] < time.time()]
    answers = [AnswerEvent.model_validate(e.event) for e in events if e.event["type"] == "answer"]
    gold = {
        str(e.event["query_id"]): bool(e.event["answer"]["hallucination"])
        for e in events
        if e.event["type"] == "feedback" and "answer" in e.event
    }
    assert len(gold) > 100
    assert any(e.arrival < e.event["ts"] for e in events if "answer" in e.event)  # some first
    reference = await _reference(answers, gold)
    env, args = _agent_command(kafka_broker, topic, group="gold", label="app", rate=RATE)
    async with running_agent(args, tmp_path / "agent.log", env) as agent:
        await asyncio.to_thread(wait_ready, [agent])
        await produce_records(
            kafka_broker.bootstrap_servers, topic, [(e.key, e.value) for e in events]
        )
        compared = ("ragstream_judge_gold_total", frozenset({("outcome", "compared")}))
        deadline = time.monotonic() + 90
        while True:
            samples = await asyncio.to_thread(_samples, agent)
            if samples.get(compared) == len(gold):
                break
            assert time.monotonic() < deadline, samples.get(compared)
            await asyncio.sleep(0.5)
    for app, (confusion, flagged, n, cells) in reference.items():
        for (gold_name, verdict), count in cells.items():
            key = frozenset(
                {("judge", "lexical"), ("app", app), ("gold", gold_name), ("verdict", verdict)}
            )
            assert samples[("ragstream_judge_agreement_total", key)] == count
        where = {("judge", "lexical"), ("app", app), ("window", "24h")}
        for gold_name, count in (
            ("hallucination", confusion.positives),
            ("faithful", confusion.negatives),
        ):
            labels = frozenset({*where, ("gold", gold_name)})
            assert samples[("ragstream_judge_gold_comparisons", labels)] == count
        se, sp = confusion.sensitivity(), confusion.specificity()
        if se.defined:
            assert samples[("ragstream_judge_sensitivity", frozenset(where))] == pytest.approx(
                se.value, rel=1e-12
            )
        if sp.defined:
            assert samples[("ragstream_judge_specificity", frozenset(where))] == pytest.approx(
                sp.value, rel=1e-12
            )
        window = {("app", app), ("window", "1h")}
        judged = samples[("ragstream_generation_judged_queries", frozenset(window))]
        ratio = samples[("ragstream_generation_hallucination_ratio", frozenset(window))]
        assert judged == n
        assert ratio == pytest.approx(flagged / n, rel=1e-12)
        want = corrected_rate(flagged, n, confusion.se_counts, confusion.sp_counts)
        bound = "ragstream_generation_hallucination_ratio_corrected_bound"
        for side, value in (("lower", want.lower), ("upper", want.upper)):
            got = samples[(bound, frozenset({*window, ("bound", side)}))]
            assert got == pytest.approx(value, rel=1e-12, abs=1e-15)
        corrected = ("ragstream_generation_hallucination_ratio_corrected", frozenset(window))
        if want.defined:
            assert samples[corrected] == pytest.approx(want.value, rel=1e-12)
            assert not math.isnan(samples[corrected])
        else:
            assert corrected not in samples
    assert any(want_defined for want_defined in _defined(reference))


def _defined(
    reference: dict[str, tuple[Confusion, int, int, Counter[tuple[str, str]]]],
) -> list[bool]:
    return [
        corrected_rate(flagged, n, c.se_counts, c.sp_counts).defined
        for c, flagged, n, _ in reference.values()
    ]


_RAGTRUTH = ragtruth_path()


@pytest.mark.skipif(_RAGTRUTH is None, reason="shared/data/ragtruth is not beside the project")
async def test_gold_verdicts_on_real_answers_through_kafka_cover_the_true_rate(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory, tmp_path: Path
) -> None:
    """RAGTruth's development half: every answer, and a gold verdict on 40% of them, through
    Kafka; the agent's corrected ratio of each task (all answers judged) covers the task's
    true hallucination rate and equals `ragstream judge`'s (the bench's) figure."""
    assert _RAGTRUTH is not None
    records = load_records(_RAGTRUTH)
    now = time.time() - 60.0
    messages: list[tuple[bytes, bytes]] = []
    for i, record in enumerate(records):
        line = json.loads(answer_line(record, gold=False))
        contexts = [c if isinstance(c, dict) else {"text": c} for c in line["contexts"]]
        event = {**line, "type": "answer", "ts": now + i * 0.01, "contexts": contexts}
        key = str(event["query_id"]).encode()
        messages.append((key, json.dumps(event).encode()))
        if has_gold(record):
            verdict = {
                "type": "feedback",
                "query_id": event["query_id"],
                "ts": now + i * 0.01 + 1.0,
                "labels": event["labels"],
                "answer": {"hallucination": bool(record["label"])},
                "source": "annotator",
            }
            messages.append((key, json.dumps(verdict).encode()))
    gold = sum(has_gold(r) for r in records)
    topic = await kafka_topic_factory(2)
    env, args = _agent_command(kafka_broker, topic, group="ragtruth", label="task", rate=1)
    async with running_agent(args, tmp_path / "agent.log", env) as agent:
        await asyncio.to_thread(wait_ready, [agent])
        await produce_records(kafka_broker.bootstrap_servers, topic, messages)
        compared = ("ragstream_judge_gold_total", frozenset({("outcome", "compared")}))
        deadline = time.monotonic() + 120
        while True:
            samples = await asyncio.to_thread(_samples, agent)
            if samples.get(compared) == gold:
                break
            assert time.monotonic() < deadline, samples.get(compared)
            await asyncio.sleep(0.5)
    rows_by_task = {task: [r for r in records if r["task_type"] == task] for task in TASKS}
    bound = "ragstream_generation_hallucination_ratio_corrected_bound"
    for task, chosen in rows_by_task.items():
        rows, _ = await asyncio.to_thread(judge_records, chosen, JudgeSettings())
        check = corrected_check(chosen, rows)
        window = {("task", task), ("window", "1h")}
        lower = samples[(bound, frozenset({*window, ("bound", "lower")}))]
        upper = samples[(bound, frozenset({*window, ("bound", "upper")}))]
        assert lower <= check["true_share"] <= upper, (task, lower, upper, check)
        assert lower == pytest.approx(check["corrected"]["lower"], rel=1e-12, abs=1e-15)
        assert upper == pytest.approx(check["corrected"]["upper"], rel=1e-12, abs=1e-15)
        print(f"{task}: true {check['true_share']:.3f}, corrected [{lower:.3f}, {upper:.3f}]")
