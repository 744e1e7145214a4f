"""What a newcomer meets at start, from the real command in a subprocess: a taken port is one
line and exit 2 (no traceback), and brokers that do not answer are named by `/readyz` and the
log while the agent retries them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.agent_process import AgentProcess
from tests.support.kafka_files import free_port


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port of 127.0.0.1 that another process listens on."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield int(server.getsockname()[1])


def _ragstream(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragstream", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "RAGSTREAM_KAFKA__BOOTSTRAP_SERVERS": f"127.0.0.1:{free_port()}"},
    )


@pytest.mark.parametrize(
    ("command", "advice"),
    [
        (
            ["demo", "--duration", "5"],
            "choose another port with --port, or --port 0 for a free one",
        ),
        (["run", "--set", "http.host=127.0.0.1"], "choose another port with --port (or http.port)"),
    ],
)
def test_a_taken_port_is_one_line_and_exit_2(
    command: list[str], advice: str, taken_port: int
) -> None:
    result = _ragstream(*command, "--port", str(taken_port))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith("20")]  # log
    assert lines == [
        f"Error: cannot serve /metrics: 127.0.0.1:{taken_port} is already in use by another"
        f" process{' (another demo?)' if command[0] == 'demo' else ''}; {advice}"
    ]
    assert result.stdout == ""


def test_readyz_and_the_log_name_the_brokers_that_do_not_answer(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    servers = f"127.0.0.1:{port}"
    log = tmp_path / "agent.log"
    with AgentProcess(
        ["run", "--set", "http.host=127.0.0.1"],
        log,
        env={"RAGSTREAM_KAFKA__BOOTSTRAP_SERVERS": servers},
    ) as agent:
        deadline = time.monotonic() + 60
        while True:
            status, body = agent.get("/readyz")
            if f"Kafka at {servers} unreachable" in body or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert status == 503
        assert body.startswith(f"Kafka at {servers} unreachable ("), body
        assert agent.get("/healthz")[0] == 200  # alive: it retries
    text = log.read_text()
    assert f"Kafka at {servers} unreachable (" in text
    assert "; retrying" in text
    assert "Traceback" not in text
