"""A `ragstream ...` command in a subprocess on a free port of 127.0.0.1, for tests and scripts
that need a real agent serving /metrics (a demo, or `run` on a real broker)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from tests.support.kafka_files import free_port

__all__ = ["AgentProcess", "AgentProcessError"]


class AgentProcessError(RuntimeError):
    """The agent exited or did not answer /healthz in time."""


class AgentProcess:
    """`with AgentProcess(["demo", "--rate", "30"], log) as agent: agent.url`.

    `--port` is added (a free port); the process is terminated on exit (SIGTERM, then
    SIGKILL after 30 s).
    """

    def __init__(
        self,
        args: Sequence[str],
        log: Path,
        *,
        env: Mapping[str, str] | None = None,
        start_timeout: float = 60.0,
    ) -> None:
        self.args = list(args)
        self.log = log
        self.env = dict(env or {})
        self.start_timeout = start_timeout
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def target(self) -> str:
        """`127.0.0.1:PORT`, as a Prometheus scrape target and its `instance` label."""
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        with self.log.open("wb") as out:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "ragstream", *self.args, "--port", str(self.port)],
                env={**os.environ, **self.env},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self._proc.poll() is not None:
                raise AgentProcessError(
                    f"the agent exited ({self._proc.returncode}); see {self.log}"
                )
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=1) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AgentProcessError(f"no /healthz in {self.start_timeout} s; see {self.log}")
            time.sleep(0.2)

    def get(self, path: str, timeout: float = 10.0) -> tuple[int, str]:
        """(status, body) of a GET of `path`."""
        try:
            with urllib.request.urlopen(self.url + path, timeout=timeout) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def metrics(self) -> str:
        """The agent's /metrics text."""
        status, body = self.get("/metrics")
        if status != 200:
            raise AgentProcessError(f"/metrics answered {status}")
        return body

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

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
