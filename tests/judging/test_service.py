"""Judging wired to the real engine on synthetic traffic, and consumer throughput with a
slow judge on and off."""

from __future__ import annotations

import asyncio
import functools
import json
import time

import pytest

from ragstream.config.judging import (
    JudgeSettings,
    OpenAISettings,
    RetrievalRuleSettings,
    SamplingSettings,
)
from ragstream.events import AnswerEvent, DecodedAnswer, Message, decode_event
from ragstream.judging.model import JudgeInput, Judgment
from ragstream.judging.sampler import Outcome
from ragstream.judging.service import JudgingService, engine_label_sink, engine_lookup
from ragstream.pipeline.engine import Engine
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from ragstream.wiring import judging_service
from tests.support.defaults import agent_settings, engine_config
from tests.support.openai_server import OpenAIServer, Reply

from ._helpers import good_content

WINDOWS = (60.0, 300.0, 3600.0)
WALL = 1_900_000_000.0


@functools.cache
def _stream() -> tuple[Message, ...]:
    """2000 messages of synthetic traffic (about 520 queries) with a drift after 60 s."""
    traffic = SyntheticTraffic(SyntheticConfig(seed=5, rate=5.0, drift_at=60.0))
    return tuple(
        Message(e.value, partition=int(e.key[-1]) % 3, offset=i)
        for i, e in enumerate(traffic.take(2000))
    )


def _messages(n: int) -> list[Message]:
    return list(_stream()[:n])


def _engine() -> Engine:
    config = engine_config(
        cutoffs=(1, 5, 10),
        half_lives=(3600.0,),
        windows=WINDOWS,
        clock="event",
        label_keys=("app",),
    )
    return Engine(config, wall=lambda: WALL)


def _reference_rr(messages: list[Message], batch: int) -> dict[str, float]:
    """rr of each answered query as known at the end of its answer's batch (qrels, inline
    labels and feedback so far; the latest label wins), computed from scratch."""
    rankings: dict[str, list[str]] = {}
    labels: dict[str, dict[str, float]] = {}
    rr: dict[str, float] = {}
    for start in range(0, len(messages), batch):
        answered = []
        for m in messages[start : start + batch]:
            e = json.loads(m.value)
            qid, known = e["query_id"], labels.setdefault(e["query_id"], {})
            if e["type"] == "retrieval":
                rankings[qid] = list(dict.fromkeys(d["doc_id"] for d in e["results"]))
                known.update({q["doc_id"]: q["rel"] for q in e.get("qrels") or []})
            elif e["type"] == "feedback":
                known[e["doc_id"]] = e["rel"]
            else:
                answered.append(qid)
        for qid in answered:
            if qid in rankings and labels[qid]:
                ranks = [r + 1 for r, d in enumerate(rankings[qid]) if labels[qid].get(d, 0) >= 1]
                rr[qid] = 1.0 / ranks[0] if ranks else 0.0
    return rr


async def test_poor_retrieval_is_oversampled_and_judge_labels_reach_the_join() -> None:
    engine = _engine()
    messages = _messages(2000)
    settings = JudgeSettings(
        sampling=SamplingSettings(
            rate=0.0,
            retrieval_rules=[RetrievalRuleSettings(metric="rr", below=0.5, rate=1.0)],
            max_per_second=None,
        ),
        queue_size=10_000,
        feed_labels=True,
    )
    sink, label_counts = engine_label_sink(engine)
    judged: list[JudgeInput] = []
    service = judging_service(
        agent_settings(settings, WINDOWS),
        labelset=engine.labelsets,
        lookup=engine_lookup(engine, ["rr"]),
        on_labels=sink,
        sampler_clock=engine.now,
        window_clock=engine.now,
    )
    record = service.results.record

    def spy(item: JudgeInput, judgment: Judgment, now: float) -> bool:
        judged.append(item)
        return record(item, judgment, now)

    service.results.record = spy  # type: ignore[method-assign]
    await service.start()
    for start in range(0, len(messages), 250):
        report = engine.apply(messages[start : start + 250])
        service.on_answers(report.answers)
        await asyncio.sleep(0)
    await service.stop()
    reference = _reference_rr(messages, 250)
    poor = {q for q, rr in reference.items() if rr < 0.5}
    sampled = {x.query_id for x in judged}
    assert sampled
    assert sampled == poor  # exactly the queries whose retrieval scored badly
    assert service.sampler.by_rule == {"retrieval:rr<0.5": len(sampled)}
    assert service.sampler.counts[Outcome.NOT_SAMPLED] > 0
    assert label_counts["applied"] >= len(sampled)
    reads = service.results.read_all(engine.now())
    assert sum(r["1h"].judged for r in reads.values()) == len(sampled)


async def test_lexical_judging_sees_the_synthetic_drift() -> None:
    """After the drift, answers of app=support add unsupported sentences far more often."""
    engine = _engine()
    messages = _messages(2000)
    settings = JudgeSettings(sampling=SamplingSettings(rate=1.0, max_per_second=None))
    service = judging_service(
        agent_settings(settings, WINDOWS),
        labelset=engine.labelsets,
        sampler_clock=engine.now,
        window_clock=engine.now,
    )
    await service.start()
    for start in range(0, len(messages), 500):
        service.on_answers(engine.apply(messages[start : start + 500]).answers)
        await asyncio.sleep(0)
    await service.stop()
    reads = service.results.read_all(engine.now())
    drifted = reads[("support",)]["1m"]
    steady = reads[("search",)]["1m"]
    assert drifted.judged > 30
    assert steady.judged > 30
    assert drifted.hallucination_ratio > 0.25
    assert steady.hallucination_ratio < 0.15
    assert drifted.hallucination_interval[0] > steady.hallucination_interval[1]


async def _consume(
    messages: list[Message], service: JudgingService | None
) -> tuple[float, float, float]:
    """A consumer loop; returns (wall time, CPU time of this thread in apply and in
    on_answers: CPU, so that the machine's other work does not count in either)."""
    engine = _engine()
    applying = judging = 0.0
    started = time.perf_counter()
    for start in range(0, len(messages), 250):
        t0 = time.thread_time()
        report = engine.apply(messages[start : start + 250])
        t1 = time.thread_time()
        if service is not None:
            service.on_answers(report.answers)
        applying += t1 - t0
        judging += time.thread_time() - t1
        await asyncio.sleep(0)
    return time.perf_counter() - started, applying, judging


JUDGE_SECONDS = 10.0
"""How long the slow judge takes to answer: far longer than consuming the messages."""


async def test_a_slow_judge_does_not_slow_consumption(server: OpenAIServer) -> None:
    server.responder = lambda body: Reply(good_content(3), delay=JUDGE_SECONDS)
    settings = JudgeSettings(
        kind="openai",
        sampling=SamplingSettings(rate=1.0, max_per_second=None),
        queue_size=10,
        concurrency=2,
        drain_timeout=0.0,
        openai=OpenAISettings(base_url=server.base_url, api_key="sk-test", max_retries=0),
    )
    messages = _messages(1000)
    answers = sum(b'"type":"answer"' in m.value for m in messages)
    on: list[float] = []
    for _ in range(2):
        service = judging_service(agent_settings(settings, WINDOWS))
        await service.start()
        wall, applying, judging = await _consume(messages, service)
        on.append(wall)
        await service.stop()
        # every answer sampled, at most 12 judged: the rest dropped and counted, not waited for
        assert service.workers.dropped["queue_full"] >= answers - 12
        assert judging < 0.15 * applying, (judging, applying)
    # each judgment takes JUDGE_SECONDS: a pass that waited for one would take as long
    assert max(on) < JUDGE_SECONDS, on
    assert server.calls <= 2 * 4


@pytest.mark.parametrize("key", ["settings", "file", "env"])
def test_api_key_sources(
    key: str, tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_KEY", "from-env")
    path = tmp_path / "key"  # type: ignore[operator]
    path.write_text("from-file\n")
    options = {"api_key_env": "JUDGE_KEY"}
    if key in ("settings", "file"):
        options["api_key_file"] = str(path)
    if key == "settings":
        options["api_key"] = "from-settings"
    resolved = OpenAISettings.model_validate(options).resolve_api_key()
    assert resolved == {"settings": "from-settings", "file": "from-file", "env": "from-env"}[key]
    assert "from-settings" not in repr(OpenAISettings.model_validate(options))


def test_settings_are_strict_and_read_durations() -> None:
    s = JudgeSettings.model_validate(
        {"drain_timeout": "30s", "openai": {"timeout": "1m", "circuit_cooldown": "2m"}}
    )
    assert (s.drain_timeout, s.openai.timeout, s.openai.circuit_cooldown) == (30.0, 60.0, 120.0)
    with pytest.raises(ValueError, match="extra"):
        JudgeSettings.model_validate({"sampling": {"rat": 0.5}})
    with pytest.raises(ValueError, match="less than or equal"):
        JudgeSettings.model_validate({"sampling": {"rate": 2}})


def test_judge_input_from_either_answer_type() -> None:
    raw = {
        "type": "answer",
        "query_id": "q",
        "ts": 1_800_000_000,
        "labels": {"app": "a"},
        "question": "x",
        "answer": "y",
        "contexts": [{"text": "t", "doc_id": "d"}, {"text": "u"}],
        "model": "gen-1",
    }
    decoded = decode_event(json.dumps(raw).encode())
    assert isinstance(decoded, DecodedAnswer)
    model = AnswerEvent.model_validate(raw)
    expected = JudgeInput(
        query_id="q",
        ts=1_800_000_000.0,
        question="x",
        answer="y",
        contexts=("t", "u"),
        doc_ids=("d", None),
        labels={"app": "a"},
        model="gen-1",
    )
    assert JudgeInput.from_event(decoded) == expected
    assert JudgeInput.from_event(model) == expected
