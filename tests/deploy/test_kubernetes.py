"""deploy/kubernetes/: every manifest valid offline for the Kubernetes versions we support
and for the Prometheus Operator's CRDs, and the two forms wired as docs/deploy.md says."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from click.testing import CliRunner

from ragstream import __version__
from ragstream.cli import main
from ragstream.config import Settings, load_settings
from tests.deploy.schemas import (
    KUBERNETES_VERSIONS,
    documents,
    is_operator_kind,
    kubernetes_errors,
    operator_errors,
)

ROOT = Path(__file__).parents[2]
KUBE = ROOT / "deploy" / "kubernetes"
MANIFESTS = sorted(p for p in KUBE.glob("*.yaml") if p.name != "kustomization.yaml")
ALL = [(path.name, doc) for path in MANIFESTS for doc in documents(path)]
Doc = dict[str, Any]


def _id(item: tuple[str, Doc]) -> str:
    name, doc = item
    return f"{name}:{doc['kind']}/{doc['metadata']['name']}"


def _one(file: str, kind: str, name: str | None = None) -> Doc:
    found = [
        doc
        for path, doc in ALL
        if path == file and doc["kind"] == kind and name in (None, doc["metadata"]["name"])
    ]
    assert len(found) == 1, f"{file}: {len(found)} {kind} {name or ''}"
    return found[0]


def _pod(file: str) -> Doc:
    spec: Doc = _one(file, "Deployment")["spec"]["template"]
    return spec


def _agent(file: str) -> Doc:
    spec = _pod(file)["spec"]
    containers = spec.get("initContainers", []) + spec["containers"]
    (agent,) = [c for c in containers if c["name"] == "ragstream"]
    return agent  # type: ignore[no-any-return]


def _all_containers() -> list[tuple[str, Doc]]:
    out = []
    for name in ("sidecar.yaml", "standalone.yaml"):
        spec = _pod(name)["spec"]
        out += [(name, c) for c in spec.get("initContainers", []) + spec["containers"]]
    return out


def _config_settings(tmp_path: Path) -> Settings:
    config = tmp_path / "ragstream.yaml"
    config.write_text(_one("config.yaml", "ConfigMap")["data"]["ragstream.yaml"])
    return load_settings(config)


def test_the_manifests_are_the_documented_files() -> None:
    # prometheusrule.yaml is made from the rule file (test_prometheus_rule.py)
    rules = (ROOT / "deploy" / "prometheus" / "ragstream.rules.yml").exists()
    generated = ["prometheusrule.yaml"] if rules else []
    assert [p.name for p in MANIFESTS] == sorted(
        ["config.yaml", "sidecar.yaml", "standalone.yaml", *generated]
    )
    assert not (ROOT / "deploy" / "kubernetes.yaml").exists()  # replaced by this directory


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("item", [i for i in ALL if not is_operator_kind(i[1])], ids=_id)
def test_every_kubernetes_object_is_valid_for_the_api(item: tuple[str, Doc], version: str) -> None:
    assert kubernetes_errors(item[1], version) == []


@pytest.mark.parametrize("item", [i for i in ALL if is_operator_kind(i[1])], ids=_id)
def test_every_operator_object_is_valid_for_its_crd(item: tuple[str, Doc]) -> None:
    assert operator_errors(item[1]) == []


def test_every_object_has_a_schema_it_is_checked_against() -> None:
    kinds = {(doc["apiVersion"], doc["kind"]) for _, doc in ALL}
    kinds.discard(("monitoring.coreos.com/v1", "PrometheusRule"))  # generated: see above
    assert kinds == {
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("v1", "Service"),
        ("apps/v1", "Deployment"),
        ("policy/v1", "PodDisruptionBudget"),
        ("monitoring.coreos.com/v1", "PodMonitor"),
        ("monitoring.coreos.com/v1", "ServiceMonitor"),
    }


def _set(path: str, value: Any) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        *parents, leaf = path.split(".")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[leaf] = value

    return mutate


@pytest.mark.parametrize(
    ("file", "kind", "mutate", "found"),
    [
        (  # a typo in the field that makes it a sidecar
            "sidecar.yaml",
            "Deployment",
            _set("spec.template.spec.initContainers.0.restartPolicyy", "Always"),
            "restartPolicyy",
        ),
        ("standalone.yaml", "Deployment", _set("spec.replicas", "2"), "is not of type"),
        (
            "standalone.yaml",
            "PodDisruptionBudget",
            _set("spec.maxUnavailabe", 1),
            "maxUnavailabe",
        ),
        (
            "sidecar.yaml",
            "PodMonitor",
            _set("spec.podMetricsEndpoint", [{"port": "ragstream"}]),
            "spec.podMetricsEndpoint: Extra inputs are not permitted",
        ),
        (
            "standalone.yaml",
            "ServiceMonitor",
            _set("spec.endpoints.0.interval", "15 seconds"),
            "spec.endpoints.0.interval: String should match pattern",
        ),
        (
            "standalone.yaml",
            "ServiceMonitor",
            _set("spec.endpoints.0.target_port", 9464),  # the CRD says targetPort
            "spec.endpoints.0.target_port: Extra inputs are not permitted",
        ),
    ],
)
def test_the_validators_refuse_what_the_api_server_would(
    file: str, kind: str, mutate: Callable[[Doc], None], found: str
) -> None:
    doc = copy.deepcopy(_one(file, kind))
    mutate(doc)
    if is_operator_kind(doc):
        errors = operator_errors(doc)
    else:
        errors = [e for v in KUBERNETES_VERSIONS for e in kubernetes_errors(doc, v)]
    assert any(found in error for error in errors), errors


def test_the_restartable_init_container_needs_a_version_that_has_it() -> None:
    """The sidecar form is refused by Kubernetes 1.27, which has no `restartPolicy` on
    containers: the version pin is what the validation checks."""
    errors = kubernetes_errors(_one("sidecar.yaml", "Deployment"), "1.27.0")
    assert any("restartPolicy" in e for e in errors), errors


def test_the_configmap_holds_a_configuration_check_config_accepts(tmp_path: Path) -> None:
    config = tmp_path / "ragstream.yaml"
    config.write_text(_one("config.yaml", "ConfigMap")["data"]["ragstream.yaml"])
    result = CliRunner().invoke(main, ["check-config", "--config", str(config)])
    assert result.exit_code == 0, result.output
    settings = load_settings(config)
    assert settings.kafka.security.protocol == "SASL_SSL"
    assert settings.judge.kind == "openai"


def test_the_secrets_are_files_the_configuration_names(tmp_path: Path) -> None:
    settings = _config_settings(tmp_path)
    secret = _one("config.yaml", "Secret")
    keys = set(secret["stringData"])
    files = {
        settings.kafka.security.sasl_password_file,
        settings.judge.openai.api_key_file,
    }
    assert settings.kafka.security.sasl_password is None  # from the file, not a value
    for form in ("sidecar.yaml", "standalone.yaml"):
        pod = _pod(form)["spec"]
        agent = _agent(form)
        assert "env" not in agent  # no secret (nor anything else) through the environment
        (volume,) = [v for v in pod["volumes"] if "secret" in v]
        assert volume["secret"]["secretName"] == secret["metadata"]["name"]
        assert "items" not in volume["secret"]  # every key becomes a file of its name
        (mount,) = [m for m in agent["volumeMounts"] if m["name"] == volume["name"]]
        assert mount["readOnly"] is True
        assert {Path(mount["mountPath"]) / key for key in keys} == files
        # the files are readable by the agent's group only (fsGroup owns them)
        assert volume["secret"]["defaultMode"] == 0o440
        assert pod["securityContext"]["fsGroup"] == agent["securityContext"]["runAsGroup"]


def test_the_agent_reads_the_configmap_it_mounts() -> None:
    configmap = _one("config.yaml", "ConfigMap")
    (key,) = configmap["data"]
    for form in ("sidecar.yaml", "standalone.yaml"):
        pod = _pod(form)["spec"]
        agent = _agent(form)
        (volume,) = [v for v in pod["volumes"] if "configMap" in v]
        assert volume["configMap"]["name"] == configmap["metadata"]["name"]
        (mount,) = [m for m in agent["volumeMounts"] if m["name"] == volume["name"]]
        args = agent["args"]
        assert args[0] == "run"
        assert args[args.index("--config") + 1] == str(PurePosixPath(mount["mountPath"]) / key)


def test_the_probes_ask_the_agents_port(tmp_path: Path) -> None:
    port = _config_settings(tmp_path).http.port
    for form in ("sidecar.yaml", "standalone.yaml"):
        agent = _agent(form)
        ports = {p["name"]: p["containerPort"] for p in agent["ports"]}
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            if probe in agent:
                assert ports[agent[probe]["httpGet"]["port"]] == port
        annotations = _pod(form)["metadata"]["annotations"]
        assert annotations["prometheus.io/port"] == str(port)


def test_the_sidecar_is_native_and_never_takes_the_pod_out_of_its_service() -> None:
    pod = _pod("sidecar.yaml")["spec"]
    (sidecar,) = pod["initContainers"]
    assert sidecar["name"] == "ragstream"
    assert sidecar["restartPolicy"] == "Always"
    assert [c["name"] for c in pod["containers"]] == ["rag-service"]
    # a sidecar's readiness is the pod's: it has none, and its other probes ask only
    # whether the HTTP server is up (it is while Kafka is unreachable)
    assert "readinessProbe" not in sidecar
    assert sidecar["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert sidecar["livenessProbe"]["httpGet"]["path"] == "/healthz"


def test_the_standalone_replicas_are_ready_when_they_consume() -> None:
    agent = _agent("standalone.yaml")
    assert agent["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert agent["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert agent["livenessProbe"]["httpGet"]["path"] == "/healthz"
    deployment = _one("standalone.yaml", "Deployment")
    # a surge replica could find no partition left and never become ready
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == 0
    pdb = _one("standalone.yaml", "PodDisruptionBudget")["spec"]
    assert pdb["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
    assert pdb["maxUnavailable"] < deployment["spec"]["replicas"]


@pytest.mark.parametrize("item", _all_containers(), ids=lambda i: f"{i[0]}:{i[1]['name']}")
def test_every_container_runs_locked_down_with_resources(item: tuple[str, Doc]) -> None:
    form, container = item
    context = container["securityContext"]
    assert context["runAsNonRoot"] is True
    assert context["runAsUser"] > 0
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}
    pod = _pod(form)["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    resources = container["resources"]
    assert {"cpu", "memory"} <= set(resources["requests"])
    assert "memory" in resources["limits"]


def _selects(selector: Doc, labels: dict[str, str]) -> bool:
    assert set(selector) == {"matchLabels"}
    return all(labels.get(k) == v for k, v in selector["matchLabels"].items())


def test_every_selector_finds_what_it_is_for() -> None:
    for form in ("sidecar.yaml", "standalone.yaml"):
        deployment = _one(form, "Deployment")["spec"]
        assert _selects(deployment["selector"], deployment["template"]["metadata"]["labels"])
    sidecar_pod = _pod("sidecar.yaml")["metadata"]["labels"]
    standalone_pod = _pod("standalone.yaml")["metadata"]["labels"]
    # the RAG service's Service reaches its pods; the PodMonitor scrapes their sidecar port
    service = _one("sidecar.yaml", "Service")["spec"]
    assert all(sidecar_pod.get(k) == v for k, v in service["selector"].items())
    monitor = _one("sidecar.yaml", "PodMonitor")["spec"]
    assert _selects(monitor["selector"], sidecar_pod)
    assert not _selects(monitor["selector"], standalone_pod)
    sidecar_ports = {p["name"] for p in _agent("sidecar.yaml")["ports"]}
    assert {e["port"] for e in monitor["podMetricsEndpoints"]} <= sidecar_ports
    # the standalone Service reaches the replicas; the ServiceMonitor scrapes its port
    standalone = _one("standalone.yaml", "Service")
    assert all(standalone_pod.get(k) == v for k, v in standalone["spec"]["selector"].items())
    service_monitor = _one("standalone.yaml", "ServiceMonitor")["spec"]
    assert _selects(service_monitor["selector"], standalone["metadata"]["labels"])
    service_ports = {p["name"]: p for p in standalone["spec"]["ports"]}
    assert {e["port"] for e in service_monitor["endpoints"]} <= set(service_ports)
    agent_ports = {p["name"] for p in _agent("standalone.yaml")["ports"]}
    assert {p["targetPort"] for p in service_ports.values()} <= agent_ports
    pdb = _one("standalone.yaml", "PodDisruptionBudget")["spec"]
    assert _selects(pdb["selector"], standalone_pod)


def test_the_image_is_this_release_run_as_the_dockerfiles_user() -> None:
    version = __version__
    dockerfile = (ROOT / "Dockerfile").read_text()
    (user,) = re.findall(r"^USER (\d+):(\d+)$", dockerfile, flags=re.MULTILINE)
    for form in ("sidecar.yaml", "standalone.yaml"):
        agent = _agent(form)
        assert agent["image"] == f"ragstream:{version}"
        context = agent["securityContext"]
        assert (str(context["runAsUser"]), str(context["runAsGroup"])) == user
