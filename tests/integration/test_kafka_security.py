"""The agent on a broker with TLS and SASL (PLAIN, SCRAM-SHA-512, OAUTHBEARER) listeners,
certificates made by the suite: it consumes through each, refuses a wrong password with a
clear error, and no secret appears in its logs, /metrics, check-config or errors. OAUTHBEARER
tokens come from a file or an OAuth token endpoint and are renewed; the broker's host name
is checked unless turned off; a client certificate from Secret files is presented."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import secrets
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from aiohttp import web
from click.testing import CliRunner

from ragstream.cli import main
from ragstream.cli._settings import settings_from_flags
from ragstream.pipeline.engine import Engine
from ragstream.pipeline.runner import Runner
from ragstream.sources.kafka import KafkaAuthError, KafkaSource
from ragstream.sources.kafka_oauth import FileTokenProvider
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from ragstream.wiring import engine_config, kafka_source
from tests.support import KafkaBroker, fetch_kafka_jars, produce_records
from tests.support.agent_http import until_read
from tests.support.kafka_files import free_port
from tests.support.kafka_security import REAUTH_MS, USERS, unsecured_jws
from tests.support.process import stop_process

pytestmark = pytest.mark.kafka
USER, PASSWORD = next(iter(USERS.items()))
WRONG = "not-the-password-" + PASSWORD[::-1]


@pytest.fixture(scope="module")
def secure_broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(fetch_kafka_jars(), secure=True) as broker:
        yield broker


@pytest.fixture
async def topic(secure_broker: KafkaBroker, request: pytest.FixtureRequest) -> str:
    name = f"secure-{request.node.name}".replace("[", "-").replace("]", "")[:120]
    await secure_broker.create_topic(name, 2)
    return name


def _security(
    broker: KafkaBroker, protocol: str, mechanism: str | None, **extra: str
) -> dict[str, str]:
    settings = {"kafka.security.protocol": protocol}
    if protocol.endswith("SSL"):
        assert broker.tls is not None
        settings["kafka.security.ssl_cafile"] = str(broker.tls.ca_pem)
    if mechanism is not None:
        settings["kafka.security.sasl_mechanism"] = mechanism
        settings["kafka.security.sasl_username"] = USER
    return {**settings, **extra}


@pytest.mark.parametrize(
    ("protocol", "mechanism"),
    [
        ("SSL", None),
        ("SASL_PLAINTEXT", "PLAIN"),
        ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
        ("SASL_SSL", "SCRAM-SHA-512"),
        ("SASL_SSL", "PLAIN"),
    ],
)
async def test_the_agent_consumes_through_each_secured_listener(
    secure_broker: KafkaBroker, topic: str, tmp_path: Path, protocol: str, mechanism: str | None
) -> None:
    events = SyntheticTraffic(SyntheticConfig(seed=4, rate=20.0)).take(300)
    await produce_records(
        secure_broker.bootstrap_servers, topic, [(e.key, e.value) for e in events]
    )
    secret = tmp_path / "password"
    secret.write_text(PASSWORD + "\n")  # as a mounted Kubernetes secret may hold it
    flat = _security(secure_broker, protocol, mechanism)
    if mechanism is not None:
        flat["kafka.security.sasl_password_file"] = str(secret)
    async with _running(secure_broker, protocol, topic, flat) as (engine, _):
        await _until_counted(engine, len(events))
    assert sum(engine.events.values()) == len(events)


async def _agent(args: list[str], env: dict[str, str], log: Path) -> asyncio.subprocess.Process:
    with log.open("wb") as out:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ragstream", "run", *args, env=env, stdout=out,
            stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip


def _assignments(flat: dict[str, str]) -> tuple[str, ...]:
    """The `--set` values of dotted settings."""
    return tuple(f"{path}={value}" for path, value in flat.items())


def _args(flat: dict[str, str]) -> list[str]:
    return [arg for assignment in _assignments(flat) for arg in ("--set", assignment)]


async def test_a_wrong_password_is_a_clear_error_and_no_secret_leaks(
    secure_broker: KafkaBroker, topic: str, tmp_path: Path
) -> None:
    flat = _security(secure_broker, "SASL_SSL", "SCRAM-SHA-512", log_level="DEBUG")
    common = [
        "--bootstrap-servers", secure_broker.address("SASL_SSL"), "--topic", topic,
        "--set", "http.host=127.0.0.1", "--set", "kafka.retry_backoff_max=1s",
        *_args(flat),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSTREAM_")}

    # wrong: the agent stops at once, says why, and never prints the password it was given
    wrong_env = {**env, "RAGSTREAM_KAFKA__SECURITY__SASL_PASSWORD": WRONG}
    log = tmp_path / "wrong.log"
    proc = await _agent([*common, "--port", str(free_port())], wrong_env, log)
    assert await asyncio.wait_for(proc.wait(), 60) == 1
    output = log.read_text()
    assert f"refused the SASL credentials of user {USER!r} (mechanism SCRAM-SHA-512)" in output
    assert WRONG not in output
    assert PASSWORD not in output

    # right, from a file: it consumes; the secret is in no log line, scrape or config print
    events = SyntheticTraffic(SyntheticConfig(seed=6, rate=20.0)).take(200)
    await produce_records(
        secure_broker.bootstrap_servers, topic, [(e.key, e.value) for e in events]
    )
    secret = tmp_path / "password"
    secret.write_text(PASSWORD)
    with_file = [*common, "--set", f"kafka.security.sasl_password_file={secret}"]
    with_file += ["--set", "kafka.auto_offset_reset=earliest"]
    port = free_port()
    log = tmp_path / "right.log"
    proc = await _agent([*with_file, "--port", str(port)], env, log)
    try:
        body = await until_read(f"http://127.0.0.1:{port}/metrics", len(events), 90, proc)
    finally:
        status = await stop_process(proc, 30)  # SIGTERM
    assert status == 0
    checked = CliRunner().invoke(main, ["check-config", *with_file], env=env)
    assert checked.exit_code == 0, checked.output
    inline_env = {**env, "RAGSTREAM_KAFKA__SECURITY__SASL_PASSWORD": PASSWORD}
    inline = CliRunner().invoke(main, ["check-config", *common], env=inline_env)
    assert inline.exit_code == 0, inline.output
    assert "**********" in inline.output
    for text in (log.read_text(), body, checked.output, inline.output):
        assert PASSWORD not in text
    assert "DEBUG" in log.read_text()  # the most talkative level was on


# -- OAUTHBEARER, TLS host names, client certificates -------------------------------------------


@contextlib.asynccontextmanager
async def _running(
    broker: KafkaBroker, listener: str, topic: str, flat: dict[str, str]
) -> AsyncIterator[tuple[Engine, KafkaSource]]:
    """The engine and source `ragstream run` builds for `flat` settings, consuming `topic`
    through `listener` until the block ends."""
    flat = {
        **flat,
        "kafka.auto_offset_reset": "earliest",
        "kafka.poll_timeout": "0.2s",
        "state.enabled": "false",
        "windows.clock": "event",
    }
    address, group = broker.address(listener), f"g-{topic}"
    settings = settings_from_flags(None, address, (topic,), group, None, _assignments(flat))
    engine = Engine(engine_config(settings))
    source = kafka_source(settings, engine)
    runner = Runner(engine, source)
    await asyncio.wait_for(source.start(), 60)
    task = asyncio.create_task(runner.run())
    try:
        yield engine, source
    finally:
        runner.stop()
        await asyncio.wait_for(task, 30)
        await source.stop()


async def _until_counted(engine: Engine, count: int, within: float = 60) -> None:
    deadline = time.monotonic() + within
    while sum(engine.events.values()) < count:
        assert time.monotonic() < deadline, f"consumed {sum(engine.events.values())} of {count}"
        await asyncio.sleep(0.1)


async def _produce(broker: KafkaBroker, topic: str, n: int, seed: int) -> None:
    events = SyntheticTraffic(SyntheticConfig(seed=seed, rate=20.0)).take(n)
    await produce_records(broker.bootstrap_servers, topic, [(e.key, e.value) for e in events])


def _oauth(broker: KafkaBroker, protocol: str, **extra: str) -> dict[str, str]:
    flat = {"kafka.security.protocol": protocol, "kafka.security.sasl_mechanism": "OAUTHBEARER"}
    if protocol == "SASL_SSL":
        assert broker.tls is not None
        flat["kafka.security.ssl_cafile"] = str(broker.tls.ca_pem)
    return {**flat, **{f"kafka.security.{k}": v for k, v in extra.items()}}


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
async def test_an_oauth_token_file_is_read_again_when_it_changes(
    secure_broker: KafkaBroker, topic: str, tmp_path: Path, protocol: str
) -> None:
    """The broker closes an OAUTHBEARER connection every REAUTH_MS; the first token
    expires after a few seconds, so the agent goes on only by reading the renewed file."""
    token = tmp_path / "token"
    token.write_text(unsecured_jws("ragstream", lifetime=5) + "\n")  # as a Secret holds it
    flat = _oauth(
        secure_broker,
        protocol,
        sasl_oauth_token_file=str(token),
        sasl_oauth_extensions="{logicalCluster: lkc-test}",  # sent, and accepted
    )
    async with _running(secure_broker, protocol, topic, flat) as (engine, source):
        provider = source.config.client_options["sasl_oauth_token_provider"]
        assert isinstance(provider, FileTokenProvider)
        assert provider.extensions() == {"logicalCluster": "lkc-test"}
        await _produce(secure_broker, topic, 100, seed=1)
        await _until_counted(engine, 100)
        token.write_text(unsecured_jws("ragstream", lifetime=600) + "\n")  # renewed
        await asyncio.sleep(5 + 2 * REAUTH_MS / 1000)  # the first token has expired
        await _produce(secure_broker, topic, 100, seed=2)
        await _until_counted(engine, 200)
    assert provider.reads >= 2


class _TokenEndpoint:
    """An OAuth 2.0 token endpoint (client credentials, client_secret_basic), as an IdP
    serves it, handing out unsecured JWS tokens of a short lifetime."""

    def __init__(self, client_id: str, secret: str, lifetime: float) -> None:
        self.client_id, self.secret, self.lifetime = client_id, secret, lifetime
        self.issued: list[str] = []
        self.refused = 0
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        scheme, _, encoded = request.headers.get("Authorization", "").partition(" ")
        given = base64.b64decode(encoded).decode() if scheme == "Basic" else ""
        if given != f"{self.client_id}:{self.secret}":
            self.refused += 1
            return web.json_response({"error": "invalid_client"}, status=401)
        assert form.get("grant_type") == "client_credentials"
        assert form.get("scope") == "kafka"
        token = unsecured_jws(self.client_id, lifetime=self.lifetime, scope="kafka")
        self.issued.append(token)
        body = {"access_token": token, "token_type": "bearer", "expires_in": self.lifetime}
        return web.json_response(body)

    async def __aenter__(self) -> _TokenEndpoint:
        app = web.Application()
        app.router.add_post("/oauth2/token", self._token)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        port = free_port()
        await web.TCPSite(self._runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}/oauth2/token"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


async def test_an_oauth_endpoint_token_is_renewed_before_it_expires_and_no_secret_leaks(
    secure_broker: KafkaBroker, topic: str, tmp_path: Path
) -> None:
    """`ragstream run` with client credentials from a Secret file: it consumes across
    several token lifetimes (each token asked for before the last expired), and neither
    the client secret nor a token appears in its DEBUG log or /metrics."""
    secret = "client-" + secrets.token_hex(12)
    (tmp_path / "client-secret").write_text(secret + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSTREAM_")}
    async with _TokenEndpoint("ragstream-agent", secret, lifetime=6) as idp:
        flat = _oauth(
            secure_broker,
            "SASL_SSL",
            sasl_oauth_token_endpoint=idp.url,
            sasl_oauth_client_id="ragstream-agent",
            sasl_oauth_scope="kafka",
        )
        flat |= {"kafka.auto_offset_reset": "earliest", "log_level": "DEBUG"}
        common = ["--bootstrap-servers", secure_broker.address("SASL_SSL"), "--topic", topic,
                  "--set", "http.host=127.0.0.1", *_args(flat)]  # fmt: skip
        from_file = f"kafka.security.sasl_oauth_client_secret_file={tmp_path / 'client-secret'}"
        port, log = free_port(), tmp_path / "agent.log"
        await _produce(secure_broker, topic, 100, seed=3)
        proc = await _agent([*common, "--set", from_file, "--port", str(port)], env, log)
        try:
            url = f"http://127.0.0.1:{port}/metrics"
            await until_read(url, 100, 90, proc)
            await asyncio.sleep(6 + 2 * REAUTH_MS / 1000)  # past the first token's lifetime
            await _produce(secure_broker, topic, 100, seed=4)
            body = await until_read(url, 200, 60, proc)
        finally:
            status = await stop_process(proc, 30)
        assert status == 0
        assert len(idp.issued) >= 2
        assert idp.refused == 0

        # a wrong secret: the endpoint refuses it, and the agent stops at once and says so
        wrong = "not-" + secret
        wrong_env = {**env, "RAGSTREAM_KAFKA__SECURITY__SASL_OAUTH_CLIENT_SECRET": wrong}
        wrong_log = tmp_path / "wrong.log"
        proc = await _agent([*common, "--port", str(free_port())], wrong_env, wrong_log)
        assert await asyncio.wait_for(proc.wait(), 60) == 1
        assert idp.refused >= 1
    refusal = wrong_log.read_text()
    assert "refused client 'ragstream-agent' (HTTP 401, invalid_client)" in refusal
    for text in (log.read_text(), body, refusal):
        assert secret not in text
        assert wrong not in text
        for token in idp.issued:
            assert token not in text
            assert token.split(".")[1] not in text  # not even the claims
    assert "DEBUG" in log.read_text()


async def test_the_broker_host_name_is_verified_unless_turned_off(
    secure_broker: KafkaBroker, topic: str
) -> None:
    """OTHER_NAME's certificate, signed by the trusted CA, names broker.invalid only."""
    assert secure_broker.tls is not None
    flat = {
        "kafka.security.protocol": "SSL",
        "kafka.security.ssl_cafile": str(secure_broker.tls.ca_pem),
    }
    address = secure_broker.address("OTHER_NAME")
    settings = settings_from_flags(None, address, (topic,), f"g-{topic}", None, _assignments(flat))
    source = kafka_source(settings, Engine(engine_config(settings)))
    with pytest.raises(KafkaAuthError) as refused:
        await asyncio.wait_for(source.start(), 60)
    await source.stop()
    host = address.rpartition(":")[0]
    assert f"presented a certificate that does not name {host}" in str(refused.value)
    assert "ssl_check_hostname: false" in str(refused.value)

    await _produce(secure_broker, topic, 100, seed=5)
    unchecked = {**flat, "kafka.security.ssl_check_hostname": "false"}
    async with _running(secure_broker, "OTHER_NAME", topic, unchecked) as (engine, _):
        await _until_counted(engine, 100)


async def test_a_client_certificate_from_secret_files_is_presented(
    secure_broker: KafkaBroker, topic: str, tmp_path: Path
) -> None:
    """MTLS requires a client certificate: without one the agent is refused and says so;
    with the files a Kubernetes TLS Secret mounts (tls.crt, tls.key, its password in a
    file, ca.crt) it consumes."""
    tls = secure_broker.tls
    assert tls is not None
    ca = {"kafka.security.protocol": "SSL", "kafka.security.ssl_cafile": str(tls.ca_pem)}
    address = secure_broker.address("MTLS")
    settings = settings_from_flags(None, address, (topic,), f"g-{topic}", None, _assignments(ca))
    source = kafka_source(settings, Engine(engine_config(settings)))
    with pytest.raises(KafkaAuthError) as refused:
        await asyncio.wait_for(source.start(), 60)
    await source.stop()
    assert "refused this client's certificate" in str(refused.value)

    (tmp_path / "password").write_text(tls.client_key_password + "\n")
    mtls = {
        **ca,
        "kafka.security.ssl_certfile": str(tls.client_cert),
        "kafka.security.ssl_keyfile": str(tls.client_key),
        "kafka.security.ssl_password_file": str(tmp_path / "password"),
    }
    await _produce(secure_broker, topic, 100, seed=6)
    async with _running(secure_broker, "MTLS", topic, mtls) as (engine, _):
        await _until_counted(engine, 100)
