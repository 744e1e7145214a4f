"""OAUTHBEARER token providers without a broker: when a file is read again, when an
endpoint is asked again, and what they say when they cannot give a token."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from ragstream.config import read_secret_file
from ragstream.sources.kafka_oauth import (
    REFRESH_AT,
    EndpointTokenProvider,
    FileTokenProvider,
    OAuthTokenError,
    jwt_expiry,
)
from tests.support.kafka_files import free_port
from tests.support.kafka_security import unsecured_jws


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _read(path: Path) -> str:
    return read_secret_file(path, "kafka.security.sasl_oauth_token_file")


def test_the_expiry_of_a_jwt_and_of_tokens_that_are_not_one() -> None:
    token = unsecured_jws("me", lifetime=60)
    exp = jwt_expiry(token)
    assert exp is not None
    assert jwt_expiry(token.replace(token.split(".")[1], "bm90IGpzb24")) is None  # "not json"
    assert jwt_expiry("opaque-token") is None
    assert jwt_expiry("a.b.c") is None


async def test_a_token_file_is_read_again_only_when_it_changes_or_its_token_expired(
    tmp_path: Path,
) -> None:
    path = tmp_path / "token"
    first = unsecured_jws("me", lifetime=100)
    path.write_text(first + "\n")
    exp = jwt_expiry(first)
    assert exp is not None
    clock = _Clock(exp - 50)
    provider = FileTokenProvider(path, _read, clock=clock)
    assert await provider.token() == first
    assert await provider.token() == first
    assert provider.reads == 1  # unchanged and valid: not read again

    second = unsecured_jws("me", lifetime=200)
    path.write_text(second)  # another size: a change
    assert await provider.token() == second
    assert provider.reads == 2

    # a token that has expired is read again even when the file looks the same
    stat = path.stat()
    second_exp = jwt_expiry(second)
    assert second_exp is not None
    clock.now = second_exp + 1
    assert await provider.token() == second
    assert provider.reads == 3
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert await provider.token() == second
    assert provider.reads == 4

    opaque = "an-msk-iam-token-that-is-no-jwt"
    path.write_text(opaque)
    assert await provider.token() == opaque
    assert await provider.token() == opaque
    assert provider.reads == 5  # no expiry known: read again only when the file changes


async def test_a_token_file_that_is_missing_or_empty_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "token"
    provider = FileTokenProvider(path, _read)
    with pytest.raises(OAuthTokenError, match="sasl_oauth_token_file: cannot read"):
        await provider.token()
    path.write_text("\n")
    with pytest.raises(OAuthTokenError, match="is empty"):
        await provider.token()


class _Endpoint:
    """A token endpoint whose answers the test sets."""

    def __init__(self) -> None:
        self.status = 200
        self.lifetime: float | None = 100.0
        self.calls = 0
        self.token = "t0"

    async def handle(self, request: web.Request) -> web.Response:
        self.calls += 1
        form = await request.post()
        assert form["grant_type"] == "client_credentials"
        assert request.headers["Authorization"].startswith("Basic ")
        if self.status != 200:
            return web.json_response({"error": "invalid_client"}, status=self.status)
        self.token = f"t{self.calls}"
        body: dict[str, object] = {"access_token": self.token, "token_type": "bearer"}
        if self.lifetime is not None:
            body["expires_in"] = self.lifetime
        return web.json_response(body)


@pytest.fixture
async def endpoint() -> AsyncIterator[tuple[_Endpoint, str]]:
    served = _Endpoint()
    app = web.Application()
    app.router.add_post("/token", served.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield served, f"http://127.0.0.1:{port}/token"
    finally:
        await runner.cleanup()


async def test_an_endpoint_token_is_kept_until_four_fifths_of_its_lifetime(
    endpoint: tuple[_Endpoint, str],
) -> None:
    served, url = endpoint
    clock = _Clock(1000.0)
    provider = EndpointTokenProvider(url, "agent", lambda: "s3cret", clock=clock)
    assert await provider.token() == "t1"
    clock.now += REFRESH_AT * 100 - 1
    assert await provider.token() == "t1"
    assert served.calls == 1
    clock.now += 2
    assert await provider.token() == "t2"  # renewed before it expires
    assert served.calls == 2

    # the endpoint fails: the current token is used while it is valid, then the error
    served.status = 500
    clock.now += REFRESH_AT * 100 + 1
    assert await provider.token() == "t2"
    clock.now += 100
    with pytest.raises(OAuthTokenError, match="HTTP 500") as failed:
        await provider.token()
    assert not failed.value.refused


async def test_an_endpoint_that_refuses_the_client_is_a_refusal_naming_no_secret(
    endpoint: tuple[_Endpoint, str],
) -> None:
    served, url = endpoint
    served.status = 401
    provider = EndpointTokenProvider(url, "agent", lambda: "s3cret-value")
    with pytest.raises(OAuthTokenError) as refused:
        await provider.token()
    assert refused.value.refused
    assert "refused client 'agent' (HTTP 401, invalid_client)" in str(refused.value)
    assert "s3cret-value" not in str(refused.value)


async def test_a_token_without_a_lifetime_lives_until_its_jwt_expiry(
    endpoint: tuple[_Endpoint, str],
) -> None:
    served, url = endpoint
    served.lifetime = None
    clock = _Clock(1000.0)
    provider = EndpointTokenProvider(url, "agent", lambda: "s", clock=clock)
    assert await provider.token() == "t1"  # opaque, no expires_in: the default lifetime
    clock.now += 239
    assert await provider.token() == "t1"
    clock.now += 2
    assert await provider.token() == "t2"


async def test_an_endpoint_that_does_not_answer_is_not_a_refusal() -> None:
    provider = EndpointTokenProvider(f"http://127.0.0.1:{free_port()}/token", "a", lambda: "s")
    with pytest.raises(OAuthTokenError, match="did not answer") as failed:
        await provider.token()
    assert not failed.value.refused
