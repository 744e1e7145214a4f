"""The judging collector as Prometheus exposes it (parsed back with prometheus_client)."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from ragstream.config.judging import JudgeSettings, OpenAISettings, SamplingSettings
from ragstream.events import AnswerEvent, to_decoded, verdict_event
from ragstream.judging.collector import JudgeCollector
from ragstream.judging.results import wilson_interval
from ragstream.judging.service import JudgingService
from ragstream.wiring import judging_service
from tests.support.defaults import agent_settings
from tests.support.openai_server import OpenAIServer

NOW = 1_800_000_000.0


def _answers(n: int) -> list[AnswerEvent]:
    return [
        AnswerEvent(
            query_id=f"q{i}",
            ts=NOW - 10,
            labels={"app": "support" if i % 2 else "search"},
            question="When are shards rebalanced?",
            answer="Shards are rebalanced every night."
            + (" The moon is made of green cheese." if i % 3 == 0 else ""),
            contexts=[{"doc_id": "d1", "text": "Shards are rebalanced every night."}],
        )
        for i in range(n)
    ]


def _samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def _run(service: JudgingService, answers: list[AnswerEvent]) -> None:
    await service.start()
    service.on_answers([(0, answer) for answer in answers])
    await service.stop()


def _every_answer_service() -> JudgingService:
    """A judging service that samples every answer, labelled by `app`, at the time NOW."""
    settings = JudgeSettings(sampling=SamplingSettings(rate=1.0, max_per_second=None))
    return judging_service(
        agent_settings(settings, (60.0, 300.0)),
        labelset=lambda labels: (labels.get("app", ""),),
        sampler_clock=lambda: NOW,
        window_clock=lambda: NOW,
    )


async def test_windowed_gauges_and_health() -> None:
    service = _every_answer_service()
    await _run(service, _answers(12))
    registry = CollectorRegistry()
    registry.register(JudgeCollector(service, ["app"], now=lambda: NOW))
    got = _samples(registry)
    w = (("app", "support"), ("window", "1m"))
    # support: i = 1, 3, 5, 7, 9, 11; hallucinated when i % 3 == 0: 3 and 9
    assert got[("ragstream_generation_judged_queries", w)] == 6
    assert got[("ragstream_generation_hallucination_ratio", w)] == pytest.approx(2 / 6)
    low, high = wilson_interval(2, 6)
    bound = "ragstream_generation_hallucination_ratio_bound"
    assert got[(bound, (w[0], ("bound", "lower"), w[1]))] == pytest.approx(low)
    assert got[(bound, (w[0], ("bound", "upper"), w[1]))] == pytest.approx(high)
    assert got[("ragstream_generation_faithfulness", w)] == pytest.approx((4 * 1.0 + 2 * 0.5) / 6)
    assert got[("ragstream_generation_context_relevance", w)] == 1.0
    assert got[("ragstream_judge_samples_total", (("outcome", "sampled"),))] == 12
    assert got[("ragstream_judge_requests_total", (("outcome", "ok"),))] == 12
    assert got[("ragstream_judge_dropped_total", (("reason", "queue_full"),))] == 0
    assert got[("ragstream_judge_latency_seconds_count", ())] == 12
    assert got[("ragstream_judge_queue_depth", ())] == 0
    assert not any(name.startswith("ragstream_judge_tokens") for name, _ in got)
    for _, labels in got:
        assert not {"query_id", "doc_id"} & {k for k, _ in labels}


async def test_the_corrected_ratio_is_absent_with_bounds_0_and_1_when_undefined() -> None:
    """Gold verdicts of one kind only (every one `faithful`): Se is unknown, the correction
    undefined; the counts and Sp are exported, the corrected value is not."""
    service = _every_answer_service()
    answers = _answers(12)
    verdicts = [
        verdict_event(a.query_id, False, "annotator", ts=NOW - 5, labels=a.labels)
        for a in answers
        if a.labels["app"] == "support"
    ]
    await service.start()
    service.on_answers([(0, a) for a in answers])
    await service.stop()
    service.on_verdicts([(0, to_decoded(v)) for v in verdicts])  # type: ignore[misc]
    registry = CollectorRegistry()
    registry.register(JudgeCollector(service, ["app"], now=lambda: NOW))
    got = _samples(registry)
    w = (("app", "support"), ("window", "1m"))
    corrected = "ragstream_generation_hallucination_ratio_corrected"
    assert (corrected, w) not in got
    assert got[(corrected + "_bound", (w[0], ("bound", "lower"), w[1]))] == 0.0
    assert got[(corrected + "_bound", (w[0], ("bound", "upper"), w[1]))] == 1.0
    gold = (("app", "support"), ("judge", "lexical"), ("window", "5m"))
    assert (
        got[("ragstream_judge_gold_comparisons", (*gold[:1], ("gold", "faithful"), *gold[1:]))] == 6
    )
    assert ("ragstream_judge_sensitivity", gold) not in got  # no gold hallucination
    # support: hallucinated when i % 3 == 0 (3 and 9), so 4 of the 6 are not flagged
    assert got[("ragstream_judge_specificity", gold)] == pytest.approx(4 / 6)
    total = sum(v for (name, _), v in got.items() if name == "ragstream_judge_agreement_total")
    assert total == 6
    assert got[("ragstream_judge_gold_total", (("outcome", "compared"),))] == 6


async def test_openai_metrics(server: OpenAIServer) -> None:
    settings = JudgeSettings(
        kind="openai",
        sampling=SamplingSettings(rate=1.0, max_per_second=None),
        openai=OpenAISettings(
            base_url=server.base_url,
            api_key="sk-test",
            price_prompt_per_1m=2.0,
            price_completion_per_1m=8.0,
        ),
    )
    service = judging_service(agent_settings(settings, (60.0,)))
    answers = _answers(4)
    await _run(service, [*answers, answers[0].model_copy(update={"query_id": "again"})])
    await asyncio.sleep(0)
    registry = CollectorRegistry()
    registry.register(JudgeCollector(service, now=lambda: NOW))
    got = _samples(registry)
    # two distinct inputs (answers with and without the extra sentence): two paid calls
    calls = server.calls
    assert calls == 2
    assert got[("ragstream_judge_tokens_total", (("kind", "prompt"),))] == 1000 * calls
    assert got[("ragstream_judge_tokens_total", (("kind", "completion"),))] == 200 * calls
    assert got[("ragstream_judge_cost_usd_total", ())] == pytest.approx(
        calls * (1000 * 2.0 + 200 * 8.0) / 1e6
    )
    assert got[("ragstream_judge_cache_total", (("result", "hit"),))] >= 1
    assert got[("ragstream_judge_circuit_state", (("state", "closed"),))] == 1.0
    assert got[("ragstream_judge_circuit_state", (("state", "open"),))] == 0.0
