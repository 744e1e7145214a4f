"""`replay --checkpoint-dir`: when to checkpoint, and how a replay resumes from one.

The checkpoint itself is `ragstream.checkpoint.local`. This writes one after the batch that
reaches `--checkpoint-every` lines and at the end, and on resume restores the engine, the
line counts and the input's digest and cuts the per-query output back to its size then.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

import click
import msgspec

from ragstream.checkpoint.local import (
    CheckpointMismatchError,
    InputPosition,
    ReplayCheckpoint,
    differing,
    prefix_sha256,
    read_checkpoint,
    write_checkpoint,
)
from ragstream.pipeline.engine import Engine, EngineConfig
from ragstream.pipeline.partitions import SideState
from ragstream.sources.jsonl import LineCounts

__all__ = ["ReplayKeeper", "replay_settings"]


def replay_settings(
    config: EngineConfig,
    batch_size: int,
    input_format: str,
    per_query: bool,
    judge: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What a replay's output depends on besides its input: the engine's configuration
    (the input format in place of the topic formats, which name the file), the batch size
    (the event clock moves per batch), whether per-query lines are written, and the
    judge's settings (None: no judging)."""
    engine = msgspec.json.decode(msgspec.json.encode(config))  # as it reads back
    engine.pop("formats", None)
    return {
        "engine": engine,
        "batch_size": batch_size,
        "input_format": input_format,
        "per_query": per_query,
        "judge": None if judge is None else dict(judge),
    }


class ReplayKeeper:
    """The checkpoints of one replay of `file` in `directory` (None: no checkpoints)."""

    def __init__(
        self, directory: Path | None, file: Path, settings: dict[str, Any], every: int
    ) -> None:
        self.directory = directory
        self.file = file
        self.settings = settings
        self.every = every
        self.digest: Any = None if directory is None else hashlib.sha256()
        """Fed every byte of the input read so far (`read_jsonl` updates it)."""
        self._saved: ReplayCheckpoint | None = None
        self._last_lines = 0

    def resume(
        self, config: EngineConfig, sides: Mapping[str, SideState] | None = None
    ) -> tuple[Engine, LineCounts]:
        """The engine and line counts to go on from: the checkpoint's, or new ones when the
        directory holds none, with ``sides`` attached (`Engine.attach`). Raises
        `CheckpointError` (a mismatch says what differs)."""
        saved = None if self.directory is None else read_checkpoint(self.directory)
        if saved is None:
            engine = Engine(config)
            for name, side in (sides or {}).items():
                engine.attach(name, side)
            return engine, LineCounts()
        where = f"the checkpoint in {self.directory}"
        names = differing(saved.settings, self.settings)
        if names:
            raise CheckpointMismatchError(
                f"{where} was taken with other settings ({', '.join(names)} differ); "
                "replay with those, or use another --checkpoint-dir"
            )
        position = saved.input
        digest, read = prefix_sha256(self.file, position.bytes)
        if read < position.bytes or digest.hexdigest() != position.sha256:
            how = (
                f"is shorter ({read} bytes)" if read < position.bytes else "differs in those bytes"
            )
            raise CheckpointMismatchError(
                f"{where} is of another input: it covers the first {position.bytes} bytes "
                f"({position.lines} lines) of {position.name}, and {self.file} {how}; "
                "use another --checkpoint-dir for another input"
            )
        try:
            engine = Engine.restore(config, saved.state, sides=sides)
        except (KeyError, TypeError, ValueError) as error:
            raise CheckpointMismatchError(
                f"{where} holds a state this engine cannot take: {error}; "
                "remove it or use another --checkpoint-dir to start afresh"
            ) from None
        self.digest = digest
        self._saved = saved
        self._last_lines = position.lines
        click.echo(f"{self.file}: resuming after line {position.lines} from {where}", err=True)
        return engine, LineCounts(position.lines, position.blank, position.bytes)

    def open_output(self, path: Path) -> TextIO:
        """The per-query output: new, or, when resuming, cut back to its size at the
        checkpoint and appended to."""
        saved = None if self._saved is None else self._saved.per_query_bytes
        if saved is None:
            return path.open("w", encoding="utf-8")
        size = path.stat().st_size if path.is_file() else -1
        if size < saved:
            raise CheckpointMismatchError(
                f"{path} has {max(size, 0)} bytes, fewer than the {saved} the checkpoint in "
                f"{self.directory} was taken with: it is not that replay's per-query output"
            )
        os.truncate(path, saved)
        return path.open("a", encoding="utf-8")

    def after_batch(self, engine: Engine, lines: LineCounts, out: TextIO | None) -> None:
        """Checkpoint when `every` lines were read since the last checkpoint."""
        if self.directory is not None and lines.lines - self._last_lines >= self.every:
            self.save(engine, lines, out)

    def save(
        self, engine: Engine, lines: LineCounts, out: TextIO | None, *, done: bool = False
    ) -> None:
        """Write a checkpoint of the engine as it stands after `lines` (the per-query output
        is made durable first: the checkpoint names its size); none without a directory."""
        if self.directory is None:
            return
        size = None
        if out is not None:
            out.flush()
            os.fsync(out.fileno())
            size = out.tell()
        position = InputPosition(
            self.file.name, lines.bytes, lines.lines, lines.blank, self.digest.hexdigest()
        )
        checkpoint = ReplayCheckpoint(position, self.settings, size, engine.snapshot(), done)
        write_checkpoint(self.directory, checkpoint)
        self._last_lines = lines.lines
