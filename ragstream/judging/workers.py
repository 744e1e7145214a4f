"""Judge workers: a bounded queue and a bounded number of concurrent judge calls.

`submit` is synchronous and never blocks or awaits: a full queue drops the sample and
counts it (``queue_full``), so judging can never slow consumption down. ``concurrency``
worker tasks take items from the queue and call the judge; results go to ``on_result``,
failures to ``on_failure``, and every outcome is counted: ``ok`` or the failure's reason.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence

from ragstream.judging.model import Judge, JudgeError, JudgeInput, Judgment

__all__ = ["DROP_REASONS", "JudgeWorkers", "LatencyHistogram"]

_log = logging.getLogger("ragstream.judging")

DROP_REASONS = ("queue_full", "stopped", "shutdown", "cancelled")
"""Why a sampled answer was dropped unjudged."""


class LatencyHistogram:
    """Cumulative-ready latency histogram (seconds): per-bucket counts, sum and count."""

    def __init__(
        self,
        buckets: Sequence[float] = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
    ) -> None:
        self.buckets = tuple(sorted(buckets))
        self.counts = [0] * (len(self.buckets) + 1)
        """counts[i]: observations in (buckets[i-1], buckets[i]]; the last is +Inf."""
        self.sum = 0.0
        self.count = 0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, seconds)] += 1
        self.sum += seconds
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """``(le, count)`` pairs as Prometheus wants them, ending with ``+Inf``."""
        out: list[tuple[str, int]] = []
        total = 0
        for bound, n in zip((*self.buckets, float("inf")), self.counts, strict=True):
            total += n
            out.append(("+Inf" if bound == float("inf") else f"{bound:g}", total))
        return out


class JudgeWorkers:
    """Runs a judge on submitted items with bounded memory and bounded concurrency."""

    def __init__(
        self,
        judge: Judge,
        *,
        queue_size: int,
        concurrency: int,
        on_result: Callable[[JudgeInput, Judgment], None] | None = None,
        on_failure: Callable[[JudgeInput, JudgeError], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if queue_size < 1 or concurrency < 1:
            raise ValueError("queue_size and concurrency must be >= 1")
        self.judge = judge
        self.queue_size = queue_size
        self.concurrency = concurrency
        self.on_result = on_result
        self.on_failure = on_failure
        self._clock = clock
        self._queue: asyncio.Queue[JudgeInput] = asyncio.Queue(maxsize=queue_size)
        self._tasks: list[asyncio.Task[None]] = []
        self._accepting = True
        self.in_flight = 0
        """Judge calls under way."""
        self.submitted = 0
        """Items accepted into the queue."""
        self.outcomes: Counter[str] = Counter()
        """Finished judgments: ``ok`` or the failure reason (``timeout``, ``bad_json``...)."""
        self.dropped: Counter[str] = Counter()
        """Samples dropped unjudged: ``queue_full``, ``stopped``, ``shutdown``, ``cancelled``."""
        self.callback_errors = 0
        self.latency = LatencyHistogram()
        """Seconds per judge call, successful or not."""

    # -- producer side ------------------------------------------------------------------------

    def submit(self, item: JudgeInput) -> bool:
        """Enqueue one item without waiting; False (and counted) when full or stopped."""
        if not self._accepting:
            self.dropped["stopped"] += 1
            return False
        try:
            self._queue.put_nowait(item)
        except asyncio.QueueFull:
            self.dropped["queue_full"] += 1
            return False
        self.submitted += 1
        return True

    @property
    def full(self) -> bool:
        """True when a submit now would be dropped."""
        return not self._accepting or self._queue.full()

    def drop(self, reason: str = "queue_full") -> None:
        """Count a sample dropped before it was built (the caller checked :attr:`full`)."""
        self.dropped["stopped" if not self._accepting else reason] += 1

    @property
    def depth(self) -> int:
        """Items waiting in the queue."""
        return self._queue.qsize()

    async def join(self) -> None:
        """Return once every queued item is judged (the workers must be running)."""
        await self._queue.join()

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the worker tasks (items submitted before are judged now)."""
        if self._tasks:
            return
        self._accepting = True
        self._tasks = [
            asyncio.create_task(self._work(), name=f"judge-worker-{i}")
            for i in range(self.concurrency)
        ]

    async def stop(self, drain_timeout: float) -> None:
        """Stop accepting, judge what is queued for up to ``drain_timeout`` seconds, then
        cancel; what is left is counted as dropped (``shutdown``, ``cancelled``)."""
        self._accepting = False
        if self._tasks:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._queue.join(), timeout=max(0.0, drain_timeout))
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        while not self._queue.empty():
            self._queue.get_nowait()
            self._queue.task_done()
            self.dropped["shutdown"] += 1
        await self.judge.close()

    # -- workers ------------------------------------------------------------------------------

    async def _work(self) -> None:
        while True:
            item = await self._queue.get()
            self.in_flight += 1
            started = self._clock()
            try:
                judgment = await self.judge.judge(item)
            except asyncio.CancelledError:
                self.dropped["cancelled"] += 1
                raise
            except JudgeError as exc:
                self._finish(item, None, exc, started)
            except Exception as exc:
                _log.exception("judge raised an unexpected error")
                self._finish(item, None, JudgeError("internal", repr(exc)), started)
            else:
                self._finish(item, judgment, None, started)
            finally:
                self.in_flight -= 1
                self._queue.task_done()

    def _finish(
        self,
        item: JudgeInput,
        judgment: Judgment | None,
        error: JudgeError | None,
        started: float,
    ) -> None:
        self.latency.observe(max(0.0, self._clock() - started))
        try:
            if judgment is not None:
                self.outcomes["ok"] += 1
                if self.on_result is not None:
                    self.on_result(item, judgment)
            elif error is not None:
                self.outcomes[error.reason] += 1
                if self.on_failure is not None:
                    self.on_failure(item, error)
        except Exception:
            self.callback_errors += 1
            _log.exception("judgment callback failed")
