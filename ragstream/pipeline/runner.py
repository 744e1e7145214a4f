"""The asyncio loop around the engine: batches in, apply, side outputs, commit, repeat.

Bad input never stops it: invalid messages are counted by the engine, logged at a bounded
rate, and optionally sent to a dead-letter topic with their reason; so are the records a
source could not read at all (a batch's `rejected`). `stop()` (SIGTERM)
ends the loop after the current batch; the batch is applied and committed first.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ragstream.events import DecodedAnswer, DecodedFeedback, DecodeError, Record
from ragstream.join import QueryView
from ragstream.pipeline.engine import BatchReport, Engine

__all__ = ["DeadLetterSink", "RateLimitedLog", "Runner", "Source"]

_log = logging.getLogger("ragstream.invalid")
_YIELD = 0.001
"""Pause after each batch. A timed sleep (unlike sleep(0)) lets the event loop run every
ready callback until the timer is due, so a scrape is answered within one batch instead of
needing one batch per step of the HTTP exchange."""


class Source(Protocol):
    """A stream of message batches (Kafka, a file, synthetic traffic). Offsets are
    committed only after a batch is applied."""

    def batches(self) -> AsyncIterator[Sequence[Record]]:
        """Yield batches until the source ends or `stop()` is called."""
        ...

    async def commit(self, batch: Sequence[Record]) -> None:
        """Record that every message of `batch` (and all before it) has been applied."""
        ...

    async def stop(self) -> None:
        """Stop yielding; the current batch may still be committed."""
        ...


class DeadLetterSink(Protocol):
    """Where invalid messages go, with their reason (e.g. a Kafka topic)."""

    async def send(self, invalid: Sequence[tuple[Record, DecodeError]]) -> None: ...


@dataclass(slots=True)
class RateLimitedLog:
    """A token bucket: at most `rate` lines a second (bursts of `burst`); the rest counted."""

    rate: float = 1.0
    burst: int = 10
    suppressed: int = 0
    _tokens: float = field(default=-1.0)
    _last: float = field(default=0.0)

    def allow(self, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        if self._tokens < 0:
            self._tokens, self._last = float(self.burst), now
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.rate)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        self.suppressed += 1
        return False


def _rejected(batch: Sequence[Record]) -> Sequence[tuple[Record, DecodeError]]:
    """What the source could not read at all, beside the batch's messages (a Kafka record
    batch that cannot be decompressed: `KafkaBatch.rejected`), with the reasons."""
    rejected: Sequence[tuple[Record, DecodeError]] = getattr(batch, "rejected", ())
    return rejected


class Runner:
    """Drives one source through one engine until the source ends or `stop()`."""

    def __init__(
        self,
        engine: Engine,
        source: Source,
        *,
        dead_letters: DeadLetterSink | None = None,
        on_final: Callable[[Sequence[QueryView]], None] | None = None,
        on_answers: Callable[[Sequence[tuple[int, DecodedAnswer]]], None] | None = None,
        on_verdicts: Callable[[Sequence[tuple[int, DecodedFeedback]]], None] | None = None,
        before_commit: Callable[[], Awaitable[None]] | None = None,
        invalid_log: RateLimitedLog | None = None,
    ) -> None:
        self.engine = engine
        self.source = source
        self.dead_letters = dead_letters
        self.on_final = on_final
        self.on_answers = on_answers
        self.on_verdicts = on_verdicts
        self.before_commit = before_commit
        """Awaited after a batch's side outputs and before its commit (the results topic
        waits there for its records to be acknowledged)."""
        self.invalid_log = invalid_log or RateLimitedLog()
        self.batches = 0
        self.dead_letter_failures = 0
        self._stop = asyncio.Event()

    def stop(self) -> None:
        """Finish the current batch, commit it, and return from `run`."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    async def wait_stopping(self) -> None:
        """Return once `stop()` is called."""
        await self._stop.wait()

    async def run(self) -> None:
        async for batch in self.source.batches():
            report = self.engine.apply(batch)
            rejected = _rejected(batch)
            if rejected:
                self.engine.reject(rejected)
                report.invalid.extend(rejected)
            await self._handle(batch, report)
            if self.before_commit is not None:
                await self.before_commit()
            await self.source.commit(batch)
            self.batches += 1
            if self._stop.is_set():
                break
            await asyncio.sleep(_YIELD)  # let the HTTP server answer between batches

    async def _handle(self, batch: Sequence[Record], report: BatchReport) -> None:
        for message, error in report.invalid:
            if self.invalid_log.allow():
                _log.warning(
                    "invalid event at %s[%d]@%d: %s",
                    message.topic,
                    message.partition,
                    message.offset,
                    error,
                )
        if report.invalid and self.dead_letters is not None:
            try:
                await self.dead_letters.send(report.invalid)
            except Exception:  # the dead-letter topic must not stop consumption
                self.dead_letter_failures += len(report.invalid)
                _log.exception(
                    "could not send %d messages to the dead-letter topic", len(report.invalid)
                )
        if report.final and self.on_final is not None:
            self.on_final(report.final)
        if report.answers and self.on_answers is not None:
            self.on_answers(report.answers)
        if self.on_verdicts is not None:  # every batch, after its answers: it keeps time
            self.on_verdicts(report.verdicts)
