"""A replay's checkpoint in a local directory: the engine's state and where in the input it
stands, written atomically, so that a replay killed at any moment resumes where the last
checkpoint left it and ends with the output of a replay that was never stopped.

One file, ``<dir>/replay.ckpt``: zlib-compressed JSON (msgspec, as the state topic's
records) of the format version, the input position (bytes and lines read, blank lines, and
the SHA-256 of every byte before the position), the settings the output depends on, the
size of the per-query output at that moment, and the engine's whole state
(`Engine.snapshot`). It is written to a temporary file, fsynced, renamed over the last one
and the directory fsynced: a reader finds the previous checkpoint or the new one, never a
part of one.

A checkpoint is used only for the input it was taken of (the same bytes up to its position:
the file may have grown since) and with the same settings; anything else is a
`CheckpointMismatchError` that says what differs. A checkpoint that cannot be read is a
`CheckpointError`. Nothing here decides when to checkpoint (`ragstream.cli._replay_checkpoint`
does).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from ragstream.checkpoint.record import RefusedSnapshotError, pack, unpack

__all__ = [
    "FORMAT",
    "CheckpointError",
    "CheckpointMismatchError",
    "InputPosition",
    "ReplayCheckpoint",
    "checkpoint_path",
    "decode",
    "differing",
    "encode",
    "prefix_sha256",
    "read_checkpoint",
    "write_checkpoint",
]

FORMAT = 1
"""Version of the file's layout; another one is refused, never guessed at."""
_NAME = "replay.ckpt"
_CHUNK = 1 << 20


class CheckpointError(ValueError):
    """A checkpoint file that cannot be used (damaged, another format)."""


class CheckpointMismatchError(CheckpointError):
    """A checkpoint of another input or taken with other settings."""


@dataclass(frozen=True, slots=True)
class InputPosition:
    """How far into its input a checkpoint stands: everything before is applied."""

    name: str
    """The input file's name (for messages; the content is what is checked)."""
    bytes: int
    """Bytes read: the next line starts here."""
    lines: int
    """Lines read (blank ones included): the next line's number is `lines + 1`."""
    blank: int
    """Blank lines skipped among them."""
    sha256: str
    """SHA-256 (hex) of the input's first `bytes` bytes."""


@dataclass(frozen=True, slots=True)
class ReplayCheckpoint:
    """Everything a replay needs to go on from where it stood."""

    input: InputPosition
    settings: Mapping[str, Any]
    """What the output depends on besides the input (see `differing`)."""
    per_query_bytes: int | None
    """Size of the per-query output when the checkpoint was taken (None: not written)."""
    state: Mapping[str, Any]
    """The engine's state (`Engine.snapshot`)."""
    done: bool = False
    """True when taken at the end of the input (before the last open queries were
    finalized): a replay resumed from it reads nothing and prints the same summary."""


def encode(checkpoint: ReplayCheckpoint) -> bytes:
    payload = {
        "format": FORMAT,
        "input": checkpoint.input,  # msgspec encodes the dataclass's fields in order
        "settings": checkpoint.settings,
        "per_query_bytes": checkpoint.per_query_bytes,
        "done": checkpoint.done,
        "state": checkpoint.state,
    }
    return pack(payload)


def decode(data: bytes, where: str = "the checkpoint") -> ReplayCheckpoint:
    """The checkpoint of `encode`; raises `CheckpointError` for anything else."""
    try:
        payload = unpack(data, FORMAT)
    except RefusedSnapshotError as error:
        verb = "has" if error.reason == "format" else "is damaged:"
        raise CheckpointError(f"{where} {verb} {error.detail}") from None
    try:
        return ReplayCheckpoint(
            input=msgspec.convert(payload["input"], InputPosition),
            settings=dict(payload["settings"]),
            per_query_bytes=None
            if payload["per_query_bytes"] is None
            else int(payload["per_query_bytes"]),
            state=dict(payload["state"]),
            done=bool(payload["done"]),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"{where} is damaged: {error!r} missing or wrong") from None


def checkpoint_path(directory: Path) -> Path:
    return directory / _NAME


def write_checkpoint(directory: Path, checkpoint: ReplayCheckpoint) -> int:
    """Replace the directory's checkpoint atomically (temp file, fsync, rename, fsync of the
    directory); creates the directory. Returns the bytes written."""
    directory.mkdir(parents=True, exist_ok=True)
    data = encode(checkpoint)
    final = checkpoint_path(directory)
    temp = final.with_name(final.name + ".tmp")
    with temp.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, final)
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return len(data)


def read_checkpoint(directory: Path) -> ReplayCheckpoint | None:
    """The directory's checkpoint, None when there is none (a leftover temporary file of a
    write that was cut short is ignored)."""
    path = checkpoint_path(directory)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return decode(data, str(path))


def prefix_sha256(path: Path, size: int) -> tuple[Any, int]:
    """A SHA-256 hashlib object fed the file's first `size` bytes, and how many it had."""
    digest = hashlib.sha256()
    read = 0
    with path.open("rb") as handle:
        while read < size:
            chunk = handle.read(min(_CHUNK, size - read))
            if not chunk:
                break
            digest.update(chunk)
            read += len(chunk)
    return digest, read


def differing(saved: Mapping[str, Any], ours: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The dotted names of the settings that differ between two `settings` mappings."""
    out: list[str] = []
    for key in sorted(set(saved) | set(ours)):
        a, b = saved.get(key), ours.get(key)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out += differing(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(prefix + key)
    return out
