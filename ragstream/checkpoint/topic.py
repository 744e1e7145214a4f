"""The compacted Kafka topic that holds the partitions' state records.

`StateTopic` creates the topic when it is missing (``cleanup.policy=compact``, one
partition: it holds one live snapshot per input partition; segments of 64 MiB or an hour,
so that compaction keeps up with frequent checkpoints and a rebalance reads little more
than the live snapshots), writes snapshots with
``acks=all`` so that a written snapshot survives the writer, and reads the topic from the
beginning up to its end offsets, which a rebalance needs: every replica's revoke-time
snapshots are acknowledged before any replica is assigned partitions.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import for_code

from ragstream.checkpoint.record import Chunk, SnapshotLog

__all__ = ["TOPIC_CONFIG", "StateTopic", "StateTopicError"]

_log = logging.getLogger(__name__)
_TOPIC_EXISTS = 36
_UNKNOWN_TOPIC = 3
TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    "segment.bytes": str(64 * 1024 * 1024),
    "segment.ms": str(3_600_000),
    "min.cleanable.dirty.ratio": "0.1",
}
"""Settings of a state topic created by the agent."""


class StateTopicError(RuntimeError):
    """The state topic is missing and cannot be created, or cannot be read in time."""


class StateTopic:
    """Writes and reads state records; ``start()`` before use, ``stop()`` after."""

    def __init__(
        self,
        topic: str,
        *,
        bootstrap_servers: str,
        client_id: str,
        replication_factor: int | None,
        client_options: Mapping[str, Any] | None = None,
        read_timeout: float = 30.0,
    ) -> None:
        """``client_options``: aiokafka keyword arguments shared by every client (TLS,
        SASL); ``replication_factor``: for a topic created here (None: up to 3, as many as
        there are brokers)."""
        self.topic = topic
        self._bootstrap = bootstrap_servers
        self._client_id = client_id
        self._options = dict(client_options or {})
        self._replication = replication_factor
        self._read_timeout = read_timeout
        self._producer: AIOKafkaProducer | None = None
        self._reader: AIOKafkaConsumer | None = None
        self._partitions: list[int] = []
        self.created = False
        """True when this instance created the topic."""

    async def start(self) -> None:
        """Create the topic if it is missing, then start the producer and the reader."""
        if self._producer is not None:
            return
        await self._ensure()
        producer = AIOKafkaProducer(
            bootstrap_servers=self._bootstrap,
            client_id=f"{self._client_id}-state",
            acks="all",
            enable_idempotence=True,
            linger_ms=5,
            **self._options,
        )
        reader = AIOKafkaConsumer(
            bootstrap_servers=self._bootstrap,
            client_id=f"{self._client_id}-state",
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            **self._options,
        )
        await producer.start()
        try:
            await reader.start()
        except BaseException:
            await producer.stop()
            raise
        self._producer, self._reader = producer, reader

    async def stop(self) -> None:
        producer, self._producer = self._producer, None
        reader, self._reader = self._reader, None
        try:
            if producer is not None:
                await producer.stop()
        finally:
            if reader is not None:
                await reader.stop()

    async def _ensure(self) -> None:
        admin = AIOKafkaAdminClient(
            bootstrap_servers=self._bootstrap, client_id=self._client_id, **self._options
        )
        await admin.start()
        try:
            described = (await admin.describe_topics([self.topic]))[0]
            if described.get("error_code", 0) == _UNKNOWN_TOPIC or not described["partitions"]:
                await self._create(admin)
                described = (await admin.describe_topics([self.topic]))[0]
            self._partitions = sorted(p["partition"] for p in described["partitions"])
        finally:
            await admin.close()
        if not self._partitions:
            raise StateTopicError(f"the state topic {self.topic!r} has no partitions")

    async def _create(self, admin: AIOKafkaAdminClient) -> None:
        replication = self._replication
        if replication is None:
            replication = max(1, min(3, len((await admin.describe_cluster())["brokers"])))
        topic = NewTopic(self.topic, 1, replication, topic_configs=dict(TOPIC_CONFIG))
        response = await admin.create_topics([topic], timeout_ms=10_000)
        for name, code, *_ in response.topic_errors:
            if code not in (0, _TOPIC_EXISTS):
                raise StateTopicError(
                    f"cannot create the state topic {name!r} ({for_code(code).__name__}); "
                    "create it with cleanup.policy=compact, or set state.enabled=false"
                )
            self.created = code == 0
        _log.info("created the state topic %s (compacted)", self.topic)
        deadline = time.monotonic() + 10.0
        while not (await admin.describe_topics([self.topic]))[0]["partitions"]:
            if time.monotonic() > deadline:
                raise StateTopicError(f"the state topic {self.topic!r} has no leader after 10 s")
            await asyncio.sleep(0.05)

    # -- records -----------------------------------------------------------------------------

    async def write(
        self, snapshots: Sequence[Sequence[Chunk]], tombstones: Sequence[bytes]
    ) -> None:
        """Write snapshots (each: chunks, head last) and wait for every acknowledgement.

        Chunks first, then the heads, then tombstones for superseded chunks: a head is only
        written once the chunks it names are stored.
        """
        producer = self._require(self._producer)
        await self._send(producer, [c for chunks in snapshots for c in chunks[:-1]])
        await self._send(producer, [chunks[-1] for chunks in snapshots if chunks])
        await self._send(producer, [Chunk(key, None) for key in tombstones])

    async def _send(self, producer: AIOKafkaProducer, chunks: Sequence[Chunk]) -> None:
        futures = [
            await producer.send(
                self.topic, value=c.value, key=c.key, headers=list(c.headers) or None
            )
            for c in chunks
        ]
        if futures:
            await asyncio.gather(*futures)

    async def read(self, partitions: set[int]) -> SnapshotLog:
        """The topic from its beginning to its current end, kept for ``partitions``."""
        reader = self._require(self._reader)
        log = SnapshotLog(partitions)
        tps = [TopicPartition(self.topic, p) for p in self._partitions]
        reader.assign(tps)
        await reader.seek_to_beginning(*tps)
        ends = await reader.end_offsets(tps)
        deadline = time.monotonic() + self._read_timeout
        pending = {tp for tp in tps if ends[tp] > 0}
        while pending:
            if time.monotonic() > deadline:
                raise StateTopicError(f"could not read the state topic {self.topic!r} in time")
            batches = await reader.getmany(*pending, timeout_ms=200)
            for tp, records in batches.items():
                for r in records:
                    if r.offset < ends[tp]:
                        log.add(r.key, r.value, tuple(r.headers))
            for tp in list(pending):
                if await reader.position(tp) >= ends[tp]:
                    pending.discard(tp)
        return log

    @staticmethod
    def _require(client: Any) -> Any:
        if client is None:
            raise RuntimeError("the state topic is not started")
        return client
