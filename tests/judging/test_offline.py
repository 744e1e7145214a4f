"""Offline judging (`ragstream.judging.offline`): line parsing with the agent's decoder,
judging in input order on the agent's workers, budget, and the report against
from-scratch counts."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest

from ragstream.config.judging import JudgeSettings
from ragstream.judging.agreement import Confusion, auroc, corrected_rate
from ragstream.judging.budget import CostBudget
from ragstream.judging.cache import JudgmentCache
from ragstream.judging.offline import (
    AnswerLine,
    JudgedLine,
    JudgeReport,
    judge_stream,
    parse_answer_line,
)
from ragstream.judging.openai_judge import OpenAIJudge, TokenAccount
from tests.support.defaults import chat_client, lexical_judge, openai_judge
from tests.support.openai_server import OpenAIServer, Reply

from ._helpers import refusing_responder


def _event(query_id: object, answer: str, **extra: Any) -> dict[str, Any]:
    return {
        "query_id": query_id,
        "ts": 1_700_000_000,
        "question": "Who wrote Hamlet?",
        "answer": answer,
        "contexts": ["Hamlet is a tragedy written by William Shakespeare around 1600."],
        **extra,
    }


def test_a_line_of_a_hand_written_file_is_an_answer_event() -> None:
    line = json.dumps(
        _event(
            "q1",
            "Shakespeare wrote it.",
            contexts=["plain text", {"doc_id": "d2", "text": "with an id"}, {"text": "no id"}],
            gold={"hallucination": False},
        )
    )
    parsed = parse_answer_line(line, 7)
    assert parsed.error is None
    assert parsed.event is not None
    assert parsed.line == 7
    assert parsed.gold is False
    assert [c["text"] for c in parsed.event.contexts] == ["plain text", "with an id", "no id"]
    assert [c.get("doc_id") for c in parsed.event.contexts] == [None, "d2", None]
    assert parsed.event.ts == 1_700_000_000.0


@pytest.mark.parametrize(
    ("text", "reason", "query_id"),
    [
        ("not json", "bad_json", None),
        ("[1, 2]", "not_object", None),
        ('{"type": "retrieval", "query_id": "q", "ts": 1, "results": []}', "unknown_type", "q"),
        (json.dumps(_event("q", "a", gold={"hallucination": "yes"})), "schema", "q"),
        (json.dumps(_event("q", "a", gold=True)), "schema", "q"),
        (json.dumps(_event("q", "a", contexts=[5])), "schema", "q"),
        (json.dumps({"query_id": "q", "ts": 1, "answer": "a", "contexts": []}), "schema", "q"),
        (json.dumps(_event("q", "a", ts="yesterday")), "bad_timestamp", "q"),
        (json.dumps(_event(5, "a")), "schema", None),
    ],
)
def test_a_malformed_line_says_why(text: str, reason: str, query_id: str | None) -> None:
    parsed = parse_answer_line(text, 3)
    assert parsed.event is None
    assert parsed.error is not None
    assert parsed.error.startswith(f"{reason}: ")
    assert parsed.query_id == query_id


def _lines(answers: Iterable[str | None]) -> list[AnswerLine]:
    """One line per answer (None: a malformed line), gold verdict: 'Marlowe' in it."""
    out = []
    for i, answer in enumerate(answers):
        text = (
            "{oops"
            if answer is None
            else json.dumps(_event(f"q{i}", answer, gold={"hallucination": "Marlowe" in answer}))
        )
        out.append(parse_answer_line(text, i + 1))
    return out


_ANSWERS = [
    "Hamlet was written by William Shakespeare.",
    "Hamlet was written by Christopher Marlowe in 1720.",
    None,
    "Unable to answer based on the given passages.",
    "William Shakespeare wrote the tragedy Hamlet around 1600.",
]


async def _collect(lines: list[AnswerLine], judge: Any, **options: Any) -> list[JudgedLine]:
    """`judge_stream` at the judge's concurrency and queue size defaults, with ``options``."""
    defaults = JudgeSettings()
    options = {"concurrency": defaults.concurrency, "window": defaults.queue_size, **options}
    return [row async for row in judge_stream(lines, judge, **options)]


async def test_lexical_judgments_come_in_input_order_and_equal_the_judge_s_own() -> None:
    answers = _ANSWERS * 12
    lines = _lines(answers)
    judge = lexical_judge()
    rows = await _collect(lines, judge, concurrency=3, window=4)
    assert [r.line for r in rows] == list(range(1, len(answers) + 1))
    for row, line, answer in zip(rows, lines, answers, strict=True):
        if answer is None:
            assert row.outcome == "invalid"
            assert row.judgment is None
            assert row.error is not None
            assert row.as_dict()["hallucination"] is None
            continue
        expected = judge.evaluate("Who wrote Hamlet?", answer, [line.event.contexts[0]["text"]])  # type: ignore[union-attr]
        assert row.judgment == expected
        assert row.outcome == ("refusal" if expected.refusal else "judged")
        assert row.query_id == line.query_id
        assert row.gold == line.gold


def _openai(server: OpenAIServer, price: float = 0.0) -> OpenAIJudge:
    client = chat_client(server.base_url, "judge-model", api_key="sk-test", timeout=5.0)
    return openai_judge(
        client,
        cache=JudgmentCache(100),
        account=TokenAccount(price_prompt_per_1m=price, price_completion_per_1m=0.0),
    )


async def test_the_openai_judge_runs_concurrently_with_its_cache_in_input_order() -> None:
    answers = [a if a is None else f"{a} ({i})" for i, a in enumerate(_ANSWERS * 4)]
    answers += [_ANSWERS[1]] * 5  # the same answer five times: one call, four cached
    lines = _lines(answers)
    async with OpenAIServer(refusing_responder, api_key="sk-test") as server:
        rows = await _collect(lines, _openai(server), concurrency=4, window=6)
        assert server.calls == len([a for a in answers if a is not None]) - 4
    assert [r.line for r in rows] == list(range(1, len(answers) + 1))
    for row, answer in zip(rows, answers, strict=True):
        if answer is None:
            assert row.outcome == "invalid"
        elif answer.startswith("Unable"):
            assert row.outcome == "refusal"
            assert row.as_dict()["hallucination"] is False
            assert row.as_dict()["faithfulness"] is None
        else:
            assert row.outcome == "judged"
            assert row.hallucination is ("Marlowe" in answer)
    assert sum(r.judgment.cached for r in rows if r.judgment is not None) == 4


async def test_an_answer_the_budget_cannot_afford_fails_and_the_rest_go_on() -> None:
    answers = [f"{_ANSWERS[0]} ({i})" for i in range(8)]
    lines = _lines(answers)
    now = 1_800_000_000.0  # the middle of an hour
    budget = CostBudget(per_hour=0.0035, per_day=None, estimated_cost=0.001)
    async with OpenAIServer(refusing_responder, api_key="sk-test") as server:
        # 1000 prompt tokens at 1 USD per 1M: each call costs the estimate, 0.001
        rows = await _collect(
            lines, _openai(server, price=1.0), concurrency=2, budget=budget, clock=lambda: now
        )
        assert server.calls == 3
    assert [r.outcome for r in rows] == ["judged"] * 3 + ["failed"] * 5
    assert all(r.error == "budget: the judging budget is spent" for r in rows[3:])
    assert budget.spent_hour == pytest.approx(0.003)


async def test_a_failed_judgment_is_failed_with_its_reason() -> None:
    lines = _lines([_ANSWERS[0], _ANSWERS[1]])
    async with OpenAIServer(refusing_responder, api_key="sk-test") as server:
        server.push(Reply("not json"), Reply("still not json"))
        rows = await _collect(lines, _openai(server), concurrency=1)
    assert rows[0].outcome == "failed"
    assert rows[0].error is not None
    assert rows[0].error.startswith("bad_json: ")
    assert rows[0].as_dict()["hallucination"] is None
    assert rows[1].outcome == "judged"
    report = JudgeReport()
    for row in rows:
        report.add(row)
    assert report.as_dict()["failures"] == {"bad_json": 1}


async def test_the_report_equals_counts_made_from_scratch() -> None:
    answers = _ANSWERS * 7
    rows = await _collect(_lines(answers), lexical_judge())
    report = JudgeReport()
    for row in rows:
        report.add(row)
    got = report.as_dict()
    outcomes = {k: sum(r.outcome == k for r in rows) for k in ("judged", "refusal", "failed")}
    outcomes["invalid"] = answers.count(None)
    assert got["outcomes"] == outcomes
    assert got["lines"] == len(answers)
    scored = [r for r in rows if r.judgment is not None]
    flagged = sum(bool(r.hallucination) for r in scored)
    assert got["flagged"] == flagged
    assert got["flagged_share"]["value"] == pytest.approx(flagged / len(scored))
    pairs = [(bool(r.gold), bool(r.hallucination)) for r in scored]
    c = Confusion.from_pairs(pairs)
    assert got["gold"]["confusion"] == c.as_dict()
    assert got["gold"]["sensitivity"] == c.sensitivity().as_dict()
    assert got["gold"]["balanced_accuracy"] == c.balanced_accuracy().as_dict()
    risk = [
        0.0 if r.judgment.faithfulness is None else 1 - r.judgment.faithfulness  # type: ignore[union-attr]
        for r in scored
    ]
    assert got["gold"]["auroc"] == auroc(risk, [g for g, _ in pairs]).as_dict()
    expected = corrected_rate(flagged, len(scored), c.se_counts, c.sp_counts).as_dict()
    assert got["corrected_hallucination_rate"] == expected
    json.dumps(got, allow_nan=False)  # valid JSON: undefined values are null


def test_a_report_without_gold_has_no_agreement() -> None:
    report = JudgeReport()
    report.add(JudgedLine(1, "q", "invalid", error="bad_json: x"))
    got = report.as_dict()
    assert got["gold"] is None
    assert got["corrected_hallucination_rate"]["defined"] is False
    assert got["flagged_share"]["value"] is None
    assert got["invalid"] == {"bad_json": 1}
