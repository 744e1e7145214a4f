"""The README's "Try it against Kafka": the demo producer (deploy/compose/produce.py) creates
its topic on a bare broker and sends the demo's traffic, and `ragstream run`, started as the
README says, exports every label set from it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from tests.support import KafkaBroker
from tests.support.agent_process import AgentProcess, wait_ready
from tests.support.kafka_files import free_port

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PRODUCE = ROOT / "deploy" / "compose" / "produce.py"


def _produce(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(PRODUCE), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


async def _partitions(bootstrap: str, topic: str) -> int:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        (described,) = await admin.describe_topics([topic])
        return len(described["partitions"])
    finally:
        await admin.close()


def test_the_readme_commands_show_the_three_apps(kafka_broker: KafkaBroker, tmp_path: Path) -> None:
    topic = f"rag-events-{int(time.time() * 1000)}"
    bootstrap = kafka_broker.bootstrap_servers
    common = ["--bootstrap-servers", bootstrap, "--topic", topic, "--partitions", "3"]
    producer = _produce(*common, "--rate", "20", "--drift-at", "5", "--duration", "25")
    try:
        assert producer.stderr is not None
        line = producer.stderr.readline()
        assert line == f"produce.py: created topic {topic} (3 partitions)\n"
        assert asyncio.run(_partitions(bootstrap, topic)) == 3
        agent = AgentProcess(
            ["run", "--topic", topic, "--set", "labels.keys=[app, index]"],
            tmp_path / "agent.log",
            env={"RAGSTREAM_KAFKA__BOOTSTRAP_SERVERS": bootstrap},
        )
        with agent:
            wait_ready([agent])
            deadline = time.monotonic() + 60
            apps: set[str] = set()
            while time.monotonic() < deadline and len(apps) < 3:
                for line in agent.metrics().splitlines():
                    if line.startswith('ragstream_window_queries{app="'):
                        apps.add(line.split('"')[1])
                time.sleep(1)
            assert apps == {"docs", "search", "support"}
        _, err = producer.communicate(timeout=120)
    finally:
        if producer.poll() is None:
            producer.kill()
            producer.communicate()
    assert producer.returncode == 0, err
    assert "retrying" not in err  # its first sends waited for the partitions' leaders
    sent = int(err.splitlines()[-1].split()[2])  # produce.py: sent N events to TOPIC
    assert sent > 20 * 10  # queries and their feedback and answers over ~25 s
    again = _produce(*common, "--duration", "0.5")
    _, err = again.communicate(timeout=60)
    assert again.returncode == 0, err
    assert "created topic" not in err  # it exists


def test_an_unreachable_broker_is_one_line() -> None:
    servers = f"127.0.0.1:{free_port()}"
    producer = _produce("--bootstrap-servers", servers, "--connect-timeout", "1")
    _, err = producer.communicate(timeout=120)
    assert producer.returncode == 1
    assert err.strip().splitlines()[-1] == (
        f"produce.py: Kafka at {servers} unreachable for 1 s"
        " (start one with scripts/kafka.sh start)"
    )
    assert "Traceback" not in err
