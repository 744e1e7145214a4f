"""`ragstream run` as a process: serves its endpoints, drains and commits on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import aiohttp
from aiokafka import AIOKafkaConsumer, TopicPartition

from ragstream.events import DECODE_REASONS
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from tests.support import KafkaBroker, TopicFactory, produce_records
from tests.support.agent_http import get
from tests.support.kafka_files import free_port
from tests.support.process import stop_process


async def _wait_for(url: str, check: str, within: float, proc: asyncio.subprocess.Process) -> str:
    deadline = time.monotonic() + within
    while True:
        assert proc.returncode is None, "the agent exited early"
        try:
            status, body = await get(url)
            if status == 200 and check in body:
                return body
        except aiohttp.ClientError:
            pass
        assert time.monotonic() < deadline, f"{url} never showed {check!r}"
        await asyncio.sleep(0.2)


async def test_run_serves_metrics_and_exits_0_on_sigterm_with_offsets_committed(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory, tmp_path: Path
) -> None:
    topic = await kafka_topic_factory(2)
    events = SyntheticTraffic(SyntheticConfig(seed=5, rate=20.0)).take(1500)
    records = [(e.key, e.value) for e in events] + [(b"bad", b"{garbage")]
    await produce_records(kafka_broker.bootstrap_servers, topic, records)
    port = free_port()
    config = tmp_path / "ragstream.yaml"
    config.write_text(
        "kafka:\n  group_id: run-test\n  auto_offset_reset: earliest\n"
        "labels:\n  keys: [app]\nwindows:\n  clock: event\n"
    )
    env = {
        **os.environ,
        "RAGSTREAM_KAFKA__BOOTSTRAP_SERVERS": kafka_broker.bootstrap_servers,
        "RAGSTREAM_KAFKA__TOPICS": f'["{topic}"]',
    }
    log = (tmp_path / "agent.log").open("wb")
    proc = await asyncio.create_subprocess_exec(
        *[
            sys.executable,
            "-m",
            "ragstream",
            "run",
            "--config",
            str(config),
            "--port",
            str(port),
            "--set",
            "http.host=127.0.0.1",
        ],
        env=env,
        stdout=log,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        await _wait_for(base + "/healthz", "ok", 60, proc)
        body = await _wait_for(
            base + "/metrics", 'reason="bad_json"} 1.0', 90, proc
        )  # the partition it was on
        assert body.count('ragstream_invalid_events_total{partition="') == 2 * len(DECODE_REASONS)
        assert 'ragstream_retrieval_mrr{app="support",window="1h"}' in body
        await _wait_for(base + "/readyz", "ready", 30, proc)
    finally:
        status = await stop_process(proc, 30)  # SIGTERM
        log.close()
    assert status == 0
    output = (tmp_path / "agent.log").read_text()
    assert "stopped after" in output
    consumer = AIOKafkaConsumer(
        bootstrap_servers=kafka_broker.bootstrap_servers, group_id="run-test"
    )
    await consumer.start()
    try:
        partitions = [TopicPartition(topic, p) for p in range(2)]
        ends = await consumer.end_offsets(partitions)
        committed = {tp: await consumer.committed(tp) for tp in partitions}
    finally:
        await consumer.stop()
    assert committed == ends  # every message applied and committed, none left behind
    assert sum(ends.values()) == len(events) + 1
