"""One size of the scrape benchmark: fill an engine, then time its exposition.

The engine follows a fixed wall clock (`T_END`, where the stream ends) and the collector
reads at the same instant, so every repetition computes the same exposition. Timed, for the
text format and for OpenMetrics: what `/metrics` runs in-process (the collector's families,
written by the exporter's renderer), and a real HTTP GET of `/metrics` against
`MetricsServer` on 127.0.0.1 (aiohttp client in the same process, so the figure includes the
client's read of the body); for reference, prometheus_client's own encoders of the same
families. Memory: the process's resident set and the windows' arrays (`engine.store.nbytes`).
"""

from __future__ import annotations

import asyncio
import cProfile
import gc
import os
import pstats
import resource
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import aiohttp
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from bench.scrape_data import T_END, DataConfig, base_events, engine_config, fill, message_batches
from ragstream.exporter.collector import EngineCollector
from ragstream.exporter.http import MetricsServer
from ragstream.pipeline.engine import Engine

__all__ = ["ACCEPT", "count_series", "measure_size", "percentiles", "rss_bytes"]

ACCEPT = {
    "text": "text/plain;version=0.0.4;q=1,*/*;q=0.1",
    # what Prometheus asks for unless its scrape job says otherwise: OpenMetrics first
    "openmetrics": "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
    "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
}
"""The Accept header of a scrape, by format."""


def rss_bytes() -> int:
    """Current resident set size of this process (Linux `/proc/self/statm`)."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    """Peak resident set size of this process (`ru_maxrss`, KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50, p90 and max of `samples` (nearest-rank p90)."""
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, max(0, round(0.9 * len(ordered)) - 1))]
    return {"p50": statistics.median(ordered), "p90": p90, "max": ordered[-1]}


def count_series(text: str) -> tuple[int, int]:
    """(sample lines, sample lines carrying an `app` label) of a text exposition."""
    samples = [line for line in text.splitlines() if line and not line.startswith("#")]
    return len(samples), sum('app="' in line for line in samples)


def _coverage(text: str, labelsets: int, windows: int) -> int:
    """Label sets with labeled queries in every window (from `ragstream_window_queries`)."""
    seen: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith("ragstream_window_queries{") and 'kind="labeled"' in line:
            app = line.split('app="', 1)[1].split('"', 1)[0]
            if float(line.rsplit(" ", 1)[1]) > 0:
                seen[app] = seen.get(app, 0) + 1
    return sum(1 for i in range(labelsets) if seen.get(f"app{i}", 0) == windows)


def _timed(fn: Callable[[], object], reps: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of `reps` calls (CPU time is what a loaded machine inflates
    least: other processes take turns on the cores, not this one's work)."""
    wall, cpu = [], []
    for _ in range(reps):
        started, cpu_started = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
    return wall, cpu


async def _http_times(
    collector: EngineCollector, reps: int, accept: str
) -> tuple[list[float], int]:
    async with (
        MetricsServer(collector.families, host="127.0.0.1", port=0) as server,
        aiohttp.ClientSession(headers={"Accept": accept}) as session,
    ):
        url = server.url + "/metrics"
        samples = []
        size = 0
        for i in range(reps + 1):
            started = time.perf_counter()
            async with session.get(url) as response:
                body = await response.read()
            if i:  # the first GET opens the connection: not counted
                samples.append(time.perf_counter() - started)
            size = len(body)
        return samples, size


def profile_scrape(scrape: Callable[[], object], reps: int = 5) -> dict[str, Any]:
    """Where a scrape's time goes: windows reads, the rest of the families' building
    (label tuples, metric math), the rendering; and the top functions."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(reps):
        scrape()
    profiler.disable()
    stats = pstats.Stats(profiler)
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]

    def cumulative(path_part: str, names: tuple[str, ...]) -> float:
        return sum(
            v[3] for (path, _, name), v in raw.items() if path_part in path and name in names
        )

    total = cumulative("exporter/http.py", ("scrape",))
    families = cumulative("exporter/collector.py", ("families",))
    reads = cumulative("windows/store.py", ("read",))
    rendering = cumulative("exporter/text.py", ("render",))
    top = sorted(raw.items(), key=lambda kv: kv[1][2], reverse=True)[:12]
    return {
        "reps": reps,
        "total": total / reps,
        "windows_reads": reads / reps,
        "families": (families - reads) / reps,
        "rendering": rendering / reps,
        "top": [
            {"function": f"{os.path.basename(path)}:{line}({name})", "tottime": v[2] / reps}
            for (path, line, name), v in top
        ],
    }


def measure_size(
    labelsets: int, *, data: DataConfig, reps: int, http_reps: int, profile: bool
) -> dict[str, Any]:
    """Fill an engine with `labelsets` label sets of the base stream; time its scrapes."""
    values = base_events(data)
    engine = Engine(engine_config(labelsets), wall=lambda: T_END)
    started = time.perf_counter()
    n = fill(engine, message_batches(values, data, labelsets))
    fill_seconds = time.perf_counter() - started
    del values
    gc.collect()
    collector = EngineCollector(engine, clock=lambda: T_END)
    # not started: its scrapes in-process
    server = MetricsServer(collector.families, host="127.0.0.1", port=0)
    text = server.scrape(ACCEPT["text"])[0].decode()
    series, labelled = count_series(text)
    load_before = os.getloadavg()[0]
    result: dict[str, Any] = {
        "labelsets": labelsets,
        "series": series,
        "series_per_labelset": labelled / labelsets,
        "series_fixed": series - labelled,
        "covered": _coverage(text, labelsets, len(engine.spec.windows)),
        "messages": n,
        "fill_seconds": fill_seconds,
        "engine_series": len(engine.store),
        "store_nbytes": engine.store.nbytes,
    }
    registry = CollectorRegistry()
    registry.register(collector)
    for name, accept in ACCEPT.items():
        # what /metrics runs; and prometheus_client's encoder of the same families
        wall, cpu = _timed(partial(server.scrape, accept), reps)
        generic, _ = _timed(partial(choose_encoder(ACCEPT[name])[0], registry), max(1, reps // 5))
        http, body = asyncio.run(_http_times(collector, http_reps, ACCEPT[name]))
        result[name] = {
            "scrape": percentiles(wall),
            "cpu": percentiles(cpu),
            "generic_encoder": percentiles(generic),
            "http": percentiles(http),
            "body_bytes": body,
        }
    result |= {
        "rss": rss_bytes(),
        "peak_rss": peak_rss_bytes(),
        "load": [load_before, os.getloadavg()[0]],
    }
    if profile:
        result["profile"] = profile_scrape(partial(server.scrape, ACCEPT["openmetrics"]))
    return result
