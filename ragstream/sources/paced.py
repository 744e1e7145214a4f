"""Synthetic traffic in real time: the demo's source, no Kafka needed."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Callable, Sequence

from ragstream.events import Message, Record
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic, TimedEvent

__all__ = ["PacedSyntheticSource"]


class PacedSyntheticSource:
    """Delivers `SyntheticTraffic` as it happens: event times start at the wall clock.

    Every `interval` seconds it yields the events whose arrival time has come, spread over
    `partitions` partitions by query id, as a Kafka topic would.
    """

    def __init__(
        self,
        config: SyntheticConfig,
        *,
        partitions: int = 3,
        interval: float = 0.25,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.start_time = wall()
        self.config = dataclasses.replace(config, start=self.start_time)
        self.partitions = partitions
        self.interval = interval
        self._wall = wall
        self._events = SyntheticTraffic(self.config).stream()
        self._held: TimedEvent | None = None
        self._offset = 0
        self._stopped = False

    async def batches(self) -> AsyncIterator[Sequence[Record]]:
        while not self._stopped:
            yield self._due(self._wall())
            await asyncio.sleep(self.interval)

    def _due(self, now: float) -> list[Message]:
        batch: list[Message] = []
        while True:
            event = self._held or next(self._events)
            if event.arrival > now:
                self._held = event
                return batch
            self._held = None
            key = event.key
            partition = sum(key) % self.partitions
            batch.append(Message(event.value, partition, self._offset, "synthetic", key))
            self._offset += 1

    async def commit(self, batch: Sequence[Record]) -> None:
        """Nothing to commit: the traffic is generated."""

    async def stop(self) -> None:
        self._stopped = True
