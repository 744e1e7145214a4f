"""What a local Kafka broker needs before it can run: jars, config files, an id, free ports.

The single-node settings here are also written by ``scripts/kafka.sh start``; the two are
kept in step by hand (a person's broker and the tests' broker should behave alike).
"""

import base64
import socket
import uuid
from collections.abc import Mapping
from pathlib import Path

from tests.support.fetch import SCRIPTS, run_fetch
from tests.support.kafka_security import LISTENERS

__all__ = [
    "BASE_CONFIG",
    "KafkaBrokerError",
    "cluster_id",
    "fetch_kafka_jars",
    "free_port",
    "log4j2_properties",
    "port_open",
    "server_properties",
]

_SCRIPT = SCRIPTS / "kafka.sh"

BASE_CONFIG: Mapping[str, str] = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    # Topics are created explicitly, as ragstream's co-partitioning check expects.
    "auto.create.topics.enable": "false",
    "num.partitions": "1",
    # One node: every internal topic has one replica; one partition each starts fastest.
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    # A consumer group's first member gets its partitions at once, not after 3 s.
    "group.initial.rebalance.delay.ms": "0",
    # Short group sessions, so that a killed agent's partitions move within seconds.
    "group.min.session.timeout.ms": "1000",
}
"""server.properties entries that do not depend on ports or directories."""

_LOG4J2 = """status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.append = false
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.raft.name = org.apache.kafka.raft
logger.raft.level = WARN
"""


class KafkaBrokerError(RuntimeError):
    """A local broker could not be fetched, started or asked to do something."""


def fetch_kafka_jars(script: Path = _SCRIPT, timeout: float = 600.0) -> Path:
    """Return the directory of the broker's jars, fetching them once with ``kafka.sh fetch``.

    The script honours ``RAGSTREAM_KAFKA_VERSION``, ``RAGSTREAM_KAFKA_LIBS`` and
    ``XDG_CACHE_HOME``; when the jars are cached it returns in milliseconds.
    """
    return run_fetch(script, KafkaBrokerError, timeout)


def server_properties(
    port: int,
    controller_port: int,
    data_dir: Path,
    extra: Mapping[str, str] | None = None,
    secured: Mapping[str, int] | None = None,
) -> str:
    """The broker's server.properties: :data:`BASE_CONFIG`, listeners, ``log.dirs``, ``extra``.

    ``secured`` adds listeners (e.g. ``{"SASL_SSL": 9095}``), each of the security protocol
    `LISTENERS` gives its name; their TLS and SASL settings come in ``extra``."""
    config = dict(BASE_CONFIG)
    config["controller.quorum.voters"] = f"1@127.0.0.1:{controller_port}"
    listeners = [f"PLAINTEXT://127.0.0.1:{port}"]
    listeners += [f"{name}://127.0.0.1:{p}" for name, p in (secured or {}).items()]
    config["listeners"] = ",".join([*listeners, f"CONTROLLER://127.0.0.1:{controller_port}"])
    config["advertised.listeners"] = ",".join(listeners)
    if secured:
        pairs = [f"{name}:{LISTENERS.get(name, name)}" for name in secured]
        config["listener.security.protocol.map"] += "," + ",".join(pairs)
    config["log.dirs"] = str(data_dir)
    config.update(extra or {})
    return "".join(f"{key}={value}\n" for key, value in config.items())


def log4j2_properties(log_file: Path) -> str:
    """A log4j2 config that sends all of the broker's logging to ``log_file``."""
    return _LOG4J2.format(log=log_file)


def cluster_id() -> str:
    """A new Kafka cluster id: a random UUID in URL-safe base64, unpadded, not led by '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def free_port() -> int:
    """A TCP port of 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_open(port: int) -> bool:
    """True if something accepts TCP connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False
