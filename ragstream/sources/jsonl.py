"""A JSONL file read as messages: one event per line, line numbers as offsets.

A blank line -- nothing but JSON's blanks (spaces, tabs, a carriage return) -- is not a
message: files end with one, and people separate groups of lines with them. It is skipped
and counted (`LineCounts.blank`), so that the lines read always add up. Any other line is a
message, whatever it holds: a line of other white space (a form feed, a no-break space) or
a byte order mark goes to the decoder, which counts it as invalid (`bad_json`).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ragstream.events import Message

__all__ = ["LineCounts", "read_jsonl"]

_BLANKS = b" \t\r"


@dataclass(slots=True)
class LineCounts:
    """What a reader has read so far: `lines = messages + blank`."""

    lines: int = 0
    """Lines read."""
    blank: int = 0
    """Blank lines skipped (not messages)."""
    bytes: int = 0
    """Bytes read: where the next line starts."""


class _Digest(Protocol):
    def update(self, data: bytes, /) -> None: ...


def read_jsonl(
    path: Path,
    batch_size: int,
    counts: LineCounts | None = None,
    digest: _Digest | None = None,
) -> Generator[list[Message], None, None]:
    """Batches of the file's lines but the blank ones; `offset` is the 1-based line number.
    `counts`, when given, is updated as the lines are read; when it is not at the start,
    reading starts where it says (`bytes`, line `lines + 1`: a resumed replay). `digest`,
    when given, is updated with every byte read (a hashlib object)."""
    counts = LineCounts() if counts is None else counts
    batch: list[Message] = []
    with path.open("rb") as handle:
        handle.seek(counts.bytes)
        for number, line in enumerate(handle, start=counts.lines + 1):
            counts.lines += 1
            counts.bytes += len(line)
            if digest is not None:
                digest.update(line)
            body = line.rstrip(b"\r\n")
            if not body.strip(_BLANKS):
                counts.blank += 1
                continue
            batch.append(Message(body, partition=0, offset=number, topic=path.name))
            if len(batch) >= batch_size:
                yield batch
                batch = []
    if batch:
        yield batch
