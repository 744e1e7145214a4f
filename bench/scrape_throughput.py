"""Consumption throughput of the `Agent` with and without a scraper polling `/metrics`.

The agent runs as in production (engine on the wall clock, `Runner`, `MetricsServer` on the
same event loop) over an in-memory source that hands out pre-built batches as fast as the
runner takes them. The scraper is a separate process (as Prometheus would be) that GETs
`/metrics` every `interval` seconds, asking for OpenMetrics as Prometheus does; the source
starts the clock only once the first scrape has been served, so both kinds of run time the
same work. Runs without and with the scraper alternate, so that the machine's drifting load
hits both alike.

`python -m bench.scrape_throughput URL INTERVAL` is the scraper itself.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from bench.scrape_data import T_END, DataConfig, base_events, engine_config, message_batches
from bench.scrape_timing import ACCEPT
from ragstream.agent import Agent
from ragstream.events import Message, Record
from ragstream.pipeline.engine import Engine
from tests.support.kafka_files import free_port

__all__ = ["MemorySource", "measure_throughput", "scraper"]


class MemorySource:
    """Pre-built batches, yielded back to back once `gate()` is true; times the run."""

    def __init__(
        self, batches: Sequence[Sequence[Message]], gate: Callable[[], bool] | None = None
    ) -> None:
        self._batches = batches
        self._gate = gate
        self._stopped = False
        self.committed = 0
        self.started = 0.0
        self.finished = 0.0
        self.cpu_started = 0.0
        self.cpu_finished = 0.0

    async def batches(self) -> AsyncIterator[Sequence[Message]]:
        # the gate is a condition (the collector's scrape counter), not an event to await
        while self._gate is not None and not self._gate() and not self._stopped:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        self.started, self.cpu_started = time.perf_counter(), time.process_time()
        for batch in self._batches:
            if self._stopped:
                break
            yield batch
        self.finished, self.cpu_finished = time.perf_counter(), time.process_time()

    async def commit(self, batch: Sequence[Record]) -> None:
        self.committed += len(batch)

    async def stop(self) -> None:
        self._stopped = True

    @property
    def seconds(self) -> float:
        return self.finished - self.started

    @property
    def cpu_seconds(self) -> float:
        """CPU time of this process during the run (consumer and server, not the scraper)."""
        return self.cpu_finished - self.cpu_started


def _run_once(
    values: list[bytes], data: DataConfig, labelsets: int, scrape: float | None
) -> dict[str, Any]:
    """One run of the agent over the whole stream, shifted to end at the wall clock now."""
    batches = list(message_batches(values, data, labelsets, shift=time.time() - T_END))
    messages = sum(len(b) for b in batches)
    engine = Engine(engine_config(labelsets))
    port = free_port()
    scraper_process: subprocess.Popen[str] | None = None
    gate: Callable[[], bool] | None = None
    agent: Agent | None = None
    if scrape is not None:
        url = f"http://127.0.0.1:{port}/metrics"
        scraper_process = subprocess.Popen(
            [sys.executable, "-m", "bench.scrape_throughput", url, str(scrape)],
            stdout=subprocess.PIPE,
            text=True,
        )

        def gate() -> bool:
            return agent is not None and agent.collector.scrapes >= 1

    source = MemorySource(batches, gate)
    agent = Agent(engine, source, host="127.0.0.1", port=port)
    gc.collect()
    load = os.getloadavg()[0]
    try:
        asyncio.run(agent.run())
    finally:
        client: dict[str, float] = {}
        if scraper_process is not None:
            scraper_process.send_signal(signal.SIGTERM)
            out, _ = scraper_process.communicate(timeout=30)
            fields = out.split()
            client = {"scrapes": float(fields[0]), "p50": float(fields[1])}
    return {
        "scrape": scrape is not None,
        "messages": messages,
        "committed": source.committed,
        "seconds": source.seconds,
        "events_per_s": messages / source.seconds,
        "events_per_cpu_s": messages / source.cpu_seconds,
        "scrapes_served": agent.collector.scrapes,
        "client": client,
        "series": len(engine.store),
        "load": [load, os.getloadavg()[0]],
    }


def measure_throughput(
    labelsets: int, *, data: DataConfig, pairs: int, interval: float
) -> dict[str, Any]:
    """`pairs` x (run without scrapes, run with scrapes), interleaved; medians and ratio."""
    values = base_events(data)
    _run_once(values[: len(values) // 10], data, labelsets, None)  # warm-up, not counted
    runs = []
    for _ in range(pairs):
        runs.append(_run_once(values, data, labelsets, None))
        runs.append(_run_once(values, data, labelsets, interval))
    result: dict[str, Any] = {"labelsets": labelsets, "interval": interval, "runs": runs}
    for key in ("events_per_s", "events_per_cpu_s"):
        off = [r[key] for r in runs if not r["scrape"]]
        on = [r[key] for r in runs if r["scrape"]]
        result[key] = {
            "off": {"median": statistics.median(off), "min": min(off), "max": max(off)},
            "on": {"median": statistics.median(on), "min": min(on), "max": max(on)},
            "ratio": statistics.median(on) / statistics.median(off),
            "pair_ratios": [b / a for a, b in zip(off, on, strict=True)],
        }
    return result


def scraper(url: str, interval: float) -> None:
    """GET `url` every `interval` seconds until SIGTERM; print `scrapes p50_seconds`."""
    samples: list[float] = []
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    due = time.monotonic()
    while not stopping:
        started = time.perf_counter()
        try:
            request = urllib.request.Request(url, headers={"Accept": ACCEPT["openmetrics"]})
            with urllib.request.urlopen(request, timeout=10) as response:
                response.read()
            samples.append(time.perf_counter() - started)
        except OSError:  # the server is not up yet
            due = time.monotonic()
            time.sleep(0.02)
            continue
        due += interval
        time.sleep(max(0.0, due - time.monotonic()))
    p50 = statistics.median(samples) if samples else float("nan")
    print(len(samples), p50, flush=True)


if __name__ == "__main__":
    scraper(sys.argv[1], float(sys.argv[2]))
