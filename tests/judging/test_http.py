"""ChatClient details: Retry-After forms, backoff bounds, response envelopes."""

from __future__ import annotations

import email.utils
import random

import pytest

from ragstream.judging.http import parse_retry_after
from ragstream.judging.model import JudgeError
from tests.support.defaults import chat_client
from tests.support.openai_server import OpenAIServer, Reply

DATE = "Wed, 21 Oct 2015 07:28:00 GMT"
DATE_TS = email.utils.parsedate_to_datetime(DATE).timestamp()


def test_parse_retry_after() -> None:
    assert parse_retry_after("120", 0.0) == 120.0
    assert parse_retry_after(" 1.5 ", 0.0) == 1.5
    assert parse_retry_after(DATE, DATE_TS - 30) == pytest.approx(30.0)
    assert parse_retry_after(DATE, DATE_TS + 30) == 0.0  # in the past: no wait
    assert parse_retry_after("soon", 0.0) is None
    assert parse_retry_after(None, 0.0) is None
    assert parse_retry_after("-5", 0.0) == 0.0


class Sleeps:
    """Records the waits the client asks for, without waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def test_an_http_date_retry_after_is_honoured(server: OpenAIServer) -> None:
    server.push(Reply(status=503, headers={"Retry-After": DATE}))
    sleeps = Sleeps()
    client = chat_client(
        server.base_url, "m", api_key="sk-test", sleep=sleeps, wall=lambda: DATE_TS - 7.0
    )
    response = await client.complete([{"role": "user", "content": "CONTEXTS (0):"}])
    await client.close()
    assert sleeps.waits == [pytest.approx(7.0)]
    assert response.prompt_tokens == 1000
    assert server.calls == 2


async def test_backoff_is_jittered_exponential(server: OpenAIServer) -> None:
    server.push(*[Reply(status=500)] * 4)
    sleeps = Sleeps()
    client = chat_client(
        server.base_url,
        "m",
        api_key="sk-test",
        max_retries=4,
        backoff_initial=1.0,
        backoff_max=5.0,
        sleep=sleeps,
        rng=random.Random(7),
    )
    await client.complete([{"role": "user", "content": "x"}])
    await client.close()
    assert len(sleeps.waits) == 4
    for wait, ceiling in zip(sleeps.waits, (1.0, 2.0, 4.0, 5.0), strict=True):
        assert ceiling / 2 <= wait <= ceiling
    assert client.waited == pytest.approx(sum(sleeps.waits))


async def test_a_body_that_is_not_a_chat_completion(server: OpenAIServer) -> None:
    server.push(Reply(body='{"unexpected": true}'))
    client = chat_client(server.base_url, "m", api_key="sk-test")
    with pytest.raises(JudgeError) as failure:
        await client.complete([{"role": "user", "content": "x"}])
    await client.close()
    assert failure.value.reason == "bad_response"


async def test_connection_refused_is_a_connection_error() -> None:
    async with OpenAIServer() as srv:
        url = srv.base_url
    client = chat_client(url, "m", max_retries=1, backoff_initial=0.01, sleep=Sleeps())
    with pytest.raises(JudgeError) as failure:
        await client.complete([{"role": "user", "content": "x"}])
    await client.close()
    assert failure.value.reason == "connection_error"
    assert client.retries == {"connection_error": 1}
