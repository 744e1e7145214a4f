"""Asking a `ragstream run` subprocess (asyncio's) over HTTP: a GET, and polling /metrics
until the agent has read a number of events."""

from __future__ import annotations

import asyncio
import time

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

__all__ = ["events_read", "get", "until_read"]


async def get(url: str) -> tuple[int, str]:
    """(status, body) of a GET of `url`, within 5 s."""
    timeout = aiohttp.ClientTimeout(total=5)
    async with aiohttp.ClientSession(timeout=timeout) as http, http.get(url) as response:
        return response.status, await response.text()


def events_read(metrics: str) -> float:
    """The sum of `ragstream_events_total` in a /metrics text: every event read."""
    return sum(
        s.value
        for family in text_string_to_metric_families(metrics)
        if family.name == "ragstream_events"
        for s in family.samples
        if s.name == "ragstream_events_total"
    )


async def until_read(url: str, count: int, within: float, proc: asyncio.subprocess.Process) -> str:
    """The /metrics text at `url` once it counts `count` events read; fails when the agent
    exits or `within` seconds pass first."""
    deadline = time.monotonic() + within
    read = -1.0
    while True:
        assert proc.returncode is None, "the agent exited"
        try:
            status, body = await get(url)
        except (aiohttp.ClientError, TimeoutError):  # not serving yet, or slow to answer
            status, body = 0, ""
        read = events_read(body) if status == 200 else -1.0
        if read >= count:
            return body
        assert time.monotonic() < deadline, f"the agent read {read} of {count} events"
        await asyncio.sleep(0.2)
