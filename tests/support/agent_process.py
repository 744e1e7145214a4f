"""A `ragstream ...` command in a subprocess on a free port of 127.0.0.1, for tests and scripts
that need a real agent serving /metrics (a demo, or `run` on a real broker)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from tests.support.kafka_files import free_port
from tests.support.process import ServerProcess, terminate

__all__ = ["AgentProcess", "AgentProcessError", "running_agent", "wait_ready"]


class AgentProcessError(RuntimeError):
    """The agent exited or did not answer /healthz in time."""


class AgentProcess(ServerProcess):
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
                self.stop()  # not left running: `with` does not call __exit__ on this
                raise AgentProcessError(f"no /healthz in {self.start_timeout} s; see {self.log}")
            time.sleep(0.2)

    @property
    def running(self) -> bool:
        """True while the agent process is alive."""
        return self._proc is not None and self._proc.poll() is None

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
        terminate(proc, 30)

    def kill(self) -> None:
        """SIGKILL the agent (a crash: no commit, no snapshot, no flush) and reap it."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait()


def wait_ready(agents: Sequence[AgentProcess], within: float = 90.0) -> None:
    """Wait until every agent's /readyz answers 200 (on a broker: each owns its partitions)."""
    deadline = time.monotonic() + within
    while True:
        statuses = [agent.get("/readyz")[0] for agent in agents]
        if statuses == [200] * len(agents):
            return
        if time.monotonic() > deadline:
            raise AgentProcessError(f"readiness after {within} s: {statuses}")
        time.sleep(0.5)


@asynccontextmanager
async def running_agent(
    args: Sequence[str], log: Path, env: Mapping[str, str] | None = None
) -> AsyncIterator[AgentProcess]:
    """`async with running_agent([...], log) as agent:` an AgentProcess for async tests,
    started (until /healthz answers) and stopped off the event loop."""
    agent = AgentProcess(args, log, env=env)
    await asyncio.to_thread(agent.start)
    try:
        yield agent
    finally:
        await asyncio.to_thread(agent.stop)
