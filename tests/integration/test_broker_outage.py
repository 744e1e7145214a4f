"""A broker outage longer than the consumer's session timeout, on a broker of the test's own.

`ragstream run` (a subprocess) consumes a seeded stream; the broker is stopped part-way
through, stays down for longer than the group's session timeout, and comes back on the same
ports with the same data. While it is gone the agent stays alive (`/healthz`) and says it
is not ready (`/readyz`); when it is back the agent consumes again without a restart, and
at the end every series it exports equals that of one engine that applied the whole stream
in one go: nothing lost, nothing counted twice.
"""

from __future__ import annotations

import asyncio
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from ragstream.config import Settings, load_settings
from ragstream.events import Message
from ragstream.exporter.collector import EngineCollector
from ragstream.pipeline.engine import Engine
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from ragstream.wiring import engine_config
from tests.support import KafkaBroker, fetch_kafka_jars, produce_records, read_records
from tests.support.agent_http import get, until_read
from tests.support.kafka_files import free_port
from tests.support.process import stop_process
from tests.support.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

SESSION_TIMEOUT = 10.0
"""aiokafka's default `session_timeout_ms`, which the agent uses."""
OUTAGE = SESSION_TIMEOUT + 6.0
CONFIG = """\
kafka:
  group_id: outage
  auto_offset_reset: earliest
  max_batch: 200
  poll_timeout: 0.2
  commit_interval: 0.5
labels:
  keys: [app]
windows:
  clock: event
drift:
  enabled: false
judge:
  enabled: false
state:
  checkpoint_interval: 2s
"""
NOT_COMPARED = ("ragstream_consumer_lag", "ragstream_build_info", "ragstream_state_")
"""Series of the process rather than of the stream (lag, version, state-topic traffic)."""

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _broker(work: Path, **kwargs: Any) -> KafkaBroker:
    """A broker of the test alone (it is stopped and started again), in a kept work dir."""
    work.mkdir()
    return KafkaBroker(fetch_kafka_jars(), work_dir=work, heap="256m", **kwargs)


def _stream() -> list[tuple[bytes, bytes]]:
    traffic = SyntheticTraffic(SyntheticConfig(seed=31, rate=50.0, drift_at=None))
    events = [(e.key, e.value) for e in traffic.take(4000)]
    events.insert(1234, (b"bad", b"{not json"))
    events.insert(3456, (b"bad", b'{"type": "retrieval"}'))
    return events


def _samples(text: str) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        if family.name.startswith(NOT_COMPARED):
            continue
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = float(s.value)
    return out


def _reference(
    settings: Settings, stream: list[tuple[bytes, bytes]], partition_of: dict[bytes, int]
) -> Samples:
    """What one engine exports after the whole stream, each event on its Kafka partition."""
    engine = Engine(engine_config(settings))
    engine.apply([Message(v, partition_of[k], key=k) for k, v in stream])
    registry = CollectorRegistry()
    registry.register(EngineCollector(engine))
    return _samples(generate_latest(registry).decode())


async def _until_ready(base: str, ready: bool, within: float) -> str:
    deadline = time.monotonic() + within
    while True:
        status, body = await get(base + "/readyz")
        if (status == 200) == ready:
            return body
        assert time.monotonic() < deadline, f"/readyz still says {status} {body.strip()!r}"
        await asyncio.sleep(0.2)


class _Agent:
    """`ragstream run` as a subprocess on one topic, its output in agent.log."""

    def __init__(self, tmp_path: Path, bootstrap: str, topic: str) -> None:
        self.config = tmp_path / "ragstream.yaml"
        self.config.write_text(CONFIG)
        self.base = f"http://127.0.0.1:{free_port()}"
        self.log_path = tmp_path / "agent.log"
        self._env = {
            **os.environ,
            "RAGSTREAM_KAFKA__BOOTSTRAP_SERVERS": bootstrap,
            "RAGSTREAM_KAFKA__TOPICS": f'["{topic}"]',
        }
        self._proc: asyncio.subprocess.Process | None = None

    @property
    def proc(self) -> asyncio.subprocess.Process:
        assert self._proc is not None
        return self._proc

    async def start(self) -> None:
        command = [sys.executable, "-m", "ragstream", "run", "--config", str(self.config)]
        command += ["--port", self.base.rpartition(":")[2], "--set", "http.host=127.0.0.1"]
        with self.log_path.open("wb") as log:
            self._proc = await asyncio.create_subprocess_exec(
                *command, env=self._env, stdout=log, stderr=asyncio.subprocess.STDOUT
            )

    async def stop(self, within: float = 30.0) -> int:
        """SIGTERM; the exit status (the agent is killed when it takes longer)."""
        return await stop_process(self.proc, within)

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]


async def _ride_out(
    agent: _Agent, bootstrap: str, topic: str, go: Callable[[], None], back: Callable[[], None]
) -> tuple[list[tuple[bytes, bytes]], str, dict[bytes, int]]:
    """Half the stream, an outage (`go` ... `back`) longer than the session timeout while
    the agent is checked to be alive and not ready, the rest of the stream; returns the
    stream, the agent's /metrics at the end and the partition of every key."""
    stream = _stream()
    first, second = stream[:2500], stream[2500:]
    await produce_records(bootstrap, topic, first)
    await until_read(agent.base + "/metrics", len(first) // 2, 90, agent.proc)
    await _until_ready(agent.base, True, 30)

    go()  # part-way through the stream
    down = time.monotonic()
    detail = await _until_ready(agent.base, False, 15)
    assert "kafka" in detail.lower(), detail
    while time.monotonic() - down < OUTAGE:
        assert agent.proc.returncode is None, "the agent exited during the outage"
        status, _ = await get(agent.base + "/healthz")
        assert status == 200
        status, detail = await get(agent.base + "/readyz")
        assert status == 503, detail
        await asyncio.sleep(1.0)

    back()
    await _until_ready(agent.base, True, 90)
    await produce_records(bootstrap, topic, second)
    await until_read(agent.base + "/metrics", len(stream), 90, agent.proc)
    await asyncio.sleep(1.0)  # anything counted twice would show by now
    status, body = await get(agent.base + "/metrics")
    assert status == 200
    records = await read_records(bootstrap, topic, len(stream))
    return stream, body, {r.key: r.partition for r in records if r.key is not None}


def _assert_same_series(got: Samples, want: Samples) -> None:
    assert got.keys() == want.keys()
    differ = {
        key: (got[key], value)
        for key, value in want.items()
        if not math.isclose(got[key], value, rel_tol=1e-9, abs_tol=1e-12)
        and not (math.isnan(got[key]) and math.isnan(value))
    }
    assert not differ, sorted(differ.items())[:20]


async def test_a_broker_that_goes_away_and_comes_back_loses_and_doubles_nothing(
    tmp_path: Path,
) -> None:
    with _broker(tmp_path / "broker") as broker:
        topic = "outage-events"
        await broker.create_topic(topic, 2)
        agent = _Agent(tmp_path, broker.bootstrap_servers, topic)
        await agent.start()
        try:
            # stopped, then started on the same ports with the same data
            stream, body, partition_of = await _ride_out(
                agent, broker.bootstrap_servers, topic, broker.stop, broker.start
            )
        finally:
            status = await agent.stop()
        assert status == 0, agent.log_tail()
    want = _reference(load_settings(agent.config), stream, partition_of)
    _assert_same_series(_samples(body), want)


async def test_a_network_cut_past_the_session_timeout_loses_and_doubles_nothing(
    tmp_path: Path,
) -> None:
    """The broker runs on and expires the agent's session: when the network is back, the
    group rebalances and the agent takes its partitions again from their checkpoints."""
    broker_port, proxy_port = free_port(), free_port()
    advertised = {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy_port}"}
    with (
        TcpProxy(broker_port, proxy_port) as proxy,
        _broker(tmp_path / "broker", port=broker_port, config=advertised) as broker,
    ):
        topic = "outage-events"
        await broker.create_topic(topic, 2)
        bootstrap = f"127.0.0.1:{proxy_port}"
        agent = _Agent(tmp_path, bootstrap, topic)
        await agent.start()
        try:
            stream, body, partition_of = await _ride_out(
                agent, bootstrap, topic, proxy.cut, proxy.restore
            )
        finally:
            status = await agent.stop()
        assert status == 0, agent.log_tail()
    log = agent.log_path.read_text(errors="replace")
    assert "member_id was not recognized" in log  # the broker expired the session
    assert "adopted the state written by" in log  # and the agent took its partitions back
    want = _reference(load_settings(agent.config), stream, partition_of)
    _assert_same_series(_samples(body), want)


async def test_sigterm_during_an_outage_exits_0_within_the_drain_bound(tmp_path: Path) -> None:
    with _broker(tmp_path / "broker") as broker:
        topic = "outage-events"
        await broker.create_topic(topic, 2)
        agent = _Agent(tmp_path, broker.bootstrap_servers, topic)
        await agent.start()
        started = time.monotonic()
        try:
            stream = _stream()[:1000]
            await produce_records(broker.bootstrap_servers, topic, stream)
            await until_read(agent.base + "/metrics", len(stream), 90, agent.proc)
            broker.stop()
            await _until_ready(agent.base, False, 15)
            await asyncio.sleep(3.0)
            started = time.monotonic()
        finally:
            status = await agent.stop(within=40.0)
        took = time.monotonic() - started
    assert status == 0, agent.log_tail()
    assert took < 20.0, f"the agent took {took:.1f} s to stop"  # 5 s batch + 10 s drain
