"""The README's "Try it against Kafka": scripts/produce.py sends the demo's traffic to a real
broker and `ragstream run`, started as the README says, exports every label set from it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import KafkaBroker
from tests.support.agent_process import AgentProcess, wait_ready
from tests.support.kafka_files import free_port

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PRODUCE = ROOT / "scripts" / "produce.py"


def _produce(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(PRODUCE), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_the_readme_commands_show_the_three_apps(kafka_broker: KafkaBroker, tmp_path: Path) -> None:
    topic = f"rag-events-{int(time.time() * 1000)}"
    bootstrap = kafka_broker.bootstrap_servers
    common = ["--bootstrap-servers", bootstrap, "--topic", topic]
    producer = _produce(*common, "--rate", "20", "--drift-at", "5", "--duration", "25")
    assert producer.stdout is not None
    assert producer.stdout.readline() == f"topic {topic} created with 3 partition(s)\n"
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
    out, err = producer.communicate(timeout=120)
    assert producer.returncode == 0, err
    assert out.splitlines()[0].startswith(f"sending 20 queries/s to {topic} at {bootstrap}")
    sent = int(out.splitlines()[-1].split()[1])
    assert sent > 20 * 10  # queries and their feedback and answers over ~25 s
    again = _produce(*common, "--duration", "0.5")
    out, _ = again.communicate(timeout=60)
    assert out.splitlines()[0] == f"topic {topic} exists"


def test_an_unreachable_broker_is_one_line() -> None:
    producer = _produce("--bootstrap-servers", f"127.0.0.1:{free_port()}")
    _, err = producer.communicate(timeout=120)
    assert producer.returncode == 1
    assert (
        err.strip().splitlines()[-1].endswith("unreachable (start one with scripts/kafka.sh start)")
    )
    assert "Traceback" not in err
