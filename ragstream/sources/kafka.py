"""Kafka as a source: aiokafka `getmany` batches, manual commits, partition hand-over.

At least once: offsets are committed only after the engine applied their batch (`commit`),
at most every `commit_interval` seconds, and all at once on a rebalance and on `stop()`.
With a partition state store (`PartitionStateStore`, e.g. `ragstream.checkpoint.Handover`)
revoked partitions' state is saved before `on_revoked` drops it, assigned partitions adopt
their latest snapshot and are sought to the offset it covers, and snapshots are taken
whenever the store says one is due, so a crashed replica's partitions move with a bounded
replay.

The source knows, per owned partition, the offset after the last message it handed out;
the caller applies a batch before it awaits anything (the `Runner` does), so that is also
what the engine's state covers. A record batch that cannot be read (`kafka_batches.py`)
is skipped into the batch's `rejected` list as `bad_batch`, and consumption goes on after
it. The range assignor gives a replica the same partition numbers of every co-partitioned
topic (round robin is the fallback while older replicas are in the group).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.errors import (
    KafkaConnectionError,
    KafkaError,
)
from tenacity import AsyncRetrying, retry_if_exception_type, stop_never, wait_random_exponential

from ragstream.events import DecodeError, Message, Record
from ragstream.pipeline.runner import RateLimitedLog
from ragstream.sources.kafka_batches import (
    UndecodableBatch,
    missing_codecs,
    read_up_to,
    undecodable_batch,
)
from ragstream.sources.kafka_probe import refused

__all__ = [
    "CoPartitionError",
    "KafkaAuthError",
    "KafkaBatch",
    "KafkaSource",
    "KafkaSourceConfig",
    "KafkaUnreachableError",
    "PartitionStateStore",
    "next_offsets",
]

_log = logging.getLogger(__name__)


class CoPartitionError(RuntimeError):
    """Several topics carry one query's events but do not have the same partition count."""


class KafkaAuthError(RuntimeError):
    """The brokers refused this client's TLS or SASL credentials: retrying cannot help."""


class KafkaUnreachableError(RuntimeError):
    """The brokers did not answer a request in time (an outage; the client keeps trying)."""


@dataclass(frozen=True, slots=True)
class KafkaSourceConfig:
    """Connection and consumption settings, built from `KafkaSettings` at the edge (the
    settings hold the defaults and say what each one means)."""

    bootstrap_servers: str
    topics: tuple[str, ...]
    group_id: str
    client_id: str
    auto_offset_reset: str
    max_batch: int
    fetch_partition_bytes: int
    """Kafka's `max.partition.fetch.bytes`: large enough to fill a `getmany` of `max_batch`."""
    poll_timeout: float
    retry_backoff_max: float
    commit_interval: float
    """Seconds between offset commits (0: after every batch); revoke and stop commit all."""
    request_timeout: float
    """Seconds an offset commit (then retried with the next) or a lag read may wait."""
    session_timeout: float
    """The group session (heartbeats every third of it); also the rebalance timeout."""
    client_options: Mapping[str, Any]
    """More keyword arguments for every aiokafka client: TLS and SASL (`security_protocol`,
    `ssl_context`, `sasl_mechanism`, ...)."""


class KafkaBatch(list[Record]):
    """One `getmany` batch, with the offset after its last message per topic-partition, so
    that committing it costs one entry per partition rather than one per message."""

    __slots__ = ("next_offsets", "rejected")

    def __init__(self) -> None:
        super().__init__()
        self.next_offsets: dict[TopicPartition, int] = {}
        self.rejected: list[tuple[Record, DecodeError]] = []
        """Record batches that could not be read, each as a `Message` without a value at
        the batch's first offset and the reason (`bad_batch`) that names its offsets."""


def next_offsets(batch: Sequence[Record]) -> dict[TopicPartition, int]:
    """The offset to commit per topic-partition: max(offset) + 1 over its messages of `batch`.

    A `KafkaBatch` knows it already; any other sequence is scanned (in any order)."""
    if isinstance(batch, KafkaBatch):
        return batch.next_offsets
    out: dict[TopicPartition, int] = {}
    for m in batch:
        tp = TopicPartition(m.topic, m.partition)
        if m.offset >= out.get(tp, -1):
            out[tp] = m.offset + 1
    return out


Offsets = Mapping[str, int]
"""Per input topic: the next offset to consume."""


class PartitionStateStore(Protocol):
    """Where partitions' state goes when they leave and comes from when they arrive."""

    async def start(self) -> bool:
        """Connect; False when the store cannot be used (the source then goes on without
        it); connection errors raise and are retried."""
        ...

    async def stop(self) -> None: ...

    def checkpoint_due(self) -> bool:
        """True when the owned partitions' state should be saved now."""
        ...

    async def save(
        self, positions: Callable[[], Mapping[int, Offsets]], *, changed_only: bool = False
    ) -> int:
        """Save the state of every partition `positions()` names, with those offsets (taken
        at the instant of the export); returns how many were saved. Never raises."""
        ...

    async def load(
        self,
        partitions: set[int],
        topics: Sequence[str],
        assigned: set[tuple[str, int]],
        earliest: Mapping[tuple[str, int], int],
    ) -> dict[int, dict[str, int]]:
        """Adopt the saved state of newly assigned partitions; returns the offsets to seek
        each adopted partition's topics to. Never raises."""
        ...

    def covered(self) -> Mapping[int, Offsets]:
        """Per partition: the input offsets of its latest snapshot written or adopted here
        (what a restart would resume from)."""
        ...


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, source: KafkaSource) -> None:
        self._source = source

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        await self._source._revoked(revoked)

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        await self._source._assigned(assigned)


class KafkaSource:
    """Consumes the configured topics as one group member; see the module docstring."""

    def __init__(
        self,
        config: KafkaSourceConfig,
        *,
        on_revoked: Callable[[set[int]], None] | None = None,
        on_assigned: Callable[[set[int]], None] | None = None,
        state: PartitionStateStore | None = None,
    ) -> None:
        """``on_revoked`` drops the state of revoked partitions (after ``state`` saved
        it); ``state`` moves partitions' state between replicas (None: each starts
        afresh)."""
        self.config = config
        self._on_revoked = on_revoked
        self._on_assigned = on_assigned
        self.state = state
        self._owned: set[TopicPartition] = set()
        self._positions: dict[TopicPartition, int] = {}
        """Per owned partition: the offset after the last message handed out (or sought)."""
        self._uncommitted: set[TopicPartition] = set()
        """Owned partitions the broker said have no committed offset: asked once while
        owned (only this replica could commit one, and it has handed nothing out)."""
        self._consumer: AIOKafkaConsumer | None = None
        self._stopping = asyncio.Event()
        self._applied: dict[TopicPartition, int] = {}
        """Next offset to commit per partition: set by `commit`, flushed on revoke too."""
        self._committed: dict[TopicPartition, int] = {}
        """Per owned partition: the offset this replica last committed."""
        self._committed_at = time.monotonic()
        self.commits = 0
        """Offset commits sent to the broker (the batches applied may be many more)."""
        self._commit_log = RateLimitedLog(rate=1 / 30, burst=3)
        self.connected = False
        self.connect_attempts = 0
        self.unreachable: str | None = None
        """Why the last connection attempt failed (`Kafka at HOST:PORT unreachable (...)`),
        None once connected: the agent's `/readyz` says it while it retries."""

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect (retrying with jittered exponential backoff until stopped), check topics."""
        c = self.config
        async for attempt in AsyncRetrying(
            retry=retry_if_exception_type((KafkaConnectionError, KafkaError, OSError)),
            wait=wait_random_exponential(multiplier=0.2, max=c.retry_backoff_max),
            stop=stop_never,
            sleep=self._pause,
            reraise=True,
        ):
            with attempt:
                self.connect_attempts += 1
                if self._stopping.is_set():
                    return
                try:
                    await self._check_copartitioned()
                    await self._start_state()
                    await self._connect()
                except (KafkaError, OSError) as error:
                    if isinstance(error, KafkaConnectionError):
                        await self._refused()  # a wrong password is not retried, an outage is
                    self.unreachable = (
                        f"Kafka at {c.bootstrap_servers} unreachable"
                        f" ({type(error).__name__}: {error})"
                    )
                    _log.warning("%s; retrying", self.unreachable)
                    raise
                self.unreachable = None

    async def _refused(self) -> None:
        """Raise `KafkaAuthError` when the first bootstrap server refuses this client's
        credentials or certificate; return when it cannot be reached for another reason
        (aiokafka reports both as an unreachable cluster)."""
        host, _, port = self.config.bootstrap_servers.split(",")[0].strip().rpartition(":")
        refusal = await refused(host, int(port), self.config.client_options)
        if refusal is not None:
            raise KafkaAuthError(refusal)

    async def _pause(self, seconds: float) -> None:
        """Wait between connection attempts, but no longer once `stop()` is called."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)

    async def _start_state(self) -> None:
        """Start the partition state store; without a usable one, go on without it."""
        if self.state is None:
            return
        if not await self.state.start():
            _log.error("partitions will start afresh after a rebalance")
            await self.state.stop()
            self.state = None

    async def _connect(self) -> None:
        c = self.config
        consumer = AIOKafkaConsumer(
            bootstrap_servers=c.bootstrap_servers,
            group_id=c.group_id,
            client_id=c.client_id,
            enable_auto_commit=False,
            auto_offset_reset=c.auto_offset_reset,
            max_poll_records=c.max_batch,
            max_partition_fetch_bytes=c.fetch_partition_bytes,
            session_timeout_ms=int(c.session_timeout * 1000),
            heartbeat_interval_ms=max(100, int(c.session_timeout * 1000 / 3)),
            partition_assignment_strategy=(RangePartitionAssignor, RoundRobinPartitionAssignor),
            **c.client_options,
        )
        try:
            await consumer.start()
        except Exception:
            await consumer.stop()
            raise
        missing = missing_codecs()
        if missing:
            _log.error(
                "aiokafka cannot read %s-compressed batches here (they will be skipped as"
                " bad_batch): install ragstream with its dependencies (aiokafka[lz4,snappy,zstd])",
                "/".join(missing),
            )
        consumer.subscribe(list(c.topics), listener=_Listener(self))
        self._consumer = consumer
        self.connected = True

    async def _check_copartitioned(self) -> None:
        """Every topic must exist, and all must have the same number of partitions."""
        c = self.config
        admin = AIOKafkaAdminClient(
            bootstrap_servers=c.bootstrap_servers,
            client_id=c.client_id,
            **c.client_options,
        )
        await admin.start()
        try:
            described = await admin.describe_topics(list(c.topics))
        finally:
            await admin.close()
        counts: dict[str, int] = {}
        for topic in described:
            name, partitions = topic["topic"], topic.get("partitions") or []
            if topic.get("error_code", 0) or not partitions:
                raise CoPartitionError(f"topic {name!r} does not exist (or has no partitions)")
            counts[name] = len(partitions)
        if len(set(counts.values())) > 1:
            listing = ", ".join(f"{t} has {n}" for t, n in counts.items())
            raise CoPartitionError(
                "the topics are not co-partitioned (the events of one query must land on the "
                f"same partition number in every topic): {listing} partitions"
            )

    async def stop(self) -> None:
        """Stop consuming, commit what was applied, write the partitions' state, leave the
        group."""
        self._stopping.set()
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            try:
                await self._save(consumer, set(self._owned))
                await self._flush(consumer)
            finally:
                self._owned.clear()
                self._uncommitted.clear()
                await consumer.stop()
        if self.state is not None:
            await self.state.stop()

    async def abort(self) -> None:
        """Leave as a crashed process would: no commit, no snapshot (the group is left at
        once, rather than after the session timeout)."""
        self._stopping.set()
        consumer, self._consumer = self._consumer, None
        self._owned.clear()
        self._uncommitted.clear()
        try:
            if consumer is not None:
                await consumer.stop()
        finally:
            if self.state is not None:
                await self.state.stop()

    # -- consumption ---------------------------------------------------------------------------

    async def batches(self) -> AsyncIterator[Sequence[Record]]:
        """Batches from `getmany`, partition after partition, until `stop()`.

        A poll that times out yields an empty batch, so that the caller's clock-driven work
        (finalizing queries, stopping) goes on while the topics are quiet.
        """
        consumer = self._consumer
        if consumer is None:
            raise RuntimeError("the Kafka source is not started")
        timeout_ms = int(self.config.poll_timeout * 1000)
        while not self._stopping.is_set():
            if self.state is not None and self.state.checkpoint_due():
                await self._save(consumer, set(self._owned), changed_only=True)
            unknown = self._owned - self._positions.keys()
            if unknown:
                await self._note_positions(consumer, unknown, self.config.poll_timeout)
            data, skipped = await self._poll(consumer, timeout_ms)
            batch = KafkaBatch()
            for tp, records in data.items():
                if tp not in self._owned or not records:
                    continue  # revoked meanwhile: its new owner reads these
                # aiokafka hands out one list per partition, in increasing offset order
                end = records[-1].offset + 1
                self._positions[tp] = batch.next_offsets[tp] = end
                batch.extend(records)  # as they come: they are `Record`s
            if skipped is not None:
                self._reject(batch, skipped)
            yield batch

    async def _poll(
        self, consumer: AIOKafkaConsumer, timeout_ms: int
    ) -> tuple[Mapping[TopicPartition, list[Any]], UndecodableBatch | None]:
        """`getmany`, or, when it meets a record batch it cannot read, the readable records
        of that partition before the batch, and the batch (consumption resumes after it)."""
        try:
            data = await consumer.getmany(timeout_ms=timeout_ms, max_records=self.config.max_batch)
        except Exception as error:
            bad = undecodable_batch(error)
            if bad is None:
                raise
        else:
            return data, None
        # the records `getmany` had taken from other partitions went with the error
        await self._rewind(consumer, set(self._owned) - {bad.tp})
        before, reached = await read_up_to(consumer, bad, timeout_ms)
        data = {bad.tp: before} if before else {}
        if not reached:  # the next poll reads on and meets the batch again
            return data, None
        with contextlib.suppress(KafkaError):  # revoked meanwhile: the new owner meets it
            consumer.seek(bad.tp, bad.next_offset)
        return data, bad

    async def _rewind(self, consumer: AIOKafkaConsumer, tps: set[TopicPartition]) -> None:
        """Seek each of `tps` back to the offset after the last message handed out, where
        the consumer has moved past it."""
        for tp in tps:
            ours = self._positions.get(tp)
            if ours is None:
                continue
            try:
                position = await asyncio.wait_for(consumer.position(tp), self.config.poll_timeout)
            except TimeoutError:  # no valid position: set it
                position = ours + 1
            except KafkaError:  # revoked meanwhile
                continue
            if position > ours:
                with contextlib.suppress(KafkaError):
                    consumer.seek(tp, ours)
        await self._positions_from_committed(consumer, tps, seek=True)

    async def _note_positions(
        self, consumer: AIOKafkaConsumer, tps: set[TopicPartition], within: float
    ) -> None:
        """Take the consumer's position of each of `tps` (partitions that have handed out
        nothing yet), so that `_rewind` knows where they stood."""
        for tp in tps:
            try:
                self._positions[tp] = await asyncio.wait_for(consumer.position(tp), within)
            except (KafkaError, TimeoutError):
                return  # not known yet: asked again at the next poll

    def _reject(self, batch: KafkaBatch, bad: UndecodableBatch) -> None:
        """Put `bad` into `batch` as rejected, and move past it."""
        tp = bad.tp
        marker = Message(b"", tp.partition, bad.first_offset, tp.topic)
        batch.rejected.append((marker, DecodeError("bad_batch", bad.describe())))
        if tp in self._owned:
            self._positions[tp] = batch.next_offsets[tp] = bad.next_offset

    async def checkpoint(self) -> int:
        """Write the state of every owned partition now; returns how many were written."""
        if self._consumer is None:
            return 0
        return await self._save(self._consumer, set(self._owned))

    async def commit(self, batch: Sequence[Record]) -> None:
        """Record `batch` as applied; commit what is applied once `commit_interval` seconds
        have passed since the last commit (an empty batch from a quiet poll flushes too)."""
        applied = self._applied
        for tp, offset in next_offsets(batch).items():
            if offset > applied.get(tp, -1):
                applied[tp] = offset
        if self._consumer is None or not applied:
            return
        if time.monotonic() - self._committed_at >= self.config.commit_interval:
            await self._flush(self._consumer)

    async def _flush(self, consumer: AIOKafkaConsumer) -> None:
        """Commit every applied offset of the assigned partitions now; with a state store,
        the offsets its snapshots cover instead (see `_covered_offsets`).

        Never raises: a commit the brokers refuse (the group rebalanced meanwhile) or do
        not answer within `request_timeout` (an outage) leaves the offsets pending for the
        next flush. While they are pending a crash replays a little more; the partitions'
        state checkpoints say where they stand, not the commits."""
        assigned = consumer.assignment()
        if self.state is not None:
            offsets = self._covered_offsets(assigned)
        else:
            offsets = {tp: off for tp, off in self._applied.items() if tp in assigned}
            self._applied = dict(offsets)
        self._committed_at = time.monotonic()
        if not offsets:
            return
        try:
            await asyncio.wait_for(consumer.commit(offsets), self.config.request_timeout)
        except (KafkaError, TimeoutError) as error:
            if self._commit_log.allow():
                _log.warning(
                    "could not commit offsets (%s); retrying with the next commit",
                    type(error).__name__ if isinstance(error, TimeoutError) else error,
                )
            return
        self.commits += 1
        self._committed.update(offsets)
        for tp, off in offsets.items():  # newer offsets applied meanwhile stay pending
            if self._applied.get(tp) == off:
                del self._applied[tp]
        if self.state is not None:
            self._applied.clear()

    def _covered_offsets(self, assigned: set[TopicPartition]) -> dict[TopicPartition, int]:
        """The offsets of the assigned partitions' latest snapshots, where they moved since
        the last commit. A committed offset never runs ahead of the state that covers it:
        a partition whose snapshot cannot be used resumes there with its counts from that
        snapshot's time lost, never from a later offset with more of them lost."""
        assert self.state is not None
        out: dict[TopicPartition, int] = {}
        for partition, offsets in self.state.covered().items():
            for topic, offset in offsets.items():
                tp = TopicPartition(topic, partition)
                if tp in assigned and self._committed.get(tp) != offset:
                    out[tp] = offset
        return out

    # -- rebalancing ---------------------------------------------------------------------------

    async def _revoked(self, revoked: set[TopicPartition]) -> None:
        owned = self._owned & revoked
        self._owned -= revoked
        if self._consumer is not None:
            await self._save(self._consumer, owned)
            try:
                await self._flush(self._consumer)
            except KafkaError:
                _log.warning("could not commit offsets of revoked partitions", exc_info=True)
        for tp in revoked:
            self._positions.pop(tp, None)
            self._committed.pop(tp, None)
        self._uncommitted -= revoked
        if self._on_revoked is not None and revoked:
            self._on_revoked({tp.partition for tp in revoked})

    async def _assigned(self, assigned: set[TopicPartition]) -> None:
        consumer = self._consumer
        if consumer is not None and assigned:
            # aiokafka may fetch while this callback runs: hold the partitions back until
            # their state is in place and they are positioned
            consumer.pause(*assigned)
            try:
                if self.state is None:
                    await self._note_positions(consumer, assigned, self.config.request_timeout)
                else:
                    await self._adopt(consumer, assigned)
            except Exception:  # never stall the partitions: they start afresh
                _log.exception("taking over %s failed", sorted(assigned))
            finally:
                consumer.resume(*assigned)
        self._owned |= assigned
        if self._on_assigned is not None and assigned:
            self._on_assigned({tp.partition for tp in assigned})

    # -- partition state -----------------------------------------------------------------------

    async def _save(
        self, consumer: AIOKafkaConsumer, owned: set[TopicPartition], *, changed_only: bool = False
    ) -> int:
        """Snapshot the partitions of ``owned`` whose position in every topic is known
        (``changed_only``: and has moved since their last snapshot)."""
        if self.state is None or not owned:
            return 0
        # nothing handed out since assignment: the committed offset is the position
        await self._positions_from_committed(consumer, owned, seek=False)
        topics = self.config.topics

        def positions() -> dict[int, dict[str, int]]:
            out: dict[int, dict[str, int]] = {}
            for p in sorted({tp.partition for tp in owned}):
                offsets = {t: self._positions.get(TopicPartition(t, p)) for t in topics}
                if all(o is not None for o in offsets.values()):
                    out[p] = {t: o for t, o in offsets.items() if o is not None}
                else:
                    _log.info("partition %d: no known position, its state is not saved", p)
            return out

        return await self.state.save(positions, changed_only=changed_only)

    async def _adopt(self, consumer: AIOKafkaConsumer, assigned: set[TopicPartition]) -> None:
        """Adopt the assigned partitions' snapshots and seek to the offsets they cover."""
        assert self.state is not None
        try:
            earliest = await consumer.beginning_offsets(list(assigned))
        except KafkaError:
            _log.warning("could not read the partitions' first offsets", exc_info=True)
            earliest = {}
        seek = await self.state.load(
            {tp.partition for tp in assigned},
            self.config.topics,
            {(tp.topic, tp.partition) for tp in assigned},
            {(tp.topic, tp.partition): int(o) for tp, o in earliest.items()},
        )
        for partition, offsets in seek.items():
            for topic, offset in offsets.items():
                tp = TopicPartition(topic, partition)
                consumer.seek(tp, offset)
                self._positions[tp] = offset
        # no snapshot: resume at the committed offset, or where the reset policy says
        await self._positions_from_committed(consumer, assigned, seek=True)
        fresh = {tp for tp in assigned if tp.partition not in seek}
        for tp in fresh - self._positions.keys():
            try:
                self._positions[tp] = await consumer.position(tp)
            except KafkaError:
                _log.warning("could not resolve the position of %s", tp, exc_info=True)
        # and a first snapshot of their (empty) state there at once: a crash before the
        # first periodic checkpoint then replays from here, and commits can move
        await self._save(consumer, fresh)

    async def _positions_from_committed(
        self, consumer: AIOKafkaConsumer, tps: set[TopicPartition], *, seek: bool
    ) -> None:
        """Take the committed offset as the position of each of `tps` that has none yet
        (and `seek` there); partitions without a committed offset, or whose offset the
        broker cannot give now, stay without a position (the first are not asked again
        while owned)."""
        for tp in tps - self._positions.keys() - self._uncommitted:
            try:
                committed = await consumer.committed(tp)
            except KafkaError:
                continue
            if committed is None:
                self._uncommitted.add(tp)
            elif tp not in self._positions:
                if seek:
                    consumer.seek(tp, committed)
                self._positions[tp] = committed

    # -- introspection -------------------------------------------------------------------------

    def assignment(self) -> set[TopicPartition]:
        return set() if self._consumer is None else set(self._consumer.assignment())

    async def lag(self) -> dict[tuple[str, int], int]:
        """Messages behind the end of each assigned partition, asked of the brokers.

        Raises `KafkaUnreachableError` when they do not answer within `request_timeout`."""
        consumer = self._consumer
        if consumer is None:
            return {}
        assigned = list(consumer.assignment())
        if not assigned:
            return {}
        try:
            return await asyncio.wait_for(
                self._behind(consumer, assigned), self.config.request_timeout
            )
        except (KafkaError, OSError, TimeoutError) as error:
            what = f"no answer within {self.config.request_timeout:g} s"
            if not isinstance(error, TimeoutError):
                what = f"{type(error).__name__}: {error}"
            raise KafkaUnreachableError(
                f"Kafka at {self.config.bootstrap_servers} unreachable ({what})"
            ) from None

    @staticmethod
    async def _behind(
        consumer: AIOKafkaConsumer, assigned: list[TopicPartition]
    ) -> dict[tuple[str, int], int]:
        ends = await consumer.end_offsets(assigned)
        out: dict[tuple[str, int], int] = {}
        for tp in assigned:
            if tp not in consumer.assignment():  # revoked meanwhile
                continue
            position = await consumer.position(tp)
            out[(tp.topic, tp.partition)] = max(0, int(ends[tp]) - position)
        return out
