"""The running agent: engine + source + runner + HTTP server, with signals and readiness.

`Agent.run()` serves `/metrics`, `/healthz` and `/readyz` first (so probes answer while a
broker is still being retried), starts the source, and drives the runner until the source
ends or SIGTERM / SIGINT arrives. On a signal it stops consuming, applies and commits the
current batch, leaves the consumer group, stops the server, and returns normally (exit 0).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Awaitable, Callable, Mapping

from prometheus_client.registry import Collector

from ragstream.checkpoint import HandoverCounters
from ragstream.checkpoint.collector import HandoverCollector
from ragstream.exporter.collector import EngineCollector
from ragstream.exporter.family import Family, from_metric
from ragstream.exporter.http import Health, MetricsServer
from ragstream.judging.collector import JudgeCollector
from ragstream.judging.service import JudgingService
from ragstream.pipeline.engine import Engine
from ragstream.pipeline.gc_tuning import tune_gc
from ragstream.pipeline.runner import DeadLetterSink, Runner, Source
from ragstream.sinks.collector import ResultsCollector
from ragstream.sinks.results import ResultsSink

__all__ = ["Agent"]

_log = logging.getLogger("ragstream")


class Agent:
    """One agent process; build it with its parts, then `await agent.run()`."""

    def __init__(
        self,
        engine: Engine,
        source: Source,
        *,
        host: str,
        port: int,
        start_source: Callable[[], Awaitable[None]] | None = None,
        lag: Callable[[], Awaitable[Mapping[tuple[str, int], int]]] | None = None,
        assigned: Callable[[], int] | None = None,
        starting: Callable[[], str | None] | None = None,
        dead_letters: DeadLetterSink | None = None,
        caught_up_lag: int = 10_000,
        drain_timeout: float = 10.0,
        batch_timeout: float = 5.0,
        judging: JudgingService | None = None,
        handover: HandoverCounters | None = None,
        results: ResultsSink | None = None,
    ) -> None:
        self.engine = engine
        self.source = source
        self.judging = judging
        self.runner = Runner(
            engine,
            source,
            dead_letters=dead_letters,
            on_answers=None if judging is None else judging.on_answers,
            on_verdicts=None if judging is None else judging.on_verdicts,
            on_final=None if results is None else results.on_final,
            before_commit=None if results is None else results.flush,
        )
        self._start_source = start_source
        self._lag_fn = lag
        self._lag: dict[tuple[str, int], int] = {}
        self._unreachable: str | None = None
        """Why the last lag read failed (the brokers did not answer), None after a success."""
        self._assigned = assigned
        self._starting = starting
        """Why the source is not started yet (e.g. its brokers do not answer), or None."""
        self._caught_up_lag = caught_up_lag
        self._drain_timeout = drain_timeout
        self._batch_timeout = batch_timeout
        self._started = False
        self.collector = EngineCollector(engine, lag=lambda: self._lag)
        self._collectors: list[Collector] = []
        if handover is not None:
            self._collectors.append(HandoverCollector(handover))
        if results is not None:
            self._collectors.append(ResultsCollector(results))
        if judging is not None:
            self._collectors.append(
                JudgeCollector(judging, engine.config.label_keys, now=engine.read_clock())
            )
        self.server = MetricsServer(self.families, host=host, port=port, ready=self.readiness)

    def families(self) -> list[Family]:
        """What a scrape serves: the engine's families, then the hand-over's and the judge's."""
        others = (from_metric(m) for c in self._collectors for m in c.collect())
        return [*self.collector.families(), *others]

    def readiness(self) -> Health:
        """Ready once consuming, with the source answering, partitions assigned and the lag
        below the bound (docs/deploy.md: what a sidecar makes of it)."""
        if not self._started:
            why = self._starting() if self._starting is not None else None
            return Health(False, why or "connecting to the source")
        if self._unreachable is not None:
            return Health(False, self._unreachable)
        if self._assigned is not None and self._assigned() == 0:
            return Health(False, "no partitions assigned")
        total = sum(self._lag.values())
        if total > self._caught_up_lag:
            return Health(False, f"catching up: {total} messages behind")
        return Health(True, "ready")

    def stop(self) -> None:
        """Stop after the current batch (what SIGTERM and SIGINT do)."""
        if not self.runner.stopping:
            _log.info("stopping: finishing the current batch")
        self.runner.stop()
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().create_task(self._stop_source_if_starting())

    async def _stop_source_if_starting(self) -> None:
        if not self._started:
            await self.source.stop()

    async def run(self) -> None:
        tune_gc()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        await self.server.start()
        _log.info("serving %s/metrics", self.server.url)
        lag_task = asyncio.create_task(self._watch_lag()) if self._lag_fn else None
        if self.judging is not None:
            await self.judging.start()
        try:
            if self._start_source is not None:
                await self._start_source()
            if not self.runner.stopping:
                self._started = True
                await self._drive()
        finally:
            self._started = False
            if lag_task is not None:
                lag_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await lag_task
            try:
                await self._stop_source()
                if self.judging is not None:
                    await self.judging.stop()  # drains within judge.drain_timeout
            finally:
                await self.server.stop()
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(sig)
        _log.info("stopped after %d batches", self.runner.batches)

    async def _drive(self) -> None:
        """Run the runner; once stopping, give its current batch `batch_timeout` seconds.

        A batch can wait on the source for longer (a checkpoint or a commit while the
        brokers are gone): it is then abandoned, as a crash would, and the state and offsets
        of the batches before it are what the next start resumes from."""
        runner = asyncio.create_task(self.runner.run())
        stopping = asyncio.create_task(self.runner.wait_stopping())
        try:
            await asyncio.wait({runner, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not runner.done():
                await asyncio.wait({runner}, timeout=self._batch_timeout)
            if not runner.done():
                _log.warning(
                    "the current batch did not finish within %g s of the stop (the source "
                    "does not answer); stopping without it",
                    self._batch_timeout,
                )
                runner.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await runner
            else:
                runner.result()  # a failure of the loop is the agent's
        finally:
            stopping.cancel()
            runner.cancel()

    async def _stop_source(self) -> None:
        """Commit, checkpoint and leave, within `drain_timeout` seconds."""
        try:
            await asyncio.wait_for(self.source.stop(), self._drain_timeout)
        except TimeoutError:
            _log.warning(
                "the source did not stop within %g s (the last commit or checkpoint may be "
                "missing: the next start replays from the one before)",
                self._drain_timeout,
            )

    async def _watch_lag(self, every: float = 2.0) -> None:
        assert self._lag_fn is not None
        while True:
            started = time.monotonic()
            try:
                self._lag = dict(await self._lag_fn())
                self._unreachable = None
            except Exception as error:  # a failed lag read must not stop the agent
                self._unreachable = str(error) or type(error).__name__
            await asyncio.sleep(max(0.1, every - (time.monotonic() - started)))
