"""What the test helpers that run a server in a subprocess share: `with` starts and stops
it, and stopping terminates the process (SIGTERM, then SIGKILL after a grace period)."""

from __future__ import annotations

import subprocess
from types import TracebackType
from typing import Self

__all__ = ["ServerProcess", "terminate"]


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
