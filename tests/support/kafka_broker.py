"""A real single-node Apache Kafka broker (KRaft) in a subprocess, for tests and benchmarks.

The broker runs from the Maven Central jars that ``scripts/kafka.sh fetch`` caches. It is
one JVM in combined broker+controller mode, listening on two free ports of 127.0.0.1, with
its config, data and log (``broker.log``) in a private work directory. The JVM runs in its
own process group and is stopped by :meth:`KafkaBroker.stop`, at interpreter exit, and, on
Linux, by the kernel when the starting process dies, so it never outlives its owner.
"""

import asyncio
import atexit
import concurrent.futures
import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, Protocol

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError, for_code

from tests.support.kafka_files import (
    KafkaBrokerError,
    cluster_id,
    free_port,
    log4j2_properties,
    port_open,
    server_properties,
)
from tests.support.kafka_security import (
    PROTOCOLS,
    TlsFiles,
    make_tls,
    scram_format_args,
    secure_config,
)
from tests.support.process import ServerProcess

__all__ = ["KafkaBroker", "KafkaBrokerError", "TopicFactory"]

# A small, quick-starting JVM: the broker's load in tests is tiny and CI machines are small.
_JVM_FLAGS = ("-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")


class TopicFactory(Protocol):
    """Creates a new, uniquely named topic and returns its name (the tests' fixture)."""

    async def __call__(self, partitions: int = 1) -> str: ...


class KafkaBroker(ServerProcess):
    """One Kafka broker process: ``with KafkaBroker(libs) as b: use(b.bootstrap_servers)``."""

    def __init__(
        self,
        libs_dir: Path,
        *,
        work_dir: Path | None = None,
        port: int | None = None,
        heap: str = "512m",
        java: str = "java",
        config: Mapping[str, str] | None = None,
        start_timeout: float = 60.0,
        stop_timeout: float = 15.0,
        secure: bool = False,
    ) -> None:
        """Describe a broker; nothing runs until :meth:`start`.

        ``port`` is the client port (a free one when None); ``config`` adds or overrides
        server.properties entries. A given ``work_dir`` is kept after stop; without one the
        broker uses a temporary directory, removed on stop (kept when the start fails, so
        that its logs can be read). ``secure`` adds TLS and SASL listeners
        (`tests.support.kafka_security`): see :meth:`address` and :attr:`tls`.

        With a given ``work_dir``, :meth:`start` after :meth:`stop` restarts the same
        broker: the same ports (client, controller, secure listeners) and the same data, as
        a broker that comes back after an outage.
        """
        self._libs_dir = libs_dir
        self._own_dir = work_dir is None
        self._dir = work_dir
        self._fixed_port = port
        self._port = 0
        self._controller_port = 0
        self._heap = heap
        self._java = java
        self._extra_config = dict(config or {})
        self._start_timeout = start_timeout
        self._stop_timeout = stop_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._secure = secure
        self._secured: dict[str, int] = {}
        self.tls: TlsFiles | None = None
        """The CA and keystore of a secure broker (None otherwise)."""

    @property
    def bootstrap_servers(self) -> str:
        """``127.0.0.1:<port>`` of the running broker's PLAINTEXT listener."""
        if self._proc is None:
            raise KafkaBrokerError("the broker is not running")
        return f"127.0.0.1:{self._port}"

    def address(self, protocol: str) -> str:
        """``127.0.0.1:<port>`` of the listener of a security protocol (``PLAINTEXT``, or
        ``SSL``, ``SASL_PLAINTEXT``, ``SASL_SSL`` on a secure broker)."""
        if protocol == "PLAINTEXT":
            return self.bootstrap_servers
        if protocol not in self._secured or self._proc is None:
            raise KafkaBrokerError(f"the broker has no running {protocol} listener")
        return f"127.0.0.1:{self._secured[protocol]}"

    @property
    def work_dir(self) -> Path:
        """Directory holding server.properties, data/ and broker.log."""
        if self._dir is None:
            raise KafkaBrokerError("the broker has no work directory (not started, or stopped)")
        return self._dir

    @property
    def log_path(self) -> Path:
        """The broker's own log file."""
        return self.work_dir / "broker.log"

    @property
    def running(self) -> bool:
        """True while the broker process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Format storage, start the JVM and block until the broker serves metadata."""
        if self._proc is not None:
            raise KafkaBrokerError("the broker is already started")
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="ragstream-kafka-"))
        if self._controller_port and (self.work_dir / "data" / "meta.properties").is_file():
            self._restart()
            return
        # A free port can be taken between our probe and the JVM's bind: then try new ones.
        attempts = 3 if self._fixed_port is None and self._own_dir else 1
        for attempt in range(attempts):
            self._port = self._fixed_port or free_port()
            self._controller_port = controller_port = free_port()
            if self._secure:
                self._secured = {name: free_port() for name in PROTOCOLS}
                if self.tls is None:
                    self.tls = make_tls(self.work_dir / "tls")
            self._write_config(controller_port)
            self._format()
            self._spawn()
            try:
                self._wait_ready()
                return
            except KafkaBrokerError:
                log = self.log_tail(200)
                self._kill()
                if "Address already in use" not in log or attempt == attempts - 1:
                    raise
                shutil.rmtree(self.work_dir / "data", ignore_errors=True)

    def _restart(self) -> None:
        """Start the stopped broker again on its ports, with its data (see __init__)."""
        self._write_config(self._controller_port)
        self._spawn()
        try:
            self._wait_ready()
        except KafkaBrokerError:
            self._kill()
            raise

    def stop(self) -> None:
        """SIGTERM the broker, SIGKILL it after ``stop_timeout``; remove a temporary work dir
        (a given one is kept, and :meth:`start` brings the same broker back)."""
        if self._proc is not None:
            self._kill()
        if self._own_dir and self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
            self._controller_port = 0

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of broker.log and of the JVM's own stdout/stderr."""
        parts: list[str] = []
        if self._dir is None:
            return ""
        for path in (self.log_path, self.work_dir / "stdout.log"):
            if path.is_file():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                parts.append(f"--- {path}\n" + "\n".join(text))
        return "\n".join(parts)

    async def create_topic(
        self, name: str, partitions: int = 1, *, config: Mapping[str, str] | None = None
    ) -> None:
        """Create a topic and wait until every partition has a leader."""
        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap_servers)
        await admin.start()
        try:
            topic = NewTopic(name, partitions, 1, topic_configs=dict(config or {}))
            response = await admin.create_topics([topic], timeout_ms=10_000)
            for entry in response.topic_errors:
                if entry[1] != 0:
                    raise KafkaBrokerError(f"creating topic {entry[0]!r}: {for_code(entry[1])}")
            deadline = time.monotonic() + 10.0
            while not _has_leaders(await admin.describe_topics([name]), partitions):
                if time.monotonic() > deadline:
                    raise KafkaBrokerError(f"topic {name!r} has no leaders after 10 s")
                await asyncio.sleep(0.05)
        finally:
            await admin.close()

    def _write_config(self, controller_port: int) -> None:
        data = self.work_dir / "data"
        extra = dict(self._extra_config)
        if self.tls is not None:
            extra = {**secure_config(self._secured, self.tls), **extra}
        props = server_properties(self._port, controller_port, data, extra, self._secured)
        (self.work_dir / "server.properties").write_text(props)
        (self.work_dir / "log4j2.properties").write_text(log4j2_properties(self.log_path))

    def _jvm(self, main_class: str, *args: str) -> list[str]:
        return [
            self._java,
            f"-Xmx{self._heap}",
            *_JVM_FLAGS,
            f"-Dlog4j2.configurationFile={self.work_dir / 'log4j2.properties'}",
            "-cp",
            f"{self._libs_dir}/*",
            main_class,
            *args,
        ]

    def _format(self) -> None:
        if (self.work_dir / "data" / "meta.properties").is_file():
            return
        props = str(self.work_dir / "server.properties")
        cmd = self._jvm("kafka.tools.StorageTool", "format", "-t", cluster_id(), "-c", props)
        if self._secure:
            cmd += scram_format_args()
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except FileNotFoundError as err:
            raise KafkaBrokerError(f"{self._java} not found: Kafka 4 needs Java 17+") from err
        if done.returncode != 0:
            raise KafkaBrokerError(f"storage format failed:\n{done.stdout}{done.stderr}")

    def _spawn(self) -> None:
        with (self.work_dir / "stdout.log").open("wb") as out:
            self._proc = subprocess.Popen(
                self._jvm("kafka.Kafka", str(self.work_dir / "server.properties")),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent() if _on_main_thread_linux() else None,
            )
        atexit.register(self._kill)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self._start_timeout
        while time.monotonic() < deadline:
            if not self.running:
                raise KafkaBrokerError(f"the broker exited during start:\n{self.log_tail()}")
            if port_open(self._port) and _run_isolated(_serves_metadata(self._bootstrap)):
                return
            time.sleep(0.1)
        raise KafkaBrokerError(
            f"the broker did not start within {self._start_timeout:.0f} s:\n{self.log_tail()}"
        )

    @property
    def _bootstrap(self) -> str:
        return f"127.0.0.1:{self._port}"

    def _kill(self) -> None:
        atexit.unregister(self._kill)
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(self._stop_timeout)
        except subprocess.TimeoutExpired:
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()


async def _serves_metadata(bootstrap: str) -> bool:
    """True once the broker answers a metadata request that lists itself."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5_000)
    try:
        await admin.start()
        cluster = await admin.describe_cluster()
    except (KafkaError, OSError):
        return False
    finally:
        with contextlib.suppress(KafkaError, OSError):
            await admin.close()
    return bool(cluster.get("brokers"))


def _has_leaders(topics: list[Any], partitions: int) -> bool:
    if len(topics) != 1 or topics[0]["error_code"] != 0:
        return False
    leaders = [p["leader"] for p in topics[0]["partitions"]]
    return len(leaders) == partitions and all(leader >= 0 for leader in leaders)


def _run_isolated(coro: Coroutine[Any, Any, bool]) -> bool:
    """Run a coroutine on a fresh event loop in a worker thread (safe inside a running loop)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


def _on_main_thread_linux() -> bool:
    # PR_SET_PDEATHSIG fires when the creating *thread* exits, so only the main thread uses it.
    return sys.platform == "linux" and threading.current_thread() is threading.main_thread()


def _die_with_parent() -> Callable[[], None]:
    """A pre-exec hook asking the kernel to SIGKILL the child when its parent dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1

    def _preexec() -> None:
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)

    return _preexec
