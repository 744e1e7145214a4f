"""deploy/compose/: valid for the Compose specification, every file it mounts in the
repository, its parts agreeing with each other, and its demo producer tried on a real broker.
(No Docker engine runs here: the stack itself is not started.)"""

from __future__ import annotations

import asyncio
import copy
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from ragstream import __version__
from ragstream.cli import main
from ragstream.config import load_settings
from ragstream.events.decode import decode_event
from ragstream.sources.synthetic import LABEL_SETS
from tests.deploy.schemas import compose_errors
from tests.support import KafkaBroker, TopicFactory, read_records
from tests.support.prometheus import promtool

ROOT = Path(__file__).parents[2]
COMPOSE_DIR = ROOT / "deploy" / "compose"
COMPOSE_FILE = COMPOSE_DIR / "compose.yaml"
PROMETHEUS_DIR = ROOT / "deploy" / "prometheus"
RULES = PROMETHEUS_DIR / "ragstream.rules.yml"
GRAFANA_PROVISIONING = ROOT / "grafana" / "provisioning"

Compose = dict[str, Any]


def _compose() -> Compose:
    compose: Compose = yaml.safe_load(COMPOSE_FILE.read_text())
    return compose


def _service(name: str) -> dict[str, Any]:
    service: dict[str, Any] = _compose()["services"][name]
    return service


def _binds() -> list[tuple[str, Path, str]]:
    """(service, host path, container path) of every bind mount, short syntax."""
    binds = []
    for name, service in _compose()["services"].items():
        for volume in service.get("volumes", []):
            source, target, *_ = volume.split(":")
            if source.startswith((".", "/")):
                binds.append((name, (COMPOSE_DIR / source).resolve(), target))
    return binds


def test_the_compose_file_is_valid_for_the_compose_specification() -> None:
    assert compose_errors(_compose()) == []


@pytest.mark.parametrize(
    ("path", "value", "found"),
    [
        (
            ("services", "kafka", "healthcheck", "retry"),
            3,
            "healthcheck: 'retry' does not match any of the regexes",
        ),
        (("services", "kafka", "helthcheck"), {}, "'helthcheck' was unexpected"),
        (
            ("services", "ragstream", "depends_on", "kafka-init", "condition"),
            "service_finished",
            "services.ragstream.depends_on: {'kafka-init': {'condition': 'service_finished'}}"
            " is not valid",
        ),
        (("services", "grafana", "ports"), "3000:3000", "is not of type 'array'"),
    ],
)
def test_the_schema_refuses_what_compose_would(
    path: tuple[str, ...], value: object, found: str
) -> None:
    compose = copy.deepcopy(_compose())
    node = compose
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    errors = compose_errors(compose)
    assert any(found in error for error in errors), errors


def test_the_stack_has_its_five_parts() -> None:
    services = _compose()["services"]
    assert set(services) == {
        "kafka",
        "kafka-init",
        "ragstream",
        "producer",
        "prometheus",
        "grafana",
    }
    assert services["kafka"]["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"  # KRaft
    assert services["ragstream"]["build"] == {"context": "../..", "dockerfile": "Dockerfile"}
    assert (COMPOSE_DIR / "../.." / "Dockerfile").resolve() == ROOT / "Dockerfile"


@pytest.mark.parametrize("bind", _binds(), ids=lambda b: f"{b[0]}:{b[2]}")
def test_every_mounted_file_is_in_the_repository(bind: tuple[str, Path, str]) -> None:
    _, host, _ = bind
    assert host.exists(), host
    assert ROOT in host.parents


def test_every_named_volume_is_declared() -> None:
    compose = _compose()
    named = {
        volume.split(":")[0]
        for service in compose["services"].values()
        for volume in service.get("volumes", [])
        if not volume.startswith((".", "/"))
    }
    assert named == set(compose["volumes"])


def test_the_images_are_the_versions_the_tests_use() -> None:
    pom = (ROOT / "deploy" / "kafka" / "pom.xml").read_text()
    (kafka,) = re.findall(r"<kafka.version>([^<]+)</kafka.version>", pom)
    assert _service("kafka")["image"] == f"apache/kafka:{kafka}"
    assert _service("kafka-init")["image"] == f"apache/kafka:{kafka}"
    version = __version__
    for name in ("ragstream", "producer"):
        service = _service(name)
        assert service["image"] == f"ragstream:{version}"
        assert service["read_only"] is True
        assert service["user"] == "10001:10001"  # the Dockerfile's user
        assert service["cap_drop"] == ["ALL"]


def test_the_agent_configuration_fits_the_stack() -> None:
    (source,) = [host for service, host, _ in _binds() if service == "ragstream"]
    result = CliRunner().invoke(main, ["check-config", "--config", str(source)])
    assert result.exit_code == 0, result.output
    settings = load_settings(source)
    agent = _service("ragstream")
    (target,) = [t for service, _, t in _binds() if service == "ragstream"]
    assert agent["command"][agent["command"].index("--config") + 1] == target
    # it reaches the broker on a listener the broker has
    host, port = settings.kafka.bootstrap_servers.split(":")
    assert host == "kafka"
    assert f"PLAINTEXT://{host}:{port}" in _service("kafka")["environment"][
        "KAFKA_ADVERTISED_LISTENERS"
    ].split(",")
    # its topics exist before it starts: kafka-init creates them
    init = " ".join(_service("kafka-init")["command"])
    created = set(re.findall(r"--topic (\S+)", init))
    assert {*settings.kafka.topics, settings.kafka.dead_letter_topic} == created
    assert agent["depends_on"]["kafka-init"] == {"condition": "service_completed_successfully"}
    # the producer writes to that topic, with the label keys the agent exports
    producer = _service("producer")["command"]
    assert producer[producer.index("--topic") + 1] in settings.kafka.topics
    assert {key for labels in LABEL_SETS for key in labels} == set(settings.labels.keys)
    assert f"{settings.http.port}:{settings.http.port}" in agent["ports"]


def test_prometheus_scrapes_the_agent_and_loads_the_rule_file() -> None:
    config = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())
    (job,) = config["scrape_configs"]
    (static,) = job["static_configs"]
    port = load_settings(COMPOSE_DIR / "ragstream.yaml").http.port
    assert static["targets"] == [f"ragstream:{port}"]
    assert config["rule_files"] == [RULES.name]  # beside prometheus.yml, as mounted
    prometheus = _service("prometheus")
    mounts = {target: host for service, host, target in _binds() if service == "prometheus"}
    assert mounts["/etc/prometheus"] == PROMETHEUS_DIR
    assert "--config.file=/etc/prometheus/prometheus.yml" in prometheus["command"]


@pytest.mark.prometheus
def test_promtool_accepts_the_prometheus_configuration(tmp_path: Path) -> None:
    """With a stand-in for the rule file (tests/deploy/fixtures), checked whether or not
    the real one is there; the next test checks the real one."""
    shutil.copy(PROMETHEUS_DIR / "prometheus.yml", tmp_path / "prometheus.yml")
    shutil.copy(Path(__file__).parent / "fixtures" / "small.rules.yml", tmp_path / RULES.name)
    result = promtool("check", "config", str(tmp_path / "prometheus.yml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 1 rule files found" in result.stdout + result.stderr


@pytest.mark.prometheus
def test_promtool_accepts_the_prometheus_configuration_with_its_rules() -> None:
    result = promtool("check", "config", str(PROMETHEUS_DIR / "prometheus.yml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {PROMETHEUS_DIR / 'prometheus.yml'} is valid" in (
        result.stdout + result.stderr
    )


def test_grafana_gets_the_dashboard_where_its_provisioning_looks() -> None:
    mounts = {target: host for service, host, target in _binds() if service == "grafana"}
    assert mounts["/etc/grafana/provisioning"] == GRAFANA_PROVISIONING
    dashboards = [
        target
        for target, host in mounts.items()
        if host == ROOT / "grafana" / "ragstream-dashboard.json"
    ]
    assert len(dashboards) == 1
    environment = _service("grafana")["environment"]

    def expand(text: str) -> str:
        return re.sub(
            r"\$\{?(\w+)\}?", lambda m: str(environment.get(m.group(1), m.group(0))), text
        )

    providers = [
        provider
        for path in sorted((GRAFANA_PROVISIONING / "dashboards").glob("*.y*ml"))
        for provider in yaml.safe_load(path.read_text()).get("providers", [])
    ]
    paths = [Path(expand(p["options"]["path"])) for p in providers]
    assert any(Path(dashboards[0]).parent == p or p in Path(dashboards[0]).parents for p in paths)
    sources = [
        source
        for path in sorted((GRAFANA_PROVISIONING / "datasources").glob("*.y*ml"))
        for source in yaml.safe_load(path.read_text()).get("datasources", [])
        if source.get("type") == "prometheus"
    ]
    assert sources
    assert {expand(s["url"]).rstrip("/") for s in sources} == {"http://prometheus:9090"}


@pytest.mark.slow
async def test_the_demo_producer_sends_valid_synthetic_traffic(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory
) -> None:
    topic = await kafka_topic_factory(partitions=3)
    args = [
        sys.executable,
        str(COMPOSE_DIR / "produce.py"),
        "--bootstrap-servers",
        kafka_broker.bootstrap_servers,
        "--topic",
        topic,
        "--rate",
        "40",
        "--duration",
        "3",
        "--drift-at",
        "1",
    ]
    process = await asyncio.create_subprocess_exec(
        *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    _, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, err.decode()
    (sent,) = re.findall(r"sent (\d+) events", err.decode())
    assert int(sent) >= 80  # about 3 s at 40 queries a second, one or more events each
    records = await read_records(kafka_broker.bootstrap_servers, topic, int(sent))
    assert len(records) == int(sent)
    events = [decode_event(record.value) for record in records]
    assert {event.type for event in events} == {"retrieval", "answer", "feedback"}
    assert all(
        record.key == event.query_id.encode() for record, event in zip(records, events, strict=True)
    )
    assert {record.partition for record in records} == {0, 1, 2}  # keyed: spread by query id


def test_the_demo_producer_refuses_bad_options() -> None:
    result = subprocess.run(
        [sys.executable, str(COMPOSE_DIR / "produce.py"), "--rate", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "--rate must be positive" in result.stderr
