"""The agent on a broker with TLS and SASL (PLAIN, SCRAM-SHA-512) listeners, certificates
made by the suite: it consumes through each, refuses a wrong password with a clear error,
and no secret appears in its logs, /metrics, check-config or errors."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragstream.cli import main
from ragstream.cli._settings import settings_from_flags
from ragstream.pipeline.engine import Engine
from ragstream.pipeline.runner import Runner
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from ragstream.wiring import engine_config, kafka_source
from tests.support import KafkaBroker, fetch_kafka_jars, produce_records
from tests.support.agent_http import until_read
from tests.support.kafka_files import free_port
from tests.support.kafka_security import USERS
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
    flat |= {
        "kafka.auto_offset_reset": "earliest",
        "state.enabled": "false",
        "windows.clock": "event",
    }
    address, group = secure_broker.address(protocol), f"g-{topic}"
    settings = settings_from_flags(None, address, (topic,), group, None, _assignments(flat))
    engine = Engine(engine_config(settings))
    source = kafka_source(settings, engine)
    runner = Runner(engine, source)
    await asyncio.wait_for(source.start(), 60)
    task = asyncio.create_task(runner.run())
    try:
        deadline = time.monotonic() + 60
        while sum(engine.events.values()) < len(events):
            assert time.monotonic() < deadline, f"consumed {sum(engine.events.values())}"
            assert not task.done(), task
            await asyncio.sleep(0.1)
    finally:
        runner.stop()
        await asyncio.wait_for(task, 30)
        await source.stop()
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
