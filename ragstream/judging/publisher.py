"""Judgments to a Kafka topic as JSON, for audit; keyed by ``query_id``.

`offer` is synchronous and never blocks (a bounded queue; when full the judgment is
dropped and counted); one task sends in the background with an aiokafka producer. Send
failures are counted and logged, never raised into the judging path.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from aiokafka import AIOKafkaProducer

from ragstream.judging.model import JudgeInput, Judgment

__all__ = ["JudgmentPublisher", "judgment_record"]

_log = logging.getLogger("ragstream.judging")


def judgment_record(item: JudgeInput, judgment: Judgment, *, judged_at: float) -> dict[str, Any]:
    """The published JSON object: the query, its labels, the scores and how they were made."""
    return {
        "type": "judgment",
        "query_id": item.query_id,
        "ts": item.ts,
        "judged_at": judged_at,
        "labels": dict(item.labels),
        "doc_ids": list(item.doc_ids),
        **judgment.as_dict(),
    }


class JudgmentPublisher:
    """Publishes judgments to ``topic``; give ``bootstrap_servers`` or a started ``producer``."""

    def __init__(
        self,
        topic: str,
        *,
        bootstrap_servers: str | None = None,
        producer: Any = None,
        queue_size: int = 1000,
        wall: Callable[[], float] = time.time,
        **producer_options: Any,
    ) -> None:
        if (bootstrap_servers is None) == (producer is None):
            raise ValueError("give exactly one of bootstrap_servers or producer")
        self.topic = topic
        self._bootstrap = bootstrap_servers
        self._options = producer_options
        self._producer: Any = producer
        self._owned = producer is None
        self._queue: asyncio.Queue[tuple[bytes, bytes]] = asyncio.Queue(maxsize=queue_size)
        self._task: asyncio.Task[None] | None = None
        self._wall = wall
        self.counts: Counter[str] = Counter()
        """Judgments by outcome: ``sent``, ``queue_full``, ``failed``, ``shutdown``."""

    def offer(self, item: JudgeInput, judgment: Judgment) -> bool:
        """Queue one judgment for sending; False (counted) when the queue is full."""
        record = judgment_record(item, judgment, judged_at=self._wall())
        value = json.dumps(record, ensure_ascii=False, allow_nan=False).encode()
        try:
            self._queue.put_nowait((item.query_id.encode(), value))
        except asyncio.QueueFull:
            self.counts["queue_full"] += 1
            return False
        return True

    async def start(self) -> None:
        """Start the producer (when owned) and the sending task."""
        if self._owned and self._producer is None:
            producer = AIOKafkaProducer(bootstrap_servers=self._bootstrap, **self._options)
            await producer.start()
            self._producer = producer
        if self._task is None:
            self._task = asyncio.create_task(self._send_loop(), name="judgment-publisher")

    async def stop(self, drain_timeout: float = 5.0) -> None:
        """Send what is queued (within ``drain_timeout``), then stop the producer (if owned)."""
        if self._task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._queue.join(), timeout=drain_timeout)
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        while not self._queue.empty():
            self._queue.get_nowait()
            self._queue.task_done()
            self.counts["shutdown"] += 1
        if self._owned and self._producer is not None:
            producer, self._producer = self._producer, None
            await producer.stop()

    async def __aenter__(self) -> JudgmentPublisher:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _send_loop(self) -> None:
        while True:
            key, value = await self._queue.get()
            try:
                await self._producer.send_and_wait(self.topic, value=value, key=key)
                self.counts["sent"] += 1
            except asyncio.CancelledError:
                raise
            except Exception:
                self.counts["failed"] += 1
                _log.exception("could not publish a judgment to %s", self.topic)
            finally:
                self._queue.task_done()
