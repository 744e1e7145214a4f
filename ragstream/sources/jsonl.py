"""A JSONL file as a source: one event per line, line numbers as offsets."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

from ragstream.events import Message

__all__ = ["JsonlSource", "read_jsonl"]


def read_jsonl(path: Path, batch_size: int = 5000) -> Iterator[list[Message]]:
    """Batches of the file's non-blank lines; `offset` is the 1-based line number."""
    batch: list[Message] = []
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            body = line.rstrip(b"\r\n")
            if not body.strip():
                continue
            batch.append(Message(body, partition=0, offset=number, topic=path.name))
            if len(batch) >= batch_size:
                yield batch
                batch = []
    if batch:
        yield batch


class JsonlSource:
    """Replays a JSONL file as one partition; `commit` records the last line applied."""

    def __init__(self, path: Path, batch_size: int = 5000) -> None:
        self.path = path
        self.batch_size = batch_size
        self.committed_line = 0
        self._stopped = False

    async def batches(self) -> AsyncIterator[Sequence[Message]]:
        for batch in read_jsonl(self.path, self.batch_size):
            if self._stopped:
                return
            yield batch

    async def commit(self, batch: Sequence[Message]) -> None:
        if batch:
            self.committed_line = batch[-1].offset

    async def stop(self) -> None:
        self._stopped = True
