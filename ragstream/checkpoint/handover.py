"""Moving partitions' state between replicas through the state topic.

`Handover` sits between the engine (anything with `export_partitions` and
`adopt_partition`) and the :class:`~ragstream.checkpoint.topic.StateTopic`:

- `save(positions)` exports the partitions' state and the input offsets it covers at one
  instant (no batch can come between them), writes it, and waits for the acks. The Kafka
  source calls it on revoke, every `interval` seconds, and on a clean stop.
- `load(partitions, ...)` reads the latest snapshot of each newly assigned partition,
  checks it (record format, the configuration it was kept with, the input topics, that the
  events after it are still in the topic), adopts what passes into the engine, and returns
  the offsets to seek to. A refused snapshot is counted by reason and logged; that
  partition starts afresh from the committed offset. Nothing here raises to the caller.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ragstream.checkpoint.record import (
    Chunk,
    PartitionSnapshot,
    RefusedSnapshotError,
    chunk_keys,
    encode,
)
from ragstream.checkpoint.topic import StateTopic, StateTopicError
from ragstream.pipeline.partitions import PartitionConfigError

__all__ = ["REFUSAL_REASONS", "Handover", "HandoverCounters", "PartitionStates"]

_log = logging.getLogger(__name__)
REFUSAL_REASONS = (
    "format",
    "corrupt",
    "incomplete",
    "config",
    "topics",
    "assignment",
    "expired",
    "unreadable",
)
"""Why a snapshot is not adopted (the `reason` label of the refusal counter)."""
Offsets = Mapping[str, int]
"""Per input topic: the next offset to consume."""


class PartitionStates(Protocol):
    """What a handover needs from the engine."""

    def export_partitions(self, partitions: set[int]) -> dict[int, dict[str, Any]]: ...

    def adopt_partition(self, state: Mapping[str, Any]) -> None:
        """Take the partition over; `PartitionConfigError` when it was kept with another
        configuration (before changing anything)."""
        ...

    def drop_partitions(self, partitions: set[int]) -> None: ...


@dataclass(slots=True)
class HandoverCounters:
    """Monotonic counts of snapshots, exported as counters."""

    written: int = 0
    """Partition snapshots written and acknowledged."""
    write_failed: int = 0
    """Partition snapshots that could not be written (the next owner replays more)."""
    adopted: int = 0
    """Assigned partitions whose snapshot was adopted."""
    fresh: int = 0
    """Assigned partitions without any snapshot: started from the committed offset."""
    refused: Counter[str] = field(default_factory=Counter)
    """Snapshots not adopted, by reason (see `REFUSAL_REASONS`)."""
    bytes_written: int = 0
    """Compressed bytes of the snapshots written."""


class Handover:
    """Saves and adopts partition state; see the module docstring."""

    def __init__(
        self,
        states: PartitionStates,
        topic: StateTopic,
        *,
        interval: float,
        chunk_bytes: int,
        writer: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``interval``: seconds between periodic checkpoints; ``chunk_bytes``: the largest
        record value written (Kafka's default limit is 1 MB per message)."""
        self.states = states
        self.topic = topic
        self.interval = interval
        self.chunk_bytes = chunk_bytes
        self.writer = writer
        self.counters = HandoverCounters()
        self._clock = clock
        self._last_save = clock()
        self._lock = asyncio.Lock()
        self._extra: dict[int, list[bytes]] = {}
        """Per partition: the chunk keys (beyond the head) of its latest snapshot."""
        self.last_written: dict[int, dict[str, int]] = {}
        """Per partition: the input offsets of the last snapshot written or adopted here."""

    async def start(self) -> bool:
        """Start the state topic's clients; False (logged) when the topic cannot be used,
        so that the caller goes on without hand-over. Connection errors raise."""
        try:
            await self.topic.start()
        except StateTopicError as error:
            _log.error("%s", error)
            return False
        self._last_save = self._clock()
        return True

    async def stop(self) -> None:
        await self.topic.stop()

    def covered(self) -> dict[int, dict[str, int]]:
        """Per partition: the input offsets of its latest snapshot written or adopted here."""
        return self.last_written

    def checkpoint_due(self) -> bool:
        """True when `interval` seconds have passed since the last save."""
        return self._clock() - self._last_save >= self.interval

    # -- saving ------------------------------------------------------------------------------

    async def save(
        self, positions: Callable[[], Mapping[int, Offsets]], *, changed_only: bool = False
    ) -> int:
        """Write a snapshot of every partition `positions()` names; returns how many.

        `positions()` and the export run together, without an await between them, once
        earlier saves are done, so each snapshot is the state after exactly the events
        before its offsets. ``changed_only`` skips partitions whose offsets are those of
        their last snapshot (periodic checkpoints of idle partitions). A failed write is
        logged and counted, not raised.
        """
        async with self._lock:
            self._last_save = self._clock()
            offsets = {p: dict(o) for p, o in positions().items()}
            if changed_only:
                offsets = {p: o for p, o in offsets.items() if self.last_written.get(p) != o}
            if not offsets:
                return 0
            states = self.states.export_partitions(set(offsets))
            now = time.time()
            snapshots = [
                PartitionSnapshot(p, offsets[p], state, now, self.writer)
                for p, state in states.items()
            ]
            # the export is a fresh copy: encode it off the event loop
            records = await asyncio.to_thread(self._encode, snapshots)
            superseded = [key for s in snapshots for key in self._extra.get(s.partition, ())]
            extra = {
                s.partition: [c.key for c in chunks[:-1]]
                for s, chunks in zip(snapshots, records, strict=True)
            }
            size = sum(len(c.value or b"") for chunks in records for c in chunks)
            try:
                await self.topic.write(records, superseded)
            except Exception:
                self.counters.write_failed += len(records)
                _log.exception("could not write the state of partitions %s", sorted(offsets))
                return 0
            self._extra.update(extra)
            self.last_written.update(offsets)
            self.counters.written += len(records)
            self.counters.bytes_written += size
            _log.info(
                "wrote the state of partitions %s (%d bytes) at offsets %s",
                sorted(offsets),
                size,
                offsets,
            )
            return len(records)

    def _encode(self, snapshots: Sequence[PartitionSnapshot]) -> list[list[Chunk]]:
        return [encode(s, uuid.uuid4().hex, self.chunk_bytes) for s in snapshots]

    # -- adopting ----------------------------------------------------------------------------

    async def load(
        self,
        partitions: set[int],
        topics: Sequence[str],
        assigned: set[tuple[str, int]],
        earliest: Mapping[tuple[str, int], int],
    ) -> dict[int, dict[str, int]]:
        """Adopt the latest usable snapshot of each partition; returns, per adopted
        partition, the offset to seek each input topic to.

        ``assigned``: the (topic, partition) pairs this replica now consumes; ``earliest``:
        the first offset still in each of them (a snapshot older than that is expired).
        """
        if not partitions:
            return {}
        for partition in partitions:
            self.last_written.pop(partition, None)
        try:
            log = await self.topic.read(partitions)
        except Exception as error:
            self.counters.refused["unreadable"] += len(partitions)
            _log.error(
                "cannot read the state topic (%s): partitions %s start afresh",
                error,
                sorted(partitions),
            )
            return {}
        for partition, (snapshot_id, count) in log.heads().items():
            self._extra[partition] = chunk_keys(partition, snapshot_id, count)
        seek: dict[int, dict[str, int]] = {}
        for partition in sorted(partitions):
            try:
                snapshot = await asyncio.to_thread(log.snapshot, partition)
                if snapshot is None:
                    self.counters.fresh += 1
                    continue
                self._check(snapshot, topics, assigned, earliest)
                self._adopt(snapshot)
            except RefusedSnapshotError as refused:
                self.counters.refused[refused.reason] += 1
                _log.warning(
                    "partition %d: state snapshot refused (%s), starting afresh from the "
                    "committed offset",
                    partition,
                    refused,
                )
                continue
            self.counters.adopted += 1
            seek[partition] = dict(snapshot.offsets)
            self.last_written[partition] = dict(snapshot.offsets)
            _log.info(
                "partition %d: adopted the state written by %s, resuming at %s",
                partition,
                snapshot.writer or "?",
                snapshot.offsets,
            )
        return seek

    def _adopt(self, snapshot: PartitionSnapshot) -> None:
        if not isinstance(snapshot.state.get("config"), Mapping):
            raise RefusedSnapshotError("corrupt", "the state names no configuration")
        try:
            self.states.adopt_partition(snapshot.state)
        except PartitionConfigError as error:  # raised before anything changed
            detail = f"kept with another {', '.join(error.differs)}"
            raise RefusedSnapshotError("config", detail) from error
        except Exception as error:  # whatever a damaged state does, this partition restarts
            self.states.drop_partitions({snapshot.partition})
            raise RefusedSnapshotError("corrupt", repr(error)) from error

    @staticmethod
    def _check(
        snapshot: PartitionSnapshot,
        topics: Sequence[str],
        assigned: set[tuple[str, int]],
        earliest: Mapping[tuple[str, int], int],
    ) -> None:
        p = snapshot.partition
        if set(snapshot.offsets) != set(topics):
            raise RefusedSnapshotError("topics", f"taken over topics {sorted(snapshot.offsets)}")
        missing = [t for t in topics if (t, p) not in assigned]
        if missing:
            raise RefusedSnapshotError(
                "assignment", f"{missing} partition {p} is consumed elsewhere"
            )
        for topic, offset in snapshot.offsets.items():
            first = earliest.get((topic, p), 0)
            if offset < first:
                raise RefusedSnapshotError(
                    "expired", f"{topic}[{p}] starts at {first}, after the snapshot's {offset}"
                )
