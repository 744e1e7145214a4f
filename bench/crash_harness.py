"""Crash harness: `ragstream run` killed with SIGKILL at random moments, restarted, and every
exported series compared at the end with a run that never crashed.

    python -m bench.crash_harness --trials 50            # starts its own broker
    python -m bench.crash_harness --trials 5 --bootstrap 127.0.0.1:9092

Each trial writes a seeded stream (synthetic RAG traffic with late labels, some of them past
the label TTL, and malformed messages) to a new topic (one partition by default; see below).
One agent reads
it from start to end: the reference. Then the stream is written again to a second topic,
progressively, while a second agent (its own group and state topic) consumes it; the
harness kills that agent with SIGKILL 1 to ``--max-kills`` times at random moments --
during its start, the group join and the adoption of snapshots, while it applies batches,
writes checkpoints (every ``--checkpoint`` seconds) and commits (every
``--commit`` seconds) -- and restarts it each time. When the last agent has read the whole
stream, its /metrics is compared with the reference's, series by series
(`bench.series`: every series the stream decides; the process's own work is left out).

The agents run on the event clock (t_now = the newest event time seen), so that the numbers
are the same on every run. That clock is one over all the partitions a replica holds: with
several partitions, when a query's TTL ends depends on how far the other partitions have
been read, i.e. on how their fetches interleave, and two crash-free runs of one stream can
differ. With one partition (the default) every number follows from the stream alone, so
any difference is a lost or doubled event. (Several partitions moving at once are covered
by `tests/pipeline/test_partition_state.py` and the rebalance test.) The stream has no
feedback before its retrieval event and is shorter than the longest window.
Prints one line per trial and a JSON summary (trials, kills, mismatches); exits 1 on any
mismatch.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import socket
import sys
import tempfile
import time
import uuid
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from bench import series
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic

__all__ = ["Agent", "HarnessConfig", "TrialResult", "make_stream", "run_trials"]

Record = tuple[bytes, bytes]


@dataclass(frozen=True, slots=True)
class HarnessConfig:
    """One harness run."""

    bootstrap: str
    trials: int = 5
    partitions: int = 1
    queries: int = 600
    """Queries per stream (about 3.5 messages each)."""
    max_kills: int = 3
    seed: int = 1
    checkpoint: float = 0.5
    """`state.checkpoint_interval` of the agents, seconds."""
    commit: float = 0.2
    """`kafka.commit_interval` of the agents, seconds."""
    session_timeout: float = 2.0
    """`kafka.session_timeout`: how soon a killed agent's partitions move."""
    produce_seconds: float = 4.0
    """How long the producer takes to write the stream during the crashed run."""
    state: bool = True
    """`state.enabled` of the crashed agents (False: the control, which must mismatch)."""
    work_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="crash-")))


@dataclass(slots=True)
class TrialResult:
    trial: int
    messages: int
    kills: list[str]
    """Per kill: the agent's state when it was killed (`starting`, `consuming`)."""
    mismatches: list[series.Mismatch]
    series: int
    seconds: float
    judged: int = 0
    """Answers in the reference's judgment windows (the longest window)."""


def make_stream(seed: int, queries: int) -> list[Record]:
    """The seeded stream: (key, value) in production order, a malformed message after every
    50th; keys are query ids, so that each query's events share a partition."""
    traffic = SyntheticTraffic(
        SyntheticConfig(
            seed=seed,
            start=1_700_000_000.0,
            rate=1.5,
            feedback_delay=(2.0, 220.0),  # past the 200 s TTL for about a tenth of labels
            early_feedback_share=0.0,
            drift_at=None,
        )
    )
    out: list[Record] = []
    for i, event in enumerate(traffic.stream(queries)):
        out.append((event.key, event.value))
        if i % 50 == 49:
            out.append((event.key, b'{"type": "retrieval", "query_id": ' + str(i).encode()))
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Agent:
    """`ragstream run` as a subprocess, with its /metrics port."""

    def __init__(
        self, config: HarnessConfig, topic: str, group: str, log: Path, *, state: bool = True
    ) -> None:
        self.config, self.topic, self.group, self.log = config, topic, group, log
        self.state = state
        self.port = _free_port()
        self.proc: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        c = self.config
        settings = {
            "kafka.bootstrap_servers": c.bootstrap,
            "kafka.group_id": self.group,
            "kafka.client_id": self.group,
            "kafka.auto_offset_reset": "earliest",
            "kafka.max_batch": "200",
            "kafka.poll_timeout": "0.1s",
            "kafka.commit_interval": f"{c.commit}s",
            "kafka.session_timeout": f"{c.session_timeout}s",
            "state.enabled": str(self.state).lower(),
            "state.checkpoint_interval": f"{c.checkpoint}s",
            "state.chunk_bytes": "16384",
            "windows.clock": "event",
            "windows.sizes": "[1m, 5m, 1h]",
            "labels.keys": "[app]",
            "join.label_ttl": "200s",
            "drift.enabled": "false",
            # the offline lexical judge on half the answers, with no rate limit: what is
            # judged is partition state too (sampling is a hash of the query id)
            "judge.enabled": "true",
            "judge.kind": "lexical",
            "judge.sampling.rate": "0.5",
            "judge.sampling.max_per_second": "null",
            "judge.queue_size": "100000",
            "http.host": "127.0.0.1",
        }
        args = [a for k, v in settings.items() for a in ("--set", f"{k}={v}")]
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSTREAM_")}
        with self.log.open("ab") as log:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "ragstream",
                "run",
                "--port",
                str(self.port),
                "--topic",
                self.topic,
                *args,
                env=env,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
            )

    async def get(self, path: str) -> tuple[int, str] | None:
        try:
            async with aiohttp.ClientSession() as http, http.get(self.url + path) as response:
                return response.status, await response.text()
        except (aiohttp.ClientError, OSError):
            return None

    async def ready(self) -> bool:
        got = await self.get("/readyz")
        return got is not None and got[0] == 200

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)

    async def wait(self) -> int:
        assert self.proc is not None
        return await self.proc.wait()

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), 30)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()

    async def settled(self, messages: int, within: float, quiet: float = 5.0) -> str:
        """The /metrics text once every message is counted and two scrapes agree, or once
        the agent is ready and its series have not moved for ``quiet`` seconds (some were
        lost: they never come)."""
        deadline = time.monotonic() + within
        previous: series.Samples | None = None
        since = time.monotonic()
        while True:
            if self.proc is not None and self.proc.returncode is not None:
                raise RuntimeError(f"the agent exited ({self.proc.returncode}); see {self.log}")
            got = await self.get("/metrics")
            if got is not None and got[0] == 200:
                samples = series.parse(got[1])
                counted = sum(v for (n, _), v in samples.items() if n == "ragstream_events_total")
                if samples != previous:
                    previous, since = samples, time.monotonic()
                elif counted == messages:
                    return got[1]
                if counted > messages:  # doubled: it will never come down
                    return got[1]
                if time.monotonic() - since > quiet and await self.ready():
                    return got[1]
            if time.monotonic() > deadline:
                raise RuntimeError(f"the agent did not count {messages} messages; see {self.log}")
            await asyncio.sleep(0.5)


async def _topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        await admin.close()


async def _produce(
    bootstrap: str, topic: str, records: Sequence[Record], seconds: float, partitions: int
) -> None:
    """Write the records in order, spread over about ``seconds``; a key's records go to
    partition crc32(key) mod ``partitions``."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all")
    await producer.start()
    try:
        chunks = max(1, int(seconds / 0.1))
        size = max(1, -(-len(records) // chunks))
        for i in range(0, len(records), size):
            for key, value in records[i : i + size]:
                partition = zlib.crc32(key) % partitions
                await producer.send(topic, value=value, key=key, partition=partition)
            await producer.flush()
            if seconds:
                await asyncio.sleep(seconds / chunks)
    finally:
        await producer.stop()


async def _crashed_run(
    config: HarnessConfig, rng: random.Random, topic: str, records: Sequence[Record], log: Path
) -> tuple[str, list[str]]:
    """The stream written while an agent is killed 1..max_kills times and restarted."""
    group = f"crash-{uuid.uuid4().hex[:8]}"
    producer = asyncio.create_task(
        _produce(config.bootstrap, topic, records, config.produce_seconds, config.partitions)
    )
    kills: list[str] = []
    try:
        for _ in range(rng.randint(1, config.max_kills)):
            agent = Agent(config, topic, group, log, state=config.state)
            await agent.start()
            # anywhere from the start (group join, snapshot adoption) to well into
            # consumption (batches, checkpoints, commits)
            await asyncio.sleep(rng.uniform(0.3, 4.0 + config.session_timeout))
            kills.append("consuming" if await agent.ready() else "starting")
            agent.kill()
            await agent.wait()
        await producer
        agent = Agent(config, topic, group, log, state=config.state)
        await agent.start()
        try:
            text = await agent.settled(len(records), 120.0)
        finally:
            await agent.stop()
    finally:
        producer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await producer
    return text, kills


async def _reference_run(
    config: HarnessConfig, topic: str, records: Sequence[Record], log: Path
) -> str:
    await _produce(config.bootstrap, topic, records, 0.0, config.partitions)
    agent = Agent(config, topic, f"reference-{uuid.uuid4().hex[:8]}", log)
    await agent.start()
    try:
        return await agent.settled(len(records), 120.0)
    finally:
        await agent.stop()


async def run_trial(config: HarnessConfig, trial: int) -> TrialResult:
    started = time.monotonic()
    rng = random.Random(config.seed * 1000 + trial)
    records = make_stream(config.seed * 1000 + trial, config.queries)
    name = f"crash-{trial}-{uuid.uuid4().hex[:8]}"
    await _topic(config.bootstrap, f"{name}-ref", config.partitions)
    await _topic(config.bootstrap, f"{name}-run", config.partitions)
    log = config.work_dir / f"{name}.log"
    expected_text = await _reference_run(config, f"{name}-ref", records, log)
    got_text, kills = await _crashed_run(config, rng, f"{name}-run", records, log)
    expected, got = series.parse(expected_text), series.parse(got_text)
    return TrialResult(
        trial=trial,
        messages=len(records),
        kills=kills,
        mismatches=series.compare(expected, got),
        series=len(expected),
        seconds=time.monotonic() - started,
        judged=judged(expected),
    )


def judged(samples: series.Samples) -> int:
    """Answers behind the generation gauges in the longest window, over label sets."""
    counts: dict[str, float] = {}
    for (name, labels), value in samples.items():
        if name == "ragstream_generation_judged_queries":
            window = dict(labels)["window"]
            counts[window] = counts.get(window, 0.0) + value
    return int(max(counts.values(), default=0.0))


async def run_trials(config: HarnessConfig) -> list[TrialResult]:
    results = []
    for trial in range(config.trials):
        result = await run_trial(config, trial)
        results.append(result)
        print(
            f"trial {trial}: {result.messages} messages, kills {result.kills}, "
            f"{result.series} series, {result.judged} answers judged, "
            f"{len(result.mismatches)} mismatches, "
            f"{result.seconds:.1f} s",
            flush=True,
        )
        for mismatch in result.mismatches[:10]:
            print(f"  {mismatch}", flush=True)
    return results


def summary(results: Sequence[TrialResult]) -> dict[str, object]:
    kills = [k for r in results for k in r.kills]
    return {
        "trials": len(results),
        "kills": len(kills),
        "kills_while_starting": kills.count("starting"),
        "kills_while_consuming": kills.count("consuming"),
        "messages_per_trial": results[0].messages if results else 0,
        "series_compared_per_trial": results[0].series if results else 0,
        "answers_judged_per_trial": round(sum(r.judged for r in results) / len(results))
        if results
        else 0,
        "mismatches": sum(len(r.mismatches) for r in results),
        "trials_with_mismatches": sum(1 for r in results if r.mismatches),
        "seconds": round(sum(r.seconds for r in results), 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.crash_harness", description=__doc__)
    parser.add_argument("--bootstrap", help="a Kafka broker (default: start one)")
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--queries", type=int, default=600)
    parser.add_argument("--max-kills", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--no-state",
        action="store_true",
        help="the control: crashed agents without partition state (expect mismatches)",
    )
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        bootstrap = args.bootstrap
        if bootstrap is None:
            from tests.support import KafkaBroker, fetch_kafka_jars

            broker = stack.enter_context(KafkaBroker(fetch_kafka_jars()))
            bootstrap = broker.bootstrap_servers
        config = HarnessConfig(
            bootstrap=bootstrap,
            trials=args.trials,
            queries=args.queries,
            max_kills=args.max_kills,
            partitions=args.partitions,
            seed=args.seed,
            state=not args.no_state,
        )
        results = asyncio.run(run_trials(config))
    report = summary(results)
    print(json.dumps(report, indent=2))
    return 1 if report["mismatches"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
