"""The openai judge against a local OpenAI-compatible server: the real client, only the
base URL differs from production."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from typing import Any

import pytest

from ragstream.judging.cache import JudgmentCache
from ragstream.judging.circuit import CircuitBreaker, CircuitState
from ragstream.judging.model import JudgeError
from ragstream.judging.openai_judge import OpenAIJudge, TokenAccount
from ragstream.judging.prompts import PROMPT_VERSION, SYSTEM_PROMPT
from tests.support.defaults import chat_client, circuit_breaker
from tests.support.openai_server import OpenAIServer, Reply

from ._helpers import good_content, item


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _judge(server: OpenAIServer, **options: Any) -> OpenAIJudge:
    breaker = options.pop("breaker", None) or circuit_breaker()
    clock = options.pop("clock", time.monotonic)
    client_options: dict[str, Any] = {
        "api_key": "sk-test",
        "timeout": 5.0,
        "max_retries": 3,
        "backoff_initial": 0.01,
        "backoff_max": 0.05,
    }
    client_options.update(options)
    client = chat_client(server.base_url, "judge-model", **client_options)
    return OpenAIJudge(
        client,
        breaker=breaker,
        cache=JudgmentCache(100),
        account=TokenAccount(price_prompt_per_1m=0.15, price_completion_per_1m=0.6),
        clock=clock,
    )


async def test_a_good_answer(server: OpenAIServer) -> None:
    server.push(Reply(good_content(2, ("supported", "unsupported", "supported"), rating=4)))
    judge = _judge(server)
    try:
        j = await judge.judge(item())
    finally:
        await judge.close()
    assert j.faithfulness == pytest.approx(2 / 3)
    assert j.hallucination is True
    assert j.answer_relevance == 0.75  # (4 - 1) / 4
    assert j.context_scores == (1.0, 1.0)
    assert (j.judge, j.model, j.prompt_version) == ("openai", "judge-model", PROMPT_VERSION)
    # usage from the response: 100 prompt and 20 completion tokens at 0.15 and 0.6 per 1M
    assert j.usage.prompt_tokens == 100
    assert j.usage.completion_tokens == 20
    assert j.usage.cost == pytest.approx((100 * 0.15 + 20 * 0.6) / 1e6)
    assert judge.account.cost == pytest.approx(j.usage.cost)
    body = server.requests[0]
    assert body["model"] == "judge-model"
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert "[1] Backups run weekly." in body["messages"][1]["content"]


async def test_a_wrong_key_is_a_client_error_and_not_retried(server: OpenAIServer) -> None:
    judge = _judge(server, api_key="sk-wrong")
    with pytest.raises(JudgeError) as failure:
        await judge.judge(item())
    await judge.close()
    assert failure.value.reason == "client_error"
    assert server.calls == 1


async def test_the_cache_avoids_a_second_call(server: OpenAIServer) -> None:
    judge = _judge(server)
    first = await judge.judge(item())
    second = await judge.judge(dataclasses.replace(item(), query_id="q-other"))
    assert server.calls == 1
    assert second.cached is True
    assert second.usage.cost == 0.0
    assert dataclasses.replace(second, cached=False, usage=first.usage) == first
    assert (judge.cache.hits, judge.cache.misses) == (1, 1)
    # identical inputs in flight at the same time share one call too
    server.push(Reply(good_content(2), delay=0.2))
    other = dataclasses.replace(item(), answer="Something else entirely.")
    results = await asyncio.gather(*(judge.judge(other) for _ in range(5)))
    assert server.calls == 2
    assert sum(not r.cached for r in results) == 1
    await judge.close()


async def test_malformed_json_is_repaired_once(server: OpenAIServer) -> None:
    server.push(Reply("Sure! Here it is: {claims: ...", prompt_tokens=50, completion_tokens=10))
    judge = _judge(server)
    j = await judge.judge(item())
    await judge.close()
    assert server.calls == 2
    repair = server.requests[1]["messages"]
    assert repair[2] == {"role": "assistant", "content": "Sure! Here it is: {claims: ..."}
    assert repair[3]["role"] == "user"
    assert "not valid JSON" in repair[3]["content"]
    assert j.faithfulness == 1.0
    assert judge.repairs == {"ok": 1}
    assert j.usage.prompt_tokens == 50 + 1000  # both calls are paid for
    assert judge.account.calls == 2


async def test_a_failed_repair_is_a_counted_failure(server: OpenAIServer) -> None:
    wrong_form = json.dumps({"claims": [], "answer_relevance": 9, "contexts": []})
    server.push(Reply("not json"), Reply(wrong_form))
    judge = _judge(server)
    with pytest.raises(JudgeError) as failure:
        await judge.judge(item())
    await judge.close()
    assert failure.value.reason == "bad_json"
    assert "answer_relevance" in str(failure.value)
    assert failure.value.usage.prompt_tokens == 200
    assert server.calls == 2
    assert judge.repairs == {"failed": 1}
    assert len(judge.cache) == 0


async def test_429_waits_for_retry_after(server: OpenAIServer) -> None:
    server.push(Reply(status=429, headers={"Retry-After": "1"}))
    judge = _judge(server)
    j = await judge.judge(item())
    await judge.close()
    assert j.faithfulness == 1.0
    assert server.calls == 2
    assert server.arrivals[1] - server.arrivals[0] >= 1.0
    assert judge.client.retries == {"http_429": 1}


async def test_retry_after_beyond_the_cap_gives_up(server: OpenAIServer) -> None:
    server.push(Reply(status=503, headers={"Retry-After": "120"}))
    judge = _judge(server, retry_after_max=10.0)
    with pytest.raises(JudgeError) as failure:
        await judge.judge(item())
    await judge.close()
    assert failure.value.reason == "http_error"
    assert server.calls == 1


async def test_500_is_retried(server: OpenAIServer) -> None:
    server.push(Reply(status=500), Reply(status=502))
    judge = _judge(server)
    j = await judge.judge(item())
    await judge.close()
    assert j.faithfulness == 1.0
    assert server.calls == 3
    assert judge.client.retries == {"http_5xx": 2}


async def test_500_until_retries_run_out(server: OpenAIServer) -> None:
    server.push(*[Reply(status=500)] * 3)
    judge = _judge(server, max_retries=2)
    with pytest.raises(JudgeError) as failure:
        await judge.judge(item())
    await judge.close()
    assert failure.value.reason == "http_error"
    assert server.calls == 3


async def test_a_timeout_is_retried_then_counted(server: OpenAIServer) -> None:
    server.push(Reply(delay=5.0), Reply(delay=5.0))
    judge = _judge(server, timeout=0.2, max_retries=1)
    started = time.monotonic()
    with pytest.raises(JudgeError) as failure:
        await judge.judge(item())
    await judge.close()
    assert failure.value.reason == "timeout"
    assert server.calls == 2
    assert judge.client.retries == {"timeout": 1}
    assert time.monotonic() - started < 2.0


async def test_circuit_breaker_opens_and_half_opens(server: OpenAIServer) -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failures=2, cooldown=30.0)
    judge = _judge(server, max_retries=0, breaker=breaker, clock=clock)
    server.push(Reply(status=500), Reply(status=500))
    inputs = [dataclasses.replace(item(), answer=f"Answer {i}.") for i in range(6)]
    for x in inputs[:2]:
        with pytest.raises(JudgeError, match="http_error"):
            await judge.judge(x)
    assert breaker.current(clock()) is CircuitState.OPEN
    with pytest.raises(JudgeError) as failure:
        await judge.judge(inputs[2])
    assert failure.value.reason == "circuit_open"
    assert server.calls == 2  # no call while open
    clock.t += 30.0
    assert breaker.current(clock()) is CircuitState.HALF_OPEN
    server.push(Reply(status=500))  # the trial fails: open again at once
    with pytest.raises(JudgeError, match="http_error"):
        await judge.judge(inputs[3])
    assert breaker.current(clock()) is CircuitState.OPEN
    clock.t += 30.0
    j = await judge.judge(inputs[4])  # the trial succeeds: closed
    assert j.faithfulness == 1.0
    assert breaker.current(clock()) is CircuitState.CLOSED
    assert server.calls == 4
    assert breaker.transitions == {"open": 2, "half_open": 2, "closed": 1}
    await judge.close()


def test_circuit_breaker_state_machine() -> None:
    b = CircuitBreaker(failures=3, cooldown=10.0)
    for t in (0.0, 1.0):
        assert b.allow(t)
        b.failure(t)
    b.success()  # a success resets the run of failures
    for t in (2.0, 3.0, 4.0):
        assert b.allow(t)
        b.failure(t)
    assert b.state is CircuitState.OPEN
    assert not b.allow(13.9)
    assert b.allow(14.0)  # half-open: one trial
    assert not b.allow(14.0)  # ... and only one
    b.release()  # the trial was cancelled: another may go
    assert b.allow(14.5)
    b.success()
    assert b.current(15.0) is CircuitState.CLOSED


async def test_a_refusal_is_its_own_outcome(server: OpenAIServer) -> None:
    """The model says the answer declines: no faithfulness, never a hallucination, even
    when it listed an unsupported claim anyway."""
    reply = json.loads(good_content(2, ("unsupported",), rating=1))
    server.push(Reply(json.dumps({**reply, "refusal": True})))
    judge = _judge(server)
    try:
        j = await judge.judge(item(answer="Unable to answer based on the given passages."))
    finally:
        await judge.close()
    assert j.refusal is True
    assert j.hallucination is False
    assert j.faithfulness is None
    assert j.answer_relevance == 0.0
    assert [c.supported for c in j.claims] == [False]
    assert '"refusal": true | false' in SYSTEM_PROMPT


async def test_a_reply_without_the_refusal_key_is_an_answer(server: OpenAIServer) -> None:
    server.push(Reply(good_content(2, ("unsupported",))))
    judge = _judge(server)
    try:
        j = await judge.judge(item())
    finally:
        await judge.close()
    assert j.refusal is False
    assert j.hallucination is True
    assert j.faithfulness == 0.0
