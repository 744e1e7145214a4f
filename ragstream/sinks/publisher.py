"""JSON records to a Kafka topic from a bounded queue, never blocking the caller.

`offer_record` is synchronous: it queues the record or, when the queue is full, drops it and
counts the drop. One task sends in the background with an aiokafka producer, what is
queued at a time (up to 1000 records, batched by the producer); send failures are counted
and logged, never raised into the caller. `flush` waits (within a timeout)
until everything offered so far has been sent, so a caller can order its records before an
offset commit. The judge's judgments and the per-query results go through it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import Any, Self

import msgspec
from aiokafka import AIOKafkaProducer

__all__ = ["OUTCOMES", "KafkaPublisher"]

_log = logging.getLogger("ragstream.sinks")
_MAX_IN_FLIGHT = 1000
"""Records handed to the producer before their acknowledgements are awaited."""

OUTCOMES = ("sent", "queue_full", "failed", "shutdown")
"""What became of an offered record: sent, dropped for a full queue, refused by the brokers
(or unanswered), or still queued when the publisher stopped."""


class KafkaPublisher:
    """Publishes JSON records to ``topic``; give ``bootstrap_servers`` or a started ``producer``.

    ``queue_size``: records queued at most; ``drain_timeout``: seconds `stop` waits for the
    queued records to be sent (its caller's setting: `results.flush_timeout`,
    `judge.drain_timeout`)."""

    def __init__(
        self,
        topic: str,
        *,
        bootstrap_servers: str | None = None,
        producer: Any = None,
        queue_size: int,
        drain_timeout: float,
        name: str = "publisher",
        **producer_options: Any,
    ) -> None:
        if (bootstrap_servers is None) == (producer is None):
            raise ValueError("give exactly one of bootstrap_servers or producer")
        if queue_size < 1:
            raise ValueError(f"queue_size must be at least 1, not {queue_size}")
        if not drain_timeout >= 0.0:
            raise ValueError(f"drain_timeout must be >= 0 seconds, not {drain_timeout}")
        self.topic = topic
        self.drain_timeout = drain_timeout
        self.name = name
        self._bootstrap = bootstrap_servers
        self._options = producer_options
        self._producer: Any = producer
        self._owned = producer is None
        self._queue: asyncio.Queue[tuple[bytes, bytes]] = asyncio.Queue(maxsize=queue_size)
        self._task: asyncio.Task[None] | None = None
        self.counts: Counter[str] = Counter()
        """Records by outcome (`OUTCOMES`)."""

    def offer_record(self, key: str, record: dict[str, Any]) -> bool:
        """Queue one record (JSON, keyed by ``key``; a NaN or infinite number is written as
        null); False (counted) when the queue is full."""
        value = msgspec.json.encode(record)
        try:
            self._queue.put_nowait((key.encode(), value))
        except asyncio.QueueFull:
            self.counts["queue_full"] += 1
            return False
        return True

    async def flush(self, within: float) -> bool:
        """Wait until every record offered so far is sent (or failed), at most ``within``
        seconds; False when some are still queued then."""
        if self._task is None:
            return self._queue.empty()
        try:
            await asyncio.wait_for(self._queue.join(), timeout=within)
        except TimeoutError:
            return False
        return True

    async def start(self) -> None:
        """Start the producer (when owned) and the sending task."""
        if self._owned and self._producer is None:
            producer = AIOKafkaProducer(bootstrap_servers=self._bootstrap, **self._options)
            await producer.start()
            self._producer = producer
        if self._task is None:
            self._task = asyncio.create_task(self._send_loop(), name=self.name)

    async def stop(self) -> None:
        """Send what is queued (within `drain_timeout`), then stop the producer (if owned);
        what is still queued then is counted as ``shutdown``."""
        if self._task is not None:
            await self.flush(self.drain_timeout)
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

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _send_loop(self) -> None:
        """Send what is queued, many records at a time (the producer batches them), then
        wait for their acknowledgements."""
        while True:
            items = [await self._queue.get()]
            while len(items) < _MAX_IN_FLIGHT and not self._queue.empty():
                items.append(self._queue.get_nowait())
            settled = self.counts["sent"] + self.counts["failed"]
            try:
                await self._send(items)
            except asyncio.CancelledError:  # stopped: not acknowledged by then
                done = self.counts["sent"] + self.counts["failed"] - settled
                self.counts["shutdown"] += len(items) - done
                raise
            finally:
                for _ in items:
                    self._queue.task_done()

    async def _send(self, items: list[tuple[bytes, bytes]]) -> None:
        futures: list[asyncio.Future[Any]] = []
        try:
            for key, value in items:
                futures.append(await self._producer.send(self.topic, value=value, key=key))
        except asyncio.CancelledError:
            raise
        except Exception:
            self.counts["failed"] += len(items) - len(futures)
            _log.exception("could not publish records to %s", self.topic)
        outcomes = await asyncio.gather(*futures, return_exceptions=True)
        failed = [o for o in outcomes if isinstance(o, BaseException)]
        self.counts["sent"] += len(outcomes) - len(failed)
        if failed:
            self.counts["failed"] += len(failed)
            _log.error("could not publish %d records to %s: %s", len(failed), self.topic, failed[0])
