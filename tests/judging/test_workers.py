"""Judge workers: submit never blocks, drops are counted, outcomes are counted by reason,
and a slow judge does not slow a consumer down."""

from __future__ import annotations

import asyncio
import dataclasses

from ragstream.judging.cache import JudgmentCache
from ragstream.judging.model import JudgeError, JudgeInput, Judgment
from ragstream.judging.openai_judge import OpenAIJudge
from ragstream.judging.workers import JudgeWorkers, LatencyHistogram
from tests.support.defaults import chat_client, lexical_judge, openai_judge
from tests.support.openai_server import OpenAIServer, Reply

from ._helpers import good_content, item


def _inputs(n: int) -> list[JudgeInput]:
    return [dataclasses.replace(item(f"q{i}"), answer=f"Answer number {i}.") for i in range(n)]


def _slow_judge(server: OpenAIServer) -> OpenAIJudge:
    client = chat_client(server.base_url, "m", api_key="sk-test", timeout=10.0, max_retries=0)
    return openai_judge(client, cache=JudgmentCache(10))


async def test_a_slow_judge_never_blocks_submit(server: OpenAIServer) -> None:
    server.responder = lambda body: Reply(good_content(2), delay=2.0)
    workers = JudgeWorkers(_slow_judge(server), queue_size=10, concurrency=2)
    await workers.start()
    accepted = 0
    for i, x in enumerate(_inputs(1000)):
        accepted += workers.submit(x)  # synchronous: it cannot wait for a judge
        if i % 100 == 99:
            await asyncio.sleep(0)  # a consumer yields between batches
    # all 1000 decided while the first judge calls (2 s each) are still in flight
    assert workers.outcomes.total() == 0
    # 10 fit the queue, the 2 workers free 2 slots at the first yield: 12 accepted
    assert accepted == 12
    assert workers.dropped["queue_full"] == 988
    await asyncio.sleep(2.4)  # the first two calls finish
    assert workers.outcomes == {"ok": 2}
    assert server.calls == 4  # two more in flight now
    await workers.stop(drain_timeout=0.0)
    assert workers.dropped["cancelled"] == 2
    assert workers.dropped["shutdown"] == 8  # 12 accepted - 2 done - 2 in flight
    total_accounted = workers.outcomes.total() + workers.dropped.total()
    assert total_accounted == 1000
    assert workers.depth == 0
    assert workers.in_flight == 0
    assert workers.latency.count == 2
    assert workers.latency.sum >= 4.0


async def test_results_are_collected_and_stop_drains() -> None:
    collected: list[tuple[JudgeInput, Judgment]] = []
    workers = JudgeWorkers(
        lexical_judge(),
        queue_size=100,
        concurrency=3,
        on_result=lambda x, j: collected.append((x, j)),
    )
    for x in _inputs(50):
        assert workers.submit(x)  # before start: queued, judged once started
    await workers.start()
    await workers.stop(drain_timeout=5.0)
    assert workers.outcomes == {"ok": 50}
    assert len(collected) == 50
    assert {x.query_id for x, _ in collected} == {f"q{i}" for i in range(50)}
    assert workers.submit(item()) is False
    assert workers.dropped == {"stopped": 1}


async def test_failures_are_counted_by_reason_and_delivered(server: OpenAIServer) -> None:
    server.push(Reply(status=400), Reply("not json"), Reply("still not json"))
    failures: list[tuple[str, str]] = []
    results: list[Judgment] = []
    workers = JudgeWorkers(
        _slow_judge(server),
        queue_size=1000,
        concurrency=1,
        on_result=lambda x, j: results.append(j),
        on_failure=lambda x, e: failures.append((x.query_id, e.reason)),
    )
    await workers.start()
    for x in _inputs(3):
        workers.submit(x)
    await workers.stop(drain_timeout=10.0)  # drains the queue, then stops the workers
    assert failures == [("q0", "client_error"), ("q1", "bad_json")]
    assert workers.outcomes == {"client_error": 1, "bad_json": 1, "ok": 1}
    assert len(results) == 1


class _Broken:
    """A judge whose own code fails unexpectedly."""

    name = "broken"

    async def judge(self, item: JudgeInput) -> Judgment:
        raise RuntimeError("bug")

    async def close(self) -> None:
        return None


async def test_unexpected_errors_and_bad_callbacks_do_not_kill_workers() -> None:
    def explode(x: JudgeInput, e: JudgeError) -> None:
        raise ValueError("callback bug")

    workers = JudgeWorkers(_Broken(), queue_size=1000, concurrency=1, on_failure=explode)
    await workers.start()
    for x in _inputs(3):
        workers.submit(x)
    await workers.stop(drain_timeout=10.0)  # drains the queue, then stops the workers
    assert workers.outcomes == {"internal": 3}
    assert workers.callback_errors == 3


def test_latency_histogram_is_cumulative() -> None:
    h = LatencyHistogram((0.1, 1.0))
    for s in (0.05, 0.1, 0.5, 3.0):
        h.observe(s)
    assert h.cumulative() == [("0.1", 2), ("1", 3), ("+Inf", 4)]
    assert h.sum == 3.65
    assert h.count == 4
