"""Gold verdicts joined with their answers: every answer with a gold verdict within the
label TTL is judged whatever the sampler drew and compared, in either order; late, expired
and dropped verdicts are counted; the latest verdict wins; the state moves with its
partition. The counts and the corrected ratio equal references computed from scratch
with the real lexical judge's own verdicts."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from ragstream.config.judging import GoldSettings, JudgeSettings, SamplingSettings
from ragstream.events import Message, answer_event, encode_event, message_key, verdict_event
from ragstream.events.models import AnswerEvent, Event, FeedbackEvent
from ragstream.judging.agreement import Confusion, corrected_rate
from ragstream.judging.gold import verdict_of
from ragstream.judging.model import JudgeInput
from ragstream.judging.service import JudgingService
from ragstream.pipeline.engine import Engine
from ragstream.pipeline.labelsets import LabelSetMapper
from ragstream.wiring import judging_service
from tests.support.defaults import agent_settings, engine_config

T0 = 1_767_225_600.0
TTL = 600.0
WINDOWS = (60.0, 3600.0)
CONTEXT = "To reset a password, open Settings, then Security, then choose Reset password."
ANSWERS = (
    "To reset a password, open Settings, then Security, then choose Reset password.",
    "The Eiffel Tower was painted green in 1889 by 300 volunteers from Lisbon.",
)


def _answer(qid: str, ts: float, text: str, app: str = "support") -> AnswerEvent:
    question = "how do I reset my password"
    return answer_event(qid, question, text, [CONTEXT], ts=ts, labels={"app": app})


def _messages(events: Sequence[Event], partition: int = 0) -> list[Message]:
    return [
        Message(encode_event(e), partition, i, "t", message_key(e)) for i, e in enumerate(events)
    ]


def _setup(
    rate: float = 0.0,
    queue_size: int = 1000,
    max_answers: int = 10_000,
    snapshot: dict[str, Any] | None = None,
) -> tuple[Engine, JudgingService]:
    """An engine on the event clock and its judging service (``snapshot``: restored)."""
    config = engine_config(windows=WINDOWS, clock="event", label_keys=("app",), label_ttl=TTL)
    engines: list[Engine] = []
    settings = JudgeSettings(
        sampling=SamplingSettings(rate=rate, max_per_second=None),
        queue_size=queue_size,
        gold=GoldSettings(max_answers=max_answers),
    )
    service = judging_service(
        agent_settings(settings, WINDOWS, label_ttl=TTL, pending_ttl=60.0),
        labelset=LabelSetMapper(("app",), 50),
        sampler_clock=lambda: engines[0].now(),
        window_clock=lambda: engines[0].now(),
    )
    if snapshot is None:
        engines.append(Engine(config))
        engines[0].attach("judge", service)
    else:
        engines.append(Engine.restore(config, snapshot, sides={"judge": service}))
    return engines[0], service


async def _settled(service: JudgingService) -> None:
    for _ in range(10_000):  # the lexical judge needs no more than a few turns per answer
        if not (service.workers.depth or service.workers.in_flight):
            return
        await asyncio.sleep(0)
    raise AssertionError("the judge workers did not settle")


async def _feed(engine: Engine, service: JudgingService, events: Sequence[Event]) -> None:
    report = engine.apply(_messages(events))
    service.on_answers(report.answers)
    service.on_verdicts(report.verdicts)
    await _settled(service)


async def _verdicts(service: JudgingService, texts: Sequence[str]) -> list[str]:
    """The lexical judge's own verdict on each answer text (the reference)."""
    out: list[str] = []
    for text in texts:
        item = JudgeInput.from_event(_answer("ref", T0, text))
        out.append(verdict_of(await service.judge.judge(item)))
    return out


async def test_gold_after_or_before_the_answer_is_judged_by_force_and_compared() -> None:
    engine, service = _setup(rate=0.0)  # the sampler draws nothing
    await service.start()
    reference = await _verdicts(service, ANSWERS)
    assert reference[0] != reference[1]  # one flagged, one not
    # q-a: gold after its answer; q-b: gold before its answer; q-c: an answer without gold
    await _feed(engine, service, [_answer("q-a", T0, ANSWERS[0]), _answer("q-c", T0, ANSWERS[1])])
    await _feed(engine, service, [verdict_event("q-b", True, "annotator", ts=T0 + 1)])
    assert service.gold_waiting == 1
    await _feed(
        engine,
        service,
        [
            verdict_event("q-a", False, "annotator", ts=T0 + 5, labels={"app": "support"}),
            _answer("q-b", T0 + 2, ANSWERS[1]),
        ],
    )
    await service.stop()
    pairs = [(False, reference[0] == "hallucination"), (True, reference[1] == "hallucination")]
    want = Confusion.from_pairs(pairs)
    assert service.results.confusion(engine.now(), ("support",)) == want
    assert service.gold.outcomes["compared"] == 2
    assert sum(service.agreement.values()) == 2
    assert service.agreement[("lexical", ("support",), True, reference[1])] == 1
    # judged for their gold verdicts only: compared, not counted in the sampled rates
    assert service.results.read_all(engine.now()) == {}
    assert service.workers.submitted == 2


async def test_late_expired_and_evicted_verdicts_are_counted_not_compared() -> None:
    engine, service = _setup(rate=0.0, max_answers=2)
    await service.start()
    await _feed(engine, service, [_answer("q-1", T0, ANSWERS[0])])
    await _feed(engine, service, [verdict_event("q-9", True, "x", ts=T0 + 2)])  # never answered
    await _feed(engine, service, [_answer("q-2", T0 + 100, ANSWERS[0])])  # 60 s waited: expired
    await _feed(engine, service, [_answer(f"q-{i}", T0 + 101, ANSWERS[0]) for i in range(3, 6)])
    await _feed(engine, service, [verdict_event("q-3", True, "x", ts=T0 + 102)])  # evicted answer
    await _feed(engine, service, [verdict_event("q-5", True, "x", ts=T0 + 101 + TTL + 1)])  # late
    await service.stop()
    assert service.gold.outcomes["late"] == 1
    # q-9's never answered, q-3's whose answer was evicted by the cap: both waited in vain
    assert service.gold.outcomes["expired"] == 2
    assert service.gold.outcomes["compared"] == 0
    assert service.gold_open == 0  # closed at the end of their TTL
    assert service.gold_waiting == 0
    assert sum(service.agreement.values()) == 0


async def test_the_latest_verdict_wins_and_a_full_queue_drops_and_counts() -> None:
    engine, service = _setup(rate=1.0)
    await service.start()
    (flag,) = await _verdicts(service, ANSWERS[1:])
    await _feed(engine, service, [_answer("q-1", T0, ANSWERS[1])])
    await _feed(engine, service, [verdict_event("q-1", False, "x", ts=T0 + 1)])
    await _feed(engine, service, [verdict_event("q-1", True, "x", ts=T0 + 2)])
    await service.stop()
    flagged = flag == "hallucination"
    assert service.results.confusion(engine.now(), ("support",)) == Confusion.from_pairs(
        [(True, flagged)]
    )
    assert service.gold.outcomes["compared"] == 2  # each comparison counted
    read = service.results.read(engine.now(), ("support",))["1h"]
    assert read.judged == 1  # sampled: in the rates too

    engine, service = _setup(rate=0.0, queue_size=1)  # workers not started: the queue fills
    await _feed(engine, service, [_answer(f"q-{i}", T0, ANSWERS[0]) for i in range(3)])
    events: list[Event] = [verdict_event(f"q-{i}", True, "x", ts=T0 + 1) for i in range(3)]
    report = engine.apply(_messages(events))
    service.on_verdicts(report.verdicts)
    assert service.workers.depth == 1
    assert service.gold.outcomes["dropped"] == 2
    assert service.workers.dropped["queue_full"] == 2


def _mixed(n: int) -> list[Event]:
    """Answers over two apps, half of them with gold verdicts, some before their answer."""
    events: list[Event] = []
    for i in range(n):
        ts = T0 + i
        app = "support" if i % 3 else "search"
        answer = _answer(f"q-{i}", ts, ANSWERS[i % 2 if i % 5 else 1], app)
        if i % 2:
            events.append(answer)
            continue
        gold = verdict_event(f"q-{i}", i % 4 == 0, "annotator", ts=ts + 1, labels={"app": app})
        events += [gold, answer] if i % 6 == 0 else [answer, gold]
    return events


async def test_counts_and_corrected_ratio_equal_a_reference_from_scratch() -> None:
    engine, service = _setup(rate=0.5)
    await service.start()
    events = _mixed(120)
    for start in range(0, len(events), 17):
        await _feed(engine, service, events[start : start + 17])
    await service.stop()
    reference = dict(zip(ANSWERS, await _verdicts(service, ANSWERS), strict=True))
    now = engine.now()
    for app in ("support", "search"):
        answers = {
            e.query_id: e for e in events if isinstance(e, AnswerEvent) and e.labels["app"] == app
        }
        gold = {
            e.query_id: e.answer["hallucination"]
            for e in events
            if isinstance(e, FeedbackEvent) and e.answer is not None and e.labels["app"] == app
        }
        pairs = [(g, reference[answers[q].answer] == "hallucination") for q, g in gold.items()]
        confusion = Confusion.from_pairs(pairs)
        assert service.results.confusion(now, (app,)) == confusion
        sampled = [
            a for a in answers.values() if service.sampler.decide(a.query_id, a.labels, now).sampled
        ]
        flagged = sum(reference[a.answer] == "hallucination" for a in sampled)
        read = service.results.read(now, (app,))["1h"]
        assert (read.judged, read.hallucinations) == (len(sampled), flagged)
        want = corrected_rate(flagged, len(sampled), confusion.se_counts, confusion.sp_counts)
        assert read.corrected == want


def _moved(state: Any) -> Any:
    return json.loads(json.dumps(state, allow_nan=False))


async def test_the_gold_join_moves_with_its_partition() -> None:
    """Answers kept and verdicts waiting move to the next owner, which compares them as the
    replica that never moved does."""
    events = _mixed(60)
    cut = 31
    reference_engine, reference = _setup(rate=0.3)
    await reference.start()
    await _feed(reference_engine, reference, events)
    await reference.stop()

    first_engine, first = _setup(rate=0.3)
    await first.start()
    await _feed(first_engine, first, events[:cut])
    state = _moved(first_engine.export_partitions({0})[0])
    await first.stop()
    assert first.gold_open > 0
    second_engine, second = _setup(rate=0.3)
    second_engine.adopt_partition(state)
    await second.start()
    await _feed(second_engine, second, events[cut:])
    await second.stop()
    now = reference_engine.now()
    for app in ("support", "search"):
        want = reference.results.confusion(now, (app,))
        assert want.n > 0
        assert second.results.confusion(now, (app,)) == want

    restored_engine, restored = _setup(rate=0.3, snapshot=_moved(first_engine.snapshot()))
    await restored.start()
    await _feed(restored_engine, restored, events[cut:])
    await restored.stop()
    for app in ("support", "search"):
        assert restored.results.confusion(now, (app,)) == reference.results.confusion(now, (app,))
