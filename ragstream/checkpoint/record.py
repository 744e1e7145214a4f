"""State records: one partition's state as compressed, chunked Kafka records, and back.

A snapshot of input partition ``p`` is zlib-compressed JSON (written by msgspec; zlib
level 1, which compresses states of many open queries well at a fraction of the default
level's cost) of a :class:`PartitionSnapshot`
(format version, partition, the next input offset per topic, when it was taken, and the
engine's state of the partition). Compressed, it is cut into chunks of at most
``chunk_bytes``, so that no record exceeds Kafka's default 1 MB message size:

- the *head* record, key ``"<p>"``, carries chunk 0 and the headers
  ``ragstream.snapshot`` (a fresh id) and ``ragstream.chunks`` (their number ``n``);
- chunks ``1 .. n-1`` have keys ``"<p>/<id>/<i>"`` and are written (and acknowledged)
  before the head, so a head never names chunks that are not there.

In a compacted topic the latest head of each partition survives; chunks of superseded
snapshots are deleted with tombstones (records without a value) once the new head is
acknowledged. Pure: no Kafka here (see `ragstream.checkpoint.topic`).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

__all__ = [
    "FORMAT",
    "Chunk",
    "PartitionSnapshot",
    "RefusedSnapshotError",
    "SnapshotLog",
    "chunk_keys",
    "encode",
    "head_key",
    "pack",
    "unpack",
]

FORMAT = 1
"""Version of the record layout; another version is refused, never guessed at."""
_SNAPSHOT = "ragstream.snapshot"
_CHUNKS = "ragstream.chunks"
Headers = tuple[tuple[str, bytes], ...]


class RefusedSnapshotError(ValueError):
    """A snapshot that cannot be used; ``reason`` is a short counter label."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class PartitionSnapshot:
    """One input partition's state and where in the input it stands."""

    partition: int
    """The input partition number (the same in every co-partitioned topic)."""
    offsets: Mapping[str, int]
    """Per input topic: the next offset to consume; the state covers everything before."""
    state: Mapping[str, Any]
    """The engine's state of the partition (`Engine.export_partitions`)."""
    taken_at: float
    """Wall-clock time of the snapshot (Unix seconds), for logs."""
    writer: str = ""
    """The client id of the replica that wrote it, for logs."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """One record to produce: ``value`` None is a tombstone."""

    key: bytes
    value: bytes | None
    headers: Headers = ()


def head_key(partition: int) -> bytes:
    """The key of a partition's head record."""
    return str(partition).encode()


def chunk_keys(partition: int, snapshot_id: str, chunks: int) -> list[bytes]:
    """Keys of chunks ``1 .. chunks-1`` of one snapshot (chunk 0 rides in the head)."""
    return [f"{partition}/{snapshot_id}/{i}".encode() for i in range(1, chunks)]


def encode(snapshot: PartitionSnapshot, snapshot_id: str, chunk_bytes: int) -> list[Chunk]:
    """The records of one snapshot, head last; ``chunk_bytes`` bounds each value."""
    if chunk_bytes < 1:
        raise ValueError("chunk_bytes must be >= 1")
    payload = {
        "format": FORMAT,
        "partition": snapshot.partition,
        "offsets": dict(snapshot.offsets),
        "taken_at": snapshot.taken_at,
        "writer": snapshot.writer,
        "state": snapshot.state,
    }
    blob = pack(payload)
    pieces = [blob[i : i + chunk_bytes] for i in range(0, len(blob), chunk_bytes)] or [b""]
    keys = chunk_keys(snapshot.partition, snapshot_id, len(pieces))
    head = Chunk(
        head_key(snapshot.partition),
        pieces[0],
        ((_SNAPSHOT, snapshot_id.encode()), (_CHUNKS, str(len(pieces)).encode())),
    )
    return [*(Chunk(k, v) for k, v in zip(keys, pieces[1:], strict=True)), head]


class SnapshotLog:
    """Reads a state topic's records in log order and keeps, for the wanted partitions, the
    latest head and the chunks still alive; `snapshot(p)` assembles the latest one."""

    def __init__(self, partitions: set[int]) -> None:
        self._wanted = {head_key(p): p for p in partitions}
        self._prefixes = tuple(f"{p}/".encode() for p in partitions)
        self._heads: dict[int, tuple[bytes, Headers]] = {}
        self._chunks: dict[bytes, bytes] = {}

    def add(self, key: bytes | None, value: bytes | None, headers: Headers = ()) -> None:
        """One record, in log order (later records of a key replace earlier ones)."""
        if key is None:
            return
        partition = self._wanted.get(key)
        if partition is not None:
            if value is None:
                self._heads.pop(partition, None)
            else:
                self._heads[partition] = (value, tuple(headers))
        elif key.startswith(self._prefixes):
            if value is None:
                self._chunks.pop(key, None)
            else:
                self._chunks[key] = value

    def heads(self) -> dict[int, tuple[str, int]]:
        """Per partition with a readable head: its snapshot id and chunk count."""
        out = {}
        for partition, (_, headers) in self._heads.items():
            try:
                out[partition] = _meta(headers)
            except RefusedSnapshotError:
                continue
        return out

    def snapshot(self, partition: int) -> PartitionSnapshot | None:
        """The latest snapshot of ``partition``, or None when there is none; raises
        `RefusedSnapshotError` when there is one that cannot be read."""
        head = self._heads.get(partition)
        if head is None:
            return None
        value, headers = head
        snapshot_id, count = _meta(headers)
        pieces = [value]
        for key in chunk_keys(partition, snapshot_id, count):
            piece = self._chunks.get(key)
            if piece is None:
                raise RefusedSnapshotError("incomplete", f"chunk {key.decode()!r} is missing")
            pieces.append(piece)
        payload = unpack(b"".join(pieces), FORMAT)
        if not isinstance(payload.get("state"), dict):
            raise RefusedSnapshotError("corrupt", "the record holds no state object")
        try:
            return PartitionSnapshot(
                partition=int(payload["partition"]),
                offsets={str(t): int(o) for t, o in payload["offsets"].items()},
                state=payload["state"],
                taken_at=float(payload["taken_at"]),
                writer=str(payload.get("writer", "")),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise RefusedSnapshotError(
                "corrupt", f"missing or malformed field ({error!r})"
            ) from error


def pack(payload: Mapping[str, Any]) -> bytes:
    """zlib-compressed (level 1) JSON: the layout of state records and replay checkpoints."""
    return zlib.compress(msgspec.json.encode(payload), level=1)


def unpack(blob: bytes, fmt: int) -> dict[str, Any]:
    """The payload `pack` wrote with format ``fmt``; `RefusedSnapshotError` (``corrupt`` or
    ``format``) for anything else."""
    try:
        payload = msgspec.json.decode(zlib.decompress(blob))
    except (zlib.error, msgspec.DecodeError) as error:
        raise RefusedSnapshotError("corrupt", f"cannot decompress or parse it ({error})") from error
    if not isinstance(payload, dict) or payload.get("format") != fmt:
        found = payload.get("format") if isinstance(payload, dict) else None
        raise RefusedSnapshotError("format", f"format {found!r}, this version reads {fmt}")
    return payload


def _meta(headers: Headers) -> tuple[str, int]:
    """A head record's snapshot id and chunk count, from its headers."""
    meta = dict(headers)
    try:
        return meta[_SNAPSHOT].decode(), int(meta[_CHUNKS])
    except (KeyError, ValueError) as error:
        raise RefusedSnapshotError(
            "corrupt", f"the head record lacks its headers ({error})"
        ) from error
