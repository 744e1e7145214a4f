"""What the test helpers that run a server in a subprocess share: `with` starts and stops
it, and stopping terminates the process (SIGTERM, then SIGKILL after a grace period);
`stop_process` does the same to a process of asyncio's."""

from __future__ import annotations

import asyncio
import subprocess
from types import TracebackType
from typing import Self

__all__ = ["ServerProcess", "stop_process", "terminate"]


def terminate(proc: subprocess.Popen[bytes] | None, grace: float) -> None:
    """Stop `proc` if it still runs: SIGTERM, and SIGKILL if it has not exited in `grace` s."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def stop_process(proc: asyncio.subprocess.Process, grace: float) -> int:
    """`terminate` for an asyncio subprocess: SIGTERM if it still runs, SIGKILL if it has
    not exited in `grace` s; its exit status (negative: the signal that ended it)."""
    if proc.returncode is None:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), grace)
        except TimeoutError:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode


class ServerProcess:
    """A context manager over `start()` and `stop()`, which subclasses define."""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
