"""A real OpenTelemetry Collector (the otlp receiver, the contrib kafka exporter) in a
subprocess, for the end-to-end tests of trace topics.

The binary is built once from Go modules by ``scripts/otelcol.sh fetch`` (the Collector
Builder) and cached. `Collector` writes a configuration (an OTLP/HTTP receiver on a free
port of 127.0.0.1, the given kafka exporters and pipelines, no telemetry server of its
own), starts the process and returns once the Collector says it is ready; stopping sends
SIGTERM, on which the Collector flushes its exporters.
"""

from __future__ import annotations

import atexit
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.support.fetch import SCRIPTS, run_fetch
from tests.support.kafka_files import free_port, port_open
from tests.support.process import ServerProcess, terminate

__all__ = ["Collector", "CollectorError", "fetch_otelcol", "kafka_exporter"]

_SCRIPT = SCRIPTS / "otelcol.sh"
_READY = "Everything is ready"


class CollectorError(RuntimeError):
    """The Collector could not be built, configured or started."""


def fetch_otelcol(script: Path = _SCRIPT, timeout: float = 3600.0) -> Path:
    """The Collector binary, built once with ``otelcol.sh fetch`` (Go is needed for that).

    The script honours ``RAGSTREAM_OTELCOL_BIN`` and ``XDG_CACHE_HOME``; when the binary is
    cached it returns at once.
    """
    return run_fetch(script, CollectorError, timeout)


def kafka_exporter(
    brokers: str,
    topic: str,
    *,
    encoding: str = "otlp_proto",
    compression: str = "none",
    hasher: str | None = None,
    signal_header: bool = False,
    metrics_topic: str | None = None,
) -> dict[str, Any]:
    """Settings of one kafka exporter: traces keyed by trace id to `topic`.

    `hasher` sets ``record_partitioner: {sticky_key: {hasher: ...}}`` (None: the exporter's
    default); `metrics_topic` sends metrics too (with the same encoding).
    """
    settings: dict[str, Any] = {
        "brokers": [brokers],
        "traces": {"topic": topic, "encoding": encoding},
        "partition_traces_by_id": True,
        "producer": {"compression": compression},
        "signal_header": signal_header,
        # one attempt is enough on a local broker; a failure shows in the Collector's log
        "retry_on_failure": {"enabled": False},
        "sending_queue": {"enabled": False},
    }
    if hasher is not None:
        settings["record_partitioner"] = {"sticky_key": {"hasher": hasher}}
    if metrics_topic is not None:
        settings["metrics"] = {"topic": metrics_topic, "encoding": encoding}
    return settings


class Collector(ServerProcess):
    """``with Collector(binary, exporters, pipelines) as c: export to c.endpoint``.

    `exporters` maps an exporter id (``kafka/name``) to its settings; `pipelines` maps a
    signal (``traces``, ``metrics``) to the exporter ids it feeds from the otlp receiver.
    """

    def __init__(
        self,
        binary: Path,
        exporters: Mapping[str, Mapping[str, Any]],
        pipelines: Mapping[str, Sequence[str]],
        *,
        work_dir: Path | None = None,
        start_timeout: float = 60.0,
        stop_timeout: float = 15.0,
    ) -> None:
        self._binary = binary
        self._exporters = {name: dict(settings) for name, settings in exporters.items()}
        self._pipelines = {signal: list(names) for signal, names in pipelines.items()}
        self._dir = work_dir
        self._start_timeout = start_timeout
        self._stop_timeout = stop_timeout
        self._port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        """The OTLP/HTTP receiver's base URL (exporters append ``/v1/traces``, ...)."""
        if self._proc is None:
            raise CollectorError("the Collector is not running")
        return f"http://127.0.0.1:{self._port}"

    @property
    def log_path(self) -> Path:
        """The Collector's own log (stdout and stderr)."""
        if self._dir is None:
            raise CollectorError("the Collector has no work directory (not started)")
        return self._dir / "otelcol.log"

    def config(self) -> dict[str, Any]:
        """The configuration the Collector runs with."""
        return {
            "receivers": {"otlp": {"protocols": {"http": {"endpoint": f"127.0.0.1:{self._port}"}}}},
            "exporters": self._exporters,
            "service": {
                # no internal metrics server: its fixed port would collide between runs
                "telemetry": {"metrics": {"level": "none"}, "logs": {"level": "info"}},
                "pipelines": {
                    signal: {"receivers": ["otlp"], "exporters": names}
                    for signal, names in self._pipelines.items()
                },
            },
        }

    def start(self) -> None:
        """Write the configuration, start the Collector and wait until it is ready."""
        if self._proc is not None:
            raise CollectorError("the Collector is already started")
        if not self._binary.is_file():
            raise CollectorError(f"no Collector binary at {self._binary} (scripts/otelcol.sh)")
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="ragstream-otelcol-"))
        self._port = free_port()
        path = self._dir / "config.yaml"
        path.write_text(yaml.safe_dump(self.config(), sort_keys=False))
        with self.log_path.open("wb") as out:
            self._proc = subprocess.Popen(
                [str(self._binary), "--config", str(path)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        atexit.register(self.stop)
        deadline = time.monotonic() + self._start_timeout
        while not (_READY in self.log_tail(400) and port_open(self._port)):
            if self._proc.poll() is not None:
                log = self.log_tail()
                self._proc = None
                raise CollectorError(f"the Collector exited during start:\n{log}")
            if time.monotonic() > deadline:
                log = self.log_tail()
                self.stop()
                raise CollectorError(
                    f"the Collector was not ready in {self._start_timeout} s:\n{log}"
                )
            time.sleep(0.05)

    def stop(self) -> None:
        """SIGTERM (the Collector flushes its exporters), SIGKILL after ``stop_timeout``."""
        atexit.unregister(self.stop)
        proc, self._proc = self._proc, None
        terminate(proc, self._stop_timeout)

    def log_tail(self, lines: int = 60) -> str:
        """The last lines of the Collector's log."""
        if self._dir is None or not self.log_path.is_file():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
